"""The private radius scan: AboveThreshold over a grid of radii below a public bound.

A helper module of the release layer (the first release of the tail-sensitive
covariance, :mod:`dpgauss.releases._adaptive`, Dong, Liang and Yi 2022,
Algorithm 3). :func:`private_radius` scans the radii ``data_norm * 2^(-k/2)``,
k = 0..RADIUS_GRID-1, downward, and returns one a thin tail of the row norms
exceeds, so a loose public bound ``data_norm`` costs little accuracy.
:func:`radius_mechanism` calibrates the scan's AboveThreshold and
:func:`scan_factory` is the factory a planned scan carries
(:class:`~dpgauss.accounting._plan.Release`), with which both the check
before the spend and the fit build it.

Privacy. The queries are the counts ``count(norm > r)`` of the row norms
around a public center (clipped at ``data_norm``), one per radius of the
public grid. Replacing one row moves each count by at most 1, whatever the
floating-point norms are (sensitivity 1, counts are exact integers), and
moves every count in the same direction (up for all radii if the new row's
norm is larger, down for all if smaller): the queries are monotone, so the
monotone AboveThreshold (query noise ``Lap(2/eps)``, proof in
:class:`~dpgauss.mechanisms.AboveThreshold`) is eps-DP for the whole scan,
however many radii it asks. The threshold :func:`scan_threshold` and the grid
depend on public values only (epsilon, n, ``data_norm``), and the returned
radius is a function of the index AboveThreshold releases (post-processing).
"""

import math

import numpy as np

from dpgauss.mechanisms import AboveThreshold

__all__ = [
    "RADIUS_BETA",
    "RADIUS_GRID",
    "STEP_BACK",
    "full_threshold",
    "private_radius",
    "radius_from_counts",
    "radius_grid",
    "radius_mechanism",
    "scan_counts",
    "scan_factory",
    "scan_threshold",
    "smallest_radius",
]

RADIUS_GRID = 80  # radii data_norm * 2^(-k/2), k = 0..79
#: The radius returned is this many grid steps (factor sqrt(2) each) above the
#: one where the scan stopped (the last radius judged to have fewer than T rows
#: outside). Two steps start the threshold search too high when d is small (its
#: queries are then mostly noise): measured 1.8x worse with a 100x loose bound.
STEP_BACK = 1
RADIUS_BETA = 0.1  # failure probability in the radius scan's threshold


def radius_grid(data_norm):
    """The scanned radii ``data_norm * 2^(-k/2)``, k = 0..RADIUS_GRID-1."""
    return data_norm * 2.0 ** (-np.arange(RADIUS_GRID) / 2.0)


def smallest_radius(data_norm):
    """The smallest radius a scan can return, ``data_norm * 2^-39.5`` (public)."""
    return float(data_norm) * 2.0 ** (-(RADIUS_GRID - 1) / 2.0)


def full_threshold(epsilon):
    """The scan's threshold when n allows: ``(2/eps) (log(K/beta) + 1)``.

    With monotone AboveThreshold (threshold and query noise both Lap(2/eps)),
    one query of count 0 fires with probability ``P[L - L' >= T] = (1/2)(1 +
    T eps/4) e^{-T eps/2}``, at most ``0.9 beta / K`` at this T, so a scan of K
    radii above every norm (however loose ``data_norm`` is) stops early with
    probability below beta. DLY's ``(4/eps) log(K/beta)`` was for Lap(4/eps)
    query noise.
    """
    return (2.0 / epsilon) * (math.log(RADIUS_GRID / RADIUS_BETA) + 1.0)


def scan_threshold(epsilon, n):
    """The radius scan's count threshold T, reachable with ``n`` rows.

    :func:`full_threshold`, capped at n / 2. With few rows the full T may
    exceed n (DLY's was 178 at rho = 0.1 and n = 150), and then the scan could
    only stop by noise, far below every norm (the radius collapsed to 1e-11).
    Capped, the scan stops, with high probability, before the radius that half
    the rows exceed (one grid step back keeps most of them inside). The price
    is a higher chance of stopping early, at a radius too large, which costs
    accuracy only. T depends on public values only.
    """
    return min(full_threshold(epsilon), 0.5 * n)


