"""End-to-end audit of PrivateLinearDiscriminantAnalysis: a row that changes
its class and lies 1e12 radii away.

n = 50 rows in one dimension, classes 0 and 1 (rows at -1/2 and 1/2), fixed
clipping to the unit ball around 0. The first row is class 0 at -1e12
(clipped to -1); its neighbour is class 1 at +1e12 (clipped to 1): it leaves
class 0's sum and joins class 1's, and moves one count down and another up.
The audited output is class 0's released sum over n, recovered from the
fitted model as ``means_[0, 0] * class_count_[0] / n`` (post-processing; the
count's noise would otherwise swamp the shift). The
claim is the whole fit's rho converted to (epsilon, delta). The canary
calibrates the ``class_sums`` release to a twentieth of its sensitivity.
"""

import numpy as np
import pytest

import dpgauss.discriminant_analysis._base as module
from dpgauss.accounting import zcdp_to_approx
from dpgauss.discriminant_analysis import PrivateLinearDiscriminantAnalysis
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.5, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _neighbours():
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    y = (X[:, 0] > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    X[0], y[0] = -1e12, 0
    X2[0], y2[0] = 1e12, 1
    return (X, y), (X2, y2)


def _sum_of_class_0(fitted):
    return fitted.means_[0, 0] * fitted.class_count_[0] / N


def _runner(X, y):
    est = PrivateLinearDiscriminantAnalysis(
        classes=[0, 1], data_norm=1.0, clipping="fixed", rho=RHO
    )

    def run(n, rng):
        return np.array(
            [
                _sum_of_class_0(est.set_params(random_state=fit_seed(rng)).fit(X, y))
                for _ in range(n)
            ]
        )

    return run


def _audit(n):
    runs = [_runner(*data) for data in _neighbours()]
    return audit(*runs, n_samples=n, n_select=n // 2, delta=DELTA, random_state=7)


def test_class_change_far_row_keeps_the_claim():
    result = _audit(1000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_a_twentieth_of_the_sensitivity_is_caught(monkeypatch):
    original = module.labelled_sum_mechanism

    def weak(cost, n, d, n_classes, radius, n_partials=None):
        mech = original(cost, n, d, n_classes, radius, n_partials)
        return type(mech)(sensitivity=mech.sensitivity / 20.0, rho=cost.rho)

    monkeypatch.setattr(module, "labelled_sum_mechanism", weak)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result
