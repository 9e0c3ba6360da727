"""The covariance estimators' per-coordinate release inside a box.

Not an estimator module. ``PrivateCovariance(bounds=...)`` and
``TailSensitiveCovariance(bounds=...)`` take, where the full covariance
release is not predicted to win, one release of the box coordinates' means
and second moments: centered, the joint ``(m, 2 s)`` of
:mod:`dpgauss.releases._moments` (the scaler's and PCA's release; the
sensitivity proof is there), not centered the second moments of
:mod:`dpgauss.releases._diagonal` (proof there). Their error is judged in
each column's own units, so :func:`release_variances` keeps a variance only
where it rises above its noise. Decisions before the spend read n, d and the
cost only; everything after the noise is post-processing.
"""

import math
from dataclasses import dataclass

import numpy as np

from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.releases._diagonal import (
    BOX_FILL,
    REFERENCE_CORRELATION,
    _released_moments,
    box_plan_entries,
    diagonal_entries,
    reference_norm,
)
from dpgauss.releases._faint import noise_law, variance_noise
from dpgauss.releases._measured import UNMEASURED_SCALE, estimated
from dpgauss.releases._moments import (
    SECOND_WEIGHT,
    box_moments,
    moments_mechanism,
    weighted_moments,
)
from dpgauss.releases._prediction import Prediction
from dpgauss.utils._sums import n_partial_sums

__all__ = [
    "MeasuredVariances",
    "box_variance_entries",
    "release_variances",
    "variance_entries",
    "variance_prediction",
]


def variance_entries(total, d, centered, n=None):
    """The plan of the covariance estimators' per-coordinate fit: one
    release ``"diagonal"`` at the whole cost.

    Centered, it is the joint ``(m, 2 s)`` of the box rows' means and
    centred squares of :mod:`dpgauss.releases._moments` (the scaler's and
    PCA's release, whose module holds the proof: l2 ``2.2683 sqrt(d) / n``,
    l1 ``25 d / (8 n)``, l-infinity ``2 / n``, rounding added), with the
    cube's K-norm noise under pure epsilon where its variance is the
    smaller: per-entry noise variance ``(2d + 1)(2d + 2) / 3 (2 / (n
    epsilon))^2`` against the Laplace's ``2 (9 d / (4 n epsilon))^2`` for
    :func:`diagonal_entries`' ``(m, s)`` (about 0.5 of it; the squares',
    divided by ``2^2``, about 0.13). Not centered, :func:`diagonal_entries`.
    """
    if not centered:
        return diagonal_entries(total, d, False, n)

    def make(cost, *, n_partials=None):
        return moments_mechanism(cost, n, d, n_partials)

    return [Release("diagonal", total, kind_of(total), make, size=2 * d)]


def _variance_noise(mechanism, d, centered, mean=0.0):
    """Variance of one released variance's noise (box units, public given
    the released ``mean``) for the release of :func:`variance_entries`: the
    second moment's, plus ``4 m^2 V + 2 V^2`` from the squared mean's
    (``V`` the mean entry's noise variance; ``(m + e)^2 - m^2 = 2 m e +
    e^2``)."""
    var = float(mechanism.variance(2 * d if centered else d))
    if not centered:
        return var
    second = var / SECOND_WEIGHT**2
    return second + 4.0 * np.square(mean) * var + 2.0 * var * var


def variance_prediction(mechanism, d, centered=True):
    """:func:`diagonal_prediction` for the release of
    :func:`variance_entries` (at means 0)."""
    per = _variance_noise(mechanism, d, centered)
    noise = math.sqrt(d) * min(math.sqrt(per), max(BOX_FILL, 1.0 - BOX_FILL))
    off = REFERENCE_CORRELATION * BOX_FILL * math.sqrt(d * (d - 1.0))
    return Prediction(math.hypot(noise, off), reference_norm(d), "frobenius")


@dataclass(frozen=True)
class MeasuredVariances:
    """Per-coordinate variances that the noise cannot inflate (box units).

    The covariance is kept in the frame ``diag(scale)``: the box-unit
    variance of coordinate j is ``values_j scale_j^2``.

    Attributes
    ----------
    mean : ndarray of shape (d,)
        The released means in [-1, 1] (zeros when not centered).
    values : ndarray of shape (d,)
        The variances in the frame, in [0, 1].
    scale : ndarray of shape (d,)
        The frame (positive, finite, at most 1).
    noise_sd : float
        The smallest noise sd of a variance in the frame (below every
        positive value): the estimators' eigenvalue floor.
    measured : ndarray of shape (d,), dtype bool
        The coordinates whose released variance rose above its noise.
    uncertain : ndarray of shape (d,), dtype bool or None
        The measured coordinates kept below the high quantile of their
        noise (shrunk by :func:`~dpgauss.releases._measured.estimated`): a
        column far fainter than the noise lands there about one fit in ten.
    unresolved : float or None
        Where a probe chose this release over the full one
        (:mod:`dpgauss.releases._box_probe`): the relative error the
        correlations it could not rule out would leave, when that is beyond
        ASTRAY times the non-private sampling error; None otherwise.
    mean_sd : float or None
        The public noise sd of one released mean (None when not centered:
        no mean is released).
    """

    mean: np.ndarray
    values: np.ndarray
    scale: np.ndarray
    noise_sd: float
    measured: np.ndarray
    uncertain: np.ndarray | None = None
    unresolved: float | None = None
    mean_sd: float | None = None


