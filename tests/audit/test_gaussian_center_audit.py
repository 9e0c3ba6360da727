"""Audit of PrivateGaussianEstimator's ``subsample_center`` (initial_center=
"subsample") with a row 1e12 away.

The release is the winsorized aggregate of group means: replacing one row
moves one group's mean (here by 1e12 / 2), which the aggregate clips onto its
ball. The audit runs the step itself (``_subsample_start``, the frame the
identity) on all-zero rows against the same with row 0 at 1e12; the canary
calibrates the clipped mean for a twentieth of its sensitivity and must be
caught.
"""

import numpy as np
import pytest

import dpgauss.releases._winsorized as winsorized_module
from dpgauss import PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.gaussian._gaussian import center_factory
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

RHO, DELTA = 0.5, 1e-2
CLAIM = zcdp_to_approx(RHO, DELTA)
#: 384 rows, k = 192 groups of 2 at rho 0.5, d = 1 (k_min there). Runs per input
#: of the default suite's audit and canary: at 250 the real release's lower
#: bound is 0.14 and the canary's 4.20 against the claim 2.75 (12 s each).
FAST_RUNS = 250


def _runner(Z):
    est = PrivateGaussianEstimator(rho=RHO, initial_center="subsample")
    cost = ZCDP(RHO)
    frame = np.eye(1)
    release = Release("subsample_center", cost, "gaussian", center_factory(*Z.shape))

    def run(n, rng):
        out = np.empty(n)
        for i in range(n):
            plan = ReleasePlan(cost, [release])
            out[i] = est._subsample_start(Z, frame, plan, rng)[0][0]
        return out

    return run


def _runs():
    X = np.zeros((384, 1))
    Y = X.copy()
    Y[0] = 1e12
    return _runner(X), _runner(Y)


def _audit(n):
    return audit(*_runs(), n_samples=n, n_select=n // 2, delta=DELTA, random_state=4)


@pytest.mark.parametrize(
    "runs",
    [pytest.param(FAST_RUNS, id="fast"), pytest.param(1000, marks=pytest.mark.slow)],
)
def test_a_far_row_cannot_break_the_claim(runs):
    result = _audit(runs)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.parametrize(
    "runs",
    [pytest.param(FAST_RUNS, id="fast"), pytest.param(1000, marks=pytest.mark.slow)],
)
def test_canary_with_a_twentieth_of_the_sensitivity_is_caught(monkeypatch, runs):
    def broken(cost, n, d, radius, n_partials=None):
        return mean_mechanism(cost, n, d, radius / 20.0, n_partials)

    monkeypatch.setattr(winsorized_module, "mean_mechanism", broken)
    result = _audit(runs)
    assert result.epsilon_lower > CLAIM, result
