"""Bound-free private quantiles: a noisy binary search over the order of float64.

Private range finding needs no a-priori bound when the search runs over every
finite float64. The map :func:`float_keys` sends each float to an int64 key
with the same order (``-0.0`` and ``0.0`` to the same key), so the finite
floats are the keys in ``[-K, K]``, ``K = 0x7FEFFFFFFFFFFFFF``, an interval of
fewer than 2^64 integers: a binary search that halves it 64 times ends on one
key. Each step releases, for every column at once, the count of values whose
key is at most the midpoint.

**Privacy.** Replacing one row changes each column's count by at most 1, so
the vector of d counts has l2 sensitivity sqrt(d) and l1 sensitivity d, exactly
(integer counts of exact integer comparisons: no rounding anywhere). Each of
the 64 steps is a Gaussian (zCDP) or Laplace (pure DP) release at 1/64 of the
cost (a power of two: the 64 parts add up to the cost exactly); the midpoints
are functions of earlier releases, so the search is an adaptive composition of
64 releases and costs exactly its ``cost``. The result is post-processing.

**Accuracy.** A step errs only where the true count is within the noise of the
target, so the released key's rank is within a few noise sds
(``sqrt(64 d / (2 rho))`` counts under zCDP) of ``q n`` (a noisy version of the
classic noisy binary search); its value is then within the data's own spread
of the quantile, whatever the scale or location of the data.
"""

import math

import numpy as np
from scipy import stats

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.utils._random import check_generator

__all__ = ["QuantileSearch", "float_keys", "keys_to_floats", "range_failure"]

#: Binary search steps: the finite float64 keys span fewer than 2^64 integers.
STEPS = 64
#: The largest finite float64's key.
MAX_KEY = 0x7FEFFFFFFFFFFFFF
#: How many count noise sds below ``q n`` a ``nonzero`` search aims.
NONZERO_MARGIN = 4.0
#: A ``nonzero`` search reports 0 (not measured) unless its first step, the
#: count at 0, shows ``q`` times the nonzero values at least this many noise
#: sds: below it the target sits within the noise of the zeros' count and
#: the search may end anywhere between 0 and the smallest nonzero value.
NONZERO_MEASURED = 3.0 * NONZERO_MARGIN
#: Passes over a column's kept keys before they are sorted (see
#: :class:`_Interval`): a Gaussian column leaves few keys after as many.
PASSES_BEFORE_SORT = 16
#: Kept keys this few are sorted at once: bisection and slices then cost
#: less than a masked copy and its range.
SORTED_BELOW = 4096
_SIGN = np.int64(-(2**63))
_MAGNITUDE = np.int64(2**63 - 1)


def float_keys(values):
    """Int64 keys in the order of the float64 values (``-0.0`` as ``0.0``).

    Non-negative floats keep their bit pattern; a negative float's key is minus
    the bit pattern of its magnitude.

    Examples
    --------
    >>> from dpgauss.mechanisms._range import float_keys
    >>> keys = float_keys([-2.0, -0.0, 0.0, 1e-300, 3.0])
    >>> bool((keys[:-1] <= keys[1:]).all()), keys[1] == keys[2]
    (True, np.True_)
    """
    return _to_keys(np.array(values, dtype=np.float64, order="C").view(np.int64))


def _to_keys(bits):
    """:func:`float_keys` in place on the bit patterns ``bits`` (int64): a
    negative pattern ``s | m`` becomes ``(m ^ -1) + 1 = -m``, a non-negative one
    stays."""
    sign = bits >> 63  # -1 where the sign bit is set, else 0
    bits &= _MAGNITUDE
    bits ^= sign
    bits -= sign
    return bits


