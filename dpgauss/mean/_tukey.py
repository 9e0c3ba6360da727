"""Restricted Tukey mechanism: BGSUZ 2021 Algorithm 1 with axis-aligned depth.

Brown, Gaboardi, Smith, Ullman and Zakynthinou (NeurIPS 2021), Algorithm 1:
a propose-test-release (PTR) check that the data are far from "unsafe", then
the exponential mechanism restricted to the points of depth at least t. The
depth is the axis-aligned approximation (directions ``+-e_j``, as in Amin,
Joseph, Ribero and Vassilvitskii 2023), so every level set is a box of order
statistics and the whole release costs O(d n log n).

Neighbours are replace-one with public n. ``cost = ApproxDP(E, D)`` is the
cost of the whole mechanism; internally ``eps = E / 2`` and
``delta = D exp(-E / 2)`` (so the total ``(2 eps, e^eps delta)`` is exactly
``(E, D)``).

**Depth and level sets.** For ``y`` in R^d the score is
``q(x; y) = min_j min(#{i : x_ij <= y_j}, #{i : x_ij >= y_j})``. Replacing one
row changes each of the 2d counts by at most 1, so q (a minimum of functions
that move by at most 1) has sensitivity 1 for every y. The level set
``D_s = {y : q(x; y) >= s}`` is the box ``prod_j [x_(s)j, x_(n-s+1)j]`` of
exact order statistics (``np.sort``), nonempty for ``s <= s_max = (n+1)//2``,
with ``D_0 = R^d``. For neighbours ``x, x'``: ``D_s(x') subset D_{s-1}(x)`` and
``D_s(x') superset D_{s+1}(x)``, because each order statistic moves by at most
one rank.

**The test.** With ``delta* = delta / (4 e^eps)`` (Lemma 3.8 certifies safety
at ``4 e^eps delta*``, so this certifies ``(eps, delta, t)``-safety), ``k`` is
*feasible* when some integer ``g >= 1`` has::

    Vol(D_{t-k-1}) / Vol(D_{t+k+g+1}) * exp(-eps g / 2) <= delta*     (*)

(levels inside ``[1, s_max]``). ``h_lb = 1 + max feasible k`` (0 if none).

1. ``h_lb >= 1`` implies safety: Lemma 3.8 (score-agnostic: it uses only the
   sensitivity of q and the inclusions above) says every unsafe dataset is at
   Hamming distance ``> k >= 0`` from x, so x itself is safe.
2. ``h_lb`` has sensitivity 1: if ``(k, g)`` is feasible for x then
   ``(k - 1, g)`` is feasible for any neighbour x', since
   ``Vol(D_{t-k}(x')) <= Vol(D_{t-k-1}(x))`` and
   ``Vol(D_{t+k+g}(x')) >= Vol(D_{t+k+g+1}(x))``; so
   ``h_lb(x') >= h_lb(x) - 1`` and, by symmetry, ``|h_lb(x) - h_lb(x')| <= 1``.
   The same argument shows feasibility is monotone in k (binary search).
3. The volumes are evaluated in floating point, but as *bounds that are
   monotone functions of the box edges by construction*: a width is
   ``fl(hi - lo)`` (monotone; relative error at most 2^-53; the rows are first
   clipped to ``[-2^1020, 2^1020]``, a per-row map, so no width overflows); its
   log2 is bounded below and above by ``e + T(m)`` with ``(m, e) = frexp(w)``
   exact and T an increasing table of log2 over 2^16 buckets of ``[1/2, 1)``
   clamped to ``[-1, 0]`` (so ``e + T`` is monotone across exponents too); sums
   are float sums in a fixed order (monotone in each term). The tested
   inequality ``fl(U_{t-k-1} - L_{t+k+g+1}) <= r_g`` has a data-independent
   right side ``r_g``: ``log2 delta* + eps g / (2 ln 2)`` minus a margin
   ``2^-30 (d^2 + 1 + |log2 delta*| + eps g)`` that exceeds every rounding
   error (each below ``d^2 2^-42`` in these magnitudes). So the computed
   feasibility implies (*) exactly (point 1), and the monotonicity argument of
   point 2 holds for the computed values themselves: the computed ``h_lb`` is
   exactly sensitivity 1.

The PTR adds exact discrete Laplace noise to the integer ``h_lb``
(:class:`~dpgauss.mechanisms.LaplaceMechanism`, sensitivity 1, ``eps``-DP on
its lattice ``g Z``, discrete scale ``t_L``) and passes when the release is at
least ``m g``, ``m`` the least integer with
``P[Z >= m] = e^{-m/t_L} / (1 + e^{-1/t_L}) <= delta`` (computed with two
lattice units of slack): the lattice analogue of the paper's threshold
``log(1 / (2 delta)) / eps``. An unsafe x has ``h_lb = 0`` and so passes with
probability at most delta.

**The sampler.** The restricted EM has density proportional to
``exp(eps q(x; y) / 2)`` on ``D_t``. As ``e^{eps D/2} = e^{eps t/2} +
sum_{j=t+1}^{D} (e^{eps j/2} - e^{eps (j-1)/2})``, it is the mixture over
levels ``j`` of the uniform distributions on ``D_j`` with weights
``w_t = V_t e^{eps t/2}`` and ``w_j = V_j e^{eps j/2} (1 - e^{-eps/2})`` for
``j > t`` (no such factor at level t: Brown-Zakynthinou's code puts it on every
level, which breaks the pointwise ratio). Levels of zero volume have weight 0.
For a safe x, the EM is ``(eps, delta)``-indistinguishable on neighbours
(score sensitivity 1: ``e^{eps/2}`` from the density, ``e^{eps/2}`` from the
normaliser; Lemma 3.7).

**Composition.** Prop. D.1: if ``h_lb(x) >= 1``, x is safe, and for any event
S, ``P[M(x) in S] <= e^eps P[pass x'] (e^eps P[EM(x') in S] + delta) +
e^eps P[fail x'] 1[FAIL in S] <= e^{2 eps} P[M(x') in S] + e^eps delta``; if
``h_lb(x) = 0``, ``P[M(x) in S] <= delta + e^eps P[M(x') in S]``. So the
mechanism is ``(2 eps, e^eps delta)`` = ``(E, D)``-DP.

**Floating point (Mironov 2012).** The released point is exactly the correctly
rounded float64 image (coordinate-wise, round to nearest) of an *ideal* sample
of the continuous restricted EM on the (float) box edges: post-processing, so
no low-order bit carries extra information.

* The level is drawn by exact rejection sampling. A float approximation
  ``l_j`` of ``log w_j`` gives integer proposal weights
  ``m_j = floor(2^32 exp(l_j - max l)) + 1`` (an exactly sampled discrete
  distribution); the proposed j is accepted with probability
  ``a_j = w_j 2^32 / (2 e^{max l} m_j)``. This is at most 1 whenever
  ``|l_j - log w_j| < log 2 - 2^-30`` (the actual float error is below 1e-10),
  and the accepted level then has probability exactly ``w_j / sum w``: the
  float errors change only the running time. The coin with probability
  ``a_j`` (an irrational number) is flipped exactly: ``a_j`` is evaluated in
  :mod:`decimal` (correctly rounded ``ln``, ``exp`` and arithmetic) with a
  rigorous error interval and compared with a uniform number whose bits are
  drawn lazily; when the interval and the uniform's bits do not separate, both
  are refined.
* The point in the box ``[lo, hi]`` (per coordinate) is
  ``round(lo + (hi - lo) U)`` with U uniform, computed in exact integer
  arithmetic (floats are dyadic): with K random bits ``N`` the ideal point lies
  in an interval of width ``(hi - lo) 2^-K``; if both ends round (Python's
  correctly rounded ``int / int``) to one float, that float is the exact
  rounding of the ideal point, otherwise K grows.

**Ties.** Before anything else, each entry gets independent jitter from rng,
``x_ij + u_ij 2^-40 max(|x_ij|, 2^-960)`` with ``u_ij ~ U(0, 1)``: a map
applied to each row with its own randomness. For neighbours x, x' and any
fixed jitter J, ``x + J`` and ``x' + J`` are again neighbours, so the
mechanism's guarantee holds conditionally on J and hence on average. It
breaks ties (duplicated rows, constant columns) so that the boxes have positive
width; boxes of zero width are still handled (zero volume: the test fails or
the level has weight zero), never a division by zero.
"""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpgauss.accounting import ApproxDP
from dpgauss.exceptions import PrivateTestFailedError
from dpgauss.mechanisms._additive import LaplaceMechanism
from dpgauss.utils._random import check_generator

