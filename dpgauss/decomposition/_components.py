"""What PCA makes of a released full covariance: post-processing and predictions.

Not an estimator module. Everything here reads released values and public
ones only (n, d, the box, the cost, the release's public noise sd), so it is
free: no new release, no sensitivity of its own.

Two things differ from the covariance estimators' use of the same release:

- PCA needs the principal subspace, not the matrix. On data whose columns
  are nearly uncorrelated the noise of the released off-diagonal entries
  alone tilts the eigenvectors off the coordinate axes. :func:`threshold_spectrum`
  tests the released off-diagonal entries (box units) as a whole: when their
  sum of squares over the public noise variance, ``T``, is within
  :data:`GLOBAL_Z` standard deviations of its mean under pure noise (``T``
  is then chi-squared with ``m = d (d - 1) / 2`` degrees of freedom: ``T <=
  m + GLOBAL_Z sqrt(2 m)``), they are all zeroed and the components are the
  axes ordered by the released diagonal; otherwise the release is kept as it
  is, so correlations the release can see keep their full rotation.
- The captured-variance loss of a perturbed subspace is second order in the
  perturbation (Davis and Kahan: ``sin theta <= ||E|| / gap``, and the
  variance missed is about ``gap sin^2 theta``). :func:`squared_prediction`
  puts a Frobenius prediction in those units, so the far-from-non-private
  warning fires at ``sqrt(ASTRAY)`` times the non-private Frobenius error.
"""

import math
import warnings
from dataclasses import replace

import numpy as np

from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._center import Spectrum, covariance_plan_entries
from dpgauss.releases._diagonal import (
    entry_mechanisms,
    full_prediction,
    with_sampling,
)
from dpgauss.releases._offdiagonal import noise_only
from dpgauss.utils._leak import caller_stacklevel
from dpgauss.utils._messages import shown_indices

__all__ = [
    "full_components_prediction",
    "noise_only",
    "squared_prediction",
    "threshold_spectrum",
    "warn_unresolved_components",
]

#: A component's released variance within this many eigenvalue floors (the
#: final release's noise sd per entry) is reported as unresolved.
UNRESOLVED_FLOORS = 2.0


def warn_unresolved_components(owner, variances, floor):
    """Warn that kept components' variances are within the release's noise.

    ``variances`` are the kept components' released variances
    (``explained_variance_``), ``floor`` the ``eigenvalue_floor_`` in the
    same units (public). A variance within :data:`UNRESOLVED_FLOORS` of it
    is the denoiser's pooled value for directions the noise hides (raw
    breast cancer at a standardised ``data_norm``: 119.6, then 0.267 twice
    at a floor of 0.263), not the rows' variance; reading it as "almost no
    variance" is wrong, and the components' directions are noise. Returns
    the indices reported. Post-processing of released values.
    """
    index = np.flatnonzero(np.asarray(variances) <= UNRESOLVED_FLOORS * floor)
    if index.size:
        warnings.warn(
            f"{owner}: the released variance of component(s) "
            f"{shown_indices(index)} is within "
            f"{UNRESOLVED_FLOORS:g} times the release's noise level "
            f"(eigenvalue_floor_ = {floor:.3g}): those components are not "
            "resolved (components_resolved_ is False there), their "
            "explained_variance_ is the denoiser's floor rather than the rows' "
            "variance, however small it reads, and their directions are noise. "
            "More rows, "
            "a larger budget or a data_norm / bounds that fit the rows (not "
            "cutting them: see any warning about clipped rows or rows at an "
            "edge of the box) resolve more.",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )
    return index


def threshold_spectrum(spectrum, noise_sd, half=None):
    """The spectrum of the released covariance with its off-diagonal entries
    zeroed when, as a whole, they are consistent with the release's noise
    (post-processing).

    Parameters
    ----------
    spectrum : Spectrum
        A released spectrum, in data units.
    noise_sd : float
        The public sd of one noise entry of the release in box units (or in
        data units without a box).
    half : ndarray of shape (d,) or None
        The box's half-widths (entry ``(i, j)`` in box units is the data
        units' over ``h_i h_j``); None without a box.

    Returns
    -------
    Spectrum
        The input itself when the off-diagonal entries are significant (or
        ``noise_sd`` is not positive and finite, or d = 1); otherwise the
        released diagonal as eigenvalues, on the coordinate axes, sorted by
        decreasing value; the axes by the release's noisy diagonal
        (``spectrum.box_diagonal``) where it is known, else by that value.
    """
    values, vectors = spectrum.values, spectrum.vectors
    d = values.size
    if d < 2 or not (math.isfinite(noise_sd) and noise_sd > 0):
        return spectrum
    h = np.ones(d) if half is None else np.asarray(half, dtype=np.float64)
    C = np.nan_to_num((vectors * values) @ vectors.T / np.outer(h, h))
    if not noise_only(C[np.triu_indices(d, 1)], noise_sd):
        return spectrum
    diagonal = np.clip(np.diag(C), 0.0, None) * h * h
    # The axes by the release's own noisy diagonal where it is known (public
    # noise sd 0.004 in box units for the far mean's five columns at
    # epsilon 1, n = 2000): the denoiser pools the eigenvalues when the
    # off-diagonal noise spreads them (every value one block, or blocks
    # 1e-5 apart), and the diagonal of C then ranks the axes by index or by
    # noise: two seeds in 30 took a column of box variance 0.041 for one of
    # 0.064 (missed variance 0.19 against the private axes' 0.006-0.033).
    # The values stay C's, by decreasing value (they are the denoised
    # estimates; the ranking is what the pooling lost).
    raw = spectrum.box_diagonal
    key = diagonal if raw is None else np.nan_to_num(np.asarray(raw) * h * h)
    order = np.argsort(-key, kind="stable")
    diagonal = np.sort(diagonal)[::-1]
    return Spectrum(
        diagonal,
        np.eye(d)[:, order],
        spectrum.noise_sd,
        spectrum.cap,
        spectrum.method,
    )


def squared_prediction(prediction):
    """A Frobenius prediction in the captured-variance units (its error,
    baseline and sampling squared; which of error and baseline is smaller is
    unchanged)."""
    if prediction is None:
        return None
    sampling = prediction.sampling
    return replace(
        prediction,
        error=prediction.error**2,
        baseline=prediction.baseline**2,
        metric=f"squared {prediction.metric}",
        sampling=None if sampling is None else sampling**2,
    )


def full_components_prediction(total, n, d, centered):
    """The full box release predicted as GaussCov at the box's radius (the
    worst radius a ``"tail"`` search can end at) on the reference data, with
    its sampling error, squared (:func:`squared_prediction`). Public values
    only; None without n (pricing)."""
    if n is None:
        return None
    entries = covariance_plan_entries(total, d, "gauss", centered, n, math.sqrt(d))
    prediction = full_prediction(entry_mechanisms(total, entries), "gauss", d)
    return squared_prediction(with_sampling(prediction, n, d))
