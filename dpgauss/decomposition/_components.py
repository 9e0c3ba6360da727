"""What PCA makes of a released full covariance: post-processing and predictions.

Not an estimator module. Everything here reads released values and public
ones only (n, d, the box, the cost, the release's public noise sd), so it is
free: no new release, no sensitivity of its own.

Two things differ from the covariance estimators' use of the same release:

- PCA needs the principal subspace, not the matrix. A released off-diagonal
  entry below the noise level carries mostly noise, and on data whose columns
  are nearly uncorrelated those noisy entries alone tilt the eigenvectors off
  the coordinate axes. :func:`threshold_spectrum` zeroes the off-diagonal
  entries of the released covariance (in box units) that are within the
  universal threshold ``sd sqrt(2 log m)`` of zero (``m = d (d - 1) / 2``
  entries; pure noise exceeds it with probability about ``1 / sqrt(pi log
  m)`` over all m entries together) before the eigendecomposition.
- The captured-variance loss of a perturbed subspace is second order in the
  perturbation (Davis and Kahan: ``sin theta <= ||E|| / gap``, and the
  variance missed is about ``gap sin^2 theta``). :func:`squared_prediction`
  puts a Frobenius prediction in those units, so the far-from-non-private
  warning fires at ``sqrt(ASTRAY)`` times the non-private Frobenius error.
"""

import math
from dataclasses import replace

import numpy as np

from dpgauss.releases._center import Spectrum, covariance_plan_entries
from dpgauss.releases._diagonal import (
    entry_mechanisms,
    full_prediction,
    with_sampling,
)
from dpgauss.utils._linalg import eigh_descending

__all__ = ["full_components_prediction", "squared_prediction", "threshold_spectrum"]

#: The threshold never falls below this many noise sds (small d).
MIN_THRESHOLD = 2.0


def universal_threshold(d):
    """``max(sqrt(2 log m), MIN_THRESHOLD)`` noise sds, ``m = d (d - 1) / 2``."""
    m = d * (d - 1) / 2.0
    return max(math.sqrt(2.0 * math.log(m)) if m > 1 else 0.0, MIN_THRESHOLD)


def threshold_spectrum(spectrum, noise_sd, half=None):
    """The spectrum of the released covariance with its insignificant
    off-diagonal entries zeroed (post-processing).

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
        Sorted by decreasing eigenvalue; the input unchanged when nothing
        is zeroed (``noise_sd`` not positive and finite, or d = 1).
    """
    values, vectors = spectrum.values, spectrum.vectors
    d = values.size
    if d < 2 or not (math.isfinite(noise_sd) and noise_sd > 0):
        return spectrum
    h = np.ones(d) if half is None else np.asarray(half, dtype=np.float64)
    C = (vectors * values) @ vectors.T / np.outer(h, h)
    small = np.abs(C) < universal_threshold(d) * noise_sd
    np.fill_diagonal(small, False)
    if not small.any():
        return spectrum
    C[small] = 0.0
    C = (C + C.T) / 2.0 * np.outer(h, h)
    new_values, new_vectors = eigh_descending(np.nan_to_num(C))
    new_values = np.clip(new_values, 0.0, None)
    return Spectrum(
        new_values, new_vectors, spectrum.noise_sd, spectrum.cap, spectrum.method
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
