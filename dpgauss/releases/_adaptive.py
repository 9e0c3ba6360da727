"""The releases of AdaptiveCov (Dong, Liang and Yi 2022, Algorithm 3), shared.

A helper module of the release layer: :func:`release_adaptive` makes the
releases of one fit of :class:`~dpgauss.covariance.TailSensitiveCovariance`
and returns the released spectrum (:class:`AdaptiveRelease`), so that every
estimator built on the tail-sensitive covariance release
(:class:`~dpgauss.decomposition.PrivatePCA` and
:class:`~dpgauss.preprocessing.PrivateWhitener` with ``method="tail"``) makes
exactly the same releases, with the same sensitivities, the same plan
(:func:`~dpgauss.releases._adaptive_plan.adaptive_plan`) and the same
post-processing, instead of a copy of them. In order:

1. the radius scans (:func:`~dpgauss.releases._radius.private_radius`):
   around the public location and, with ``center=True``, of the pair
   differences (:mod:`dpgauss.releases._pairs`), or of the pairs only when n
   is too small for two;
2. with ``center=True``, the mean of the rows clipped to the radius around the
   public location (:func:`~dpgauss.releases._center.release_mean`);
3. the trace of the rows (or the pair differences) clipped at their radius
   (:func:`~dpgauss.releases._center.release_trace`);
4. the threshold search
   (:func:`~dpgauss.releases._threshold_search.search_threshold`);
5. the final GaussCov or SeparateCov release on the rows clipped at the chosen
   threshold (:func:`~dpgauss.releases._covariance.release_covariance`).

Privacy. Each release is calibrated from the plan by name with its planned
factory (:meth:`~dpgauss.accounting._plan.ReleasePlan.calibrate`), at the
values found earlier in the fit (a released radius, the pairs' count), and
is private on its own (proofs in the modules named above and in
:mod:`dpgauss.mechanisms._releases`); the plan, charged before the first
release, composes them. Everything else here is post-processing of released
values and public ones: the center (the released mean, shrunk and
projected), the choice between centering around the mean and the pairs
(:func:`_center_or_pair`, from the released traces, radii and the mean's
public error), the noise predicted at each candidate threshold (from the
released trace), the choice of GaussCov or SeparateCov, the denoised
spectrum and the factor 2 of the pairs. With the pairs, a release on the m
rows z is private with respect to the rows of X (see
:mod:`dpgauss.releases._pairs`). Every pass over the data works on offsets
from the center (rows may lie far outside the ball); both searches' queries
and the trace are exact integer sums (counts, fixed point), computed chunk
by chunk (:func:`~dpgauss.utils._norm_stats.norm_statistics`; the pairs'
through :class:`~dpgauss.releases._pairs.PairDifferences`, which keeps the
pairs' norms, at most 32 MiB, for the statistics after the scan): no
n-length copy of the rows, and the same integers whatever the chunking, the
engine or the cache, so each
release's sensitivity is exactly the one proved for the whole norm vector.
The pairs' final sums are one chunk sum per
:data:`~dpgauss.releases._pairs.PAIR_CHUNK` pairs, the
number of partial sums the release's rounding slack is calibrated for.

Fixes the authors' code: the final choice is evaluated at the chosen tau (not
tau/2), and the noise proxies are explicit expected-value formulas (see
:mod:`dpgauss.releases._threshold_search`).
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpgauss.releases._adaptive_plan import two_scans
from dpgauss.releases._center import release_mean, release_trace
from dpgauss.releases._covariance import (
    MeasuredDiagonal,
    choose_method,
    release_covariance,
)
from dpgauss.releases._pairs import PairDifferences, Pairing
from dpgauss.releases._radius import radius_from_counts, scan_counts
from dpgauss.releases._threshold_search import (
    clipped_levels,
    predicted_noise,
    search_levels,
    search_threshold_sums,
    tau_grid,
)
from dpgauss.utils._norm_stats import norm_statistics
from dpgauss.utils._sums import (
    clipped_sums,
    fixed_point_bits,
    n_partial_sums,
)

__all__ = ["AdaptiveRelease", "release_adaptive"]

#: With one scan, the pairs are taken only when the mean's error exceeds this
#: many times the covariance's scale from the pairs' trace, when that trace is
#: precise (see ``_center_or_pair``, which gives the measurements behind 1).
UNTRUSTED_MARGIN = 1.0
#: With one scan and an imprecise pairs' trace (noise sd above PRECISE times
#: the square of their radius, a public ratio), the pairs' radius is suspect
#: when the trace, less one noise sd, exceeds SATURATED of that square.
PRECISE = 0.25
SATURATED = 0.5
#: The choice between the mean and the pairs reads the shrunk mean's error
#: as at least this many times the variance of one coordinate of its noise:
#: the shrinkage's risk with the mean at ``location``, about its least
#: (see ``_center_or_pair``).
JUDGED_FLOOR = 2.0
#: With one scan, the rows about the released mean are taken within this many
#: times twice the pairs' radius (plus the center's error): four grid steps
#: of sqrt(2) above it (see ``_center_or_pair``).
ONE_SCAN_REACH = 4.0


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
    clip_radius : float
        The privately chosen clipping threshold (at most ``radius``).
    centering : str
        ``"mean"``, ``"pairs"`` or ``"none"``.
    measured : MeasuredDiagonal
        The diagonal of the final release's noisy matrix and its noise sd
        (for :func:`~dpgauss.releases._measured.confine`).
    center_sd : float or None
        The public noise sd of one coordinate of the released mean (before
        its shrinkage and projection towards the location); None when the
        center is the public location (nothing released).
    """

    center: np.ndarray
    values: np.ndarray
    vectors: np.ndarray
    noise_sd: float
    cap: float
    method: str
    radius: float
    clip_radius: float
    centering: str
    measured: MeasuredDiagonal
    center_sd: float | None = None


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
        As in :func:`~dpgauss.releases._adaptive_plan.adaptive_plan` (the plan
        must be built with the same).
    plan : ReleasePlan
        The plan of :func:`~dpgauss.releases._adaptive_plan.adaptive_plan`;
        each release is built by its planned factory.
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
        radius = _scan(plan, "radius", X, location, data_norm, rng)
        sums, *released = _trace(X, location, radius, n, plan, rng)
        path = _Path(X, location, location, n, radius, sums, *released)
    m, radius = path.m, path.radius
    noise = [predicted_noise(plan, m, d, t, path.trace) for t in tau_grid(radius)]

    def make_svt(sensitivity):
        return plan.calibrate("clip_radius", sensitivity=sensitivity)

    bits = fixed_point_bits(m)
    sums = path.sums
    if sums is None:  # one pass over the rows about the released center
        sums = _statistic(path.rows, path.local, clipped_levels, radius,
                          search_levels(radius), bits)  # fmt: skip
    tau = search_threshold_sums(
        sums, bits, radius, noise, m, make_svt, rng, trace=path.lower
    )
    method = choose_method(plan, m, d, tau, min(path.trace, tau * tau))
    plan.choose("covariance", method)
    if isinstance(path.rows, PairDifferences):
        M = path.rows.clipped_sums(tau)[1] / m
        partials = path.rows.n_partials
    else:
        M = clipped_sums(path.rows, path.local, tau)[1] / m
        partials = n_partial_sums(path.rows)
    case = {"rows": m, "radius": tau, "n_partials": partials}
    cap = min(path.upper, tau * tau)
    # The released trace is of the rows clipped at the radius: it is the
    # trace of M only when tau is the radius (otherwise it enters the cap).
    same = path.released if tau == radius else None
    values, vectors, sd, measured = release_covariance(
        method, M, m, plan, case, rng, cap, trace=same, shift=path.shift, diagonal=True
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
        clip_radius=math.sqrt(scale) * tau,
        centering=path.centering,
        measured=measured.scaled(scale),
        center_sd=path.center_sd,
    )