def release_variances(Z, plan, rng, centered=True, name="diagonal"):
    """The per-coordinate release of box rows ``Z`` (:func:`variance_entries`),
    post-processed so that no variance comes out far above its true value.

    Centered, the release is the noisy ``(m, 2 s)`` of
    :mod:`dpgauss.releases._moments` (sensitivity proven there), the
    variances ``v_j = s_j + 1/2 - m_j^2 + V`` (V the mean entry's noise
    variance, which the squared noisy mean takes away on average); not
    centered, the second moments of :func:`release_diagonal` (module
    docstring), with its draws.

    A variance is kept where it rises above its noise by the rule of
    :mod:`dpgauss.releases._faint`, which reads all the columns (a column
    fainter than the noise is overstated tens of times by any value the
    noise puts there, a column that fills its box is better kept).
    Below the threshold the coordinate is 0, the zero matrix's answer. Kept
    variances are capped at 1 (every box coordinate's variance is at most
    1). The frame is ``scale_j = sqrt(U_j)``, ``U_j = min(max(v_j, 0) +
    q_j, 1)`` a bound on the variance (``q_j`` the noise quantile), times
    ``2^-26`` for a coordinate set to 0, so that the estimators' eigenvalue
    floor gives it a variance of at most ``2^-52 U_j``. Post-processing of
    the release (the released moments and public noise parameters only).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows in ``[-1, 1]^d``.
    plan : ReleasePlan
        With the release ``"diagonal"``.
    rng : numpy.random.Generator
        The fit's noise stream.
    centered : bool, default=True
        Release the means and return variances about them; otherwise second
        moments about the box centre.
    name : str, default="diagonal"
        The release's name in ``plan`` (centered only).

    Returns
    -------
    MeasuredVariances
    """
    d = Z.shape[1]
    if centered:
        first, squares = box_moments(Z, np.zeros(d), np.ones(d))
        mech = plan.calibrate(name, n_partials=n_partial_sums(Z))
        value = weighted_moments(first, squares, SECOND_WEIGHT)
        noisy = np.asarray(mech.randomise(value, rng), dtype=np.float64)
        noisy = np.nan_to_num(noisy, nan=0.0, posinf=1.0, neginf=-1.0)
        var = float(mech.variance(2 * d))
        # Everything below is post-processing of the release.
        mean = np.clip(noisy[:d], -1.0, 1.0)
        second = noisy[d:] / SECOND_WEIGHT + 0.5
        raw = second - mean * mean + min(var, 1.0)
    else:
        mean, raw, var, mech = _released_moments(Z, plan, rng, centered)
    weight = SECOND_WEIGHT if centered else 1.0
    law = noise_law(mech, 2 * d if centered else d, weight)
    var_mean = var if centered else 0.0
    tau, quantile = variance_noise(mean, var_mean, var / weight**2, **law)
    variances = estimated(raw, tau, quantile)
    measured = variances > 0.0
    upper = np.minimum(np.maximum(raw, 0.0) + quantile, 1.0)
    values = np.where(measured, np.minimum(variances, upper) / upper, 0.0)
    scale = np.sqrt(upper) * np.where(measured, 1.0, UNMEASURED_SCALE)
    noise_sd = float(np.min(np.minimum(tau / upper, 1.0)))
    uncertain = measured & (raw < quantile)
    mean_sd = math.sqrt(var) if centered else None  # one entry of (m, 2 s)
    return MeasuredVariances(
        mean, values, scale, noise_sd, measured, uncertain, mean_sd=mean_sd
    )


def box_variance_entries(total, d, n, centered, full, predict_method="auto"):
    """:func:`~dpgauss.releases._diagonal.box_plan_entries` with
    :func:`variance_entries` as the per-coordinate option: ``full`` where its
    predicted Frobenius error on the reference data is below the
    per-coordinate release's and the zero matrix's, the per-coordinate
    release otherwise. Public values only (n, d, the cost), before the
    spend; both plans cost ``total``."""
    return box_plan_entries(
        total,
        d,
        n,
        centered,
        full,
        predict_method,
        per_coordinate=variance_entries,
        per_coordinate_prediction=variance_prediction,
    )
