"""End-to-end audits of the joint moments release at the Gaussian's weight
w = 3/2, with canaries (the scaler's and PCA's w = 2 are audited in
test_scaler_audit.py and test_pca_axes_audit.py, each with a canary at a
twentieth of the sensitivity and the scaler's with an unclipped box).

``PrivateGaussianEstimator(bounds=(-1, 1))`` on n = 50 rows of one feature,
half at -1/2 and half at 1/2 except the first, releases the 2-vector (mean,
(3/2) centred square) of the box coordinates (checked below): once, the
``box_moments`` plan, under pure DP (Laplace noise at l1 sensitivity
8/(3n)); under zCDP in two stages, the staged plan's ``box_first`` and its
moments option ``box_rest`` (Gaussian noise at l2 sensitivity 2/n each).

* Pure DP: the first row moves from -1e12 (z = -1) to 1e12 (z = 1): the
  mean moves by 2/n and the centred square not at all, so the audited
  ``mean_`` sees epsilon 3/4 of the claim.
* zCDP: the first row moves from the centre (z = 0) to 1e12 (z = 1): the
  mean moves by 1/n and the weighted square by 3/(2n), l2 norm sqrt(13)/(2n)
  ~ 1.8/n against the 2/n the noise is calibrated for; the audited variance
  (the covariance's one entry) reads the second moment.

Canaries: the release calibrated to a twentieth of its sensitivity, and the
box map without its clip (a row 1e12 away then moves the mean by 1e12/n),
each under pure DP and zCDP.
"""

import numpy as np
import pytest

import dpgauss.releases._box_gaussian as module
import dpgauss.releases._box_staged as staged
import dpgauss.releases._moments as moments
from dpgauss import PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, PureDP, zcdp_to_approx
from dpgauss.releases._box_gaussian import box_gaussian_plan
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

EPSILON, RHO, DELTA, N = 1.0, 0.5, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _neighbours(first, moved):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    Y = X.copy()
    Y[0] = moved
    return X, Y


def _runner(X, read, **privacy):
    est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), on_useless="warn", **privacy)

    def run(n, rng):
        return np.array(
            [read(est.set_params(random_state=fit_seed(rng)).fit(X)) for _ in range(n)]
        )

    return run


def _pure_audit(n):
    X, Y = _neighbours(-1e12, 1e12)
    runs = [_runner(Z, lambda e: e.mean_[0], epsilon=EPSILON) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=7)


def _zcdp_audit(n):
    X, Y = _neighbours(0.0, 1e12)
    runs = [_runner(Z, lambda e: e.covariance_[0, 0], rho=RHO) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, delta=DELTA, random_state=8)


def _weak(monkeypatch):
    original = module.moments_mechanism

    def weak(cost, n, d, n_partials=None, weight=2.0):
        mech = original(cost, n, d, n_partials, weight=weight)
        if isinstance(cost, ZCDP):
            return type(mech)(sensitivity=mech.sensitivity / 20.0, rho=cost.rho)
        return type(mech)(sensitivity=mech.sensitivity / 20.0, epsilon=cost.epsilon)

    monkeypatch.setattr(module, "moments_mechanism", weak)
    monkeypatch.setattr(staged, "moments_mechanism", weak)


def _unclipped(x, center, half_width):
    with np.errstate(all="ignore"):
        return (np.asarray(x, dtype=np.float64) - center) / half_width


def test_the_audited_fits_take_the_moments_release(spy_on):
    assert [r.name for r in box_gaussian_plan(PureDP(EPSILON), N, 1)] == ["box_moments"]
    plan = box_gaussian_plan(ZCDP(RHO), N, 1)
    assert [r.name for r in plan] == ["box_first", "box_second"]
    taken = spy_on(staged, "choose_augmented")
    X, _ = _neighbours(0.0, 1e12)
    _runner(X, lambda e: e.covariance_[0, 0], rho=RHO)(5, np.random.default_rng(0))
    assert taken == [False] * 5


# 1,000 samples a side in the default run (the canary below is caught at
# 600); 2,000, a tighter lower bound, with -m slow.
@pytest.mark.parametrize("samples", [1000, pytest.param(2000, marks=pytest.mark.slow)])
def test_moments_release_keeps_its_pure_claim_with_a_far_row(samples):
    result = _pure_audit(samples)
    assert result.epsilon_lower <= EPSILON, result


# 1,000 samples a side in the default run (the canary below is caught at
# 600); 2,000, a tighter lower bound, with -m slow.
@pytest.mark.parametrize("samples", [1000, pytest.param(2000, marks=pytest.mark.slow)])
def test_moments_release_keeps_its_zcdp_claim_with_a_far_row(samples):
    result = _zcdp_audit(samples)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_a_twentieth_of_the_pure_sensitivity_is_caught(monkeypatch):
    _weak(monkeypatch)
    result = _pure_audit(600)
    assert result.epsilon_lower > EPSILON, result


def test_canary_a_twentieth_of_the_zcdp_sensitivity_is_caught(monkeypatch):
    _weak(monkeypatch)
    result = _zcdp_audit(600)
    assert result.epsilon_lower > CLAIM, result


def test_canary_an_unclipped_box_is_caught(monkeypatch):
    monkeypatch.setattr(moments, "box_offsets", _unclipped)
    result = _pure_audit(600)
    assert result.epsilon_lower > EPSILON, result


def test_canary_an_unclipped_box_is_caught_under_zcdp(monkeypatch):
    monkeypatch.setattr(moments, "box_offsets", _unclipped)
    result = _zcdp_audit(600)
    assert result.epsilon_lower > CLAIM, result
