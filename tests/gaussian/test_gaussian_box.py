"""PrivateGaussianEstimator(bounds=...): the box as the whole public hint."""

import numpy as np
import pytest

from dpgauss import PrivateGaussianEstimator
from dpgauss.gaussian._gaussian import from_box


def _mixed_units(n, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.array([1e-3, 1.0, 1e3, 1e6])
    return rng.normal(0.2, 0.1, size=(n, 4)) * scales, scales


def test_mixed_units_cost_nothing():
    # In box units the rows are N(0.2, 0.01 I) in [-1, 1]^4: at rho 0.5 and
    # n = 3000 the mean's noise is about 1e-3 box units and the sds' a few
    # percent (measured: mean within 1e-3, sds 0.098-0.102); allow 10x.
    X, s = _mixed_units(3000)
    est = PrivateGaussianEstimator(bounds=(-s, s), rho=0.5, random_state=0).fit(X)
    assert np.all(np.abs(est.mean_ - X.mean(0)) / s < 1e-2)
    sds = np.sqrt(np.diag(est.covariance_)) / s
    assert np.all(np.abs(sds - 0.1) < 0.03)


@pytest.mark.parametrize("seed", range(4))
def test_outputs_within_the_box_for_far_rows_and_tiny_budgets(seed):
    X, s = _mixed_units(400, seed)
    X[0] = 1e12
    est = PrivateGaussianEstimator(
        bounds=(-s, s), epsilon=1e-3, random_state=seed, on_useless="warn"
    ).fit(X)
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.abs(est.mean_) <= s)
    assert np.all(np.diag(est.covariance_) <= s**2 * (1 + 1e-12))


def test_from_box_caps_the_variances_and_keeps_definiteness():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(3, 3)) * 5
    values, vectors = np.linalg.eigh(A @ A.T)
    mean, new, _, floor = from_box(
        np.array([3.0, -0.5, np.nan]), values, vectors, 1e-9, np.zeros(3), np.ones(3)
    )
    assert np.array_equal(mean, [1.0, -0.5, 0.0])
    assert new.min() >= floor > 0


def test_bounds_exclude_the_other_hints():
    X, s = _mixed_units(100)
    with pytest.raises(ValueError, match="whole public hint"):
        PrivateGaussianEstimator(bounds=(-s, s), cov_bounds=(0, 1), rho=1).fit(X)
    with pytest.raises(ValueError, match="whole public hint"):
        PrivateGaussianEstimator(bounds=(-s, s), rho=1).fit(X, X_public=X[:10])