def keys_to_floats(keys):
    """The floats of :func:`float_keys` keys (``0`` gives ``0.0``)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    bits = np.where(keys < 0, (-keys) | _SIGN, keys)
    return bits.view(np.float64)


class QuantileSearch:
    """Private quantiles of every column, with no bounds: noisy binary search.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The cost of one release (the whole search): Gaussian steps under zCDP,
        Laplace steps under pure DP.
    n_features : int
        d, the number of columns searched together.
    quantile : float, default=0.5
        The target q: the search looks for the smallest value with at least
        ``q n`` values at or below it.
    exact : bool, default=True
        Exact lattice noise in each step (float-safe).
    nonzero : bool, default=False
        Search the q-quantile of each column's nonzero values (for magnitudes
        such as ``|x - m|``, where ties make most values exactly 0 and the
        plain quantile 0). Each step then compares ``c(mid) - (1 - q) c0``
        with ``q n``, ``c`` the count at or below mid and ``c0`` the count of
        zeros: it reaches ``q n`` exactly when ``q (n - c0)`` nonzero values
        are at or below mid. The values searched are ``|v|`` (for mid < 0
        the query is then ``-(1 - q) c0``). Replacing one value
        moves the pair ``(c, c0)`` by one of (0, 0), (+-1, 0), (+-1, +-1)
        with equal signs, or (0, +-1), so the query moves by at most
        ``max(1, q, 1 - q) = 1``: the sensitivity of the plain count. q must
        be a multiple of 2^-10 so that ``(1 - q) c0`` is exact in float64.
        The target is :data:`NONZERO_MARGIN` count noise sds below ``q n``
        (public): with fewer nonzero values than the noise, a search aimed at
        ``q n`` walks to any float (1e33 to 1e80 on an indicator set in 1.5%
        of 20,000 rows), while aimed below it ends at 0, which callers read as
        "not measured"; with k nonzero values the quantile found is about
        ``q - NONZERO_MARGIN sd / k`` of them. The first step's midpoint is
        0, so its noisy count is ``q c0`` plus noise: where ``q n`` less it is
        below :data:`NONZERO_MEASURED` sds the column reports 0 (too few
        nonzero values to measure; a function of released counts, free).

    Attributes
    ----------
    cost : ZCDP or PureDP
        The cost of one release.
    step : GaussianMechanism or LaplaceMechanism
        The mechanism of each of the 64 steps (cost / 64 each).
    draws : int
        Number of searches released.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.mechanisms._range import QuantileSearch
    >>> X = np.random.default_rng(0).normal(1e6, 3.0, size=(5000, 2))
    >>> search = QuantileSearch(ZCDP(0.5), n_features=2)
    >>> np.abs(search.release(X, random_state=0) - 1e6).max() < 1.0
    np.True_
    """

    def __init__(self, cost, n_features, quantile=0.5, exact=True, nonzero=False):
        d = int(n_features)
        if d < 1:
            raise ValueError(f"n_features must be at least 1, got {n_features!r}.")
        if not 0.0 < float(quantile) < 1.0:
            raise ValueError(f"quantile must be in (0, 1), got {quantile!r}.")
        self.cost, self.n_features, self.quantile = cost, d, float(quantile)
        self.nonzero = bool(nonzero)
        if self.nonzero and (self.quantile * 1024.0) % 1.0 != 0.0:
            raise ValueError(
                f"a nonzero search needs a quantile in multiples of 2^-10, got "
                f"{quantile!r}."
            )
        if isinstance(cost, ZCDP):
            self.step = GaussianMechanism(
                sensitivity=math.sqrt(d), rho=cost.rho / STEPS, exact=exact
            )
        elif isinstance(cost, PureDP):
            self.step = LaplaceMechanism(
                sensitivity=float(d), epsilon=cost.epsilon / STEPS, exact=exact
            )
        else:
            raise TypeError(f"QuantileSearch takes a ZCDP or PureDP cost: {cost!r}.")
        self.draws = 0

    def parts(self):
        """The step mechanism and the columns it releases together, for the
        check before the spend
        (:func:`~dpgauss.mechanisms._checks.check_noise_scale`)."""
        return [(self.step, self.n_features, True)]

    def count_sd(self):
        """The noise sd of each step's count (public)."""
        return self.step.sd(self.n_features)

    def release(self, values, random_state=None):
        """Return the private q-quantile of each column of ``values``.

        Parameters
        ----------
        values : array-like of shape (n, n_features)
            Finite values (n public).
        random_state : None, int or numpy.random.Generator
            Source of noise.

        Returns
        -------
        ndarray of shape (n_features,)
            One finite float per column.
        """
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != self.n_features:
            raise ValueError(
                f"expected an array of shape (n, {self.n_features}), got "
                f"{values.shape}."
            )
        rng = check_generator(random_state)
        if self.nonzero:
            # Magnitudes: the sensitivity argument needs non-negative values
            # (a zero replaced by a negative value below a negative mid would
            # move the query by 2 - q); |v| is a function of one value.
            values = np.abs(values)
        # One contiguous row per column. Each step's count is exact integer
        # arithmetic on the keys: column j keeps the keys in [lo_j, hi_j] and
        # the number below lo_j, and each step counts the kept keys at or
        # below the midpoint and keeps the half the search goes on in. The
        # counts equal those of a search over the sorted keys (the same
        # releases), and a step reads only what is still in the interval: a
        # 50,000 x 50 search took 0.15 s with a sort, 0.08 s without (most of
        # it now the 64 x 50 exact noise draws).
        keys = _to_keys(np.array(values.T, order="C").view(np.int64))
        n = keys.shape[1]
        target = self.quantile * n
        if self.nonzero:
            target -= NONZERO_MARGIN * self.count_sd()
        lo = np.full(self.n_features, -MAX_KEY, dtype=np.int64)
        hi = np.full(self.n_features, MAX_KEY, dtype=np.int64)
        columns = np.arange(self.n_features)
        # Zeros counted once (0.0 and -0.0 share key 0); the weight makes the
        # counts target the nonzero values (see the class docstring).
        zeros = np.zeros(self.n_features)
        if self.nonzero:
            zeros = (1.0 - self.quantile) * np.count_nonzero(keys == 0, axis=1)
        kept = []
        below = np.zeros(self.n_features, dtype=np.int64)
        for j, column in enumerate(keys):
            finite = (column >= -MAX_KEY) & (column <= MAX_KEY)
            if not finite.all():  # inf, NaN: beyond the finite floats' keys
                below[j] = np.count_nonzero(column < -MAX_KEY)
                column = column[finite]
            kept.append(_Interval(column))
        first = None
        for _ in range(STEPS):
            # floor((lo + hi) / 2) without overflow.
            mid = lo // 2 + hi // 2 + ((lo % 2) + (hi % 2)) // 2
            within = np.array([kept[j].count(mid[j]) for j in columns])
            counts = (below + within).astype(np.float64)
            noisy = self.step.randomise(counts - zeros, rng)
            if first is None:
                first = noisy  # at mid = 0: q c0 plus noise (nonzero search)
            above = noisy >= target
            for j in columns:
                kept[j].keep(bool(above[j]))
            below = np.where(above, below, below + within)
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid + 1)
        self.draws += 1
        found = keys_to_floats(np.minimum(lo, hi))
        if self.nonzero:
            measured = self.quantile * n - first >= NONZERO_MEASURED * self.count_sd()
            found = np.where(measured, found, 0.0)
        return found

    def __repr__(self):
        return (
            f"QuantileSearch(cost={self.cost}, n_features={self.n_features}, "
            f"quantile={self.quantile}" + (", nonzero=True)" if self.nonzero else ")")
        )


