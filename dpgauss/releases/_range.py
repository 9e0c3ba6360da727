"""The coarse range of the unbounded estimators, shared by the Gaussian estimators.

Everything here works in a frame A (a public d x d matrix, a function of
released values): rows are mapped to ``w = A x`` and clipped there. See
:mod:`dpgauss.releases._coinpress` for the covariance steps and
:mod:`dpgauss.releases._coinpress_mean` for the mean steps the range starts.
"""

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.mechanisms._checks import build_key
from dpgauss.mechanisms._range import NONZERO_MEASURED, QuantileSearch, range_failure
from dpgauss.releases._pairs import PairDifferences, Pairing
from dpgauss.utils._sums import row_norms

__all__ = [
    "CoarseRange",
    "Stages",
    "coarse_range",
    "finite_mean",
    "frame_pairs",
    "pair_scale",
    "range_failure",
    "range_release",
    "range_subset",
    "scale_costs",
    "scaled_deviations",
    "search_factory",
]

#: The median of |z| for z = x/2 - x'/2, x and x' i.i.d. N(mu, sigma^2), is
#: HALF_PAIR_MEDIAN * sigma.
HALF_PAIR_MEDIAN = float(stats.norm.ppf(0.75)) / math.sqrt(2.0)
#: How many of its scales the coarse center may be from the mean, per
#: coordinate, when the first mean step's radius is set from it: the private
#: median's rank is within a few noise sds of n / 2 (see QuantileSearch).
RANGE_SCALES = 4.0
#: The released median of the rows' norms times NORM_MARGIN bounds ||mu||
#: (:func:`norm_bound`).
NORM_MARGIN = 4.0
#: The median of chi-square with one degree of freedom (:func:`top_eigenvalue`).
CHI2_1_MEDIAN = float(stats.chi2.median(1))
#: Share of ``range_scale`` for :func:`top_eigenvalue` on the rescaled pairs
#: when the scales are searched per coordinate (one column: a fifth of the
#: cost still errs far less often than the d-column search with the rest).
TOP_SHARE = 0.2
#: The coarse-range searches read at most this many rows (a random subset).
RANGE_ROWS = 50_000
#: The median of |x - m| for x ~ N(m, sigma^2) is ABS_MEDIAN * sigma.
ABS_MEDIAN = float(stats.norm.ppf(0.75))
#: The frame and the scales read at most this many pairs of rows (drawn
#: independently of the data): a whitening frame needs no more (its sampling
#: error is about sqrt(d / m), 0.07 at d = 500), and reading all n / 2 pairs
#: three times made the fit about 10x numpy.cov at n = 10^6 (200,000: 6x).
FRAME_PAIRS = 100_000
#: The quantile of the nonzero deviations the coordinate scales search: above
#: the median, so that a column whose deviations are mostly ties still has
#: its search's target (a share of the nonzero ones, less the noise margin of
#: ``QuantileSearch(nonzero=True)``) above 0 (randhie's two-valued columns at
#: pure epsilon 1 measured at 3/4, not at 1/2).
NONZERO_QUANTILE = 0.75
#: Times the released quantile of nonzero |z| (or |x - m|) to read it as the
#: median :func:`pair_scale` takes (Gaussian |deviations|: ratio of their
#: quantiles at 1/2 and at NONZERO_QUANTILE).
NONZERO_TO_MEDIAN = float(
    stats.norm.ppf(0.75) / stats.norm.ppf(0.5 + NONZERO_QUANTILE / 2)
)


