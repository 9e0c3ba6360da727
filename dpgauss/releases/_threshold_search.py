"""The clipping-threshold search: AboveThreshold over thresholds below a radius.

A helper module of the release layer (the fourth release of the
tail-sensitive covariance, :mod:`dpgauss.releases._adaptive`, Dong, Liang and
Yi 2022, Algorithm 3). Given rows clipped at a released radius r,
:func:`search_threshold` scans the thresholds ``tau_l = r 2^(-l/2)``,
l = 0..TAU_GRID-1 (:func:`tau_grid`), downward and returns the last one where
the clipping bias is still below the noise the final release would add
(:func:`predicted_noise`), so the covariance is released on rows clipped
where bias and noise balance. :func:`search_factory` is the factory the
planned search carries (:class:`~dpgauss.accounting._plan.Release`), with
which both the check before the spend and the fit build its AboveThreshold.

Privacy. Query l is ``n (gamma(tau_l) - Noise_l) / r^2`` (see
:func:`threshold_queries`): the data enter only through an exact fixed-point
sum of per-row terms in [0, 1], so replacing one row moves every query by at
most ``1 + 4u (n + max |c|)`` (the rounding of subtracting the public
offsets ``c_l = n Noise_l / r^2`` included), and every query in the same
direction (each row's term is non-decreasing in that row's norm at every
level). The queries are monotone, so the monotone AboveThreshold (query noise
``Lap(2D/eps)``, proof in :class:`~dpgauss.mechanisms.AboveThreshold`) is
eps-DP for the whole search. The radius, the offsets and where the grid ends
(:func:`search_floor`) are functions of public values and of values released
earlier (the radius, the trace): post-processing. The returned threshold is a
function of the index AboveThreshold releases.

The Gauss noise proxy scales with tau^2 (the authors' code used tau), and the
noise proxies are the expected-value formulas of
:mod:`dpgauss.releases._covariance` (the authors' code divided by an
unexplained 6).
"""

import math

import numpy as np

from dpgauss.mechanisms import AboveThreshold
from dpgauss.releases._covariance import predicted_errors
from dpgauss.utils._sums import fixed_point_bits, fixed_point_sums

__all__ = [
    "TAU_GRID",
    "WORST_SENSITIVITY",
    "clipped_levels",
    "predicted_noise",
    "queries_from_sums",
    "query_sensitivity",
    "search_factory",
    "search_floor",
    "search_levels",
    "search_threshold",
    "search_threshold_sums",
    "tau_grid",
    "threshold_queries",
]

TAU_GRID = 120  # thresholds radius * 2^(-l/2), l = 0..119 (down to 2^-60 r)

#: The query sensitivity D whose exact AboveThreshold run needs the largest
#: noise in grid units: the run rounds D onto a power-of-two grid g with D / g
#: in [2^20, 2^21) and uses ``ceil(D / g) + 1``, largest (2^21 + 1) for D just
#: below a power of two. The search's true D (at least 1, from
#: :func:`query_sensitivity`) is known only during the fit, so the check
#: before the spend builds this case: an epsilon it accepts is accepted by
#: every run.
WORST_SENSITIVITY = math.nextafter(2.0, 0.0)

_U = 2.0**-53


def query_sensitivity(n, offset):
    """The sensitivity of the search's queries on n rows whose public offsets
    are at most ``offset`` in magnitude: ``1 + 4u (n + offset)`` (twice the
    rounding bound of :func:`threshold_queries`)."""
    return 1.0 + 4.0 * _U * (n + offset)


def tau_grid(radius):
    """The candidate thresholds ``radius * 2^(-l/2)``, l = 0..TAU_GRID-1."""
    return radius * 2.0 ** (-np.arange(TAU_GRID, dtype=float) / 2.0)


def threshold_queries(norms, radius, noise, n):
    """The threshold search's queries and their sensitivity.

    Query l is ``n (gamma(tau_l) - Noise(tau_l)) / r^2`` where
    ``gamma(tau) = (1/n) sum (min(|y|, r)^2 - tau^2)_+`` bounds the Frobenius
    distance between the second moments clipped at r and at tau (DLY Lemma 9).
    Each row adds a term in [0, 1] to ``n gamma / r^2``: the sums are computed
    exactly in fixed point (each term an integer in [0, 2^k], so one row moves a
    sum by at most 2^k exactly); the scaling by 2^-k is exact; subtracting the
    public ``c_l = n Noise_l / r^2`` rounds once, by at most ``u |result|``, so
    two neighbours' queries differ by at most ``1 + 2u (n + max |c|)`` (the code
    uses twice that margin). They are
    monotone: one row's term at every level is a non-decreasing function of that
    row's norm (the fixed-point floor included), and the float subtraction of a
    public constant is non-decreasing in the exact sum, so replacing one row
    moves every query in the same direction (AboveThreshold ``monotone=True``).

    Returns
    -------
    values : ndarray of shape (TAU_GRID,)
        The queries.
    sensitivity : float
        Their sensitivity.
    """
    bits = fixed_point_bits(n)
    sums = clipped_levels(norms, radius, search_levels(radius), bits)
    return queries_from_sums(sums, bits, radius, noise, n)


def search_levels(radius):
    """The levels ``(tau_l / r)^2`` of the search's fixed-point sums."""
    return (tau_grid(radius) / radius) ** 2


