"""What the private discriminant analyses share: the fit, the clipping ball,
the class releases and the classifier's methods.

The per-class statistics, their sensitivities under the replace-one relation
in which one changed row may also change its class, and their mechanisms are
in :mod:`dpgauss.releases._classes`, with the proofs.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _assert_all_finite,
    check_consistent_length,
    column_or_1d,
)

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import as_pure, kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.discriminant_analysis._choice import PlanChoiceMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._checks import (
    MIN_RADIUS,
    check_radius,
    check_release,
)
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.releases._box import boxed, check_bounds, public_box
from dpgauss.releases._classes import (
    RADIUS_GRID,
    RADIUS_QUANTILE,
    _radius_mechanism,
    check_classes,
    encode_labels,
    project_ball,
)
from dpgauss.releases._cube import cube_shares, cube_square_mechanism
from dpgauss.releases._groups import (
    count_mechanism,
    labelled_square_mechanism,
    labelled_statistics,
    labelled_sum_mechanism,
)
from dpgauss.utils._leak import caller_stacklevel, warn_if_scored_in_search
from dpgauss.utils._sklearn_compat import Interval, StrOptions, _fit_context
from dpgauss.utils._sums import clipped_sums, over_chunks, row_norms
from dpgauss.utils.validation import check_data_norm

#: A released radius within this share of data_norm is reported (the rows'
#: 90% distance is then probably data_norm or more; the top 64 candidates).
AT_BOUND = 1.0 / 64.0
#: A released mean clipped offset of at least this share of the clipping
#: radius is reported (most rows then lie at or beyond the radius).
EDGE_SHARE = 0.9
#: Share of the cost for the center and the radius (each) with adaptive clipping.
ADAPTIVE_SHARE = 0.05

__all__ = ["DiscriminantMixin"]


def _radius_counts(chunk, center, candidates):
    """A chunk's ``#{norm <= c}``: a row adds 0 or 1 to each (sensitivity 1)."""
    norms = np.sort(row_norms(chunk, center))
    return np.searchsorted(norms, candidates, side="right").astype(np.int64)


