"""Which released variances to keep: the rule for columns fainter than the noise.

Not an estimator module. The per-coordinate releases of the covariance
estimators (:mod:`dpgauss.releases._variances`) and of the Gaussian in a box
(:mod:`dpgauss.releases._box_gaussian`, :mod:`dpgauss.releases._box_staged`)
release each box coordinate's mean ``m`` and second moment ``s`` with noise,
and estimate its variance as ``v = s - m^2 + V`` (``V`` the mean's noise
variance, which the squared noisy mean takes away on average).

Their error is relative to each column's own variance, which in a loose box
can be far below the noise (Student t columns in their min/max box: 0.007
box units; digits' faint pixels: 1e-3, against a noise sd of 0.07 at
n = 1,348 and epsilon 2). Any value the noise puts on such a *faint* column
overstates it tens of times, far worse than the zero matrix's answer 0; a
column that fills its box, measured at 2 to 4 sds of its noise, is better
kept. No rule on one column tells the two apart, so
:func:`~dpgauss.releases._measured.kept` reads all the columns:

* where some released variance is below 0 (a faint column shows itself
  about half the time, so a table with several shows at least one), or the
  median is below :data:`~dpgauss.releases._measured.LENIENT_SDS` = 2 sds
  of its noise (a table whose columns are mostly near the noise), a
  variance is kept only above the one-sided ``1 - BETA / d`` quantile of
  its own noise (``BETA = 0.001``): a faint column is overstated by more
  than that in about one fit in a thousand;
* otherwise it is estimated by the garrote ``r - (g s)^2 / r`` from ``g s``
  (:data:`~dpgauss.releases._measured.GARROTE_SDS` ``g = 1``, 0 below;
  :func:`~dpgauss.releases._measured.estimated`): the plug-in of the factor
  that minimises a kept variance's expected relative error. A table with a
  single faint column among wide ones is then overstated in about 16% of
  fits (its noise above 1 sd; mean squared overstatement 0.17 noise
  variances, against 0.10 at ``g = 1.25`` and 0.13 for a hard threshold at
  2 sds): the price of keeping the columns of the tables that fill their
  boxes. On the real-data benchmark's 13 tables x 5 budgets x n grid (10
  seeds, the covariance estimators' release alone) the rows whose median is
  above the better of the zero matrix and the private diagonal by 5%, or
  whose worst seed is beyond 3 times it, fell from 44 (the strict rule
  alone) to 22 (then a hard threshold at 2 sds) and from 38 to 19 with the
  garrote at 1.25; at 1 the tested fails of the 30-seed benchmark fell from
  103 to 100 (see ``GARROTE_SDS``).

:func:`variance_noise` gives each variance's noise sd and quantile. The
quantile is exact for the cube's K-norm noise (:func:`_cube_quantile`) and
the Gaussian's; for the Laplace's it is one Laplace's, whose tail is the
heavier in sds. Everything here is post-processing: it reads released values
and public noise parameters only, and the guarantee is the release's.
"""

import functools
import math
from statistics import NormalDist

import numpy as np
from scipy import integrate, optimize, special

from dpgauss.mechanisms import LaplaceMechanism, LInfinityMechanism
from dpgauss.releases._measured import BETA, estimated, noise_quantile

__all__ = [
    "moments_variances",
    "noise_law",
    "significance",
    "variance_noise",
]


def noise_law(mechanism, size, weight):
    """The keyword arguments of :func:`variance_noise` for a release drawn by
    ``mechanism`` on ``size`` entries, its second moments released times
    ``weight``: the cube's scale for its K-norm noise, whether it is the
    Laplace's otherwise (public: the mechanism's calibration)."""
    if isinstance(mechanism, LInfinityMechanism):
        return {"cube": (mechanism.effective_scale(), size, weight)}
    return {"laplace": isinstance(mechanism, LaplaceMechanism)}