def radius_mechanism(epsilon, n):
    """The radius scan's AboveThreshold on counts (threshold :func:`scan_threshold`).

    The counts ``count(norm > r)`` are monotone queries: replacing one row moves
    every count by the same sign (up for all radii if the new row's norm is
    larger, down for all if smaller), so the queries' noise is ``Lap(2/eps)``
    (``monotone=True``), half the general one.
    """
    return AboveThreshold(
        threshold=scan_threshold(epsilon, n),
        sensitivity=1.0,
        epsilon=epsilon,
        monotone=True,
    )


def private_radius(norms, data_norm, svt, rng):
    """Privately find a radius that only a thin tail of the norms exceeds.

    Scans the radii ``data_norm * 2^(-k/2)`` downward with AboveThreshold on
    ``count(norm > r)`` (sensitivity 1: one row moves one count, whatever the
    floating-point norms are) and returns the radius ``STEP_BACK`` grid steps
    above the one where the count was judged to exceed the threshold; the about
    T rows beyond the result are a far tail that the threshold search would clip
    anyway.

    Parameters
    ----------
    norms : ndarray of shape (n,)
        Row norms around the public center.
    data_norm : float
        Public upper bound, the start of the scan.
    svt : AboveThreshold
        The calibrated scan (see :func:`radius_mechanism`).
    rng : numpy.random.Generator
        Source of noise.

    Returns
    -------
    float
        The radius.
    """
    return radius_from_counts(scan_counts(norms, data_norm), data_norm, svt, rng)


def scan_counts(norms, data_norm):
    """The scan's queries on ``norms``: ``count(min(norm, data_norm) > r)`` at
    every radius r of :func:`radius_grid` (int64).

    A sum over rows of per-row indicators, so the counts of a chunked pass
    (:func:`~dpgauss.utils._norm_stats.norm_statistics`) add up to exactly the
    counts of the whole norm vector. No sort of the norms: each norm goes to
    the bucket of the radii below it (a search among the 80 radii, sorted),
    and the count above radius r is the number of norms in the buckets above
    r's. Counts are integers, so this exact computation gives the very
    counts a sort of the norms gave (the sensitivity 1 of each count is
    a property of the indicators, not of how they are counted); a NaN norm
    counts as above every radius in both, as NaN sorts last.
    """
    radii = radius_grid(data_norm)
    clipped = np.minimum(np.asarray(norms, dtype=np.float64), data_norm)
    ascending = np.sort(radii)
    below = np.searchsorted(ascending, clipped, side="left")  # #{radii < norm}
    hist = np.bincount(below, minlength=radii.size + 1)
    above = np.cumsum(hist[::-1])[::-1]  # above[i]: norms with > i radii below
    # norm > r iff more radii than those below r's first copy lie below it.
    return above[np.searchsorted(ascending, radii, side="left") + 1].astype(np.int64)


def radius_from_counts(counts, data_norm, svt, rng):
    """:func:`private_radius` from the scan's counts (:func:`scan_counts`)."""
    radii = radius_grid(data_norm)
    # The first radius is data_norm, which no clipped norm exceeds (its count
    # is 0), and firing there or at the next radius returns the same value:
    # it is not asked, so noise alone cannot stop the scan there.
    index = svt.first_above(np.asarray(counts)[1:].astype(float), rng)
    if index is None:  # never judged above T: no evidence against the bound
        return float(data_norm)
    return float(radii[max(index + 1 - STEP_BACK, 0)])


def scan_factory(rows):
    """The factory of a planned radius scan of ``rows`` norms.

    ``make(cost)`` is :func:`radius_mechanism` at the cost's epsilon (a pure
    cost) for ``rows`` rows, the scan's only public case: the fit scans
    exactly those rows. Its construction refuses an epsilon too small for the
    exact run, before the spend when the plan is checked.
    """

    def make(cost):
        return radius_mechanism(cost.epsilon, rows)

    return make
