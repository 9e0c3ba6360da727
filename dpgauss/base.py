"""Base classes shared by every dpgauss estimator family.

* :class:`PrivateEstimatorMixin`: the privacy parameters (``rho``, ``epsilon``,
  ``delta``, ``budget``, ``random_state``), their validation, and the one fit
  template every private estimator runs (validate everything, build the release
  fit data, build the plan from public values, check every planned mechanism
  and predict the error, charge the budget, derive the fit's own noise stream,
  release, check the plan was followed, set the fitted attributes together).
* :class:`FitData`: the public values and rows one fit carries through it.

The fitted Gaussian model the covariance family and the Gaussian estimator share
(:class:`~dpgauss.density.GaussianDensityMixin`) lives in
:mod:`dpgauss.density`, beside this module.

A family imports this module and the layers below it (:mod:`dpgauss.releases`,
:mod:`dpgauss.mechanisms`, :mod:`dpgauss.accounting`, :mod:`dpgauss.utils`) and
other families' public estimators only; ``tests/test_layers.py`` enforces it.
"""

import numbers
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
from sklearn.utils.validation import check_array, validate_data

from dpgauss.accounting import PrivacyBudget, resolve_privacy
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._checks import check_plan
from dpgauss.releases._box import public_box
from dpgauss.releases._prediction import report_far
from dpgauss.utils import _sklearn_compat as compat
from dpgauss.utils._leak import (
    warn_if_fitted_after_leaky_step,
    warn_if_split_by_labels,
)
from dpgauss.utils._pipeline_budget import check_pipeline_budget
from dpgauss.utils._random import (
    check_random_state_param,
    fit_generator,
)
from dpgauss.utils._sums import all_finite, file_backed, is_dask_array, n_partial_sums
from dpgauss.utils.validation import check_known_shape, validate_dask_rows

__all__ = ["FitData", "PrivateEstimatorMixin"]

_RANDOM_STATE = [
    compat.Interval(numbers.Integral, 0, None, closed="left"),
    np.random.RandomState,
    np.random.Generator,
    None,
]


@dataclass(frozen=True)
class FitData:
    """What one fit, or one pricing, knows: built once, after validation.

    Every hook of the fit template receives it (build the plan, check it,
    predict the error, release), so no per-fit state is parked on the
    estimator. Everything but ``X`` and ``y`` is public: n and d (the
    neighbouring relation replaces a row, so n is public), the public rows and
    their count, the number of chunk sums a pass over ``X`` adds (from its
    shape and chunks only) and ``public``, the values an estimator derives from
    them before the spend (:meth:`PrivateEstimatorMixin._prepare_fit`).

    Parameters
    ----------
    n : int or None
        Rows of ``X``; None when a fit is priced without it.
    d : int
        Features.
    X : array-like, default=None
        The validated private rows (None when pricing).
    y : array-like, default=None
        The validated targets, if the estimator takes them.
    X_public : ndarray, default=None
        The validated public rows.
    n_public : int, default=0
        Their count (given alone when a fit is priced without them).
    n_partials : int or None, default=None
        How many chunk sums a pass over ``X`` adds
        (:func:`~dpgauss.utils._sums.n_partial_sums`); None when pricing.
    public : mapping, default={}
        Public values derived from the above before the spend.
    pricing : bool, default=False
        Whether the plan is being priced (:meth:`PrivateEstimatorMixin.planned_costs`)
        rather than fitted: the public rows may then be known by their count only.
    prediction : Prediction or None, default=None
        The fit's predicted error, set once the plan is checked
        (:meth:`PrivateEstimatorMixin._predict_error`).

    Examples
    --------
    >>> from dpgauss.base import FitData
    >>> data = FitData(n=100, d=3).derive(classes=(0, 1))
    >>> data.n, data.d, data.public["classes"]
    (100, 3, (0, 1))
    """

    n: object
    d: int
    X: object = field(default=None, repr=False)
    y: object = field(default=None, repr=False)
    X_public: object = field(default=None, repr=False)
    n_public: int = 0
    n_partials: object = None
    public: Mapping = field(default_factory=lambda: MappingProxyType({}))
    pricing: bool = False
    prediction: object = None

    def derive(self, **values):
        """A copy with more public values (read-only, like the rest).

        Parameters
        ----------
        **values
            Public values derived before the spend, by name.

        Returns
        -------
        FitData
            ``self`` with ``public`` updated by ``values``.
        """
        return replace(self, public=MappingProxyType({**self.public, **values}))


