"""Selection mechanisms, exact: permute-and-flip and AboveThreshold (sparse vector).

Both are pure epsilon-DP; in a zCDP budget they count as ``epsilon**2 / 2``. By
default (``exact=True``) both run on integers: utilities and queries are mapped
to a fine power-of-two grid (integer values, integer sensitivity) and every coin
is an exact Bernoulli(exp(-rational)) or discrete Laplace draw
(:mod:`dpgauss.mechanisms._discrete`), so no output depends on floating-point
rounding of the noise. ``exact=False`` keeps numpy's float samplers (Gumbel-max,
float Laplace), which are **not float-safe** (benchmarks and audit canaries).
"""

import math
from fractions import Fraction

import numpy as np

from dpgauss.accounting import PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise
from dpgauss.mechanisms._additive import _check_exact
from dpgauss.mechanisms._discrete import (
    _bernoulli_exp_split,
    _scalar_bernoulli_exp,
    _Words,
)
from dpgauss.utils._random import check_generator

__all__ = ["AboveThreshold", "ExponentialMechanism"]

#: Queries and utilities are mapped to a grid g with ``D / g`` in [2**20, 2**21).
SELECTION_GRID_BITS = 20
#: Gaps between integer utilities are capped at 2**53 (see ``integer_gaps``).
_MAX_GAP = 2**53
#: AboveThreshold's integer queries (minus the integer threshold) are clipped here.
_MAX_QUERY = 2**50
#: Permute-and-flip flips this many coins one at a time before vectorising.
_SEQUENTIAL = 32


def integer_floor(values, grid):
    """``floor(clip(values / g))`` as exact integer-valued floats.

    ``values / g`` is exact for a power of two g, except on overflow (the clip to
    ``LATTICE_BOUND`` then agrees with the exact value) and on underflow, where
    the exact floor is 0 or -1 by sign and is set so. Floor is 1-Lipschitz up to
    an integer: ``|floor(x) - floor(y)| <= ceil(|x - y|)``.

    Parameters
    ----------
    values : ndarray
        Finite values.
    grid : float
        g, a power of two.

    Returns
    -------
    ndarray
        Integer-valued floats.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._selection import integer_floor
    >>> integer_floor(np.array([1.5, -0.25, -1e-320]), 0.5)
    array([ 3., -1., -1.])
    """
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        scaled = values / grid
    floor = np.floor(np.clip(scaled, -_noise.LATTICE_BOUND, _noise.LATTICE_BOUND))
    return np.where((values < 0) & (floor == 0), -1.0, floor)


def integer_gaps(utilities):
    """``min(max(U) - U, 2**53)`` for integer-valued float utilities, as int64.

    Exact: below 2**53 the float difference of two integers is exact, and above
    it the correctly rounded difference is still at least 2**53 (rounding is
    monotone). The cap is the utility transform ``U'_i = max(U_i, max(U) - L)``:
    each U' moves by at most the sensitivity of U between neighbours (max and
    shifts of Delta-sensitive quantities are Delta-sensitive), and
    ``max(U') - U'_i = min(max(U) - U_i, L)``. So selecting with the capped gaps is
    exactly the mechanism run on the utilities U', with the same guarantee.

    Parameters
    ----------
    utilities : ndarray
        Integer-valued floats of magnitude at most ``2**1020``.

    Returns
    -------
    ndarray of int64
        Gaps in ``[0, 2**53]``; 0 at the best candidates.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._selection import integer_gaps
    >>> integer_gaps(np.array([3.0, -2.0, 1e300]))
    array([9007199254740992, 9007199254740992,                0])
    """
    return np.minimum(utilities.max() - utilities, float(_MAX_GAP)).astype(np.int64)


