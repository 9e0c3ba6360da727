"""The one place where dpgauss draws privacy noise: exact lattice noise and floats.

**Exact (default).** A statistic is released on a lattice ``g Z^k`` (g a power of
two): ``R = rint(value / g)`` (an exact division), plus integer noise drawn
exactly by :mod:`dpgauss.mechanisms._discrete`, and the output is
``g * (R + Z)`` in float64. ``R`` and ``Z`` are integer-valued floats, so their
float sum is the correctly rounded integer ``R + Z`` and the output is a fixed
function of that integer alone: post-processing of an exactly private integer
release. No output float depends on the center in any other way, which defeats
the floating-point attack of Mironov (2012). The rounding moves each coordinate
by at most 1/2 grid unit, so it adds at most 1 per coordinate to the sensitivity
in grid units (``sqrt(k)`` in l2, ``k`` in l1); the calibrations below include it.

**Floating point** (``exact=False`` on a mechanism): numpy's samplers
(``Generator.normal``, ``laplace``, ``gumbel``). They are **not float-safe**: the
set of output floats they can reach depends on the center, and an attacker who
sees the bits can tell neighbours apart far beyond the claimed epsilon (measured
in ``tests/audit/test_float_attack_audit.py``). Kept for benchmarks and as the
audits' canary.
"""

import functools
import math
from fractions import Fraction

import numpy as np

from dpgauss.mechanisms._discrete import (
    MAX_LAPLACE_SCALE,
    discrete_gaussian,
    discrete_laplace,
    discrete_linf,
)
from dpgauss.utils._random import check_generator

__all__ = [
    "LATTICE_BOUND",
    "draw_gaussian",
    "draw_gumbel",
    "draw_laplace",
    "draw_linf",
    "draw_symmetric",
    "draw_uniform",
    "dyadic_below",
    "from_lattice",
    "gaussian_lattice_variance",
    "halve_variance",
    "laplace_lattice_scale",
    "lattice_gaussian",
    "lattice_laplace",
    "lattice_linf",
    "power_of_two_grid",
    "to_lattice",
]

#: Lattice coordinates are clipped to [-LATTICE_BOUND, LATTICE_BOUND] before
#: rounding: clipping is 1-Lipschitz (it never increases a sensitivity) and keeps
#: ``R + Z`` finite; it only touches values beyond ``2**1020`` grid units.
LATTICE_BOUND = 2.0**1020


# -- lattice calibration ---------------------------------------------------------
def power_of_two_grid(x, bits):
    """The largest power of two g with ``x / g >= 2**bits``.

    ``x = m 2^E`` with ``m`` in [1/2, 1) (``math.frexp``), so ``g = 2^(E-1-bits)``
    and ``x / g = m 2^(bits+1)`` lies in ``[2**bits, 2**(bits+1))``.

    Parameters
    ----------
    x : float
        A positive finite number.
    bits : int
        The number of binary digits of x above the grid.

    Returns
    -------
    float
        The grid g (a normal float64 power of two).

    Examples
    --------
    >>> from dpgauss.mechanisms._noise import power_of_two_grid
    >>> power_of_two_grid(3.0, 24) == 2.0**-23
    True
    """
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"the grid needs a positive finite scale, got {x!r}.")
    exponent = math.frexp(x)[1] - 1 - bits
    if exponent < -1022:
        raise ValueError(f"the scale {x!r} is too small for a float64 lattice.")
    return math.ldexp(1.0, exponent)


def _covers(two_rho, a, extra_sq, variance):
    """Exactly whether ``two_rho * variance >= (a + sqrt(extra_sq))**2``.

    With ``L = two_rho S - a^2 - K`` the condition ``two_rho S >= a^2 + 2 a sqrt(K)
    + K`` reads ``L >= 2 a sqrt(K)``, i.e. ``L >= 0`` and ``L^2 >= 4 a^2 K``:
    rational arithmetic only.
    """
    slack = two_rho * variance - a * a - extra_sq
    return slack >= 0 and slack * slack >= 4 * a * a * extra_sq


