"""Linear regression from the second moments of box rows (AdaSSP in box units,
refined on the residuals).

A helper module of the release layer, for
:class:`~dpgauss.linear_model.PrivateLinearRegression`. Sufficient statistics
perturbation with an adaptive ridge (Wang 2018, "Revisiting differentially
private linear regression", Algorithm 2, AdaSSP), on the library's box rows
and its second-moment release, in two stages in the spirit of CoinPress: the
second releases the moments of the first stage's residuals, in a range
chosen from the first stage's release and far narrower than y's box. The
plan, its shares and the prediction before the spend are in
:mod:`~dpgauss.releases._linear_plan`; the mechanisms and their
sensitivity proofs in :mod:`~dpgauss.releases._linear_noise`.

**Rows.** The public box ``bounds`` of the features and ``target_bounds`` of
y map each row to box units, a function of the row and public values alone:

* with an intercept, ``z = clip((x - c) / h, -1, 1)`` and ``t = clip((y -
  c_y) / h_y, -1, 1)`` (:func:`~dpgauss.releases._box.box_offsets`, the
  boxes' centers and half-widths), and the features' part ``f = (z, s)``
  carries the public constant ``s = INTERCEPT_SCALE`` for the intercept;
* without one, the boxes are first widened to be symmetric about 0
  (``h = max(|lower|, |upper|)``, ``c = 0``), so that a model through the
  origin in box units is one through the origin in the data's units, and
  ``f = z``.

**Releases** (neighbouring datasets replace one row, n public; they
compose, total cost the sum of their shares):

1. first pass: ``lambda_min``, the smallest eigenvalue of the features' Gram
   matrix ``G = (1/n) sum f f^T``; ``moments``, ``(1/n) sum a a^T`` for the
   rows ``a = (f, t)``; with an intercept, ``target_mean``, the mean of t;
2. second pass: ``refine``, ``(1/n) sum a a^T`` for the rows ``a = (f, r)``,
   ``r = clip((t - beta_1 . f) / c, -1, 1)``. beta_1 and ``c > 0`` are
   post-processing of the first pass's releases, finite for every draw, so
   r is a function of the row and released values: a row of the same box as
   the first pass's (every entry in [-1, 1], the constant s), with the same
   sensitivity and mechanism, at its own share (adaptive composition).

**Post-processing** (released values and public ones only, so free):

* the intercept's cross moment ``s mean(t)`` averaged with its own release,
  and the constant's square set to its public ``s^2``;
* the released Gram matrix's spectrum denoised as the covariance releases'
  are (:func:`~dpgauss.releases._denoise.denoise_spectrum`), then AdaSSP's
  ridge (:func:`_ridged`): a lower confidence bound ``l =
  max(lambda~ - Z sd, 0)`` on the smallest eigenvalue and a bound ``B =
  (2 sqrt(p) + Z) sd_off`` on the spectral norm of the Gram noise (a
  symmetric random matrix with independent entries of sd ``sd_off``
  concentrates at ``2 sqrt(p) sd_off``), ``Z = LOWER_Z``; the ridge ``lam =
  max(B - l, B / 2^20)`` (the floor makes the solve defined for every draw),
  and the denoised spectrum raised to ``max(w, 0) + lam``: positive
  definite by construction, so every draw gives finite coefficients;
* the refinement's centre beta_1 (the first stage's ridged fit or its
  intercept alone) and range c (:func:`_first_stage`): a few sds of the
  centre's residuals, estimated on the first release, or wider where the
  noise allows, up to ``1 + ||beta_1||_1`` (where r is never clipped); when
  no range below 1 pays, ``beta_1 = 0`` and ``c = 1`` (the second stage
  releases t again, and the two are averaged);
* the two Gram matrices averaged with inverse-variance weights (the same
  G, independent noise), and the refinement's cross moment with the one the
  first stage implies, ``(m_1 - G beta_1) / c``, likewise, entry by entry;
  the coefficients ``beta = (A + P)^-1 (A beta_1 + c m_r)``, A the raised,
  ridged average and P the user's ``alpha`` (so ``beta = beta_1 + c A^-1
  m_r`` without one, and at an unlimited budget, where c reaches ``1 +
  ||beta_1||_1``, least squares or Ridge exactly);
* the slopes kept only when estimated to beat the zero-coefficient model
  (:func:`_slopes_pay`), else the intercept alone;
* coefficients in the data's units: ``t ~ beta_z . z + beta_s s`` is
  ``y ~ c_y + h_y (beta_z . (x - c) / h + beta_s s)``, so ``coef = h_y beta_z
  / h`` and ``intercept = c_y + h_y (beta_s s - sum_j beta_j c_j / h_j)``.

Nothing here draws noise from anything but the fit's generator, and which
rows are read, and in which order, never depends on their values.
"""