def _statistic(rows, center, stat, *args):
    """``stat`` of the norms of ``rows`` about ``center`` (of the pairs z
    about 0), summed chunk by chunk: exact integers, no n-length array."""
    if isinstance(rows, PairDifferences):
        return rows.norm_statistics(stat, *args)
    return norm_statistics(rows, center, stat, *args)


def _scan(plan, name, rows, center, data_norm, rng):
    """The radius scan ``name`` of the plan on the norms of ``rows`` (those its
    factory was planned for): its counts at the public grid, one pass."""
    counts = _statistic(rows, center, scan_counts, data_norm)
    svt = plan.calibrate(name)
    return radius_from_counts(counts, data_norm, svt, rng)


def _trace(rows, center, radius, m, plan, rng):
    """Release the trace of the m ``rows`` clipped at ``radius``.

    One pass computes the trace's exact fixed-point sum (level 0) and the
    threshold search's sums at this radius (levels known once the radius is
    released; the search on these rows uses them). Returns the search's
    sums, the estimate, the upper bound and the public variance of the
    estimate (see :func:`~dpgauss.releases._center.release_trace`).
    """
    bits = fixed_point_bits(m)
    levels = np.concatenate([[0.0], search_levels(radius)])
    sums = _statistic(rows, center, clipped_levels, radius, levels, bits)
    return sums[1:], *release_trace(sums[0], bits, m, radius, plan, rng)


