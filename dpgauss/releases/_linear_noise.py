"""The noise of the linear regression's releases: box rows' sensitivities.

The mechanisms of :mod:`dpgauss.releases._linear` (its module docstring says
how rows are formed). Every entry of a row's features ``z`` and of its target
column (the box target ``t``, or the refinement's scaled residual, both in
[-1, 1]) lies in [-1, 1], and the intercept's column holds the public
constant ``s``. Write ``f`` for the features' part (``(z, s)`` or ``z``, p
entries) and ``a = (f, t)`` for the whole row (q = p + 1 entries): ``||f||^2
<= R_F^2 = d + s^2`` and ``||a||^2 <= R^2 = R_F^2 + 1``.

**Releases** (each a proven mechanism of :mod:`dpgauss.mechanisms._releases`,
at its share of the fit's cost; neighbouring datasets replace one row, n
public):

1. ``lambda_min``: the smallest eigenvalue of ``G = (1/n) sum f f^T``.
   Replacing a row changes G by ``(f' f'^T - f f^T) / n``, whose eigenvalues
   lie in ``[-||f||^2, ||f'||^2] / n``; by Weyl's inequality every eigenvalue
   of G, the smallest included, moves by at most ``R_F^2 / n``: l2 and l1
   sensitivity ``R_F^2 / n``, plus the floating-point terms of
   :func:`~dpgauss.mechanisms._releases.eigenvalue_mechanism` (the computed
   sums within ``e R^2`` of the exact ones, the computed eigenvalue within
   ``10 p u sqrt(p)`` of the computed matrix's). Gaussian noise under zCDP,
   Laplace under pure DP.
2. ``moments`` and ``refine`` (the same mechanism, each at its own share,
   on rows whose last column is t or the refinement's scaled residual, both
   in [-1, 1]): ``M = (1/n) sum a a^T`` of the rows clipped to the ball of
   radius R about 0 (:func:`~dpgauss.utils._sums.clip_rows`, summed on the
   canonical chunks; it scales a box row at a corner by at most ``1 - (q + 8)
   u``, so every entry stays within its bound and the constant's square
   moves by about 1e-15 / n, inside the rounding terms, and is not released
   under pure DP),
   released by :func:`~dpgauss.mechanisms._releases.second_moment_mechanism`:
   ``||a a^T - b b^T||_F^2 = ||a||^4 + ||b||^4 - 2 (a.b)^2 <= 2 R^4``, so
   Frobenius sensitivity ``sqrt(2) R^2 / n`` (zCDP, symmetric Gaussian noise),
   the function's own proof. Under pure DP (symmetric Laplace noise) the box
   does better than the ball's upper-triangle l1 ``min(q + 1, sqrt(2) q) R^2
   / n`` (q = p + 1 entries a row), as for the cube rows of
   :mod:`~dpgauss.releases._cube`: with ``w`` the new row and ``A = w w^T -
   a a^T = ((w - a)(w + a)^T + (w + a)(w - a)^T) / 2``, the sum of all
   ``|A_jl|`` is at most ``||w - a||_1 ||w + a||_1``. Per coordinate of z or
   t, ``|w_j - a_j| + |w_j + a_j| = 2 max(|w_j|, |a_j|) <= 2``; the
   constant's adds 0 to the first norm and ``2 s`` to the second. So the
   first norm is at most ``2 (d + 1)`` and the two sum to at most ``2 (d + 1
   + s)``: their product is at most ``(d + 1 + s)^2`` (``s <= d + 1``). The
   diagonal's entries move by at most 1 (z and t, squares in [0, 1]) or 0
   (the constant's), and the upper triangle's l1 is half the sum of all
   ``|A_jl|`` plus half the diagonal's: **at most ((d + 1 + s)^2 + d + 1) /
   2** over n (without an intercept, s = 0: ``((d + 1)^2 + d + 1) / 2``),
   about half the ball's. Better still, each entry moves by at most 2 /
   n (``|w_j w_l - a_j a_l| <= 2`` for entries in [-1, 1], the constant's
   ``s |w_j - a_j| <= 2 s = 2``) or 1 / n (the squares of z and t), and the
   constant's own square not at all: with the squares doubled, the upper
   triangle less that one entry is a vector of k = q (q + 1) / 2 - 1
   entries of l-infinity sensitivity 2 / n, released by the cube's K-norm
   mechanism (:class:`~dpgauss.mechanisms._linf.LInfinityMechanism`,
   per-entry variance ``(k + 1)(k + 2) / 3 (2 / (n epsilon))^2``, 0.72 of the
   Laplace's at d = 5, and a quarter of it on the squares), the constant's
   square set to its public value ``s^2`` (:class:`CubeMomentsMechanism`;
   whichever of the two has the smaller noise, :func:`moments_mechanism`).
3. ``target_mean`` (with an intercept only): the mean of the first pass's t
   column, ``(1/n) sum t``, the last entry of the rows' computed sum over n.
   t lies in [-1, 1], so replacing a row moves the exact mean by at most 2 /
   n; each data set's computed column sum is within ``e R`` of its exact
   value (the row's l2 norm bounds its column's,
   :func:`~dpgauss.utils._sums.summation_error`), so the sensitivity is ``2
   / n + 2 e R`` (:func:`mean_mechanism`). Gaussian noise under zCDP,
   Laplace under pure DP. Its mean is the intercept's cross moment ``s
   mean(t)``, released alone so that the intercept, and the zero-coefficient
   model the fit falls back to, is not paid with one entry's share of a
   whole matrix's noise.
"""

