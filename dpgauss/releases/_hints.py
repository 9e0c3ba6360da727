"""The optional hints of the unbounded estimators and the searches they replace.

:class:`~dpgauss.gaussian.PrivateGaussianEstimator` and
:class:`~dpgauss.mean.PrivateMean` take the same public hints (``mean_bound``,
``cov_bounds``) and, for each hint missing, plan the same coarse-range release
(``range_location``, ``range_scale``) at ``range_share`` of the cost. This
mixin holds that shared part: checking the hints, the range entries of the
plan, and the warning (from public values only) when a search is predicted to
go astray.
"""

import math
import warnings

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._coinpress import tail_radius
from dpgauss.releases._prediction import report_useless
from dpgauss.releases._private_box import box_route_feasible
from dpgauss.releases._range import (
    RANGE_ROWS,
    RANGE_SCALES,
    CoarseRange,
    coarse_range,
    finite_mean,
    frame_count,
    nonzero_measurable,
    range_failure,
    range_release,
    scale_costs,
    scaled_deviations,
    top_eigenvalue,
)

__all__ = [
    "RangeHintsMixin",
    "loose_public_range",
    "public_whitening",
    "wishart_kappa",
]

#: A coarse-range search predicted to go astray with probability above this
#: warns, and the location search then uses the rows' norms.
RANGE_RISK = 0.01
#: Failure probability of each bound set from public rows alone (the Wishart
#: bound on the publicly whitened covariance, the public mean's distance to
#: mu). A loose bound costs a little accuracy (a longer first step); a bound
#: that fails costs more (the first step clips the rows), privacy neither.
PUBLIC_BETA = 0.01
#: From m public rows with m - 1 < NEAR_SQUARE d, the public covariance is
#: shrunk by SHRINK toward a multiple of the identity before whitening: near
#: m = d + 1 its smallest eigenvalues are too small by a factor up to about
#: d^2 (Edelman), and the frame steps did not recover from the directions P
#: stretched. Covariance error (median of 3-5 seeds, rho = 0.5, spectrum
#: 10^U[-2, 2] rotated) at m = d + 1: d = 20, n = 5,000: 3.7 -> 0.58; d = 50,
#: n = 10,000: 15 -> 5.6. At m = 1.4 d shrinking hurt (d = 50, n = 10,000:
#: 1.7 -> 5.2), hence the narrow window.
NEAR_SQUARE = 1.2
#: The shares of the budget the scale search may be raised to, in order, where
#: ``range_share`` cannot measure the coordinate scales
#: (:meth:`RangeHintsMixin._scale_share`).
SCALE_SHARES = (0.075, 0.1, 0.15, 0.2, 0.25)
SHRINK = 0.1
#: Failure probability of the looser public bounds that clamp a privately
#: searched top eigenvalue (:func:`loose_public_range`): a search with too
#: few rows or too little budget goes astray (311 rows at rho = 0.17, d = 3,
#: 23 public rows: 1e138 or 1e-228 in 5 of 12 seeds); the clamp is free and
#: each side fails with probability at most this.
LOOSE_BETA = 0.1


def wishart_kappa(m, d, beta=PUBLIC_BETA):
    """A bound kappa with ``lambda_max(P Sigma P) <= kappa^2`` w.p. 1 - beta.

    P is ``Sigma_pub^(-1/2)``, Sigma_pub the sample covariance (divisor m - 1)
    of m public rows drawn from N(mu, Sigma). ``Sigma^(-1/2) Sigma_pub
    Sigma^(-1/2) = G^T G / (m - 1)`` for an (m - 1) x d standard Gaussian G,
    and ``P Sigma P`` has the eigenvalues of its inverse, so
    ``lambda_max(P Sigma P) = (m - 1) / sigma_min(G)^2``. Davidson and Szarek
    (Gordon's inequality): ``sigma_min(G) >= sqrt(m - 1) - sqrt(d) - t`` with
    probability at least ``1 - exp(-t^2 / 2)``; with ``t = sqrt(2 log(1 /
    beta))`` and ``q = (sqrt(d) + t) / sqrt(m - 1)``, ``kappa = 1 / (1 - q)``
    (spec bks2022.md section 5.1.3: the realistic bound, not the paper's
    square-matrix one, which is about ``d / beta`` for m = d + 1). None when
    ``q >= 1`` (too few rows for this bound). Public: m, d, beta.
    """
    if m - 1 < d:
        return None
    q = _gordon_ratio(m, d, beta)
    return 1.0 / (1.0 - q) if q < 1.0 else None