def frame_count(n):
    """How many pairs :func:`frame_pairs` reads from n rows (public)."""
    return min(int(n) // 2, FRAME_PAIRS)


def frame_pairs(X, rng):
    """``x/2 - x'/2`` over at most :data:`FRAME_PAIRS` disjoint random pairs.

    The pairing (the first of the blockwise pairs of
    :class:`~dpgauss.releases._pairs.Pairing`, read in blocks) is drawn from
    the fit's generator, independently of the data, and each row is in at
    most one pair: replacing one row changes at most one
    pair, so a release on the m pairs with sensitivities for m rows is private
    with respect to X. Their covariance is C / 2 whatever the mean.
    """
    pairing = Pairing(X.shape[0], rng, count=frame_count(X.shape[0]))
    return PairDifferences(X, pairing).rows()


def range_subset(count, rng):
    """The rows a coarse-range search reads: at most RANGE_ROWS of ``count``.

    Drawn independently of the data, so replacing one row changes at most one
    of them and the searches' sensitivities hold; their count noise is the
    same, and a coarse range needs no more rows (reading all of them made the
    fit 29x numpy.cov at n = 10^6, d = 50, the sorts dominating).
    """
    return np.sort(rng.choice(count, size=min(count, RANGE_ROWS), replace=False))


def scale_costs(cost):
    """The costs of the two searches of a per-coordinate ``range_scale``:
    the d coordinate scales (``scales``) and the rescaled pairs' norms
    (``top``), :data:`TOP_SHARE` of it; they compose to at most ``cost``."""
    return split_cost(cost, [1.0 - TOP_SHARE, TOP_SHARE])


def search_factory(columns, quantile=0.5, nonzero=False):
    """The factory of a release that is one
    :class:`~dpgauss.mechanisms._range.QuantileSearch` of ``columns`` columns
    at ``quantile`` (``columns=`` overrides it: a search by the rows' norms
    is one column); ``nonzero`` searches the quantile of the nonzero values
    (same sensitivity, see the class)."""

    def make(cost, *, columns=columns):
        return QuantileSearch(cost, columns, quantile, nonzero=nonzero)

    return make


def nonzero_measurable(cost, rows, d):
    """Whether the coordinate scales' nonzero search, at ``cost`` on ``rows``
    pairs and d columns, can measure a column without ties (public).

    ``QuantileSearch(nonzero=True)`` reports a column as not measured (0,
    which :func:`pair_scale` replaces by the typical scale) when ``q m`` less
    its first noisy count (``q c0`` plus noise, c0 the column's zeros) is
    below :data:`~dpgauss.mechanisms._range.NONZERO_MEASURED` count sds.
    Where ``q m`` itself is below that plus two sds, even a column without
    ties is reported unmeasured in most draws (97.7% under Gaussian counts),
    every scale is then the same value, and the frame starts as if the
    columns shared their units.
    """
    # Not exact: the count sd is the same, and a budget too small for the
    # lattice is refused by the check of the plan, not here.
    search = QuantileSearch(cost, d, NONZERO_QUANTILE, exact=False, nonzero=True)
    return NONZERO_QUANTILE * rows >= (NONZERO_MEASURED + 2.0) * search.count_sd()


def _scale_entries(cost, d):
    coordinates, top = scale_costs(cost)
    kind = kind_of(cost)
    return [
        # The scales are medians of nonzero deviations: tied columns (counts,
        # indicators, zero-inflated) have mostly zero deviations, whose plain
        # median 0 made the frame collapse (see pair_scale).
        Release("scales", coordinates, kind, search_factory(d, NONZERO_QUANTILE, True)),
        Release("top", top, kind, search_factory(1)),
    ]


def range_release(name, cost, d):
    """The plan entry of the coarse-range search ``name`` at ``cost``.

    Its factory ``make(cost, columns=d, stages=False)`` builds what
    :func:`coarse_range` may run: a :class:`~dpgauss.mechanisms._range.QuantileSearch`
    of d columns, or of one (the norms: :func:`norm_bound`,
    :func:`top_eigenvalue`, :func:`largest_scale`), or, for ``range_scale``
    with ``stages=True``, the nested release of the d coordinate scales and
    the top of the rescaled pairs (:func:`scale_costs`). Its cases are every
    one of them, so the check before the spend builds whichever the fit runs.
    """

    def make(cost, *, columns=d, stages=False, nonzero=False):
        if stages:
            return Stages(cost, _scale_entries(cost, d))
        if nonzero:
            return QuantileSearch(cost, columns, NONZERO_QUANTILE, nonzero=True)
        return QuantileSearch(cost, columns)

    cases = ({}, {"columns": 1})
    if name == "range_scale":
        cases += ({"stages": True}, {"nonzero": True})
    return Release(name, cost, kind_of(cost), make, cases=cases)


class CoarseRange(NamedTuple):
    """What :func:`coarse_range` released (None where not searched)."""

    #: ndarray of shape (d,): the private coordinate-wise median (zeros when
    #: not searched or searched by norm).
    center: np.ndarray
    #: ndarray of shape (d,) or None: estimates of the coordinates' sds.
    scales: np.ndarray | None
    #: float or None: a bound on ``||mu||`` (the norm search).
    bound: float | None
    #: float: a bound on the largest eigenvalue of ``S^-1 C S^-1``, S =
    #: diag(scales) (S = I when scales is None), from :func:`top_eigenvalue`;
    #: None when the scale was not searched.
    top: float | None
    #: ndarray of shape (d, d) or None: the public rows' whitening P
    #: (``top`` then bounds the largest eigenvalue of ``P C P``).
    frame: np.ndarray | None = None


def coarse_range(X, pairs, plan, rng, location, scale, by_norm=False, one_scale=False):
    """The private coarse center and scale of the rows.

    Parameters
    ----------
    X : ndarray or dask array of shape (n, d)
        The rows.
    pairs : ndarray of shape (m, d)
        ``x/2 - x'/2`` over pairs of rows drawn independently of the data.
    plan : ReleasePlan
        Holds ``range_location`` (when ``location``) and ``range_scale``
        (when ``scale``).
    rng : numpy.random.Generator
        The fit's noise stream.
    location, scale : bool
        Which searches to run.
    by_norm : bool, default=False
        Search ``range_location`` as one column, the rows' norms
        (:func:`norm_bound`), instead of d coordinate medians: the center is
        then 0 and ``bound`` bounds ``||mu||``; the scales are searched on the
        pairs.
    one_scale : bool, default=False
        Search ``range_scale`` as one column, the pairs' norms
        (:func:`top_eigenvalue`), giving ``top`` alone (whether or not the
        location is searched per coordinate). Otherwise, for d > 1, it is a
        nested release (:class:`Stages`): the d coordinate scales S, then
        ``top`` from the norms of the pairs rescaled by S^-1
        (:func:`scale_costs`); at d = 1 the one scale takes the whole cost.

    Returns
    -------
    CoarseRange
        The released center, scales, bound and top (None where not searched).
    """
    n, d = X.shape

    def search(name, values, plan=plan, **case):
        found = plan.calibrate(name, columns=d, **case)
        return found.release(values, rng)

    def rescaled_top(medians):
        # The scales and the top of the rescaled pairs, one nested release.
        if d == 1:  # one column already: the whole cost; S^-1 C S^-1 is about
            # 1, and top = 4 d gives the worst-case start 1 / (2 s) as before.
            found = medians(plan, "range_scale", nonzero=True)
            return pair_scale(found * NONZERO_TO_MEDIAN), 4.0
        stages = plan.calibrate("range_scale", stages=True)
        scales = pair_scale(medians(stages.plan, "scales") * NONZERO_TO_MEDIAN)
        top = top_eigenvalue(pairs, stages.plan, rng, "top", scales)
        stages.finish()
        return scales, top

    center, scales, bound, top = np.zeros(d), None, None, None
    if location and by_norm:
        bound = norm_bound(X, plan, rng)
        location = False  # the scales are then searched on the pairs
    if location:
        some = np.asarray(X[range_subset(n, rng)])
        center = search("range_location", some)
    if scale and one_scale:
        # The d-column scale search is predicted to go astray (whichever rows
        # it would read): the one-column search on the pairs, the whole cost.
        top = top_eigenvalue(pairs, plan, rng)
    elif scale:
        # On the pairs even when the location was searched: a tie is then an
        # exact zero whatever the center (around a private median that fell
        # between a tied value and the next, the tied rows' deviations are
        # all that gap, which the nonzero search cannot tell from spread: a
        # scale of 1e-60 on randhie's coinsurance column).
        some = pairs[range_subset(pairs.shape[0], rng)]
        scales, top = rescaled_top(
            lambda sub, name, **case: search(name, np.abs(some), sub, **case)
        )
    return CoarseRange(center, scales, bound, top)


def top_eigenvalue(pairs, plan, rng, name="range_scale", scales=None, frame=None):
    """A private bound on the largest eigenvalue of ``S^-1 C S^-1`` from the
    norms of the pairs ``S^-1 z`` (S = diag(scales), the identity by default;
    with ``frame``, a public or released matrix P, of ``P C P^T`` from the
    norms of ``P z``: the same argument).

    Releases ``name``: the median M of ``||S^-1 z||`` over at most RANGE_ROWS
    pairs ``z = x/2 - x'/2`` drawn independently of the data, by
    :func:`one_column_quantile` (replacing one row changes one pair, hence one
    norm: each count moves by at most 1 whatever d is; S is released). For
    Gaussian rows ``S^-1 z ~ N(0, B / 2)``, ``B = S^-1 C S^-1``, and
    ``||S^-1 z||^2 >= lambda_1 g^2 / 2`` (g the coordinate along B's top
    eigenvector), so ``1/2 = P(||S^-1 z||^2 <= M^2) <= P(g^2 <= 2 M^2 /
    lambda_1)``, hence ``lambda_1 <= 2 M^2 / median(chi2_1)`` (4.4 M^2) for
    every spectrum; for a flat one it is about 2.2 d lambda_1. The frame then
    starts at ``S^-1 / sqrt(top)`` (:func:`pairs_frame`). Before, the start
    bounded lambda_1 by its worst case, 4 d times the largest scale squared
    (the one-scale fallback took the coordinates' maximum as that scale, 60 d
    lambda_1 at d = 50, and the covariance steps did not recover at n =
    1,000: covariance error 4.5 times the sample covariance's, 0.6 now). A
    utility argument: the privacy of the fit does not depend on it. Zero (all
    pairs tied) gives 1; the bound is kept within float64.
    """
    # In memory (at most RANGE_ROWS pairs), so that the rescaling runs here,
    # under this errstate: on lazy Dask pairs it ran in the workers, where a
    # pair beyond the released scales' range warned 'overflow' (a warning
    # that depends on the rows, after the spend).
    some = np.asarray(pairs[range_subset(pairs.shape[0], rng)])
    with np.errstate(all="ignore"):
        if scales is not None:
            some = some / scales
        if frame is not None:
            some = some @ frame.T
    norms = row_norms(some, 0.0, far=True)
    found = one_column_quantile(name, norms, plan, rng, columns=1)
    with np.errstate(over="ignore"):
        top = 2.0 * found * found / CHI2_1_MEDIAN
    if not top > 0.0:
        return 1.0
    return min(top, float(np.finfo(np.float64).max))


def largest_scale(pairs, plan, rng):
    """A private typical size of the pairs' largest coordinate (``range_scale``).

    The median over pairs of ``max_j |z_j|`` (z = x/2 - x'/2), by a
    one-column :class:`~dpgauss.mechanisms._range.QuantileSearch` on at most
    50,000 pairs drawn independently of the data: one count per step, so
    its noise does not grow with d (a search per coordinate has sensitivity
    sqrt(d) and goes astray at d = 1,024, n = 10^4). It tops the window of
    :func:`~dpgauss.mean._mean.log_scales` of the ``plan`` method
    (``max_j |z_j|`` is at least every ``|z_j|``, the safe side). Zero (all
    pairs tied) gives 1.
    """
    some = pairs[range_subset(pairs.shape[0], rng)]
    tops = np.max(np.abs(some), axis=1)
    found = one_column_quantile("range_scale", tops, plan, rng, columns=1)
    return found if 0.0 < found < math.inf else 1.0


def one_column_quantile(name, values, plan, rng, **case):
    """Release ``name`` of ``plan``: the private quantile of one value per row.

    A one-column :class:`~dpgauss.mechanisms._range.QuantileSearch` (its
    quantile set by the release's factory; ``case`` is passed to it):
    replacing one row changes one value, so each count moves by at most 1
    whatever d is. The searches for a bound on the data's norms, scale or
    spread (here) and for the winsorized aggregate's radius
    (:mod:`dpgauss.releases._winsorized`) are all this one release.
    """
    search = plan.calibrate(name, **case)
    return float(search.release(np.asarray(values)[:, None], rng)[0])


def norm_bound(X, plan, rng):
    """A private bound on ``||mu||`` from the median of the rows' norms.

    One column, the norms ``||x_i||`` of at most RANGE_ROWS rows drawn
    independently of the data, searched by
    :class:`~dpgauss.mechanisms._range.QuantileSearch` as ``range_location``:
    replacing one row changes one norm, so each count moves by at most 1
    whatever d is (the d coordinate medians have sensitivity sqrt(d) and go
    astray first when n is small). Each norm is a function of its row alone,
    so rounding cannot break this. The released median R bounds the mean
    loosely: if ``||mu|| > 2 R``, at least a third of the rows lie within
    ``||mu|| / 2`` of 0, hence at least ``||mu|| / 2`` from mu, which for a
    Gaussian means ``||mu||`` is at most about twice the rows' typical
    deviation, itself at most about R; NORM_MARGIN R covers both cases
    (a loose bound only adds mean steps, whose radii shrink geometrically).
    This is a utility argument: the privacy of the fit does not depend on it.
    """
    some = np.asarray(X[range_subset(X.shape[0], rng)])
    norms = row_norms(some, 0.0, far=True)
    found = one_column_quantile("range_location", norms, plan, rng, columns=1)
    with np.errstate(over="ignore"):
        bound = NORM_MARGIN * found
    return bound if bound > 0.0 else 1.0


class Stages:
    """One planned release made of sub-releases: a nested plan.

    The outer plan charges ``cost`` once; the sub-releases (``entries``, whose
    costs compose to at most ``cost``) are calibrated from :attr:`plan` and
    :meth:`finish` checks that each drew its noise exactly once. A fit may
    choose the entries from public values and earlier releases (the number of
    mean steps from n and a released radius): their costs always compose to
    at most ``cost``, so by adaptive composition with a fixed total (a privacy
    filter: Rogers et al. 2016 for pure DP, Feldman and Zrnic 2021 for Renyi
    DP at every order, hence zCDP) the whole costs ``cost`` whatever was
    chosen.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The planned cost.
    entries : list of Release
        The sub-releases, each with the factory of its mechanism (the check
        before the spend builds them through :meth:`parts`).

    Attributes
    ----------
    cost : ZCDP or PureDP
        As given.
    plan : ReleasePlan
        The sub-releases' plan.
    draws : int
        1 once :meth:`finish` has run.
    """

    def __init__(self, cost, entries):
        self.cost = cost
        self.plan = ReleasePlan(cost, entries)
        self.draws = 0

    def parts(self):
        """Every sub-release's mechanism at each of its public cases, built by
        its own factory, for the check before the spend
        (:func:`~dpgauss.mechanisms._checks.check_noise_scale`).

        Returns
        -------
        list of (object, int, bool)
            ``(mechanism, size, bounded)`` triples; none of them draws.
            Sub-releases that share a factory, a cost and a case (the equal
            early steps of a CoinPress split) give one.
        """
        parts = {}
        for release in self.plan.releases():
            for case in release.cases:
                key = build_key(release, case)
                if key not in parts:
                    parts[key] = (release.build(**case), release.size, release.bounded)
        return list(parts.values())

    def finish(self):
        """Check the sub-releases and count the release as drawn."""
        self.plan.finish()
        self.draws += 1


def pair_scale(medians):
    """Per-coordinate scales from the private medians of the nonzero
    ``|x/2 - x'/2|`` (or ``|x - m|``).

    ``median / HALF_PAIR_MEDIAN`` estimates sigma for Gaussian data (which
    has no ties). For tied columns (counts, indicators, zero-inflated values:
    on randhie 10% to 97% of pairs agree per column) the median of the
    nonzero deviations is the spread of the values that differ, at least the
    column's sd for an indicator and about it for counts: the safe side (a
    scale too large costs that coordinate some noise; one too small made the
    rescaled pairs' norms, hence ``top``, 10^12 times too large and shrank
    every other coordinate's frame with it). A zero median (the search found
    fewer nonzero values than its noise: a column constant but for a few
    rows) takes the median of the positive scales (1 when none is positive),
    the typical column's, not a tiny one for the same reason. Every scale is
    kept in ``[2^-1000, 2^1000]`` and within ``2^200`` of the largest, so
    that the frame and its inverse stay finite (post-processing of released
    values).
    """
    scale = np.abs(np.asarray(medians, dtype=np.float64)) / HALF_PAIR_MEDIAN
    positive = scale[(scale > 0) & np.isfinite(scale)]
    typical = float(np.median(positive)) if positive.size else 1.0
    scale = np.where(scale > 0, scale, typical)
    scale = np.clip(scale, 2.0**-1000, 2.0**1000)
    # At most 2^200 between the largest and the smallest scale: the frame's
    # entries then stay within float64's range of each other (its inverse is
    # computed from the frame divided by its largest entry).
    return np.maximum(scale, float(scale.max()) * 2.0**-200)


def scaled_deviations(rows):
    """``(center, deviations / size, size)``: the rows' :func:`finite_mean`
    and their deviations from it divided by their largest magnitude ``size``
    (1 when that is 0 or not finite), so that products of them neither
    overflow nor underflow."""
    center = finite_mean(rows)
    with np.errstate(all="ignore"):
        deviations = rows - center
        size = float(np.max(np.abs(deviations)))
        size = size if 0.0 < size < math.inf else 1.0
        return center, deviations / size, size


def finite_mean(rows):
    """The rows' mean, averaged scaled where the plain sum overflows; finite."""
    with np.errstate(all="ignore"):
        center = np.mean(rows, axis=0)
        if not np.all(np.isfinite(center)):
            center = np.mean(rows / rows.shape[0], axis=0) * rows.shape[0]
    return np.where(np.isfinite(center), center, 0.0)