import math
from dataclasses import dataclass

import numpy as np

from dpgauss.releases._box import box_offsets
from dpgauss.releases._denoise import denoise_spectrum
from dpgauss.releases._linear_noise import INTERCEPT_SCALE, _radii
from dpgauss.releases._linear_plan import (
    LOWER_Z,
    RANGE_NOISE,
    RANGE_Z,
    SELECT_Z,
    UPPER_Z,
    adassp_ridge,
    combined,
    linear_entries,
    linear_prediction,
    refines,
    regression_boxes,
)
from dpgauss.utils._sums import clip_rows, n_partial_sums, over_chunks

__all__ = [
    "LinearRelease",
    "linear_entries",
    "linear_prediction",
    "regression_boxes",
    "release_linear",
]


def _chunk_moments(
    chunk, targets, center, half, c_y, h_y, scale, radius, beta=None, width=1.0
):
    """A chunk's sums of ``a`` and ``a a^T`` for its rows ``a = (f, t)``, or
    ``(f, r)`` with ``r = clip((t - beta . f) / width, -1, 1)`` when ``beta``
    is given (released values), each from its own row, its target and
    public or released values, clipped to ``radius`` about 0 as
    :func:`~dpgauss.utils._sums.clipped_sums` clips (a no-op on box rows,
    kept so the bound holds as computed)."""
    chunk = np.asarray(chunk)
    n, d = chunk.shape
    q = d + (2 if scale is not None else 1)
    rows = np.empty((n, q))
    box_offsets(chunk, center, half, out=rows[:, :d])
    targets = np.asarray(targets, dtype=np.float64).reshape(n, 1)
    box_offsets(targets, np.array([c_y]), np.array([h_y]), out=rows[:, -1:])
    if scale is not None:
        rows[:, d] = scale
    if beta is not None:
        with np.errstate(all="ignore"):
            residual = (rows[:, -1] - rows[:, :-1] @ beta) / width
        # NaN to 0 and infinities to +-1: every entry of the row in [-1, 1].
        rows[:, -1] = np.clip(np.nan_to_num(residual), -1.0, 1.0)
    a = clip_rows(rows, np.zeros(q), radius)
    return a.sum(axis=0), a.T @ a


def _moments(X, labels, args, n):
    """One pass's mean row and second moment ``(1/n) sum a a^T`` (exact up
    to rounding; symmetric)."""
    sums, S = over_chunks(X, _chunk_moments, *args, labels=labels)
    with np.errstate(all="ignore"):
        return sums / n, 0.5 * (S + S.T) / n


def _released(mechanism, M, rng, constant):
    """The released second moment: symmetric, NaN-free, and the constant's
    square at its public value ``s^2`` (post-processing of the release)."""
    released = np.asarray(mechanism.randomise(M, rng), dtype=np.float64)
    released = np.nan_to_num(0.5 * (released + released.T), nan=0.0)
    if constant is not None:
        released[constant, constant] = INTERCEPT_SCALE * INTERCEPT_SCALE
    return released


@dataclass(frozen=True)
class LinearRelease:
    """What :func:`release_linear` released and derived (post-processing).

    Attributes
    ----------
    coef : ndarray of shape (d,)
        Coefficients in the data's units.
    intercept : float
        The intercept in the data's units (0.0 without one).
    ridge : float
        The ridge added to the averaged, released Gram matrix, in box units.
    noise_bound : float
        The public bound B on the averaged Gram noise's spectral norm.
    lower : float
        The released lower bound on the Gram matrix's smallest eigenvalue.
    residual_range : float
        The refinement's range c for the first stage's residuals, in box
        units of the target (1.0 when the first stage found nothing).
    slopes_kept : bool
        False when the fit fell back to the zero-coefficient model
        (:func:`_slopes_pay`).
    """

    coef: np.ndarray
    intercept: float
    ridge: float
    noise_bound: float
    lower: float
    residual_range: float
    slopes_kept: bool = True


