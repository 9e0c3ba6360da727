"""End-to-end audit of the covariance's probed release in a box, with canaries.

``PrivateCovariance(bounds=(-1, 1), rho=0.1)`` on n = 1000 rows of two
features equal to each other at +-1/2 (correlation 1), except the first row,
takes the probed plan (checked below): the mean at a tenth, GaussCov of the
second moment about it (rows in the ball of radius ``sqrt(2)``, Frobenius
sensitivity ``sqrt(2) 2 / n``) at a quarter of the rest as the probe, then,
the probe showing the correlation, the same GaussCov at the rest, the two
averaged. The first row moves from (-1e12, -1e12) (z = (-1, -1)) to (1e12,
-1e12) (z = (1, -1)): its product ``z_0 z_1`` moves from 1 to -1, its
first coordinate's mean by 2 / n, and the audited ``covariance_[0, 1]``
reads every release. Canaries: the
GaussCov releases calibrated to a twentieth of their sensitivity, and the
box map without its clip.
"""

import numpy as np
import pytest

import dpgauss.releases._box_probe as module
import dpgauss.releases._diagonal as diagonal
from dpgauss import PrivateCovariance
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.base import FitData
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.1, 1e-2, 1000
CLAIM = zcdp_to_approx(RHO, DELTA)


def _runner(X, entry=(0, 1)):
    est = PrivateCovariance(bounds=(-1.0, 1.0), rho=RHO, on_useless="warn")

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).covariance_[entry]
                for _ in range(n)
            ]
        )

    return run


def _rows(first, second):
    X = np.full((N, 2), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    Y = X.copy()
    Y[0] = second
    return X, Y


def _audit(n, rows=None, entry=(0, 1)):
    X, Y = rows or _rows((-1e12, -1e12), (1e12, -1e12))
    return audit(
        _runner(X, entry),
        _runner(Y, entry),
        n_samples=n,
        n_select=n // 2,
        delta=DELTA,
        random_state=9,
    )


def test_the_audited_fit_takes_the_probed_plan_and_its_full_option(spy_on):
    X, _ = _rows((-1e12, -1e12), (1e12, -1e12))
    est = PrivateCovariance(bounds=(-1.0, 1.0), rho=RHO, on_useless="warn")
    plan = est._build_plan(ZCDP(RHO), FitData(n=N, d=2))
    assert module.is_probed(plan)
    taken = spy_on(module, "correlations_pay")
    _runner(X)(5, np.random.default_rng(0))
    assert taken == [True] * 5


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_probed_release_keeps_its_claim_with_a_far_row():
    result = _audit(2000)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_a_twentieth_of_the_sensitivity_is_caught(weaken):
    import dpgauss.releases._covariance as covariance

    weaken(covariance, "second_moment_mechanism", 20.0)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught(unclip):
    unclip(offsets=diagonal, sums=module)
    # A row 1,000 box half-widths out: clipped, it is at the box's corner.
    result = _audit(600, _rows((-1e3, -1e3), (1e3, -1e3)))
    assert result.epsilon_lower > CLAIM, result


def _independent():
    # Exactly uncorrelated columns: z_0 in {-1, 0} (mean -1/2), z_1 = +-1/2
    # balanced against it. Row 0 moves from z_0 = 0 to 1 (1e12, clipped): its
    # square about the box centre by 1/n, its mean by 1/n, the variance about
    # the mean by about 2/n. (A row from z = -1 to 1 about a mean of 0 leaves
    # the variance unchanged and would hide a weakened release.)
    X = np.column_stack([np.repeat([-1.0, 0.0], N // 2), np.tile([-0.5, 0.5], N // 2)])
    X[0] = (0.0, 0.5)
    Y = X.copy()
    Y[0] = (1e12, 0.5)
    return X, Y


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_the_moments_option_keeps_its_claim_and_its_canary_is_caught(spy_on, weaken):
    # The probe sees no correlation on these rows: the per-coordinate
    # release (box_rest) is taken, and audited on the variance it moves.
    import dpgauss.releases._variances as variances

    taken = spy_on(module, "correlations_pay")
    _runner(_independent()[0], (0, 0))(5, np.random.default_rng(0))
    assert taken == [False] * 5
    result = _audit(1200, _independent(), (0, 0))
    assert result.epsilon_lower <= CLAIM, result
    weaken(variances, "moments_mechanism", 20.0)
    result = _audit(600, _independent(), (0, 0))
    assert result.epsilon_lower > CLAIM, result
