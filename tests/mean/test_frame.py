"""The plan method's log scales (dpgauss.mean._frame)."""

import contextvars

import numpy as np
import pytest

from dpgauss.accounting import ZCDP
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.mean._frame import log_scales, log_scales_factory


def _log_scales(pairs):
    n, d = pairs.shape
    cost = ZCDP(1.0)
    make = log_scales_factory(n, d)
    release = Release("log_scales", cost, kind_of(cost), make, d, bounded=False)
    plan = ReleasePlan(cost, [release])
    return log_scales(pairs, 4.0, plan, np.random.default_rng(1))


def test_tied_dask_pairs_raise_no_warning_in_a_worker():
    # A tied pair (z = 0, common in integer columns) has log |z| = -inf: on
    # lazy Dask pairs the log ran in the workers, outside the client's
    # errstate, and warned 'divide by zero' there (a warning that depends on
    # the rows, after the spend). Same release as on numpy.
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")

    def fresh_context(dsk, keys, **kwargs):  # numpy's default errstate
        return contextvars.Context().run(dask.get, dsk, keys, **kwargs)

    Z = np.round(np.random.default_rng(0).normal(size=(300, 3)))
    assert np.any(Z == 0.0)
    with dask.config.set(scheduler=fresh_context):
        got = _log_scales(da.from_array(Z, chunks=(70, -1)))
    np.testing.assert_array_equal(got, _log_scales(Z))