#: The estimators whose every pass over a memory-mapped file converts each
#: chunk it reads to float64 before any arithmetic (clipped sums, norms, box
#: offsets, pairs, framed rows), so that a float16 / float32 / integer file is
#: not converted whole before the fit: their releases on such a file equal
#: those on its float64 copy bit for bit (tests/test_base.py). Other
#: estimators (and subclasses, by name) convert the whole file as before.
CHUNKED_DTYPES = frozenset(
    {
        "PrivateCovariance",
        "TailSensitiveCovariance",
        "PrivateGaussianEstimator",
        "PrivateMean",
        "PrivatePCA",
        "PrivateStandardScaler",
        "PrivateLinearDiscriminantAnalysis",
        "PrivateQuadraticDiscriminantAnalysis",
    }
)


def _converted_in_chunks(estimator, dtype):
    """Whether ``estimator`` reads a file of ``dtype`` chunk by chunk, each
    converted to float64 exactly as a whole conversion would (integers and
    floats of at most 64 bits; their finiteness is the same after it)."""
    kind_ok = np.issubdtype(dtype, np.integer) or (
        np.issubdtype(dtype, np.floating) and dtype.itemsize <= 8
    )
    return kind_ok and type(estimator).__name__ in CHUNKED_DTYPES


class PrivateEstimatorMixin:
    """Privacy parameters, validation, charging and per-fit noise for estimators.

    The fit template (:meth:`_private_fit`) runs, in this order: validate the
    parameters and the rows, build the fit's :class:`FitData`, build the
    release plan from public values (n included), build and check every
    planned mechanism at its worst public case and predict the fit's error,
    charge the budget, derive the fit's own noise stream, release, check that
    the plan was followed, and set the fitted attributes together.

    Subclasses implement:

    * ``_build_plan(total, data)``: the release plan
      (:class:`~dpgauss.accounting._plan.ReleasePlan`) of one fit, from public
      values only (``data`` is a :class:`FitData`; its rows are not read);
      each planned release carries the factory of its mechanism;
    * ``_fit_releases(data, plan, rng)``: the data pass and the releases;
      returns the fitted attributes as a dict (they are set together at the
      end);

    and may implement ``_prepare_fit(data)`` (public values derived once),
    ``_validate_targets(y, X)``, ``_predict_error(plan, data, mechanisms)``
    and ``_check_utility(plan, data)``.

    Examples
    --------
    >>> from dpgauss import PrivateCovariance
    >>> from dpgauss.base import PrivateEstimatorMixin
    >>> issubclass(PrivateCovariance, PrivateEstimatorMixin)
    True
    >>> PrivateCovariance(method="gauss", rho=1.0, data_norm=1.0).planned_costs(5)
    [ZCDP(rho=0.1), ZCDP(rho=0.9)]
    """

    _parameter_constraints: dict = {
        "rho": [compat.Interval(numbers.Real, 0, None, closed="neither"), None],
        "epsilon": [compat.Interval(numbers.Real, 0, None, closed="neither"), None],
        "delta": [compat.Interval(numbers.Real, 0, 1, closed="neither"), None],
        "budget": [PrivacyBudget, None],
        "random_state": _RANDOM_STATE,
        "on_useless": [compat.StrOptions({"raise", "warn"})],
    }

    def __sklearn_clone__(self):
        """scikit-learn's clone, after a check that the clone is not made for
        a cross-validation whose folds read the labels or groups
        (:func:`~dpgauss.utils._leak.warn_if_split_by_labels`)."""
        warn_if_split_by_labels(self)
        return super().__sklearn_clone__()

    # -- price ------------------------------------------------------------------------
    def planned_costs(self, n_features, n_public=0, X_public=None, *, n_samples=None):
        """Return the costs of the releases one fit makes, before any fit.

        A fit charges exactly these costs to ``budget`` (their composition is
        ``privacy_spent_``). They depend only on public values: the parameters,
        the number of rows and of features, and the public rows, so a whole
        cross-validation or search can be priced before it runs (see
        :mod:`dpgauss.model_selection`, which passes each fold's size).

        Parameters
        ----------
        n_features : int
            Number of columns of the data the fit would see.
        n_public : int, default=0
            Rows of ``X_public`` the fit would be given (for the estimators
            that accept public data: it can replace a private search, so the
            releases differ; their total in the estimator's own currency does
            not, but composed in another one, as pure releases are in a zCDP
            budget, a plan with fewer releases costs more; where the plan
            depends on the rows themselves, the dearest one is priced).
        X_public : array-like of shape (n_public, n_features), default=None
            The public rows themselves, for an estimator whose releases depend
            on them (not only on their number); validated as ``fit`` does.
        n_samples : int, default=None
            Rows the fit would see (a fold's training size). Without it, an
            estimator whose plan depends on n prices the plan it makes for an
            unknown n (the default shares, say), whose total in its own
            currency is the fit's; give it for the fit's exact costs.

        Returns
        -------
        list of ZCDP, PureDP or ApproxDP
            One cost per release, in the order the fit makes them.
        """
        return self._pricing_plan(
            n_features, n_public, X_public, n_samples=n_samples
        ).costs()

    def _pricing_plan(
        self, n_features, n_public=0, X_public=None, *, n_samples=None, total=None
    ):
        """The release plan :meth:`planned_costs` prices (``total``: the
        estimator's own by default)."""
        self._validate_all_params()
        d = int(n_features)
        public = None
        if X_public is not None:
            public = self._validate_public(X_public, None)
            self._check_public_width(public, d)
            n_public = public.shape[0]
        n = None if n_samples is None else int(n_samples)
        data = FitData(n=n, d=d, X_public=public, n_public=int(n_public), pricing=True)
        data = self._prepare_fit(data)
        total = self._privacy_total() if total is None else total
        return self._build_plan(total, data)

    def _validate_public(self, X_public, X):
        """A float64 copy of ``X_public`` (finite, 2-D, at least one row, as many
        columns as ``X`` when its shape is known), or None; before any spend."""
        if X_public is None:
            return None
        with np.errstate(all="ignore"):
            public = check_array(
                X_public, dtype=np.float64, copy=True, input_name="X_public"
            )
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2:
            self._check_public_width(public, shape[1])
        return public

    def _check_public_width(self, public, d):
        """Refuse public rows whose width is not X's (None passes)."""
        if public is not None and public.shape[1] != d:
            raise ValueError(
                f"{type(self).__name__}: X_public has {public.shape[1]} features "
                f"but X has {d}."
            )

    # -- validation -------------------------------------------------------------------
    def _validate_all_params(self):
        """Check every parameter, whatever scikit-learn's configuration says.

        ``sklearn.set_config(skip_parameter_validation=True)`` switches off
        ``_fit_context``'s validation; privacy must not depend on it, so the
        constraints are checked here unconditionally, then the semantic checks
        of :meth:`_check_params`.
        """
        compat.validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )
        check_random_state_param(self.random_state, type(self).__name__)
        self._check_params()

    def _check_params(self):
        """Checks beyond the constraints (combinations, values); none by default."""

    def _validate_targets(self, y, X):
        """The validated targets of a fit (None by default: ``y`` is ignored)."""
        return None

    def _prepare_fit(self, data):
        """Public values derived once from ``data`` before the spend; none here.

        Called by the fit and by :meth:`planned_costs` (then without rows).
        """
        return data

    def _check_calibration(self, plan, data):
        """Build and check every planned mechanism (before the spend).

        Returns
        -------
        dict of str to object
            Each release's mechanism at its worst public case.
        """
        fit_case = {} if data.n_partials is None else {"n_partials": data.n_partials}
        return check_plan(plan, type(self).__name__, fit_case)

    def _predict_error(self, plan, data, mechanisms):
        """The fit's :class:`~dpgauss.releases._prediction.Prediction` (None:
        no prediction), from public values and the noise of ``mechanisms``,
        each release's at its worst public case (:meth:`_check_calibration`)."""
        return None

    def _check_utility(self, plan, data):
        """Warn, from public values only, when the fit is predicted useless
        (``data.prediction`` holds :meth:`_predict_error`'s result); no-op."""

    def _privacy_total(self):
        return resolve_privacy(
            self.rho, self.epsilon, self.delta, owner=type(self).__name__
        )

    def _validate_rows(self, X):
        """Validate ``X`` (numpy, memory-mapped or Dask) and set ``n_features_in_``.

        No floating-point warning escapes (one that depends on the values of the
        rows, such as an overflow while checking finiteness, would be a release).
        A Dask array is checked lazily, without loading it into memory (its
        blocks are cast to float64 in the workers). A memory-mapped file of
        float64, or of float16 / float32 / integers for the estimators of
        :data:`CHUNKED_DTYPES`, is checked chunk by chunk and kept as it is:
        their passes convert each chunk to float64 as they read it (exactly
        the values a whole conversion gives, so the same release; tested), in
        memory independent of n. Anything else is converted whole here.
        Nothing is modified, and every check is made before any spend.
        """
        with np.errstate(all="ignore"):
            if file_backed(X) and (
                X.dtype == np.float64 or _converted_in_chunks(self, X.dtype)
            ):
                validate_data(self, X, ensure_min_samples=2, ensure_all_finite=False)
                if not all_finite(X):
                    raise ValueError("Input X contains NaN or infinity.")
                return X
            if not is_dask_array(X):
                return validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
            X = validate_dask_rows(X, type(self).__name__)
            self.n_features_in_ = int(X.shape[1])
            return X

    # -- the fit ----------------------------------------------------------------
    def _private_fit(self, X, y=None, X_public=None):
        """Run one private fit; see the class docstring for the steps.

        ``y`` and ``X_public`` (public rows, free to use) live in the fit's
        :class:`FitData` only, so ``clone`` and pickling never carry them.
        """
        # In a Pipeline, its first private step prices the whole fit first.
        check_pipeline_budget(self)
        self._clear_fitted()
        warn_if_fitted_after_leaky_step(self)
        try:
            self._validate_all_params()
            total = self._privacy_total()
            check_known_shape(X, type(self).__name__)  # the plans read n
            public = self._validate_public(X_public, X)
            early = self._refuse_early(total, X, y, public)
            X = self._validate_rows(X)
            n, d = X.shape
            self._check_public_width(public, d)  # X without a shape before
            # A box of another width than X's, refused before the spend.
            public_box(getattr(self, "bounds", None), d, type(self).__name__)
            data = FitData(
                n=int(n),
                d=int(d),
                X=X,
                y=self._validate_targets(y, X),
                X_public=public,
                n_public=0 if public is None else public.shape[0],
                n_partials=n_partial_sums(X),
            )
            if early is None:
                data = self._prepare_fit(data)
            else:  # derived already, from the same public values
                data = replace(data, public=early.public)
            plan, data = self._pre_spend(total, data)
            events = []
            if self.budget is not None:
                events = self.budget.spend_many(
                    plan.charges(), estimator=type(self).__name__
                )
            rng = fit_generator(self.random_state, [e.id for e in events])
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fitted = self._fit_releases(data, plan, rng)
            plan.finish()
        except BaseException:
            self._clear_fitted()
            raise
        fitted["privacy_spent_"] = plan.spent()
        for name, value in fitted.items():
            setattr(self, name, value)
        return self

    def _pre_spend(self, total, data):
        """Every step between the prepared data and the charge, on public values.

        Builds the plan, checks each planned mechanism at its worst public case,
        predicts the fit's error and checks its utility (which refuses, per
        ``on_useless``, a fit predicted to lose to its baseline). Reads n, d,
        the parameters and public rows in ``data``, never its private rows, so
        it can also answer before a fit whether one would be refused
        (:meth:`_predicted_refusal`).

        Returns
        -------
        plan : ReleasePlan
        data : FitData
            ``data`` with its ``prediction``.
        """
        plan = self._build_plan(total, data)
        mechanisms = self._check_calibration(plan, data)
        prediction = self._predict_error(plan, data, mechanisms)
        data = replace(data, prediction=prediction)
        self._check_utility(plan, data)
        report_far(self, prediction, data.n, data.d, plan.total)
        return plan, data

    def _predicted_refusal(self, n, d, X_public=None):
        """Why a fit on n rows of d features would be refused before its spend,
        or None: :meth:`_pre_spend` on public values only (no row is read), for
        an estimator deciding whether to fit this one (a mixture's component).
        A plan that cannot run counts as a refusal."""
        data = FitData(
            n=int(n),
            d=int(d),
            X_public=X_public,
            n_public=0 if X_public is None else X_public.shape[0],
        )
        try:
            self._validate_all_params()
            with warnings.catch_warnings():  # a question, not a fit: no warnings
                warnings.simplefilter("ignore", UtilityWarning)
                self._pre_spend(self._privacy_total(), self._prepare_fit(data))
        except ValueError as error:  # UselessFitError, or a plan that cannot run
            return str(error).split(" Nothing was spent")[0]
        return None

    def _refuse_early(self, total, X, y, public):
        """Refuse a budget that cannot pay, before reading the data.

        The plan needs only public values: n and d, read from ``X.shape``
        (metadata) when there is one, and the public rows; inputs without a
        shape (lists) are checked by the atomic spend itself. ``y`` is passed
        as given, for an estimator whose plan depends on the shape of what it
        fits (see ``SubsampleAggregate``).

        Returns
        -------
        FitData or None
            The prepared public fit data the check priced (the fit reuses its
            derived values rather than deriving them twice), or None when
            nothing was checked.
        """
        shape = getattr(X, "shape", None)
        if self.budget is None or shape is None or len(shape) != 2:
            return None
        if shape[0] < 2 or shape[1] < 1:  # refused by the validation next
            return None
        data = FitData(
            n=int(shape[0]),
            d=int(shape[1]),
            y=y,
            X_public=public,
            n_public=0 if public is None else public.shape[0],
        )
        data = self._prepare_fit(data)
        # The tally this handle last saw (a lower bound: no transaction); the
        # spend checks the ledger itself inside its write transaction.
        self.budget.check(self._build_plan(total, data).costs(), fresh=False)
        return data

    def _clear_fitted(self):
        """Remove every fitted attribute (a failed fit leaves it unfitted)."""
        for name in [k for k in vars(self) if k.endswith("_") and not k[:2] == "__"]:
            delattr(self, name)
        for name in ("_model",):
            self.__dict__.pop(name, None)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "privacy_spent_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
