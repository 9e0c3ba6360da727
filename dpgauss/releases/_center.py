"""The covariance release shared by PrivateCovariance, PrivatePCA and PrivateWhitener.

A helper module, not an estimator module: it holds the releases that
:class:`~dpgauss.covariance.PrivateCovariance` makes for its methods
``"gauss"``, ``"separate"``, ``"eigen"`` and ``"auto"`` (those of
``"coinpress"`` are in :mod:`dpgauss.releases._coinpress`), so that every
estimator built on a private covariance makes exactly the same releases,
with the same sensitivities and the same post-processing, instead of a copy
of them:

1. ``mean`` (``center=True``): the mean of the rows clipped to the ball of
   radius B around a public location (:func:`release_mean`), ``MEAN_SHARE``
   of the cost;
2. ``trace`` (``method="auto"``): the mean squared clipped norm
   (:func:`release_trace`), ``AUTO_TRACE_SHARE`` of the rest, which chooses
   between GaussCov and SeparateCov;
3. the covariance method's releases
   (:func:`~dpgauss.releases._covariance.release_covariance`) on the second
   moment of the rows clipped to the ball of radius B around the released mean.

:class:`~dpgauss.releases._spectrum.SpectrumReleaseMixin` puts the three
(or the tail-sensitive releases of :mod:`dpgauss.releases._adaptive`) behind
the fit template of :class:`~dpgauss.base.PrivateEstimatorMixin` for
estimators that use only the released spectrum (eigenvalues and
eigenvectors): PCA and whitening.
"""

import math
from dataclasses import dataclass

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms import GaussianMechanism
from dpgauss.mechanisms._checks import check_radius
from dpgauss.mechanisms._releases import mean_mechanism, sum_mechanism
from dpgauss.releases._covariance import (
    choose_method,
    covariance_entries,
    release_covariance,
)
from dpgauss.releases._denoise import shrink_mean
from dpgauss.utils._sums import clipped_sums, fixed_point_bits, n_partial_sums

__all__ = [
    "AUTO_TRACE_SHARE",
    "MEAN_SHARE",
    "Spectrum",
    "covariance_plan_entries",
    "eigenvalue_floor",
    "mean_entries",
    "mean_factory",
    "release_center",
    "release_mean",
    "release_spectrum",
    "release_trace",
    "trace_factory",
    "useless_release_message",
    "whitening_floor",
]

#: Share of the fit's privacy cost spent on the mean when ``center=True``. The
#: covariance is then estimated around the released mean, so the mean's error
#: enters only quadratically (see ``benchmarks/bench_centering.py``).
MEAN_SHARE = 0.1

#: Share of the (non-mean) cost that ``method="auto"`` spends on the trace.
AUTO_TRACE_SHARE = 1.0 / 16.0


def mean_factory(n, d, radius):
    """The factory of the ``mean`` release: rows clipped to a ball.

    ``make(cost, radius=radius, n_partials=n)`` is
    :func:`~dpgauss.mechanisms._releases.mean_mechanism` for the n rows
    clipped at ``radius`` (the public bound by default; a fit may clip at a
    released radius) whose pass adds ``n_partials`` chunk sums (n, every row
    its own chunk, is the worst case). The radius is checked first
    (:func:`~dpgauss.mechanisms._checks.check_radius`).
    """
    default = radius

    def make(cost, *, radius=radius, n_partials=n):
        check_radius(radius, "data_norm" if radius == default else "the radius")
        return mean_mechanism(cost, n, d, radius, n_partials)

    return make


def trace_factory(n):
    """The factory of the ``trace`` release: a fixed-point sum of n terms.

    ``make(cost, bits=None)`` is
    :func:`~dpgauss.mechanisms._releases.sum_mechanism` with unit ``2^bits``,
    ``bits`` the fixed-point precision of the sum (by default
    :func:`~dpgauss.utils._sums.fixed_point_bits` of n; a fit passes the
    precision it summed with).
    """

    def make(cost, *, bits=None):
        bits = fixed_point_bits(n) if bits is None else bits
        return sum_mechanism(cost, float(2**bits))

    return make