def _gordon_ratio(m, d, beta):
    """``q = (sqrt(d) + sqrt(2 log(1 / beta))) / sqrt(m - 1)``: the relative
    deviation of the extreme singular values of an (m - 1) x d standard
    Gaussian matrix from ``sqrt(m - 1)``, exceeded w.p. at most beta."""
    return (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / beta))) / math.sqrt(m - 1)


def loose_public_range(m, d, beta=LOOSE_BETA):
    """Looser bounds ``(low, high)`` on ``lambda_max(P Sigma P)`` (m >= d + 1).

    Each holds with probability at least 1 - beta. With G the (m - 1) x d
    standard Gaussian matrix of :func:`wishart_kappa`, ``lambda_max = (m - 1)
    / sigma_min(G)^2``.

    * high: :func:`wishart_kappa` squared at ``beta`` when it exists;
      otherwise the square-case bound: G (m - 1 >= d) contains a d x d
      standard Gaussian block, whose smallest singular value is below ``beta
      / sqrt(d)`` with probability at most beta (Edelman 1988), so
      ``lambda_max <= (m - 1) d / beta^2``. Divided by ``1 - SHRINK`` where
      :func:`public_whitening` shrinks (the shrunk covariance is at least
      ``1 - SHRINK`` times the sample one).
    * low: ``sigma_min(G) <= sigma_max(G) <= sqrt(m - 1) + sqrt(d) + t``
      with probability at least ``1 - exp(-t^2 / 2)`` (Davidson and Szarek),
      so ``lambda_max >= 1 / (1 + q)^2``, q as in :func:`wishart_kappa`; 0
      where the covariance is shrunk (the shrinkage can make P Sigma P
      smaller).

    Public: m, d, beta.
    """
    kappa = wishart_kappa(m, d, beta)
    high = kappa * kappa if kappa is not None else (m - 1) * d / (beta * beta)
    if m - 1 < NEAR_SQUARE * d:
        return 0.0, high / (1.0 - SHRINK)
    return 1.0 / (1.0 + _gordon_ratio(m, d, beta)) ** 2, high


def public_whitening(public):
    """``(P, P^-1)``: P the inverse square root of the public rows' covariance.

    Computed on the deviations divided by their largest magnitude (rows near
    float64's edges neither overflow nor underflow), with eigenvalues floored
    at ``d eps`` times the largest so that P stays finite when the public rows
    are degenerate (a constant column: a utility problem only, P is public).
    From fewer than ``NEAR_SQUARE d + 1`` rows the covariance is first shrunk
    by SHRINK toward ``(trace / d) I``. Free: a function of public rows.
    """
    m, d = public.shape
    _, scaled, size = scaled_deviations(public)
    with np.errstate(all="ignore"):
        C = scaled.T @ scaled / max(m - 1, 1)
        if m - 1 < NEAR_SQUARE * d:
            C = (1.0 - SHRINK) * C + SHRINK * (np.trace(C) / d) * np.eye(d)
        values, vectors = np.linalg.eigh(C)
    top = float(values.max()) if values.max() > 0.0 else 1.0
    values = np.maximum(values, top * d * np.finfo(np.float64).eps)
    root = np.sqrt(values)
    with np.errstate(all="ignore"):
        P = (vectors / root) @ vectors.T / size
        inverse = (vectors * root) @ vectors.T * size
    return P, inverse


def tv_factors(gamma):
    """``(scale, shift)`` for public rows from a Gaussian within total
    variation ``gamma`` of the private one (Bie, Kamath and Singhal 2022,
    Lemma 3.12): ``Sigma <= scale Sigma_pub`` (4 / (1 - gamma)^4; 1 when
    gamma = 0, the same Gaussian) and ``(mu - mu_pub)(mu - mu_pub)^T <= shift
    (Sigma + Sigma_pub)`` (8 gamma / (1 - gamma)). Public."""
    if gamma == 0.0:
        return 1.0, 0.0
    return 4.0 / (1.0 - gamma) ** 4, 8.0 * gamma / (1.0 - gamma)


def _one_column_fares_better(cost, rows, one_rows, d, one_cost=None):
    """Whether a d-column search on ``rows`` at ``cost`` is predicted to go
    astray (above RANGE_RISK) and a one-column search on ``one_rows`` at
    ``one_cost`` (default ``cost``) to fare better. The union bounds are
    compared uncapped: capped at 1, two hopeless searches would tie."""
    one_cost = cost if one_cost is None else one_cost
    risk = range_failure(cost, rows, d, capped=False)
    one_risk = range_failure(one_cost, one_rows, 1, capped=False)
    return risk > RANGE_RISK and one_risk < risk


