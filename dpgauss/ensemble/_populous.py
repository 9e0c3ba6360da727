"""The populous mean of Ashtiani and Liaw (2022), Algorithm 1, made exact.

k candidates ``Y_1..Y_k`` (one per group of rows, so replacing one row changes
at most one candidate) are aggregated as follows, for a public radius tau:

1. ``c_i = |{j : ||Y_i - Y_j|| <= tau}|`` (j = i included), ``N = sum_i c_i``,
   ``Q = N / k^2``;
2. a truncated-Laplace test: pass with probability ``P[Q + Z >= T + A]``,
   ``Z ~ TLap(2/k, eps_t, delta_t)`` on ``[-A, A]``; a failed test is the output
   "failed" (an exception for the user), released like any other;
3. integer ramp weights ``m_i = min(max(c_i - A_w, 0), B_w)`` and the weighted
   mean ``mu = sum m_i Y_i / sum m_i``;
4. ``mu`` plus Gaussian noise calibrated to :func:`mask_sensitivity`.

**Privacy (replace-one, k and tau public).** Write ``a = A_w / k`` and
``L = k / B_w`` (ramp ``w = m / B_w = clip((q - a) L, 0, 1)``, ``q = c / k``).

* *Counts.* Replacing ``Y_1`` changes the pairs (1, j) and (j, 1) only: ``N``
  moves by at most ``2 (k - 1)``, so ``Q`` by less than ``2/k``, and every
  ``c_i``, i >= 2, by at most 1.
* *Test.* The truncated Laplace mechanism with half-width
  ``A = (2 / (k eps_t)) log(1 + (e^eps_t - 1) / (2 delta_t))`` is
  (eps_t, delta_t)-DP for a statistic of sensitivity 2/k (Geng, Ding, Guo and
  Kumar 2020; Ashtiani and Liaw 2022, Theorem 2.12). The pass probability is
  computed in closed form and the coin drawn against it; its absolute error
  (float evaluation and the 53-bit uniform) is below ``ETA = 2^-40``, which is
  paid for by calibrating at ``delta_t - (1 + e^eps_t) ETA`` (see
  :func:`pass_probability`). ``Q < T`` never passes (``Z <= A``).
* *Weights* (our tightening of the paper's Claims C.2-C.6, spec Section 12.1).
  ``w(q) >= (q - a) / (1 - a)`` on [0, 1], so ``Q >= T`` gives
  ``W = sum w_i >= W_min = k (T - a) / (1 - a)``. For i >= 2, ``|w_i - w'_i| <=
  1 / B_w``; ``|W - W'| <= 1 + (k - 1) / B_w``.
* *Anchor.* A candidate of positive weight (in either dataset) has more than
  ``A_w`` neighbours counting itself, so at least ``A_w`` among the unchanged
  indices {2..k}; two such sets of a (k - 1)-set meet when ``2 A_w > k - 1``
  (``a > 1/2``). Any two positively weighted candidates therefore share a
  neighbour and lie within ``2 tau``; take as anchor Z an unchanged candidate of
  positive weight (one exists: ``W_min > 1``). With ``a_i = w_i / W``,
  ``b_i = w'_i / W'``: ``mu - mu' = sum_{i>=2} (a_i - b_i)(Y_i - Z) + a_1 (Y_1 - Z)
  - b_1 (Y'_1 - Z)``, hence
  ``||mu - mu'|| <= 2 tau [ (2 (k - 1) / B_w + 1) / W + 1 / W + 1 / W' ]`` with
  ``W >= W_min`` and ``W' >= W_min - 1 - (k - 1) / B_w``.
* *Cases.* If ``Q, Q' < T`` both fits fail surely (same output). Otherwise one
  of them, say D, has ``Q >= T`` and the bound above holds: the test is
  (eps_t, delta_t)-indistinguishable and the mask rho-zCDP-indistinguishable on
  this pair, and the pair's outputs compose as the plan charges them (basic
  composition holds pair by pair). The neighbour radius found by sparse vector
  (``radius="auto"``) is an adaptive choice before all this, charged as its own
  pure-DP release.

**Floating point.** Candidates are first snapped to the grid ``h Z^p``
(``h`` a power of two, ``2^-30`` of tau): a deterministic map of each
candidate, part of the per-group estimator, so the proof applies to the
snapped candidates. Differences of snapped values are exact (multiples of h
with fewer than 53 bits, or certainly farther than tau); the neighbour relation
is the exact one, ``sum_l D_l^2 <= (tau/h)^2`` for integers D_l, decided in
float64 with a margin and in Python integers near the boundary. The weighted
mean is computed exactly in rationals and rounded once, exactly, to the
mechanism's lattice (:meth:`~dpgauss.mechanisms.GaussianMechanism.randomise_lattice`):
no float rounding of the mean enters the release.
"""

