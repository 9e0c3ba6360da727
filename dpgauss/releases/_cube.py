"""Class-statistic sensitivities for rows in the unit cube (a public box).

With ``bounds`` and a fixed clipping frame (pure DP, or ``clipping="fixed"``)
the discriminant analyses read each row as ``z = clip((x - c) / h)`` in
``[-1, 1]^d`` (:func:`~dpgauss.releases._box.box_offsets`, each from its own
row and the public box), centred at the box's center (no released center: the
offsets are ``z`` itself) and then clipped to the ball of radius ``B =
sqrt(d)`` (rounded up), which every cube row already lies in; the clip only
ever scales a row by a factor at most 1, so every computed coordinate stays in
``[-1, 1]``. The ball's bounds (:mod:`dpgauss.releases._groups`) charge every
row as if it could put all of ``||z||^2 = d`` on one coordinate; the cube
caps each coordinate, which the squares' releases can use.

Replace-one, with the changed row free to change its class; n, d, K and the
box public. Per release, the cube's bound against the ball's (over n, before
rounding):

* ``class_counts``: unchanged (l2 ``sqrt(2)``, l1 2).
* ``class_sums``: a row leaving class a for class b moves a's sum by ``-z``
  and b's by ``z'``: l1 ``||z||_1 + ||z'||_1 <= 2 d``, l2 ``sqrt(2 d)``; in
  the same class ``z' - z``: l1 ``2 d``, l2 ``2 sqrt(d)`` (opposite corners).
  The ball's ``2 sqrt(d) B = 2 d`` and ``2 B = 2 sqrt(d)``: no gain.
* ``pooled_squares`` (d entries ``sum_i z_i o z_i``, pooled over every
  class, so a change of class does not matter): each entry of ``q = z o z``
  lies in ``[0, 1]``, so ``|q_j - q'_j| <= 1``: **l1 d, l2 sqrt(d)**, against
  the ball's ``2 B^2 = 2 d`` and ``sqrt(2) B^2 = sqrt(2) d``
  (:func:`cube_square_mechanism`).
* ``second_moment`` (LDA, ``sum_i z_i z_i^T`` pooled): with ``w = z'``,
  ``A = w w^T - z z^T = ((w - z)(w + z)^T + (w + z)(w - z)^T) / 2``, so the
  sum of all ``|A_jl|`` is at most ``||w - z||_1 ||w + z||_1``, and as
  ``|a - b| + |a + b| = 2 max(|a|, |b|) <= 2`` per coordinate the two l1
  norms sum to at most ``2 d``: their product is at most ``d^2``. The
  diagonal's entries ``w_j^2 - z_j^2`` lie in ``[-1, 1]`` (l1 at most d), and
  the upper triangle's l1 is half the sum of all ``|A_jl|`` plus half the
  diagonal's: **at most d (d + 1) / 2**, attained by the centre against the
  all-ones corner, against the ball's ``min(d + 1, sqrt(2) d) B^2 = min(d +
  1, sqrt(2) d) d``. Frobenius: ``sqrt(2) d`` for both (two orthogonal
  corners attain it when d is even), no gain (:func:`cube_moment_mechanism`).
* ``class_second_moments`` (QDA, the K blocks ``sum_{i in k} z_i z_i^T``): a
  row changing class removes ``z z^T`` from one block and adds ``z'z'^T`` to
  another, upper l1 ``2 (d + d (d - 1) / 2) = d (d + 1)`` at two corners and
  Frobenius ``sqrt(2) d``: the ball's bounds, attained; no gain.

**Rounding.** The releases are computed sums over chunks; as in
:mod:`dpgauss.releases._groups`, each computed sum over n is within ``e
B^2`` (``e`` = :func:`~dpgauss.utils._sums.summation_error`) of the exact one
for each dataset, ``2 e B^2`` for the pair: added to the l2 bound, and the
square root of the release's dimension times it to the l1 bound. Each
mechanism also takes the clipping ``radius`` and never charges more than the
ball's bound at that radius (a smaller radius about the box's center only
scales the cube rows down, so both bounds hold).
"""

import math

from dpgauss.accounting import PureDP
from dpgauss.mechanisms._factory import additive
from dpgauss.mechanisms._releases import second_moment_mechanism
from dpgauss.mechanisms._symmetric import SymmetricLaplaceMechanism
from dpgauss.utils._sums import summation_error

__all__ = ["cube_moment_mechanism", "cube_shares", "cube_square_mechanism"]


def cube_square_mechanism(cost, n, d, radius, n_partials=None):
    """Noise for the pooled squares over n of cube rows (module docstring):
    l1 ``min(d, 2 B^2) / n``, l2 ``min(sqrt(d), sqrt(2) B^2) / n``, each plus
    the rounding ``2 e B^2`` (l1: times ``sqrt(d)``), ``B`` the clipping
    radius.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._cube import cube_square_mechanism
    >>> mech = cube_square_mechanism(PureDP(1.0), 100, 4, 2.0)
    >>> round(mech.sensitivity, 9)
    0.04
    """
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2
    l2 = min(math.sqrt(d), math.sqrt(2.0) * r2) / n + rounding
    l1 = min(float(d), 2.0 * r2) / n + math.sqrt(d) * rounding
    return additive(cost, l2=l2, l1=l1)


def cube_moment_mechanism(cost, n, d, radius, n_partials=None):
    """Noise for the pooled second moment over n of cube rows: under zCDP the
    ball's (Frobenius ``sqrt(2) B^2 / n``, no gain), under pure DP the upper
    triangle's l1 ``min(d (d + 1) / 2, min(d + 1, sqrt(2) d) B^2) / n`` plus ``sqrt(d (d
    + 1) / 2)`` times the rounding ``2 e B^2`` (module docstring).

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._cube import cube_moment_mechanism
    >>> mech = cube_moment_mechanism(PureDP(1.0), 100, 2, 2**0.5)
    >>> round(mech.sensitivity, 9)
    0.03
    """
    if not isinstance(cost, PureDP):  # zCDP, or the ball's refusal
        return second_moment_mechanism(cost, n, d, radius, n_partials)
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2
    upper = d * (d + 1) / 2.0
    ball = min(d + 1.0, math.sqrt(2.0) * d) * r2
    l1 = min(upper, ball) / n + math.sqrt(upper) * rounding
    return SymmetricLaplaceMechanism(sensitivity=l1, epsilon=cost.epsilon)


def cube_shares(shares, structure):
    """The discriminant plan's shares ``(counts, sums, second-order)`` with
    cube rows under pure DP: in the diagonal plan (``structure="diag"``) half
    the squares' share goes to the class sums.

    The cube halves the squares' l1 sensitivity (``d / n`` against the
    ball's ``2 d / n``): half the share buys the squares the ball's noise at
    the full share, and the other half goes to the sums, whose noise over
    ``n_k`` dominates the class means at small n. Spending the gain on the
    squares instead (their noise halved) lowers the variances' floor and
    their shrinkage (:func:`~dpgauss.releases._classes.class_variances`, both
    scaled by that noise) while the means stay as noisy; on the real-data
    benchmark it raised LDA's error on the three-class mixture (epsilon 1, n =
    281: median 0.11 to 0.15, against 0.07 with the sums given the half).
    Public values only.

    Examples
    --------
    >>> from dpgauss.releases._cube import cube_shares
    >>> cube_shares((0.1, 0.6, 0.3), "diag")
    [0.1, 0.75, 0.15]
    """
    shares = list(shares)
    if structure == "diag":
        half = 0.5 * shares[2]
        shares[1] += half
        shares[2] = half
    return shares
