"""Audits with one row 1e10..1e15 radii away from a far center, for every statistic.

Floating-point cancellation once broke the clipping bound: the tail-sensitive
estimator computed the clipped sum as ``X^T f - c sum(f)``, which, with rows near
a center at 1e14, moved by 16 between neighbours instead of at most 2r (an audit
of the whole fit then lower-bounded epsilon at 5.6 against a claim of 1.47). Every
statistic is now computed on offsets from the center and its rounding is part of
its sensitivity. These audits release each statistic many times on two
neighbours, one of whose rows lies 1e10..1e15 radii away, and check the lower
confidence bound on epsilon; the canary restores the old shortcut and must be
caught.
"""

import numpy as np
import pytest

import dpgauss.releases._center as release_module
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.mechanisms._releases import second_moment_mechanism
from dpgauss.releases._center import mean_factory
from dpgauss.releases._covariance import mechanism_factory
from dpgauss.testing.audit import audit
from dpgauss.utils._sums import clipped_sums, row_norms

pytestmark = pytest.mark.audit

RHO, DELTA, N, D, R = 0.5, 1e-2, 1000, 3, 1.0
CLAIM = zcdp_to_approx(RHO, DELTA)
CENTER = np.full(D, 1e14)


def _neighbours(ratio):
    rng = np.random.default_rng(0)
    X = CENTER + rng.normal(size=(N, D)) * 0.3
    Y = X.copy()
    Y[0] = CENTER + ratio * R * np.array([1.0, -1.0, 1.0])
    return X, Y


def _shortcut_sums(X, center, radius, with_outer=True):
    """The old in-memory shortcut: clipped sum as X^T f - c sum(f) (cancels)."""
    norms = np.linalg.norm(X - center, axis=1)
    f = np.minimum(1.0, radius / norms)
    return X.T @ f - center * f.sum(), None


def _mean_runner(X):
    def run(n, rng):
        out = []
        for _ in range(n):
            mean = Release("mean", ZCDP(RHO), "gaussian", mean_factory(N, D, R))
            plan = ReleasePlan(ZCDP(RHO), [mean])
            mean = BasePrivateCovariance._release_mean(X, CENTER, R, plan, rng)[0]
            out.append(mean.sum() / np.sqrt(D))  # a fixed unit direction
        return np.array(out)

    return run


def _second_moment_runner(X):
    M = clipped_sums(X, CENTER, R)[1] / N

    def run(n, rng):
        mech = second_moment_mechanism(ZCDP(RHO), N, D, R)
        return np.array([mech.randomise(M, rng)[0, 1] for _ in range(n)])

    return run


def _audit(runner, ratio, n=20_000):
    X, Y = _neighbours(ratio)
    return audit(
        runner(X), runner(Y), n_samples=n, n_select=n // 2, delta=DELTA, random_state=5
    )


@pytest.mark.parametrize("ratio", [1e12])
def test_mean_keeps_its_claim_with_far_rows(ratio):
    result = _audit(_mean_runner, ratio)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_cancelling_shortcut_is_caught(monkeypatch):
    monkeypatch.setattr(release_module, "clipped_sums", _shortcut_sums)
    result = _audit(_mean_runner, 1e12, n=4000)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.parametrize("ratio", [1e15])
def test_second_moment_keeps_its_claim_with_far_rows(ratio):
    result = _audit(_second_moment_runner, ratio, n=10_000)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.parametrize("ratio", [1e10, 1e12, 1e13, 1e14, 1e15])
def test_every_statistic_moves_by_at_most_its_sensitivity(ratio):
    # Deterministic companion of the audits: the exact statistics of the two
    # neighbours differ by at most the calibrated sensitivities (which include
    # the rounding term), for the mean, the second moment, the trace's and the
    # searches' per-row terms.
    X, Y = _neighbours(ratio)
    make = mechanism_factory(N, D, R, 1)
    sx, sxx = clipped_sums(X, CENTER, R)
    sy, syy = clipped_sums(Y, CENTER, R)
    mean_sens = 2 * R / N * (1 + 1e-9)
    assert np.linalg.norm(sx - sy) / N <= mean_sens
    second = make("second_moment")(ZCDP(RHO)).sensitivity
    assert np.linalg.norm(sxx - syy) / N <= second
    nx = np.minimum(row_norms(X, CENTER), R)
    ny = np.minimum(row_norms(Y, CENTER), R)
    assert np.sum(np.abs(nx - ny) > 0) <= 1  # one row's term changes, and by <= r
    assert np.max(np.abs(nx**2 - ny**2)) <= R**2


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [1e10, 1e12, 1e13, 1e14, 1e15])
def test_mean_keeps_its_claim_with_far_rows_large(ratio):
    result = _audit(_mean_runner, ratio, n=100_000)
    assert result.epsilon_lower <= CLAIM, result
