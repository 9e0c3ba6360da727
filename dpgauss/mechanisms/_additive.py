"""Additive noise mechanisms: Gaussian (zCDP) and Laplace (pure DP), exact on a lattice.

Each mechanism is built from the sensitivity of the statistic it releases (a
promise by the caller, stated next to every call site in dpgauss) and a privacy
cost. ``scale`` is the ideal noise scale:

* Gaussian, l2 sensitivity D, rho-zCDP: sigma = D / sqrt(2 rho)
  (Bun and Steinke 2016, Proposition 1.6).
* Laplace, l1 sensitivity D, epsilon-DP: b = D / epsilon (Dwork et al. 2006).

By default (``exact=True``) the release is exact and float-safe (see
:mod:`dpgauss.mechanisms._noise`): the value is rounded to a lattice ``g Z^k`` (g
a power of two far below the scale), integer noise is drawn exactly (discrete
Gaussian or discrete Laplace, Canonne, Kamath and Steinke 2020) and calibrated
to the sensitivity *plus* the rounding, and ``g * (R + Z)`` is returned. The
lattice noise is a little larger than the ideal one; ``effective_scale(k)`` gives
its exact parameter and each class states the bound. ``exact=False`` adds numpy's
float noise of the ideal scale instead: **not float-safe** (Mironov 2012), kept
for benchmarks and as the audits' canary.

The symmetric-matrix variants are in :mod:`dpgauss.mechanisms._symmetric`.
"""

import math

import numpy as np

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise
from dpgauss.utils._random import check_generator

__all__ = ["GaussianMechanism", "LaplaceMechanism"]

#: Gaussian lattices: sigma / g in [2**24, 2**25). Laplace: b / g in [2**40, 2**41).
GAUSSIAN_GRID_BITS = 24
LAPLACE_GRID_BITS = 40


def _as_float_array(value):
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("the value to privatise contains NaN or infinity.")
    return array


def _check_exact(exact):
    if not isinstance(exact, (bool, np.bool_)):
        raise TypeError(f"exact must be a bool, got {exact!r}.")
    return bool(exact)


class _Additive:
    """Shared state: sensitivity, cost, ideal scale, lattice grid, draw counter."""

    _grid_bits = GAUSSIAN_GRID_BITS

    def __init__(self, sensitivity, cost, scale, exact):
        self.sensitivity = sensitivity
        self.cost = cost
        self.scale = scale
        self.exact = _check_exact(exact)
        self.grid = (
            _noise.power_of_two_grid(scale, self._grid_bits) if self.exact else None
        )
        self.draws = 0

    #: Variance of one noise entry over the square of the noise parameter, and
    #: standard deviation over the parameter: 1 and 1 for the Gaussian, 2 and
    #: sqrt(2) for the Laplace distribution.
    _variance_factor = 1.0
    _sd_factor = 1.0

    def _parameter(self, size):
        """The noise parameter: ``scale`` (size None) or ``effective_scale(size)``."""
        return self.scale if size is None else self.effective_scale(size)

    def variance(self, size=None, per=1.0):
        """Variance of one noise entry (public: a function of the calibration only).

        Parameters
        ----------
        size : int or None, default=None
            None: the ideal noise (``scale``); an int: the exact sampler's
            actual lattice parameter for a release of ``size`` entries (the
            matrix dimension for the symmetric mechanisms), see
            ``effective_scale``. For the symmetric mechanisms this is a
            diagonal entry's variance (see :meth:`entry_variances`).
        per : float, default=1.0
            Divide the noise by ``per`` first (the noise of a sum, per row).

        Returns
        -------
        float
            ``(parameter / per)**2`` times 1 (Gaussian) or 2 (Laplace).
        """
        scale = self._parameter(size) / per
        return scale * scale * self._variance_factor

    def sd(self, size=None):
        """Standard deviation of one (diagonal) noise entry; see :meth:`variance`.

        Parameters
        ----------
        size : int or None, default=None
            As for :meth:`variance`.

        Returns
        -------
        float
            The parameter times 1 (Gaussian) or sqrt(2) (Laplace).
        """
        return self._parameter(size) * self._sd_factor

    def tail(self, beta):
        """A one-sided tail bound of one ideal noise draw: exceeded with
        probability at most ``beta`` (public: the calibration only).

        Parameters
        ----------
        beta : float
            The failure probability, in (0, 1/2).

        Returns
        -------
        float
            Gaussian: ``scale sqrt(2 log(1/beta))``; Laplace:
            ``scale log(1/(2 beta))``.
        """
        return self.scale * self._tail_factor(beta)

    @staticmethod
    def _tail_factor(beta):
        return math.sqrt(2.0 * math.log(1.0 / beta))

    def _start(self, random_state):
        rng = check_generator(random_state)
        self.draws += 1
        return rng

    def __repr__(self):
        exact = "" if self.exact else ", exact=False"
        return (
            f"{type(self).__name__}(sensitivity={self.sensitivity!r}, "
            f"{self.cost}{exact})"
        )


