"""End-to-end audit of the covariance's pure-epsilon probed release in a box.

``PrivateCovariance(bounds=(-1, 1), epsilon=EPS)`` on n = 1000 rows of three
features equal to each other at +-1/2 (correlation 1), except the first row,
takes the probed plan of :mod:`dpgauss.releases._energy_probe` (checked
below; the pure fit probes from d = 3): the mean at a tenth, the
off-diagonal energy ``E = ||offdiag(M)||_F`` of the second moment about it
(rows in the ball of radius ``sqrt(3)``, l1 sensitivity ``sqrt(2) 3 / n``)
at a tenth of the rest as the probe, then, the probe showing the
correlation, GaussCov at the rest. The first row moves from (-1e12, -1e12,
-1e12) (z = (-1, -1, -1)) to (1e12, -1e12, 1e12) (z = (1, -1, 1)): the
products ``z_0 z_1`` and ``z_1 z_2`` move from 1 to -1, so ``E`` (every
``M_ij`` about 1/4) by about ``(2 / n) 4 / sqrt(6) = 3.27 / n``, 77% of
its sensitivity ``4.24 / n``. Audited: the released energy itself at its
own share (the sharp test of the new release), and ``covariance_[0, 1]``,
which reads every release, at the whole epsilon. Canaries: the energy's
Laplace calibrated to a twentieth of its sensitivity, and the box map and
the probe's sums without their clips.
"""

import numpy as np
import pytest

import dpgauss.releases._diagonal as diagonal
import dpgauss.releases._energy_probe as module
from dpgauss import PrivateCovariance
from dpgauss.accounting import PureDP
from dpgauss.base import FitData
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

EPS, DELTA, N = 4.0, 1e-3, 1000
# The probe's own epsilon: a tenth of what the mean's tenth leaves.
PROBE = EPS * 0.9 * module.ENERGY_SHARE
MOMENTS_EPS = 1.0


def _estimator(epsilon=EPS):
    return PrivateCovariance(bounds=(-1.0, 1.0), epsilon=epsilon, on_useless="warn")


def _fit_runner(X, entry=(0, 1), epsilon=EPS):
    est = _estimator(epsilon)

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).covariance_[entry]
                for _ in range(n)
            ]
        )

    return run


def _rows(first, second):
    X = np.full((N, 3), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    Y = X.copy()
    Y[0] = second
    return X, Y


def _audit_energy(n, audit_release, rows=None):
    X, Y = rows or _rows((-1e12,) * 3, (1e12, -1e12, 1e12))
    return audit_release(_estimator, X, Y, "box_energy", n, DELTA, 9)


def test_the_audited_fit_takes_the_energy_plan_and_its_full_option(spy_on):
    X, _ = _rows((-1e12,) * 3, (1e12, -1e12, 1e12))
    plan = _estimator()._build_plan(PureDP(EPS), FitData(n=N, d=3))
    assert module.is_energy_probed(plan)
    taken = spy_on(module, "energy_pays")
    _fit_runner(X)(5, np.random.default_rng(0))
    assert taken == [True] * 5


# Slow: tests/audit/test_energy_probe_tight_audit.py audits the same release
# in the default run on a pair that reaches the sensitivity (this one's moves
# the energy by 77% of it), with a canary at half the sensitivity.
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_the_energy_keeps_its_claim_at_its_sensitivity(audit_release):
    result = _audit_energy(2000, audit_release)
    assert result.epsilon_lower <= PROBE, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_a_twentieth_of_the_energy_sensitivity_is_caught(audit_release, weaken):
    weaken(module, "energy_mechanism", 20.0)
    result = _audit_energy(600, audit_release)
    assert result.epsilon_lower > PROBE, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught(audit_release, unclip):
    unclip(offsets=diagonal, sums=module)
    # A row 1,000 box half-widths out: clipped, it is at the box's corner.
    result = _audit_energy(600, audit_release, _rows((-1e3,) * 3, (1e3, -1e3, 1e3)))
    assert result.epsilon_lower > PROBE, result


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_the_whole_fit_keeps_its_claim_with_a_far_row():
    X, Y = _rows((-1e12,) * 3, (1e12, -1e12, 1e12))
    result = audit(
        _fit_runner(X),
        _fit_runner(Y),
        n_samples=2000,
        n_select=1000,
        delta=DELTA,
        random_state=9,
    )
    assert result.epsilon_lower <= EPS, result


def _independent():
    # Exactly uncorrelated columns (as the zCDP probe's audit): z_0 in {-1,
    # 0}, z_1 = +-1/2 balanced against it; row 0 moves from z_0 = 0 to 1.
    # A third column +-1/2 balanced against both.
    X = np.column_stack(
        [
            np.repeat([-1.0, 0.0], N // 2),
            np.tile([-0.5, 0.5], N // 2),
            np.tile([-0.5, -0.5, 0.5, 0.5], N // 4),
        ]
    )
    X[0] = (0.0, 0.5, 0.5)
    Y = X.copy()
    Y[0] = (1e12, 0.5, 0.5)
    return X, Y


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_the_moments_option_keeps_its_claim_and_its_canary_is_caught(
    spy_on, monkeypatch
):
    # The probe sees no correlation on these rows in most fits (a released
    # energy above 1.5 noise sds has probability 6% at E = 0, and at small d
    # the full option's noise is small enough that such a draw may pay): the
    # per-coordinate release (box_rest) is mostly taken, and the fit audited
    # on the variance it moves, at the whole epsilon (1, the smallest that
    # still probes here: a canary at 4 is beyond what 1,200 runs resolve).
    import dpgauss.releases._variances as variances

    taken = spy_on(module, "energy_pays")
    X, Y = _independent()
    _fit_runner(X, (0, 0), MOMENTS_EPS)(40, np.random.default_rng(0))
    assert sum(taken) <= 6, taken

    def run(rows):
        return audit(
            _fit_runner(rows[0], (0, 0), MOMENTS_EPS),
            _fit_runner(rows[1], (0, 0), MOMENTS_EPS),
            n_samples=1200,
            n_select=600,
            delta=DELTA,
            random_state=9,
        )

    assert run((X, Y)).epsilon_lower <= MOMENTS_EPS
    original = variances.moments_mechanism

    def weak(cost, n, d, n_partials=None):
        # Calibrated as if there were 20 times the rows (the cube's K-norm
        # noise is not rebuilt from a sensitivity): a twentieth of each.
        return original(cost, 20 * n, d, n_partials)

    monkeypatch.setattr(variances, "moments_mechanism", weak)
    result = run((X, Y))
    assert result.epsilon_lower > MOMENTS_EPS, result
