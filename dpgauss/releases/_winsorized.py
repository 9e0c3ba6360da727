"""The winsorized aggregate: a private mean of k candidates with no bound on them.

Shared by :class:`~dpgauss.ensemble.SubsampleAggregate` (``aggregator=
"winsorized"``) and by :class:`~dpgauss.gaussian.PrivateGaussianEstimator`
(``initial_center="subsample"``). The candidates are k vectors of which
replacing one row of the data changes at most one (a group's statistic); a
candidate that is not finite counts as *failed*.

Three releases, each private for *any* k candidates:

1. ``center``: the coordinate-wise median c, a bound-free binary search over
   the float64 order (:class:`~dpgauss.mechanisms._range.QuantileSearch`);
   failed candidates enter it as fixed public points at the two ends of the
   float range in turn, so one change still moves one value;
2. ``radius`` (unless a public radius is given): ``RADIUS_FACTOR`` times the
   private ``RADIUS_QUANTILE`` quantile of the distances ``||Y_i - c||`` (a
   failed candidate's distance is 0), the same search on one column, clamped
   to ``[MIN_RADIUS, MAX_RADIUS]``;
3. ``mean``: ``c + (1/k) sum_i clip_R(Y_i - c) + Z``. A failed candidate
   contributes 0 (it is the center); a clipped difference lies in the ball of
   radius R in floating point (:func:`~dpgauss.utils._sums.clipped_sums`), so
   one change moves the mean by at most 2R/k plus the summation term, the
   sensitivity of :func:`~dpgauss.mechanisms._releases.mean_mechanism`.

By sequential composition the aggregate costs the sum of the three parts
(:func:`winsorized_entries`), whatever the candidates are. Each entry carries
the factory of its mechanism: the check before the spend builds it at its
worst public case (the mean at both ends of the radius range) and the release
builds it with the same factory at the values it uses (k, p, the radius).
"""

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, known
from dpgauss.mechanisms._checks import MAX_RADIUS, MIN_RADIUS
from dpgauss.mechanisms._range import QuantileSearch, range_failure
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.releases._range import one_column_quantile
from dpgauss.utils._sums import clipped_sums, n_partial_sums, row_norms

#: Fewest groups the winsorized aggregator runs with.
MIN_GROUPS = 4
#: Budget shares of the winsorized aggregator: median, radius, clipped mean.
WINSOR_SHARES = (0.2, 0.1, 0.7)
#: The radius is this multiple of this private quantile of the distances (the
#: median: its count is far from the ends, where a search with few groups and
#: noisy counts goes astray; 2.5 medians cover about 90% of Gaussian-like
#: candidates in any dimension).
RADIUS_QUANTILE, RADIUS_FACTOR = 0.5, 2.5
#: The searches stay within the candidates' range with probability at least
#: 1 - WINSOR_RISK with k_min groups or more (:func:`winsorized_min_groups`, a
#: union bound; measured on N(beta, 0.22^2) candidates, p = 5, 300 runs each:
#: at rho 0.024 (epsilon 1, delta 1e-6) 271 of 300 aggregates were more than 1
#: off at k = 400, 11 at k = 1000, none at 1200; k_min is 1510 there).
WINSOR_RISK = 0.01
_MAX_FLOAT = float(np.finfo(np.float64).max)


def winsorized_entries(total, auto_radius=True, *, k=None, p=None):
    """The plan entries ``center``, ``radius`` (when ``auto_radius``) and
    ``mean`` that split ``total`` by :data:`WINSOR_SHARES`.

    Each carries its factory (:func:`center_factory`, :func:`radius_factory`,
    :func:`mean_factory`) for ``k`` candidates of ``p`` entries (public; None
    when the plan is only priced, and then the release passes them).
    """
    kind = kind_of(total)
    if auto_radius:
        center, radius, mean = split_cost(total, WINSOR_SHARES)
    else:
        share = WINSOR_SHARES[0] / (WINSOR_SHARES[0] + WINSOR_SHARES[2])
        center, mean = split_cost(total, [share, 1.0 - share])
    entries = [Release("center", center, f"{kind}_quantile", center_factory(p))]
    if auto_radius:
        entries.append(Release("radius", radius, f"{kind}_quantile", radius_factory()))
    entries.append(
        Release(
            "mean",
            mean,
            kind,
            mean_factory(k, p),
            size=p or 1,
            cases=({"radius": MIN_RADIUS}, {"radius": MAX_RADIUS}),
        )
    )
    return entries


def center_factory(p=None):
    """The ``center`` release's factory: ``make(cost, p=p)``, the median search
    over the p columns of the candidates."""

    def make(cost, *, p=p):
        return QuantileSearch(cost, known(p, "p"))

    return make


