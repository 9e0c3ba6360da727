"""Composition of a list of costs against a budget's total (pure functions).

Rules, each a standard composition theorem:

* zCDP costs add (Bun and Steinke 2016, Lemma 2.3); a pure epsilon cost enters a
  zCDP sum as ``epsilon**2 / 2``.
* Pure costs add (basic composition).
* Approximate costs add in both epsilon and delta (basic composition, Dwork et al.
  2006), and compose with a zCDP part that is converted at the delta left over:
  the whole is (eps_z + sum eps_i, delta_z + sum delta_i)-DP.

A total given as (epsilon, delta) is met when the spend, reported at the budget's
delta, is at most epsilon. The spend is the better of two valid bounds (each a
true statement about the same composed mechanism, so their minimum is too): pure
costs converted to zCDP and summed with the zCDP costs, or pure costs added to
epsilon after the conversion of the zCDP costs alone.
"""

import math
from typing import NamedTuple

from dpgauss.accounting._costs import (
    ZCDP,
    ApproxDP,
    PureDP,
    pure_to_zcdp,
    zcdp_to_approx,
)
from dpgauss.exceptions import PrivacyAccountingError

__all__ = [
    "RELATIVE_SLACK",
    "Parts",
    "compose",
    "compose_parts",
    "parts_of",
    "within",
    "within_parts",
]

#: Relative slack allowed when comparing a sum of costs with a total, so that a
#: total split into float shares (10 x 0.1 of rho = 1) still fits. The spent total
#: may therefore exceed the cap by at most this relative amount (1e-12).
RELATIVE_SLACK = 1e-12


class Parts(NamedTuple):
    """The additive components of a list of costs: all that :func:`compose` reads.

    Each sum is the correctly rounded sum of its terms (``math.fsum``), so parts
    kept as a running total (exactly, as :class:`~dpgauss.PrivacyBudget` does) and
    parts computed from the whole list are the same floats.

    Parameters
    ----------
    rho : float
        Sum of the zCDP costs' rho.
    pure : float
        Sum of the pure costs' epsilon.
    pure_rho : float
        Sum of the pure costs' ``epsilon**2 / 2`` (each computed as
        :func:`~dpgauss.accounting.pure_to_zcdp` does).
    eps_a : float
        Sum of the approximate costs' epsilon.
    delta_a : float
        Sum of the approximate costs' delta.
    n_zcdp : int
        Number of zCDP costs.
    n_pure : int
        Number of pure costs.
    n_approx : int
        Number of approximate costs.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, PureDP
    >>> from dpgauss.accounting._composition import compose_parts, parts_of
    >>> parts = parts_of([ZCDP(0.25), PureDP(0.5)])
    >>> parts.rho, parts.pure_rho, parts.n_pure
    (0.25, 0.125, 1)
    >>> compose_parts(ZCDP(1.0), parts)
    ZCDP(rho=0.375)
    """

    rho: float
    pure: float
    pure_rho: float
    eps_a: float
    delta_a: float
    n_zcdp: int
    n_pure: int
    n_approx: int


def parts_of(costs):
    """Return the :class:`Parts` of ``costs`` (each sum by ``math.fsum``).

    Parameters
    ----------
    costs : sequence of ZCDP, PureDP or ApproxDP
        The costs.

    Returns
    -------
    Parts
        Their additive components.
    """
    zcdp = [c for c in costs if isinstance(c, ZCDP)]
    pure = [c for c in costs if isinstance(c, PureDP)]
    approx = [c for c in costs if isinstance(c, ApproxDP)]
    return Parts(
        rho=math.fsum(c.rho for c in zcdp),
        pure=math.fsum(c.epsilon for c in pure),
        pure_rho=math.fsum(pure_to_zcdp(c.epsilon) for c in pure),
        eps_a=math.fsum(c.epsilon for c in approx),
        delta_a=math.fsum(c.delta for c in approx),
        n_zcdp=len(zcdp),
        n_pure=len(pure),
        n_approx=len(approx),
    )


