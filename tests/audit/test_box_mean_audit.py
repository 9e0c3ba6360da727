"""End-to-end audits of PrivateMean(bounds=...) with a row 1e12 box widths away.

n = 50 rows of one feature in the box (-1, 1), half at -1/2 and half at 1/2,
except the first at -1e12 (clipped to -1); the neighbour moves it to +1e12
(clipped to 1). The whole-box release (the plan at this n) moves by exactly
2/n, its sensitivity, so the audit sees the worst case epsilon-DP allows.
Canaries: the Laplace release calibrated to a twentieth of its sensitivity,
and the map to the box and the window mean without their clips (the far row
then moves the mean by about 1e12 / n).
"""

import numpy as np
import pytest

import dpgauss.releases._box_mean as module
from dpgauss.mean import PrivateMean
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

EPSILON, N = 1.0, 50


def _runner(X):
    est = PrivateMean(bounds=(-1.0, 1.0), epsilon=EPSILON)

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).mean_[0]
                for _ in range(n)
            ]
        )

    return run


def _box_audit(n):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = -1e12
    Y = X.copy()
    Y[0] = 1e12
    return audit(_runner(X), _runner(Y), n_samples=n, n_select=n // 2, random_state=7)


def test_box_mean_keeps_its_pure_claim_with_a_far_row():
    result = _box_audit(2000)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_a_twentieth_of_the_sensitivity_is_caught(monkeypatch):
    original = module.LaplaceMechanism

    def weak(*, sensitivity, epsilon):
        return original(sensitivity=sensitivity / 20.0, epsilon=epsilon)

    monkeypatch.setattr(module, "LaplaceMechanism", weak)
    result = _box_audit(600)
    assert result.epsilon_lower > EPSILON, result


def test_canary_without_clipping_is_caught(monkeypatch, unclip):
    def window_mean(z, low, high, about=None):  # the window's clip skipped too
        v = np.asarray(z) if about is None else np.abs(np.asarray(z) - about)
        return np.mean(v - low, axis=0), 1

    unclip(offsets=module)
    monkeypatch.setattr(module, "_window_mean", window_mean)
    result = _box_audit(600)
    assert result.epsilon_lower > EPSILON, result


# -- three features: the cube's K-norm noise (pure epsilon, d >= 2) -------------
D3 = 3


def _cube_runner(X, a, b):
    # Summary: the privacy loss of the ideal mechanism between the exact means
    # a (of X) and b (of its neighbour), ||y - a||_inf - ||y - b||_inf: its
    # level sets are where the two output laws differ most.
    est = PrivateMean(bounds=(-np.ones(D3), np.ones(D3)), epsilon=EPSILON)

    def run(n, rng):
        out = np.array(
            [est.set_params(random_state=fit_seed(rng)).fit(X).mean_ for _ in range(n)]
        )
        return np.abs(out - a).max(axis=1) - np.abs(out - b).max(axis=1)

    return run


def _cube_audit(n):
    # Every coordinate of the far row moves from -1 to 1 after clipping: the
    # l-infinity distance 2/n is reached in all three coordinates at once.
    X = np.full((N, D3), 0.5)
    X[: N // 2] = -0.5
    X[0] = -1e12
    Y = X.copy()
    Y[0] = 1e12
    a = np.clip(X, -1, 1).mean(0)
    b = np.clip(Y, -1, 1).mean(0)
    return audit(
        _cube_runner(X, a, b),
        _cube_runner(Y, a, b),
        n_samples=n,
        n_select=n // 2,
        random_state=11,
    )


def test_cube_noise_keeps_its_pure_claim_with_a_far_row():
    result = _cube_audit(2000)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_cube_noise_at_a_twentieth_of_the_sensitivity_is_caught(monkeypatch):
    original = module.LInfinityMechanism

    def weak(*, sensitivity, epsilon, size):
        return original(sensitivity=sensitivity / 20.0, epsilon=epsilon, size=size)

    monkeypatch.setattr(module, "LInfinityMechanism", weak)
    result = _cube_audit(600)
    assert result.epsilon_lower > EPSILON, result