import math
from fractions import Fraction

import numpy as np

__all__ = [
    "ETA",
    "exact_lattice_mean",
    "exact_weighted_sums",
    "lattice_coords",
    "mask_sensitivity",
    "min_groups",
    "neighbour_counts",
    "pass_probability",
    "snap",
    "test_half_width",
    "weight_params",
    "weight_sum_bound",
]

#: Bound on the absolute error of a test's pass probability as drawn.
ETA = 2.0**-40
#: Candidates are snapped to a grid of ``2^-SNAP_BITS`` times the radius.
SNAP_BITS = 30
_BIG = 2.0**52


def snap_grid(tau):
    """The power of two h, about ``2^-30 tau``, and tau rounded down onto it.

    Returns ``(h, t)`` with ``t = floor(tau / h)`` (an integer, ``tau / h`` in
    ``[2^30, 2^31)``): the radius actually used is ``t h <= tau``.
    """
    _, exponent = math.frexp(float(tau))
    h = math.ldexp(1.0, exponent - 1 - SNAP_BITS)
    return h, math.floor(tau / h)


def snap(Y, h):
    """Each finite entry rounded to the nearest multiple of h (ties to even).

    Entries at least ``2^52 h`` in magnitude already are multiples of h.
    Non-finite rows are returned as NaN rows (failed candidates).
    """
    Y = np.array(Y, dtype=np.float64, copy=True)
    with np.errstate(all="ignore"):
        small = np.abs(Y) < _BIG * h
        Y[small] = np.rint(Y[small] / h) * h
        bad = ~np.all(np.isfinite(Y), axis=1)
    Y[bad] = np.nan
    return Y


