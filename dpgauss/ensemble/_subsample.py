"""SubsampleAggregate: a private version of any estimator (subsample and aggregate).

The rows are split at random into k groups; a clone of a non-private
scikit-learn estimator is fitted on each group; a statistic (a vector) is read
from each fit; the k statistics (the *candidates*) are aggregated privately.
Replacing one row changes one group, hence at most one candidate, whatever the
estimator does with its group's rows: privacy rests on the group structure
(:mod:`dpgauss.ensemble._group_fits`), and each aggregator below is private
for *any* k candidates (the proofs never look at how a candidate was
computed). The plan charges the aggregator's releases, composed sequentially.

Aggregators
-----------
``"winsorized"`` (default; zCDP, or pure DP for ``epsilon`` alone). A private
coordinate-wise median of the candidates (bound-free binary search over the
float64 order, :class:`~dpgauss.mechanisms._range.QuantileSearch`), a private
quantile of their distances to it (the clipping radius R; or a public
``radius``), then the mean of the candidates clipped to the ball of radius R
around the median plus Gaussian (Laplace) noise. Each step treats the
candidates as k rows of which one changes: the median and the quantile are the
library's audited searches, and the clipped mean has l2 sensitivity 2R/k plus
the summation term (:func:`~dpgauss.mechanisms._releases.mean_mechanism`);
see :mod:`dpgauss.releases._winsorized`.

``"populous"`` ((epsilon, delta)-DP). Ashtiani and Liaw's populous mean
(Algorithm 1) with our tightened constants and exact arithmetic: see
:mod:`dpgauss.ensemble._populous` for the proof and
:mod:`dpgauss.ensemble._populous_aggregate` for its releases. Its neighbour
radius is public (``radius``) or chosen by sparse vector over a geometric
grid. With ``space="psd"`` the candidates are matrices compared by a relative
semimetric (:mod:`dpgauss.ensemble._psd`, :mod:`dpgauss.ensemble._psd_aggregate`).

The per-group fits are not private and are never stored on the fitted
estimator (unlike :class:`sklearn.ensemble.BaggingRegressor`'s
``estimators_``): only released values are.
"""

import gc
import numbers

import numpy as np
from sklearn.base import BaseEstimator, is_classifier
from sklearn.utils import check_consistent_length
from sklearn.utils.metaestimators import available_if

from dpgauss.accounting import ApproxDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.ensemble._group_fits import (
    DEFAULT_BOUND,
    assemble,
    astray_to_center,
    attribute_names,
    bounded_statistic,
    call_released,
    group_candidates,
    probe_shape,
    public_classes,
)
from dpgauss.ensemble._group_plan import choose_groups, useless_reason
from dpgauss.ensemble._isolation import ISOLATIONS, check_isolation
from dpgauss.ensemble._populous_aggregate import (
    populous_entries,
    populous_mean,
)
from dpgauss.ensemble._psd_aggregate import (
    check_psd_radius,
    matrix_size,
    psd_entries,
    psd_populous_mean,
    psd_useless_reason,
)
from dpgauss.mechanisms._checks import (
    MAX_RADIUS,
    MIN_RADIUS,
)
from dpgauss.releases._prediction import report_useless
from dpgauss.releases._winsorized import (
    winsorized_entries,
    winsorized_mean,
)
from dpgauss.utils._sklearn_compat import HasMethods, Interval, StrOptions

__all__ = ["SubsampleAggregate"]


