"""Audit of the nonzero quantile search's "measured" test, with a canary.

``QuantileSearch(nonzero=True)`` reports 0 for a column unless its first
step's noisy count (at mid 0: ``q c0`` plus noise, ``c0`` the zeros) leaves
``q n`` at least :data:`~dpgauss.mechanisms._range.NONZERO_MEASURED` count
noise sds above it: a function of a released count, free. The canary takes
the same decision on the exact count of nonzero values, a threshold on
private data. The neighbours sit on that threshold: A holds the fewest
nonzero values (at 1) with ``q k`` at least the threshold, B one fewer (one
1 replaced by 0), so the canary always reports the quantile on A and always
0 on B, while the search's own test moves by one count against a noise sd
of about 90. (The search's worst case for its steps, and the canary of a
search that forgets its composition, are in test_mechanism_audits.py.)
"""

import math

import numpy as np
import pytest

import dpgauss.mechanisms._range as module
from dpgauss.accounting import PureDP
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

EPSILON, Q, N = 1.0, 0.75, 4000


class _ExactMeasured(QuantileSearch):
    """Broken: the measured test reads the exact count of nonzero values."""

    def release(self, values, random_state=None):
        limit = module.NONZERO_MEASURED
        module.NONZERO_MEASURED = -math.inf  # the search's own test never fails
        try:
            found = super().release(values, random_state)
        finally:
            module.NONZERO_MEASURED = limit
        nonzero = np.count_nonzero(np.asarray(values), axis=0)
        return np.where(self.quantile * nonzero >= limit * self.count_sd(), found, 0.0)


def _neighbours():
    search = QuantileSearch(PureDP(EPSILON), 1, Q, nonzero=True)
    k = math.ceil(module.NONZERO_MEASURED * search.count_sd() / Q)
    a = np.r_[np.zeros(N - k), np.ones(k)][:, None]
    b = np.r_[np.zeros(N - k + 1), np.ones(k - 1)][:, None]
    return a, b, k


def _audit(cls, n):
    search = cls(PureDP(EPSILON), 1, Q, nonzero=True)

    def run(values):
        return lambda m, rng: np.array(
            [search.release(values, rng)[0] for _ in range(m)]
        )

    a, b, _ = _neighbours()
    return audit(run(a), run(b), n_samples=n, n_select=n // 2, random_state=1234)


def test_the_neighbours_straddle_the_measured_threshold():
    search = QuantileSearch(PureDP(EPSILON), 1, Q, nonzero=True)
    _, _, k = _neighbours()
    limit = module.NONZERO_MEASURED * search.count_sd()
    assert Q * k >= limit > Q * (k - 1)


def test_measured_test_keeps_the_claim():
    result = _audit(QuantileSearch, 800)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_a_measured_test_on_the_exact_count_is_caught():
    result = _audit(_ExactMeasured, 400)
    assert result.epsilon_lower > EPSILON, result
