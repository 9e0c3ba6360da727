"""The per-coordinate mean and second moment of box rows as one release.

Not an estimator module. Rows in a public box are mapped to
``z = clip((x - c) / h, -1, 1)`` (:func:`~dpgauss.releases._box.box_offsets`;
``|z_j| <= 1`` exactly as computed) and ``v = fl(fl(z^2) - 1/2)``, in
[-1/2, 1/2] exactly (``fl(z^2)`` is in [0, 1] since rounding is monotone and
0, 1/2 and 1 are floats). The release is the 2d-vector ``(m, w s)`` of the
means ``m = (1/n) sum_i z_i`` and ``s = (1/n) sum_i v_i``, at one cost, for a
public weight ``w > 0`` on the squares: ``PrivateStandardScaler``'s
``moments`` and ``PrivatePCA``'s ``axes`` take ``w = 2``
(:data:`SECOND_WEIGHT`), ``PrivateGaussianEstimator(bounds=...)``'s
``box_moments`` ``w = 3/2``. The centred squares ``z^2 - 1/2`` are the
better-conditioned statistic (half the range of the raw ones, about 0); the
raw second moment about the box centre is ``s + 1/2`` (post-processing).

**Sensitivity** (replace one row; n, d, the box and w public). One coordinate
of the replaced row moves from a to b, both in [-1, 1]; with ``t = |b - a|``
and ``q = |a + b|``, ``t + q = 2 max(|a|, |b|) <= 2``, and the coordinate's
pair of entries of ``n (m, w s)`` moves by ``(b - a, w (b^2 - a^2))``, of
size ``(t, w t q)`` in exact arithmetic. Both bounds below are reached
(``b = 1``, ``a = q - 1`` at the maximising q), so they are the
sensitivities per coordinate, times ``sqrt(d) / n`` (l2) and ``d / n`` (l1)
over the d coordinates (:func:`moments_l2`, :func:`moments_l1`):

* l1: ``t (1 + w q) <= (2 - q)(1 + w q) = 2 + (2 w - 1) q - w q^2``, a
  concave parabola in q with vertex ``q = 1 - 1/(2 w)``: in [0, 2] for
  ``w >= 1/2``, where the maximum is ``(2 w + 1)^2 / (4 w)``; below, the
  parabola decreases on [0, 2] and the maximum is ``2`` (at ``q = 0``).
  ``w = 2``: 25/8; ``w = 3/2``: 8/3.
* l2: ``t^2 (1 + w^2 q^2) <= g(q) = (2 - q)^2 (1 + w^2 q^2)``, with ``g'(q) =
  2 (2 - q)(-2 w^2 q^2 + 2 w^2 q - 1)``. For ``w^2 < 2`` the quadratic has
  no real root and is negative, so g decreases on [0, 2] and the maximum is
  ``g(0) = 4``. For ``w^2 >= 2`` it is positive between its roots ``q-/+ =
  1/2 -/+ sqrt(w^4 - 2 w^2) / (2 w^2)`` (both in [0, 1]), so g decreases,
  rises, then decreases after ``q+``: the maximum is ``max(4, g(q+))``.
  ``w = 2``: ``q+ = (2 + sqrt(2)) / 4``, ``g = (71 + 8 sqrt(2)) / 16``, l2
  2.26817... (:data:`MOMENTS_L2` = 2.2683: four decimals at least 5e-5
  above it, a margin far beyond the float evaluation's error); ``w = 3/2``: ``q+ =
  2/3``, ``g = 32/9 < 4``, l2 2, that of the means alone (any w up to about
  1.665 keeps it: a coordinate's mean moves by 2 only when its square does
  not move).

**Floating point.** ``fl(z^2)`` is within ``u`` of ``z^2`` and ``fl(fl(z^2)
- 1/2)`` within ``u / 2`` of that, so each computed v is within ``3 u / 2`` of
``z^2 - 1/2`` and a coordinate's entry of ``n w s`` moves by at most ``w (t
q + 3 u)``: ``+ 4 w u`` per coordinate in l2 and l1 (triangle inequality).
The chunked means of m and of s are within ``e sqrt(d)`` and ``e sqrt(d) /
2`` of the exact ones (l2; ``e = summation_error``, rows of norm
``sqrt(d)`` and ``sqrt(d) / 2``), so the computed ``(m, w s)`` is within
``e sqrt(d) sqrt(1 + w^2 / 4) <= e sqrt(2 d) max(1, w / 2)`` (l1: ``e d (1 +
w / 2)``) and neighbours' differ by at most twice that more. The product
``fl(w s)`` is within ``u w |s| <= u w`` of ``w s`` (``|s| <= 1/2 + e``):
``2 u w`` more per entry between neighbours, none when w is a power of two
at least 1 (the product is then exact). :func:`moments_mechanism` adds all
of it.

**l-infinity** (pure DP). Each entry of ``n (m, w s)`` moves by at most
``t <= 2`` (a mean) or ``w t q <= w`` (a square: ``t q <= ((t + q) / 2)^2
<= 1``), so the vector's l-infinity sensitivity is ``max(2, w) / n`` in exact
arithmetic; per entry the rounding adds at most ``2 e`` (a mean: a chunked
mean of values in [-1, 1] is within ``e`` of the exact one) or ``w (3 u / n
+ e) + 2 u w`` (a square, as above). Under a pure cost the release takes the
cube's K-norm noise (:mod:`dpgauss.mechanisms._linf`) when its per-entry
variance ``(2d + 1)(2d + 2) / 3 (Dinf / epsilon)^2`` is below the Laplace's
``2 (D1 / epsilon)^2``: always at ``w = 2`` (0.90 of the Laplace sd at d = 1,
0.60 at d = 5, 0.53 at d = 30) and at ``w = 3/2`` (0.70 at d = 5).

Why joint (``w = 2``): two releases at half the cost each put noise of sd
``2 sqrt(2) k`` on m and ``sqrt(2) k`` on s (``k = sqrt(d) / (n sqrt(2
rho))``; Laplace: scales ``4 d / (n epsilon)`` and ``2 d / (n epsilon)``);
the joint release puts ``2.27 k`` and ``1.13 k`` (Laplace: ``3.125`` and
``1.5625`` times ``d / (n epsilon)``), about 20% less on both, because one
row cannot move both statistics by their largest amounts at once (t = 2
forces q = 0). On statsmodels' and scikit-learn's tables (40 seeds) the
scaler's median error was 0.53-0.96 times that of the two releases'
baseline. With ``w = 3/2`` the means' noise is, under zCDP, that of the
means released alone at the whole cost (the squares come free); under pure
DP, 4/3 of it.
"""

