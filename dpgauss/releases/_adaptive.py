"""The releases of AdaptiveCov (Dong, Liang and Yi 2022, Algorithm 3), shared.

A helper module, not an estimator module: the plan, the calibration check and
the releases of :class:`~dpgauss.covariance.TailSensitiveCovariance` live here,
so that every estimator built on the tail-sensitive covariance release
(:class:`~dpgauss.decomposition.PrivatePCA` and
:class:`~dpgauss.preprocessing.PrivateWhitener` with ``method="tail"``) makes
exactly the same releases, with the same sensitivities, the same plan and the
same post-processing, instead of a copy of them:

1. the radius scans (:func:`private_radius`: AboveThreshold on counts of norms
   beyond each radius ``data_norm * 2^(-k/2)``, sensitivity 1, monotone);
2. with ``center=True``, the mean of the rows clipped to the radius around the
   public location (:func:`~dpgauss.releases._center.release_mean`);
3. the trace of the rows (or the pair differences) clipped at their radius
   (:func:`~dpgauss.releases._center.release_trace`);
4. the threshold search (:func:`search_threshold`: AboveThreshold on
   ``m (gamma(tau) - Noise(tau)) / r^2``, sensitivity 1 plus the rounding,
   monotone);
5. the final GaussCov or SeparateCov release on the rows clipped at the chosen
   threshold (:func:`~dpgauss.releases._covariance.release_covariance`).

:func:`adaptive_plan` builds the plan, :func:`check_adaptive_calibration`
refuses a noise scale float64 cannot hold before any spend, and
:func:`release_adaptive` makes the releases and returns the released spectrum
(:class:`AdaptiveRelease`). The privacy statement is in
:class:`~dpgauss.covariance.TailSensitiveCovariance`'s Notes.

Fixes the authors' code: the Gauss noise proxy scales with tau^2 (not tau)
inside the search, the final choice is evaluated at the chosen tau (not tau/2),
and the noise proxies are explicit expected-value formulas (see
:mod:`dpgauss.releases._covariance`) instead of an unexplained /6.

Every pass over the data works on offsets from the center (rows may lie far
outside the ball); both searches' queries are exact integer sums in fixed point.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpgauss.accounting import PureDP, split_cost
from dpgauss.accounting._costs import as_pure
from dpgauss.accounting._plan import Choice, Release, ReleasePlan, dominates
from dpgauss.mechanisms import AboveThreshold
from dpgauss.mechanisms._checks import (
    calibration_error,
    check_noise_scale,
    check_radius,
)
from dpgauss.mechanisms._releases import mean_mechanism, sum_mechanism
from dpgauss.releases._center import (
    mean_entries,
    release_mean,
    release_trace,
    trace_release,
)
from dpgauss.releases._covariance import (
    choose_method,
    covariance_entries,
    mechanism_factory,
    predicted_errors,
    release_covariance,
)
from dpgauss.utils._sums import (
    CHUNK_ROWS,
    clipped_sums,
    fixed_point_bits,
    fixed_point_sums,
    is_dask_array,
    n_partial_sums,
    row_norms,
)

__all__ = [
    "DEFAULT_SPLIT",
    "RADIUS_BETA",
    "RADIUS_GRID",
    "TAU_GRID",
    "AdaptiveRelease",
    "PairDifferences",
    "adaptive_plan",
    "check_adaptive_calibration",
    "full_threshold",
    "pair_indices",
    "predicted_noise",
    "private_radius",
    "radius_mechanism",
    "release_adaptive",
    "scan_threshold",
    "search_floor",
    "search_threshold",
    "single_scan_cost",
    "tau_grid",
    "threshold_queries",
    "two_scans",
]

#: Default shares of the (non-mean) cost: radius, trace, threshold search, final.
DEFAULT_SPLIT = (1 / 8, 1 / 32, 1 / 8, 23 / 32)
RADIUS_GRID = 80  # radii data_norm * 2^(-k/2), k = 0..79
#: The radius returned is this many grid steps (factor sqrt(2) each) above the
#: one where the scan stopped (the last radius judged to have fewer than T rows
#: outside). Two steps start the threshold search too high when d is small (its
#: queries are then mostly noise): measured 1.8x worse with a 100x loose bound.
STEP_BACK = 1
#: With one scan, the pairs are taken only when the mean's error exceeds this
#: many times the covariance's scale from the pairs' trace, when that trace is
#: precise (see ``_center_or_pair``).
UNTRUSTED_MARGIN = 4.0
#: With one scan and an imprecise pairs' trace (noise sd above PRECISE times
#: the square of their radius, a public ratio), the pairs' radius is suspect
#: when the trace, less one noise sd, exceeds SATURATED of that square.
PRECISE = 0.25
SATURATED = 0.5
TAU_GRID = 120  # thresholds radius * 2^(-l/2), l = 0..119 (down to 2^-60 r)
RADIUS_BETA = 0.1  # failure probability in the radius scan's threshold

_U = 2.0**-53


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
    radii = data_norm * 2.0 ** (-np.arange(RADIUS_GRID) / 2.0)
    ordered = np.sort(np.minimum(norms, data_norm))
    counts = ordered.size - np.searchsorted(ordered, radii, side="right")
    # The first radius is data_norm, which no clipped norm exceeds (its count
    # is 0), and firing there or at the next radius returns the same value:
    # it is not asked, so noise alone cannot stop the scan there.
    index = svt.first_above(counts[1:].astype(float), rng)
    if index is None:  # never judged above T: no evidence against the bound
        return float(data_norm)
    return float(radii[max(index + 1 - STEP_BACK, 0)])


def pair_indices(n, rng):
    """A random pairing of the rows: ``first[i]`` with ``second[i]``, n // 2 pairs.

    Drawn from the fit's generator, independently of the data, so that pairs mix
    rows whatever their order (sorted data paired in order would hide between-
    group covariance). With n odd one row is in no pair.
    """
    order = rng.permutation(n)
    m = n // 2
    return order[:m], order[m : 2 * m]


class PairDifferences:
    """The rows ``z_i = x_first[i] / 2 - x_second[i] / 2`` of a pairing.

    ``E[z z^T] = C / 2`` for independent rows with covariance C, whatever their
    mean, so the covariance needs no center. Replacing one row of X changes at
    most one z (the pairing is public, drawn independently of the data), so a
    release on the m = n // 2 rows z with sensitivities for m rows is private
    with respect to X. Halves, not a difference then a scaling: every z is
    finite for finite rows (|x/2 - x'/2| <= max float).
    """

    def __init__(self, X, first, second):
        self.X, self.first, self.second = X, first, second

    def _block(self, start, stop):
        """z for the pairs ``start:stop`` (numpy input: an array)."""
        X = self.X
        a, b = X[self.first[start:stop]], X[self.second[start:stop]]
        return _halves(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))

    def norms(self):
        """The norms of every z, computed in blocks (z is not stored)."""
        if is_dask_array(self.X):
            return row_norms(self.rows(), np.zeros(self.X.shape[1]))
        zero = np.zeros(self.X.shape[1])
        m = self.first.size
        return np.concatenate(
            [np.zeros(0)]
            + [
                row_norms(self._block(s, s + CHUNK_ROWS), zero)
                for s in range(0, m, CHUNK_ROWS)
            ]
        )

    def rows(self):
        """The m rows z (an array; a lazy dask array for dask input)."""
        if is_dask_array(self.X):
            X = self.X
            return _halves(
                X[self.first].astype(np.float64), X[self.second].astype(np.float64)
            )
        return self._block(0, self.first.size)


def _halves(a, b):
    """``a/2 - b/2``: finite for finite rows (a difference could overflow)."""
    with np.errstate(all="ignore"):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return 0.5 * a - 0.5 * b  # dask: lazily
        # In place on the gathered copies (the same values as 0.5 a - 0.5 b).
        a = np.multiply(a, 0.5, out=a) if a.flags.writeable else 0.5 * a
        b = np.multiply(b, 0.5, out=b) if b.flags.writeable else 0.5 * b
        return np.subtract(a, b, out=a)


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
    r2 = radius * radius
    taus = tau_grid(radius)
    bits = fixed_point_bits(n)
    sums = fixed_point_sums(
        np.minimum(norms, radius) ** 2 / r2, (taus / radius) ** 2, bits
    )
    offsets = n * np.asarray(noise, dtype=np.float64) / r2
    values = sums.astype(np.float64) * 2.0**-bits - offsets
    sensitivity = 1.0 + 4.0 * _U * (n + float(np.max(np.abs(offsets))))
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
    taus = tau_grid(radius)
    floor = TAU_GRID - 1 if trace is None else search_floor(radius, noise, trace)
    values, sensitivity = threshold_queries(norms, radius, noise, n)
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
        GaussCov-or-SeparateCov release.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._adaptive import adaptive_plan
    >>> [r.name for r in adaptive_plan(ZCDP(1.0), 3, False).releases()][:3]
    ['radius', 'trace', 'clip_threshold']
    """
    mean, rest = mean_entries(total, center, n, d, data_norm)
    radius, trace, search, final = split_cost(rest, tuple(split))
    entries = [Release("radius", as_pure(radius), "above_threshold")]
    if center:
        # The radius share pays either two scans, around ``location`` (for the
        # mean) and of the pair differences (for the covariance), or, when n
        # is too small for two, one scan of the pairs. The choice depends on
        # n and the costs only (public); the ledger charges the option that
        # dominates (see Choice): the two scans under zCDP, the one scan under
        # pure DP, where both cost the same epsilon.
        halves = [as_pure(c) for c in split_cost(radius, [0.5, 0.5])]
        single = single_scan_cost(halves, isinstance(total, PureDP))
        entries = [
            Choice(
                "scans",
                {
                    "both": (
                        Release("radius", halves[0], "above_threshold"),
                        Release("spread_radius", halves[1], "above_threshold"),
                    ),
                    "pairs": (Release("pair_radius", single, "above_threshold"),),
                },
            )
        ]
    entries += [
        *mean,
        trace_release(trace, n),
        Release("clip_threshold", as_pure(search), "above_threshold"),
        *covariance_entries("auto", final, d, n, data_norm),
    ]
    return ReleasePlan(total, entries)


def check_adaptive_calibration(owner, plan, n, d, data_norm, center):
    """Build every mechanism an AdaptiveCov fit could use, before any spend.

    At both ends of the clipping grid (``data_norm`` and ``data_norm *
    2^-99.5``) and for both row counts (n, and n // 2 pairs with
    ``center=True``). Raises the clear error of
    :func:`~dpgauss.mechanisms._checks.calibration_error`, naming ``owner``,
    when float64 cannot hold a noise scale.
    """
    bound = float(data_norm)
    smallest = bound * 2.0 ** (-(RADIUS_GRID - 1) / 2.0 - (TAU_GRID - 1) / 2.0)
    # With center=True the covariance may be estimated from the n // 2 pairs.
    counts = (n, n // 2) if center else (n,)
    try:
        check_radius(bound)
        check_radius(smallest, "the smallest clipping threshold data_norm * 2^-99.5")
        radius_mechanism(plan.cost("radius").epsilon, n)
        if center:
            radius_mechanism(plan.cost("spread_radius").epsilon, n // 2)
            radius_mechanism(plan.cost("pair_radius").epsilon, n // 2)
            for r in (bound, bound * 2.0 ** (-(RADIUS_GRID - 1) / 2.0)):
                mech = mean_mechanism(plan.cost("mean"), n, d, r, n)
                check_noise_scale(mech, size=d)
        for rows in counts:
            unit = float(2 ** fixed_point_bits(rows))
            mech = sum_mechanism(plan.cost("trace"), unit)
            check_noise_scale(mech, bounded=False)
            for tau in (bound, smallest):
                make = mechanism_factory(rows, d, tau, rows)
                for name in ("second_moment", "eigenvalues", "eigenvectors"):
                    check_noise_scale(make(name)(plan.cost(name)), size=d)
                noise = predicted_noise(plan, rows, d, tau, tau * tau)
                if not math.isfinite(rows * noise / tau**2):
                    raise ValueError(f"predicted noise {noise!r} at tau={tau!r}")
        AboveThreshold(
            threshold=0.0,
            sensitivity=1.0,
            epsilon=plan.cost("clip_threshold").epsilon,
        )
    except (ValueError, OverflowError, ZeroDivisionError) as exc:
        raise calibration_error(
            owner, "a noise scale or the clipping grid", exc
        ) from exc


@dataclass(frozen=True)
class AdaptiveRelease:
    """What an AdaptiveCov fit released, as a spectrum (post-processing).

    Every value is in the units of the covariance (for pairs, already doubled:
    ``E[z z^T] = C / 2``).

    Attributes
    ----------
    center : ndarray of shape (d,)
        The released (shrunk, projected) mean, or the public location.
    values : ndarray of shape (d,)
        The released eigenvalues (>= 0).
    vectors : ndarray of shape (d, d)
        The released eigenvectors, one per column, paired with ``values``.
    noise_sd : float
        The standard deviation of one noise entry of the final release.
    cap : float
        The bound on the trace the release was projected under (the square of
        the clipping threshold).
    method : str
        ``"gauss"`` or ``"separate"``: the final mechanism.
    radius : float
        The privately found radius (for pairs, of ``(x - x') / sqrt(2)``).
    clip_threshold : float
        The privately chosen clipping threshold (at most ``radius``).
    centering : str
        ``"mean"``, ``"pairs"`` or ``"none"``.
    """

    center: np.ndarray
    values: np.ndarray
    vectors: np.ndarray
    noise_sd: float
    cap: float
    method: str
    radius: float
    clip_threshold: float
    centering: str


def release_adaptive(X, location, data_norm, center, plan, rng):
    """Make the releases of an AdaptiveCov fit of ``X`` (the plan already charged).

    Parameters
    ----------
    X : array-like or dask array of shape (n, d)
        Validated rows.
    location : ndarray of shape (d,)
        The public center of the radius scan and of the mean's clipping ball.
    data_norm : float
        The public bound, the start of the radius scan.
    center : bool
        As in :func:`adaptive_plan` (the plan must be built with the same).
    plan : ReleasePlan
        The plan of :func:`adaptive_plan`; each release draws its cost from it.
    rng : numpy.random.Generator
        The fit's source of noise.

    Returns
    -------
    AdaptiveRelease
        The released spectrum and the privately found radius and threshold.
    """
    n, d = X.shape
    data_norm = float(data_norm)
    if center:
        path = _center_or_pair(X, location, data_norm, plan, rng)
    else:
        norms = row_norms(X, location)
        radius = _scan(plan, "radius", norms, n, data_norm, rng)
        clipped, *released = _trace(norms, radius, plan, rng)
        path = _Path(X, location, location, n, radius, clipped, *released)
    m, radius = path.m, path.radius
    noise = [predicted_noise(plan, m, d, t, path.trace) for t in tau_grid(radius)]

    def make_svt(sensitivity):
        return plan.calibrate(
            "clip_threshold",
            lambda c: AboveThreshold(
                threshold=0.0,
                sensitivity=sensitivity,
                epsilon=c.epsilon,
                monotone=True,
            ),
        )

    tau = search_threshold(
        path.clipped, radius, noise, m, make_svt, rng, trace=path.lower
    )
    method = choose_method(plan, m, d, tau, min(path.trace, tau * tau))
    plan.choose("covariance", method)
    M = clipped_sums(path.rows, path.local, tau)[1] / m
    case = {"rows": m, "radius": tau, "n_partials": n_partial_sums(path.rows)}
    cap = min(path.upper, tau * tau)
    # The released trace is of the rows clipped at the radius: it is the
    # trace of M only when tau is the radius (otherwise it enters the cap).
    same = path.released if tau == radius else None
    values, vectors, sd = release_covariance(
        method, M, m, plan, case, rng, cap, trace=same, shift=path.shift
    )
    # Pairs: E[z z^T] = C / 2 for z = x/2 - x'/2, so C is twice the release
    # (post-processing); thresholds are reported for (x - x') / sqrt(2),
    # whose second moment is C.
    scale = path.scale
    return AdaptiveRelease(
        center=path.center,
        values=scale * values,
        vectors=vectors,
        noise_sd=scale * sd,
        cap=scale * tau * tau,
        method=method,
        radius=math.sqrt(scale) * radius,
        clip_threshold=math.sqrt(scale) * tau,
        centering=path.centering,
    )


def _scan(plan, name, norms, n, data_norm, rng):
    """The radius scan ``name`` of the plan on ``norms`` (n rows)."""
    svt = plan.calibrate(name, lambda c: radius_mechanism(c.epsilon, n))
    return private_radius(norms, data_norm, svt, rng)


def _trace(norms, radius, plan, rng):
    """Release the trace of the rows of ``norms`` clipped at ``radius``.

    Returns the clipped norms, the estimate, the upper bound and the public
    variance of the estimate (see
    :func:`~dpgauss.releases._center.release_trace`).
    """
    m = norms.shape[0]
    clipped = np.minimum(norms, radius)
    bits = fixed_point_bits(m)
    units = fixed_point_sums(clipped**2 / radius**2, np.zeros(1), bits)[0]
    return clipped, *release_trace(units, bits, m, radius, plan, rng)


def _center_or_pair(X, location, data_norm, plan, rng):
    """Scans, the mean, the pairs' trace, then around the mean or from pairs."""
    n, d = X.shape
    first, second = pair_indices(n, rng)
    pairs = PairDifferences(X, first, second)
    m = first.size
    pair_norms = pairs.norms()
    both = two_scans(plan, n)
    if both:
        plan.choose("scans", "both")
        radius = _scan(plan, "radius", row_norms(X, location), n, data_norm, rng)
        spread = _scan(plan, "spread_radius", pair_norms, m, data_norm, rng)
    else:
        plan.choose("scans", "pairs")
        radius = data_norm
        spread = _scan(plan, "pair_radius", pair_norms, m, data_norm, rng)
    raw, variance, offset, error = release_mean(X, location, radius, plan, rng)
    center = location + offset
    clipped, t_z, upper_z, var_z = _trace(pair_norms, spread, plan, rng)
    # Post-processing of released values from here. The mean's error is a
    # rank-one term of Frobenius norm ``error`` (its squared norm, estimated
    # by Stein's unbiased risk estimate) that no denoising removes,
    # independent of the covariance noise (the two add in quadrature); the
    # pairs double the noise. Predict both with the pairs' trace (tr C ~
    # 2 t_z), the centered rows at the radius the threshold search would
    # reach (||x - mu|| ~ sqrt(2) ||z||).
    trace_c = 2.0 * t_z
    reach = min(radius, math.sqrt(2.0) * spread)
    around = predicted_noise(plan, n, d, reach, min(trace_c, reach * reach))
    paired = 2.0 * predicted_noise(plan, m, d, spread, t_z)
    # With one scan (small n) its count threshold is within the noise of m:
    # the pairs' radius can fall far inside the data (at n = 150, two or
    # three grid steps in about one fit in fifteen), and then both
    # predictions above are made at a radius too small, the pairs' clipping
    # bias is in neither, and their trace understates tr C by the same
    # factor 2 to 8. The pairs are then taken only when the mean's error
    # also exceeds the covariance's scale (tr C / sqrt(d) <= ||C||_F, the
    # trace raised by half its noise sd), by UNTRUSTED_MARGIN when the
    # trace is precise (its noise sd at most PRECISE spread^2, public):
    # the far means the pairs are for put it 6 to 200 times above (wine 10
    # scales away, n = 178), a mean at ``location`` about 0.2 times (the
    # undershoots up to 7 times, iris: error 0.39 with margin 1 and 0.376
    # with 4, 100 fits). An imprecise trace (few rows, pure DP) shows an
    # undershoot only when, less one sd, it holds SATURATED of spread^2;
    # without that the pairs are trusted, and with it the margin is 1 (a
    # trace at the clip by noise alone shows nothing, and a margin kept a
    # released mean 19 away from the rows: 141 times the zero matrix's
    # error at n = 150, epsilon = 1, a bound 30 times the data).
    scale = 2.0 * (t_z + 0.5 * math.sqrt(var_z)) / math.sqrt(d)
    if math.sqrt(var_z) <= PRECISE * spread * spread:
        trusted = both or error > UNTRUSTED_MARGIN * scale
    else:
        saturated = t_z - math.sqrt(var_z) >= SATURATED * spread * spread
        trusted = both or not saturated or error > scale
    if trusted and math.hypot(around, error) > paired:
        return _Path(
            pairs.rows(), np.zeros(d), center, m, spread, clipped, t_z,
            upper_z, var_z, scale=2.0, centering="pairs",
        )  # fmt: skip
    # Around the mean: E||x - c||^2 = tr C + ||delta||^2 with delta = c - mu,
    # estimated by the shrunk mean's error, with the variance of 2 t_z (the
    # denoiser's released trace when the search keeps the radius: without
    # it a noise-dominated release was kept at the noise's own trace, 16
    # times the zero matrix's error on low-rank rows at n = 150).
    # ||raw - mu||^2 / variance is chi-square with d degrees of freedom (its
    # 0.999 quantile bounds it) and the shrinkage moved c by
    # ||raw - offset||; the pairs' trace stands in for the rows' own.
    moved = float(np.linalg.norm(raw - offset))
    delta_max = (math.sqrt(stats.chi2.ppf(0.999, d) * variance) + moved) ** 2
    r2 = radius * radius
    return _Path(
        X, center, center, n, radius,
        np.minimum(row_norms(X, center), radius),
        min(trace_c + error, r2), min(2.0 * upper_z + delta_max, r2), 4.0 * var_z,
        shift=error / d, centering="mean",
    )  # fmt: skip


@dataclass
class _Path:
    """The rows the trace, threshold search and final release run on."""

    rows: object
    local: np.ndarray  # the center the rows are clipped around
    center: np.ndarray  # the fitted location_
    m: int
    radius: float
    clipped: np.ndarray
    trace: float
    upper: float
    variance: float  # the variance of ``trace`` (a function of released values)
    scale: float = 1.0
    shift: float = 0.0
    centering: str = "none"

    @property
    def released(self):
        """(trace, variance) for the denoiser (when the search keeps the radius)."""
        return (self.trace, self.variance)

    @property
    def lower(self):
        """``trace`` less one noise sd, which ends the threshold search.

        See :func:`search_floor`. A trace too high ends the search above the
        right threshold (a release at a large noisy radius: the pairs of wine
        moved far, when the scan had not fired, scored 2.2 with the estimate
        itself); one too low leaves the noise-driven stops below it. One sd was
        the balance measured on the small datasets of
        ``benchmarks/bench_quality.py``.
        """
        return self.trace - math.sqrt(self.variance)
