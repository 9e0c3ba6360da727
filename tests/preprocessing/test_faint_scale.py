"""PrivateStandardScaler's warning before the spend (public values only)."""

import math
import warnings

import numpy as np
import pytest

from dpgauss import PrivateStandardScaler
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.exceptions import UtilityWarning
from dpgauss.preprocessing._faint_scale import (
    FAINT_SCALE,
    column_error,
    noise_sds,
    scale_reach,
    scaler_faint_warning,
)
from dpgauss.preprocessing._scaler import moment_mechanism
from dpgauss.releases._box_mean import FAINT_SD
from dpgauss.releases._moments import SECOND_WEIGHT, moments_mechanism
from dpgauss.releases._prediction import ASTRAY


def _limit(n, with_std=True):
    # The column's sampling error in its own sd: 1 / n for the mean plus
    # 1 / (2 n) for the sd of Gaussian rows, times ASTRAY.
    return ASTRAY * math.sqrt((1.5 if with_std else 1.0) / n)


@pytest.mark.parametrize(
    ("cost", "n", "d"),
    [(PureDP(0.5), 2000, 5), (ZCDP(0.5), 1000, 4), (PureDP(2.0), 150, 9)],
)
def test_the_reach_is_where_the_predicted_error_crosses_astray(cost, n, d):
    mech = moments_mechanism(cost, n, d)
    reach = scale_reach(mech, n, d)
    mean_sd, variance_sd = noise_sds(mech, d, True, SECOND_WEIGHT)
    assert column_error(reach, mean_sd, variance_sd) <= _limit(n)
    assert column_error(0.999 * reach, mean_sd, variance_sd) > _limit(n)


def test_the_mean_alone_is_the_whole_box_mean_s_rule():
    # Without the variance only the mean's noise counts: reach a sqrt(n) / ASTRAY.
    mech = moment_mechanism(PureDP(1.0), 150, 5, "mean")
    a = math.sqrt(mech.variance(5))
    reach = scale_reach(mech, 150, 5, with_std=False)
    assert reach == pytest.approx(a * math.sqrt(150) / ASTRAY, rel=1e-9)


def test_the_scale_error_saturates_at_noise_sized_variances():
    # Far below the noise the released variance is about the noise: the scale
    # is off by sqrt(v) / sigma, not by the expansion's v / (2 sigma^2).
    assert column_error(0.01, 0.0, 0.04) == pytest.approx(math.sqrt(0.04) / 0.01)
    assert column_error(0.5, 0.0, 0.04) == pytest.approx(0.04 / 0.5)


def test_the_warning_from_public_values():
    # Student t rows at epsilon 0.5, n = 2,000 (columns of sds 0.05-0.08
    # half-widths in their codebook box): warned, with the reach named.
    mech = moments_mechanism(PureDP(0.5), 2000, 5)
    message = scaler_faint_warning("PrivateStandardScaler", mech, "eps", 2000, 5)
    reach = scale_reach(mech, 2000, 5)
    assert reach > FAINT_SCALE
    assert f"below {reach:.2g} of its box half-width" in message
    # randhie's n and d at rho 0.5: resolved down to sds of 0.03 half-widths.
    mech = moments_mechanism(ZCDP(0.5), 20190, 9)
    assert scale_reach(mech, 20190, 9) < FAINT_SCALE
    assert scaler_faint_warning("S", mech, "rho", 20190, 9) is None


def test_the_mean_alone_warns_below_the_whole_box_mean_s_reference():
    mech = moment_mechanism(PureDP(0.5), 150, 10, "mean")
    assert scale_reach(mech, 150, 10, with_std=False) >= FAINT_SD
    message = scaler_faint_warning("S", mech, "eps", 150, 10, with_std=False)
    assert "the mean of a column" in message


def test_the_fit_warns_before_the_spend_and_spends(warnings_before_releases):
    # The warning is given before the releases run (it reads no release):
    # when _fit_releases starts, it has been given already.
    X = np.random.default_rng(0).standard_t(3, size=(2000, 5))
    est = PrivateStandardScaler((-30.0, 30.0), epsilon=0.5, random_state=0)
    seen = warnings_before_releases(est, X)
    assert any("fixed by the box" in m for m in seen)
    assert est.privacy_spent_ == PureDP(0.5)
    assert np.all(np.isfinite(est.scale_))


def test_the_warning_reads_no_row():
    # The same public values give the same warning whatever the rows.
    messages = []
    for X in (np.zeros((2000, 5)), np.full((2000, 5), 1e12)):
        est = PrivateStandardScaler((-30.0, 30.0), epsilon=0.5, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X)
        texts = [str(w.message) for w in caught]
        messages.append([m for m in texts if "fixed by" in m])
    assert messages[0] == messages[1]
    assert len(messages[0]) == 1


def test_no_warning_where_the_box_fits_the_rows():
    # Rows of sd 1 in a box of 4 sds at n = 1e5, rho 1: reach far below 0.1.
    X = np.random.default_rng(1).normal(size=(100_000, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateStandardScaler((-4.0, 4.0), rho=1.0, random_state=0).fit(X)
