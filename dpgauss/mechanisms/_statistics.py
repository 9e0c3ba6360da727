"""Mechanisms for summary statistics of one variable: histogram and quantile.

Both read a 1-D array of values with public bounds or bin edges, and treat two
datasets of the same size n that differ in one value as neighbours. Both are
exact by default (lattice noise, exact selection; see
:mod:`dpgauss.mechanisms`).
"""

import math
from fractions import Fraction

import numpy as np

from dpgauss.accounting import PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise
from dpgauss.mechanisms._additive import (
    GaussianMechanism,
    LaplaceMechanism,
    _check_exact,
)
from dpgauss.mechanisms._selection import exponent_coefficient, permute_and_flip
from dpgauss.utils._random import check_generator

__all__ = ["HistogramMechanism", "QuantileMechanism"]


def _values_1d(values):
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            f"expected a non-empty 1-D array of values, got {values.shape}."
        )
    if np.isnan(values).any():
        raise ValueError("the values contain NaN.")
    return values


class HistogramMechanism:
    """Noisy counts of values in public bins.

    Parameters
    ----------
    bins : array-like of shape (k + 1,)
        Public, strictly increasing, finite bin edges. Values below the first
        edge count in the first bin and values above the last in the last bin
        (so every row is counted and the sensitivity below holds).
    rho : float, default=None
        The zCDP cost: Gaussian noise. Give exactly one of ``rho`` and ``epsilon``.
    epsilon : float, default=None
        Pure DP cost: Laplace noise.
    exact : bool, default=True
        Exact lattice noise (float-safe); ``False`` uses float noise, **not
        float-safe**.

    Attributes
    ----------
    bins : ndarray
        The bin edges.
    mechanism : GaussianMechanism or LaplaceMechanism
        The calibrated mechanism.
    cost : ZCDP or PureDP
        The privacy cost of one release.
    draws : int
        Number of releases drawn so far.

    Notes
    -----
    Sensitivity: replacing one value moves one unit of count from one bin to
    another, so the count vector changes by at most 2 in l1 and sqrt(2) in l2
    (``math.sqrt(2.0)`` rounds up). Gaussian noise has ideal sigma = sqrt(2) /
    sqrt(2 rho) = 1 / sqrt(rho) per bin; Laplace noise has scale 2 / epsilon. The
    counts are integers, so they lie on the mechanism's lattice whenever its step
    is at most 1 (the calibration includes the rounding in any case).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import HistogramMechanism
    >>> hist = HistogramMechanism([0, 1, 2, 3], rho=100.0)
    >>> hist.release([0.5, 0.5, 1.5, 2.5, 9.0], random_state=0).round(1)
    array([2. , 1. , 2.1])
    """

    def __init__(self, bins, *, rho=None, epsilon=None, exact=True):
        edges = np.asarray(bins, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2:
            raise ValueError("bins must be a 1-D array of at least two edges.")
        if not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
            raise ValueError("bins must be finite and strictly increasing.")
        self.bins = edges
        if (rho is None) == (epsilon is None):
            raise ValueError("give exactly one of rho and epsilon.")
        exact = _check_exact(exact)
        if rho is not None:
            self.mechanism = GaussianMechanism(
                sensitivity=math.sqrt(2.0), rho=rho, exact=exact
            )
        else:
            self.mechanism = LaplaceMechanism(
                sensitivity=2.0, epsilon=epsilon, exact=exact
            )
        self.cost = self.mechanism.cost
        self.draws = 0

    def counts(self, values):
        """Return the exact counts (not private; used by :meth:`release`).

        Parameters
        ----------
        values : array-like of shape (n,)
            The data.

        Returns
        -------
        ndarray of shape (k,)
            Number of values per bin (out-of-range values in the end bins).
        """
        values = _values_1d(values)
        index = np.searchsorted(self.bins, values, side="right") - 1
        index = np.clip(index, 0, self.bins.size - 2)
        return np.bincount(index, minlength=self.bins.size - 1).astype(np.float64)

    def release(self, values, random_state=None):
        """Return noisy counts, one per bin.

        Parameters
        ----------
        values : array-like of shape (n,)
            The data.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (k,)
            Noisy counts (may be negative or fractional).
        """
        counts = self.counts(values)
        rng = check_generator(random_state)
        self.draws += 1
        return self.mechanism.randomise(counts, rng)


class QuantileMechanism:
    """A quantile by exact selection among public grid points (Smith 2011 style).

    Parameters
    ----------
    quantile : float
        Which quantile, in [0, 1].
    bounds : tuple of float
        Public (low, high) range of the candidates.
    epsilon : float
        The pure DP cost.
    n_candidates : int, default=4097
        Number of evenly spaced public candidates from low to high (both
        included): the output is one of them, so the resolution is
        ``(high - low) / (n_candidates - 1)``.
    exact : bool, default=True
        Exact permute-and-flip selection. ``False``: the float exponential
        mechanism (Gumbel-max), **not float-safe**.

    Attributes
    ----------
    quantile : float
        q.
    bounds : tuple of float
        (low, high).
    candidates : ndarray of shape (n_candidates,)
        The public grid of candidate outputs.
    cost : PureDP
        The privacy cost of one release.
    draws : int
        Number of releases drawn so far.

    Notes
    -----
    Candidate c has the integer utility ``-|#{x_i <= c} - m|`` with
    ``m = floor(q n + 1/2)`` (n public). Replacing one value changes every count
    by at most 1, so every utility by at most 1 (sensitivity 1, exactly, with no
    rounding). Selection is permute-and-flip with coin probabilities
    ``exp(-c (max u - u_j))``, c a dyadic rational at most ``epsilon / 2``: it is
    epsilon-DP (McKenna and Sheldon 2020) and every coin is exact (see
    :class:`~dpgauss.mechanisms.ExponentialMechanism`). The candidates do not
    depend on the data, so the output is a public grid point chosen privately.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import QuantileMechanism
    >>> values = np.linspace(0, 10, 1001)
    >>> median = QuantileMechanism(0.5, bounds=(0, 10), epsilon=1.0)
    >>> round(median.release(values, random_state=0), 1)
    5.0
    """

    def __init__(self, quantile, *, bounds, epsilon, n_candidates=4097, exact=True):
        quantile = float(quantile)
        if not 0.0 <= quantile <= 1.0:
            raise ValueError(f"quantile must be in [0, 1], got {quantile!r}.")
        low, high = (float(b) for b in bounds)
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"bounds must be finite with low < high, got {bounds!r}.")
        if isinstance(n_candidates, bool) or not isinstance(
            n_candidates, (int, np.integer)
        ):
            raise TypeError(f"n_candidates must be an int, got {n_candidates!r}.")
        if n_candidates < 2:
            raise ValueError(f"n_candidates must be >= 2, got {n_candidates!r}.")
        self.quantile, self.bounds = quantile, (low, high)
        self.candidates = np.linspace(low, high, int(n_candidates))
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))
        self.exact = _check_exact(exact)
        if self.exact:
            self._coefficient = exponent_coefficient(self.cost.epsilon, 1)
        self.draws = 0

    def counts(self, values):
        """Return ``#{x <= c}`` for every candidate (not private).

        Counts of disjoint parts of the data add up to the whole data's
        (exact integers): a pass can count chunk by chunk and release with
        :meth:`release_counts`.

        Parameters
        ----------
        values : array-like of shape (n,)
            The data.

        Returns
        -------
        ndarray of int64 of shape (n_candidates,)
            The counts.
        """
        values = np.sort(_values_1d(values))
        return np.searchsorted(values, self.candidates, side="right").astype(np.int64)

    def utilities(self, values):
        """Return the integer utility of every candidate (not private).

        Parameters
        ----------
        values : array-like of shape (n,)
            The data.

        Returns
        -------
        ndarray of int64 of shape (n_candidates,)
            ``-|#{x <= c} - floor(q n + 1/2)|``.
        """
        values = _values_1d(values)
        return self._utilities(self.counts(values), values.size)

    def _utilities(self, counts, n):
        target = math.floor(Fraction(self.quantile) * int(n) + Fraction(1, 2))
        return -np.abs(np.asarray(counts, dtype=np.int64) - target)

    def release(self, values, random_state=None):
        """Return a private estimate of the quantile.

        Parameters
        ----------
        values : array-like of shape (n,)
            The data.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        float
            One of the candidates.
        """
        values = _values_1d(values)
        return self.release_counts(self.counts(values), values.size, random_state)

    def release_counts(self, counts, n, random_state=None):
        """:meth:`release` from the counts ``#{x <= c}`` of n values.

        The same selection as :meth:`release` on those values (its utilities
        read the counts alone); the counts may come from a chunked pass
        (:meth:`counts` of each chunk, added). Privacy rests on the caller:
        ``counts[j]`` must be ``sum_i [x_i <= c_j]`` over the n rows, each row
        adding 0 or 1 to each count from its own value alone, so that
        replacing a row moves every count, hence every utility, by at most 1
        (the sensitivity in the Notes).

        Parameters
        ----------
        counts : ndarray of int of shape (n_candidates,)
            ``#{x <= c}`` for every candidate.
        n : int
            How many values were counted (public).
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        float
            One of the candidates.
        """
        utilities = self._utilities(counts, n)
        rng = check_generator(random_state)
        self.draws += 1
        if self.exact:
            gaps = utilities.max() - utilities
            index = permute_and_flip(gaps, *self._coefficient, rng)
        else:
            scores = 0.5 * self.cost.epsilon * utilities
            index = int(np.argmax(scores + _noise.draw_gumbel(scores.shape, rng)))
        return float(self.candidates[index])