def clipped_levels(norms, radius, levels, bits):
    """``fixed_point_sums(min(norm, r)^2 / r^2, levels, bits)`` (int64).

    Sums over rows of per-row integers, so a chunked pass
    (:func:`~dpgauss.utils._norm_stats.norm_statistics`) gives exactly the sums of
    the whole norm vector. With ``levels`` 0 the sum is the trace's.
    """
    r2 = radius * radius
    clipped = np.minimum(np.asarray(norms, dtype=np.float64), radius)
    return fixed_point_sums(clipped**2 / r2, levels, bits)


def queries_from_sums(sums, bits, radius, noise, n):
    """:func:`threshold_queries` from the exact sums at :func:`search_levels`."""
    r2 = radius * radius
    offsets = n * np.asarray(noise, dtype=np.float64) / r2
    values = np.asarray(sums).astype(np.float64) * 2.0**-bits - offsets
    sensitivity = query_sensitivity(n, float(np.max(np.abs(offsets))))
    return values, sensitivity


def search_floor(radius, noise, trace):
    """Index of the first tau where clipping bias surely exceeds the noise.

    ``gamma(tau) >= t - tau^2`` for ``t`` the mean squared norm clipped at r
    (each term ``(a - tau^2)_+ >= a - tau^2``), so at the first ``tau_l`` with
    ``tau_l^2 <= t - Noise_l`` the bias exceeds the noise whatever the rows:
    the search ends there. Below it, only the search's noise could make the
    queries fire, and at small n (queries of range about ``n t / r^2``, noise
    ``Lap(2/eps)``) it did, at thresholds clipping every row (the estimate fell
    to the zero matrix). ``trace`` is a released estimate (post-processing).
    Returns ``TAU_GRID - 1`` when no tau qualifies.
    """
    taus = tau_grid(radius)
    with np.errstate(all="ignore"):
        sure = taus * taus <= float(trace) - np.asarray(noise, dtype=np.float64)
    hits = np.flatnonzero(sure)
    return int(hits[0]) if hits.size else TAU_GRID - 1


def search_threshold(norms, radius, noise, n, make_svt, rng, trace=None):
    """AboveThreshold over tau = r 2^(-l/2): first tau where bias exceeds noise.

    Parameters
    ----------
    norms : ndarray of shape (n,)
        Row norms around the (released) center.
    radius : float
        The radius r (the first candidate).
    noise : ndarray of shape (TAU_GRID,)
        Predicted noise of the final release at each candidate (public given the
        private trace).
    n : int
        Rows.
    make_svt : callable
        ``make_svt(sensitivity)`` returns the calibrated AboveThreshold (threshold
        0).
    rng : numpy.random.Generator
        Source of noise.
    trace : float, default=None
        A released estimate of the mean squared clipped norm: the grid ends at
        :func:`search_floor` (the whole grid when None).

    Returns
    -------
    float
        The tau one grid step above the first query that fired (the last tau
        where bias < noise), or above the floor if none fired before it.
    """
    bits = fixed_point_bits(n)
    sums = clipped_levels(norms, radius, search_levels(radius), bits)
    return search_threshold_sums(sums, bits, radius, noise, n, make_svt, rng, trace)


def search_threshold_sums(sums, bits, radius, noise, n, make_svt, rng, trace=None):
    """:func:`search_threshold` from the exact fixed-point sums at
    :func:`search_levels` (``bits`` is ``fixed_point_bits(n)``), which a
    chunked pass computes without the norms."""
    taus = tau_grid(radius)
    floor = TAU_GRID - 1 if trace is None else search_floor(radius, noise, trace)
    values, sensitivity = queries_from_sums(sums, bits, radius, noise, n)
    # Query 0 (tau = r: no clipping bias, gamma = 0) is never truly positive,
    # and firing there returns r, as firing at query 1 does: it is not asked,
    # so noise alone cannot keep the radius there (at n = 150 it did in about
    # a third of the fits, a release twice as noisy as one step down).
    index = make_svt(sensitivity).first_above(values[1 : floor + 1], rng)
    index = floor if index is None else index + 1  # the floor counts as fired
    return float(taus[max(index - 1, 0)])


def predicted_noise(plan, n, d, tau, trace):
    """min(clipped Gauss, clipped Separate) predicted error at threshold ``tau``."""
    return min(predicted_errors(plan, n, d, tau, min(trace, tau * tau)))


def search_factory(final, n, d, radius):
    """The factory of the planned threshold search.

    ``make(cost, sensitivity=None, rows=n, radius=radius)`` is the monotone
    AboveThreshold (threshold 0) at the cost's epsilon (a pure cost) for
    queries of sensitivity ``sensitivity``; the fit passes the one
    :func:`threshold_queries` computed. Without it, the sensitivity is that
    of ``rows`` rows clipped at ``radius`` when the offset is the predicted
    noise at the full trace ``radius^2``, so building the factory at the
    clipping grid's corners refuses, before the spend, a prediction float64
    cannot hold (its offsets would make the sensitivity infinite).

    Parameters
    ----------
    final : ReleasePlan
        The plan of the final covariance release (its costs give the
        predicted noise, :func:`predicted_noise`).
    n, d : int
        Rows and features (n is None when the plan is only priced).
    radius : float
        The public bound ``data_norm``.
    """
    default = radius

    def make(cost, *, sensitivity=None, rows=n, radius=default):
        if sensitivity is None:
            r2 = radius * radius
            noise = predicted_noise(final, rows, d, radius, r2)
            sensitivity = query_sensitivity(rows, rows * noise / r2)
        return AboveThreshold(
            threshold=0.0,
            sensitivity=sensitivity,
            epsilon=cost.epsilon,
            monotone=True,
        )

    return make
