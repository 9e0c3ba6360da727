"""Validation of privacy parameters, public bounds and budget splits.

These checks run inside ``fit`` unconditionally: scikit-learn's parameter
validation can be switched off (``skip_parameter_validation=True``), so no
privacy invariant may rest on ``_parameter_constraints`` alone.
"""

import math
import numbers

import numpy as np

from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp

__all__ = ["check_data_norm", "resolve_privacy", "split_cost"]


def _positive_finite(name, value, owner):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {value!r}.")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a finite number > 0, got {value!r}.")
    return value


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
    >>> from dpgauss.utils.validation import resolve_privacy
    >>> resolve_privacy(rho=0.5)
    ZCDP(rho=0.5)
    >>> resolve_privacy(epsilon=1.0)
    PureDP(epsilon=1.0)
    >>> round(resolve_privacy(epsilon=2.419093, delta=1e-6).rho, 4)
    0.125
    """
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError(
                f"{owner}: give rho, or epsilon, or epsilon and delta, not a mix; "
                f"got rho={rho!r}, epsilon={epsilon!r}, delta={delta!r}."
            )
        return ZCDP(_positive_finite("rho", rho, owner))
    if epsilon is None:
        if delta is not None:
            raise ValueError(f"{owner}: delta={delta!r} was given without epsilon.")
        raise ValueError(
            f"{owner}: no privacy parameter given; set rho=... (zCDP), epsilon=... "
            "(pure DP) or epsilon=... and delta=... (approximate DP)."
        )
    epsilon = _positive_finite("epsilon", epsilon, owner)
    if delta is None:
        return PureDP(epsilon)
    delta = _positive_finite("delta", delta, owner)
    if delta >= 1:
        raise ValueError(f"{owner}: delta must be < 1, got {delta!r}.")
    return ZCDP(approx_to_zcdp(epsilon, delta))


def check_data_norm(data_norm, *, owner="estimator"):
    """Check the public row-norm bound.

    Parameters
    ----------
    data_norm : float or None
        The public l2 radius rows are clipped to.
    owner : str, default="estimator"
        Name used in error messages.

    Returns
    -------
    float
        The bound.

    Raises
    ------
    ValueError
        If it is missing, not positive or not finite.
    """
    if data_norm is None:
        raise ValueError(
            f"{owner}: data_norm is required: a public bound on the l2 norm of a row "
            "(rows are clipped to it). dpgauss never reads it off the data, which "
            "would leak privacy; choose it from domain knowledge."
        )
    return _positive_finite("data_norm", data_norm, owner)


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
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.utils.validation import split_cost
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
