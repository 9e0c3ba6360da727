"""Privacy parameters: the one parser of (rho, epsilon, delta), and cost splits.

An estimator, a private scorer and a :class:`~dpgauss.PrivacyBudget` all take
their privacy as ``rho`` (zCDP), ``epsilon`` alone (pure DP), or ``epsilon`` and
``delta`` (approximate DP). :func:`stated_cost` decides which form was given and
checks it, once for all of them; an estimator then spends approximate DP as the
largest rho-zCDP that implies it (:func:`resolve_privacy`), while a budget keeps
its total as stated.

These checks run inside ``fit`` unconditionally: scikit-learn's parameter
validation can be switched off (``skip_parameter_validation=True``), so no
privacy invariant may rest on ``_parameter_constraints`` alone.
"""

import math

import numpy as np

from dpgauss.accounting._costs import (
    ZCDP,
    ApproxDP,
    PureDP,
    _check_positive_finite,
    approx_to_zcdp,
)
from dpgauss.utils.validation import _positive_finite

__all__ = ["budget_total", "resolve_privacy", "split_cost", "stated_cost"]

#: The largest epsilon a fit accepts: its square stays far inside float64.
MAX_EPSILON = 1e150


def _total_part(name, value, owner):
    """A budget's total: checked as the cost classes check a value, then > 0."""
    value = _check_positive_finite(name, value, allow_zero=True)
    if value == 0:
        raise ValueError(f"{owner}: {name} must be > 0, got {value!r}.")
    return value


def stated_cost(rho=None, epsilon=None, delta=None, *, owner="estimator", check=None):
    """Return the cost the privacy parameters state, as given.

    Exactly one form is accepted: ``rho`` (zCDP), ``epsilon`` alone (pure DP),
    or ``epsilon`` and ``delta`` (approximate DP, ``0 < delta < 1``).

    Parameters
    ----------
    rho, epsilon, delta : float or None
        The parameters.
    owner : str, default="estimator"
        Name used in error messages.
    check : callable, default=None
        ``check(name, value, owner)`` returns a given value as a float > 0 or
        raises. ``None`` checks an estimator's parameter (any real number);
        a budget's total is checked as its cost classes check their values.

    Returns
    -------
    ZCDP, PureDP or ApproxDP
        ``ZCDP(rho)``, ``PureDP(epsilon)`` or ``ApproxDP(epsilon, delta)``.

    Raises
    ------
    ValueError
        For a missing, mixed or impossible parameter.
    TypeError
        For a parameter that is not a real number.

    Examples
    --------
    >>> from dpgauss.accounting._parameters import stated_cost
    >>> stated_cost(epsilon=1.0, delta=1e-6)
    ApproxDP(epsilon=1.0, delta=1e-06)
    """
    check = _positive_finite if check is None else check
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError(
                f"{owner}: give the budget as rho, or epsilon, or epsilon and delta, "
                f"not a mix; got rho={rho!r}, epsilon={epsilon!r}, delta={delta!r}."
            )
        return ZCDP(check("rho", rho, owner))
    if epsilon is None:
        if delta is not None:
            raise ValueError(f"{owner}: delta={delta!r} was given without epsilon.")
        raise ValueError(
            f"{owner}: no privacy parameter given; it needs a total: set rho=... "
            "(zCDP), epsilon=... (pure DP) or epsilon=... and delta=... "
            "(approximate DP)."
        )
    epsilon = check("epsilon", epsilon, owner)
    if epsilon > MAX_EPSILON:
        # A pure epsilon composes with zCDP as epsilon^2 / 2, which overflows
        # beyond about 1.9e154; such a budget protects nothing anyway.
        raise ValueError(
            f"{owner}: epsilon={epsilon!r} is above {MAX_EPSILON:g}, where its "
            "zCDP equivalent epsilon^2 / 2 leaves float64's range (and the "
            "guarantee is void long before)."
        )
    if delta is None:
        return PureDP(epsilon)
    delta = check("delta", delta, owner)
    if delta >= 1:
        raise ValueError(f"{owner}: delta must be < 1, got {delta!r}.")
    return ApproxDP(epsilon, delta)


def budget_total(rho=None, epsilon=None, delta=None):
    """A :class:`~dpgauss.PrivacyBudget`'s total, from exactly one form."""
    return stated_cost(rho, epsilon, delta, owner="PrivacyBudget", check=_total_part)


def resolve_privacy(rho=None, epsilon=None, delta=None, *, owner="estimator"):
    """Turn an estimator's privacy parameters into the cost it may spend.

    Exactly one form is accepted: ``rho`` (zCDP), ``epsilon`` alone (pure DP), or
    ``epsilon`` and ``delta`` (converted to the largest rho-zCDP that implies
    (epsilon, delta)-DP, by the Canonne-Kamath-Steinke conversion).

    Parameters
    ----------
    rho, epsilon, delta : float or None
        The estimator's parameters.
    owner : str, default="estimator"
        Name used in error messages.

    Returns
    -------
    ZCDP or PureDP
        The total the fit may spend.

    Raises
    ------
    ValueError
        For a missing, mixed or impossible privacy parameter.

    Examples
    --------
    >>> from dpgauss.accounting import resolve_privacy
    >>> resolve_privacy(rho=0.5)
    ZCDP(rho=0.5)
    >>> resolve_privacy(epsilon=1.0)
    PureDP(epsilon=1.0)
    >>> round(resolve_privacy(epsilon=2.419093, delta=1e-6).rho, 4)
    0.125
    """
    cost = stated_cost(rho, epsilon, delta, owner=owner)
    if isinstance(cost, ApproxDP):
        return ZCDP(approx_to_zcdp(cost.epsilon, cost.delta))
    return cost


def split_cost(total, shares):
    """Split a cost into parts that compose to at most ``total``.

    Parameters
    ----------
    total : ZCDP or PureDP
        The cost to split (both compose additively).
    shares : sequence of float
        Positive fractions summing to 1.

    Returns
    -------
    list of ZCDP or PureDP
        One cost per share; the last is the remainder, rounded down if needed so
        that the sum never exceeds ``total``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, split_cost
    >>> split_cost(ZCDP(1.0), [0.25, 0.75])
    [ZCDP(rho=0.25), ZCDP(rho=0.75)]
    """
    shares = [float(s) for s in shares]
    if any(s <= 0 for s in shares) or not math.isclose(sum(shares), 1.0):
        raise ValueError(f"shares must be positive and sum to 1, got {shares!r}.")
    value = total.rho if isinstance(total, ZCDP) else total.epsilon
    parts = [value * s for s in shares[:-1]]
    last = value - math.fsum(parts)
    while math.fsum([*parts, last]) > value:
        last = float(np.nextafter(last, 0.0))
    return [type(total)(v) for v in [*parts, last]]
