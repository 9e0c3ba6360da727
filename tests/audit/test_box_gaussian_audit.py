"""End-to-end audit of the Gaussian's augmented release in a box, with canaries.

``PrivateGaussianEstimator(bounds=(-1, 1), rho=0.05)`` on n = 50 rows of one
feature, half at -1/2 and half at 1/2 except the first, takes the augmented
plan (checked below): GaussCov of the rows ``(z, 1)`` in the ball of radius
``sqrt(2)``, Frobenius sensitivity ``sqrt(2) 2 / n``. The first row moves
from -1e12 (z = -1) to 1e12 (z = 1): the second moment ``[[z^2, z], [z, 1]]``
moves by 2 in both off-diagonal entries, Frobenius ``2 sqrt(2) / n``, the
whole sensitivity, and the audited ``mean_`` (the off-diagonal entry) sees
it all. Canaries: the release calibrated to a twentieth of its sensitivity,
and the box map without its clip.
"""

import numpy as np
import pytest

import dpgauss.releases._box_gaussian as module
from dpgauss import PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.releases._box_gaussian import box_gaussian_plan
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.05, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _runner(X):
    est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), rho=RHO, on_useless="warn")

    def run(n, rng):
        return np.array(
            [est.set_params(random_state=rng).fit(X).mean_[0] for _ in range(n)]
        )

    return run


def _audit(n):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = -1e12
    Y = X.copy()
    Y[0] = 1e12
    return audit(
        _runner(X),
        _runner(Y),
        n_samples=n,
        n_select=n // 2,
        delta=DELTA,
        random_state=9,
    )


def test_the_audited_fit_takes_the_augmented_release():
    assert [r.name for r in box_gaussian_plan(ZCDP(RHO), N, 1)] == ["second_moment"]


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_augmented_release_keeps_its_claim_with_a_far_row():
    result = _audit(2000)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_a_twentieth_of_the_sensitivity_is_caught(monkeypatch):
    import dpgauss.releases._covariance as covariance

    original = covariance.second_moment_mechanism

    def weak(cost, n, d, radius, n_partials=None):
        mech = original(cost, n, d, radius, n_partials)
        return type(mech)(sensitivity=mech.sensitivity / 20.0, rho=cost.rho)

    monkeypatch.setattr(covariance, "second_moment_mechanism", weak)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught(monkeypatch):
    def unclipped(x, center, half_width):
        with np.errstate(all="ignore"):
            return (np.asarray(x, dtype=np.float64) - center) / half_width

    def unclipped_sums(X, center, radius, with_outer=True, trace_bits=None):
        y = np.asarray(X, dtype=np.float64) - center
        return y.sum(axis=0), y.T @ y

    monkeypatch.setattr(module, "box_offsets", unclipped)
    monkeypatch.setattr(module, "clipped_sums", unclipped_sums)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result
