"""Per-coordinate means and variances of box rows from one weighted release.

Not an estimator module. Rows in box units ``z = clip((x - c) / h, -1, 1)``
(:mod:`dpgauss.releases._box`) have entries in [-1, 1]. One release of the
2d-vector

    w = (1/n) sum_i (z_i, z_i ** 2 / b),     b = SQUARE_WEIGHT = 2/3,

gives the means ``m`` and the second moments ``s = b w[d:]`` about the box
centre, hence the variances ``s - m^2``: the second moments carry b times
the means' noise. The diagonal release of :mod:`dpgauss.releases._diagonal`
is the case b = 1.

*Sensitivity* (replace one row; n, d, the box and b public). One coordinate
of the replaced row moves from x to y, both in [-1, 1], and changes its
entries of ``n w`` by ``(y - x, (y^2 - x^2) / b)``. With ``s = |x + y|`` and
``t = |x - y|``, ``s + t = 2 max(|x|, |y|) <= 2``, so

* l1: ``t + t s / b <= (2 - s)(1 + s / b)``, a concave parabola in s whose
  maximum on [0, 2] is ``(2 + b)^2 / (4 b) = 8/3`` (at ``s = 1 - b/2``);
* l2: ``t^2 (1 + s^2 / b^2) <= (2 - s)^2 (1 + 9 s^2 / 4)``, and ``(2 - s)^2
  (4 + 9 s^2) - 16 = s h(s)`` with ``h(s) = 9 s^3 - 36 s^2 + 40 s - 16``:
  ``h(0) = -16``, ``h(2) = -8`` and its only local maximum on [0, 2], at
  ``s = (72 - sqrt(864)) / 54 ~ 0.79``, is about -2.4, so ``h < 0`` and the
  bound is at most ``16 / 4 = 4``: at most 2 per coordinate, the l2
  sensitivity of the means alone. (Any b below about 0.6006 would raise it.)

Over the d coordinates: l1 ``8 d / (3 n)``, l2 ``2 sqrt(d) / n``. In floating
point each computed square is within ``u`` of the exact one (``2u / n`` per
coordinate between neighbours), each computed mean of n entries bounded by 1
within ``e = summation_error(n, n)`` of the exact one (``2e`` between two
neighbouring data sets, any summation order, :mod:`dpgauss.utils._sums`), and
the division by b (a multiplication by 3/2) adds a relative ``u`` to each
second moment (``4u / b`` as a margin); :func:`moments_mechanism` adds these
to each entry's bound (the l2 rounding part over all 2d entries).

Against the per-coordinate baselines at the same whole cost (means on the
box; second moments at half the cost, means at the other half): under zCDP
the means' noise is the baseline's and the second moments' ``b sqrt(2) ~
0.94`` of theirs; under pure DP the means' noise is ``4/3`` of the baseline's
and the second moments' ``8/9``. The variances ``s - m^2`` also take the
squared mean's noise, which the baselines pay at half the cost.

Everything after the release (the variances, their projection onto [0, 1],
their shrinkage towards 0, the map back) is post-processing.
"""

import math

import numpy as np

from dpgauss.accounting import ZCDP
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.releases._diagonal import (
    BOX_FILL,
    PRIOR_VARIANCE,
    REFERENCE_CORRELATION,
)
from dpgauss.utils._sums import summation_error

__all__ = [
    "SQUARE_WEIGHT",
    "moments_entries",
    "moments_error",
    "moments_mechanism",
    "release_moments",
]

_U = 2.0**-53

#: b: the second moments are released divided by b, so their noise is b
#: times the means' (module docstring). 2/3 is a round value just above the
#: largest b (about 0.6006) at which the l2 sensitivity stays that of the
#: means alone.
SQUARE_WEIGHT = 2.0 / 3.0

#: The sensitivities per coordinate in units of 1/n (module docstring).
_L1 = (2.0 + SQUARE_WEIGHT) ** 2 / (4.0 * SQUARE_WEIGHT)
_L2 = 2.0


