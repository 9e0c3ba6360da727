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

from dpgauss.accounting._plan import Release
from dpgauss.covariance._methods import kind_of
from dpgauss.exceptions import UtilityWarning
from dpgauss.gaussian._steps import (
    RANGE_ROWS,
    RANGE_SCALES,
    coarse_range,
    frame_count,
    range_failure,
    scale_costs,
)
from dpgauss.utils.validation import split_cost

__all__ = ["RangeHintsMixin"]

#: A coarse-range search predicted to go astray with probability above this
#: warns, and the location search then uses the rows' norms.
RANGE_RISK = 0.01


def _one_column_fares_better(cost, rows, one_rows, d, one_cost=None):
    """Whether a d-column search on ``rows`` at ``cost`` is predicted to go
    astray (above RANGE_RISK) and a one-column search on ``one_rows`` at
    ``one_cost`` (default ``cost``) to fare better. The union bounds are
    compared uncapped: capped at 1, two hopeless searches would tie."""
    one_cost = cost if one_cost is None else one_cost
    risk = range_failure(cost, rows, d, capped=False)
    one_risk = range_failure(one_cost, one_rows, 1, capped=False)
    return risk > RANGE_RISK and one_risk < risk


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

    def _scale_known(self):
        """Whether a hint makes the scale search unnecessary."""
        return self.cov_bounds is not None

    def _location_known(self):
        """Whether a hint or public rows make the location search unnecessary."""
        return self.mean_bound is not None or self._public_count() > 0

    def _public_center(self):
        """The mean of the public rows (free: public data), or None."""
        public = self._public_rows()
        if public is None:
            return None
        with np.errstate(all="ignore"):
            center = np.mean(public, axis=0)
        # Rows near the largest float may overflow the sum: average scaled.
        if not np.all(np.isfinite(center)):
            center = np.mean(public / public.shape[0], axis=0) * public.shape[0]
        return np.where(np.isfinite(center), center, 0.0)

    def _range_names(self):
        """The coarse-range releases the missing hints need."""
        names = []
        if not self._location_known():
            names.append("range_location")
        if not self._scale_known():
            names.append("range_scale")
        return names

    def _range_entries(self, total):
        """The range releases' plan entries (``range_share`` each) and the rest."""
        names = self._range_names()
        if not names:
            return [], total
        share = float(self.range_share) * len(names)
        ranged, rest = split_cost(total, [share, 1.0 - share])
        parts = split_cost(ranged, [1.0 / len(names)] * len(names))
        entries = [
            Release(name, c, kind_of(total))
            for name, c in zip(names, parts, strict=True)
        ]
        return entries, rest

    def _range_search(self, name, plan, n, d):
        """``(rows, columns)`` a search reads: the rows (or, for the scale
        searched on the pairs, the frame's pairs), at most RANGE_ROWS, and d
        columns searched together (one, the norms, for the location by norm)."""
        by_norm = self._location_by_norm(plan, n, d)
        if name == "range_location":
            return min(n, RANGE_ROWS), 1 if by_norm else d
        if self._one_scale(plan, n, d):
            return min(frame_count(n), RANGE_ROWS), 1
        rows = frame_count(n) if self._location_known() or by_norm else n
        return min(rows, RANGE_ROWS), d

    def _one_scale(self, plan, n, d):
        """Whether ``range_scale`` searches one column (the pairs' norms,
        :func:`~dpgauss.gaussian._steps.top_eigenvalue`) rather than
        d coordinates: when the latter is predicted to go astray and the one
        column to fare better. Public: the cost, n, d."""
        if self._scale_known() or d == 1:
            return False
        located = not self._location_known() and not self._location_by_norm(plan, n, d)
        rows = min(n if located else frame_count(n), RANGE_ROWS)
        pairs = min(frame_count(n), RANGE_ROWS)
        cost = plan.cost("range_scale")
        # Per coordinate, the d columns get scale_costs' first part.
        return _one_column_fares_better(scale_costs(cost)[0], rows, pairs, d, cost)

    def _location_by_norm(self, plan, n, d):
        """Whether ``range_location`` searches the rows' norms (one column)
        rather than the d coordinate medians: when the latter is predicted to
        go astray (:func:`~dpgauss.gaussian._steps.range_failure` above 1%)
        and the norms are predicted to fare better. Public: the cost, n, d."""
        if self._location_known() or d == 1:
            return False
        rows = min(n, RANGE_ROWS)
        return _one_column_fares_better(plan.cost("range_location"), rows, rows, d)

    def _coarse_range(self, X, pairs, plan, rng, scale):
        """:func:`~dpgauss.gaussian._steps.coarse_range` for the missing hints
        (``scale``: whether to search per-coordinate scales), with the
        one-column searches where the d-column ones would go astray."""
        n, d = X.shape
        found = coarse_range(
            X,
            pairs,
            plan,
            rng,
            not self._location_known(),
            scale,
            self._location_by_norm(plan, n, d),
            scale and self._one_scale(plan, n, d),
        )
        center = self._public_center()
        return found if center is None else found._replace(center=center)

    def _check_utility(self, plan, n, d):
        """Warn (UtilityWarning) when a coarse-range search is predicted to fail."""
        for name in self._range_names():
            rows, columns = self._range_search(name, plan, n, d)
            cost = plan.cost(name)
            if name == "range_scale" and columns > 1:
                cost = scale_costs(cost)[0]  # the d-column part (coarse_range)
            risk = range_failure(cost, rows, columns)
            if risk > RANGE_RISK:
                warnings.warn(
                    f"{type(self).__name__}: with n={n}, d={d} and {plan.total}, "
                    f"the private search for the data's {name[6:]} is predicted to "
                    f"go astray with probability up to {risk:.2g} (its count noise "
                    f"is not far below n / 2). Give {self._HINTS}, a larger "
                    "range_share or budget, or more rows.",
                    UtilityWarning,
                    stacklevel=4,
                )

    def _mean_radius(self, frame, scales, bound=None):
        """The first mean step's radius in ``frame`` (released values only).

        With m public rows the center is their mean, within RANGE_SCALES
        scales of the mean over sqrt(m) in every coordinate (public rows drawn
        from the same Gaussian): ``RANGE_SCALES sqrt(d / m) ||A
        diag(scales)||`` (taking precedence over ``mean_bound``). With
        ``mean_bound`` (or ``bound``, released by the norm search):
        ``||A|| mean_bound``. Otherwise the coarse center is within
        RANGE_SCALES scales of the mean in every coordinate:
        ``RANGE_SCALES sqrt(d) ||A diag(scales)||``.
        """
        m = self._public_count()
        if m == 0 and self.mean_bound is not None:
            bound = float(self.mean_bound)
        if m == 0 and bound is not None:
            with np.errstate(over="ignore"):
                return float(np.linalg.norm(frame, ord=2)) * float(bound)
        d = frame.shape[1]
        stretch = float(np.linalg.norm(frame * scales, ord=2))
        return RANGE_SCALES * math.sqrt(d / max(m, 1)) * stretch