import math

import numpy as np

from dpgauss.accounting import ZCDP
from dpgauss.mechanisms._factory import additive
from dpgauss.mechanisms._linf import MAX_SIZE, LInfinityMechanism
from dpgauss.mechanisms._releases import second_moment_mechanism
from dpgauss.mechanisms._symmetric import SymmetricLaplaceMechanism
from dpgauss.utils._sums import _U, summation_error

__all__ = [
    "INTERCEPT_SCALE",
    "CubeMomentsMechanism",
    "box_l1",
    "lambda_mechanism",
    "mean_mechanism",
    "moments_mechanism",
]

#: The public constant column of the intercept, in box units (a box column's
#: largest value: the intercept's noise is then that of a coefficient).
INTERCEPT_SCALE = 1.0


def _radii(d, fit_intercept):
    """``(R_F^2, R^2)``: the squared norms of a row's features and of the
    whole augmented row (module docstring)."""
    features = d + (INTERCEPT_SCALE * INTERCEPT_SCALE if fit_intercept else 0.0)
    return features, features + 1.0


def lambda_mechanism(cost, n, d, fit_intercept, n_partials=None):
    """The mechanism of the ``lambda_min`` release (module docstring, 1).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._linear_noise import lambda_mechanism
    >>> mech = lambda_mechanism(ZCDP(0.5), n=1000, d=4, fit_intercept=True)
    >>> round(mech.sensitivity * 1000, 6)  # R_F^2 / n = 5 / 1000
    5.0
    """
    features, whole = _radii(d, fit_intercept)
    p = d + (1 if fit_intercept else 0)
    rounding = 2.0 * (summation_error(n, n_partials) + 10.0 * p * _U * math.sqrt(p))
    sensitivity = features / n + rounding * whole
    return additive(cost, l2=sensitivity, l1=sensitivity)


def mean_mechanism(cost, n, d, fit_intercept, n_partials=None):
    """The mechanism of the ``target_mean`` release (module docstring, 3).

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._linear_noise import mean_mechanism
    >>> mech = mean_mechanism(PureDP(0.5), n=1000, d=4, fit_intercept=True)
    >>> round(mech.sensitivity * 1000, 6)  # 2 / n
    2.0
    """
    whole = _radii(d, fit_intercept)[1]
    sensitivity = 2.0 / n + 2.0 * summation_error(n, n_partials) * math.sqrt(whole)
    return additive(cost, l2=sensitivity, l1=sensitivity)