def variance_noise(mean, var_mean, var_second, *, laplace=False, cube=None):
    """The sd of each released variance's noise and its one-sided
    ``1 - BETA / d`` quantile (box units), given the released means.

    The noise of ``v_j = s_j - m_j^2 + V`` is ``e_s - 2 m e - e^2 + V``
    (``e_s`` the second moment's, of variance ``var_second``; ``e`` the
    mean's, of variance ``V = var_mean``); ``-e^2 <= 0`` only lowers it, so
    the quantile is that of ``e_s - 2 m e`` plus ``V``, and its sd is
    ``sqrt(var_second + 4 m^2 V + 2 V^2)``. It grows with ``|m|``, which only
    the noisy mean shows, and the noise that pulls an edge column's mean
    towards 0 is the noise that inflates its variance (digits: a pixel's
    mean -0.99 released at -0.50 and its variance 0.005 released at 5.5 sds
    of the noise computed at -0.50). So both use ``|m| <= |mean| + sqrt(V)``
    (at most 1). With ``var_mean = 0`` (second moments released alone) the
    noise is the second moment's.

    Parameters
    ----------
    mean : ndarray of shape (d,)
        The released means in [-1, 1].
    var_mean, var_second : float or ndarray of shape (d,)
        The public noise variances of a mean and a second moment.
    laplace : bool, default=False
        Laplace noise (its quantile in sds, the heavier tail).
    cube : tuple (scale, size, weight) or None, default=None
        The cube's K-norm noise of this scale on ``size`` entries, the second
        moments released times ``weight``: the exact quantile.

    Returns
    -------
    sd, quantile : ndarray of shape (d,)
    """
    mean = np.asarray(mean, dtype=np.float64)
    d = mean.shape[0]
    var_mean = np.broadcast_to(np.asarray(var_mean, dtype=np.float64), (d,))
    bound = np.minimum(np.abs(mean) + np.sqrt(var_mean), 1.0)
    sd = np.sqrt(var_second + 4.0 * bound**2 * var_mean + 2.0 * var_mean**2)
    p = BETA / max(d, 1)
    if cube is not None:
        scale, size, weight = cube
        # The slope 2 |m| per unit of the mean's noise, rounded up to 1/256:
        # the quantile grows with it.
        steps = np.ceil(2.0 * bound * np.where(var_mean > 0.0, 1.0, 0.0) * 256.0)
        quantile = scale * np.array(
            [_cube_quantile(size, 1.0 / weight, k / 256.0, p) for k in steps]
        )
    else:
        spread = np.sqrt(var_second + 4.0 * bound**2 * var_mean)
        quantile = noise_quantile(d, laplace) * spread
    return sd, quantile + np.minimum(var_mean, 1.0)


def moments_variances(second, mean, var_mean, var_second, *, laplace=False, cube=None):
    """The variances ``second - m^2 + var_mean`` (the raw second moment about
    the box centre less the squared mean, unbiased for the squared mean's
    noise), kept where they rise above their noise
    (:func:`~dpgauss.releases._measured.estimated`, which reads all the
    columns) and 0 elsewhere, in [0, 1] (where every variance of a box coordinate lies).
    Under a relative error (each column in its own units, as mixed units
    need) an overshoot is unbounded while an undershoot costs at most the
    zero matrix's error. ``laplace`` and ``cube`` describe the noise (see
    :func:`variance_noise`). Post-processing."""
    raw = np.clip(second - mean * mean + min(var_mean, 1.0), -1.0, 1.0)
    sd, quantile = variance_noise(
        mean, var_mean, var_second, laplace=laplace, cube=cube
    )
    return estimated(raw, sd, quantile)


#: The expected number of off-diagonal entries the noise alone would keep
#: (:func:`significance`): a twentieth, over all of them.
FALSE_KEEPS = 0.05


def significance(d, laplace):
    """k, the noise sds one of ``d`` released entries must clear to be kept
    (the staged plan's off-diagonal covariances): the one-sided tail of the
    noise at :data:`FALSE_KEEPS` / d, ``Phi^-1(1 - FALSE_KEEPS / d)`` for
    Gaussian noise, ``log(d / (2 FALSE_KEEPS)) / sqrt(2)`` for Laplace noise
    (whose tail ``exp(-sqrt(2) k) / 2`` is heavier). Public values only."""
    if laplace:
        return math.log(d / (2.0 * FALSE_KEEPS)) / math.sqrt(2.0)
    return float(NormalDist().inv_cdf(1.0 - FALSE_KEEPS / d))


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