class _EntryCosts:
    """The range searches' costs by name (what :meth:`RangeHintsMixin.
    _scales_unmeasured` reads of a plan), before the plan is built."""

    def __init__(self, costs):
        self._costs = costs

    def cost(self, name):
        return self._costs[name]


class RangeHintsMixin:
    """Hints ``mean_bound`` and ``cov_bounds``, and the coarse range they spare.

    A subclass may override :meth:`_scale_known` (another hint that makes the
    scale search unnecessary) and :meth:`_range_search` (what a search reads);
    ``_HINTS`` names the hints in the warning.
    """

    _HINTS = "mean_bound and cov_bounds"

    def _check_hints(self):
        """Check ``mean_bound`` and ``cov_bounds`` (before any spend)."""
        self._bounds()
        if self.mean_bound is not None and not math.isfinite(float(self.mean_bound)):
            raise ValueError(f"mean_bound must be finite, got {self.mean_bound!r}.")

    def _bounds(self):
        """``(lower, upper)`` from ``cov_bounds``, or None."""
        if self.cov_bounds is None:
            return None
        try:
            lower, upper = (float(b) for b in self.cov_bounds)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"cov_bounds must be a pair (lower, upper), got {self.cov_bounds!r}."
            ) from exc
        if not (0.0 <= lower <= upper and 0.0 < upper < math.inf):
            raise ValueError(
                "cov_bounds must satisfy 0 <= lower <= upper < inf with upper > 0, "
                f"got {self.cov_bounds!r}."
            )
        return lower, upper

    #: Whether d + 1 or more public rows start the covariance frame (the
    #: estimators that learn a covariance).
    _PUBLIC_FRAME = False

    def _prepare_fit(self, data):
        """The public rows' whitening (:func:`public_whitening`), computed once
        per fit when they can start the frame (d + 1 rows or more)."""
        data = super()._prepare_fit(data)
        if (
            self._PUBLIC_FRAME
            and data.X_public is not None
            and data.n_public >= data.d + 1
        ):
            data = data.derive(whitening=public_whitening(data.X_public))
        return data

    def _scale_known(self, data):
        """Whether a hint (or enough public rows) makes the scale search
        unnecessary."""
        return self.cov_bounds is not None or self._public_scale(data) == "free"

    def _location_known(self, data):
        """Whether a hint or public rows make the location search unnecessary."""
        return self.mean_bound is not None or data.n_public > 0

    def _public_scale(self, data):
        """How the public rows start the frame, from public values (m, d):
        ``"free"`` (the Wishart bound :func:`wishart_kappa` holds), ``"search"``
        (d + 1 or more rows, too few for it or ``public_tv_bound`` positive:
        ``range_scale`` is the top eigenvalue in the public frame, one column)
        or None (fewer than d + 1 rows, or ``cov_bounds`` given and no free
        bound)."""
        m, d = data.n_public, data.d
        if not self._PUBLIC_FRAME or m < d + 1 or not self._public_frame_finite(data):
            return None
        # With a declared shift the free bound grows by 4 / (1 - gamma)^4 (at
        # gamma = 0.9, 4e4: the frame started too small to recover, covariance
        # error 4.5 against 0.4); the private search of the top eigenvalue
        # does not depend on how the public rows were drawn.
        if wishart_kappa(m, d) is not None and float(self.public_tv_bound) == 0.0:
            return "free"
        return None if self.cov_bounds is not None else "search"

    def _public_frame_finite(self, data):
        """Whether the public rows' whitening and its inverse are finite (rows
        whose deviations are subnormal or huge overflow them: no public frame
        then, decided before the spend from public rows alone). True when only
        the count is known (pricing)."""
        if data.X_public is None:
            return True
        P, inverse = data.public["whitening"]
        return bool(np.all(np.isfinite(P)) and np.all(np.isfinite(inverse)))

    def _public_center(self, data):
        """The mean of the public rows (free: public data), or None."""
        public = data.X_public
        return None if public is None else finite_mean(public)

    def _range_names(self, data):
        """The coarse-range releases the missing hints need."""
        names = []
        if not self._location_known(data):
            names.append("range_location")
        if not self._scale_known(data):
            names.append("range_scale")
        return names

    def _range_entries(self, total, data):
        """The range releases' plan entries (``range_share`` each, the scale
        search's raised by :meth:`_scale_share`) and the rest."""
        names = self._range_names(data)
        if not names:
            return [], total
        share = self._scale_share(total, data, names)
        parts, rest = self._range_costs(total, names, share)
        entries = [
            self._range_release(name, c, data)
            for name, c in zip(names, parts, strict=True)
        ]
        return entries, rest

    def _range_costs(self, total, names, share):
        """``(parts, rest)``: the cost of each range search in ``names``
        (``range_share`` each, ``share`` for ``range_scale``) and what is left
        of ``total``; the plan's split, and the one :meth:`_scale_share`
        predicts from (public)."""
        shares = [
            share if name == "range_scale" else float(self.range_share)
            for name in names
        ]
        ranged = sum(shares)
        ranged_cost, rest = split_cost(total, [ranged, 1.0 - ranged])
        return split_cost(ranged_cost, [one / ranged for one in shares]), rest

    def _scale_cost(self, total, data, names, share):
        """The cost of the d coordinate scales' search (the first part of
        ``range_scale``) when the scale search takes ``share`` of ``total``:
        the plan's own split (:meth:`_range_costs`; public)."""
        parts, _ = self._range_costs(total, names, share)
        return scale_costs(parts[names.index("range_scale")])[0]

    def _scale_share(self, total, data, names):
        """The scale search's share of ``total`` (``range_share`` where it
        does not run): ``range_share``, raised to
        the first of :data:`SCALE_SHARES` at which the d coordinate scales
        can be measured where they cannot at ``range_share``
        (:func:`~dpgauss.releases._range.nonzero_measurable`) and the plain
        search would not go astray there. Below that, every scale falls back
        to one typical value and the frame starts as if the columns shared
        their units: on columns whose sds span 1e-3 to 1e6 (n = 2,000, rho 1)
        the mean landed 1e6 sampling errors off, and 0.2-0.7 at a share of
        0.1. Public: the cost, n and d; where no share up to the last can
        measure them, ``range_share`` stays and :meth:`_check_utility` warns.
        """
        share = float(self.range_share)
        d = data.d
        if "range_scale" not in names:
            return share
        if d == 1 or data.n is None or self._public_scale(data) is not None:
            return share  # n unknown: a plan priced before the rows
        if not self._coordinate_scales(total, data, names, share):
            return share
        rows = min(frame_count(data.n), RANGE_ROWS)
        if nonzero_measurable(self._scale_cost(total, data, names, share), rows, d):
            return share
        for raised in SCALE_SHARES:
            if raised <= share:
                continue
            cost = self._scale_cost(total, data, names, raised)
            if (
                nonzero_measurable(cost, rows, d)
                and range_failure(cost, rows, d) <= RANGE_RISK
                and self._coordinate_scales(total, data, names, raised)
            ):
                return raised
        return share

    def _coordinate_scales(self, total, data, names, share):
        """Whether the fit searches the d coordinate scales when the scale
        search takes ``share`` of ``total`` (a subclass whose plan can do
        without them says so; public values only)."""
        return True

    def _scales_unmeasured_at(self, total, data):
        """:meth:`_scales_unmeasured` before the plan exists: from the range
        entries ``total`` would get (public: the cost, n and d)."""
        if data.n is None:
            return False
        names = self._range_names(data)
        if "range_scale" not in names:
            return False
        share = self._scale_share(total, data, names)
        if not self._coordinate_scales(total, data, names, share):
            return False
        parts, _ = self._range_costs(total, names, share)
        costs = _EntryCosts(dict(zip(names, parts, strict=True)))
        return RangeHintsMixin._scales_unmeasured(self, costs, data)

    def _box_route(self, total, data):
        """Whether the fit finds a box privately and makes its boxed release
        in it: with no hint and no public rows, where the scale search
        cannot measure the columns' scales (:meth:`_scales_unmeasured_at`:
        the frame would start as if they shared their units; columns with
        sds from 1e-3 to 1e6 at rho 0.125 and n = 2,000 put the mean 1e6
        sampling errors off) and the box search at :data:`BOX_ROUTE_SHARE`
        of the cost can reach the quartiles
        (:func:`~dpgauss.releases._private_box.box_search_fails`). That is the
        simplest private answer without public knowledge. Public: the cost,
        n, d and the parameters."""
        if (
            getattr(self, "bounds", None) is not None
            or self.mean_bound is not None
            or self.cov_bounds is not None
            or data.n is None
            or data.n_public
            or data.d < 2
        ):
            return False
        if not self._scales_unmeasured_at(total, data):
            return False
        return box_route_feasible(total, data.n, data.d)

    def _scales_unmeasured(self, plan, data):
        """Whether the fit's coordinate scales are predicted to be one value
        for every column (the one-column search, or a d-column search that
        cannot measure a column): public, from the plan's costs, n and d."""
        if "range_scale" not in self._range_names(data) or data.d == 1:
            return False
        if self._public_scale(data) is not None:
            return False
        if self._one_scale(plan, data):
            return True
        rows = min(frame_count(data.n), RANGE_ROWS)
        return not nonzero_measurable(
            scale_costs(plan.cost("range_scale"))[0], rows, data.d
        )

    def _range_release(self, name, cost, data):
        """The plan entry of the range release ``name``, with its factory
        (:func:`~dpgauss.releases._range.range_release`; a subclass gives its
        own steps theirs)."""
        return range_release(name, cost, data.d)

    def _range_search(self, name, plan, data):
        """``(rows, columns)`` a search reads: the rows (or, for the scale
        searched on the pairs, the frame's pairs), at most RANGE_ROWS, and d
        columns searched together (one, the norms, for the location by norm)."""
        n, d = data.n, data.d
        by_norm = self._location_by_norm(plan, data)
        if name == "range_location":
            return min(n, RANGE_ROWS), 1 if by_norm else d
        if self._one_scale(plan, data):
            return min(frame_count(n), RANGE_ROWS), 1
        rows = frame_count(n) if self._location_known(data) or by_norm else n
        return min(rows, RANGE_ROWS), d

    def _one_scale(self, plan, data):
        """Whether ``range_scale`` searches one column (the pairs' norms,
        :func:`~dpgauss.releases._range.top_eigenvalue`) rather than
        d coordinates: when the latter is predicted to go astray and the one
        column to fare better. Public: the cost, n, d."""
        n, d = data.n, data.d
        if self._public_scale(data) == "search":
            return True  # the top eigenvalue in the public frame
        if self._scale_known(data) or d == 1:
            return False
        located = not self._location_known(data) and not self._location_by_norm(
            plan, data
        )
        rows = min(n if located else frame_count(n), RANGE_ROWS)
        pairs = min(frame_count(n), RANGE_ROWS)
        cost = plan.cost("range_scale")
        # Per coordinate, the d columns get scale_costs' first part.
        return _one_column_fares_better(scale_costs(cost)[0], rows, pairs, d, cost)

    def _location_by_norm(self, plan, data):
        """Whether ``range_location`` searches the rows' norms (one column)
        rather than the d coordinate medians: when the latter is predicted to
        go astray (:func:`~dpgauss.mechanisms._range.range_failure` above 1%)
        and the norms are predicted to fare better. Public: the cost, n, d."""
        n, d = data.n, data.d
        if self._location_known(data) or d == 1:
            return False
        rows = min(n, RANGE_ROWS)
        return _one_column_fares_better(plan.cost("range_location"), rows, rows, d)

    def _coarse_range(self, data, pairs, plan, rng, scale):
        """:func:`~dpgauss.releases._range.coarse_range` for the missing hints
        (``scale``: whether to search per-coordinate scales), with the
        one-column searches where the d-column ones would go astray."""
        way = self._public_scale(data)
        if way is not None:
            return self._public_range(data, pairs, plan, rng, way)
        found = coarse_range(
            data.X,
            pairs,
            plan,
            rng,
            not self._location_known(data),
            scale,
            self._location_by_norm(plan, data),
            scale and self._one_scale(plan, data),
        )
        center = self._public_center(data)
        return found if center is None else found._replace(center=center)

    def _public_range(self, data, pairs, plan, rng, way):
        """The coarse range from d + 1 or more public rows: their mean, their
        whitening P (free), and a bound on ``lambda_max(P Sigma P)``: the
        Wishart bound (free, ``way="free"``) or ``range_scale``, the private
        median of the norms of the pairs mapped by P
        (:func:`~dpgauss.releases._range.top_eigenvalue`; one row changes
        one pair, hence one norm)."""
        m, d = data.X_public.shape
        P, _ = data.public["whitening"]
        if way == "free":  # public_tv_bound is 0
            top = wishart_kappa(m, d) ** 2
        else:
            top = top_eigenvalue(pairs, plan, rng, "range_scale", frame=P)
            if float(self.public_tv_bound) == 0.0:  # post-processing: free
                low, high = loose_public_range(m, d)
                top = min(max(top, low), high)
        return CoarseRange(self._public_center(data), None, None, top, P)

    def _check_utility(self, plan, data):
        """Warn (UtilityWarning) when a coarse-range search is predicted to fail."""
        n, d = data.n, data.d
        for name in self._range_names(data):
            if not name.startswith("range_"):
                continue  # another step's warning (a subclass's)
            rows, columns = self._range_search(name, plan, data)
            cost = plan.cost(name)
            if name == "range_scale" and columns > 1:
                cost = scale_costs(cost)[0]  # the d-column part (coarse_range)
            risk = range_failure(cost, rows, columns)
            if risk > RANGE_RISK:
                report_useless(
                    self,
                    f"{type(self).__name__}: with n={n}, d={d} and {plan.total}, "
                    f"the private search for the data's {name[6:]} is predicted to "
                    f"go astray with probability up to {risk:.2g} (its count noise "
                    f"is not far below n / 2). Give {self._HINTS}, a larger "
                    "range_share or budget, or more rows.",
                )
        if self._scales_unmeasured(plan, data):
            warnings.warn(
                f"{type(self).__name__}: with n={n}, d={d} and {plan.total}, the "
                "columns' scales cannot be measured privately (too few pairs of "
                "rows for the search's share of the budget), so the fit assumes "
                "every column has about the same spread. Columns in other units "
                "(spreads 100 or more times apart) can then come out far off, the "
                f"narrow ones most. Give {self._HINTS}, a larger budget or more "
                "rows.",
                UtilityWarning,
                stacklevel=4,
            )

    def _within_hints(self, mean):
        """The mean projected into the public ball ``||mu|| <= mean_bound``
        when it is given (post-processing of a released value; the true mean
        lies in the ball, a convex set, so the error can only shrink), with
        non-finite entries at its center 0."""
        mean = np.nan_to_num(np.asarray(mean, dtype=np.float64), nan=0.0)
        if self.mean_bound is None:
            return mean
        bound = float(self.mean_bound)
        mean = np.clip(mean, -bound, bound)  # finite, so the norm is
        norm = float(np.linalg.norm(mean))
        return mean if norm <= bound else mean * (bound / norm)

    def _mean_radius(self, data, frame, scales, found):
        """The first mean step's radius in ``frame`` (released values only).

        With d + 1 or more public rows (``found.frame`` is their whitening P
        and ``found.top`` bounds ``lambda_max(P Sigma P)``): the public mean
        is N(mu, Sigma / m), so ``||P (mu - center)|| <= sqrt(top)
        tail(d) / sqrt(m)``, and ``||A (mu - center)|| <= ||A P^-1||`` times
        that. With fewer public rows, their mean is within RANGE_SCALES
        scales of mu over sqrt(m) in every coordinate: ``RANGE_SCALES sqrt(d /
        m) ||A diag(scales)||`` (taking precedence over ``mean_bound``). Public
        rows within total variation gamma (``public_tv_bound``) add the shift
        of :func:`tv_factors`. With ``mean_bound`` (or the bound released by
        the norm search): ``||A|| mean_bound``. Otherwise the coarse center is
        within RANGE_SCALES scales of the mean in every coordinate:
        ``RANGE_SCALES sqrt(d) ||A diag(scales)||``.
        """
        m = data.n_public
        d = frame.shape[1]
        bound = float(self.mean_bound) if self.mean_bound is not None else found.bound
        if m == 0 and bound is not None:
            with np.errstate(over="ignore"):
                return float(np.linalg.norm(frame, ord=2)) * float(bound)
        scale, shift = tv_factors(float(self.public_tv_bound))
        with np.errstate(all="ignore"):
            if found.frame is not None:
                _, inverse = data.public["whitening"]
                stretch = float(np.linalg.norm(frame @ inverse, ord=2))
                # ||P (mu_pub - mu_hat_pub)||: the sampling error; the shift
                # between the two Gaussians: shift (top + scale top).
                error = math.sqrt(found.top / m) * tail_radius(d, PUBLIC_BETA)
                error += math.sqrt(shift * found.top * (1.0 + scale))
                return stretch * error
            stretch = float(np.linalg.norm(frame * scales, ord=2))
        coordinate = RANGE_SCALES / math.sqrt(max(m, 1))
        if m:  # each coordinate's shift: shift (sigma_j^2 + sigma_pub,j^2)
            coordinate += math.sqrt(shift * (1.0 + scale))
        return coordinate * math.sqrt(d) * stretch