@functools.lru_cache(maxsize=256)
def gaussian_lattice_variance(sensitivity, grid, extra_sq, rho):
    """The discrete Gaussian variance ``S = t u`` for a lattice release (exact).

    The smallest ``S = t u`` (``t`` the power of two nearest ``sqrt(S)``, ``u``
    even) with ``S >= ((D/g + sqrt(K)) / sqrt(2 rho))**2``, checked in rational
    arithmetic. Then the integer release has l2 (or Frobenius) sensitivity
    ``Delta <= D/g + sqrt(K)`` and the discrete Gaussian gives
    ``rho' = Delta^2 / (2 S) <= rho`` (Canonne, Kamath and Steinke 2020, Thm. 4;
    independent coordinates add). ``u`` even lets ``S/2 = t (u/2) = (t/2) u`` also
    take the t u form (the symmetric release's off-diagonal variance).

    Parameters
    ----------
    sensitivity : float
        D, in the units of the statistic.
    grid : float
        g, a power of two.
    extra_sq : int
        K: the square of the sensitivity added by rounding, in grid units
        (k for a vector of k entries; d**2 for a d x d symmetric matrix).
    rho : float
        The zCDP cost.

    Returns
    -------
    tuple of int
        ``(t, u)``.

    Examples
    --------
    >>> from dpgauss.mechanisms._noise import gaussian_lattice_variance
    >>> gaussian_lattice_variance(1.0, 1.0, 0, 0.5)  # S >= 1: t = 1, u = 2
    (1, 2)
    """
    two_rho, a = 2 * Fraction(rho), Fraction(sensitivity) / Fraction(grid)
    guess = (float(a) + math.sqrt(extra_sq)) ** 2 / (2.0 * rho)
    if not guess < 2.0**61:
        raise ValueError(
            f"the lattice variance {guess:.3g} (grid units) exceeds 2**61: rho is "
            "too small for this many entries."
        )
    t = 2 ** max(0, math.floor(math.log2(math.sqrt(guess)) + 0.5))
    u = max(2, 2 * (math.floor(guess / t) // 2) - 2)
    while not _covers(two_rho, a, extra_sq, t * u):
        u += 2
    if t * u > 2**61:
        raise ValueError("the lattice variance exceeds 2**61.")
    return t, u


def halve_variance(t, u):
    """``(t', u')`` with ``t' u' = t u / 2`` and ``t'`` the power of two nearest.

    ``u`` must be even (see :func:`gaussian_lattice_variance`): ``(t/2) u`` or
    ``t (u/2)``, whichever keeps ``t'`` within a factor ``sqrt(2)`` of
    ``sqrt(t u / 2)`` (the proposal of :func:`~._discrete.discrete_gaussian` then
    accepts at least 65% of the time).

    Parameters
    ----------
    t, u : int
        A variance ``t u`` with ``u`` even.

    Returns
    -------
    tuple of int
        ``(t', u')``.

    Examples
    --------
    >>> from dpgauss.mechanisms._noise import halve_variance
    >>> halve_variance(4, 6), halve_variance(4, 2)
    ((4, 3), (2, 2))
    """
    if u % 2:
        raise ValueError(f"u must be even, got {u}.")
    if t > 1 and t * t > t * u:
        return t // 2, u
    return t, u // 2


@functools.lru_cache(maxsize=256)
def laplace_lattice_scale(sensitivity, grid, extra, epsilon):
    """The discrete Laplace scale ``t = ceil((D/g + k) / epsilon)`` (exact).

    The integer release has l1 sensitivity ``Delta <= D/g + k`` (rounding adds at
    most 1 per coordinate); discrete Laplace noise of scale t gives privacy loss
    at most ``Delta / t <= epsilon``. Computed in rational arithmetic.

    Parameters
    ----------
    sensitivity : float
        D, in the units of the statistic.
    grid : float
        g, a power of two.
    extra : int
        k, the number of rounded coordinates.
    epsilon : float
        The pure DP cost.

    Returns
    -------
    int
        t.

    Examples
    --------
    >>> from dpgauss.mechanisms._noise import laplace_lattice_scale
    >>> laplace_lattice_scale(1.0, 0.25, 2, 0.5)  # (4 + 2) / 0.5
    12
    """
    delta = Fraction(sensitivity) / Fraction(grid) + extra
    t = math.ceil(delta / Fraction(epsilon))
    if t > MAX_LAPLACE_SCALE:
        raise ValueError(
            f"the discrete Laplace scale {t:.3g} exceeds 2**52: epsilon is too "
            "small for this many entries."
        )
    return t


def dyadic_below(x):
    """The largest ``c / 2^q <= x`` with ``c < 2**31`` and ``q <= 62`` (exact).

    Parameters
    ----------
    x : Fraction
        A positive rational below ``2**30``.

    Returns
    -------
    tuple of int
        ``(c, q)``, c >= 1, with 31 significant bits when ``q < 62``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from dpgauss.mechanisms._noise import dyadic_below
    >>> dyadic_below(Fraction(1, 3))
    (1431655765, 32)
    """
    x = Fraction(x)
    if not 0 < x < 2**30:
        raise ValueError(f"expected 0 < x < 2**30, got {float(x)!r}.")
    q = 30 - math.floor(math.log2(x))  # about 31 bits; fixed up below
    q = min(q, 62)
    c = math.floor(x * 2**q)
    while c >= 2**31:
        q -= 1
        c = math.floor(x * 2**q)
    while c < 2**30 and q < 62:
        q += 1
        c = math.floor(x * 2**q)
    if c == 0:
        raise ValueError(f"{float(x)!r} is below 2**-62.")
    return c, q


# -- lattice rounding and output --------------------------------------------------
def to_lattice(value, grid):
    """``rint(clip(value / g))``: integer-valued float64 lattice coordinates.

    ``value / g`` is exact for a power of two g (unless it overflows, which the
    clip to ``LATTICE_BOUND`` then maps to the same place as the exact value; an
    underflowed quotient is below 1/2 in magnitude and rounds to 0 either way).

    Parameters
    ----------
    value : ndarray
        Finite values.
    grid : float
        g, a power of two.

    Returns
    -------
    ndarray
        Integer-valued floats, at most 1/2 from ``value / g`` (inside the clip).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._noise import to_lattice
    >>> to_lattice(np.array([0.3, 0.9, -1.7]), 0.5)
    array([ 1.,  2., -3.])
    """
    with np.errstate(over="ignore", under="ignore"):
        scaled = np.asarray(value, dtype=np.float64) / grid
    return np.rint(np.clip(scaled, -LATTICE_BOUND, LATTICE_BOUND))


def from_lattice(coords, noise, grid):
    """``g * (R + Z)`` as float64: a function of the integer ``R + Z`` alone.

    ``R`` (integer-valued float64) and ``Z`` (int64, converted exactly when
    ``|Z| <= 2**53``) are added in float64, which gives the correctly rounded
    integer ``R + Z``; multiplying by the power of two g is exact (or a fixed
    rounding on overflow or underflow). If some ``|Z| > 2**53`` (a probability
    below ``exp(-2**40)`` at the mechanisms' scales) the sum is formed in Python
    integers and rounded once, the same function of ``R + Z``.

    Parameters
    ----------
    coords : ndarray
        R, integer-valued float64.
    noise : ndarray of int64
        Z, same shape.
    grid : float
        g.

    Returns
    -------
    ndarray
        The released values.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._noise import from_lattice
    >>> from_lattice(np.array([1.0, -3.0]), np.array([2, 1]), 0.5)
    array([ 1.5, -1. ])
    """
    noise = np.asarray(noise, dtype=np.int64)
    if noise.size and int(np.abs(noise).max()) > 2**53:
        total = np.array(
            [
                float(int(r) + int(z))
                for r, z in zip(coords.ravel(), noise.ravel(), strict=True)
            ]
        ).reshape(coords.shape)
    else:
        total = coords + noise.astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        return total * grid


def lattice_gaussian(t, u, size, rng):
    """Integer N_Z(0, t u) noise (see :func:`~._discrete.discrete_gaussian`)."""
    return discrete_gaussian(t, u, size, rng)


def lattice_laplace(t, size, rng):
    """Integer discrete Laplace noise of scale t."""
    return discrete_laplace(t, size, rng)


def lattice_linf(t, d, rng):
    """Integer noise with ``P(z) ∝ exp(-||z||_inf / t)`` on Z^d (one draw)."""
    return discrete_linf(t, d, rng)


# -- floating point (exact=False: not float-safe) ---------------------------------
def draw_gaussian(scale, size, random_state):
    """Draw N(0, scale^2) float noise of shape ``size`` (not float-safe)."""
    return check_generator(random_state).normal(0.0, scale, size=size)


def draw_laplace(scale, size, random_state):
    """Draw Laplace(0, scale) float noise (not float-safe)."""
    return check_generator(random_state).laplace(0.0, scale, size=size)


def draw_linf(scale, d, random_state):
    """Draw float noise with density ``∝ exp(-||x||_inf / scale)`` on R^d (not
    float-safe): a radius ``R ~ Gamma(d + 1, scale)`` times a uniform point of
    the cube ``[-1, 1]^d`` (the density at x is ``∝ int_{R >= ||x||_inf} R^d
    e^{-R/scale} / R^d dR ∝ e^{-||x||_inf / scale}``)."""
    rng = check_generator(random_state)
    radius = rng.gamma(d + 1.0, scale)
    return radius * rng.uniform(-1.0, 1.0, size=d)


def draw_gumbel(size, random_state):
    """Draw standard Gumbel float noise (the float exponential mechanism)."""
    return check_generator(random_state).gumbel(0.0, 1.0, size=size)


def draw_uniform(low, high, size, random_state):
    """Draw uniform float noise on ``[low, high)``."""
    return check_generator(random_state).uniform(low, high, size=size)


def draw_symmetric(diagonal_scale, off_diagonal_scale, dim, kind, random_state):
    """Draw a symmetric ``dim x dim`` float noise matrix (not float-safe).

    Independent draws fill the upper triangle (diagonal included) and are mirrored
    to the lower triangle.

    Parameters
    ----------
    diagonal_scale, off_diagonal_scale : float
        Scale of the diagonal and of the off-diagonal entries.
    dim : int
        Matrix size.
    kind : {"gaussian", "laplace"}
        Noise family.
    random_state : None, int or Generator
        Source of randomness.

    Returns
    -------
    ndarray of shape (dim, dim)
        Symmetric noise.
    """
    rng = check_generator(random_state)
    draw = draw_gaussian if kind == "gaussian" else draw_laplace
    upper = np.triu(draw(1.0, (dim, dim), rng), k=1) * off_diagonal_scale
    noise = upper + upper.T
    noise[np.diag_indices(dim)] = draw(diagonal_scale, dim, rng)
    return noise
