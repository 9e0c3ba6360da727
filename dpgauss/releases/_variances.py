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

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special

from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms import LaplaceMechanism, LInfinityMechanism
from dpgauss.releases._diagonal import (
    BOX_FILL,
    REFERENCE_CORRELATION,
    _released_moments,
    box_plan_entries,
    diagonal_entries,
    reference_norm,
)
from dpgauss.releases._measured import BETA, UNMEASURED_SCALE, noise_quantile
from dpgauss.releases._moments import (
    SECOND_WEIGHT,
    box_moments,
    moments_mechanism,
    weighted_moments,
)
from dpgauss.releases._prediction import Prediction
from dpgauss.utils._sums import n_partial_sums

#: Where no released variance is below 0 and the median is this many sds of
#: its noise above 0, a variance is kept from this many sds of its noise (see
#: :func:`release_variances`).
LENIENT_SDS = 2.0

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
    """

    mean: np.ndarray
    values: np.ndarray
    scale: np.ndarray
    noise_sd: float
    measured: np.ndarray


def _variance_sd(mechanism, d, centered, mean, var):
    """The sd of each released variance's noise and its one-sided
    ``1 - BETA / d`` quantile (box units), given the released means.

    The noise of ``v_j = s_j - m_j^2 + V`` is ``e_s - 2 m e - e^2 + V``
    (``e_s`` the second moment's, ``e`` the mean's, ``V`` the mean entry's
    noise variance); ``-e^2 <= 0`` only lowers it, so the quantile is that of
    ``e_s - 2 m e`` plus ``V``. It grows with ``|m|``, which only the noisy
    mean shows, and the noise that pulls an edge column's mean towards 0 is
    the noise that inflates its variance (digits: a pixel's mean -0.99
    released at -0.50 and its variance 0.005 released at 5.5 sds of the
    noise computed at -0.50). So both use ``|m| <= |mean| + sqrt(V)`` (at
    most 1). The quantile is exact for the cube's K-norm noise
    (:func:`_cube_quantile`) and the Gaussian's; for the Laplace's it is one
    Laplace's, whose tail is the heavier in sds.
    """
    if not centered:
        sd = np.full(d, math.sqrt(var))
        return sd, _quantile(mechanism, d, d, np.zeros(d), var)
    bound = np.minimum(np.abs(mean) + math.sqrt(var), 1.0)
    sd = np.sqrt(_variance_noise(mechanism, d, True, bound))
    return sd, _quantile(mechanism, 2 * d, d, 2.0 * bound, var) + min(var, 1.0)


def _quantile(mechanism, size, d, slope, var):
    """The ``1 - BETA / d`` quantile of ``e_s / w + slope e`` per entry
    (``w = SECOND_WEIGHT`` when the release is the joint ``(m, w s)``, else
    the second moments themselves and slope 0)."""
    p = BETA / max(int(d), 1)
    weight = SECOND_WEIGHT if size == 2 * d else 1.0
    if isinstance(mechanism, LInfinityMechanism):
        scale = mechanism.effective_scale()
        # Rounded up to 1/256: the quantile grows with the slope.
        steps = np.ceil(np.asarray(slope) * 256.0)
        return np.array(
            [scale * _cube_quantile(size, 1.0 / weight, s / 256.0, p) for s in steps]
        )
    sd = np.sqrt(var / weight**2 + np.square(slope) * var)
    k = noise_quantile(d, isinstance(mechanism, LaplaceMechanism))
    return k * sd


@functools.lru_cache(maxsize=4096)
def _cube_quantile(size, a, b, p):
    """x with ``P(R (a U + b U') > x) = p``: R ~ Gamma(size + 1, 1), U, U'
    uniform on [-1, 1], all independent (the cube's K-norm noise on two
    entries, in units of its scale: uniform in the cube of radius R).

    ``S = a U + b U'`` has the trapezoid density ``1 / (2 max(a, b))`` on
    ``|s| <= |a - b|`` falling linearly to 0 at ``a + b``, so ``P(R S > x)
    = int_0^(a+b) f(s) Q(size + 1, x / s) ds`` (Q the regularised upper
    incomplete gamma). Examples: size 18 (d = 9), a = 1/2: x / sd is 2.89 at
    b = 0, 3.41 at b = 1, 3.14 at b = 2; the normal's 1 - 1.1e-4 quantile
    is 3.69. Accuracy only: the release's privacy does not depend on it.
    """
    top, flat = a + b, abs(a - b)

    def density(s):
        if b == 0.0 or s <= flat:
            return 0.5 / max(a, b)
        return (top - s) / (4.0 * a * b)

    def tail(x):
        value, _ = integrate.quad(
            lambda s: density(s) * special.gammaincc(size + 1.0, x / s),
            0.0,
            top,
            points=[flat] if 0.0 < flat < top else None,
        )
        return value - p

    high = top * float(special.gammainccinv(size + 1.0, p))
    return float(optimize.brentq(tail, 1e-12 * high, high, xtol=1e-9 * high))


def release_variances(Z, plan, rng, centered=True, pure=False):
    """The per-coordinate release of box rows ``Z`` (:func:`variance_entries`),
    post-processed so that no variance comes out far above its true value.

    Centered, the release is the noisy ``(m, 2 s)`` of
    :mod:`dpgauss.releases._moments` (sensitivity proven there), the
    variances ``v_j = s_j + 1/2 - m_j^2 + V`` (V the mean entry's noise
    variance, which the squared noisy mean takes away on average); not
    centered, the second moments of :func:`release_diagonal` (module
    docstring), with its draws.

    The covariance estimators' error is relative to each column's own
    variance, which in a loose box can be far below the release's noise
    (Student t columns in their min/max box: 0.007 box units; digits' faint
    pixels: 1e-3, against a noise sd of 0.07 at n = 1,348 and epsilon 2).
    Any value the noise puts on such a *faint* column overstates it tens of
    times, far worse than the zero matrix's answer 0; a column that fills
    its box, measured at 2 to 4 sds of its noise, is better kept. No rule on
    one column tells the two apart, so the rule reads all the columns:

    * where some released variance is below 0 (a faint column shows itself
      about half the time, so a table with several shows at least one), or
      the median variance is below ``LENIENT_SDS`` = 2 sds of its noise (a
      table whose columns are mostly near the noise), a variance is kept only
      above the one-sided ``1 - 0.001 / d`` quantile of its own noise
      (:func:`_variance_sd`): a faint column is overstated by more than that
      in about one fit in a thousand;
    * otherwise it is kept from 2 sds of its noise. A table with a single
      faint column among wide ones is then overstated in about 2% of fits
      (the faint column's noise above 2 sds), Student t columns in their
      min/max box (all near the noise) in 0.2-0.6% (0.1% under the strict
      rule alone): the price of keeping the columns of the tables that fill
      their boxes. On the real-data benchmark's 13 tables x 5 budgets x n
      grid (10 seeds, the release alone) the rows whose median is above the
      better of the zero matrix and the private diagonal by 5%, or whose
      worst seed is beyond 3 times it, fell from 44 (the strict rule alone)
      to 22.

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
    pure : bool, default=False
        Pure DP noise rather than Gaussian. Unused: the noise's law is read
        from the mechanism.

    Returns
    -------
    MeasuredVariances
    """
    d = Z.shape[1]
    if centered:
        first, squares = box_moments(Z, np.zeros(d), np.ones(d))
        mech = plan.calibrate("diagonal", n_partials=n_partial_sums(Z))
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
    tau, quantile = _variance_sd(mech, d, centered, mean, var)
    z = raw / tau
    lenient = np.min(z) >= 0.0 and np.median(z) >= LENIENT_SDS
    threshold = LENIENT_SDS * tau if lenient else quantile
    measured = raw >= threshold
    upper = np.minimum(np.maximum(raw, 0.0) + quantile, 1.0)
    values = np.where(measured, np.minimum(raw, upper) / upper, 0.0)
    scale = np.sqrt(upper) * np.where(measured, 1.0, UNMEASURED_SCALE)
    noise_sd = float(np.min(np.minimum(tau / upper, 1.0)))
    return MeasuredVariances(mean, values, scale, noise_sd, measured)


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
