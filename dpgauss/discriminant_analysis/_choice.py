"""How a discriminant analysis chooses its plan and predicts its accuracy,
before the spend, from public values only.

Two plans release the class counts and sums (after the clipping center and
radius with adaptive clipping); they differ in the covariance release:
``"full"``, a second moment (LDA: pooled; QDA: per class), or ``"diag"``,
the pooled squares (a shared diagonal covariance, Gaussian naive Bayes with
pooled variances). Under Laplace noise the squares' d entries carry ``(d +
1) / 2`` times less noise each than the second moment's upper triangle (l1
``2 B^2 / n`` against ``(d + 1) B^2 / n``, :mod:`dpgauss.releases._groups`);
under Gaussian noise the two cost alike per entry and the full release keeps
the correlations. ``covariance_type="auto"`` takes the plan whose
within-class covariance is predicted the smaller Frobenius error on the
reference rows of :mod:`dpgauss.releases._classes`; the fit then predicts its
error on the reference problem there, and refuses (``on_useless="raise"``)
or warns when it is above :data:`~dpgauss.releases._classes.USEFUL_SHARE` of
the majority class's. Every decision reads the privacy parameters, n, d, K
and the public bound only: it reveals nothing. The warning after the spend
(a released class count within its noise of zero) reads released values
only (post-processing).
"""

import math
import warnings

import numpy as np

from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._class_rule import COUNT_Z, faint_classes
from dpgauss.releases._classes import (
    REFERENCE_MAJORITY,
    REFERENCE_SEPARATION,
    USEFUL_SHARE,
    check_classes,
    covariance_error,
    reference_error,
    reference_radius,
)
from dpgauss.releases._diagonal import BOX_FILL
from dpgauss.releases._prediction import report_useless
from dpgauss.utils._leak import caller_stacklevel

__all__ = ["PlanChoiceMixin"]


class PlanChoiceMixin:
    """The covariance type, the predicted error and the refusal (see the
    module docstring), for the discriminant analyses' shared mixin, which
    provides ``_plan(total, data, structure)`` and ``_norm(d)``."""

    def _build_plan(self, total, data):
        self._location(data.d)
        return self._plan(total, data, self._structure(total, data))

    def _structure(self, total, data):
        """``"full"`` or ``"diag"``: ``covariance_type``, or for ``"auto"``
        the one whose within-class covariance is predicted the smaller
        Frobenius error on the reference rows
        (:func:`~dpgauss.releases._classes.covariance_error`, mechanisms at
        the reference radius). Public values only, before the spend; priced
        without n, the last fit's (``covariance_type_``), else the full plan."""
        if self.covariance_type != "auto":
            return self.covariance_type
        if data.n is None or data.n < 2 or data.d < 1:  # priced, or refused later
            return getattr(self, "covariance_type_", "full")
        errors = {}
        for structure in ("full", "diag"):
            plan = self._plan(total, data, structure)
            errors[structure] = self._covariance_error(plan, data.d)[0]
        return "diag" if errors["diag"] <= errors["full"] else "full"

    def _reference(self, plan, d):
        """The reference radius and each class release built at it."""
        searched = "radius" in {r.name for r in plan.releases()}
        radius = reference_radius(self._norm(d), d, searched)
        built = {}
        for release in plan.releases():
            if release.name in self._class_release_names(plan):
                built[release.name] = release.build(radius=radius)
        return radius, built

    @staticmethod
    def _class_release_names(plan):
        return [
            r.name
            for r in plan.releases()
            if r.name not in ("center", "radius", "class_counts")
        ]

    def _moment_name(self, plan):
        return self._class_release_names(plan)[-1]

    def _covariance_error(self, plan, d):
        """Predicted Frobenius error of the plan's within-class covariance on
        the reference rows (its noisiest class for per-class releases), and
        the reference covariance's norm."""
        _, built = self._reference(plan, d)
        name = self._moment_name(plan)
        kind = "diag" if name.endswith("squares") else "full"
        K = check_classes(self.classes, type(self).__name__).size
        share = 1.0
        if name not in ("second_moment", "pooled_squares"):  # its smaller class
            share = 1.0 - REFERENCE_MAJORITY if K == 2 else 1.0 / K
        return covariance_error(built[name], d, self._norm(d), kind, share)

    def _predict_error(self, plan, data, mechanisms):
        """The reference problem's predicted error and the majority class's
        (:func:`~dpgauss.releases._classes.reference_error`), from the plan's
        mechanisms at the reference radius. Public values only."""
        if data.n is None or data.n < 2 or data.d < 1:  # priced, or refused later
            return None
        d = data.d
        K = check_classes(self.classes, type(self).__name__).size
        _, built = self._reference(plan, d)
        spread = math.sqrt(BOX_FILL) * self._norm(d) / math.sqrt(d)
        mean_sd = built["class_sums"].sd(K * d) / spread
        error, norm = self._covariance_error(plan, d)
        return reference_error(mean_sd, error / norm, d, K)

    def _check_utility(self, plan, data):
        """Refuse (or warn, per ``on_useless``) before the spend when the
        reference problem's predicted error is above USEFUL_SHARE of the
        majority class's."""
        prediction = data.prediction
        if prediction is None or prediction.error <= USEFUL_SHARE * prediction.baseline:
            return
        owner = type(self).__name__
        K = check_classes(self.classes, owner).size
        report_useless(
            self,
            f"{owner}: with n={data.n}, d={data.d}, {K} "
            f"classes and {plan.total}, the released class means are predicted "
            "too noisy to beat the majority class (on a reference problem whose "
            f"classes lie {REFERENCE_SEPARATION:g} within-class standard deviations "
            "apart: error "
            f"{prediction.error:.3g} against {prediction.baseline:.3g}). "
            f"{self._useless_help()}",
        )

    def _warn_if_faint_counts(self, classes, counts, count_sd):
        """UtilityWarning when a released class count lies within
        :data:`~dpgauss.releases._class_rule.COUNT_Z` noise sds of zero
        (:func:`~dpgauss.releases._class_rule.faint_classes`; released and
        public values only, so the warning is free)."""
        faint = faint_classes(counts, count_sd)
        if not np.any(faint):
            return
        warnings.warn(
            f"{type(self).__name__}: the released count of class(es) "
            f"{', '.join(map(str, classes[faint]))} lies within {COUNT_Z:g} noise "
            f"sds ({count_sd:.3g} rows) of zero, so their prior and mean are "
            "mostly noise and the classifier may be worse than the majority class. "
            f"{self._useless_help()}",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )

    def _useless_help(self):
        """What would help a fit refused as useless, naming what the user gave
        (bounds or data_norm) and the covariance type only where another
        one is predicted better. Public values only."""
        if self.bounds is not None:
            tighter = "tighter bounds (from domain knowledge, never from the rows)"
        else:
            tighter = "a tighter data_norm (with location at the rows' centre)"
        helps = ["a larger budget", "more rows", "fewer features", tighter]
        if self.covariance_type == "full":
            helps.append("covariance_type='diag' or 'auto'")
        return f"Use {', '.join(helps[:-1])} or {helps[-1]}."
