"""End-to-end audit of PrivatePCA's ``axes`` release (a box, pure DP).

n = 50 rows in the box (-1, 1), half at -1/2 and half at 1/2, except the
first at -1/4; the neighbour moves it to 1e12 (clipped to 1). That pair
reaches the l1 sensitivity 25/(8n) of the joint release ``(m, 2 s)``
(:mod:`dpgauss.releases._moments`): the coordinate moves by t = 5/4 with
|a + b| = 3/4. The audited output is ``explained_variance_[0]``, the released
variance (post-processing of both entries). The canary calibrates the release
to a twentieth of its sensitivity.
"""

import numpy as np
import pytest

import dpgauss.decomposition._axes as module
from dpgauss import PrivacyBudget, PrivatePCA
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

EPSILON, N = 1.0, 50


def _neighbours():
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = -0.25
    Y = X.copy()
    Y[0] = 1e12
    return X, Y


def _runner(X):
    est = PrivatePCA(1, bounds=(-1.0, 1.0), method="diagonal", epsilon=EPSILON)

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).explained_variance_[0]
                for _ in range(n)
            ]
        )

    return run


def _audit(n):
    runs = [_runner(Z) for Z in _neighbours()]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=8)


def test_the_axes_release_is_the_plan():
    X, _ = _neighbours()
    budget = PrivacyBudget(epsilon=EPSILON)
    est = PrivatePCA(
        1, bounds=(-1.0, 1.0), method="diagonal", epsilon=EPSILON, budget=budget
    )
    est.fit(X)
    assert [e.mechanism for e in budget.ledger()] == ["laplace:axes"]


def test_axes_keep_their_pure_claim_at_the_worst_pair():
    result = _audit(1500)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_a_twentieth_of_the_sensitivity_is_caught(monkeypatch):
    original = module.moments_mechanism

    def weak(cost, n, d, n_partials=None):
        mech = original(cost, n, d, n_partials)
        return LInfinityMechanism(
            sensitivity=mech.sensitivity / 20.0, epsilon=cost.epsilon, size=mech.size
        )

    monkeypatch.setattr(module, "moments_mechanism", weak)
    result = _audit(300)
    assert result.epsilon_lower > EPSILON, result


@pytest.mark.slow
def test_axes_keep_their_claim_large():
    result = _audit(30_000)
    assert result.epsilon_lower <= EPSILON, result
