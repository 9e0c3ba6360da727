"""End-to-end audits of PrivateStandardScaler with a row 1e12 box widths away.

Mean (zCDP): n = 50 rows in the box (-1, 1), half at -1/2 and half at 1/2,
except the first at -1e12 (clipped to -1); the neighbour moves it to +1e12
(clipped to 1). The released mean moves by exactly 2/n, the ``mean`` release's
sensitivity, and with ``with_std=False`` the mean gets the whole rho: the
shift is sqrt(2 rho) noise sds, the worst case rho-zCDP allows. The canary
calibrates the release to a twentieth of its sensitivity.

Variance (pure DP): the same rows but the first at the center 0 (z = 0); the
neighbour puts it at 1e12 (z = 1), which moves both releases by 1/n per
coordinate. The audited output is ``var_``. The canary skips the clipping (a
plausible bug: ``(x - c) / h`` unclipped), so the far row moves the variance
by about 1e24 / n.

Joint release (pure DP): the rows of the variance audit but the first at
z = -1/4, moved to 1e12 (z = 1): the pair that reaches the l1 sensitivity
25/(8n) of the ``moments`` release (m, 2 s). The audited output is
``mean_``. The canary calibrates the release to a twentieth of its
sensitivity.
"""

import numpy as np
import pytest

import dpgauss.preprocessing._scaler as module
import dpgauss.releases._moments as moments
from dpgauss import PrivateStandardScaler
from dpgauss.accounting import zcdp_to_approx
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, EPSILON, N = 0.5, 1e-2, 1.0, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _neighbours(first, moved):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    Y = X.copy()
    Y[0] = moved
    return X, Y


def _runner(X, attribute, **params):
    est = PrivateStandardScaler((-1.0, 1.0), **params)

    def run(n, rng):
        return np.array(
            [
                getattr(est.set_params(random_state=fit_seed(rng)).fit(X), attribute)[0]
                for _ in range(n)
            ]
        )

    return run


def _mean_audit(n):
    X, Y = _neighbours(-1e12, 1e12)
    runs = [_runner(Z, "mean_", with_std=False, rho=RHO) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, delta=DELTA, random_state=5)


def _variance_audit(n):
    X, Y = _neighbours(0.0, 1e12)
    runs = [_runner(Z, "var_", epsilon=EPSILON) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=6)


def _joint_audit(n):
    X, Y = _neighbours(-0.25, 1e12)
    runs = [_runner(Z, "mean_", epsilon=EPSILON) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=7)


def test_joint_release_keeps_its_pure_claim_at_its_worst_pair():
    result = _joint_audit(1500)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_joint_release_at_a_twentieth_of_the_sensitivity_is_caught(
    monkeypatch,
):
    original = module.moments_mechanism

    def weak(cost, n, d, n_partials=None):
        mech = original(cost, n, d, n_partials)
        return LInfinityMechanism(
            sensitivity=mech.sensitivity / 20.0, epsilon=cost.epsilon, size=mech.size
        )

    monkeypatch.setattr(module, "moments_mechanism", weak)
    result = _joint_audit(300)
    assert result.epsilon_lower > EPSILON, result


def test_mean_keeps_its_claim_with_a_far_row():
    result = _mean_audit(2000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_a_twentieth_of_the_sensitivity_is_caught(monkeypatch):
    original = module.mean_mechanism

    def weak(cost, n, d, radius, n_partials=None):
        mech = original(cost, n, d, radius, n_partials)
        return type(mech)(sensitivity=mech.sensitivity / 20.0, rho=cost.rho)

    monkeypatch.setattr(module, "mean_mechanism", weak)
    result = _mean_audit(600)
    assert result.epsilon_lower > CLAIM, result


def test_variance_keeps_its_pure_claim_with_a_far_row():
    result = _variance_audit(1500)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_without_clipping_is_caught(unclip):
    unclip(offsets=moments)
    result = _variance_audit(300)
    assert result.epsilon_lower > EPSILON, result


@pytest.mark.slow
def test_both_keep_their_claims_large():
    result = _mean_audit(30_000)
    assert result.epsilon_lower <= CLAIM, result
    result = _variance_audit(30_000)
    assert result.epsilon_lower <= EPSILON, result
    result = _joint_audit(30_000)
    assert result.epsilon_lower <= EPSILON, result
