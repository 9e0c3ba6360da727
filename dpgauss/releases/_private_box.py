"""A box found privately: the q and 1 - q quantiles of every column, widened.

Also the box route of the unbounded mean and Gaussian (the searches, then the
``bounds`` path's release in the released box): its plan, costs and release.

Shared by :class:`~dpgauss.preprocessing.PrivateBounds` (``kind="box"``) and
the unbounded mean estimators' box route (:class:`~dpgauss.mean.PrivateMean`
without hints, where its own scale search cannot measure the columns).

**The plan** (public: n, d and the cost). Two searches of all d columns at
half the cost each (:func:`box_search_entries`), for the ``q`` and ``1 - q``
quantiles of every column with the library's bound-free quantile search
(:class:`~dpgauss.mechanisms._range.QuantileSearch`), ``q`` as far out as the
noise allows: the search's count at the quantile must stand :data:`TAIL_SDS`
noise sds above 0, so ``q = max(Q_MIN, TAIL_SDS sd / n)`` (``sd`` the count
noise sd, public); beyond :data:`Q_MAX` the search could end anywhere
(:func:`box_search_fails`).

**Privacy.** Each search composes 64 releases of counts whose l2 (l1)
sensitivity is ``sqrt(d)`` (``d``) when one row is replaced, proven exact in
:mod:`dpgauss.mechanisms._range`; the two searches cost half each (basic
composition). Everything after them is post-processing of released values.

**The answer** (post-processing, :func:`release_private_box`). The released
quantiles ``[a, b]`` are widened on each side by ``(Z_COVER - z_q) / (2
z_q)`` times ``b - a`` (``z_q`` the standard normal's ``1 - q`` quantile): a
Gaussian column's box reaches :data:`Z_COVER` sds either side of its mean. A
column whose two quantiles coincide (at least ``1 - 2 q`` of its values tied)
gets a half-width of :data:`TIED_WIDTH` times its value's magnitude (at least
1e-6). Every bound is finite, and every half-width within what the
estimators accept (:func:`finite_box`).
"""

import math
import warnings

import numpy as np
from scipy import stats

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._checks import MAX_RADIUS, MIN_RADIUS
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.releases._box import box_frame
from dpgauss.releases._range import RANGE_ROWS, range_subset, search_factory
from dpgauss.utils._messages import shown_indices

__all__ = [
    "BOX_ROUTE_NAMES",
    "BOX_ROUTE_SHARE",
    "Q_MAX",
    "Q_MIN",
    "TAIL_SDS",
    "TIED_WIDTH",
    "Z_COVER",
    "box_margin",
    "box_route_costs",
    "box_route_entries",
    "box_route_feasible",
    "box_route_plan",
    "box_route_rows",
    "box_search_entries",
    "box_search_fails",
    "finite_box",
    "is_box_route",
    "release_private_box",
    "release_route_box",
    "tail_quantile",
    "warn_box_route",
]

#: The most extreme quantile searched: 1/64 (and 63/64) of the rows.
Q_MIN = 1.0 / 64.0
#: The least extreme one a fit accepts: the quartiles. Beyond, the noise of
#: the counts is a quarter of the rows and the fit is refused.
Q_MAX = 0.25
#: Noise sds the count at the searched quantile must stand above 0: below,
#: a step can take the search past every row, to any float.
TAIL_SDS = 4.0
#: The box reaches this many sds either side of a Gaussian column's mean.
Z_COVER = 4.0
#: The half-width of a tied column's box, relative to its value's magnitude.
TIED_WIDTH = 2.0**-10


def tail_quantile(cost, n, columns):
    """``q``, the quantile a search at ``cost`` on n rows of ``columns``
    columns looks for (module docstring), from public values."""
    if n < 1 or columns < 1:  # an empty X's shape; validation refuses it next
        return Q_MAX
    sd = QuantileSearch(cost, columns).count_sd()
    # At most the quartiles: a fit refused there goes on only with
    # on_useless="warn", and searches them.
    return min(max(Q_MIN, TAIL_SDS * sd / n), Q_MAX)


