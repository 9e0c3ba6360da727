"""Pair differences (dpgauss.releases._pairs): the pairing and the rows z."""

import numpy as np
import pytest

from dpgauss.releases._pairs import PairDifferences, pair_indices
from dpgauss.utils._sums import row_norms


@pytest.mark.parametrize("n", [2, 7, 10])
def test_replacing_one_row_changes_at_most_one_pair(n):
    # The privacy of the pairs path: for a pairing drawn independently of the
    # data, neighbours' pair rows z differ in at most one row, whichever row is
    # replaced and however far (1e300 keeps x/2 - x'/2 finite).
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3))
    first, second = pair_indices(n, np.random.default_rng(1))
    assert first.size == second.size == n // 2
    assert len(set(first) | set(second)) == 2 * (n // 2)
    base = PairDifferences(X, first, second)
    for j in range(n):
        Y = X.copy()
        Y[j] = [1e300, -1e300, 1e12]
        other = PairDifferences(Y, first, second)
        changed = np.any(base.rows() != other.rows(), axis=1)
        assert changed.sum() <= 1
        assert np.all(np.isfinite(other.rows()))
        np.testing.assert_allclose(other.norms(), row_norms(other.rows(), 0.0 * X[0]))


def test_pair_rows_have_half_the_covariance_whatever_the_mean():
    rng = np.random.default_rng(0)
    C = np.array([[2.0, 0.5], [0.5, 1.0]])
    X = rng.multivariate_normal([1e3, -50.0], C, size=200_000)
    first, second = pair_indices(X.shape[0], rng)
    Z = PairDifferences(X, first, second).rows()
    np.testing.assert_allclose(Z.T @ Z / Z.shape[0], C / 2, atol=0.02)