def radius_factory():
    """The ``radius`` release's factory: ``make(cost)``, the search for the
    :data:`RADIUS_QUANTILE` quantile of the k distances (one column)."""

    def make(cost):
        return QuantileSearch(cost, 1, RADIUS_QUANTILE)

    return make


def mean_factory(k=None, p=None):
    """The ``mean`` release's factory: ``make(cost, k=k, p=p, radius=MAX_RADIUS,
    partials=None)``, the mean of k candidates of p entries clipped at
    ``radius`` whose sum adds ``partials`` chunk sums (None: the count of a
    plain pass over k rows), by :func:`~dpgauss.mechanisms._releases.mean_mechanism`.
    The default radius is the largest a search may return (the largest noise)."""

    def make(cost, *, k=k, p=p, radius=MAX_RADIUS, partials=None):
        return mean_mechanism(cost, known(k, "k"), known(p, "p"), radius, partials)

    return make


def winsorized_mean(Y, plan, rng, radius="auto"):
    """The private winsorized mean of the k candidates ``Y`` (rows).

    Parameters
    ----------
    Y : ndarray of shape (k, p)
        The candidates; a row that is not finite is a failed candidate.
    plan : ReleasePlan
        Holds the entries of :func:`winsorized_entries`.
    rng : numpy.random.Generator
        The fit's noise stream.
    radius : float or "auto", default="auto"
        A public clipping radius, or "auto" for the private one.

    Returns
    -------
    value : ndarray of shape (p,)
        The released aggregate.
    radius : float
        The clipping radius R (released or public).
    mechanism : additive mechanism
        The calibrated ``mean`` release (its noise scale is public).
    center : ndarray of shape (p,)
        The released median c.
    """
    k, p = Y.shape
    failed = ~np.all(np.isfinite(Y), axis=1)
    ends = np.where(np.arange(k) % 2 == 0, _MAX_FLOAT, -_MAX_FLOAT)
    Yq = np.where(failed[:, None], ends[:, None], Y)
    search = plan.calibrate("center", p=p)
    center = search.release(Yq, rng)
    if radius == "auto":
        # One distance per candidate (a failed one counts as the center), so
        # one change moves one value.
        dist = np.minimum(row_norms(Y, center), _MAX_FLOAT)
        found = one_column_quantile("radius", dist, plan, rng)
        radius = min(max(RADIUS_FACTOR * found, MIN_RADIUS), MAX_RADIUS)
    else:
        radius = float(radius)
    partials = n_partial_sums(Y)
    mech = plan.calibrate("mean", k=k, p=p, radius=radius, partials=partials)
    sum_y, _ = clipped_sums(Y, center, radius, with_outer=False)
    noisy = mech.randomise(sum_y / k, rng)
    # Post-processing: a median search gone astray sits near the largest
    # float, where adding the noise could overflow; the release stays finite.
    with np.errstate(over="ignore", invalid="ignore"):
        value = np.clip(np.nan_to_num(center + noisy), -_MAX_FLOAT, _MAX_FLOAT)
    return value, radius, mech, center


def winsorized_min_groups(plan, p):
    """k_min: the fewest groups with which the winsorized searches stay within the
    candidates' range with probability at least 1 - WINSOR_RISK.

    A step of a :class:`~dpgauss.mechanisms._range.QuantileSearch` whose
    midpoint lies outside the k candidates' range counts 0 or k against the
    target k / 2: it errs only if its noise exceeds k / 2, and such an error
    sends the search out of the range for good (to any float: 1e150 as well as
    1e-150), where the distances, the radius and the clipped mean's noise follow
    it. :func:`~dpgauss.mechanisms._range.range_failure` bounds the chance of any
    such error over the 64 steps and the p columns of the median search (and
    the one column of the radius search); k_min is the fewest k with the sum of
    the bounds at most WINSOR_RISK (they decrease in k). Public: the plan's
    costs and p. Failed candidates (placed at the ends of the float range)
    narrow the margin and are not counted.
    """
    searches = [(plan.cost("center"), int(p))]
    if "radius" in {release.name for release in plan.releases()}:
        searches.append((plan.cost("radius"), 1))

    def risky(k):
        risk = sum(
            range_failure(cost, k, cols, capped=False) for cost, cols in searches
        )
        return risk > WINSOR_RISK

    hi = MIN_GROUPS
    while risky(hi):
        hi *= 2
    lo = hi // 2  # risky, or below MIN_GROUPS
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if risky(mid) else (lo, mid)
    return max(hi, MIN_GROUPS)