class _Interval:
    """One column's keys still inside a search's interval ``[lo, hi]``.

    :meth:`count` counts those at or below a midpoint, :meth:`keep` keeps the
    half the search goes on in. A midpoint outside the keys' range counts
    with no pass (ties); after :data:`PASSES_BEFORE_SORT` passes, or once at
    most :data:`SORTED_BELOW` are left, the keys are sorted and then counted
    by bisection, so no input makes the search cost more than that many
    passes and one sort.
    """

    def __init__(self, keys):
        self.keys, self.sorted, self.passes = keys, False, 0
        self.cut, self.mask = 0, None
        self._ends()

    def _ends(self):
        keys = self.keys
        if not keys.size:
            self.ends = None
        elif self.sorted:
            self.ends = (keys[0], keys[-1])
        else:
            self.ends = (keys.min(), keys.max())

    def count(self, mid):
        """How many keys are at most ``mid`` (exact)."""
        self.mask = None
        if self.ends is None or mid >= self.ends[1]:
            self.cut = self.keys.size
        elif mid < self.ends[0]:
            self.cut = 0
        elif self.sorted:
            self.cut = int(np.searchsorted(self.keys, mid, side="right"))
        elif self.passes >= PASSES_BEFORE_SORT or self.keys.size <= SORTED_BELOW:
            self.keys, self.sorted = np.sort(self.keys), True
            return self.count(mid)
        else:
            self.mask = self.keys <= mid
            self.cut = int(np.count_nonzero(self.mask))
        return self.cut

    def keep(self, at_or_below):
        """Keep the keys at most the last midpoint, or those above it."""
        if self.mask is None:  # sorted, or all on one side: a slice
            cut, size = self.cut, self.keys.size
            if (cut == size) == at_or_below and not self.sorted:
                return  # every key stays, and so do their ends
            self.keys = self.keys[:cut] if at_or_below else self.keys[cut:]
        else:
            self.keys = self.keys[self.mask if at_or_below else ~self.mask]
            self.passes += 1
        self.mask = None
        self._ends()


def range_failure(cost, n, d, capped=True):
    """Chance that a coarse-range search on n rows errs far from its quantile.

    A step of the binary search errs far from the quantile only where its
    count's noise exceeds the margin, about n / 2 there; over 64 steps and d
    columns, at most ``128 d P[noise > n / 2]`` (a union bound; Gaussian noise
    of sd ``sqrt(32 d / rho)`` under zCDP, Laplace of scale ``64 d / epsilon``
    under pure DP). Public: the cost, n and d.
    """
    search = QuantileSearch(cost, d)
    if isinstance(cost, ZCDP):
        tail = float(stats.norm.sf(0.5 * n / search.step.scale))
    else:
        tail = 0.5 * math.exp(-0.5 * n / search.step.scale)
    # Uncapped, the union bound still orders two searches when both exceed 1.
    risk = 128.0 * d * tail
    return min(1.0, risk) if capped else risk