class DiscriminantMixin(PlanChoiceMixin, ClassifierMixin, PrivateEstimatorMixin):
    """Shared parameters, validation, the count and sum releases, and prediction.

    Subclasses set ``_RELEASES`` and ``_SHARES`` (each covariance type's
    releases and their cost split: ``"full"`` a second-moment release,
    ``"diag"`` released squares), ``_POOLED`` (whether the squares are pooled
    over the classes), implement ``_moment_factories(n, d, K, B, partials, cube)``
    (the factory of their full second-moment release, taking the clipping
    ``radius``), ``_fit_releases`` (on :meth:`_release_classes`) and
    ``_joint_log_likelihood(X)``.
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "classes": ["array-like", None],
        "data_norm": [float, int, None],
        "bounds": ["array-like", None],
        "location": ["array-like", float, int, None],
        "covariance_type": [StrOptions({"auto", "full", "diag"})],
        "clipping": [StrOptions({"adaptive", "fixed"})],
        "priors": ["array-like", None],
        "shrinkage": [
            StrOptions({"auto"}),
            Interval(numbers.Real, 0, 1, closed="both"),
            None,
        ],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Release the private class statistics and build the classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; at least 2, finite. Not modified.
        y : array-like of shape (n_samples,)
            Class labels, each one of ``classes`` (checked before any spend).

        Returns
        -------
        self
            The fitted classifier.
        """
        return self._fit_labelled(X, y)

    # -- fit -----------------------------------------------------------------------
    def _fit_labelled(self, X, y):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        return self._private_fit(X, y)

    def _validate_targets(self, y, X):
        """The labels as integer codes into ``classes``, checked before the spend."""
        owner = type(self).__name__
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        if y.dtype.kind in "fc":
            _assert_all_finite(y, input_name="y")
        classes = check_classes(self.classes, owner)
        codes = encode_labels(y, classes)  # one byte a row up to 127 classes
        unknown = bool(codes.min(initial=0) < 0)
        # Labels are read only against the public classes: any label set in
        # them is accepted alike (a refusal depending on which valid labels
        # occur would tell about a row); only other labels are described.
        if unknown and type_of_target(y) == "continuous":
            raise ValueError(
                f"Unknown label type: continuous. {owner} is a classifier: y must "
                "hold class labels (from classes)."
            )
        if unknown:
            raise ValueError(
                f"{owner}: y contains labels that are not in classes "
                f"({classes.size} public labels); every label must be one of them."
            )
        # The labels are compared with the classes once, here, before the
        # spend: after it only these integer codes are read (a comparison that
        # warns, as numpy's may on mixed types, would be a release).
        return codes

    def _check_params(self):
        owner = type(self).__name__
        classes = check_classes(self.classes, owner)
        if self.bounds is None:
            check_radius(check_data_norm(self.data_norm, owner=owner))
        elif self.data_norm is not None or self.location is not None:
            raise ValueError(
                f"{owner}: give either bounds (a box) or data_norm (a bound on "
                "the l2 norm of x - location), not both; with bounds the rows "
                "are clipped to the box."
            )
        else:
            check_bounds(self.bounds, owner=owner)
        if self.priors is not None:
            priors = np.asarray(self.priors, dtype=np.float64)
            if priors.shape != classes.shape:
                raise ValueError(
                    f"{owner}: priors needs one value per class ({classes.size})."
                )
            if not (np.all(np.isfinite(priors)) and np.all(priors > 0)):
                raise ValueError(f"{owner}: priors must be positive and finite.")

    def _box(self, d):
        """The public box's ``(c, h)``, or None with ``data_norm``."""
        return public_box(self.bounds, d, type(self).__name__)

    def _norm(self, d):
        """The clipping bound B: ``data_norm``, or with a box ``sqrt(d)``
        (rounded up: every row of ``[-1, 1]^d`` lies in the ball)."""
        if self.bounds is None:
            return float(self.data_norm)
        return float(np.nextafter(math.sqrt(d), math.inf))

    # -- what the messages name: the public bound the user gave -------------------
    def _given_text(self):
        """The public bound as the user gave it, for messages."""
        if self.bounds is not None:
            return "bounds (the box)"
        if self.location is None:
            return "data_norm (a bound on the rows' l2 norm around 0)"
        return "data_norm and location"

    def _bound_text(self):
        """What the clipping radius is compared with, for messages."""
        if self.bounds is not None:
            return "the box's half-diagonal (sqrt(d) in units of its half-widths)"
        return "data_norm"

    def _clipped_text(self):
        """Where the rows probably lie when the radius reaches the bound."""
        share = f"{1 - RADIUS_QUANTILE:.0%} of the rows or more"
        if self.bounds is not None:
            return (
                f"probably {share} lie at the box's corners, most of them "
                "beyond bounds and clipped to it"
            )
        return f"probably {share} lie beyond data_norm and are clipped"

    def _wider_text(self):
        """What would help when the rows are clipped, for messages."""
        if self.bounds is not None:
            return "Wider bounds, from domain knowledge (never from the rows),"
        return "A larger data_norm (or rows in other units)"

    def _rows(self, data):
        """The rows the releases read: ``X``, or with a box its rows in box
        units, each from its own row and the public box, mapped as each pass
        reads them (:func:`~dpgauss.releases._box.boxed`: no n-long copy)."""
        box = self._box(data.d)
        return data.X if box is None else boxed(data.X, *box)

    def _location(self, d):
        owner = type(self).__name__
        if self.location is None:
            return np.zeros(d)
        location = np.asarray(self.location, dtype=np.float64)
        if location.ndim == 0:
            location = np.full(d, float(location))
        if location.shape != (d,) or not np.all(np.isfinite(location)):
            raise ValueError(
                f"{owner}: location must be finite with one value per feature ({d})."
            )
        return location

    def _searches(self, total):
        """Whether the plan releases a clipping center and radius:
        ``clipping="adaptive"``, except with a box under pure DP. There the box
        already fixes the frame, and the center's Laplace noise (l1
        sensitivity ``2 d / n`` in box units at 5% of the budget, about ``40
        d / (n epsilon)`` per coordinate) exceeds the box itself at the n
        where pure DP needs the budget most (n = 150, d = 30, epsilon 1:
        a center off by about 4 box half-widths, the class statistics then
        clipped around it). Public values only."""
        if self.clipping != "adaptive":
            return False
        return self.bounds is None or kind_of(total) != "laplace"

    def _release_names(self, structure="full", total=None):
        search = total is None or self._searches(total)
        adaptive = (
            ("center", "radius") if self.clipping == "adaptive" and search else ()
        )
        return (*adaptive, *self._RELEASES[structure])

    def _plan(self, total, data, structure):
        n, d = data.n, data.d
        kind = kind_of(total)
        shares = self._cube_shares(self._SHARES[structure], structure, total)
        if self._searches(total):
            rest = 1.0 - 2.0 * ADAPTIVE_SHARE
            shares = [ADAPTIVE_SHARE, ADAPTIVE_SHARE, *(rest * s for s in shares)]
        costs = split_cost(total, shares)
        releases = []
        # Factories at the fit's own chunk-sum count (the mechanisms the fit
        # builds, to the last bit of their sensitivity; None when pricing,
        # when no factory is called). The class statistics are checked at
        # data_norm and, with adaptive clipping, at the smallest positive
        # candidate of the radius release. The lattice calibration is not
        # monotone in the radius (its grid is a power of two near the noise
        # scale), so a radius in between can still fail: the fit then clips to
        # data_norm (see _clipping_ball), which is checked here.
        data_norm = self._norm(d)
        factories = self._factories(n, d, data.n_partials, cube=self._cube_frame(total))
        radii = [data_norm]
        if self._searches(total):
            radii.append(max(data_norm / (RADIUS_GRID - 1), MIN_RADIUS))
        cases = tuple({"radius": r} for r in radii)
        K = check_classes(self.classes, type(self).__name__).size
        # Entries each class release randomises together (its lattice size).
        sizes = {
            "class_counts": K,
            "class_sums": K * d,
            "class_second_moments": K * d,
        }
        for name, cost in zip(
            self._release_names(structure, total), costs, strict=True
        ):
            if name == "radius":  # exponential mechanism: pure, at the same rho
                cost, kind_here, case = as_pure(cost), "exponential", ({},)
            else:
                kind_here = kind
                case = ({},) if name in ("center", "class_counts") else cases
            releases.append(
                Release(
                    name,
                    cost,
                    kind_here,
                    make=factories[name],
                    size=sizes.get(name, d),
                    cases=case,
                )
            )
        return ReleasePlan(total, releases)

    def _cube_shares(self, shares, structure, total):
        """The plan's shares (:func:`~dpgauss.releases._cube.cube_shares`
        under pure DP with cube rows). Public values only."""
        if kind_of(total) != "laplace" or not self._cube_frame(total):
            return list(shares)
        return cube_shares(shares, structure)

    def _cube_frame(self, total):
        """Whether the class statistics read cube rows about the box's center:
        a public box and no released center (public values only). Their
        squares' releases then take the cube's sensitivities
        (:mod:`dpgauss.releases._cube`)."""
        return self.bounds is not None and not self._searches(total)

    def _factories(self, n, d, partials, *, cube=False):
        """Each release's factory; the class statistics take the clipping
        ``radius`` (data_norm by default). With ``cube`` (rows in ``[-1,
        1]^d`` about the box's center, :meth:`_cube_frame`) the squares'
        releases are charged the cube's sensitivities."""
        K = check_classes(self.classes, type(self).__name__).size
        data_norm = self._norm(d)

        def class_sums(cost, *, radius=data_norm):
            return labelled_sum_mechanism(cost, n, d, K, radius, partials)

        def squares(groups):
            def make(cost, *, radius=data_norm):
                if cube and groups == 1:
                    return cube_square_mechanism(cost, n, d, radius, partials)
                return labelled_square_mechanism(cost, n, d, groups, radius, partials)

            return make

        factories = {
            "center": lambda cost: mean_mechanism(cost, n, d, data_norm, partials),
            "radius": lambda cost: _radius_mechanism(cost, data_norm),
            "class_counts": count_mechanism,
            "class_sums": class_sums,
            "pooled_squares": squares(1),
        }
        factories.update(self._moment_factories(n, d, K, data_norm, partials, cube))
        return factories

    def _calibrates_at(self, plan, radius):
        """Whether every class release calibrates at ``radius`` (public: the
        plan's costs and a released radius)."""
        releases = {r.name: r for r in plan.releases()}
        try:
            for name in self._class_release_names(plan):
                check_release(releases[name], radius=radius)
        except (ValueError, OverflowError, ZeroDivisionError):
            return False
        return True

    def _clipping_ball(self, X, plan, rng, location):
        """The center and radius the class statistics are clipped to.

        ``"fixed"``: the public ``location`` and ``data_norm``. ``"adaptive"``:
        two releases. ``center``: the mean of the rows clipped to ``data_norm``
        around ``location`` (l2 sensitivity ``2B/n``,
        :func:`~dpgauss.mechanisms._releases.mean_mechanism`), projected into
        that ball. ``radius``: the RADIUS_QUANTILE quantile of the rows'
        distances to that center, chosen among the public grid ``B j / 4096``
        by the exponential mechanism (:class:`~dpgauss.mechanisms.QuantileMechanism`:
        replacing a row changes every count by at most 1); a choice of 0 is
        raised to the first positive candidate. Both are released values, so
        what is clipped to them is charged as in the module docstring.

        Should the class-statistic mechanisms not calibrate at the released
        radius (the exact samplers' integer limits, reached only at budgets
        near 1e-16, are not monotone in the radius), ``data_norm`` is used
        instead: it was checked before the spend, and the switch reads
        released and public values only, so the fit completes for every
        noise draw at the same privacy.
        """
        n, d = X.shape
        data_norm = self._norm(d)
        if "center" not in {r.name for r in plan.releases()}:  # fixed frame
            return location, data_norm
        total, _ = clipped_sums(X, location, data_norm, with_outer=False)
        mech = plan.calibrate("center")
        offset = project_ball(mech.randomise(total / n, rng)[None, :], data_norm)[0]
        center = location + offset
        mech = plan.calibrate("radius")
        counts = over_chunks(X, _radius_counts, center, mech.candidates)
        radius = float(mech.release_counts(counts, n, rng))
        if radius >= (1.0 - AT_BOUND) * data_norm:  # a released value: warning is free
            warnings.warn(
                f"{type(self).__name__}: the released {RADIUS_QUANTILE:.0%} radius "
                "of the rows around the released center is within "
                f"{AT_BOUND:.0%} of {self._bound_text()}: "
                f"{self._clipped_text()}, which biases the class means and "
                f"covariance. {self._wider_text()} fits better.",
                UtilityWarning,
                stacklevel=caller_stacklevel(),
            )
        radius = max(radius, data_norm / (RADIUS_GRID - 1), MIN_RADIUS)
        if not self._calibrates_at(plan, radius):
            radius = data_norm
        return center, radius

    def _warn_if_clipped_away(self, mean_offset, radius, noise):
        """UtilityWarning when the released mean clipped offset (the sum of the
        released class sums over n) lies near the clipping sphere: most rows
        then lie at or beyond the radius, all pulled to its edge in one
        direction. ``noise`` (public) is about the norm of the release's
        noise in that sum, subtracted twice so that noise alone rarely warns.
        Reads released and public values only."""
        with np.errstate(all="ignore"):
            size = np.linalg.norm(mean_offset) - 2.0 * noise
            near = size >= EDGE_SHARE * radius
        if near:
            warnings.warn(
                f"{type(self).__name__}: the released mean of the clipped rows "
                f"lies within {1 - EDGE_SHARE:.0%} of the edge of the clipping ball "
                f"(radius {radius:.3g}): most rows are probably at or beyond it, "
                "clipped to its edge, so the class means and covariance say little. "
                f"Check {self._given_text()} against the rows' units.",
                UtilityWarning,
                stacklevel=caller_stacklevel(),
            )

    def _warn_if_priors_only(self, offsets):
        """UtilityWarning when every class mean was set to their average
        (:func:`~dpgauss.releases._class_rule.usable_means`: the released
        means carry no signal above their noise), and the classifier
        predicts by the priors alone, the majority class of the released
        counts unless ``priors`` are given. Reads released values only.
        Returns whether it warned (the fit fell back on the priors)."""
        if offsets.shape[0] < 2 or not np.all(offsets == offsets[0]):
            return False
        warnings.warn(
            f"{type(self).__name__}: every released class mean lies within its "
            "noise of their average, so the classifier predicts by the priors "
            "alone (the majority class of the released counts): the fit is no "
            "better than that simplest private classifier. "
            f"{self._useless_help()}",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )
        return True

    def _class_attributes(self, parts):
        """The fitted attributes both analyses set from :meth:`_release_classes`
        (with a box, the means and the clipping center in data units)."""
        means = parts["center"] + parts["offsets"]
        center = parts["center"]
        box = self._box(means.shape[1])
        if box is not None:  # the public map back (post-processing)
            means = box[0] + box[1] * means
            center = box[0] + box[1] * center
        return {
            "classes_": parts["classes"],
            "clip_center_": center,
            "clip_radius_": parts["radius"],
            "priors_": parts["priors"],
            "class_count_": parts["sizes"],
            "means_": means,
            "covariance_type_": parts["structure"],
        }

    def _release_classes(self, data, plan, rng, outer):
        """The center, radius, count and sum releases; the exact moments."""
        X = self._rows(data)
        n, d = X.shape
        classes = check_classes(self.classes, type(self).__name__)
        K = classes.size
        center, radius = self._clipping_ball(X, plan, rng, self._location(d))
        counts, sums, moments = labelled_statistics(X, data.y, K, center, radius, outer)
        mech = plan.calibrate("class_counts")
        noisy_counts = mech.randomise(counts.astype(np.float64), rng)
        count_sd = mech.sd()
        self._warn_if_faint_counts(classes, noisy_counts, count_sd)
        mech = plan.calibrate("class_sums", radius=radius)
        noisy_sums = mech.randomise((sums / n).ravel(), rng).reshape(K, d)
        # Post-processing. A count below max(1, its noise sd) is taken as that
        # floor (a mean divided by a count near 0 is noise), and each mean
        # offset is projected into the ball every clipped row lies in.
        floor = max(1.0, count_sd)
        sizes = np.clip(noisy_counts, floor, float(n))
        offsets = project_ball(noisy_sums * (n / sizes)[:, None], radius)
        if self.bounds is not None:
            # Every box row lies in [-1, 1]^d, and so does every class mean:
            # the means are projected into the box (post-processing).
            offsets = np.clip(center + offsets, -1.0, 1.0) - center
        # The public noise variance per coordinate of each released mean
        # (the shrinkage and the test of its signal come with the covariance:
        # releases._class_rule.usable_means).
        noise_var = (mech.sd(K * d) * n / sizes) ** 2
        self._warn_if_clipped_away(
            noisy_sums.sum(axis=0), radius, mech.sd() * math.sqrt(K * d)
        )
        if self.priors is None:
            priors = sizes / np.sum(sizes)
        else:
            priors = np.asarray(self.priors, dtype=np.float64)
            priors = priors / np.sum(priors)
        return {
            "classes": classes,
            "center": center,
            "radius": radius,
            "sizes": sizes,
            "offsets": offsets,
            "noise_var": noise_var,
            "priors": priors,
            "moments": moments,
            "structure": "diag" if outer == "pooled_squares" else "full",
        }

    def _box_spectrum(self, values, vectors):
        """With a box, the box-unit covariance ``V diag(values) V^T`` with every
        variance capped at 1, the largest a coordinate of ``[-1, 1]^d`` can have
        (``S C S`` with ``S_jj = min(1, C_jj^(-1/2))``, post-processing); its
        eigenvalues are floored at ``min(values) min(S)^2``, a lower bound of
        the exact ones, so they stay positive for every draw. Without a box,
        the spectrum as given."""
        if self.bounds is None:
            return values, vectors
        cov = (vectors * values) @ vectors.T
        scale = np.minimum(1.0, 1.0 / np.sqrt(np.maximum(np.diag(cov), 1e-300)))
        cov = cov * np.outer(scale, scale)
        out, out_vectors = np.linalg.eigh(0.5 * (cov + cov.T))
        floor = float(np.min(values)) * float(np.min(scale)) ** 2
        return np.maximum(out, floor), out_vectors

    # -- prediction (post-processing) ----------------------------------------------
    def predict_proba(self, X):
        """Posterior probability of each class (free; not private on private X).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``.
        """
        scores = self._joint_log_likelihood(X)
        scores = scores - scores.max(axis=1, keepdims=True)
        proba = np.exp(scores)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        scores = self._joint_log_likelihood(X)
        top = scores.max(axis=1, keepdims=True)
        return scores - top - np.log(np.exp(scores - top).sum(axis=1, keepdims=True))

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on ``X`` and ``y`` (not private: it reads them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            Their labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights.

        Returns
        -------
        float
            Accuracy of :meth:`predict`.

        Warns
        -----
        PrivacyLeakWarning
            When called by scikit-learn's cross-validation or search on a test
            fold (the accuracy is published without noise and without a charge).
        """
        warn_if_scored_in_search(self)
        return super().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
