"""The covariance mechanisms of Dong, Liang and Yi (2022), as plan entries and releases.

A covariance release takes the exact second moment ``M = (1/n) sum y y^T`` of
rows ``y`` clipped to the l2 ball of radius r (so ``tr M <= r^2``) and returns
the eigenvalues and eigenvectors of a symmetric PSD estimate. Each method is a
list of plan entries (:func:`method_entries`, costs split once, here) and a
release function that calibrates its mechanisms from the plan by name:

* ``"gauss"`` (GaussCov): ``M`` plus symmetric noise (release ``second_moment``);
* ``"separate"`` (SeparateCov, DLY Algorithm 2): noisy sorted eigenvalues
  (``eigenvalues``, half the cost) paired in order with the eigenvectors of a
  noisy copy (``eigenvectors``, the other half; ``eigh``, never the SVD);
* ``"eigen"`` (EMCov): see :mod:`dpgauss.releases._emcov`.

Sensitivities are in :mod:`dpgauss.mechanisms._releases`. Post-processing is
free; the eigenvalues are projected onto {u >= 0, sum u <= cap} (DLY Appendix C:
the projection onto {PSD, trace <= cap} keeps the eigenvectors, Lemma 19), a
projection onto a convex set holding the truth, so it never increases the
Frobenius error.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Choice, Release
from dpgauss.mechanisms._checks import check_radius
from dpgauss.mechanisms._releases import (
    eigenvalue_mechanism,
    second_moment_mechanism,
)
from dpgauss.releases._denoise import (
    combine_traces,
    denoise_spectrum,
    monotone_decreasing,
    shrink_trace,
)
from dpgauss.releases._emcov import BinghamMechanism, eigen_entries, eigen_release
from dpgauss.releases._prediction import Prediction
from dpgauss.utils._linalg import eigh_descending, project_simplex_capped
from dpgauss.utils._sums import summation_error

__all__ = [
    "MeasuredDiagonal",
    "choose_method",
    "covariance_entries",
    "covariance_factory",
    "filled_prediction",
    "method_entries",
    "predicted_gauss_error",
    "predicted_separate_error",
    "release_covariance",
]


def method_entries(method, cost, d, n=None, radius=None):
    """The releases of one covariance method at ``cost`` (the split is made here).

    Parameters
    ----------
    method : {"gauss", "separate", "eigen"}
        The mechanism.
    cost : ZCDP or PureDP
        What the covariance release may spend.
    d : int
        Number of features.
    n : int, default=None
        Rows (None when the plan is only priced: its factories are then
        never called).
    radius : float, default=None
        The public clipping radius, the factories' worst case.

    Returns
    -------
    tuple of Release
        The method's releases, each with its factory
        (:func:`covariance_factory`) and size d.
    """
    kind = kind_of(cost)
    if method == "gauss":
        releases = (Release("second_moment", cost, kind),)
    elif method == "separate":
        values, vectors = split_cost(cost, [0.5, 0.5])
        releases = (
            Release("eigenvalues", values, kind),
            Release("eigenvectors", vectors, kind),
        )
    else:
        releases = eigen_entries(cost, d)
    return tuple(
        replace(r, make=covariance_factory(r.name, n, d, radius, n), size=d)
        for r in releases
    )


def covariance_entries(method, cost, d, n=None, radius=None):
    """Plan entries for the covariance release: a method's releases, or a choice.

    ``method="auto"`` gives a :class:`~dpgauss.accounting._plan.Choice` named
    ``"covariance"`` between GaussCov and SeparateCov, made privately later.
    ``n`` and ``radius`` are those of :func:`method_entries`.
    """
    if method == "auto":
        options = {
            m: method_entries(m, cost, d, n, radius) for m in ("gauss", "separate")
        }
        return [Choice("covariance", options)]
    return list(method_entries(method, cost, d, n, radius))


def covariance_factory(name, n, d, radius, n_partials, bound=None):
    """The factory of the covariance release ``name`` (plan entries carry it).

    ``make(cost, rows=n, radius=radius, n_partials=n_partials)`` builds the
    mechanism of :func:`mechanism_factory` for ``rows`` rows clipped at
    ``radius`` whose pass adds ``n_partials`` chunk sums: the defaults are the
    plan's worst public case (``n_partials=n``, every row its own chunk, for
    the DLY methods), and a fit passes the values it knows (its rows' chunk
    count, a released radius, the pairs' count). The radius is checked first
    (:func:`~dpgauss.mechanisms._checks.check_radius`), and so is ``bound``,
    the public radius rows are clipped at when ``radius`` is in a frame
    (CoinPress's first step clips at 1 in the frame ``I / bound``).
    ``precondition_k`` releases are second moments.
    """
    kind = "second_moment" if name.startswith("precondition_") else name
    default = radius

    def make(cost, *, rows=n, radius=radius, n_partials=n_partials):
        if bound is not None:
            check_radius(bound)
        check_radius(radius, "data_norm" if radius == default else "the radius")
        return mechanism_factory(rows, d, radius, n_partials)(kind)(cost)

    return make


def mechanism_factory(n, d, radius, n_partials):
    """``make(name)`` -> a function from cost to the calibrated mechanism."""
    rounding = 2.0 * n * summation_error(n, n_partials)

    def make(name):
        if name.startswith("eigenvector_"):
            return lambda c: BinghamMechanism(c, radius, rounding)
        if name in ("second_moment", "eigenvectors"):
            return lambda c: second_moment_mechanism(c, n, d, radius, n_partials)
        if name == "eigenvalues":
            return lambda c: eigenvalue_mechanism(c, n, d, radius, n_partials)
        raise KeyError(name)

    return make


def release_covariance(
    method,
    M,
    n,
    plan,
    case,
    rng,
    cap,
    *,
    trace=None,
    shift=0.0,
    denoise=True,
    diagonal=False,
):
    """Release the covariance of ``M`` by ``method``, its costs taken from ``plan``.

    Parameters
    ----------
    method : {"gauss", "separate", "eigen"}
        The mechanism (already chosen).
    M : ndarray of shape (d, d)
        Exact second moment of the clipped rows.
    n : int
        Number of rows.
    plan : ReleasePlan
        The fit's plan; the method's releases are calibrated from it by name.
    case : dict
        The keyword arguments of the releases' factories for this fit
        (``rows``, ``radius``, ``n_partials``: see :func:`covariance_factory`).
    rng : numpy.random.Generator
        The fit's noise stream.
    cap : float
        Public (or already private) upper bound on ``tr M``.
    trace : tuple of float, default=None
        An independently released estimate of ``tr M`` and its noise variance,
        used by the denoiser.
    shift : float, default=0.0
        Expected bias of ``M`` along the identity, from released values and
        public ones only (a released mean's estimated squared error per
        coordinate), subtracted from the released eigenvalues
        (post-processing).
    denoise : bool, default=True
        GaussCov: replace the released eigenvalues by
        :func:`~dpgauss.releases._denoise.denoise_spectrum`; otherwise only
        project them onto {>= 0, sum <= cap}. SeparateCov and EMCov: project the
        noisy sorted eigenvalues onto decreasing sequences first (never worse).
    diagonal : bool, default=False
        Also return the diagonal of the released noisy matrix (GaussCov's
        release, SeparateCov's noisy copy) and the public sd of its noise
        (:class:`MeasuredDiagonal`), for per-coordinate bounds
        (post-processing; None for EMCov).

    Returns
    -------
    values : ndarray of shape (d,)
        Eigenvalues of the estimate (>= 0, summing to <= cap).
    vectors : ndarray of shape (d, d)
        Its eigenvectors.
    floor : float
        The standard deviation of one noise entry of the release (public).
    measured : MeasuredDiagonal or None
        Only with ``diagonal=True``.
    """
    d = M.shape[0]
    if method == "gauss":
        mech = plan.calibrate("second_moment", **case)
        released = mech.randomise(M, rng)
        result = gauss_spectrum(mech, released, cap, trace, shift, denoise)
    elif method == "separate":
        value_mech = plan.calibrate("eigenvalues", **case)
        noisy_values = value_mech.randomise(eigh_descending(M)[0], rng) - shift
        mech = plan.calibrate("eigenvectors", **case)
        released = mech.randomise(M, rng)
        vectors = eigh_descending(released)[1]
        ordered = monotone_decreasing(noisy_values) if denoise else None
        if ordered is None:
            ordered = np.sort(noisy_values)[::-1]
        result = project_simplex_capped(ordered, cap), vectors, mech.sd()
    else:
        result = eigen_release(M, n, plan, case, rng, cap)
        mech = released = None
    if not diagonal:
        return result
    measured = None
    if released is not None:
        sd, off_sd = (math.sqrt(v) for v in mech.entry_variances(d))
        released = np.asarray(released, dtype=np.float64)
        measured = MeasuredDiagonal(
            np.diag(released).copy(),
            sd,
            released[np.triu_indices(d, 1)],
            off_sd,
        )
    return (*result, measured)


@dataclass(frozen=True)
class MeasuredDiagonal:
    """The diagonal of a released noisy second moment and its noise sd.

    ``values[j]`` is ``M_jj`` plus one draw of the release's diagonal noise,
    whose standard deviation ``sd`` is public (a function of the mechanism's
    calibration). ``offdiagonal`` holds the same matrix's upper triangle
    (row-major, ``np.triu_indices(d, 1)``), each entry with noise of public
    sd ``off_sd`` (``sd / sqrt(2)`` for GaussCov's Gaussian noise, ``sd``
    for its Laplace noise); None where not kept. Everything computed from
    them is post-processing.
    """

    values: np.ndarray
    sd: float
    offdiagonal: np.ndarray | None = None
    off_sd: float | None = None

    def scaled(self, factor):
        """The same release in units ``factor`` times larger (post-processing)."""
        off = None if self.offdiagonal is None else factor * self.offdiagonal
        off_sd = None if self.off_sd is None else factor * self.off_sd
        return MeasuredDiagonal(factor * self.values, factor * self.sd, off, off_sd)


def gauss_spectrum(mech, released, cap, trace=None, shift=0.0, denoise=True):
    """The spectrum of a released GaussCov matrix (post-processing).

    ``released`` is ``mech``'s noisy symmetric matrix; see
    :func:`release_covariance` for the other arguments and the result.
    """
    d = released.shape[0]
    values, vectors = eigh_descending(released)
    values = values - shift
    if not denoise:
        return project_simplex_capped(values, cap), vectors, mech.sd()
    diagonal, off = mech.entry_variances(d)
    own = float(np.sum(values))
    other = (None, None) if trace is None else (trace[0] - d * shift, trace[1])
    estimate, weight = combine_traces(own, d * diagonal, *other)
    estimate = shrink_trace(estimate, weight, d * diagonal, *other[1:])
    tau2 = 2.0 * off  # Gaussian: the diagonal variance; Laplace: see _denoise
    values = denoise_spectrum(values, off, tau2, estimate, weight, cap)
    return values, vectors, mech.sd()


# -- choosing a mechanism: predicted errors (data-independent given a trace) --------
#: Calibration constants of the predicted errors, chosen by
#: ``benchmarks/calibrate_proxies.py`` on 18 settings of the DLY benchmark table
#: (zCDP, second moment): KAPPA_GAUSS is the median of measured error / expected
#: noise norm (the trace projection removes part of the noise); the separate
#: constants make the gauss-or-separate choice right in all 18 settings (in each,
#: the chosen method's error is the smaller one) and, among such choices, predict
#: the measured separate error best (mean |log ratio| 0.17). They steer choices
#: only and never affect privacy (benchmarks/results/calibrate_proxies.txt).
KAPPA_GAUSS = 0.79
#: Typical over worst-case error of the denoised GaussCov: the measured ratio
#: was 0.24-0.95 on 12 settings (DLY synthetic data, wine, breast cancer, iris;
#: see benchmarks/bench_quality.py); 0.4 errs towards predicting too much.
KAPPA_DENOISED = 0.4
KAPPA_EIGENVALUES = 1.0
KAPPA_EIGENVECTORS = 0.0928

#: SeparateCov is chosen only when predicted at least this much better: the
#: GaussCov prediction is the more reliable one (its noise norm is known in
#: distribution; the separate proxy's calibration spread is about 17% in log),
#: so near-ties go to GaussCov.
SEPARATE_MARGIN = 0.9


def _norm(*terms):
    """sqrt(sum of squares) without overflow or underflow (terms >= 0)."""
    peak = max(terms)
    if not peak > 0 or not math.isfinite(peak):
        return peak if peak > 0 else 0.0
    return peak * math.sqrt(math.fsum((t / peak) ** 2 for t in terms))


def _stds(variances):
    """Standard deviations from a symmetric mechanism's entry variances."""
    diagonal, off = variances
    return math.sqrt(diagonal), math.sqrt(off)


def predicted_gauss_error(cost, n, d, radius, trace=None):
    """Predicted Frobenius error of GaussCov, denoised when a trace is given.

    :func:`gauss_error` of the mechanism the release would use.
    """
    return gauss_error(second_moment_mechanism(cost, n, d, radius), d, trace)


def gauss_error(mechanism, d, trace=None):
    """Predicted Frobenius error of GaussCov released by ``mechanism``.

    Without a trace: ``KAPPA_GAUSS * sqrt(d s_diag^2 + d (d - 1) s_off^2)``, the
    expected norm of the noise matrix (from the mechanism's entry variances)
    times the share the trace-capped projection keeps. With a trace t, the
    denoiser (:mod:`dpgauss.releases._denoise`) does better: a direction of
    variance ``theta`` above the noise level ``sigma = sqrt(d) s_off`` is kept
    with error about ``sqrt(2) sigma``, one below it is lost (error
    ``theta``); the worst split of t among k equal directions gives about
    ``sqrt(2 t sigma)``, and shrinking to ``(t / d) I`` never does worse than
    the zero matrix (at most t). ``KAPPA_DENOISED`` scales the worst case to
    typical data.
    """
    diag, off = _stds(mechanism.entry_variances())
    plain = KAPPA_GAUSS * _norm(math.sqrt(d) * diag, math.sqrt(d * (d - 1)) * off)
    if trace is None:
        return plain
    trace = max(float(trace), 0.0)
    sigma = math.sqrt(d) * off
    return min(plain, KAPPA_DENOISED * math.sqrt(2.0 * trace * sigma), trace)


def predicted_separate_error(value_cost, vector_cost, n, d, radius, trace):
    """Predicted Frobenius error of SeparateCov for a given trace.

    :func:`separate_error` of the mechanisms the release would use.
    """
    values = eigenvalue_mechanism(value_cost, n, d, radius)
    vectors = second_moment_mechanism(vector_cost, n, d, radius)
    return separate_error(values, vectors, d, trace)


def separate_error(values, vectors, d, trace):
    """Predicted Frobenius error of SeparateCov released by ``values`` (the
    eigenvalues' mechanism) and ``vectors`` (the eigenvector copy's).

    Eigenvalues: ``sqrt(d)`` times their noise sd. Eigenvectors (DLY Theorem 1's
    argument): the squared error is at most ``2 sum_j lambda_j (lambda_j -
    p_j^T M p_j) <= ~ trace * ||W||_2``, with ``||W||_2 ~ 2 sqrt(d) s_off`` for the
    eigenvector copy's noise.
    """
    value_sd = values.sd()
    _, off = _stds(vectors.entry_variances())
    eigenvalue_part = KAPPA_EIGENVALUES * math.sqrt(d) * value_sd
    eigenvector_part = math.sqrt(max(trace, 0.0)) * math.sqrt(
        KAPPA_EIGENVECTORS * 2.0 * math.sqrt(d) * off
    )
    return _norm(eigenvalue_part, eigenvector_part)


def predicted_errors(plan, n, d, radius, trace):
    """Predicted errors of the two options of the plan's ``"covariance"`` choice."""
    gauss = predicted_gauss_error(plan.cost("second_moment"), n, d, radius, trace)
    separate = predicted_separate_error(
        plan.cost("eigenvalues"), plan.cost("eigenvectors"), n, d, radius, trace
    )
    return gauss, separate


def filled_prediction(mechanisms, method, d, radius, trace=None):
    """Predicted error for data filling the ball evenly, against the zero matrix.

    The data are taken to fill the ball of radius r around the center with all
    eigenvalues equal: trace r^2, ``||C||_F = r^2 / sqrt(d)`` (the zero matrix's
    error, the baseline). The release's predicted error is that of ``method``
    (the better of GaussCov and SeparateCov for ``"auto"``) at that trace, plus,
    when the plan releases a mean, the expected Frobenius norm ``d v`` of the
    rank-one error its noise (variance v per coordinate) leaves. Public values
    only.

    Parameters
    ----------
    mechanisms : dict of str to object
        The plan's mechanisms at their worst public case (rows n, radius r), as
        :func:`~dpgauss.mechanisms._checks.check_plan` builds them.
    method : {"auto", "gauss", "separate", "eigen"}
        The covariance method.
    d : int
        Features.
    radius : float
        The clipping radius r.
    trace : float, default=None
        The reference data's trace, spread evenly over the d directions
        (``r^2`` when None: the ball filled).

    Returns
    -------
    Prediction or None
        None for ``"eigen"`` (no prediction).
    """
    trace = radius * radius if trace is None else float(trace)
    errors = []
    if method in ("auto", "gauss"):
        errors.append(gauss_error(mechanisms["second_moment"], d, trace))
    if method in ("auto", "separate"):
        values, vectors = mechanisms["eigenvalues"], mechanisms["eigenvectors"]
        errors.append(separate_error(values, vectors, d, trace))
    if not errors:
        return None
    predicted = min(errors)
    if "mean" in mechanisms:
        predicted += d * mechanisms["mean"].variance(d)
    return Prediction(predicted, trace / math.sqrt(d), "frobenius")


def choose_method(plan, n, d, radius, trace):
    """The option with the smaller predicted error: ``"gauss"`` or ``"separate"``.

    Parameters
    ----------
    plan : ReleasePlan
        A plan with a ``"covariance"`` choice (its option costs are used).
    n, d : int
        Rows and features.
    radius : float
        Clipping radius.
    trace : float
        A private estimate of the second moment's trace.

    Returns
    -------
    str
        ``"gauss"`` or ``"separate"``.
    """
    gauss, separate = predicted_errors(plan, n, d, radius, trace)
    return "separate" if separate < SEPARATE_MARGIN * gauss else "gauss"