def moments_mechanism(cost, n, d):
    """The mechanism of the ``box_moments`` release (module docstring).

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._box_moments import moments_mechanism
    >>> round(moments_mechanism(PureDP(1.0), n=300, d=3).sensitivity, 6)
    0.026667
    """
    e = summation_error(n, n)
    b = SQUARE_WEIGHT
    mean_round = 2.0 * e
    square_round = (2.0 * _U / n + 2.0 * e + 4.0 * _U) / b
    if isinstance(cost, ZCDP):
        rounding = math.sqrt(2.0 * d) * max(mean_round, square_round)
        sensitivity = math.sqrt(d) * _L2 / n + rounding
        return GaussianMechanism(sensitivity=sensitivity, rho=cost.rho)
    sensitivity = d * _L1 / n + d * (mean_round + square_round)
    return LaplaceMechanism(sensitivity=sensitivity, epsilon=cost.epsilon)


def moments_entries(total, n, d):
    """The plan of the release: ``box_moments`` at the whole cost.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._box_moments import moments_entries
    >>> [r.name for r in moments_entries(ZCDP(0.5), 100, 3)]
    ['box_moments']
    """

    def make(cost):
        return moments_mechanism(cost, n, d)

    return [Release("box_moments", total, kind_of(total), make, size=2 * d)]


def _noise(var, mean=0.0):
    """The noise variance of one released variance ``s - m^2 + var``: the
    second moment's ``b^2 var`` and the squared mean's ``4 m^2 var + 2
    var^2``."""
    return SQUARE_WEIGHT**2 * var + 4.0 * mean * mean * var + 2.0 * var * var


def moments_error(mechanism, d, fill=BOX_FILL):
    """Predicted errors on the reference data of
    :func:`~dpgauss.releases._diagonal.reference_norm` (box units, means 0):
    the means' l2 error and the diagonal covariance's Frobenius error (each
    variance's noise capped by the projection onto [0, 1] at ``max(fill, 1 -
    fill)``, the off-diagonal entries left at 0). Public values only."""
    var = mechanism.variance(2 * d)
    noise = math.sqrt(d) * min(math.sqrt(_noise(var)), max(fill, 1.0 - fill))
    off = REFERENCE_CORRELATION * fill * math.sqrt(d * (d - 1.0))
    return math.sqrt(d * var), math.hypot(noise, off)


def release_moments(Z, plan, rng):
    """Release the per-coordinate means and variances of box rows ``Z``.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows in ``[-1, 1]^d`` (:func:`~dpgauss.releases._box.box_offsets`).
    plan : ReleasePlan
        With the release ``"box_moments"``.
    rng : numpy.random.Generator
        The fit's noise stream.

    Returns
    -------
    mean : ndarray of shape (d,)
        The released means, projected into [-1, 1].
    variances : ndarray of shape (d,)
        ``s - m^2 + var(m noise)`` (unbiased for the squared mean's noise),
        projected onto [0, 1] where every variance of a box coordinate lies,
        then shrunk towards 0 by its noise.
    noise_sd : float
        The public sd of one mean's noise.
    """
    n, d = Z.shape
    means = np.sum(Z, axis=0) / n
    squares = np.sum(Z * Z, axis=0) / n
    mech = plan.calibrate("box_moments")
    value = np.concatenate([means, squares * (1.0 / SQUARE_WEIGHT)])
    noisy = np.asarray(mech.randomise(value, rng), dtype=np.float64)
    noisy = np.nan_to_num(noisy, nan=0.0, posinf=1.0, neginf=-1.0)
    var = float(mech.variance(2 * d))
    mean = np.clip(noisy[:d], -1.0, 1.0)
    variances = SQUARE_WEIGHT * noisy[d:] - mean * mean + min(var, 1.0)
    # Project onto [0, 1] (never farther from the truth), then shrink towards
    # 0 by the public noise and the released mean (post-processing; both keep
    # it in [0, 1]). Towards 0, not the diagonal release's prior mean: a
    # variance the noise swamps is then at most the zero matrix's error in
    # relative terms, while one pulled up to the prior mean was 14 times the
    # variance of columns that fill a tenth of their box (Student t rows in
    # their min/max box).
    variances = np.clip(variances, 0.0, 1.0)
    weight = PRIOR_VARIANCE / (PRIOR_VARIANCE + _noise(var, mean))
    variances = weight * variances
    return mean, np.clip(variances, 0.0, 1.0), math.sqrt(var)