def mean_entries(total, center, n=None, d=None, radius=None):
    """The mean's release (if ``center``) and the cost left for the rest.

    ``MEAN_SHARE`` of ``total`` goes to the mean; the split is made once, here.

    Parameters
    ----------
    total : ZCDP or PureDP
        The fit's cost.
    center : bool
        Whether a mean is released.
    n, d : int, default=None
        Rows and features, for the release's factory (:func:`mean_factory`;
        n is None when the plan is only priced).
    radius : float, default=None
        The public clipping radius.

    Returns
    -------
    entries : list of Release
        ``[Release("mean", ...)]`` or ``[]``.
    rest : ZCDP or PureDP
        What the other releases may spend.
    """
    if not center:
        return [], total
    mean, rest = split_cost(total, [MEAN_SHARE, 1.0 - MEAN_SHARE])
    make = mean_factory(n, d, radius)
    return [Release("mean", mean, kind_of(total), make, size=d or 1)], rest


def trace_release(cost, n):
    """The ``trace`` release at ``cost`` for n rows (a scalar clipped at once,
    so its noise scale need only be finite)."""
    return Release("trace", cost, kind_of(cost), trace_factory(n), bounded=False)


def covariance_plan_entries(total, d, method, center, n=None, radius=None):
    """Every release of a centered (or not) covariance fit by ``method``.

    Parameters
    ----------
    total : ZCDP or PureDP
        The fit's cost.
    d : int
        Number of features.
    method : {"auto", "gauss", "separate", "eigen"}
        The covariance method.
    center : bool
        Release the mean first.
    n : int, default=None
        Rows (None when the plan is only priced).
    radius : float, default=None
        The public clipping radius ``data_norm``.

    Returns
    -------
    list of Release or Choice
        ``mean`` (if ``center``), ``trace`` (if ``"auto"``), then the method's
        releases (a choice between GaussCov and SeparateCov for ``"auto"``),
        each with the factory of its mechanism at the worst public case: n
        rows clipped at ``radius``, each row its own chunk.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._center import covariance_plan_entries
    >>> [r.name for r in covariance_plan_entries(ZCDP(1.0), 3, "gauss", True)]
    ['mean', 'second_moment']
    """
    entries, rest = mean_entries(total, center, n, d, radius)
    if method == "auto":
        trace, rest = split_cost(rest, [AUTO_TRACE_SHARE, 1 - AUTO_TRACE_SHARE])
        entries.append(trace_release(trace, n))
    return entries + covariance_entries(method, rest, d, n, radius)


def useless_release_message(owner, prediction, plan, n, d, radius):
    """The UtilityWarning's text when ``prediction`` (of
    :func:`~dpgauss.releases._covariance.filled_prediction`) is no better than
    the zero matrix; None when the release is predicted useful or there is
    no prediction. Public values only.
    """
    if prediction is None or not prediction.loses:
        return None
    return (
        f"{owner}: with n={n}, d={d}, {plan.total} and "
        f"data_norm={radius:g}, the release is predicted to be no better "
        "than the zero matrix for data spread evenly over the data_norm "
        f"ball (Frobenius error {prediction.error:.3g} against "
        f"{prediction.baseline:.3g}); only data concentrated in a few directions "
        "fare better. Use a larger budget, more rows or a tighter data_norm."
    )


