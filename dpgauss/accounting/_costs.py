"""Immutable privacy costs and the conversions between them.

Three kinds of cost are used:

* :class:`PureDP` (``epsilon``): pure epsilon-DP;
* :class:`ZCDP` (``rho``): rho-zero-concentrated DP (Bun and Steinke 2016), the
  library's internal currency;
* :class:`ApproxDP` (``epsilon``, ``delta``): approximate DP.

Conversions (all exact statements, tested against closed-form values):

* pure -> zCDP: an epsilon-DP mechanism is ``epsilon**2 / 2``-zCDP
  (Bun and Steinke 2016, Proposition 1.4);
* zCDP -> approximate: rho-zCDP implies (epsilon, delta)-DP for

  .. math::

     \\varepsilon(\\rho, \\delta) = \\inf_{\\alpha > 1} \\alpha\\rho
       + \\frac{\\log(1/\\delta) + (\\alpha - 1)\\log(1 - 1/\\alpha) - \\log\\alpha}
              {\\alpha - 1}

  (Canonne, Kamath and Steinke 2020, Proposition 12 with the Renyi bound
  ``D_alpha <= alpha * rho``). Any alpha gives a valid bound, so the numerical
  minimisation below can only err on the safe (larger epsilon) side;
* approximate -> zCDP (for budgets given as epsilon and delta): the largest rho
  whose conversion is at most epsilon, found by bisection that keeps the lower,
  valid, end of the bracket.
"""

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import minimize_scalar

__all__ = [
    "ZCDP",
    "ApproxDP",
    "PureDP",
    "approx_to_zcdp",
    "pure_to_zcdp",
    "zcdp_to_approx",
]


def _check_positive_finite(name, value, *, allow_zero=False):
    """Return ``value`` as a float after checking it is a finite positive number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    return value


def _check_delta(delta, *, allow_zero=False):
    delta = _check_positive_finite("delta", delta, allow_zero=allow_zero)
    if delta >= 1:
        raise ValueError(f"delta must be < 1, got {delta!r}.")
    return delta


@dataclass(frozen=True)
class ZCDP:
    """A cost of rho-zero-concentrated differential privacy.

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``rho >= 0`` and finite.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> cost = ZCDP(0.125)
    >>> round(cost.to_approx(1e-6).epsilon, 3)
    2.419
    """

    rho: float

    def __post_init__(self):
        object.__setattr__(
            self, "rho", _check_positive_finite("rho", self.rho, allow_zero=True)
        )

    def to_zcdp(self):
        """Return this cost as zCDP (itself).

        Returns
        -------
        ZCDP
            ``self``.
        """
        return self

    def to_approx(self, delta):
        """Return the (epsilon, delta) guarantee implied at ``delta``.

        Parameters
        ----------
        delta : float
            Target delta, ``0 < delta < 1``.

        Returns
        -------
        ApproxDP
            The tight Canonne-Kamath-Steinke conversion.
        """
        return ApproxDP(zcdp_to_approx(self.rho, delta), delta)

    def __str__(self):
        return f"rho={self.rho:.6g}"


@dataclass(frozen=True)
class PureDP:
    """A cost of pure epsilon-differential privacy.

    Parameters
    ----------
    epsilon : float
        ``epsilon >= 0`` and finite.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> PureDP(1.0).to_zcdp()
    ZCDP(rho=0.5)
    """

    epsilon: float

    def __post_init__(self):
        object.__setattr__(
            self,
            "epsilon",
            _check_positive_finite("epsilon", self.epsilon, allow_zero=True),
        )

    def to_zcdp(self):
        """Return the zCDP cost implied by this pure cost.

        Returns
        -------
        ZCDP
            ``rho = epsilon^2 / 2``.
        """
        return ZCDP(pure_to_zcdp(self.epsilon))

    def to_approx(self, delta):
        """Return the (epsilon, delta) guarantee: the better of pure and via zCDP.

        Parameters
        ----------
        delta : float
            Target delta, ``0 < delta < 1``.

        Returns
        -------
        ApproxDP
            Epsilon is the smaller of ``epsilon`` and the conversion of
            ``epsilon^2 / 2``-zCDP at ``delta``.
        """
        via_zcdp = zcdp_to_approx(pure_to_zcdp(self.epsilon), delta)
        return ApproxDP(min(self.epsilon, via_zcdp), delta)

    def __str__(self):
        return f"epsilon={self.epsilon:.6g} (pure)"


@dataclass(frozen=True)
class ApproxDP:
    """A cost of approximate (epsilon, delta)-differential privacy.

    Parameters
    ----------
    epsilon : float
        ``epsilon >= 0`` and finite.
    delta : float
        ``0 <= delta < 1``.

    Examples
    --------
    >>> from dpgauss.accounting import ApproxDP
    >>> ApproxDP(1.0, 1e-6)
    ApproxDP(epsilon=1.0, delta=1e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self):
        object.__setattr__(
            self,
            "epsilon",
            _check_positive_finite("epsilon", self.epsilon, allow_zero=True),
        )
        object.__setattr__(self, "delta", _check_delta(self.delta, allow_zero=True))

    def to_zcdp(self):
        """Approximate DP does not imply zCDP; always raises."""
        from dpgauss.exceptions import PrivacyAccountingError

        raise PrivacyAccountingError(
            "an (epsilon, delta)-DP cost cannot be expressed as rho-zCDP; charge it "
            "to a budget given as epsilon and delta."
        )

    def to_approx(self, delta):
        """Return itself when ``delta`` is at least its own delta.

        Parameters
        ----------
        delta : float
            Target delta.

        Returns
        -------
        ApproxDP
            ``self``; raises ValueError if ``delta`` is smaller than its own.
        """
        if delta < self.delta:
            raise ValueError(f"cannot report {self} at the smaller delta={delta!r}.")
        return self

    def __str__(self):
        return f"epsilon={self.epsilon:.6g}, delta={self.delta:.3g}"


