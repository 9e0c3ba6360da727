"""The release plan of the tail-sensitive covariance (AdaptiveCov), with its factories.

A helper module of the release layer: :func:`adaptive_plan` lists the
releases of one AdaptiveCov fit (Dong, Liang and Yi 2022, Algorithm 3) with
their costs, each with the factory of its mechanism and the public cases the
check before the spend builds it at (:func:`adaptive_cases`), for
:class:`~dpgauss.covariance.TailSensitiveCovariance` and the estimators built
on its releases (:class:`~dpgauss.decomposition.PrivatePCA` and
:class:`~dpgauss.preprocessing.PrivateWhitener` with ``method="tail"``). The
releases themselves are made by :func:`~dpgauss.releases._adaptive.release_adaptive`.

Privacy. The plan is a function of public values only (the total, n, d,
``center``, the split and ``data_norm``), fixed before any row is read. The
shares of the cost are split once (``split_cost``): the mean
(``MEAN_SHARE`` with ``center``), then of the rest the radius scans, the
trace, the threshold search and the final release, so the releases compose
(sequentially) to at most the total. With ``center``, the radius share pays
either two scans (each half of it) or one scan of the pairs: a choice made
from n and the costs only (:func:`two_scans`), charged at the option that
costs at least as much as the other in every currency
(:func:`single_scan_cost` makes the one scan's cost dominated by the two
halves exactly, so the ledger's charge covers either); the final release is a
privately made choice between GaussCov and SeparateCov, charged the same way.
The scans and the search are pure eps-DP (AboveThreshold), charged as pure
costs (``eps^2/2`` under zCDP).
"""

import math
from dataclasses import replace

from dpgauss.accounting import PureDP, split_cost
from dpgauss.accounting._costs import as_pure
from dpgauss.accounting._plan import Choice, Release, ReleasePlan, dominates
from dpgauss.releases._center import mean_entries, trace_release
from dpgauss.releases._covariance import covariance_entries
from dpgauss.releases._radius import (
    RADIUS_GRID,
    full_threshold,
    scan_factory,
    scan_threshold,
    smallest_radius,
)
from dpgauss.releases._threshold_search import (
    TAU_GRID,
    WORST_SENSITIVITY,
    search_factory,
)
from dpgauss.utils._sums import fixed_point_bits

__all__ = [
    "DEFAULT_SPLIT",
    "adaptive_cases",
    "adaptive_plan",
    "single_scan_cost",
    "smallest_threshold",
    "two_scans",
]

#: Default shares of the (non-mean) cost: radius, trace, threshold search, final.
DEFAULT_SPLIT = (1 / 8, 1 / 32, 1 / 8, 23 / 32)


def single_scan_cost(halves, pure):
    """The one-scan option's cost, dominated exactly by the two halves (or equal).

    Pure DP: the halves' epsilons add up to it (the same pure cost). zCDP: the
    epsilon whose epsilon^2/2 is the halves' rho, rounded down until no
    component of its cost exceeds the halves' (``Choice`` compares exactly).
    """
    if pure:
        return PureDP(math.fsum(h.epsilon for h in halves))
    epsilon = math.sqrt(math.fsum(h.epsilon**2 for h in halves))
    while not dominates(halves, [PureDP(epsilon)]):
        epsilon = math.nextafter(epsilon, 0.0)
    return PureDP(epsilon)


def two_scans(plan, n):
    """Whether both halves of the radius share can scan with their full threshold.

    With center=True the radius share pays two scans (around the location, on
    n rows, and of the pairs, on n // 2) when neither needs :func:`scan_threshold`
    lowered; otherwise one scan of the pairs at the whole share. Public: n and
    the plan's costs.
    """
    m = n // 2
    for name, rows in (("radius", n), ("spread_radius", m)):
        eps = plan.cost(name).epsilon
        if scan_threshold(eps, rows) < full_threshold(eps):
            return False
    return True