def release_mean(X, center, radius, plan, rng):
    """Release the mean of the rows clipped to ``radius`` around ``center``.

    Sensitivity in :func:`dpgauss.mechanisms._releases.mean_mechanism`.
    Post-processing: a Gaussian release is shrunk towards ``center``
    (:func:`~dpgauss.releases._denoise.shrink_mean`, whose risk estimate
    assumes the unprojected Gaussian release, so it comes first), then
    projected onto the ball of radius r, where the exact clipped mean lies
    (never farther from it).

    Returns
    -------
    raw : ndarray of shape (d,)
        The release (an offset from ``center``).
    variance : float
        The public variance of one coordinate of its noise.
    offset : ndarray of shape (d,)
        The shrunk, projected offset: the new center is ``center + offset``.
    error : float
        The estimated squared error of ``offset`` (at most ``d variance``).
    """
    n, d = X.shape
    sum_y = clipped_sums(X, center, radius, with_outer=False)[0]
    mech = plan.calibrate("mean", radius=radius, n_partials=n_partial_sums(X))
    raw = mech.randomise(sum_y / n, rng)
    variance = mech.variance(d)
    if isinstance(mech, GaussianMechanism):
        offset, error = shrink_mean(raw, variance)
    else:  # Stein's lemma needs Gaussian noise: Laplace releases stay as they are
        offset, error = raw, d * variance
    norm = float(np.linalg.norm(offset))
    if not norm <= radius:  # also inf
        offset = offset * (radius / norm) if math.isfinite(norm) else np.zeros(d)
    return raw, variance, offset, error


def release_trace(units, bits, n, radius, plan, rng, beta=1e-3):
    """Release the mean squared clipped norm and a high-probability upper bound.

    ``units`` is the exact fixed-point sum of ``min(|y|^2, r^2) / r^2`` on the
    ``2^-bits`` grid (each row adds an integer in [0, 2^bits]; see
    :func:`dpgauss.utils._sums.fixed_point_sums`). It is released with
    sensitivity 2^bits, then scaled (post-processing). The upper bound adds a
    one-sided tail shift (Gaussian: sigma sqrt(2 log(1/beta)); Laplace:
    b log(1/(2 beta))), so it fails with probability at most beta. Both are
    clipped to [0, r^2]. Returns the estimate, the upper bound and the public
    variance of the estimate's noise (before clipping).
    """
    r2 = radius * radius
    unit = float(2**bits)
    mech = plan.calibrate("trace", bits=bits)
    noisy = float(mech.randomise(float(units), rng))
    shift = mech.tail(beta)
    to_trace = r2 / (n * unit)
    estimate = min(max(noisy * to_trace, 0.0), r2)
    upper = min(max((noisy + shift) * to_trace, 0.0), r2)
    return estimate, upper, mech.variance(1) * to_trace * to_trace


def release_center(X, location, radius, center, plan, rng):
    """The center of the covariance pass: ``location``, or the released mean.

    Returns
    -------
    center : ndarray of shape (d,)
        ``location`` plus the released (shrunk, projected) offset, or
        ``location`` when ``center`` is False.
    shift : float
        The expected rank-one bias of the second moment about it, along the
        identity: the mean's estimated squared error divided by d (0 without a
        mean).
    center_sd : float or None
        The public noise sd of one coordinate of the released mean, before
        its shrinkage and projection (which only move it towards
        ``location``); None when ``center`` is False (nothing released).
    """
    if not center:
        return location, 0.0, None
    _, variance, offset, error = release_mean(X, location, radius, plan, rng)
    return location + offset, error / X.shape[1], math.sqrt(variance)


@dataclass(frozen=True)
class Spectrum:
    """A released covariance as an eigendecomposition (post-processing of releases).

    Attributes
    ----------
    values : ndarray of shape (d,)
        Eigenvalues, >= 0, summing to at most ``cap``.
    vectors : ndarray of shape (d, d)
        Orthonormal eigenvectors, one per column, paired with ``values``.
    noise_sd : float
        Standard deviation of one noise entry of the final release (public).
    cap : float
        The bound on the trace used (``radius^2`` or the private upper bound).
    method : str
        The method used (``"auto"`` resolved).
    measured : MeasuredDiagonal or None, default=None
        The final release's noisy diagonal and its noise sd (for
        :func:`~dpgauss.releases._measured.confine`; None for EMCov).
    box_diagonal : ndarray of shape (d,) or None, default=None
        A spectrum mapped back from a box: its release's noisy diagonal in
        box units (``measured.values`` before the map), which orders axes the
        denoiser pooled (:func:`~dpgauss.decomposition._components.\
threshold_spectrum`).
    """

    values: np.ndarray
    vectors: np.ndarray
    noise_sd: float
    cap: float
    method: str
    measured: object = None
    box_diagonal: np.ndarray | None = None