def box_search_fails(cost, n, columns):
    """Whether a search at ``cost`` (each of the two, for a box) on n rows of
    ``columns`` columns has count noise too large for even the quartiles
    (:data:`TAIL_SDS` sds at ``Q_MAX n``): it could end anywhere. Public.
    (Not exact: the count sd is the same, and a budget too small for the
    lattice is refused by the check of the plan, not here.)"""
    sd = QuantileSearch(cost, columns, exact=False).count_sd()
    return TAIL_SDS * sd / n > Q_MAX


def box_margin(q):
    """The widening of a box's released ``[q, 1 - q]`` quantiles on each
    side, in units of their distance (module docstring)."""
    z = float(stats.norm.isf(q))
    return (Z_COVER - z) / (2.0 * z)


def box_search_entries(total, n, d, names=("low", "high")):
    """The plan's two searches, ``names`` (the q and 1 - q quantiles of the d
    columns), at half of ``total`` each; q from n (:data:`Q_MIN` when n is
    not known, a plan priced before the rows)."""
    kind = kind_of(total)
    low, high = split_cost(total, [0.5, 0.5])
    q = Q_MIN if n is None else tail_quantile(low, n, d)
    return [
        Release(names[0], low, kind, search_factory(d, q), size=d),
        Release(names[1], high, kind, search_factory(d, 1.0 - q), size=d),
    ]


def release_private_box(X, plan, rng, q, names=("low", "high")):
    """Release the box: the two searches of ``plan``, then post-processing.

    Returns
    -------
    lower, upper : ndarray of shape (d,)
        The box (:func:`finite_box`).
    tied : ndarray of bool
        Columns whose two quantiles coincided.
    held : ndarray of bool
        Columns whose widened box was kept (False: clamped to a valid
        half-width or centre, missing most of the rows).
    """
    low = plan.calibrate(names[0]).release(X, rng)
    high = plan.calibrate(names[1]).release(X, rng)
    # Post-processing from here: widen, order, clamp.
    top = np.finfo(np.float64).max
    with np.errstate(over="ignore", invalid="ignore"):
        width = np.minimum(high / 2.0 - low / 2.0, top / 4)
        grow = 2.0 * box_margin(q) * width
        # Saturate at the largest float: -inf / 2 + inf / 2 would be NaN.
        wide_low = np.clip(low - grow, -top, top)
        wide_high = np.clip(high + grow, -top, top)
    lower, upper, tied = finite_box(wide_low, wide_high)
    # The centre and half-width round trip moves an end by a few ulps
    # (age in statsmodels' fair, 10.4377 -> +1.8e-15, read as clamped): a
    # clamp that misses rows moves it by far more than 2^-30 of its size.
    slack = 2.0**-30 * (np.abs(wide_low) / 2.0 + np.abs(wide_high) / 2.0)
    held = (lower <= wide_low + slack) & (wide_high - slack <= upper)
    return lower, upper, tied, held


def finite_box(low, high):
    """A valid box around the released values (post-processing): ordered,
    tied columns widened, every half-width in ``[MIN_RADIUS, MAX_RADIUS]``
    and ``lower < upper`` as computed.

    A half-width is at least 2^-40 of the centre's magnitude (so ``c +- h``
    are distinct floats and ``h`` survives the estimators' own ``upper / 2 -
    lower / 2`` within 2^-12), within half the accepted range, and the
    centre within 2^40 half-widths of 0: that binds only where the half-width
    was capped, at centres beyond 5e151 (noise that walked off, or data no
    box can hold)."""
    low, high = np.minimum(low, high), np.maximum(low, high)
    tied = ~(high > low)
    # Halves first: no overflow for any finite pair.
    center = low / 2.0 + high / 2.0
    half = high / 2.0 - low / 2.0
    half = np.where(
        tied, TIED_WIDTH * np.maximum(np.abs(center), 1e-6 / TIED_WIDTH), half
    )
    half = np.maximum(half, np.abs(center) * 2.0**-40)
    half = np.clip(half, 2.0 * MIN_RADIUS, MAX_RADIUS / 2.0)
    center = np.clip(center, -half * 2.0**40, half * 2.0**40)
    return center - half, center + half, tied


def needed_rows(cost, columns):
    """The fewest rows at which a search at ``cost`` reaches the quartiles
    (public), for the refusal's advice."""
    sd = QuantileSearch(cost, columns).count_sd()
    return math.ceil(TAIL_SDS * sd / Q_MAX)