import math
from fractions import Fraction

import numpy as np

from dpgauss.accounting import ZCDP
from dpgauss.mechanisms._additive import GaussianMechanism
from dpgauss.mechanisms._factory import additive
from dpgauss.releases._box import box_offsets
from dpgauss.utils._sums import over_chunks, summation_error

__all__ = [
    "MOMENTS_L1",
    "MOMENTS_L2",
    "SECOND_WEIGHT",
    "box_moments",
    "moments_l1",
    "moments_l2",
    "moments_mechanism",
    "moments_sensitivities",
    "variance_noise_variance",
    "weighted_moments",
]

#: Weight of the second statistic in the scaler's and PCA's release: the
#: vector ``(m, 2 s)``. With it the noise of both halves is about 20% below
#: that of two separate releases at half the cost each (module docstring).
SECOND_WEIGHT = 2.0
_U = 2.0**-53
#: Relative allowance for the float evaluation of the l2 bound (a few units
#: of roundoff; g is flat at its maximiser, so an error in ``q+`` is second
#: order).
_SLACK = 1e-12


def _check_weight(weight):
    weight = float(weight)
    if not (math.isfinite(weight) and weight > 0.0):
        raise ValueError(f"the square weight must be finite and > 0, got {weight}")
    return weight


def moments_l1(weight=SECOND_WEIGHT):
    """The l1 sensitivity per coordinate (times n) of ``(z, w v)``: ``(2 w +
    1)^2 / (4 w)`` for ``w >= 1/2``, else 2 (module docstring), computed
    exactly for the float w and rounded up to a float.

    Examples
    --------
    >>> from dpgauss.releases._moments import moments_l1
    >>> moments_l1(2.0), moments_l1(0.25)
    (3.125, 2.0)
    """
    w = Fraction(_check_weight(weight))
    if w <= Fraction(1, 2):
        return 2.0
    exact = (2 * w + 1) ** 2 / (4 * w)
    bound = float(exact)
    if Fraction(bound) < exact:
        bound = math.nextafter(bound, math.inf)
    return bound