def pure_to_zcdp(epsilon):
    """Return rho such that epsilon-DP implies rho-zCDP: ``rho = epsilon**2 / 2``.

    Parameters
    ----------
    epsilon : float
        Pure DP parameter.

    Returns
    -------
    float
        ``epsilon**2 / 2`` (Bun and Steinke 2016, Proposition 1.4), rounded up:
        never below the exact value, so no conversion under-counts.

    Examples
    --------
    >>> from dpgauss.accounting import pure_to_zcdp
    >>> pure_to_zcdp(1.0)
    0.5
    """
    epsilon = _check_positive_finite("epsilon", epsilon, allow_zero=True)
    rho = epsilon * epsilon / 2.0
    if Fraction(rho) < Fraction(epsilon) ** 2 / 2:  # rounded down: one ulp up
        rho = math.nextafter(rho, math.inf)
    return rho


def _cks_objective(log_alpha_minus_1, rho, log_inv_delta):
    """Epsilon bound of CKS 2020 Prop. 12 at alpha = 1 + exp(t)."""
    am1 = math.exp(log_alpha_minus_1)
    alpha = 1.0 + am1
    # (alpha - 1) * log(1 - 1/alpha) = am1 * log(am1 / alpha), computed stably.
    tail = am1 * (math.log(am1) - math.log(alpha)) - math.log(alpha)
    return alpha * rho + (log_inv_delta + tail) / am1