def _center_or_pair(X, location, data_norm, plan, rng):
    """Scans, the mean, the pairs' trace, then around the mean or from pairs."""
    n, d = X.shape
    pairs = PairDifferences(X, Pairing(n, rng))
    m = pairs.shape[0]
    both = two_scans(plan, n)
    if both:
        plan.choose("scans", "both")
        radius = _scan(plan, "radius", X, location, data_norm, rng)
        spread = _scan(plan, "spread_radius", pairs, None, data_norm, rng)
    else:
        plan.choose("scans", "pairs")
        radius = data_norm
        spread = _scan(plan, "pair_radius", pairs, None, data_norm, rng)
    raw, variance, offset, error = release_mean(X, location, radius, plan, rng)
    center = location + offset
    sums_z, t_z, upper_z, var_z = _trace(pairs, None, spread, m, plan, rng)
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
    # undershoots up to 7 times). A margin of 4 bought iris 4% (error 0.376
    # against 0.391 at 1, 100 fits) and cost heavy-tailed tables far more:
    # a mean released at noise sd 0.094 box units and shrunk towards the
    # box centre missed a Student t column of sd 0.029 by 6 of its sds, and
    # the covariance about it put that column's variance 28 times too high
    # (12 times the zero matrix's error, rho 0.5, n = 150, no warning),
    # where the pairs were predicted at a sixteenth of the mean's error but
    # not trusted (error 3.6 times the scale). At 1, bench_real's Student t
    # rows: that row's silent seeds 2 -> 0, rho 0.125 at n = 500 median
    # 0.76 -> 0.38 and PrivatePCA(method="tail") there 0.10 -> 0.010 of
    # the variance missed; no other row moved by 5% (30 seeds; wine 0.590
    # -> 0.601 in bench_quality). An imprecise trace (few rows, pure DP) shows an
    # undershoot only when, less one sd, it holds SATURATED of spread^2;
    # without that the pairs are trusted, and with it the margin is 1 too (a
    # trace at the clip by noise alone shows nothing, and a margin kept a
    # released mean 19 away from the rows: 141 times the zero matrix's
    # error at n = 150, epsilon = 1, a bound 30 times the data).
    scale = 2.0 * (t_z + 0.5 * math.sqrt(var_z)) / math.sqrt(d)
    # Stein's estimate of the shrunk mean's error is clipped at 0 where it
    # is negative: wherever the release fell within sqrt(d) noise sds of
    # ``location``, the mean was shrunk onto it and its error read 0,
    # whatever the rows' mean was. The choice reads it as at least the
    # shrinkage's risk at ``location`` (2 v for James-Stein), as the
    # estimate is unbiased only above. A Student t column of sd 0.02 box
    # units 0.2 from the centre (rho 0.5, n = 150, d = 5) was otherwise
    # centred 10 of its sds off in 2 fits of 40, its variance 32 times too
    # high; with the floor the largest of 40 was 3.1 times. bench_real (30
    # seeds): Student t, rho 0.5, n = 150, worst seed 6.9 -> 1.5 times the
    # baseline's median; no other row moved 5%. bench_quality (100 fits):
    # iris 0.391 -> 0.398, the digits of class 0 1.27 -> 1.04.
    judged = max(error, JUDGED_FLOOR * variance) if d >= 3 else error
    if math.sqrt(var_z) <= PRECISE * spread * spread:
        trusted = both or judged > UNTRUSTED_MARGIN * scale
    else:
        saturated = t_z - math.sqrt(var_z) >= SATURATED * spread * spread
        trusted = both or not saturated or judged > scale
    if trusted and math.hypot(around, judged) > paired:
        return _Path(
            pairs, np.zeros(d), center, m, spread, sums_z, t_z,
            upper_z, var_z, scale=2.0, centering="pairs",
            center_sd=math.sqrt(variance),
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
    # The rows about the released mean lie within about twice the pairs'
    # radius plus the center's error (||x - c|| <= ||x - mu|| + ||c - mu||;
    # a tail row x paired with a typical x' has ||x - mu|| ~ ||x - x'|| =
    # 2 ||z||: sqrt(2), the typical rows' ratio, clipped randhie's long tails
    # and doubled its error at rho 0.5), far inside the radius about
    # ``location`` when the mean is far from it: the threshold search's grid
    # starts there, not at the far radius, from which it stopped two or three
    # steps down (tau 17.7 for rows of norm 2.5 about a mean 25 away, error
    # 3 to 11 times the known center's). With one scan the pairs' radius may
    # be a few grid steps (sqrt(2) each) inside the data: ONE_SCAN_REACH
    # times it. Released values only (post-processing): every later
    # sensitivity is at the radius the rows are clipped to, whichever it is.
    reach = 2.0 * spread * (1.0 if both else ONE_SCAN_REACH)
    radius = min(radius, reach + math.sqrt(delta_max))
    r2 = radius * radius
    return _Path(
        X, center, center, n, radius, None,
        min(trace_c + error, r2), min(2.0 * upper_z + delta_max, r2), 4.0 * var_z,
        shift=error / d, centering="mean", center_sd=math.sqrt(variance),
    )  # fmt: skip


@dataclass
class _Path:
    """The rows the trace, threshold search and final release run on."""

    rows: object  # an array, or the PairDifferences (streamed)
    local: np.ndarray  # the center the rows are clipped around
    center: np.ndarray  # the fitted location_
    m: int
    radius: float
    sums: np.ndarray | None  # the search's fixed-point sums (None: to compute)
    trace: float
    upper: float
    variance: float  # the variance of ``trace`` (a function of released values)
    scale: float = 1.0
    shift: float = 0.0
    centering: str = "none"
    center_sd: float | None = None  # the released mean's noise sd (None: public)

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