def release_spectrum(X, center, shift, radius, method, plan, rng):
    """Release the covariance of ``X`` about ``center`` by ``method``.

    One pass gives the second moment of the rows clipped to the ball of radius
    ``radius`` around ``center`` and its exact fixed-point trace; ``"auto"``
    releases the trace and chooses GaussCov or SeparateCov from it; the method's
    releases follow (:func:`~dpgauss.releases._covariance.release_covariance`).

    Returns
    -------
    Spectrum
        The released eigenvalues and eigenvectors.
    """
    n, d = X.shape
    cap, bits = radius * radius, fixed_point_bits(n)
    _, S, units = clipped_sums(X, center, radius, trace_bits=bits)
    M = S / n
    trace = None
    if method == "auto":
        estimate, cap, variance = release_trace(units, bits, n, radius, plan, rng)
        trace = (estimate, variance)
        method = choose_method(plan, n, d, radius, estimate)
        plan.choose("covariance", method)
    case = {"rows": n, "radius": radius, "n_partials": n_partial_sums(X)}
    values, vectors, sd, measured = release_covariance(
        method, M, n, plan, case, rng, cap, trace=trace, shift=shift, diagonal=True
    )
    return Spectrum(values, vectors, float(sd), float(cap), method, measured)


def whitening_floor(spectrum):
    """The smallest eigenvalue whitening divides by (post-processing, finite).

    ``max(noise_sd, d 2^-52 max(values), 4 / max float)``: the standard deviation
    of one noise entry of the final release (public: a function of n, d,
    ``data_norm`` and the cost), so a direction whose released variance is below
    the noise is scaled by ``noise_sd^(-1/2)`` rather than blown up; the second
    term keeps the floored spectrum's condition number within float64's reach
    (``V diag(values) V^T`` stays positive definite as computed), the third keeps
    ``floor^(-1/2)`` finite. Unlike
    :func:`~eigenvalue_floor` it never falls below the
    noise when the released spectrum is small: whitening amplifies, a density
    does not.

    Parameters
    ----------
    spectrum : Spectrum
        A released spectrum.

    Returns
    -------
    float
        A positive finite floor, in the units of ``spectrum.values``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._center import Spectrum, whitening_floor
    >>> whitening_floor(Spectrum(np.zeros(2), np.eye(2), 0.5, 1.0, "gauss"))
    0.5
    """
    values = spectrum.values
    top = float(np.max(values)) if values.size else 0.0
    tiny = 4.0 / np.finfo(np.float64).max
    floor = max(float(spectrum.noise_sd), values.size * 2.0**-52 * top, tiny)
    return floor if math.isfinite(floor) else tiny


def eigenvalue_floor(values, noise_sd, cap):
    """The floor of a released spectrum (see ``_model_attributes``).

    The smaller of ``noise_sd`` and the mean of ``values``; ``2^-52 cap / d``
    when every value is 0; at least ``4 / max float`` (a finite precision) and
    ``d 2^-52`` times the largest value (so the matrix built from the spectrum
    stays positive definite in floating point: a spread beyond 1e16 made its
    computed eigenvalues negative). NaN-free for finite inputs.
    """
    d = values.shape[0]
    mean_value = float(np.sum(values)) / d
    floor = min(noise_sd, mean_value) if mean_value > 0 else cap / d * 2.0**-52
    if not floor == floor:  # NaN: fall back to the cap-based floor
        floor = cap / d * 2.0**-52 if cap == cap else 0.0
    top = float(np.max(values)) if d else 0.0
    return max(floor, 4.0 / np.finfo(np.float64).max, d * 2.0**-52 * top)
