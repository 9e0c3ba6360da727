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
from dataclasses import dataclass
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
    "Tally",
    "components",
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

    The floats are those of ``Tally.of(costs).parts()`` (see :class:`Tally`) for
    every list whose sums are finite floats. The one difference is near the
    largest float: ``math.fsum`` raises ``OverflowError`` on some lists whose
    exact sum exceeds it by less than half a unit in the last place (an
    intermediate overflow), where the exact tally rounds to the largest float.
    Composition keeps ``math.fsum`` so that no composed cost, accept or refusal
    changes, even there.

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


# -- exact sums ------------------------------------------------------------------
# Every finite float is an integer multiple of 2**-1074 (the spacing of the
# smallest subnormal), so a sum of floats is kept exactly as an integer count of
# that unit. Rounding it back, ``count / _UNIT`` is int true division, which
# CPython rounds correctly (to nearest, ties to even); math.fsum also returns the
# exact sum of its terms rounded to nearest, ties to even. Both are therefore the
# one float nearest the same exact number: bit for bit the same, for every list
# whose rounded sum is finite (see parts_of for the overflow edge). Comparing two
# counts compares the exact sums, as comparing Fractions of the floats does.
_UNIT = 2**1074
_SUMS = ("rho", "pure", "pure_rho", "eps_a", "delta_a")
_COUNTS = ("events", "n_zcdp", "n_pure", "n_approx")


def _units(value):
    """``value`` as an exact integer count of 2**-1074 (ValueError unless finite)."""
    numerator, denominator = float(value).as_integer_ratio()
    return numerator << (1075 - denominator.bit_length())  # denominator: 2**k


def components(cost):
    """A cost as ``(kind, rho, epsilon, delta)``, ``None`` where it has no such part.

    Parameters
    ----------
    cost : ZCDP, PureDP or ApproxDP
        The cost.

    Returns
    -------
    tuple
        ``kind`` is ``"zcdp"``, ``"pure"`` or ``"approx"``.
    """
    if isinstance(cost, ZCDP):
        return "zcdp", cost.rho, None, None
    if isinstance(cost, PureDP):
        return "pure", None, cost.epsilon, None
    if isinstance(cost, ApproxDP):
        return "approx", None, cost.epsilon, cost.delta
    raise TypeError(f"a cost must be ZCDP, PureDP or ApproxDP, got {cost!r}.")


@dataclass(frozen=True)
class Tally:
    """Counts and exact sums of a list of costs' additive components.

    The one exact representation of a sum of costs: the ledger keeps its running
    total as a tally, and a plan compares the options of a choice by their
    tallies. Sums are integer counts of 2**-1074 (exact for any floats), read
    as floats by :meth:`parts`.

    Parameters
    ----------
    events, n_zcdp, n_pure, n_approx : int
        Number of costs, and of each kind.
    rho, pure, pure_rho, eps_a, delta_a : int
        The sums of :class:`Parts`, in units of 2**-1074.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, PureDP
    >>> from dpgauss.accounting._composition import Tally
    >>> tally = Tally.of([ZCDP(0.1)] * 10)
    >>> tally.parts().rho, sum([0.1] * 10)
    (1.0, 0.9999999999999999)
    >>> Tally.of([PureDP(0.5), PureDP(0.5)]).covers(Tally.of([PureDP(0.7)]))
    True
    """

    events: int = 0
    n_zcdp: int = 0
    n_pure: int = 0
    n_approx: int = 0
    rho: int = 0
    pure: int = 0
    pure_rho: int = 0
    eps_a: int = 0
    delta_a: int = 0

    @classmethod
    def of(cls, costs):
        """The tally of ``costs`` (TypeError for anything but a cost)."""
        return cls.of_components(components(cost) for cost in costs)

    @classmethod
    def of_components(cls, rows):
        """The tally of ``(kind, rho, epsilon, delta)`` rows (see :func:`components`).

        A row is read as given, without the checks of the cost classes, so
        that a ledger can be counted before its rows are trusted.
        """
        n = {"zcdp": 0, "pure": 0, "approx": 0}
        rho = pure = pure_rho = eps_a = delta_a = 0
        for kind, r, e, d in rows:
            n[kind] += 1  # KeyError: not a kind of cost
            if kind == "zcdp":
                rho += _units(r)
            elif kind == "pure":
                pure += _units(e)
                pure_rho += _units(pure_to_zcdp(e))
            else:
                eps_a += _units(e)
                delta_a += _units(d)
        return cls(
            sum(n.values()), n["zcdp"], n["pure"], n["approx"],
            rho, pure, pure_rho, eps_a, delta_a,
        )  # fmt: skip

    def __add__(self, other):
        names = _COUNTS + _SUMS
        return Tally(**{k: getattr(self, k) + getattr(other, k) for k in names})

    def parts(self):
        """The :class:`Parts`: each exact sum rounded to the nearest float."""
        sums = [getattr(self, k) / _UNIT for k in _SUMS]
        return Parts(*sums, self.n_zcdp, self.n_pure, self.n_approx)

    def covers(self, other):
        """Whether every exact sum and every kind :func:`compose` reads is >= other's.

        Composition reads the five sums and whether any zCDP or approximate
        cost occurs, and is non-decreasing in each; rounding to nearest is
        non-decreasing in the exact sum. Costs that cover others therefore
        compose, with anything added, to at least as much in every currency.
        """
        return all(getattr(self, k) >= getattr(other, k) for k in _SUMS) and all(
            bool(getattr(self, k)) >= bool(getattr(other, k))
            for k in ("n_zcdp", "n_approx")
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