__all__ = ["RestrictedTukeyMechanism"]

#: Rows are clipped here (a per-row map): widths stay below 2^1021, finite.
_CLIP = 2.0**1020
#: Relative jitter, and its floor near zero (2^-1000: a normal float).
_JITTER = 2.0**-40
_JITTER_FLOOR = 2.0**-960
#: Proposal weights: floor(2^_PROPOSAL_BITS * ratio) + 1.
_PROPOSAL_BITS = 32
_FAILED = (
    "the private safety check did not pass, so nothing was released; the privacy "
    "budget ({cost}) is spent all the same. More rows, or a larger epsilon or "
    "delta, make it pass more often."
)


def _log2_tables(bits=16):
    """Increasing lower/upper bounds of log2 over 2^bits buckets of [1/2, 1)."""
    edges = 0.5 + np.arange(2**bits + 1) / 2.0 ** (bits + 1)  # exact dyadics
    logs = np.log2(edges)
    lower = np.clip(logs[:-1] - 2.0**-40, -1.0, 0.0)
    upper = np.clip(logs[1:] + 2.0**-40, -1.0, 0.0)
    lower[0] = -1.0  # log2(1/2) exactly
    upper[-1] = 0.0  # log2(1) exactly
    if not (np.all(np.diff(lower) > 0) and np.all(np.diff(upper) > 0)):
        raise RuntimeError("log2 bound tables are not increasing.")  # pragma: no cover
    return lower, upper, bits