def _ridged(G, lower, var):
    """AdaSSP's ridge for a released Gram matrix whose entries have noise
    variance ``var``: ``(values, vectors, ridge, bound)``, the denoised,
    ridged spectrum (every value positive) and its eigenvectors (module
    docstring). The spectrum is denoised as the covariance releases'
    (:func:`~dpgauss.releases._denoise.denoise_spectrum`: the rotationally
    invariant estimate, made monotone and non-negative with the released
    trace, then blended towards a scaled identity by SURE), which lowered
    the coefficient error by 5-12% on the sweep's settings and moved the
    real tables' R^2 by +0.01 to 0 (diabetes at rho 0.5 0.246 -> 0.256).
    Post-processing."""
    ridge, bound = adassp_ridge(G.shape[0], lower, var)
    values, vectors = np.linalg.eigh(G)
    values, vectors = values[::-1], vectors[:, ::-1]  # decreasing, as denoised
    trace = float(np.sum(values))
    values = denoise_spectrum(values, var, 2.0 * var, trace, 1.0)
    return np.maximum(values, 0.0) + ridge, vectors, ridge, bound


def _first_stage(released, lower, variances, var_next, n, d, fit_intercept):
    """The refinement's centre and range ``(beta_1, c)`` (module docstring):
    post-processing of the first stage's release and public noise variances.

    Two centres are weighed: the ridged fit and the zero-coefficient model
    (its intercept alone). For each, the residuals' mean square ``tt - 2
    beta . m + beta^T G beta`` is estimated on the released moments; its
    noise sd is about ``sd = sqrt(v_sq + v_off (4 ||beta||^2 + 2
    ||beta||^4))`` (the square's, the cross moments' and the Gram
    matrix's), and ``U`` = the estimate (at least 0) plus :data:`UPPER_Z`
    sd. The centre with the smaller U is kept (a fit lost in its noise
    leaves wider residuals than the intercept alone). The narrowest range
    is :data:`RANGE_Z` times ``sqrt(U)``; it is taken only if the
    refinement's noise on the normal equations, ``c^2 v_r`` (``v_r`` the
    averaged cross moment's variance, ``1 / (1 / v_next + c^2 / (v_off +
    v_G ||beta||^2))``), is below that of the two releases averaged as one,
    ``v_G (1 + ||beta||^2)``, ``v_G = v_off v_next / (v_off + v_next)``;
    otherwise ``(0, 1)``: the second stage releases t again. It is then
    widened while that noise stays under :data:`RANGE_NOISE` of the
    least-squares fit's own sampling variance, ``c^2 v_next <= RANGE_NOISE
    U / n`` (both times the same ``tr(A^-1)`` on the predictions), up to
    ``1 + ||beta||_1`` (s <= 1), beyond which no residual is clipped. Every
    value is finite and c > 0 for every draw (``sd > 0``)."""
    square, var = variances
    p = released.shape[0] - 1
    G, m, tt = released[:p, :p], released[:p, p], float(released[p, p])
    values, vectors, _, _ = _ridged(G, lower, var)
    fit = vectors @ ((vectors.T @ m) / values)

    def bound(beta):
        b2 = float(beta @ beta)
        mean_square = tt - 2.0 * float(beta @ m) + float(beta @ G @ beta)
        sd = math.sqrt(square + var * (4.0 * b2 + 2.0 * b2 * b2))
        return max(mean_square, 0.0) + UPPER_Z * sd

    beta = _zero_model(G, m, d, fit_intercept)
    upper = bound(beta)
    fitted = bound(fit)
    if fitted < upper:
        beta, upper = fit, fitted
    narrow = RANGE_Z * math.sqrt(upper)
    if not refines(narrow, float(beta @ beta), var, var_next)[0]:
        return np.zeros(p), 1.0
    widest = 1.0 + max(1.0, INTERCEPT_SCALE) * float(np.sum(np.abs(beta)))
    wide = math.sqrt(RANGE_NOISE * upper / (n * var_next))
    return beta, min(max(narrow, wide), widest)