class SubsampleAggregate(PrivateEstimatorMixin, BaseEstimator):
    """A differentially private version of any estimator, by subsample and aggregate.

    Parameters
    ----------
    estimator : estimator object
        A (non-private) scikit-learn estimator; a clone is fitted on each group.
    statistic : str, tuple of str or callable, default="coef\\_"
        What each group's fit contributes: a fitted attribute, several
        (concatenated), or ``statistic(fitted_estimator) -> array``.
    aggregator : {"winsorized", "populous"}, default="winsorized"
        How the k group statistics are aggregated (see Notes).
    space : {"euclidean", "psd"}, default="euclidean"
        Where the statistic lives. "psd": a symmetric positive semi-definite
        matrix (a covariance), compared by Ashtiani and Liaw's relative
        semimetric (no bound on its size is needed); needs
        ``aggregator="populous"`` and a square matrix statistic such as
        ``"covariance_"``.
    n_groups : int or "auto", default="auto"
        The number k of groups. "auto": groups of ``max(25, 5 n_features)``
        rows, or ``max(100, 10 n_features)`` for a classifier (small-sample
        classifier fits are biased); for "winsorized", at least the k_min below
        when n allows; never groups smaller than ``2 (q + 1)`` rows, q =
        min(statistic size, n_features + 1) the parameters a group fit
        determines (smaller groups give undefined or shrunk fits: refused
        before the spend, see ``on_useless``); for "populous", at least the
        fewest groups its test needs (and at most 10,000; with ``space="psd"``,
        groups of at least ``50 q`` rows for a q x q statistic and at most
        5,000 groups). "winsorized" refuses fewer than k_min groups (its searches
        may go astray, the release 1e100 off; see ``on_useless``). k_min depends
        on the budget and the statistic's size p only (1,510 at epsilon 1, delta
        1e-6, p = 5; 334 at rho 0.5); see the user guide.
    radius : float or "auto", default="auto"
        "winsorized": a public clipping radius around the private median, or
        "auto" for a private quantile of the distances. "populous": the public
        neighbour radius tau, or "auto" for sparse vector over a geometric grid
        (for "psd", tau is relative: neighbours satisfy
        ``A / (1 + tau) <= B <= (1 + tau) A``).
    bound : float or None, default=None
        A public bound on the statistic's entries; None: 1e6 for "euclidean",
        1e140 for "psd" (whose aggregate is scale-free). The released aggregate (and
        the released median ``center_``) is projected into ``[-bound, bound]``
        entrywise ("euclidean"), or scaled down to entries within it ("psd":
        a positive multiple stays positive semi-definite). Post-processing of
        the release, so it costs nothing; it keeps every noise draw (a search
        gone astray, a tiny budget) within a public scale. Statistics that
        are legitimately larger need a larger bound (at most 1e140).
    output_shape : tuple of int or None, default=None
        The shape of ``statistic`` (public). None: read from a fit on a public
        probe (standard normal rows; for a classifier, two classes, or
        ``classes``).
    classes : array-like or None, default=None
        The classes of a wrapped classifier, public (the labels a user may
        put on a codebook; never read from ``y``). Given, the assembled
        ``estimator_`` carries them as ``classes_`` so ``predict`` works, the
        probe fits with them, and a group whose fitted classes differ (one
        that lacks a class) is a failed candidate. None: ``estimator_`` of a
        classifier has no ``classes_``.
    rho, epsilon, delta : float, default=None
        The privacy of one fit: ``rho`` (zCDP), ``epsilon`` (pure DP) or
        ``epsilon`` and ``delta``. "populous" is (epsilon, delta)-DP and needs
        ``epsilon`` and ``delta``.
    budget : PrivacyBudget, default=None
        A shared budget charged before the data are read.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the groups' split and the noise. Only an int seed makes a fit
        reproducible (tests and research).
    on_useless : {"raise", "warn"}, default="raise"
        Too few or too small groups: refuse before the spend
        (UselessFitError) or warn and spend. Such a fit's searches usually go
        astray; when its released aggregate or median reaches ``bound`` in
        any entry, ``statistic_`` (and ``center_``) is the centre, zeros (free
        post-processing), never a value at the bound.
    isolation : {None, "none", "process"}, default=None
        None or "none": the groups are fitted in this process. "process": each
        group's fit runs in a process of its own (forked before the group fits;
        spawned where fork does not exist) and only its statistic comes back,
        so state the estimator keeps across fits cannot carry one group's rows
        into another's. For estimators you do not trust; the same release as
        None for one without state; 10-50 ms more per group. See Notes.
    n_jobs : int or None, default=None
        Group fits run at once in joblib's workers (None: in this process;
        -1: every core); the same candidates and release. A worker fits many
        groups in turn, so state is not isolated (``isolation="process"``
        takes precedence). Wrapped ``LinearRegression`` and
        ``EmpiricalCovariance`` groups are computed directly, whatever n_jobs.

    Attributes
    ----------
    statistic_ : ndarray of shape ``output_shape``
        The released aggregate.
    estimator_ : estimator object
        When ``statistic`` names attributes: an unfitted clone of ``estimator``
        with those attributes set to the released values (and
        ``n_features_in_``); ``predict``, ``transform``, ``decision_function``
        and ``predict_proba`` delegate to it. None otherwise.
    n_groups_ : int
        k.
    group_size_ : int
        Rows per group (the ``n - k * group_size_`` left over are not used).
    radius_ : float
        The clipping radius ("winsorized") or neighbour radius ("populous") used.
    center_ : ndarray or None
        The private median ("winsorized").
    sensitivity_ : float
        The l2 sensitivity the last release was calibrated for.
    privacy_spent_ : ZCDP, PureDP or ApproxDP
        What the fit cost.
    n_features_in_ : int
        Number of features.

    See Also
    --------
    dpgauss.PrivateMean : A private mean of the rows themselves.

    Notes
    -----
    **Privacy.** Neighbouring datasets differ by replacing one row; n, d, the
    estimator, k and every parameter are public. The split into groups uses the
    fit's own randomness, independent of the data, so one replaced row changes
    one group's rows and at most one candidate. Every aggregator is private for
    any candidates: a wrapped estimator that is unstable, wrong, slow to
    converge, raises (its candidate is failed: a fixed public placeholder for
    "winsorized", nobody's neighbour for "populous") or even centers its rows on
    their non-private mean cannot break the guarantee; it can only make the
    result useless. Warnings and exceptions of the group fits are swallowed (a
    warning that depends on the data would be a release), and each runs with
    floating-point errors ignored. **What the estimator must do**
    (:ref:`ensemble-estimator-contract`): each group's output must be a
    function of its rows and public values alone. State kept across fits (a
    class attribute, a global, numpy's global random state) breaks the
    guarantee; ``isolation="process"`` removes it. Neither covers timing, nor
    what a fit prints, logs or writes.

    * "winsorized": the median search, the radius search and the clipped mean
      each treat the k candidates as rows of which one changes; shares 0.2,
      0.1 and 0.7 of the budget (0.2 / 0.8 with a public radius). rho-zCDP (or
      epsilon-DP).
    * "populous" (Ashtiani and Liaw 2022, Algorithm 1): (epsilon, delta)-DP.
      The budget is split into sparse vector (0.1 epsilon, pure; only with
      ``radius="auto"``), the truncated-Laplace test (0.2 epsilon, delta / 2)
      and the Gaussian mask (the rest, as the largest rho whose conversion at
      delta / 2 fits). The test fails honestly when the candidates are not
      clustered: :class:`~dpgauss.exceptions.PrivateTestFailedError`, budget
      spent, nothing fitted. The proof (tightened constants: mask sensitivity
      about 33 tau / k against the paper's 400 tau / k) is in
      :mod:`dpgauss.ensemble._populous`.
    * "populous" with ``space="psd"``: the same test and weights with the
      relative semimetric (neighbours when ``Y_i <= (1 + tau) Y_j`` and
      ``Y_j <= (1 + tau) Y_i``), decided by a certified float64 test that
      never calls a non-neighbour a neighbour; the mask is two zCDP lattice
      Gaussian releases, of the trace-normalised weighted mean (Frobenius
      sensitivity ``2 Delta / (1 - Delta)``) and of its log-trace
      (``-ln(1 - Delta)``), ``Delta = ((1 + tau)^2 - 1)(1 + tau)^2 S`` with S
      the Euclidean bound's weight sum (about 19.5 / k at tau = 0.3). Proof in
      :mod:`dpgauss.ensemble._psd`. Candidates must have entries between
      ``2^-500`` (trace) and ``2^500``; others are failed.

    Accuracy needs the estimator to be accurate on n / k rows: the error of the
    aggregate is about the spread of the candidates times ``sqrt(p) / k``
    times the noise multiplier. The winsorized aggregator's constant is several
    times smaller than the populous mean's (2R/k against about 33 tau / k) and
    it usually needs fewer groups (k_min against the populous test's minimum), so it is
    the default; see the user guide for the measured comparison.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from dpgauss.ensemble import SubsampleAggregate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20000, 3))
    >>> y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=20000)
    >>> est = SubsampleAggregate(LinearRegression(), statistic=("coef_", "intercept_"),
    ...                          rho=0.5, random_state=0).fit(X, y)
    >>> bool(np.abs(est.estimator_.coef_ - [1.0, -2.0, 0.5]).max() < 0.2)
    True
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "estimator": [HasMethods(["fit"]), None],
        "statistic": [str, tuple, list, callable],
        "aggregator": [StrOptions({"winsorized", "populous"})],
        "space": [StrOptions({"euclidean", "psd"})],
        "n_groups": [
            Interval(numbers.Integral, 2, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "radius": [
            Interval(numbers.Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "bound": [Interval(numbers.Real, 0, MAX_RADIUS, closed="right"), None],
        "output_shape": [tuple, None],
        "classes": ["array-like", None],
        "isolation": [StrOptions(set(ISOLATIONS)), None],
        "n_jobs": [numbers.Integral, None],
    }

    def __init__(
        self,
        estimator=None,
        *,
        statistic="coef_",
        aggregator="winsorized",
        space="euclidean",
        n_groups="auto",
        radius="auto",
        bound=None,
        output_shape=None,
        classes=None,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
        isolation=None,
        n_jobs=None,
    ):
        self.estimator = estimator
        self.statistic = statistic
        self.aggregator = aggregator
        self.space = space
        self.n_groups = n_groups
        self.radius = radius
        self.bound = bound
        self.output_shape = output_shape
        self.classes = classes
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state
        self.on_useless = on_useless
        self.isolation = isolation
        self.n_jobs = n_jobs

    # -- parameters -------------------------------------------------------------------
    def _check_params(self):
        if self.estimator is None:  # (one without fit fails its constraint)
            raise ValueError("SubsampleAggregate needs an estimator to wrap.")
        if self.space == "psd" and self.aggregator != "populous":
            raise ValueError(
                "space='psd' is implemented for aggregator='populous' only; "
                f"got aggregator={self.aggregator!r}."
            )
        public_classes(self.estimator, self.classes)
        self._isolated()
        if attribute_names(self.statistic) is None and not callable(self.statistic):
            raise TypeError(
                "statistic must be an attribute name, a tuple of names or a "
                f"callable, got {self.statistic!r}."
            )
        if self.radius != "auto" and not (
            MIN_RADIUS <= float(self.radius) <= MAX_RADIUS
        ):
            raise ValueError(
                f"radius={self.radius!r} is outside [{MIN_RADIUS:g}, {MAX_RADIUS:g}]."
            )
        if self.output_shape is not None and not all(
            isinstance(s, numbers.Integral) and s >= 1 for s in self.output_shape
        ):
            raise ValueError(
                f"output_shape must be a tuple of positive ints: {self.output_shape!r}"
            )

    def _isolated(self):  # validates isolation (before the spend)
        return check_isolation(self.isolation, self.estimator, self.statistic)

    def _privacy_total(self):
        if self.aggregator != "populous":
            return super()._privacy_total()
        if self.rho is not None or self.epsilon is None or self.delta is None:
            raise ValueError(
                "SubsampleAggregate(aggregator='populous') is (epsilon, delta)-DP: "
                "give epsilon and delta (and not rho)."
            )
        super()._privacy_total()  # validates the numbers
        return ApproxDP(float(self.epsilon), float(self.delta))

    # -- the plan ---------------------------------------------------------------------
    def _groups(self, data, total):
        """k from public values only (see :mod:`dpgauss.ensemble._group_plan`)."""
        return choose_groups(self, data, total, is_classifier(self.estimator))

    def _check_utility(self, plan, data):
        """Refuse (or warn, per ``on_useless``) when the groups are predicted
        too small or too few (:func:`~dpgauss.ensemble._group_plan.useless_reason`).
        With ``space="psd"``, also when the test is predicted to fail on
        public probe groups
        (:func:`~dpgauss.ensemble._psd_aggregate.psd_useless_reason`).

        Computed from public values only (n, d, k, the plan's costs, the
        statistic's shape), before anything is spent: not a release.
        """
        k = self._groups(data, plan.total)
        reason = useless_reason(self, plan, data, k)
        if reason is None and self.space == "psd":
            reason = psd_useless_reason(self, plan, data, k)
        if reason is not None:
            report_useless(self, reason)

    def _build_plan(self, total, data):
        """The aggregator's releases, each with its factory for the fit's k
        groups and the statistic's size.

        Both are None where unknown (pricing, and the budget check before the
        rows are validated): the costs do not depend on them.
        """
        auto = self.radius == "auto"
        k = None if data.X is None else self._groups(data, total)
        if self.space == "psd":
            return ReleasePlan(
                total, psd_entries(total, auto, self._matrix_size(data), k=k)
            )
        shape = data.public.get("shape")
        p = None if shape is None else int(np.prod(shape, dtype=np.int64))
        if self.aggregator == "populous":
            return ReleasePlan(total, populous_entries(total, auto, k=k, p=p))
        return ReleasePlan(total, winsorized_entries(total, auto, k=k, p=p))

    def _matrix_size(self, data):
        return matrix_size(data.public["shape"])

    def _check_calibration(self, plan, data):
        if self.space == "psd":  # ValueErrors of their own, before the rest
            q = self._matrix_size(data)
            k = self._groups(data, plan.total)
            check_psd_radius(self.radius, k, plan.cost("mask").rho, q)
        return super()._check_calibration(plan, data)

    # -- fit --------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Fit the estimator on each group and release the private aggregate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private rows (finite floats).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Targets, split with the rows and passed to each group's fit.

        Returns
        -------
        self : SubsampleAggregate
            The fitted estimator.

        Raises
        ------
        PrivateTestFailedError
            "populous" only: the test did not pass (the budget is spent).
        """
        if y is not None:
            check_consistent_length(X, y)
        return self._private_fit(X, y)

    def _validate_targets(self, y, X):
        return y  # passed to each group's fit, which validates it

    def _prepare_fit(self, data):
        """The statistic's public shape(s), from a fit on public probe rows.

        Pricing knows no targets: it probes only where the plan needs the shape
        (``space="psd"``: the matrix size sets the budget split).
        """
        data = super()._prepare_fit(data)
        if data.pricing and self.space != "psd":
            return data
        shape, shapes = probe_shape(
            self.estimator,
            self.statistic,
            self.output_shape,
            data.d,
            data.y,
            public_classes(self.estimator, self.classes),
            self._isolated(),
        )
        return data.derive(shape=shape, shapes=shapes)

    def _fit_releases(self, data, plan, rng):
        X = data.X
        d = X.shape[1]
        shape = data.public["shape"]
        k = self._groups(data, plan.total)
        classes = public_classes(self.estimator, self.classes)
        isolated = self._isolated()
        split = (self.estimator, self.statistic, X, data.y, k, rng, shape)
        Y, s = group_candidates(*split, classes, isolated, n_jobs=self.n_jobs)
        # The releases run with float errors ignored (their outputs are clamped
        # where it matters) and without the cycle collector: a group fit's
        # object in a reference cycle could otherwise be finalised here and
        # call np.seterr(all="raise"), making an overflow that depends on the
        # data raise after the spend.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with np.errstate(all="ignore"):
                if self.aggregator == "populous":
                    value, radius, sens, center = self._populous(Y, k, plan, rng, data)
                else:
                    value, radius, sens, center = self._winsorized(Y, k, plan, rng)
        finally:
            if collecting:
                gc.enable()
        bound = self._bound()
        if self.space != "psd" and useless_reason(self, plan, data, k) is not None:
            # Spent on request although predicted useless (public values):
            # a release the searches sent to the bound is the centre instead
            # (post-processing, see astray_to_center).
            value, center = astray_to_center(value, center, bound)
        value = bounded_statistic(value, bound, self.space == "psd")
        if center is not None:
            center = bounded_statistic(center, bound, False)
        return {
            "statistic_": np.asarray(value).reshape(shape),
            "estimator_": assemble(
                self.estimator,
                self.statistic,
                value,
                d,
                shape,
                data.public["shapes"],
                classes,
            ),
            "n_groups_": k,
            "group_size_": s,
            "radius_": float(radius),
            "center_": center,
            "sensitivity_": float(sens),
        }

    def _bound(self):
        """The public bound on the released entries (see ``bound``)."""
        if self.bound is not None:
            return float(self.bound)
        return MAX_RADIUS if self.space == "psd" else DEFAULT_BOUND

    # -- aggregators ------------------------------------------------------------------
    def _winsorized(self, Y, k, plan, rng):
        value, radius, mech, center = winsorized_mean(Y, plan, rng, self.radius)
        return value, radius, mech.sensitivity, center

    def _populous(self, Y, k, plan, rng, data):
        if self.space == "psd":
            q = self._matrix_size(data)
            out = psd_populous_mean(Y, k, plan, rng, q, self.radius)
        else:
            out = populous_mean(Y, k, plan, rng, self.radius)
        value, radius, sens = out
        return value, radius, sens, None

    # -- delegation -------------------------------------------------------------------
    def _has(name):
        def check(self):
            est = getattr(self, "estimator_", None)
            target = est if est is not None else self.estimator
            return hasattr(target, name)

        return check

    @available_if(_has("predict"))
    def predict(self, X):
        """Predict with ``estimator_`` (the released attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray
            ``estimator_.predict(X)``.
        """
        return call_released(self, "predict", X)

    @available_if(_has("transform"))
    def transform(self, X):
        """Transform with ``estimator_`` (the released attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray
            ``estimator_.transform(X)``.
        """
        return call_released(self, "transform", X)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """Decision function of ``estimator_`` (the released attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray
            ``estimator_.decision_function(X)``.
        """
        return call_released(self, "decision_function", X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
