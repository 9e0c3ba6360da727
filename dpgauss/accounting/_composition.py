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

from dpgauss.accounting._costs import (
    ZCDP,
    ApproxDP,
    PureDP,
    pure_to_zcdp,
    zcdp_to_approx,
)
from dpgauss.exceptions import PrivacyAccountingError

__all__ = ["RELATIVE_SLACK", "compose", "within"]

#: Relative slack allowed when comparing a sum of costs with a total, so that a
#: total split into float shares (10 x 0.1 of rho = 1) still fits. The spent total
#: may therefore exceed the cap by at most this relative amount (1e-12).
RELATIVE_SLACK = 1e-12


def _split(costs):
    rho = math.fsum(c.rho for c in costs if isinstance(c, ZCDP))
    pure = math.fsum(c.epsilon for c in costs if isinstance(c, PureDP))
    pure_rho = math.fsum(
        pure_to_zcdp(c.epsilon) for c in costs if isinstance(c, PureDP)
    )
    approx = [c for c in costs if isinstance(c, ApproxDP)]
    eps_a = math.fsum(c.epsilon for c in approx)
    delta_a = math.fsum(c.delta for c in approx)
    return rho, pure, pure_rho, eps_a, delta_a, bool(approx)


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
        Same class as ``total``. For an ApproxDP total whose approximate costs
        already use up its delta, epsilon is ``inf``.

    Raises
    ------
    PrivacyAccountingError
        If a cost cannot be charged in that currency (zCDP or approximate costs
        against a pure total; approximate costs against a zCDP total).
    """
    rho, pure, pure_rho, eps_a, delta_a, has_approx = _split(costs)
    if isinstance(total, PureDP):
        if rho > 0 or has_approx or any(isinstance(c, ZCDP) for c in costs):
            raise PrivacyAccountingError(
                "this budget is pure epsilon-DP; it accepts only pure epsilon-DP "
                "costs (rho-zCDP and (epsilon, delta) releases do not imply pure DP)."
                " Give the estimator `epsilon` alone, or make the budget zCDP "
                "(rho=...) or approximate (epsilon=..., delta=...)."
            )
        return PureDP(pure)
    if isinstance(total, ZCDP):
        if has_approx:
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

    Raises
    ------
    PrivacyAccountingError
        If a cost cannot be charged in the currency of ``total`` at all.
    """
    try:
        spent = compose(total, costs)
    except PrivacyAccountingError:
        if isinstance(total, ApproxDP) and not isinstance(total, ZCDP):
            _, _, _, _, delta_a, _ = _split(costs)
            if delta_a >= total.delta:
                return False
        raise
    if isinstance(total, ZCDP):
        return spent.rho <= total.rho * (1 + RELATIVE_SLACK)
    return spent.epsilon <= total.epsilon * (1 + RELATIVE_SLACK)