# -- the box route of the unbounded mean and Gaussian ------------------------
#: The box route's share of the cost for the box search (the rest for the
#: boxed release): the split of the simplest private answer without public
#: knowledge that bench_real holds the no-hint fits to.
BOX_ROUTE_SHARE = 0.5
#: The box route's two searches (the q and 1 - q quantiles).
BOX_ROUTE_NAMES = ("box_low", "box_high")


def box_route_costs(total):
    """``(search, release)``: the box route's split of ``total``."""
    return split_cost(total, [BOX_ROUTE_SHARE, 1.0 - BOX_ROUTE_SHARE])


def box_route_rows(n):
    """The rows the box route's searches read: at most RANGE_ROWS, drawn
    independently of the data (:func:`~dpgauss.releases._range.range_subset`:
    replacing one row changes at most one of them, so the searches'
    sensitivities hold; sorting n rows twice cost 2.4 times the time and 1.4
    times the memory of the range searches on a 4e6 x 10 memmap)."""
    return None if n is None else min(int(n), RANGE_ROWS)


def box_route_entries(cost, n, d):
    """The box route's two searches at ``cost`` (half each), on
    :func:`box_route_rows` of the n rows."""
    return box_search_entries(cost, box_route_rows(n), d, BOX_ROUTE_NAMES)


def box_route_feasible(total, n, d):
    """Whether the box route's searches, at :data:`BOX_ROUTE_SHARE` of
    ``total`` on :func:`box_route_rows` of n rows, reach their quantiles
    (:func:`box_search_fails`; public). Each search's cost is half the
    route's (:func:`box_search_entries`); computed without building them,
    whose exact lattice refuses a budget too small for it in the check of
    the plan, with the estimator's own message."""
    one = split_cost(box_route_costs(total)[0], [0.5, 0.5])[0]
    return not box_search_fails(one, box_route_rows(n), d)


def box_route_plan(total, n, d, releases):
    """The box route's plan: its two searches at :data:`BOX_ROUTE_SHARE` of
    ``total``, then the entries ``releases(rest, n, d)`` of the release made
    in the box (the ``bounds`` path's plan of the estimator)."""
    searched, rest = box_route_costs(total)
    return ReleasePlan(total, box_route_entries(searched, n, d) + releases(rest, n, d))


def is_box_route(plan):
    """Whether ``plan`` is the box route's
    (:meth:`~dpgauss.releases._hints.RangeHintsMixin._box_route`)."""
    return BOX_ROUTE_NAMES[0] in {r.name for r in plan.releases()}


def release_route_box(X, plan, rng, owner):
    """The box route's released box ``(lower, upper)``, and its centre and
    half-widths (:func:`~dpgauss.releases._box.box_frame`)
    (:func:`~dpgauss.releases._private_box.release_private_box`), warning
    (post-processing) for features whose box had to be clamped."""
    n, d = X.shape
    rows = np.asarray(X[range_subset(n, rng)], dtype=np.float64)
    q = tail_quantile(plan.cost(BOX_ROUTE_NAMES[0]), rows.shape[0], d)
    lower, upper, tied, held = release_private_box(rows, plan, rng, q, BOX_ROUTE_NAMES)
    clamped = ~(held | tied)
    if np.any(clamped):
        warnings.warn(
            f"{owner}: the private box of feature(s) {shown_indices(clamped)} is "
            "clamped (its released spread or location is beyond what a box can "
            "hold), so their estimates are off. Rescale those features.",
            UtilityWarning,
            stacklevel=5,
        )
    return (lower, upper), box_frame(lower, upper)


def warn_box_route(owner, n, d, total):
    """Warn, before the spend, that the fit takes the box route (public: n,
    d and the cost): half the budget buys a box a codebook would give for
    free, and the boxed answer is the simplest private one, several times
    the non-private error on skewed or tied columns (randhie at (1, 1e-6):
    10-20 sampling errors, as the same two releases made by hand)."""
    warnings.warn(
        f"{owner}: with n={n}, d={d} and {total}, the columns' scales cannot be "
        "measured privately, so the fit spends half its budget finding a box "
        "(as PrivateBounds does) and releases in it. Bounds from domain "
        "knowledge (a codebook's ranges) would leave the whole budget for the "
        "estimate: give bounds=(lower, upper).",
        UtilityWarning,
        stacklevel=5,
    )
