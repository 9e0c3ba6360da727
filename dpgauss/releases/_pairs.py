"""Pair differences: rows whose second moment is half the covariance, whatever the mean.

A helper module of the release layer. The rows of X are paired by a random
permutation (:func:`pair_indices`) and each pair gives ``z = x/2 - x'/2``
(:class:`PairDifferences`), so that ``E[z z^T] = C / 2`` for independent rows
of covariance C, with no center to release first. Used by the tail-sensitive
covariance (:mod:`dpgauss.releases._adaptive`, when the mean's noise would
cost more than the pairs') and by the coarse range's scale
(:mod:`dpgauss.releases._range`).

Privacy. The permutation is drawn from the fit's generator, independently of
the data, so the pairing is public. Replacing one row of X changes at most
one of the m = n // 2 rows z (the row's own pair; with n odd one row is in no
pair), so a release on the rows z calibrated to m rows and to replacing one
of them is private with respect to replacing one row of X, with the same
parameters. Nothing here draws noise or releases a value: the rows z are
computed exactly as halves (``a/2 - b/2`` is finite for finite rows, where a
difference could overflow), so the sensitivities of the releases that use
them hold in float64.
"""

import numpy as np

from dpgauss.utils._sums import CHUNK_ROWS, is_dask_array, row_norms

__all__ = ["PairDifferences", "pair_indices"]


def pair_indices(n, rng):
    """A random pairing of the rows: ``first[i]`` with ``second[i]``, n // 2 pairs.

    Drawn from the fit's generator, independently of the data, so that pairs mix
    rows whatever their order (sorted data paired in order would hide between-
    group covariance). With n odd one row is in no pair.
    """
    order = rng.permutation(n)
    m = n // 2
    return order[:m], order[m : 2 * m]


class PairDifferences:
    """The rows ``z_i = x_first[i] / 2 - x_second[i] / 2`` of a pairing.

    ``E[z z^T] = C / 2`` for independent rows with covariance C, whatever their
    mean, so the covariance needs no center. Replacing one row of X changes at
    most one z (the pairing is public, drawn independently of the data), so a
    release on the m = n // 2 rows z with sensitivities for m rows is private
    with respect to X. Halves, not a difference then a scaling: every z is
    finite for finite rows (|x/2 - x'/2| <= max float).
    """

    def __init__(self, X, first, second):
        self.X, self.first, self.second = X, first, second

    def _block(self, start, stop):
        """z for the pairs ``start:stop`` (numpy input: an array)."""
        X = self.X
        a, b = X[self.first[start:stop]], X[self.second[start:stop]]
        return _halves(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))

    def norms(self):
        """The norms of every z, computed in blocks (z is not stored)."""
        if is_dask_array(self.X):
            return row_norms(self.rows(), np.zeros(self.X.shape[1]))
        zero = np.zeros(self.X.shape[1])
        m = self.first.size
        return np.concatenate(
            [np.zeros(0)]
            + [
                row_norms(self._block(s, s + CHUNK_ROWS), zero)
                for s in range(0, m, CHUNK_ROWS)
            ]
        )

    def rows(self):
        """The m rows z (an array; a lazy dask array for dask input)."""
        if is_dask_array(self.X):
            X = self.X
            return _halves(
                X[self.first].astype(np.float64), X[self.second].astype(np.float64)
            )
        return self._block(0, self.first.size)


def _halves(a, b):
    """``a/2 - b/2``: finite for finite rows (a difference could overflow)."""
    with np.errstate(all="ignore"):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return 0.5 * a - 0.5 * b  # dask: lazily
        # In place on the gathered copies (the same values as 0.5 a - 0.5 b).
        a = np.multiply(a, 0.5, out=a) if a.flags.writeable else 0.5 * a
        b = np.multiply(b, 0.5, out=b) if b.flags.writeable else 0.5 * b
        return np.subtract(a, b, out=a)
