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

The symmetric-matrix variants release a symmetric matrix statistic from its upper
triangle (diagonal included) and mirror the result.
"""

import functools
import math

import numpy as np

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise
from dpgauss.utils._random import check_generator

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "SymmetricGaussianMechanism",
    "SymmetricLaplaceMechanism",
]

#: Gaussian lattices: sigma / g in [2**24, 2**25). Laplace: b / g in [2**40, 2**41).
GAUSSIAN_GRID_BITS = 24
LAPLACE_GRID_BITS = 40


def _as_float_array(value):
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("the value to privatise contains NaN or infinity.")
    return array


def _as_symmetric(value):
    array = _as_float_array(value)
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {array.shape}.")
    # np.allclose(array, array.T, rtol=1e-10, atol=0), without its overhead; no
    # floating-point warning may depend on the values (np.seterr(under="raise")
    # would otherwise raise on tiny entries: a data-dependent exception).
    with np.errstate(all="ignore"):
        symmetric = np.all(np.abs(array - array.T) <= 1e-10 * np.abs(array.T))
    if not symmetric:
        raise ValueError("expected a symmetric matrix.")
    return array


def _check_exact(exact):
    if not isinstance(exact, (bool, np.bool_)):
        raise TypeError(f"exact must be a bool, got {exact!r}.")
    return bool(exact)


@functools.lru_cache(maxsize=64)
def _upper_indices(dim):
    """``np.triu_indices(dim, k=1)``, cached (read-only arrays)."""
    rows, cols = np.triu_indices(dim, k=1)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def _mirror(diagonal, upper, dim):
    """The symmetric matrix with this diagonal and (row-major) strict upper part."""
    rows, cols = _upper_indices(dim)
    out = np.empty((dim, dim))
    out[rows, cols] = upper
    out[cols, rows] = upper
    out[np.diag_indices(dim)] = diagonal
    return out


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
    Moving an integer centre by ``delta`` changes ``P(Z = z)`` by at most
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


class SymmetricGaussianMechanism(GaussianMechanism):
    """The Gaussian mechanism for a symmetric matrix with known Frobenius sensitivity.

    Parameters
    ----------
    sensitivity : float
        The Frobenius-norm sensitivity D of the symmetric statistic under
        replace-one neighbours (for the second moment of rows clipped to l2 norm
        B, ``D = sqrt(2) B^2 / n``). The upper triangle (diagonal included) is
        what is read: D must bound the Frobenius distance of the symmetric
        matrices it defines.
    rho : float
        The zCDP cost.
    exact : bool, default=True
        Exact lattice noise (float-safe). ``False``: float normal noise, **not
        float-safe**.

    Attributes
    ----------
    scale : float
        sigma = D / sqrt(2 rho), the ideal noise sd on the diagonal; off-diagonal
        entries get ``scale / sqrt(2)``.
    sensitivity : float
        D.
    cost : ZCDP
        The privacy cost of one release.
    exact : bool
        Whether releases are exact lattice releases.
    grid : float or None
        The lattice step g (``sigma / g`` in ``[2**24, 2**25)``).
    draws : int
        Number of releases drawn so far.

    Notes
    -----
    Privacy proof. The map T sending a symmetric matrix A to the vector of its
    diagonal entries and of ``sqrt(2)`` times its strictly-upper entries is linear
    and preserves norms: ``||T(A)||_2 = ||A||_F``. So T(statistic) has l2
    sensitivity D, and adding N(0, sigma^2 I) to it with sigma = D / sqrt(2 rho) is
    rho-zCDP. Inverting T (post-processing, free) gives noise N(0, sigma^2) on each
    diagonal entry and N(0, sigma^2 / 2) on each upper entry, mirrored. Compared
    with the usual N(0, sigma^2) on every upper entry (which is calibrated to the
    same D, as the upper-triangle l2 norm is at most the Frobenius norm), the
    expected squared Frobenius error falls from ``d^2 sigma^2`` to
    ``d (d + 1) sigma^2 / 2`` at the same privacy.

    Exact release (the default): the upper triangle is rounded to the lattice
    ``g Z``. Each rounded entry moves by at most 1/2 grid unit on each dataset, so
    the difference ``Delta`` of the two integer matrices satisfies
    ``||Delta||_F <= D/g + ||E||_F`` with ``|E_ij| <= 1``: at most ``D/g + d``.
    The noise is N_Z(0, S) on the diagonal and N_Z(0, S/2) above it
    (``S = t u >= ((D/g + d) / sqrt(2 rho))**2``, u even so S/2 is an integer).
    For independent coordinates the Renyi divergences add (Canonne, Kamath and
    Steinke 2020, Theorem 4): ``alpha sum_i Delta_ii^2 / (2S) + alpha sum_{i<j}
    Delta_ij^2 / S = alpha ||Delta||_F^2 / (2S) <= alpha rho``. So it is
    rho-zCDP, and the mirrored output is a function of the integer release.
    ``effective_scale(d) = g sqrt(S) <= scale * (1 + 2**-24 (d / sqrt(2 rho) +
    1.5))`` on the diagonal, ``1/sqrt(2)`` of it off the diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import SymmetricGaussianMechanism
    >>> mech = SymmetricGaussianMechanism(sensitivity=np.sqrt(2) / 100, rho=1.0)
    >>> noisy = mech.randomise(np.eye(3), random_state=0)
    >>> bool(np.array_equal(noisy, noisy.T))
    True
    """

    def lattice_variance(self, size):
        """The diagonal variance ``S = t u`` for a ``size x size`` release.

        Parameters
        ----------
        size : int
            The matrix dimension d.

        Returns
        -------
        tuple of int
            The pair ``(t, u)``, in grid units; the off-diagonal variance is
            ``S / 2``.
        """
        size = int(size)
        return _noise.gaussian_lattice_variance(
            self.sensitivity, self.grid, size * size, self.cost.rho
        )

    def effective_scale(self, size=1):
        """The diagonal noise parameter actually used: ``g sqrt(S)``.

        Parameters
        ----------
        size : int, default=1
            The matrix dimension d.

        Returns
        -------
        float
            The diagonal discrete Gaussian's sigma (``scale`` if not exact).
        """
        return super().effective_scale(size)

    def randomise(self, value, random_state=None):
        """Return the symmetric ``value`` plus symmetric Gaussian noise.

        Parameters
        ----------
        value : array-like of shape (d, d)
            The exact symmetric statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (d, d)
            The noisy symmetric statistic (exactly symmetric).
        """
        value = _as_symmetric(value)
        rng = self._start(random_state)
        dim = value.shape[0]
        if not self.exact:
            noise = _noise.draw_symmetric(
                self.scale, self.scale / math.sqrt(2.0), dim, "gaussian", rng
            )
            return value + noise
        rows, cols = _upper_indices(dim)
        diagonal, upper = self._lattice_release(
            np.diagonal(value), value[rows, cols], dim, rng
        )
        return _mirror(diagonal, upper, dim)

    def _lattice_release(self, diagonal, upper, size, rng):
        """Diagonal and strictly-upper entries plus the exact lattice noise of
        a ``size x size`` release (S on the diagonal, S/2 above it)."""
        t, u = self.lattice_variance(size)
        t_off, u_off = _noise.halve_variance(t, u)
        g = self.grid
        diagonal = _noise.from_lattice(
            _noise.to_lattice(diagonal, g),
            _noise.lattice_gaussian(t, u, diagonal.size, rng),
            g,
        )
        upper = _noise.from_lattice(
            _noise.to_lattice(upper, g),
            _noise.lattice_gaussian(t_off, u_off, upper.size, rng),
            g,
        )
        return diagonal, upper

    def randomise_blocks(self, blocks, random_state=None):
        """The diagonal blocks of :meth:`randomise` on a block-diagonal matrix.

        For K symmetric d x d blocks, returns exactly the diagonal blocks of
        ``randomise(block_diag(*blocks))`` in distribution (one release, with
        the lattice calibrated for the full ``K d`` dimension), without
        forming the ``K d x K d`` matrix or drawing the noise of its zero
        off-diagonal blocks: the entries' noises are independent, so dropping
        those entries is post-processing of the full release.

        Parameters
        ----------
        blocks : array-like of shape (K, d, d)
            The exact symmetric blocks.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (K, d, d)
            The noisy blocks (each exactly symmetric).
        """
        blocks = [_as_symmetric(b) for b in np.asarray(blocks, dtype=np.float64)]
        rng = self._start(random_state)
        if not blocks:
            return np.zeros((0, 0, 0))
        dim = blocks[0].shape[0]
        full = len(blocks) * dim
        rows, cols = _upper_indices(dim)
        diag = np.concatenate([np.diagonal(b) for b in blocks])
        upper = np.concatenate([b[rows, cols] for b in blocks])
        if not self.exact:
            diag = diag + _noise.draw_gaussian(self.scale, diag.size, rng)
            off = self.scale / math.sqrt(2.0)
            upper = upper + _noise.draw_gaussian(off, upper.size, rng)
        else:
            diag, upper = self._lattice_release(diag, upper, full, rng)
        m = rows.size
        return np.array(
            [
                _mirror(diag[k * dim : (k + 1) * dim], upper[k * m : (k + 1) * m], dim)
                for k in range(len(blocks))
            ]
        )


class SymmetricLaplaceMechanism(LaplaceMechanism):
    """The Laplace mechanism for a symmetric matrix, noise on the upper triangle.

    Parameters
    ----------
    sensitivity : float
        The l1 sensitivity of the upper triangle (diagonal included) under
        replace-one neighbours.
    epsilon : float
        The pure DP cost; every upper entry gets Laplace noise of scale
        ``sensitivity / epsilon``, mirrored below the diagonal (post-processing).
    exact : bool, default=True
        Exact lattice noise (float-safe). ``False``: float Laplace noise, **not
        float-safe**.

    Attributes
    ----------
    scale : float
        The ideal Laplace scale.
    sensitivity : float
        D.
    cost : PureDP
        The privacy cost of one release.
    exact : bool
        Whether releases are exact lattice releases.
    grid : float or None
        The lattice step g.
    draws : int
        Number of releases drawn so far.

    Notes
    -----
    Exact release: the ``k = d (d + 1) / 2`` upper entries are released as by
    :class:`LaplaceMechanism` (rounding adds at most k to the l1 sensitivity;
    scale ``t = ceil((D/g + k) / epsilon)``) and mirrored.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import SymmetricLaplaceMechanism
    >>> mech = SymmetricLaplaceMechanism(sensitivity=0.04, epsilon=1.0)
    >>> mech.randomise(np.eye(2), random_state=0).shape
    (2, 2)
    """

    def lattice_scale(self, size):
        """The discrete Laplace scale t for a ``size x size`` release.

        Parameters
        ----------
        size : int
            The matrix dimension d.

        Returns
        -------
        int
            The scale t, in grid units.
        """
        size = int(size)
        return super().lattice_scale(size * (size + 1) // 2)

    def effective_scale(self, size=1):
        """The Laplace scale actually used: ``g t`` (``scale`` if not exact).

        Parameters
        ----------
        size : int, default=1
            The matrix dimension d.

        Returns
        -------
        float
            The discrete Laplace scale in the units of the statistic.
        """
        return super().effective_scale(size)

    def _lattice_release(self, upper, size, rng):
        """Upper-triangle entries (diagonal included) plus the exact lattice
        Laplace noise of a ``size x size`` release."""
        return _noise.from_lattice(
            _noise.to_lattice(upper, self.grid),
            _noise.lattice_laplace(self.lattice_scale(size), upper.size, rng),
            self.grid,
        )

    def randomise(self, value, random_state=None):
        """Return the symmetric ``value`` plus symmetric Laplace noise.

        Parameters
        ----------
        value : array-like of shape (d, d)
            The exact symmetric statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (d, d)
            The noisy symmetric statistic (exactly symmetric).
        """
        value = _as_symmetric(value)
        rng = self._start(random_state)
        dim = value.shape[0]
        if not self.exact:
            noise = _noise.draw_symmetric(self.scale, self.scale, dim, "laplace", rng)
            return value + noise
        rows, cols = np.triu_indices(dim)
        released = self._lattice_release(value[rows, cols], dim, rng)
        diagonal = released[rows == cols]
        return _mirror(diagonal, released[rows != cols], dim)

    def randomise_blocks(self, blocks, random_state=None):
        """The diagonal blocks of :meth:`randomise` on a block-diagonal matrix.

        As :meth:`SymmetricGaussianMechanism.randomise_blocks`: one release,
        the lattice scale that of the full ``K d`` dimension, only the blocks'
        upper entries drawn (the rest of the full release is independent noise
        on zeros, dropped: post-processing).

        Parameters
        ----------
        blocks : array-like of shape (K, d, d)
            The exact symmetric blocks.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (K, d, d)
            The noisy blocks (each exactly symmetric).
        """
        blocks = [_as_symmetric(b) for b in np.asarray(blocks, dtype=np.float64)]
        rng = self._start(random_state)
        if not blocks:
            return np.zeros((0, 0, 0))
        dim = blocks[0].shape[0]
        full = len(blocks) * dim
        rows, cols = np.triu_indices(dim)
        values = np.concatenate([b[rows, cols] for b in blocks])
        if not self.exact:
            released = values + _noise.draw_laplace(self.scale, values.size, rng)
        else:
            released = self._lattice_release(values, full, rng)
        m = rows.size
        on_diagonal = rows == cols
        return np.array(
            [
                _mirror(
                    released[k * m : (k + 1) * m][on_diagonal],
                    released[k * m : (k + 1) * m][~on_diagonal],
                    dim,
                )
                for k in range(len(blocks))
            ]
        )