def adaptive_plan(total, d, center, split=DEFAULT_SPLIT, n=None, data_norm=None):
    """The release plan of one AdaptiveCov fit (public values only).

    Parameters
    ----------
    total : ZCDP or PureDP
        The fit's cost.
    d : int
        Number of features.
    center : bool
        Release the mean (and choose between centering around it and pairs).
    split : tuple of 4 floats, default=DEFAULT_SPLIT
        Shares of the non-mean cost: radius scans, trace, threshold search,
        final release (validated by the caller).
    n : int, default=None
        Rows (None when the plan is only priced).
    data_norm : float, default=None
        The public bound, the largest radius the releases clip at.

    Returns
    -------
    ReleasePlan
        The scans (a choice between two scans and one when ``center``), the
        mean (``center``), the trace, the threshold search and the final
        GaussCov-or-SeparateCov release, each with the factory of its
        mechanism and, when n is given, every public case the fit may build
        it at (see :func:`adaptive_cases`).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._adaptive_plan import adaptive_plan
    >>> [r.name for r in adaptive_plan(ZCDP(1.0), 3, False).releases()][:3]
    ['radius', 'trace', 'clip_radius']
    """
    mean, rest = mean_entries(total, center, n, d, data_norm)
    radius, trace, searching, final = split_cost(rest, tuple(split))
    m = None if n is None else n // 2
    entries = [Release("radius", as_pure(radius), "above_threshold", scan_factory(n))]
    if center:
        # The radius share pays either two scans, around ``location`` (for the
        # mean) and of the pair differences (for the covariance), or, when n
        # is too small for two, one scan of the pairs. The choice depends on
        # n and the costs only (public); the ledger charges the option that
        # dominates (see Choice): the two scans under zCDP, the one scan under
        # pure DP, where both cost the same epsilon.
        halves = [as_pure(c) for c in split_cost(radius, [0.5, 0.5])]
        single = single_scan_cost(halves, isinstance(total, PureDP))
        around = Release("radius", halves[0], "above_threshold", scan_factory(n))
        spread = Release("spread_radius", halves[1], "above_threshold", scan_factory(m))
        pairs = Release("pair_radius", single, "above_threshold", scan_factory(m))
        entries = [Choice("scans", {"both": (around, spread), "pairs": (pairs,)})]
    covariance = covariance_entries("auto", final, d, n, data_norm)
    search = Release(
        "clip_radius",
        as_pure(searching),
        "above_threshold",
        search_factory(ReleasePlan(final, covariance), n, d, data_norm),
    )
    entries += [*mean, trace_release(trace, n), search, *covariance]
    if n is None:  # only priced: the factories are never built
        return ReleasePlan(total, entries)
    cases = adaptive_cases(n, data_norm, center)
    return ReleasePlan(total, [_with_cases(e, cases) for e in entries])


def smallest_threshold(data_norm):
    """The smallest clipping threshold a fit can reach (public).

    The smallest radius of the scan, ``data_norm * 2^-39.5``, times the
    search's smallest step, ``2^-59.5``.
    """
    exponent = -(RADIUS_GRID - 1) / 2.0 - (TAU_GRID - 1) / 2.0
    return float(data_norm) * 2.0**exponent


def adaptive_cases(n, data_norm, center):
    """The public cases each release's factory is checked at, by release name.

    The fit builds its releases at values it finds privately, on public
    grids, so the check before the spend builds them at the grids' ends:

    * the mean at the largest and the smallest radius of the scan;
    * the trace, the threshold search and the final release for both row
      counts (n and, with ``center``, the n // 2 pairs) and, for the last two,
      at both ends of the clipping grid (``data_norm`` and
      :func:`smallest_threshold`), each row its own chunk sum;
    * the threshold search also at :data:`WORST_SENSITIVITY`, its hardest
      calibration;
    * the scans at their one case (their threshold and rows are public).

    Returns
    -------
    dict of str to tuple of dict
        The ``cases`` of each release named (the others keep theirs).
    """
    bound = float(data_norm)
    counts = (n, n // 2) if center else (n,)
    corners = tuple(
        {"rows": rows, "radius": tau}
        for rows in counts
        for tau in (bound, smallest_threshold(bound))
    )
    final = tuple({**case, "n_partials": case["rows"]} for case in corners)
    return {
        "mean": ({}, {"radius": smallest_radius(bound)}),
        "trace": tuple({"bits": fixed_point_bits(rows)} for rows in counts),
        "clip_radius": (*corners, {"sensitivity": WORST_SENSITIVITY}),
        **dict.fromkeys(_FINAL, final),
    }


#: The releases of the final covariance release (either option).
_FINAL = ("second_moment", "eigenvalues", "eigenvectors")


def _with_cases(entry, cases):
    """``entry`` (a release or a choice) with the cases of its releases."""
    if isinstance(entry, Choice):
        options = {
            key: tuple(_with_cases(r, cases) for r in releases)
            for key, releases in entry.options.items()
        }
        return Choice(entry.name, options)
    if entry.name in cases:
        return replace(entry, cases=cases[entry.name])
    return entry
