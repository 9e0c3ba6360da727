"""The scaler's warning before the spend: columns its box-fixed noise swamps.

Not an estimator module. :class:`~dpgauss.preprocessing.PrivateStandardScaler`
releases per-coordinate means and second moments of the rows mapped into
their public box, with noise set by the box, n, d and the cost alone: about
the simplest private answer with the box (the diagonal baseline's two
releases joined into one). A column whose spread fills little of its box
gets that noise at full size, and its scale, read from a variance a few
noise levels above 0, lands far from the rows' own sd. This module predicts
from public values only (n, d, the planned mechanism) the column sd, in box
half-widths, below which that happens, so the fit can warn before it spends.

A column of sd ``sigma`` (box units) with its mean at the box's centre is
released with mean noise of sd ``a`` and variance noise of sd ``v`` (``v^2 =
b^2 + 2 a^4``: b the second moment's noise sd, ``2 a^4`` the variance of the
squared mean's noise). In units of the column's sd its mean is off by ``a /
sigma`` and its scale by about ``e_s = min(v / (2 sigma^2), sqrt(v) /
sigma)``: the first term is the square root's first-order expansion, valid
while the noise is below the variance; above it the released variance is
noise-sized and the scale about ``sqrt(v)``. The non-private estimate's
errors in the same units are ``1 / sqrt(n)`` (mean) and ``1 / sqrt(2 n)``
(scale) on Gaussian rows. The fit is predicted beyond
:data:`~dpgauss.releases._prediction.ASTRAY` times the column's sampling
error where ``sqrt((a / sigma)^2 + e_s^2) > ASTRAY sqrt(3 / (2 n))``; the
error falls as sigma grows, and :func:`scale_reach` is the sd where it
crosses. Without the variance (``with_std=False``) only the mean counts,
against ``ASTRAY / sqrt(n)``: the whole-box mean's rule
(:func:`~dpgauss.releases._box_mean.faint_reach`).

Privacy: a function of n, d and the calibrated mechanism's public noise
only; computing it, or warning from it, reads no row.
"""

import math

from dpgauss.releases._box_mean import FAINT_SD, reach_of_noise
from dpgauss.releases._moments import SECOND_WEIGHT
from dpgauss.releases._prediction import ASTRAY

__all__ = ["FAINT_SCALE", "column_error", "scale_reach", "scaler_faint_warning"]

#: The column sd, in box half-widths, down to which a scaler fit (mean and
#: scale) is expected within ASTRAY times each column's sampling error
#: without a warning. The whole-box mean's reference (:data:`~dpgauss.
#: releases._box_mean.FAINT_SD`, 0.05) would have the scaler warn before 97%
#: of the real-data benchmark's fits (2,150 of 2,220): the scale's error grows
#: as ``1 / sigma^2``, so a column that faint is beyond 10 times its sampling
#: error at every budget there but the largest n. At 0.1 the warning is given
#: before 1,650 of those fits (with the released-variance warning, 1,738 warn,
#: 1,396 before), and every fit beyond 10 times the non-private error is warned
#: (Student t columns of sds 0.05-0.08 at epsilon 0.5, n = 2,000 were not).
FAINT_SCALE = 0.1


def column_error(sigma, mean_sd, variance_sd=None):
    """Predicted error of one column's mean and scale, in units of its sd
    ``sigma`` (box units; module docstring). ``variance_sd`` None: the mean
    alone.

    Examples
    --------
    >>> from dpgauss.preprocessing._faint_scale import column_error
    >>> round(column_error(0.1, 0.01), 6)
    0.1
    >>> round(column_error(0.1, 0.0, 0.002), 6)
    0.1
    """
    mean = mean_sd / sigma
    if variance_sd is None:
        return mean
    scale = min(variance_sd / (2.0 * sigma * sigma), math.sqrt(variance_sd) / sigma)
    return math.hypot(mean, scale)


def noise_sds(mechanism, d, with_std=True, weight=SECOND_WEIGHT):
    """The sds of one released mean's noise and one released variance's (None
    without the variance), box units, for the scaler's release of ``(m, w
    s)`` (2d entries; ``m`` alone, d entries, without the variance)."""
    if not with_std:
        return math.sqrt(mechanism.variance(d)), None
    var = mechanism.variance(2 * d)
    second = var / (weight * weight)
    return math.sqrt(var), math.sqrt(second + 2.0 * var * var)


def scale_reach(mechanism, n, d, *, with_std=True, weight=SECOND_WEIGHT):
    """The column sd, in box half-widths, below which the release is predicted
    beyond ASTRAY times the column's non-private sampling error (public:
    the mechanism, n, d; at most 1, the largest sd in the box).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._moments import moments_mechanism
    >>> from dpgauss.preprocessing._faint_scale import scale_reach
    >>> mech = moments_mechanism(ZCDP(0.5), 1000, 4)
    >>> round(scale_reach(mech, 1000, 4), 3)
    0.055
    """
    mean_sd, variance_sd = noise_sds(mechanism, d, with_std, weight)
    if variance_sd is None:  # the mean alone: the whole-box mean's closed form
        return min(reach_of_noise(mean_sd, n), 1.0)
    limit = ASTRAY * math.sqrt(1.5 / n)
    if column_error(1.0, mean_sd, variance_sd) > limit:
        return 1.0
    low, high = 0.0, 1.0  # beyond the limit below ``low``, within it at ``high``
    for _ in range(60):
        mid = 0.5 * (low + high)
        if mid > 0.0 and column_error(mid, mean_sd, variance_sd) <= limit:
            high = mid
        else:
            low = mid
    return high


def scaler_faint_warning(
    owner, mechanism, total, n, d, *, with_std=True, weight=SECOND_WEIGHT
):
    """The warning of a scaler fit whose noise puts columns with sds of
    :data:`FAINT_SCALE` half-widths (:data:`~dpgauss.releases._box_mean.
    FAINT_SD` for the mean alone) beyond ASTRAY times their sampling errors,
    or None. Public values only: the mechanism's noise, n, d, the cost."""
    reach = scale_reach(mechanism, n, d, with_std=with_std, weight=weight)
    if reach < (FAINT_SCALE if with_std else FAINT_SD):
        return None
    what = "mean and scale" if with_std else "mean"
    return (
        f"{owner}: with n={n}, d={d} and {total}, the {what} of a column whose "
        f"sd is below {reach:.2g} of its box half-width would land beyond "
        f"{ASTRAY:g} times their non-private sampling error: the noise is fixed "
        "by the box, not by the rows' spread. A tighter box, more rows or a "
        "larger budget help."
    )