def exponent_coefficient(epsilon, sensitivity):
    """The dyadic coefficient ``c / 2^q <= epsilon / (2 Delta)`` of permute-and-flip.

    Parameters
    ----------
    epsilon : float
        The pure DP cost.
    sensitivity : int
        Delta, the integer sensitivity of the integer utilities.

    Returns
    -------
    tuple of int
        ``(c, q)`` from :func:`~dpgauss.mechanisms._noise.dyadic_below`, the
        coefficient capped at ``2**29`` (a smaller coefficient is still
        epsilon-DP; at ``2**29`` per unit, a gap of 1 has weight ``exp(-2**29)``).

    Examples
    --------
    >>> from dpgauss.mechanisms._selection import exponent_coefficient
    >>> exponent_coefficient(1.0, 1)  # 1/2 = 2**30 / 2**31
    (1073741824, 31)
    """
    exact = Fraction(epsilon) / (2 * int(sensitivity))
    return _noise.dyadic_below(min(exact, Fraction(2**29)))


def _exponent_parts(gaps, c, q):
    """``c gaps / 2^q`` as ``(whole, rem, 2^q)``, exactly, in int64.

    For ``q >= 31`` split ``G = G_h 2^31 + G_l``: ``c G / 2^q = c G_h / 2^(q-31)
    + c G_l / 2^q`` with ``c G_h < 2^53``, ``c G_l < 2^62`` and the carried
    remainder below ``2^63``. For ``q < 31`` (coefficient ``c/2^q >= 1``) the gaps
    are capped at ``2**32`` (the transform of :func:`integer_gaps`, weight below
    ``exp(-2**32)``), so ``c G < 2^63``.
    """
    den = 2**q
    if q < 31:
        whole, rem = np.divmod(c * np.minimum(gaps, 2**32), den)
        return whole, rem, den
    high, low = gaps >> 31, gaps & (2**31 - 1)
    whole_high, carry = np.divmod(c * high, 2 ** (q - 31))
    whole_low, rem = np.divmod(carry * 2**31 + c * low, den)
    return whole_high + whole_low, rem, den


def permute_and_flip(gaps, c, q, rng):
    """Permute-and-flip (McKenna and Sheldon 2020) on integer gaps, exactly.

    Visit the candidates in a uniformly random order and return the first whose
    coin ``Bernoulli(exp(-c G_i / 2^q))`` comes up 1 (a best candidate, gap 0,
    always does). The first coins are flipped one by one (scalar sampler), then in
    vectorised chunks of growing size in the permuted order: independent coins,
    so the first success has the law of the sequential algorithm.

    Parameters
    ----------
    gaps : ndarray of int64
        ``max(U) - U_i >= 0`` (at least one 0).
    c, q : int
        The coefficient ``c / 2^q`` (see :func:`exponent_coefficient`).
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    int
        The selected index.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._selection import permute_and_flip
    >>> permute_and_flip(np.array([40, 0, 40]), 1, 0, np.random.default_rng(0))
    1
    """
    order = rng.permutation(gaps.size)
    whole, rem, den = _exponent_parts(gaps[order], c, q)
    words = _Words(rng)
    head = min(order.size, _SEQUENTIAL)
    for i, (w, r) in enumerate(
        zip(whole[:head].tolist(), rem[:head].tolist(), strict=True)
    ):
        if _scalar_bernoulli_exp(w, r, den, words):
            return int(order[i])
    start, chunk = head, max(16, 4 * _SEQUENTIAL)
    while start < order.size:
        stop = min(start + chunk, order.size)
        hit = np.flatnonzero(
            _bernoulli_exp_split(whole[start:stop], rem[start:stop], den, rng)
        )
        if hit.size:
            return int(order[start + hit[0]])
        start, chunk = stop, 2 * chunk
    raise AssertionError("permute-and-flip needs a candidate with gap 0.")