def moments_l2(weight=SECOND_WEIGHT):
    """The l2 sensitivity per coordinate (times n) of ``(z, w v)``:
    ``sqrt(max(4, g(q+)))``, 2 when ``w^2 < 2`` (module docstring). Above 2 it
    is rounded up to four decimals at least ``5e-5`` above the float value
    (a margin far beyond the evaluation's error, relative 1e-12 allowed).

    Examples
    --------
    >>> from dpgauss.releases._moments import moments_l2
    >>> moments_l2(2.0), moments_l2(1.5)
    (2.2683, 2.0)
    """
    w2 = _check_weight(weight) ** 2
    if w2 < 2.0:
        return 2.0
    q = 0.5 + math.sqrt(w2 * w2 - 2.0 * w2) / (2.0 * w2)
    g = (2.0 - q) ** 2 * (1.0 + w2 * q * q) * (1.0 + _SLACK)
    if g <= 4.0:
        return 2.0
    return math.ceil((math.sqrt(g) * (1.0 + _SLACK) + 5e-5) * 1e4) / 1e4


#: The scaler's and PCA's sensitivities per coordinate (times n):
#: ``sqrt(71 + 8 sqrt(2)) / 4 = 2.26817...`` rounded up (2.2683), and 25/8.
MOMENTS_L2 = moments_l2(SECOND_WEIGHT)
MOMENTS_L1 = moments_l1(SECOND_WEIGHT)


def _chunk_moments(chunk, center, half_width, second):
    z = box_offsets(chunk, center, half_width)
    # fl(fl(z^2) - 1/2) is in [-1/2, 1/2] exactly (module docstring).
    return z.sum(axis=0), (z * z - 0.5).sum(axis=0) if second else None


def box_moments(X, center, half_width, second=True):
    """The clipped statistics of the release, before noise and weight.

    Parameters
    ----------
    X : ndarray, memory-mapped or dask array of shape (n_samples, n_features)
        The rows (read in chunks, not modified).
    center, half_width : ndarray of shape (n_features,)
        The public box.
    second : bool, default=True
        Also compute the second statistic.

    Returns
    -------
    mean : ndarray of shape (n_features,)
        ``(1/n) sum_i z_i``, z the rows in the unit box (:func:`box_offsets`).
    second_moment : ndarray of shape (n_features,) or None
        ``(1/n) sum_i (z_i^2 - 1/2)`` (None when ``second`` is False).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._moments import box_moments
    >>> X = np.array([[1.0], [3.0], [1e12]])
    >>> box_moments(X, np.array([2.0]), np.array([2.0]))
    (array([0.33333333]), array([0.]))
    """
    n = X.shape[0]
    first, squares = over_chunks(X, _chunk_moments, center, half_width, second)
    with np.errstate(all="ignore"):
        return first / n, squares / n if second else None


def variance_noise_variance(var, weight, mean=0.0):
    """The noise variance of one variance ``s + 1/2 - m^2 + var`` read off a
    moments release whose entries carry noise of variance ``var``, the
    centred squares weighted by ``weight``: the centred square's ``var /
    w^2`` and the squared mean's ``4 m^2 var + 2 var^2`` (public, or a
    function of the released mean ``m``).

    Examples
    --------
    >>> from dpgauss.releases._moments import variance_noise_variance
    >>> variance_noise_variance(0.01, 2.0)
    0.0027
    """
    return var / weight**2 + 4.0 * mean * mean * var + 2.0 * var * var