def _zero_model(G, m, d, fit_intercept):
    """The zero-coefficient model from released moments: the intercept
    alone, ``m_s / G_ss`` (0 without an intercept). Post-processing."""
    beta = np.zeros(G.shape[0])
    if fit_intercept and G[d, d] > 0.0:
        beta[d] = m[d] / G[d, d]
    return beta


def _slopes_pay(G, m, d, fit_intercept, beta, values, noise, noise_zero):
    """Whether the released slopes are estimated to beat the zero-coefficient
    model (post-processing of the released moments and public noise).

    With ``G~ = G + E`` and ``m~ = m + e`` estimated and ``beta = A^-1 m~``
    (A the raised, ridged Gram matrix the fit inverts, eigenvalues
    ``values``), the true risk of beta less the zero model's is ``beta^T G
    beta - 2 beta^T m + m_s^2 / G_ss``. Its plug-in value on the estimates
    is optimistic by ``2 beta^T e - beta^T E beta``, whose expectation to
    first order is ``2 noise tr(A^-1)``, ``noise`` the variance of the
    noise on the normal equations at beta (``sd^2 (1 + ||beta||^2)`` for one
    release of entry sd ``sd``; the refinement's, ``c^2 sd_r^2 + sd_G^2
    ||beta - beta_1||^2``); the zero model's own plug-in is optimistic by
    its intercept's share, ``2 noise_zero / G_ss``. The slopes are kept
    when the corrected difference is negative by :data:`SELECT_Z` times the
    estimate's own noise, about ``2 ||beta_z|| sqrt(noise)``. Measured on
    held-out rows in one stage (codebook boxes, 5 splits, median R^2): fair
    at rho 0.5 -0.30 -> -0.001 (its noise's error five times the explained
    variance; least squares 0.05), randhie at pure epsilon 0.5 -1.0 ->
    -0.02; kept where they help."""
    zero = _zero_model(G, m, d, fit_intercept)
    plug = float(beta @ G @ beta - 2.0 * beta @ m)
    plug_zero = float(zero @ G @ zero - 2.0 * zero @ m)
    optimism = 2.0 * noise * float(np.sum(1.0 / values))
    optimism_zero = 0.0
    if fit_intercept and G[d, d] > 0.0:
        optimism_zero = 2.0 * noise_zero / float(G[d, d])
    spread = 2.0 * math.sqrt(float(beta[:d] @ beta[:d]) * noise)
    return plug + optimism + SELECT_Z * spread < plug_zero + optimism_zero