class ExponentialMechanism:
    """Select a candidate with high utility: permute-and-flip, exact.

    Parameters
    ----------
    sensitivity : float
        D: the largest change of any one candidate's utility between neighbouring
        datasets (replace-one).
    epsilon : float
        The pure DP cost.
    exact : bool, default=True
        Exact integer permute-and-flip. ``False``: the float exponential mechanism
        by Gumbel-max, ``P(i) ∝ exp(epsilon u_i / (2 D))``, **not float-safe**.

    Attributes
    ----------
    sensitivity : float
        D.
    cost : PureDP
        The privacy cost of one selection.
    exact : bool
        Whether selection is exact.
    grid : float or None
        The utility grid g, ``D / g`` in ``[2**20, 2**21)`` (None if not exact).
    integer_sensitivity : int or None
        ``ceil(D / g) + 1``, the sensitivity of the integer utilities.
    draws : int
        Number of selections drawn so far.

    Notes
    -----
    Exact selection. Integer utilities ``U_i = floor(u_i / g)`` change by at most
    ``ceil(D/g) <= Delta' = ceil(D/g) + 1`` between neighbours. Permute-and-flip
    (McKenna and Sheldon 2020, Theorem 1) with coin probabilities
    ``exp(-c (max U - U_i))``, ``c <= epsilon / (2 Delta')``, is ``2 c Delta' <=
    epsilon``-DP, and it is never less accurate than the exponential mechanism
    with the same exponent. ``c`` is a dyadic rational just below
    ``epsilon / (2 Delta')`` (31 significant bits while ``c >= 2**-31``) and each
    coin is an exact Bernoulli(exp(-rational)). Gaps beyond 2**53 grid units are
    capped (:func:`integer_gaps`), which is the same mechanism on transformed
    utilities of the same sensitivity. There is no ``monotonic`` option: the
    factor-2 saving for monotone utilities is proven for the exponential
    mechanism's sampler, not for permute-and-flip; nor a base measure, which has
    no exact form here.

    Examples
    --------
    >>> from dpgauss.mechanisms import ExponentialMechanism
    >>> mech = ExponentialMechanism(sensitivity=1.0, epsilon=50.0)
    >>> mech.select([0.0, 10.0, 1.0], random_state=0)
    1
    """

    def __init__(self, *, sensitivity, epsilon, exact=True):
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))
        self.exact = _check_exact(exact)
        self.grid = self.integer_sensitivity = None
        if self.exact:
            self.grid = _noise.power_of_two_grid(self.sensitivity, SELECTION_GRID_BITS)
            self.integer_sensitivity = math.ceil(self.sensitivity / self.grid) + 1
            self._coefficient = exponent_coefficient(
                self.cost.epsilon, self.integer_sensitivity
            )
        self.draws = 0

    @property
    def coefficient(self):
        """The ideal exponent per unit of utility, ``epsilon / (2 D)``."""
        return self.cost.epsilon / (2.0 * self.sensitivity)

    def select(self, utilities, random_state=None):
        """Return the index of the selected candidate.

        Parameters
        ----------
        utilities : array-like of shape (k,)
            Finite utility of each candidate.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        int
            The selected index.
        """
        utilities = np.asarray(utilities, dtype=np.float64)
        if utilities.ndim != 1 or utilities.size == 0:
            raise ValueError("utilities must be a non-empty 1-D array.")
        if not np.all(np.isfinite(utilities)):
            raise ValueError("utilities must be finite.")
        rng = check_generator(random_state)
        self.draws += 1
        if not self.exact:
            scores = self.coefficient * utilities
            return int(np.argmax(scores + _noise.draw_gumbel(utilities.shape, rng)))
        gaps = integer_gaps(integer_floor(utilities, self.grid))
        return permute_and_flip(gaps, *self._coefficient, rng)

    def __repr__(self):
        exact = "" if self.exact else ", exact=False"
        return (
            f"ExponentialMechanism(sensitivity={self.sensitivity!r}, "
            f"{self.cost}{exact})"
        )