def weighted_moments(first, squares, weight=SECOND_WEIGHT):
    """The released vector ``(m, w s)`` of :func:`box_moments`' statistics
    (``fl(w s)``, whose rounding :func:`moments_mechanism` allows for).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._moments import weighted_moments
    >>> weighted_moments(np.array([0.5]), np.array([-0.25]), 1.5)
    array([ 0.5  , -0.375])
    """
    return np.concatenate([first, _check_weight(weight) * squares])


def _exact_product(weight):
    """Whether ``fl(w s) = w s`` for every float s in [-1, 1]: w a power of
    two at least 1 (no overflow there)."""
    return weight >= 1.0 and math.frexp(weight)[0] == 0.5


def moments_mechanism(cost, n, d, n_partials=None, weight=SECOND_WEIGHT):
    """The mechanism of the joint release ``(m, w s)`` (2d entries).

    Per coordinate a replaced row moves ``(z, w v)`` by at most
    :func:`moments_l2` in l2 and :func:`moments_l1` in l1, plus ``4 w u`` for
    the rounding of ``v``; the chunked means add ``2 e sqrt(2 d) max(1, w /
    2)`` (l2) or ``(2 + w) e d`` (l1) between neighbours, and the product
    ``fl(w s)`` ``2 u w`` per entry unless exact. See the module docstring.

    Parameters
    ----------
    cost : ZCDP or PureDP
        Gaussian noise for zCDP (l2); for pure DP the Laplace (l1) or the
        cube's K-norm (l-infinity) noise, whichever has the smaller variance.
    n, d : int
        Rows and features (public).
    n_partials : int, default=None
        Chunk sums added (see :func:`~dpgauss.utils._sums.n_partial_sums`).
    weight : float, default=SECOND_WEIGHT
        The public weight w > 0 on the centred squares.

    Returns
    -------
    GaussianMechanism, LaplaceMechanism or LInfinityMechanism

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._moments import moments_mechanism
    >>> mech = moments_mechanism(PureDP(1.0), n=100, d=4)
    >>> type(mech).__name__, round(mech.sensitivity, 6)
    ('LInfinityMechanism', 0.02)
    >>> round(moments_mechanism(PureDP(1.0), n=300, d=3, weight=1.5).sensitivity, 6)
    0.006667
    """
    bounds = moments_sensitivities(n, d, n_partials, weight)
    if isinstance(cost, ZCDP):
        return GaussianMechanism(sensitivity=bounds["l2"], rho=cost.rho)
    return additive(
        cost, l2=bounds["l2"], l1=bounds["l1"], linf=bounds["linf"], size=2 * d
    )


def moments_sensitivities(n, d, n_partials=None, weight=SECOND_WEIGHT):
    """The l2, l1 and l-infinity sensitivities of the computed ``(m, w s)``,
    rounding included (module docstring; public: n, d, the chunk count, w).

    Examples
    --------
    >>> from dpgauss.releases._moments import moments_sensitivities
    >>> bounds = moments_sensitivities(100, 4)
    >>> {k: round(v, 6) for k, v in bounds.items()}
    {'l2': 0.045366, 'l1': 0.125, 'linf': 0.02}
    """
    w = _check_weight(weight)
    e = summation_error(n, n_partials)
    product = 0.0 if _exact_product(w) else 2.0 * _U * w
    # sqrt(d) and sqrt(2 d) rounded up: at least the real roots.
    root = float(np.nextafter(math.sqrt(d), math.inf))
    root2 = float(np.nextafter(math.sqrt(2.0 * d), math.inf))
    l2 = root * (moments_l2(w) + 4.0 * w * _U) / n + 2.0 * e * root2 * max(1.0, w / 2.0)
    l1 = d * (moments_l1(w) + 4.0 * w * _U) / n + (2.0 + w) * e * d
    # l-infinity (module docstring): a mean entry 2/n + 2e, a square entry
    # w (1 + 3u) / n + w e + 2 u w; the larger, rounded up by a relative u.
    linf = max(2.0 / n + 2.0 * e, w * (1.0 + 3.0 * _U) / n + w * e + 2.0 * _U * w)
    return {
        "l2": l2 + product * root,
        "l1": l1 + product * d,
        "linf": float(np.nextafter(linf, math.inf)),
    }