def neighbour_counts(Y, h, t, block=None):
    """``c_i = |{j : ||Y_i - Y_j|| <= t h}|`` exactly, for snapped candidates.

    Failed candidates (NaN rows) are nobody's neighbour; each counts itself.

    Parameters
    ----------
    Y : ndarray of shape (k, p)
        Snapped candidates (multiples of h, or NaN rows).
    h : float
        The snapping grid (a power of two).
    t : int
        The radius in grid units.
    block : int, default=None
        Rows compared at once (memory ``block * k * p`` floats). None: from the
        public k and p, at most 2e6 floats per temporary.

    Returns
    -------
    ndarray of shape (k,) of int64
        The counts.
    """
    k = Y.shape[0]
    if block is None:
        block = max(1, min(64, 2_000_000 // max(1, k * Y.shape[1])))
    ok = np.all(np.isfinite(Y), axis=1)
    counts = np.ones(k, dtype=np.int64)  # every candidate counts itself
    good = np.flatnonzero(ok)
    Z = Y[good]
    limit = float(t) ** 2
    # Differences of multiples of h are exact when at most 2^31 h apart (then
    # representable); larger ones round to at least (t + 1) h, or overflow to
    # inf, and are far either way (finite inputs: no inf - inf). Dividing by
    # the power of two h is exact for the near ones. Each |D_l| <= t < 2^31
    # term is exact; squares and a sum of p terms carry a relative error below
    # (p + 1) u, so outside a band of 4 (p + 2) u around the limit the float
    # test decides exactly; inside it, Python integers do.
    margin = 4.0 * (Z.shape[1] + 2) * 2.0**-53
    lower, upper = limit * (1.0 - margin), limit * (1.0 + margin)
    exact_limit = int(t) ** 2
    with np.errstate(all="ignore"):
        for start in range(0, good.size, block):
            rows = Z[start : start + block]
            diff = (rows[:, None, :] - Z[None, :, :]) / h
            far = np.any(np.abs(diff) > t, axis=2)
            sq = np.einsum("ijl,ijl->ij", diff, diff)
            near = (sq <= lower) & ~far
            unsure = np.argwhere((sq > lower) & (sq < upper) & ~far)
            for i, j in unsure:
                D = [int(v) for v in diff[i, j]]
                near[i, j] = sum(v * v for v in D) <= exact_limit
            counts[good[start : start + block]] = near.sum(axis=1)
    return counts


def test_half_width(k, epsilon, delta):
    """A = (2 / (k eps)) log(1 + (e^eps - 1) / (2 delta)), the TLap half-width."""
    return (2.0 / (k * epsilon)) * math.log1p(math.expm1(epsilon) / (2.0 * delta))


def calibration_delta(epsilon, delta):
    """The delta the test is calibrated at, leaving room for ``ETA``."""
    return delta - (1.0 + math.exp(epsilon)) * ETA


def pass_probability(total, k, threshold, epsilon, delta):
    """P[Q + Z >= T + A] for ``Q = total / k^2``, Z ~ TLap(2/k, eps, delta).

    Exactly 0 when ``Q < T`` (decided in rationals). Otherwise, with
    ``lambda = 2 / (k eps)`` and ``x = T + A - Q``, ``P[Z >= x]`` is
    ``(e^{-x/lambda} - e^{-A/lambda}) / (2 (1 - e^{-A/lambda}))`` for x >= 0 and
    one minus the same at -x below. ``x / lambda = (T - Q) k eps / 2 + A/lambda``
    is formed from an exact rational and ``log1p``, each within ``1e-13`` for
    the exponents that occur (at most ``2 A / lambda``, below 100 for any
    delta_t above 1e-40); the probability's derivative in the exponent is at
    most 1, so its error is below ``ETA``.
    """
    T = Fraction(threshold)
    N = int(total)
    if Fraction(N, k * k) < T:
        return 0.0
    eps = float(epsilon)
    L0 = math.log1p(math.expm1(eps) / (2.0 * delta))  # A / lambda
    shift = float((T - Fraction(N, k * k)) * k * Fraction(eps) / 2)  # <= 0
    x = shift + L0  # x / lambda, in [-L0, L0] when the outcome is random
    tail = math.exp(-L0)
    denom = 2.0 * (-math.expm1(-L0))
    if x >= 0:
        p = (math.exp(-x) - tail) / denom
    else:
        p = 1.0 - (math.exp(x) - tail) / denom
    return min(max(p, 0.0), 1.0)


def weight_params(k, a, b):
    """The integer ramp (A_w, B_w) for the public (a, b)."""
    A_w = math.ceil(a * k)
    B_w = max(1, math.floor((b - a) * k))
    return A_w, B_w


def _weight_floor(k, threshold, A_w):
    a = A_w / k
    return k * (threshold - a) / (1.0 - a)


def min_groups(epsilon, delta, threshold, a, b):
    """The fewest groups at which a unanimous test passes surely and the
    sensitivity bound holds (``T + 2A <= 1``, ``2 A_w > k - 1``, ``W' > 0``)."""
    k = 10
    while k < 2**40:
        A = test_half_width(k, epsilon, delta)
        A_w, B_w = weight_params(k, a, b)
        W = _weight_floor(k, threshold, A_w)
        if (
            threshold + 2.0 * A <= 1.0
            and 2 * A_w > k - 1
            and W - 1.0 - (k - 1) / B_w > 1.0
        ):
            return k
        k = math.ceil(k * 1.05)
    raise ValueError("no number of groups makes the populous test pass.")


def weight_sum_bound(k, threshold, a, b):
    """``S_max = (2 (k - 1) / B_w + 2) / W_min + 1 / W'_min``, which bounds
    ``sum_{i>=2} |a_i - b_i| + a_1 + b_1`` (module docstring)."""
    A_w, B_w = weight_params(k, a, b)
    W = _weight_floor(k, threshold, A_w)
    moves = (k - 1) / B_w
    W_other = W - 1.0 - moves
    if not (2 * A_w > k - 1 and W_other > 0):
        raise ValueError(f"{k} groups are too few for the populous mean's bound.")
    return (2.0 * moves + 2.0) / W + 1.0 / W_other


def mask_sensitivity(k, tau, threshold, a, b):
    """The l2 bound on ``||mu - mu'||`` (module docstring), with a 1e-9 margin."""
    return 2.0 * tau * weight_sum_bound(k, threshold, a, b) * (1.0 + 1e-9)


def _round_ratio(num, den):
    """rint(num / den) for Python ints, den > 0, ties to even."""
    q, r = divmod(num, den)
    twice = 2 * r
    if twice > den or (twice == den and q % 2 == 1):
        q += 1
    return q


def exact_lattice_mean(Y, weights, grid):
    """``rint(sum m_i Y_i / sum m_i / grid)`` per column, exactly (Python ints).

    Parameters
    ----------
    Y : ndarray of shape (k, p)
        Candidates (finite where the weight is positive).
    weights : ndarray of int
        The integer weights m_i (not all zero).
    grid : float
        The lattice step (a power of two).

    Returns
    -------
    list of int
        The lattice coordinates.
    """
    M = int(np.sum(weights[weights > 0]))
    return lattice_coords(exact_weighted_sums(Y, weights), M * Fraction(grid))


def exact_weighted_sums(Y, weights):
    """``sum_i m_i Y[i, col]`` per column, exactly (Fractions; m_i > 0 only)."""
    idx = np.flatnonzero(weights > 0)
    return [
        sum((int(weights[i]) * Fraction(float(Y[i, col])) for i in idx), Fraction(0))
        for col in range(Y.shape[1])
    ]


def lattice_coords(sums, unit):
    """``rint(s / unit)`` for exact rationals s and unit > 0 (ties to even)."""
    out = []
    for total in sums:
        ratio = total / unit
        out.append(_round_ratio(ratio.numerator, ratio.denominator))
    return out