class AboveThreshold:
    """AboveThreshold (the sparse vector technique): first query above a threshold.

    Parameters
    ----------
    threshold : float
        The public threshold T.
    sensitivity : float
        D: the largest change of any one query's value between neighbouring
        datasets.
    epsilon : float
        The pure DP cost of the whole run, however many queries are asked.
    exact : bool, default=True
        Exact integer run with discrete Laplace noise. ``False``: float Laplace
        noise, **not float-safe**.
    monotone : bool, default=False
        The caller guarantees that the queries are monotone: for any two
        neighbouring datasets, either every query's value is at least as large
        on the second or every one is at most as large (counts of rows beyond a
        radius under replacing one row, sums of per-row terms that are monotone
        in one per-row statistic). The queries' noise is then ``Lap(2D / eps)``
        instead of ``Lap(4D / eps)`` (Lyu, Su and Li 2017, Section 4.3). For
        queries that are not monotone this is not private.

    Attributes
    ----------
    threshold : float
        T.
    sensitivity : float
        D.
    cost : PureDP
        The privacy cost of one run.
    exact : bool
        Whether runs are exact.
    grid : float or None
        The query grid g, ``D / g`` in ``[2**20, 2**21)``.
    integer_sensitivity : int or None
        ``D' = ceil(D / g) + 1``.
    monotone : bool
        Whether the queries are declared monotone.
    noise_scales : tuple of int or None
        The discrete Laplace scales ``(ceil(2 D'/eps), ceil(4 D'/eps))`` of the
        threshold and of each query, in grid units (``ceil(2 D'/eps)`` for both
        when ``monotone``).
    draws : int
        Number of runs drawn so far.

    Notes
    -----
    Algorithm (Dwork and Roth 2014, Algorithm 1; Lyu, Su and Li 2017, with
    epsilon_1 = epsilon_2 = epsilon / 2): draw ``T' = T + Lap(2D / eps)``; for each
    query k in order, return k as soon as ``f_k + Lap(4D / eps) >= T'``; return
    ``None`` if none does. All noise is drawn up front from one generator (same
    distribution as drawing it query by query).

    Exact run. Integer queries ``q_k = clip(floor(f_k / g) - floor(T / g),
    -2**50, 2**50)`` change by at most ``D' = ceil(D/g) + 1`` (floor moves a
    difference by less than one more unit; clipping and a public shift are
    1-Lipschitz), the threshold is 0, and the noises are discrete Laplace
    ``rho ~ DLap(t1)``, ``nu_k ~ DLap(t2)`` with ``t1 >= 2D'/eps``,
    ``t2 >= 4D'/eps``. Proof (Lyu, Su and Li 2017, Theorem 2, on the integers):
    for neighbours q, q' and an output k, write ``P[k | q] = sum_z P[rho = z]
    prod_{i<k} P[q_i + nu_i < z] P[q_k + nu_k >= z]`` and substitute ``z' = z +
    D'`` (a bijection of the integers, which is where integer queries and an
    integer shift are needed). Then ``P[rho = z] <= e^{D'/t1} P[rho = z'] <=
    e^{eps/2} P[rho = z']``; ``q_i + nu_i < z`` implies ``q'_i + nu_i < z'``
    (``q'_i <= q_i + D'``), so those factors do not grow; and ``P[nu >= c] <=
    e^{2D'/t2} P[nu >= c + 2D'] <= e^{eps/2} P[nu >= c + 2D']`` (term by term,
    ``P[nu = x] <= e^{m/t} P[nu = x + m]``) bounds the last factor by
    ``e^{eps/2} P[q'_k + nu_k >= z']``. Summing over z gives ``P[k | q] <=
    e^{eps} P[k | q']``; for the output None the last factor is absent. This holds
    for any number of queries and for queries that are not monotone.

    Monotone queries, ``t1, t2 >= 2D'/eps``. Floors, the public shift and the clip
    are non-decreasing, so integer queries of monotone ``f`` are monotone too.
    If ``q_i <= q'_i <= q_i + D'`` for every i, substitute ``z' = z + D'``: the
    threshold costs ``e^{D'/t1} <= e^{eps/2}``, the factors i < k do not grow as
    above, and ``P[q_k + nu_k >= z] <= e^{D'/t2} P[nu_k >= z - q_k + D'] <=
    e^{eps/2} P[q'_k + nu_k >= z']`` since ``z' - q'_k <= z - q_k + D'``. If
    ``q_i - D' <= q'_i <= q_i``, keep ``z' = z``: the threshold costs nothing,
    ``q_i + nu_i < z`` implies ``q'_i + nu_i < z``, and ``P[q_k + nu_k >= z] <=
    e^{D'/t2} P[nu_k >= z - q_k + D'] <= e^{eps/2} P[q'_k + nu_k >= z]``. Either
    way ``P[k | q] <= e^{eps} P[k | q']`` (and for None at most ``e^{eps/2}``);
    the two cases are each other's reverse, so both directions hold.

    Examples
    --------
    >>> from dpgauss.mechanisms import AboveThreshold
    >>> svt = AboveThreshold(threshold=5.0, sensitivity=1.0, epsilon=20.0)
    >>> svt.first_above([0.0, 1.0, 9.0, 10.0], random_state=0)
    2
    """

    def __init__(self, *, threshold, sensitivity, epsilon, exact=True, monotone=False):
        threshold = float(threshold)
        if not np.isfinite(threshold):
            raise ValueError(f"threshold must be finite, got {threshold!r}.")
        self.threshold = threshold
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))
        self.exact = _check_exact(exact)
        if not isinstance(monotone, (bool, np.bool_)):
            raise TypeError(f"monotone must be a bool, got {monotone!r}.")
        self.monotone = bool(monotone)
        self.grid = self.integer_sensitivity = self.noise_scales = None
        if self.exact:
            self._calibrate()
        self.draws = 0

    def _calibrate(self):
        g = _noise.power_of_two_grid(self.sensitivity, SELECTION_GRID_BITS)
        with np.errstate(over="ignore", under="ignore"):
            units = np.floor(np.float64(self.threshold) / g)
        # Queries are clipped at LATTICE_BOUND grid units (integer_floor): a
        # threshold beyond it would make the clipped differences wrong (queries
        # far above it never firing), so it is refused.
        if not abs(units) <= _noise.LATTICE_BOUND:
            raise ValueError(
                f"threshold {self.threshold!r} is too large for the query grid {g!r}."
            )
        if self.threshold < 0 and units >= 0:
            units = -1.0  # T / g underflowed to -0.0: floor of a tiny negative
        sens = math.ceil(self.sensitivity / g) + 1
        eps = Fraction(self.cost.epsilon)
        factor = 2 if self.monotone else 4
        scales = (math.ceil(2 * sens / eps), math.ceil(factor * sens / eps))
        if scales[1] > 2**52:
            raise ValueError(
                f"epsilon={self.cost.epsilon!r} is too small for exact "
                "AboveThreshold (noise scale beyond 2**52 grid units)."
            )
        self.grid, self.integer_sensitivity, self.noise_scales = g, sens, scales
        self._threshold_units = float(units)

    def _integer_queries(self, values):
        """``clip(floor(f/g) - floor(T/g), -2**50, 2**50)`` as int64 (exact).

        Both floors are integer-valued floats; their float difference is exact up
        to 2**53 and at least 2**53 in magnitude beyond (monotone rounding), so
        the clip equals the clip of the exact difference.
        """
        floors = integer_floor(values, self.grid)
        diffs = floors - self._threshold_units
        return np.clip(diffs, -_MAX_QUERY, _MAX_QUERY).astype(np.int64)

    def first_above(self, values, random_state=None):
        """Return the index of the first query judged above the threshold.

        Parameters
        ----------
        values : array-like of shape (k,)
            The exact query answers f_1(X), ..., f_k(X), in the order asked.
        random_state : None, int or Generator, default=None
            Source of randomness, resolved once per call (the threshold's noise
            and the queries' noise come from one stream).

        Returns
        -------
        int or None
            The 0-based index of the first query that fired, or ``None``.
        """
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 1 or not np.all(np.isfinite(values)):
            raise ValueError("values must be a finite 1-D array.")
        rng = check_generator(random_state)
        self.draws += 1
        if self.exact:
            t1, t2 = self.noise_scales
            noisy_threshold = _noise.lattice_laplace(t1, None, rng)
            noise = _noise.lattice_laplace(t2, values.size, rng)
            fired = np.flatnonzero(
                self._integer_queries(values) + noise >= noisy_threshold
            )
        else:
            eps = self.cost.epsilon
            noisy_threshold = self.threshold + _noise.draw_laplace(
                2.0 * self.sensitivity / eps, None, rng
            )
            factor = 2.0 if self.monotone else 4.0
            noisy = values + _noise.draw_laplace(
                factor * self.sensitivity / eps, values.shape, rng
            )
            fired = np.flatnonzero(noisy >= noisy_threshold)
        return int(fired[0]) if fired.size else None

    def __repr__(self):
        exact = "" if self.exact else ", exact=False"
        monotone = ", monotone=True" if self.monotone else ""
        return (
            f"AboveThreshold(threshold={self.threshold!r}, "
            f"sensitivity={self.sensitivity!r}, {self.cost}{exact}{monotone})"
        )