class GaussianMechanism(_Additive):
    """The Gaussian mechanism for a scalar or vector with known l2 sensitivity.

    Parameters
    ----------
    sensitivity : float
        D: the l2 sensitivity, the largest l2 distance between the statistic on
        two neighbouring datasets (replace-one, n public).
    rho : float
        The zCDP cost.
    exact : bool, default=True
        Exact lattice noise (float-safe). ``False``: numpy's float normal noise of
        sd ``scale``, which is **not float-safe** (benchmarks and audit canaries).

    Attributes
    ----------
    scale : float
        The ideal noise standard deviation ``sigma = D / sqrt(2 rho)``.
    sensitivity : float
        D.
    cost : ZCDP
        The privacy cost of one release.
    exact : bool
        Whether releases are exact lattice releases.
    grid : float or None
        The lattice step g (None when ``exact=False``).
    draws : int
        Number of releases drawn so far (one per :meth:`randomise`).

    Notes
    -----
    Exact release of a value with k entries: g is the largest power of two with
    ``sigma / g >= 2**24``; ``R = rint(value / g)`` has l2 sensitivity at most
    ``D/g + sqrt(k)`` in grid units (each coordinate moves by at most 1/2 on each
    dataset); ``Z`` is discrete Gaussian N_Z(0, S) per coordinate with
    ``S = t u >= ((D/g + sqrt(k)) / sqrt(2 rho))**2`` (checked exactly). An integer
    shift Delta of N_Z(0, S) has Renyi divergence at most ``alpha Delta^2 / (2S)``
    (Canonne, Kamath and Steinke 2020, Theorem 4), independent coordinates add,
    so the release is ``(D/g + sqrt(k))^2 / (2S) <= rho``-zCDP. The output
    ``g * (R + Z)`` is a function of the integer vector ``R + Z`` (see
    :mod:`dpgauss.mechanisms._noise`). Its noise has parameter
    ``effective_scale(k) = g sqrt(S)``, at most
    ``scale * (1 + 2**-24 (sqrt(k / (2 rho)) + 1.5))`` (and the discrete
    Gaussian's sd is below its parameter).

    Examples
    --------
    >>> from dpgauss.mechanisms import GaussianMechanism
    >>> mech = GaussianMechanism(sensitivity=1.0, rho=0.5)
    >>> mech.scale, mech.cost
    (1.0, ZCDP(rho=0.5))
    >>> mech.randomise([0.0, 10.0], random_state=0).round(3)
    array([0.112, 8.048])
    >>> mech.draws
    1
    """

    def __init__(self, *, sensitivity, rho, exact=True):
        sensitivity = _check_positive_finite("sensitivity", sensitivity)
        cost = ZCDP(_check_positive_finite("rho", rho))
        super().__init__(
            sensitivity, cost, sensitivity / math.sqrt(2.0 * cost.rho), exact
        )

    def lattice_variance(self, size):
        """The discrete Gaussian variance ``S = t u`` for a release of ``size`` entries.

        Parameters
        ----------
        size : int
            The number k of entries released together.

        Returns
        -------
        tuple of int
            The pair ``(t, u)``, in grid units.
        """
        return _noise.gaussian_lattice_variance(
            self.sensitivity, self.grid, int(size), self.cost.rho
        )

    def effective_scale(self, size=1):
        """The noise parameter actually used: ``g sqrt(S)`` (``scale`` if not exact).

        Parameters
        ----------
        size : int, default=1
            The number k of entries released together.

        Returns
        -------
        float
            The discrete Gaussian's sigma in the units of the statistic.
        """
        if not self.exact:
            return self.scale
        t, u = self.lattice_variance(size)
        return self.grid * math.sqrt(t * u)

    def randomise(self, value, random_state=None):
        """Return ``value`` plus Gaussian noise.

        Parameters
        ----------
        value : float or array-like
            The exact statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray
            The noisy statistic.
        """
        value = _as_float_array(value)
        rng = self._start(random_state)
        if not self.exact:
            return value + _noise.draw_gaussian(self.scale, value.shape, rng)
        t, u = self.lattice_variance(value.size)
        noise = _noise.lattice_gaussian(t, u, value.shape, rng)
        return _noise.from_lattice(
            _noise.to_lattice(value, self.grid), noise, self.grid
        )

    def randomise_lattice(self, coords, random_state=None):
        """Release a statistic given exactly in lattice units.

        For statistics computed in exact (integer or rational) arithmetic: the
        caller passes ``R = rint(statistic / grid)`` computed exactly, as Python
        ints, and the promise of :meth:`randomise` applies unchanged (``R`` moves
        by at most ``D/g + sqrt(k)`` in l2 between neighbours). The output
        ``g * (R + Z)`` is formed from the exact integer ``R + Z`` (clipped to
        :data:`~dpgauss.mechanisms._noise.LATTICE_BOUND`, which is 1-Lipschitz),
        so it is a function of ``R + Z`` alone whatever the size of ``R``.

        Parameters
        ----------
        coords : sequence of int
            The exact lattice coordinates R.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (len(coords),)
            The noisy statistic.

        Examples
        --------
        >>> from dpgauss.mechanisms import GaussianMechanism
        >>> mech = GaussianMechanism(sensitivity=1.0, rho=0.5)
        >>> out = mech.randomise_lattice([0, 2**200], random_state=0)
        >>> out.shape
        (2,)
        """
        bound = int(_noise.LATTICE_BOUND)
        coords = [min(max(int(c), -bound), bound) for c in coords]
        if not self.exact:
            raise ValueError("randomise_lattice needs an exact mechanism.")
        rng = self._start(random_state)
        t, u = self.lattice_variance(len(coords))
        noise = _noise.lattice_gaussian(t, u, len(coords), rng)
        return np.array(
            [float(c + int(z)) * self.grid for c, z in zip(coords, noise, strict=True)]
        )


