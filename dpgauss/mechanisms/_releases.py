"""Releases of the statistics every family needs, with their sensitivity proofs.

Each function calibrates the mechanism for one statistic of n rows clipped to the
l2 ball of radius r around a center (see :func:`dpgauss.utils._sums.clip_rows`).
Neighbouring datasets differ by replacing one row; n, d, r and the center are
public (or already released). Every sensitivity below is the exact one plus the
floating-point term of :func:`dpgauss.utils._sums.summation_error` (``e``), so it
holds for the values as computed in float64, for any finite input:

* **mean** of the clipped rows: replacing y by y' moves it by (y' - y)/n, of l2
  norm at most 2r/n; in floating point at most ``2r/n + 2 e r``. l1: sqrt(d)
  times the l2 bound.
* **second moment** ``M = (1/n) sum y y^T``: moves by (y'y'^T - y y^T)/n, whose
  Frobenius norm is at most ``sqrt(||y||^4 + ||y'||^4) / n <= sqrt(2) r^2 / n``
  (the two terms are PSD: ``||A - B||_F^2 <= ||A||_F^2 + ||B||_F^2``); in floating
  point ``sqrt(2) r^2 / n + 2 e r^2``. l1 over the upper triangle (diagonal
  included): at most ``min(d + 1, sqrt(2) d) r^2 / n`` exactly, plus
  ``sqrt(d (d + 1) / 2)`` times the Frobenius rounding term.
* **sorted eigenvalues** of M (Dong, Liang and Yi 2022, Lemma 8): removing a row
  lowers every eigenvalue (interlacing) by a total of ``||y||^2 / n``, adding one
  raises them by ``||y'||^2 / n``, so l1 <= 2 r^2 / n and l2 <= sqrt(2) r^2 / n.
  In floating point, the computed M is within ``e r^2`` (Frobenius) of the exact
  one, which moves the sorted eigenvalues by at most as much in l2
  (Hoffman-Wielandt), and the eigen-solver adds at most ``p(d) u ||M||_2`` per
  eigenvalue (backward stability; we take ``p(d) = 10 d``, far above LAPACK's
  observed constants).
* **trace** (mean squared clipped norm): each row contributes ``||y||^2 / n`` in
  ``[0, r^2 / n]``. It is released exactly from an integer fixed-point sum
  (:func:`dpgauss.utils._sums.fixed_point_sums`), so its sensitivity is exactly
  one grid unit per row, with no rounding slack.
"""

import math

from dpgauss.accounting import ZCDP, ApproxDP
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._symmetric import (
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)
from dpgauss.utils._sums import summation_error

__all__ = [
    "eigenvalue_mechanism",
    "mean_mechanism",
    "second_moment_mechanism",
    "sum_mechanism",
    "vector_mechanism",
]

_U = 2.0**-53


def _check_cost(cost):
    if isinstance(cost, ApproxDP):
        raise TypeError("additive releases take a ZCDP or PureDP cost.")
    return isinstance(cost, ZCDP)


def mean_mechanism(cost, n, d, radius, n_partials=None):
    """The mechanism for the mean of n rows clipped to ``radius``.

    Parameters
    ----------
    cost : ZCDP or PureDP
        Gaussian noise for zCDP, Laplace for pure DP.
    n, d : int
        Rows and features (public).
    radius : float
        The clipping radius r.
    n_partials : int, default=None
        Chunk sums added (see :func:`dpgauss.utils._sums.n_partial_sums`).

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        Calibrated to ``2r/n + 2 e r`` (l2) or ``sqrt(d)`` times that (l1).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.mechanisms._releases import mean_mechanism
    >>> mech = mean_mechanism(ZCDP(0.5), n=100, d=3, radius=1.0)
    >>> round(mech.sensitivity, 6)
    0.02
    """
    l2 = 2.0 * radius / n + 2.0 * summation_error(n, n_partials) * radius
    return vector_mechanism(cost, d, l2)


def vector_mechanism(cost, d, sensitivity):
    """Gaussian (zCDP) or Laplace (pure DP) noise for a d-vector of l2
    sensitivity ``sensitivity`` (l1 at most ``sqrt(d)`` times that).

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.mechanisms._releases import vector_mechanism
    >>> vector_mechanism(PureDP(1.0), 4, 0.5).sensitivity
    1.0
    """
    if _check_cost(cost):
        return GaussianMechanism(sensitivity=sensitivity, rho=cost.rho)
    return LaplaceMechanism(
        sensitivity=math.sqrt(d) * sensitivity, epsilon=cost.epsilon
    )


def second_moment_mechanism(cost, n, d, radius, n_partials=None):
    """The mechanism for ``M = (1/n) sum y y^T`` of rows clipped to ``radius``.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The release's cost.
    n, d : int
        Rows and features (public).
    radius : float
        The clipping radius r.
    n_partials : int, default=None
        Chunk sums added.

    Returns
    -------
    SymmetricGaussianMechanism or SymmetricLaplaceMechanism
        Gaussian for zCDP (Frobenius sensitivity), Laplace for pure DP (upper
        triangle l1 sensitivity).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.mechanisms._releases import second_moment_mechanism
    >>> mech = second_moment_mechanism(ZCDP(1.0), n=1000, d=2, radius=1.0)
    >>> round(mech.sensitivity * 1000, 6)
    1.414214
    """
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2
    if _check_cost(cost):
        return SymmetricGaussianMechanism(
            sensitivity=math.sqrt(2.0) * r2 / n + rounding, rho=cost.rho
        )
    upper = d * (d + 1) / 2.0
    l1 = min(d + 1.0, math.sqrt(2.0) * d) * r2 / n + math.sqrt(upper) * rounding
    return SymmetricLaplaceMechanism(sensitivity=l1, epsilon=cost.epsilon)


def eigenvalue_mechanism(cost, n, d, radius, n_partials=None):
    """The mechanism for the sorted eigenvalues of M.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The release's cost.
    n, d : int
        Rows and features (public).
    radius : float
        The clipping radius r.
    n_partials : int, default=None
        Chunk sums added.

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        l2 sensitivity ``sqrt(2) r^2/n`` (Gaussian) or l1 ``2 r^2/n`` (Laplace),
        plus the floating-point terms of the module docstring.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.mechanisms._releases import eigenvalue_mechanism
    >>> mech = eigenvalue_mechanism(PureDP(1.0), n=100, d=3, radius=1.0)
    >>> round(mech.sensitivity, 6)
    0.02
    """
    r2 = radius * radius
    rounding = 2.0 * (summation_error(n, n_partials) + 10.0 * d * _U * math.sqrt(d))
    if _check_cost(cost):
        return GaussianMechanism(
            sensitivity=math.sqrt(2.0) * r2 / n + rounding * r2, rho=cost.rho
        )
    return LaplaceMechanism(
        sensitivity=2.0 * r2 / n + math.sqrt(d) * rounding * r2, epsilon=cost.epsilon
    )


def sum_mechanism(cost, unit):
    """The mechanism for an exact (integer) sum to which each row adds [0, unit].

    Parameters
    ----------
    cost : ZCDP or PureDP
        The release's cost.
    unit : float
        The largest contribution of one row (replacing a row moves the sum by at
        most this, in l1 and l2).

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        Calibrated to ``unit``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.mechanisms._releases import sum_mechanism
    >>> sum_mechanism(ZCDP(0.5), 1.0).scale
    1.0
    """
    if _check_cost(cost):
        return GaussianMechanism(sensitivity=unit, rho=cost.rho)
    return LaplaceMechanism(sensitivity=unit, epsilon=cost.epsilon)