def zcdp_to_approx(rho, delta):
    """Return the smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP.

    Uses the tight conversion of Canonne, Kamath and Steinke (2020), Proposition 12,
    not the looser ``rho + 2 sqrt(rho log(1/delta))``.

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``rho >= 0``.
    delta : float
        Target delta, ``0 < delta < 1``.

    Returns
    -------
    float
        The epsilon, >= 0. The infimum over alpha is computed numerically; every alpha
        gives a valid epsilon, so a numerical slip can only make it larger.

    Examples
    --------
    >>> from dpgauss.accounting import zcdp_to_approx
    >>> round(zcdp_to_approx(0.125, 1e-6), 3)
    2.419
    """
    rho = _check_positive_finite("rho", rho, allow_zero=True)
    delta = _check_delta(delta)
    if rho == 0.0:
        return 0.0
    log_inv_delta = -math.log(delta)
    # Coarse grid over t = log(alpha - 1), then a bounded Brent refinement around
    # the best grid point: the objective is smooth and unimodal in t.
    grid = np.linspace(-25.0, 25.0, 201)
    values = [_cks_objective(t, rho, log_inv_delta) for t in grid]
    best = int(np.argmin(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    res = minimize_scalar(
        _cks_objective,
        bounds=(lo, hi),
        args=(rho, log_inv_delta),
        method="bounded",
        options={"xatol": 1e-12},
    )
    eps = min(float(res.fun), values[best])
    return max(eps, 0.0)


def approx_to_zcdp(epsilon, delta):
    """Return the largest rho such that rho-zCDP implies (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon : float
        Target epsilon, ``> 0``.
    delta : float
        Target delta, ``0 < delta < 1``.

    Returns
    -------
    float
        The rho, with ``zcdp_to_approx(rho, delta) <= epsilon`` (checked), within a
        relative 1e-12 of the largest such rho.

    Examples
    --------
    >>> from dpgauss.accounting import approx_to_zcdp, zcdp_to_approx
    >>> rho = approx_to_zcdp(2.419093, 1e-6)
    >>> round(rho, 5)
    0.125
    >>> zcdp_to_approx(rho, 1e-6) <= 2.419093
    True
    """
    epsilon = _check_positive_finite("epsilon", epsilon)
    delta = _check_delta(delta)
    lo, hi = 0.0, max(epsilon, 1e-300)
    while zcdp_to_approx(hi, delta) <= epsilon:  # grow until the bracket holds
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        if hi - lo <= 1e-12 * hi:
            break
        mid = 0.5 * (lo + hi)
        if zcdp_to_approx(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def kind_of(cost):
    """The additive noise family of a cost: ``"gaussian"`` (zCDP) or ``"laplace"``.

    The ledger's label for a release paid with additive noise; the noise itself is
    chosen by :func:`dpgauss.mechanisms._factory.additive`.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, PureDP
    >>> from dpgauss.accounting._costs import kind_of
    >>> kind_of(ZCDP(0.5)), kind_of(PureDP(1.0))
    ('gaussian', 'laplace')
    """
    return "gaussian" if isinstance(cost, ZCDP) else "laplace"


def scaled(cost, factor):
    """A zCDP or pure cost times ``factor`` (rho or epsilon, in its own currency).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP, PureDP
    >>> from dpgauss.accounting._costs import scaled
    >>> scaled(ZCDP(0.5), 0.5), scaled(PureDP(1.0), 0.5)
    (ZCDP(rho=0.25), PureDP(epsilon=0.5))
    """
    if isinstance(cost, ZCDP):
        return ZCDP(cost.rho * factor)
    return PureDP(cost.epsilon * factor)


def privacy_parameters(cost):
    """An estimator's privacy parameters that state ``cost`` (zCDP or pure).

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.accounting._costs import privacy_parameters
    >>> privacy_parameters(PureDP(0.5))
    {'rho': None, 'epsilon': 0.5}
    """
    if isinstance(cost, ZCDP):
        return {"rho": cost.rho, "epsilon": None}
    return {"rho": None, "epsilon": cost.epsilon}


def value_of(cost):
    """A zCDP cost's rho or a pure cost's epsilon: the number in its own currency.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.accounting._costs import value_of
    >>> value_of(ZCDP(0.5))
    0.5
    """
    return cost.rho if isinstance(cost, ZCDP) else cost.epsilon


def as_pure(cost):
    """A pure cost as is; a zCDP cost as the epsilon whose epsilon^2/2 it equals."""
    return cost if isinstance(cost, PureDP) else PureDP(math.sqrt(2.0 * cost.rho))