_LOWER, _UPPER, _TABLE_BITS = _log2_tables()


def _log2_bounds(widths):
    """Monotone lower and upper bounds on log2 of non-negative finite widths."""
    mant, expo = np.frexp(widths)  # widths = mant 2^expo, mant in [1/2, 1)
    zero = widths == 0
    index = np.floor((mant - 0.5) * 2.0 ** (_TABLE_BITS + 1)).astype(np.int64)
    index = np.clip(index, 0, 2**_TABLE_BITS - 1)
    expo = expo.astype(np.float64)
    lower = np.where(zero, -np.inf, expo + _LOWER[index])
    upper = np.where(zero, -np.inf, expo + _UPPER[index])
    return lower, upper


def _random_int(bits, rng):
    """A uniform integer in [0, 2^bits) (bits a multiple of 8)."""
    return int.from_bytes(rng.bytes(bits // 8), "little")


def _round_uniform(lo, hi, rng):
    """The float nearest to lo + (hi - lo) U, U ~ U(0, 1), exactly (lo < hi)."""
    p_lo, q_lo = float(lo).as_integer_ratio()
    p_hi, q_hi = float(hi).as_integer_ratio()
    scale = 2**1074  # every float is an integer multiple of 2^-1074
    a = p_lo * (scale // q_lo)
    span = p_hi * (scale // q_hi) - a
    bits, draw = 128, _random_int(128, rng)
    while True:
        den = scale << bits
        left = ((a << bits) + span * draw) / den  # correctly rounded
        right = ((a << bits) + span * (draw + 1)) / den
        if left == right:
            return left
        draw = (draw << 64) | _random_int(64, rng)
        bits += 64


def _bernoulli_log(terms, extra_error, rng):
    """An exact coin with probability ``exp(sum(terms))`` (at most 1).

    ``terms(prec)`` returns Decimal terms computed at precision ``prec``, each
    with a few correctly rounded operations; ``extra_error(prec)`` any further
    absolute error. The sum's error bound is rigorous (see the module notes); the
    coin compares the resulting interval for the probability with a lazily
    drawn uniform number.
    """
    prec, bits = 40, 192
    draw = _random_int(bits, rng)
    while True:
        with localcontext() as ctx:
            ctx.prec = prec
            unit = Decimal(10) ** (1 - prec)
            parts = terms(prec)
            x = sum(parts, Decimal(0))
            size = sum((abs(p) for p in parts), Decimal(0)) + abs(x) + 1
            err = (len(parts) + 8) * size * unit + extra_error(prec)
            low = (x - 2 * err).exp() * (1 - 4 * unit)
            high = (x + 2 * err).exp() * (1 + 4 * unit)
        if Fraction(low) > 1:
            raise RuntimeError(  # pragma: no cover - excluded by the float analysis
                "acceptance probability above 1: float error beyond its bound."
            )
        u_low = Fraction(draw, 2**bits)
        u_high = Fraction(draw + 1, 2**bits)
        if u_high <= Fraction(low):
            return True
        if u_low >= Fraction(high):
            return False
        prec += 40
        draw = (draw << 128) | _random_int(128, rng)
        bits += 128


class RestrictedTukeyMechanism:
    """BGSUZ 2021 Alg. 1 with axis-aligned Tukey depth.

    A propose-test-release check (exact discrete Laplace noise on a
    sensitivity-1 lower bound ``h_lb`` of the Hamming distance to unsafety,
    Lemma 3.8 with ``delta / (4 e^eps)``), then the restricted exponential
    mechanism over depth boxes, with the correct nested-set level weights. The
    privacy and floating-point arguments are in the module docstring.

    Parameters
    ----------
    cost : ApproxDP
        ``(epsilon_total, delta_total)`` of the whole mechanism, ``delta > 0``.
        Internally ``eps = epsilon_total / 2`` for each of the test and the
        exponential mechanism and ``delta = delta_total exp(-epsilon_total / 2)``.
    n_features : int
        d, the number of columns.
    depth : float, default=0.25
        The minimum depth as a fraction of n, in (0, 0.5): ``t = ceil(depth n)``.

    Attributes
    ----------
    cost : ApproxDP
        The cost of one release (as given).
    n_features : int
        d.
    depth : float
        The minimum depth fraction.
    epsilon, delta : float
        The internal eps and delta of BGSUZ Alg. 1.
    test : LaplaceMechanism
        The PTR's noise (sensitivity 1, ``eps``-DP, exact lattice).
    draws : int
        Number of releases that read data (passed or failed).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.accounting import ApproxDP
    >>> from dpgauss.mean._tukey import RestrictedTukeyMechanism
    >>> X = np.random.default_rng(0).normal(3.0, 1.0, size=(2000, 2))
    >>> mech = RestrictedTukeyMechanism(ApproxDP(1.0, 1e-6), n_features=2)
    >>> y = mech.release(X, np.random.default_rng(1))
    >>> y.shape, bool(np.abs(y - 3.0).max() < 0.3), mech.draws
    ((2,), True, 1)
    """

    def __init__(self, cost, n_features, *, depth=0.25):
        if not isinstance(cost, ApproxDP):
            raise TypeError(
                f"RestrictedTukeyMechanism takes an ApproxDP cost, got {cost!r}."
            )
        if not cost.delta > 0.0 or not cost.epsilon > 0.0:
            raise ValueError(
                "RestrictedTukeyMechanism needs epsilon > 0 and delta > 0 (its "
                f"test is propose-test-release), got {cost!r}."
            )
        if isinstance(n_features, (bool, np.bool_)) or not isinstance(
            n_features, (int, np.integer)
        ):
            raise TypeError(f"n_features must be an int, got {n_features!r}.")
        if n_features < 1:
            raise ValueError(f"n_features must be at least 1, got {n_features!r}.")
        if isinstance(depth, (bool, np.bool_)) or not isinstance(
            depth, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"depth must be a float, got {depth!r}.")
        if not 0.0 < float(depth) < 0.5:
            raise ValueError(f"depth must be in (0, 0.5), got {depth!r}.")
        self.cost = cost
        self.n_features = int(n_features)
        self.depth = float(depth)
        self.epsilon = cost.epsilon / 2.0
        # delta_total e^(-eps_total / 2), rounded down: exp and the product
        # err by at most about 1.5 ulp, so 3 steps down keep e^eps delta <=
        # delta_total exactly.
        delta = cost.delta * math.exp(-cost.epsilon / 2.0)
        for _ in range(3):
            delta = math.nextafter(delta, 0.0)
        self.delta = delta
        if not self.delta < 0.5:
            raise ValueError(
                f"delta_total * exp(-epsilon_total / 2) must be below 1/2, got "
                f"{self.delta!r}."
            )
        self.test = LaplaceMechanism(sensitivity=1.0, epsilon=self.epsilon)
        self._pass_units = self._threshold_units()
        # log2(delta*), delta* = delta / (4 e^eps).
        self._log2_delta_star = (
            math.log2(self.delta) - self.epsilon / math.log(2.0) - 2.0
        )
        self.draws = 0

    def _threshold_units(self):
        """The least integer m with P[Z >= m] <= delta, plus 2 units of slack."""
        t = self.test.lattice_scale(1)
        tail = math.log1p(math.exp(-1.0 / t))
        return math.ceil(t * (-math.log(self.delta) - tail)) + 2

    @property
    def threshold(self):
        """The test's threshold on the noisy ``h_lb`` (about ``log(1/2 delta)/eps``).

        Returns
        -------
        float
            ``m g``: the test passes when the noisy ``h_lb`` is at least this.
        """
        return self._pass_units * self.test.grid

    # -- data -------------------------------------------------------------------
    def _prepare(self, X, rng):
        """Validated, clipped, jittered, column-sorted data."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features or X.shape[0] < 1:
            raise ValueError(
                f"expected an array of shape (n, {self.n_features}) with n >= 1, "
                f"got {X.shape}."
            )
        # Entry by entry (a fixed map of each row, so neighbours stay
        # neighbours): NaN -> 0, +-inf -> +-2^1020. Raising here instead would
        # reveal one non-finite row after the charge (scikit-learn's
        # assume_finite lets such rows through validation).
        X = np.nan_to_num(X, nan=0.0, posinf=_CLIP, neginf=-_CLIP)
        X = np.clip(X, -_CLIP, _CLIP)
        jitter = rng.random(X.shape)
        X = X + jitter * (_JITTER * np.maximum(np.abs(X), _JITTER_FLOOR))
        return np.sort(X, axis=0)

    @staticmethod
    def _widths(S):
        """Widths of the boxes D_1 .. D_smax, shape (smax, d)."""
        n = S.shape[0]
        s_max = (n + 1) // 2
        lo = S[:s_max]
        hi = S[::-1][:s_max]  # level s: rows s - 1 and n - s
        return lo, hi, hi - lo

    def _margin(self, g):
        d = self.n_features
        return 2.0**-30 * (d * d + 1.0 + abs(self._log2_delta_star) + self.epsilon * g)

    def _h_lb(self, lower, upper, t):
        """``1 + max feasible k`` (0 if none), from log2 bounds per level."""
        s_max = lower.size
        # r_g for g = 1 .. s_max (data-independent).
        g_all = np.arange(1, s_max + 1, dtype=np.float64)
        rate = self.epsilon / (2.0 * math.log(2.0))
        r = self._log2_delta_star + rate * g_all - self._margin(g_all)

        def feasible(k):
            first = t + k + 2  # level t + k + g + 1 at g = 1
            if t - k - 1 < 1 or first > s_max:
                return False
            num = upper[t - k - 2]  # level t - k - 1
            den = lower[first - 1 :]  # levels t + k + 2 .. s_max
            with np.errstate(invalid="ignore"):
                return bool(np.any(num - den <= r[: den.size]))

        lo_k, hi_k = -1, t - 2  # feasible(lo_k) by convention; search (lo_k, hi_k]
        if hi_k < 0 or not feasible(0):
            return 0
        lo_k = 0
        while lo_k < hi_k:
            mid = (lo_k + hi_k + 1) // 2
            if feasible(mid):
                lo_k = mid
            else:
                hi_k = mid - 1
        return lo_k + 1

    def _check(self, X, rng):
        """The data's boxes and the PTR's outcome (counts a draw)."""
        S = self._prepare(X, rng)
        self.draws += 1
        n = S.shape[0]
        t = math.ceil(self.depth * n)
        lo, hi, widths = self._widths(S)
        lower, upper = _log2_bounds(widths)
        h_lb = self._h_lb(lower.sum(axis=1), upper.sum(axis=1), t)
        noisy = float(self.test.randomise(np.array([float(h_lb)]), rng)[0])
        return lo, hi, widths, t, bool(noisy >= self.threshold)

    def release(self, X, rng):
        """Run the test and, if it passes, release a point of depth >= t.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Finite rows (n public).
        rng : None, int or numpy.random.Generator
            Source of randomness.

        Returns
        -------
        ndarray of shape (n_features,)
            The released point (float64).

        Raises
        ------
        PrivateTestFailedError
            When the noisy test fails (the budget is spent all the same).
        """
        rng = check_generator(rng)
        lo, hi, widths, t, passed = self._check(X, rng)
        if not passed:
            raise PrivateTestFailedError(_FAILED.format(cost=self.cost))
        level = self._level(widths, t, rng)
        return np.array(
            [
                _round_uniform(lo[level - 1, j], hi[level - 1, j], rng)
                for j in range(self.n_features)
            ],
            dtype=np.float64,
        )

    def _level(self, widths, t, rng):
        """An exact draw of the level j >= t with probability proportional to w_j."""
        eps = self.epsilon
        with np.errstate(divide="ignore"):
            log_vol = np.log(widths[t - 1 :]).sum(axis=1)  # levels t .. smax
        positive = np.isfinite(log_vol)
        top = int(np.count_nonzero(positive))  # nested: a prefix is positive
        if top == 0:
            # Only when the test passed with h_lb = 0 (h_lb >= 1 implies V_t > 0),
            # an event of probability at most delta that the analysis already
            # charges: any output is allowed there.
            raise PrivateTestFailedError(_FAILED.format(cost=self.cost))
        log_vol = log_vol[:top]
        levels = np.arange(t, t + top)
        log_f = math.log(-math.expm1(-eps / 2.0))
        approx = log_vol + eps * levels / 2.0 + np.where(levels > t, log_f, 0.0)
        best = float(approx.max())
        weights = np.floor(2.0**_PROPOSAL_BITS * np.exp(approx - best)).astype(
            np.int64
        ) + np.int64(1)
        cumulative = np.cumsum(weights)
        total = int(cumulative[-1])
        d_eps = Decimal(eps)
        while True:
            index = int(np.searchsorted(cumulative, rng.integers(0, total), "right"))
            j = t + index
            row = widths[j - 1]
            m_j = int(weights[index])

            def terms(prec, row=row, j=j, m_j=m_j):
                parts = [Decimal(float(w)).ln() for w in row]
                parts.append(d_eps * j / 2)
                if j > t:
                    parts.append((1 - (-d_eps / 2).exp()).ln())
                parts.append(Decimal(2).ln() * (_PROPOSAL_BITS - 1))
                parts.append(-Decimal(best))
                parts.append(-Decimal(m_j).ln())
                return parts

            def extra(prec, j=j):
                if j == t:
                    return Decimal(0)
                f = 1 - (-d_eps / 2).exp()
                return 8 * Decimal(10) ** (1 - prec) / f

            if _bernoulli_log(terms, extra, rng):
                return j

    def __repr__(self):
        return (
            f"RestrictedTukeyMechanism(cost={self.cost}, "
            f"n_features={self.n_features}, depth={self.depth})"
        )