class LaplaceMechanism(_Additive):
    """The Laplace mechanism for a scalar or vector with known l1 sensitivity.

    Parameters
    ----------
    sensitivity : float
        D: the l1 sensitivity under replace-one neighbours.
    epsilon : float
        The pure DP cost.
    exact : bool, default=True
        Exact lattice noise (float-safe). ``False``: numpy's float Laplace noise
        of scale ``scale``, **not float-safe** (benchmarks and audit canaries).

    Attributes
    ----------
    scale : float
        The ideal Laplace scale ``b = D / epsilon``.
    sensitivity : float
        D.
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
    Exact release of k entries: g is the largest power of two with
    ``b / g >= 2**40`` (so ``b / g`` is in ``[2**40, 2**41)``); ``R = rint(value /
    g)`` has l1 sensitivity at most ``D/g + k`` in grid units; ``Z`` is discrete
    Laplace with integer scale ``t = ceil((D/g + k) / epsilon)`` per coordinate.
    Moving an integer center by ``delta`` changes ``P(Z = z)`` by at most
    ``exp(|delta| / t)`` per coordinate, so the release is
    ``(D/g + k) / t <= epsilon``-DP; the output ``g * (R + Z)`` is a function of
    ``R + Z``. ``effective_scale(k) = g t <= scale * (1 + 2**-40 (k/epsilon + 1))``.

    Examples
    --------
    >>> from dpgauss.mechanisms import LaplaceMechanism
    >>> mech = LaplaceMechanism(sensitivity=2.0, epsilon=1.0)
    >>> mech.scale, mech.cost
    (2.0, PureDP(epsilon=1.0))
    >>> mech.randomise([0.0, 10.0], random_state=0).round(3)
    array([ 0.737, 12.339])
    """

    _grid_bits = LAPLACE_GRID_BITS

    _variance_factor = 2.0
    _sd_factor = math.sqrt(2.0)

    @staticmethod
    def _tail_factor(beta):
        return math.log(1.0 / (2.0 * beta))

    def __init__(self, *, sensitivity, epsilon, exact=True):
        sensitivity = _check_positive_finite("sensitivity", sensitivity)
        cost = PureDP(_check_positive_finite("epsilon", epsilon))
        super().__init__(sensitivity, cost, sensitivity / cost.epsilon, exact)

    def lattice_scale(self, size):
        """The integer discrete Laplace scale t for a release of ``size`` entries.

        Parameters
        ----------
        size : int
            The number k of entries released together.

        Returns
        -------
        int
            The scale t, in grid units.
        """
        return _noise.laplace_lattice_scale(
            self.sensitivity, self.grid, int(size), self.cost.epsilon
        )

    def effective_scale(self, size=1):
        """The Laplace scale actually used: ``g t`` (``scale`` if not exact).

        Parameters
        ----------
        size : int, default=1
            The number k of entries released together.

        Returns
        -------
        float
            The discrete Laplace scale in the units of the statistic.
        """
        return self.grid * self.lattice_scale(size) if self.exact else self.scale

    def randomise(self, value, random_state=None):
        """Return ``value`` plus Laplace noise.

        Parameters
        ----------
        value : float or array-like
            The exact statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray
            The noisy statistic.
        """
        value = _as_float_array(value)
        rng = self._start(random_state)
        if not self.exact:
            return value + _noise.draw_laplace(self.scale, value.shape, rng)
        noise = _noise.lattice_laplace(self.lattice_scale(value.size), value.shape, rng)
        return _noise.from_lattice(
            _noise.to_lattice(value, self.grid), noise, self.grid
        )
