"""End-to-end audit of the Gaussian's staged release in a box, with canaries.

``PrivateGaussianEstimator(bounds=(-1, 1), rho=0.1)`` on n = 1000 rows of two
features at +-1/2 (variance 1/4 each), except the first row, takes the
staged plan (checked below): the moments ``box_first`` at a quarter of rho,
then, the fills being large, the augmented GaussCov of the rows ``(y,
tau)`` at the rest, ``y`` the box row less the first stage's means clipped
at ``tau`` (about 1.4 here, from the first stage's variances), in the ball
of radius ``sqrt(2) tau`` (Frobenius sensitivity ``sqrt(2) 2 tau^2 / n``).
The first row moves from -1e12 (z = -1) to 1e12 (z = 1): its first
coordinate's mean moves by 2 / n in the first stage and its ``tau y``
entries of the second moment by up to ``2 tau^2 / n``; the audited
``mean_[0]`` combines both. Canaries: the augmented release calibrated to a
twentieth of its sensitivity, and every clip of the rows removed. The far
row lies within ``tau`` of the first stage's means, so this audit cannot
see a fault in the clip at ``tau`` alone: the deterministic replay of
tests/releases/test_box_staged_neighbours.py guards it.
"""

import numpy as np
import pytest

import dpgauss.releases._box_staged as module
from dpgauss import PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.releases._box_gaussian import box_gaussian_plan
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.1, 1e-2, 1000
CLAIM = zcdp_to_approx(RHO, DELTA)


def _runner(X):
    est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), rho=RHO, on_useless="warn")

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).mean_[0]
                for _ in range(n)
            ]
        )

    return run


def _rows():
    X = np.full((N, 2), 0.5)
    X[: N // 2] = -0.5
    X[::2, 1] *= -1.0
    X[0] = -1e12
    Y = X.copy()
    Y[0] = 1e12
    return X, Y


def _audit(n):
    X, Y = _rows()
    return audit(
        _runner(X),
        _runner(Y),
        n_samples=n,
        n_select=n // 2,
        delta=DELTA,
        random_state=9,
    )


def test_the_audited_fit_takes_the_staged_release_and_its_augmented_option(spy_on):
    plan = box_gaussian_plan(ZCDP(RHO), N, 2)
    assert [r.name for r in plan] == ["box_first", "box_second"]
    taken = spy_on(module, "choose_augmented")
    _runner(_rows()[0])(5, np.random.default_rng(0))
    assert taken == [True] * 5


# 1,000 samples a side in the default run (the canary below is caught at
# 600); 2,000, a tighter lower bound, with -m slow.
@pytest.mark.parametrize("samples", [1000, pytest.param(2000, marks=pytest.mark.slow)])
@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_augmented_release_keeps_its_claim_with_a_far_row(samples):
    result = _audit(samples)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_a_twentieth_of_the_sensitivity_is_caught(weaken):
    import dpgauss.releases._covariance as covariance

    weaken(covariance, "second_moment_mechanism", 20.0)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught(unclip, monkeypatch):
    # Every clip the augmented rows pass through removed: the box map's, the
    # centred rows' at tau and the sums' at the ball.
    unclip(offsets=module, sums=module)
    monkeypatch.setattr(module, "clip_rows", lambda Z, center, tau: Z - center)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result
