"""Shared data of the covariance family's tests."""

import numpy as np
import pytest


def _mixed_units(n=3000, seed=0):
    # Columns in scales 1e-3 .. 1e6 (a fixed correlated Gaussian per column),
    # inside the box (9, 11) times each scale.
    rng = np.random.default_rng(seed)
    scales = np.array([1e-3, 1.0, 1e3, 1e6])
    Z = rng.multivariate_normal(np.zeros(4), 0.5 * np.eye(4) + 0.5, size=n)
    Z = np.clip(Z / 4.0, -1, 1)
    return Z * scales + 10 * scales, (9 * scales, 11 * scales)


def _relative_error(estimate, X):
    # In standardised units: each column's error relative to its own scale.
    C = np.cov(X.T)
    s = np.sqrt(np.diag(C))
    return np.linalg.norm((estimate - C) / np.outer(s, s)) / np.linalg.norm(
        C / np.outer(s, s)
    )


@pytest.fixture
def mixed_units():
    """``mixed_units(n=3000, seed=0)``: rows whose columns are in scales 1e-3 ..
    1e6, and their public box."""
    return _mixed_units


@pytest.fixture
def relative_error():
    """``relative_error(estimate, X)``: the covariance's relative Frobenius
    error with each column in its own standard deviations."""
    return _relative_error
