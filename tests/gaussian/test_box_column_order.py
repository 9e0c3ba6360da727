"""A Gaussian in a box must not depend on the order of its columns.

The box release is made in box units, where every column has the same scale;
the map back to the data's units is post-processing and should be exact up to
rounding entry by entry. Columns whose scales are not sorted (1, 1e-3, 1e6)
expose a map back that goes through an eigendecomposition in the data's
units: the smallest column's variance is then lost to the rounding of the
largest (relative ``2^-52`` of 1.6e13 against 1.6e-5), and comes back 100
times too small or too large, depending on the draw. The same rows with the
columns sorted keep it. Marked as expected to fail until the map back keeps
the box units' precision.
"""

import warnings

import numpy as np
import pytest

from dpgauss import PrivateGaussianEstimator

SCALES = np.array([1.0, 1e-3, 1e6])
N = 15_000


def _variance_ratios(order, seed):
    X = np.random.default_rng(seed).normal(size=(N, 3)) * SCALES
    X, half = X[:, order], 4.0 * SCALES[order]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateGaussianEstimator(bounds=(-half, half), rho=0.5, random_state=seed)
        est.fit(X)
    return np.diag(est.covariance_) / np.var(X, axis=0)


def test_sorted_columns_keep_every_variance():
    # n = 15,000: a variance's sampling sd is sqrt(2 / n) ~ 1.2% of it and the
    # release's noise at rho 0.5 about as much; 20% is over ten sds.
    ratios = _variance_ratios([1, 0, 2], seed=0)
    assert np.all(np.abs(ratios - 1.0) < 0.2), ratios


@pytest.mark.xfail(
    strict=True,
    reason="from_box eigendecomposes the covariance in the data's units",
)
def test_unsorted_columns_keep_every_variance():
    ratios = _variance_ratios([0, 1, 2], seed=0)
    assert np.all(np.abs(ratios - 1.0) < 0.2), ratios
