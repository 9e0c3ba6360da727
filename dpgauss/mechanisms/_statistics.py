"""Private summary statistics of one variable: histogram and quantile.

Both read a 1-D array of values with public bounds or bin edges, and treat two
datasets of the same size n that differ in one value as neighbours.
"""

import math

import numpy as np

from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._selection import ExponentialMechanism
from dpgauss.utils._random import check_generator

__all__ = ["PrivateHistogram", "PrivateQuantile"]


def _values_1d(values):
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            f"expected a non-empty 1-D array of values, got {values.shape}."
        )
    if np.isnan(values).any():
        raise ValueError("the values contain NaN.")
    return values


class PrivateHistogram:
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

    Attributes
    ----------
    mechanism : GaussianMechanism or LaplaceMechanism
        The calibrated mechanism.
    cost : ZCDP or PureDP
        The privacy cost of one release.

    Notes
    -----
    Sensitivity: replacing one value moves one unit of count from one bin to
    another, so the count vector changes by at most 2 in l1 and sqrt(2) in l2.
    Gaussian noise has sigma = sqrt(2) / sqrt(2 rho) = 1 / sqrt(rho) per bin;
    Laplace noise has scale 2 / epsilon.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import PrivateHistogram
    >>> hist = PrivateHistogram([0, 1, 2, 3], rho=100.0)
    >>> hist.release([0.5, 0.5, 1.5, 2.5, 9.0], random_state=0).round(1)
    array([2. , 1. , 2.1])
    """

    def __init__(self, bins, *, rho=None, epsilon=None):
        edges = np.asarray(bins, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2:
            raise ValueError("bins must be a 1-D array of at least two edges.")
        if not np.all(np.isfinite(edges)) or not np.all(np.diff(edges) > 0):
            raise ValueError("bins must be finite and strictly increasing.")
        self.bins = edges
        if (rho is None) == (epsilon is None):
            raise ValueError("give exactly one of rho and epsilon.")
        if rho is not None:
            self.mechanism = GaussianMechanism(sensitivity=math.sqrt(2.0), rho=rho)
        else:
            self.mechanism = LaplaceMechanism(sensitivity=2.0, epsilon=epsilon)
        self.cost = self.mechanism.cost

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
        return self.mechanism.randomise(self.counts(values), random_state)


class PrivateQuantile:
    """The exponential-mechanism quantile of Smith (2011), with public bounds.

    Parameters
    ----------
    quantile : float
        Which quantile, in [0, 1].
    bounds : tuple of float
        Public (low, high) range; values are clipped to it.
    epsilon : float
        The pure DP cost.

    Attributes
    ----------
    cost : PureDP
        The privacy cost of one release.

    Notes
    -----
    Sort the clipped values x_(1) <= ... <= x_(n) and form the n + 1 intervals
    between low, the values and high. Interval i (i values below it) has utility
    ``-|i - q n|``; replacing one value changes every utility by at most 1. The
    exponential mechanism picks interval i with probability proportional to
    ``length_i exp(eps u_i / 2)``, then a uniform point inside it; the output
    density is proportional to ``exp(eps u(x) / 2)`` over [low, high], so this is
    epsilon-DP.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import PrivateQuantile
    >>> values = np.linspace(0, 10, 1001)
    >>> median = PrivateQuantile(0.5, bounds=(0, 10), epsilon=1.0)
    >>> round(median.release(values, random_state=0), 1)
    5.0
    """

    def __init__(self, quantile, *, bounds, epsilon):
        quantile = float(quantile)
        if not 0.0 <= quantile <= 1.0:
            raise ValueError(f"quantile must be in [0, 1], got {quantile!r}.")
        low, high = (float(b) for b in bounds)
        if not (np.isfinite(low) and np.isfinite(high) and low < high):
            raise ValueError(f"bounds must be finite with low < high, got {bounds!r}.")
        self.quantile, self.bounds = quantile, (low, high)
        self._selector = ExponentialMechanism(
            sensitivity=1.0, epsilon=_check_positive_finite("epsilon", epsilon)
        )
        self.cost = self._selector.cost

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
            A point in [low, high].
        """
        rng = check_generator(random_state)
        low, high = self.bounds
        points = np.concatenate(
            ([low], np.sort(np.clip(_values_1d(values), low, high)), [high])
        )
        n = points.size - 2
        lengths = np.diff(points)
        utilities = -np.abs(np.arange(n + 1) - self.quantile * n)
        with np.errstate(divide="ignore"):
            log_lengths = np.log(lengths)
        index = self._selector.select(utilities, rng, log_base=log_lengths)
        return float(_noise.draw_uniform(points[index], points[index + 1], None, rng))