def release_linear(X, y, boxes, fit_intercept, plan, rng, alpha=0.0):
    """Release the regression of ``y`` on the rows of ``X``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n, d)
        The rows, read in two passes (never modified).
    y : ndarray of shape (n,)
        The targets (passed with each chunk of rows).
    boxes : tuple
        ``((c, h), (c_y, h_y))`` of :func:`regression_boxes`.
    fit_intercept : bool
        Whether the model has an intercept (the boxes must agree).
    plan : ReleasePlan
        A plan holding :func:`linear_entries`' releases, already charged.
    rng : numpy.random.Generator
        The fit's source of noise.
    alpha : float, default=0.0
        scikit-learn's ``Ridge`` penalty ``alpha ||w||^2`` on the coefficients
        in the data's units (not the intercept), added to the released Gram
        matrix as ``(alpha / n) / h_j^2`` on coordinate j in box units
        (post-processing: ``||y - X w - b||^2 + alpha ||w||^2`` is ``h_y^2``
        times ``||t - Z beta - beta_s s||^2 + alpha sum_j beta_j^2 / h_j^2``
        for ``w_j = h_y beta_j / h_j``).

    Returns
    -------
    LinearRelease
        The coefficients and what they were computed from.
    """
    n, d = X.shape
    (center, half), (c_y, h_y) = boxes
    scale = INTERCEPT_SCALE if fit_intercept else None
    p = d + (1 if fit_intercept else 0)
    args = (center, half, c_y, h_y, scale, math.sqrt(_radii(d, fit_intercept)[1]))
    labels = np.asarray(y)
    partials = n_partial_sums(X)
    constant = d if fit_intercept else None
    low = plan.calibrate("lambda_min", n_partials=partials)
    first = plan.calibrate("moments", n_partials=partials)
    second = plan.calibrate("refine", n_partials=partials)
    means, M = _moments(X, labels, args, n)
    with np.errstate(all="ignore"):
        smallest = float(np.linalg.eigvalsh(M[:p, :p])[0])
    R1 = _released(first, M, rng, constant)
    noisy_low = float(np.asarray(low.randomise(np.float64(smallest), rng)))
    square1, var1 = (float(v) for v in first.entry_variances(p + 1))
    square2, var2 = (float(v) for v in second.entry_variances(p + 1))
    var_first = np.full(p, var1)  # of the first stage's cross moments
    if fit_intercept:
        # The intercept's cross moment s mean(t), averaged with its own
        # release by inverse variance (post-processing).
        mean = plan.calibrate("target_mean", n_partials=partials)
        noisy = float(np.asarray(mean.randomise(np.float64(means[-1]), rng)))
        var_mean = (INTERCEPT_SCALE * mean.sd()) ** 2
        weight = var_mean / (var1 + var_mean)
        R1[d, p] = R1[p, d] = weight * R1[d, p] + (1.0 - weight) * (
            INTERCEPT_SCALE * noisy
        )
        var_first[d] = combined(var1, var_mean)
    # Post-processing of the first pass's releases from here.
    lower = max(noisy_low - LOWER_Z * low.sd(), 0.0)
    beta1, width = _first_stage(R1, lower, (square1, var1), var2, n, d, fit_intercept)
    M2 = _moments(X, labels, (*args, beta1, width), n)[1]
    R2 = _released(second, M2, rng, constant)
    # Post-processing of all the releases from here: inverse-variance
    # averages of the two Gram matrices and of the refinement's cross moment
    # with the one the first stage implies (entry by entry).
    var_g = combined(var1, var2)
    G = (var2 / (var1 + var2)) * R1[:p, :p] + (var1 / (var1 + var2)) * R2[:p, :p]
    implied = (R1[:p, p] - G @ beta1) / width
    # The noise of G beta_1, entry by entry: var_g on each off-diagonal
    # entry, the squares' on the diagonal, none on the constant's square.
    squares = beta1 * beta1
    square_g = combined(square1, square2)
    diagonal = np.full(p, square_g)
    if fit_intercept:
        diagonal[d] = 0.0
    spread = var_g * (float(squares.sum()) - squares) + diagonal * squares
    var_implied = (var_first + spread) / (width * width)
    var_r = 1.0 / (1.0 / var2 + 1.0 / var_implied)
    m_r = var_r * (R2[:p, p] / var2 + implied / var_implied)
    values, vectors, ridge, bound = _ridged(G, lower, var_g)
    A = (vectors * values) @ vectors.T
    if alpha > 0.0:  # the user's ridge on the raised Gram matrix
        penalty = np.zeros(p)
        penalty[:d] = (alpha / n) / (half * half)
        values, vectors = np.linalg.eigh(A + np.diag(penalty))
        values = np.maximum(values, ridge)
    beta = vectors @ ((vectors.T @ (A @ beta1 + width * m_r)) / values)
    m = G @ beta1 + width * m_r
    zero = _zero_model(G, m, d, fit_intercept)
    shared = width * width * var_r
    noise = float(shared[0]) + var_g * float((beta - beta1) @ (beta - beta1))
    noise_zero = float(shared[-1]) + var_g * float(beta1 @ beta1 + zero @ zero)
    kept = _slopes_pay(G, m, d, fit_intercept, beta, values, noise, noise_zero)
    if not kept:
        beta = zero
    coef = h_y * beta[:d] / half
    intercept = 0.0
    if fit_intercept:
        shift = float(beta[:d] @ (center / half))
        intercept = c_y + h_y * (beta[d] * INTERCEPT_SCALE - shift)
    return LinearRelease(
        coef, float(intercept), float(ridge), float(bound), lower, float(width), kept
    )
