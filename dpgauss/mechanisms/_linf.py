"""The K-norm mechanism of the cube: pure DP for vectors with l-infinity sensitivity.

A vector whose entries each move by at most D between neighbouring data sets (a
mean of rows in a box: every coordinate moves by its window's width over n) has
l1 sensitivity ``k D`` for k entries, and the Laplace mechanism pays that sum on
every coordinate: per-entry variance ``2 (k D / epsilon)^2``. The K-norm
mechanism of Hardt and Talwar (2010) for the cube adds noise with density
``∝ exp(-epsilon ||z||_inf / D)``: it is epsilon-DP because ``||.||_inf`` obeys
the triangle inequality, and its per-entry variance is ``(k + 1)(k + 2) / 3
(D / epsilon)^2``. Its l2 error over the Laplace mechanism's is ``sqrt((k + 1)(k
+ 2) / (6 k^2))``: 1 at k = 1, 0.71 at k = 2, 0.48 at k = 8, tending to 0.41.

Exact release (default): g is the largest power of two with ``b / g >= 2**40``
(``b = D / epsilon``); ``R = rint(value / g)`` moves by at most ``D / g + 1`` in
every coordinate between neighbours (each coordinate's rounding adds at most 1,
and the l-infinity norm takes the largest); Z is drawn exactly from ``P(z) ∝
exp(-||z||_inf / t)`` on Z^k with the integer ``t = ceil((D / g + 1) / epsilon)``
(:func:`~dpgauss.mechanisms._discrete.discrete_linf`). For every output y,
``P(R + Z = y) / P(R' + Z = y) = exp((||y - R'||_inf - ||y - R||_inf) / t) <=
exp(||R - R'||_inf / t) <= exp(epsilon)``. The output ``g (R + Z)`` is a function
of the integer ``R + Z`` (see :mod:`dpgauss.mechanisms._noise`).
"""

import math

import numpy as np
from scipy.special import gammainccinv

from dpgauss.accounting import PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise
from dpgauss.mechanisms._additive import LAPLACE_GRID_BITS, _Additive, _as_float_array

__all__ = ["LInfinityMechanism", "linf_over_laplace"]


def linf_over_laplace(k):
    """The l2 error of the cube's K-norm mechanism over the Laplace mechanism's,
    for k entries of equal l-infinity sensitivity (public: k alone).

    Examples
    --------
    >>> from dpgauss.mechanisms._linf import linf_over_laplace
    >>> round(linf_over_laplace(1), 3), round(linf_over_laplace(8), 3)
    (1.0, 0.484)
    """
    return math.sqrt((k + 1) * (k + 2) / (6.0 * k * k))


class LInfinityMechanism(_Additive):
    """The K-norm mechanism of the cube for a vector with l-infinity sensitivity D.

    Parameters
    ----------
    sensitivity : float
        D: the largest change of any one entry under replace-one neighbours.
    epsilon : float
        The pure DP cost.
    size : int
        k, the number of entries released (the noise's law depends on it).
    exact : bool, default=True
        Exact lattice noise (float-safe). ``False``: float noise of density
        ``∝ exp(-||x||_inf / scale)`` from numpy's samplers, **not float-safe**
        (benchmarks and audit canaries).

    Attributes
    ----------
    scale : float
        ``b = D / epsilon``; the noise's density is ``∝ exp(-||x||_inf / b)``.
    sensitivity : float
        D.
    size : int
        k.
    cost : PureDP
        The privacy cost of one release.
    exact : bool
        Whether releases are exact lattice releases.
    grid : float or None
        The lattice step g (None when ``exact=False``).
    draws : int
        Number of releases drawn so far.

    Notes
    -----
    Privacy: see the module docstring (epsilon-DP for a statistic whose entries
    each move by at most D; the rounding to the lattice is included). Each
    entry's noise variance is ``(k + 1)(k + 2) / 3`` times the squared scale
    (the ``k + 1``-th and ``k + 2``-th moments of the radius, a Gamma(k + 1, b)
    variable, over the uniform point's 1/3); the exact sampler's is that of
    ``g t``, within a relative ``2**-38 (k + 1)`` of it.

    Examples
    --------
    >>> from dpgauss.mechanisms._linf import LInfinityMechanism
    >>> mech = LInfinityMechanism(sensitivity=0.01, epsilon=1.0, size=8)
    >>> mech.cost, round(mech.sd(8) / 0.01, 2)  # sqrt(9 * 10 / 3) = 5.48
    (PureDP(epsilon=1.0), 5.48)
    >>> mech.randomise([0.5] * 8, random_state=0).shape
    (8,)
    """

    _grid_bits = LAPLACE_GRID_BITS

    def __init__(self, *, sensitivity, epsilon, size, exact=True):
        sensitivity = _check_positive_finite("sensitivity", sensitivity)
        cost = PureDP(_check_positive_finite("epsilon", epsilon))
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"size must be an integer, got {size!r}.")
        if not 1 <= int(size) <= 2**20:
            raise ValueError(f"size must be in [1, 2**20], got {size!r}.")
        super().__init__(sensitivity, cost, sensitivity / cost.epsilon, exact)
        self.size = int(size)
        self._variance_factor = (self.size + 1) * (self.size + 2) / 3.0
        self._sd_factor = math.sqrt(self._variance_factor)

    def _check_size(self, size):
        if int(size) != self.size:
            raise ValueError(
                f"this mechanism releases {self.size} entries, not {int(size)}."
            )

    def lattice_scale(self, size):
        """The integer scale ``t = ceil((D/g + 1) / epsilon)`` (grid units).

        Parameters
        ----------
        size : int
            The number of entries; must be the mechanism's ``size``.

        Returns
        -------
        int
            t.
        """
        self._check_size(size)
        return _noise.laplace_lattice_scale(
            self.sensitivity, self.grid, 1, self.cost.epsilon
        )

    def effective_scale(self, size=None):
        """The scale actually used: ``g t`` (``scale`` if not exact).

        Parameters
        ----------
        size : int or None, default=None
            The number of entries (None: the mechanism's ``size``).

        Returns
        -------
        float
            The noise scale in the units of the statistic.
        """
        size = self.size if size is None else size
        return self.grid * self.lattice_scale(size) if self.exact else self.scale

    def tail(self, beta):
        """A bound on one entry's noise exceeded with probability at most ``beta``:
        the ``1 - beta`` quantile of the radius ``Gamma(k + 1, scale)``, which
        bounds every entry.

        Parameters
        ----------
        beta : float
            The failure probability, in (0, 1/2).

        Returns
        -------
        float
            The bound.
        """
        return self.scale * float(gammainccinv(self.size + 1.0, beta))

    def randomise(self, value, random_state=None):
        """Return ``value`` plus l-infinity K-norm noise.

        Parameters
        ----------
        value : array-like of ``size`` entries
            The exact statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray
            The noisy statistic, of the shape of ``value``.
        """
        value = _as_float_array(value)
        self._check_size(value.size)
        rng = self._start(random_state)
        if not self.exact:
            return value + _noise.draw_linf(self.scale, self.size, rng).reshape(
                value.shape
            )
        noise = _noise.lattice_linf(self.lattice_scale(self.size), self.size, rng)
        return _noise.from_lattice(
            _noise.to_lattice(value, self.grid), noise.reshape(value.shape), self.grid
        )

    def __repr__(self):
        exact = "" if self.exact else ", exact=False"
        return (
            f"LInfinityMechanism(sensitivity={self.sensitivity!r}, "
            f"{self.cost}, size={self.size}{exact})"
        )
