"""The one place a privacy cost chooses its additive noise.

A zCDP cost (rho) is paid with Gaussian noise calibrated to the statistic's l2
sensitivity, sigma = D2 / sqrt(2 rho); a pure cost (epsilon) with Laplace noise
calibrated to its l1 sensitivity, b = D1 / epsilon (see
:mod:`dpgauss.mechanisms._additive`), or, when the caller also states the
l-infinity sensitivity of a vector of k entries, the cube's K-norm noise
(:mod:`dpgauss.mechanisms._linf`) where its per-entry variance ``(k + 1)(k +
2) / 3 (Dinf / epsilon)^2`` is below the Laplace's ``2 (D1 / epsilon)^2``.
Callers state the sensitivities of their statistic, each proven next to the
call; the cost decides which one is used. No other module of dpgauss switches
on the type of a cost to pick noise.
"""

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.mechanisms._symmetric import (
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)

__all__ = ["additive"]


def additive(cost, *, l2, l1, linf=None, size=None, symmetric=False, exact=True):
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
    linf : float, default=None
        Its l-infinity sensitivity (the largest change of one entry), for a
        vector of ``size`` entries: a pure cost then takes the cube's K-norm
        mechanism where its per-entry variance is the smaller (public: the
        sensitivities, size and the cost). Not for symmetric matrices.
    size : int, default=None
        The number of entries, with ``linf``.
    symmetric : bool, default=False
        Release a symmetric matrix from its upper triangle.
    exact : bool, default=True
        Exact lattice noise (float-safe); see :mod:`dpgauss.mechanisms`.

    Returns
    -------
    GaussianMechanism, LaplaceMechanism or LInfinityMechanism
        (or the symmetric variants), whose ``cost`` is ``cost``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, PureDP
    >>> from dpgauss.mechanisms._factory import additive
    >>> additive(ZCDP(0.5), l2=1.0, l1=3.0).scale
    1.0
    >>> additive(PureDP(1.0), l2=1.0, l1=3.0).scale
    3.0
    >>> type(additive(PureDP(1.0), l2=1.0, l1=3.0, linf=1.0, size=3)).__name__
    'LInfinityMechanism'
    """
    if isinstance(cost, ZCDP):
        kind = SymmetricGaussianMechanism if symmetric else GaussianMechanism
        return kind(sensitivity=l2, rho=cost.rho, exact=exact)
    if isinstance(cost, PureDP):
        if linf is not None and not symmetric:
            # Per-entry variances over (1 / epsilon)^2: the cube's K-norm
            # (k + 1)(k + 2) / 3 linf^2, the Laplace's 2 l1^2.
            k = int(size)
            if (k + 1) * (k + 2) / 3.0 * linf * linf < 2.0 * l1 * l1:
                return LInfinityMechanism(
                    sensitivity=linf, epsilon=cost.epsilon, size=k, exact=exact
                )
        kind = SymmetricLaplaceMechanism if symmetric else LaplaceMechanism
        return kind(sensitivity=l1, epsilon=cost.epsilon, exact=exact)
    raise TypeError(f"additive noise needs a ZCDP or PureDP cost, got {cost!r}.")