class CubeMomentsMechanism:
    """Pure-DP noise for the augmented second moment of box rows: the cube's
    K-norm mechanism on its upper triangle, the squares doubled first and the
    constant's square left out (module docstring, 2).

    Parameters
    ----------
    sensitivity : float
        D: the largest change of any entry of the doubled upper triangle
        (``2 / n`` plus the rounding).
    epsilon : float
        The pure DP cost.
    q : int
        The matrix's dimension.
    constant : int or None
        The index of the intercept's constant column (its square is public).
    value : float, default=1.0
        The constant's square, ``s^2``.
    """

    def __init__(self, *, sensitivity, epsilon, q, constant, value=1.0):
        rows, cols = np.triu_indices(q)
        keep = np.ones(rows.size, dtype=bool)
        if constant is not None:
            keep &= ~((rows == constant) & (cols == constant))
        self.rows, self.cols = rows[keep], cols[keep]
        self.weights = np.where(self.rows == self.cols, 2.0, 1.0)
        self.q, self.constant, self.value = int(q), constant, float(value)
        self.size = int(self.rows.size)
        self.inner = LInfinityMechanism(
            sensitivity=sensitivity, epsilon=epsilon, size=self.size
        )
        self.sensitivity, self.cost = self.inner.sensitivity, self.inner.cost

    @property
    def draws(self):
        """Releases drawn (the inner mechanism's)."""
        return self.inner.draws

    @property
    def scale(self):
        """The inner mechanism's noise scale."""
        return self.inner.scale

    def parts(self):
        """The inner mechanism at its size, for the check before the spend."""
        return [(self.inner, self.size, True)]

    def randomise(self, value, random_state=None):
        """The released symmetric matrix: noise on the doubled upper
        triangle, then halved back, mirrored, and the constant's square set to
        its public value (post-processing)."""
        M = np.asarray(value, dtype=np.float64)
        vector = M[self.rows, self.cols] * self.weights
        noisy = np.asarray(self.inner.randomise(vector, random_state)) / self.weights
        out = np.zeros((self.q, self.q))
        out[self.rows, self.cols] = noisy
        out[self.cols, self.rows] = noisy
        if self.constant is not None:
            out[self.constant, self.constant] = self.value
        return out

    def entry_variances(self, size=None):
        """Variances of one noisy square and one noisy off-diagonal entry."""
        off = float(self.inner.sd(self.size)) ** 2
        return off / 4.0, off


def box_l1(d, fit_intercept):
    """The upper triangle's l1 sensitivity times n for box rows (module
    docstring, 2): ``((d + 1 + s)^2 + d + 1) / 2``, s = 0 without an
    intercept.

    Examples
    --------
    >>> from dpgauss.releases._linear_noise import box_l1
    >>> box_l1(5, True), box_l1(5, False)
    (27.5, 21.0)
    """
    s = INTERCEPT_SCALE if fit_intercept else 0.0
    return ((d + 1.0 + s) ** 2 + d + 1.0) / 2.0


def moments_mechanism(cost, n, d, fit_intercept, n_partials=None):
    """The mechanism of the ``moments`` release (module docstring, 2): the
    ball's under zCDP, the box's tighter upper-triangle l1 under pure DP,
    each with the rounding terms of
    :func:`~dpgauss.mechanisms._releases.second_moment_mechanism`.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._linear_noise import moments_mechanism
    >>> mech = moments_mechanism(PureDP(1.0), 1000, 5, True)
    >>> type(mech).__name__, mech.size, round(mech.sensitivity * 1000, 6)
    ('CubeMomentsMechanism', 27, 2.0)
    """
    q = d + (2 if fit_intercept else 1)
    whole = _radii(d, fit_intercept)[1]
    if isinstance(cost, ZCDP):
        return second_moment_mechanism(cost, n, q, math.sqrt(whole), n_partials)
    s = INTERCEPT_SCALE if fit_intercept else 0.0
    upper = q * (q + 1) / 2.0
    rounding = 2.0 * summation_error(n, n_partials) * whole
    box = box_l1(d, fit_intercept)
    ball = min(q + 1.0, math.sqrt(2.0) * q) * whole
    l1 = min(box, ball) / n + math.sqrt(upper) * rounding
    laplace = SymmetricLaplaceMechanism(sensitivity=l1, epsilon=cost.epsilon)
    constant = d if fit_intercept else None
    # Each computed entry is within e R^2 of its exact value for each data
    # set; the doubled squares' within twice that.
    linf = 2.0 / n + 2.0 * rounding
    if q * (q + 1) // 2 > MAX_SIZE:  # beyond the K-norm sampler's sizes
        return laplace
    cube = CubeMomentsMechanism(
        sensitivity=linf, epsilon=cost.epsilon, q=q, constant=constant, value=s * s
    )
    if cube.entry_variances()[1] < laplace.entry_variances(q)[1]:
        return cube
    return laplace