def compose(total, costs):
    """Return the composed cost of ``costs``, in the currency of ``total``.

    Parameters
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total; it fixes the currency (and, for ApproxDP, the delta
        the spend is reported at).
    costs : sequence of ZCDP, PureDP or ApproxDP
        The costs to compose.

    Returns
    -------
    ZCDP, PureDP or ApproxDP
        Same class as ``total``.

    Raises
    ------
    PrivacyAccountingError
        If a cost cannot be charged in that currency (zCDP or approximate costs
        against a pure total; approximate costs against a zCDP total), or if the
        approximate costs leave no delta for the zCDP and pure ones.
    """
    return compose_parts(total, parts_of(costs))


def compose_parts(total, parts):
    """Return the composed cost of costs given by their :class:`Parts`.

    Parameters
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total (the currency).
    parts : Parts
        The costs' additive components.

    Returns
    -------
    ZCDP, PureDP or ApproxDP
        As :func:`compose`.

    Raises
    ------
    PrivacyAccountingError
        As :func:`compose`.
    """
    rho, pure, pure_rho, eps_a, delta_a = parts[:5]
    if isinstance(total, PureDP):
        if parts.n_zcdp or parts.n_approx:
            raise PrivacyAccountingError(
                "this budget is pure epsilon-DP; it accepts only pure epsilon-DP "
                "costs (rho-zCDP and (epsilon, delta) releases do not imply pure DP)."
                " Give the estimator `epsilon` alone, or make the budget zCDP "
                "(rho=...) or approximate (epsilon=..., delta=...)."
            )
        return PureDP(pure)
    if isinstance(total, ZCDP):
        if parts.n_approx:
            raise PrivacyAccountingError(
                "this budget is rho-zCDP; an (epsilon, delta)-DP cost cannot be "
                "charged to it. Use a budget given as epsilon and delta."
            )
        return ZCDP(rho + pure_rho)
    delta_left = total.delta - delta_a
    zcdp_part = rho + pure_rho
    if delta_left <= 0 and (zcdp_part > 0 or delta_left < 0):
        raise PrivacyAccountingError(
            f"the (epsilon, delta) costs use delta={delta_a:.3g}, leaving no delta "
            f"of this budget's {total.delta:.3g} for its other costs."
        )
    if zcdp_part == 0:
        return ApproxDP(eps_a, total.delta)
    pure_in_zcdp = zcdp_to_approx(zcdp_part, delta_left)
    pure_added = (zcdp_to_approx(rho, delta_left) if rho > 0 else 0.0) + pure
    return ApproxDP(min(pure_in_zcdp, pure_added) + eps_a, total.delta)


def within(total, costs):
    """Return True when ``costs`` composed fit in ``total`` (see :func:`compose`).

    Parameters
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total.
    costs : sequence of ZCDP, PureDP or ApproxDP
        The costs.

    Returns
    -------
    bool
        Whether their composition is at most the total (with
        :data:`RELATIVE_SLACK`).

    Raises
    ------
    PrivacyAccountingError
        If a cost cannot be charged in the currency of ``total`` at all.
    """
    return within_parts(total, parts_of(costs))


def within_parts(total, parts):
    """Return True when costs given by their :class:`Parts` fit in ``total``.

    Parameters
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total.
    parts : Parts
        The costs' additive components.

    Returns
    -------
    bool
        As :func:`within`.

    Raises
    ------
    PrivacyAccountingError
        As :func:`within`.
    """
    try:
        spent = compose_parts(total, parts)
    except PrivacyAccountingError:
        if isinstance(total, ApproxDP) and parts.delta_a >= total.delta:
            return False
        raise
    if isinstance(total, ZCDP):
        return spent.rho <= total.rho * (1 + RELATIVE_SLACK)
    return spent.epsilon <= total.epsilon * (1 + RELATIVE_SLACK)
