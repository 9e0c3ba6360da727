"""Additive noise for symmetric matrices, released from their upper triangle.

The Gaussian variant adds N(0, sigma^2) to the diagonal and N(0, sigma^2 / 2) to
the strict upper triangle of a statistic with known Frobenius sensitivity; the
Laplace variant adds Laplace noise to every upper entry of a statistic with known
l1 sensitivity of its upper triangle. Both mirror the result (post-processing)
and are exact on a lattice by default, as the vector mechanisms of
:mod:`dpgauss.mechanisms._additive` are; each class proves its guarantee in its
Notes.
"""

import functools
import math

import numpy as np

from dpgauss.mechanisms import _noise
from dpgauss.mechanisms._additive import (
    GaussianMechanism,
    LaplaceMechanism,
    _as_float_array,
)

__all__ = ["SymmetricGaussianMechanism", "SymmetricLaplaceMechanism"]


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

    def entry_variances(self, size=None):
        """Variances of one diagonal and one off-diagonal noise entry.

        Parameters
        ----------
        size : int or None, default=None
            None: the ideal noise; the matrix dimension d: the exact sampler's
            actual lattice parameter (see ``effective_scale``).

        Returns
        -------
        tuple of float
            ``(s**2, s**2 / 2)`` for the parameter s.
        """
        scale = self._parameter(size)
        return scale * scale, scale * scale / 2.0

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

    def entry_variances(self, size=None):
        """Variances of one diagonal and one off-diagonal noise entry.

        Parameters
        ----------
        size : int or None, default=None
            None: the ideal noise; the matrix dimension d: the exact sampler's
            actual lattice parameter (see ``effective_scale``).

        Returns
        -------
        tuple of float
            ``(2 b**2, 2 b**2)``: every upper entry gets its own Laplace noise.
        """
        scale = self._parameter(size)
        return 2.0 * scale * scale, 2.0 * scale * scale

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
