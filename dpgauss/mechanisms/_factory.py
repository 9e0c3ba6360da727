"""The one place a privacy cost chooses its additive noise.

A zCDP cost (rho) is paid with Gaussian noise calibrated to the statistic's l2
sensitivity, sigma = D2 / sqrt(2 rho); a pure cost (epsilon) with Laplace noise
calibrated to its l1 sensitivity, b = D1 / epsilon (see
:mod:`dpgauss.mechanisms._additive`). Callers state both sensitivities of their
statistic, each proven next to the call; the cost decides which one is used. No
other module of dpgauss switches on the type of a cost to pick noise.
"""

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._symmetric import (
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)

__all__ = ["additive"]


def additive(cost, *, l2, l1, symmetric=False, exact=True):
    """The calibrated additive mechanism of ``cost`` for a statistic.

    Parameters
    ----------
    cost : ZCDP or PureDP
        What the release may spend.
    l2 : float
        The statistic's l2 sensitivity (Frobenius for a symmetric matrix)
        under replace-one neighbours; used by a zCDP cost.
    l1 : float
        Its l1 sensitivity (of the upper triangle for a symmetric matrix);
        used by a pure cost.
    symmetric : bool, default=False
        Release a symmetric matrix from its upper triangle.
    exact : bool, default=True
        Exact lattice noise (float-safe); see :mod:`dpgauss.mechanisms`.

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        (or their symmetric variants), whose ``cost`` is ``cost``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, PureDP
    >>> from dpgauss.mechanisms._factory import additive
    >>> additive(ZCDP(0.5), l2=1.0, l1=3.0).scale
    1.0
    >>> additive(PureDP(1.0), l2=1.0, l1=3.0).scale
    3.0
    """
    if isinstance(cost, ZCDP):
        kind = SymmetricGaussianMechanism if symmetric else GaussianMechanism
        return kind(sensitivity=l2, rho=cost.rho, exact=exact)
    if isinstance(cost, PureDP):
        kind = SymmetricLaplaceMechanism if symmetric else LaplaceMechanism
        return kind(sensitivity=l1, epsilon=cost.epsilon, exact=exact)
    raise TypeError(f"additive noise needs a ZCDP or PureDP cost, got {cost!r}.")
