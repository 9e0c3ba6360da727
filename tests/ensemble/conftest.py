"""Fixtures shared by the ensemble's tests."""

import numpy as np
import pytest


def _group_rows(seed, s, d, k, degenerate=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((k * s, d)) * rng.choice([1e-3, 1.0, 1e3], size=d)
    if degenerate and d > 1:
        X[:, 1] = X[:, 0]  # every group rank-deficient: the minimum-norm fit
    y = X @ rng.standard_normal(d) + rng.standard_normal(k * s)
    return X, y


@pytest.fixture
def group_rows():
    """``group_rows(seed, s, d, k, degenerate=False)``: ``(X, y)`` of k groups
    of s rows on d columns in units 1e-3 to 1e3 (with ``degenerate``, the
    second column a copy of the first), y linear in X plus noise."""
    return _group_rows
