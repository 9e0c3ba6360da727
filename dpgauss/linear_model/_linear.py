"""PrivateLinearRegression: least squares from a private second moment (AdaSSP).

The release is :mod:`dpgauss.releases._linear`.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from dpgauss.accounting._plan import ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._box import check_bounds
from dpgauss.releases._linear import (
    linear_entries,
    linear_prediction,
    regression_boxes,
    release_linear,
)
from dpgauss.releases._prediction import report_useless
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._leak import caller_stacklevel, warn_if_scored_in_search
from dpgauss.utils._sklearn_compat import Interval, _fit_context

__all__ = ["PrivateLinearRegression"]


@fill_doc
class PrivateLinearRegression(RegressorMixin, PrivateEstimatorMixin, BaseEstimator):
    """Differentially private least squares within public boxes (AdaSSP).

    The private counterpart of :class:`sklearn.linear_model.LinearRegression`:
    rows and targets are mapped into public boxes, the second moment of the
    rows ``(x, 1, y)`` is released with calibrated noise, then that of the
    rows ``(x, 1, r)`` for the residuals r of a first fit, in a range a few of
    their sds wide, and the coefficients are solved from both with a ridge
    chosen privately from a released lower bound on the smallest eigenvalue
    of the features' Gram matrix (Wang 2018, AdaSSP).

    Parameters
    ----------
    bounds : pair of float or array-like, default=None
        Public bounds ``(lower, upper)`` on the features (scalars or one value
        per feature). Required. Rows are clipped to this box.
    target_bounds : pair of float, default=None
        Public bounds ``(lower, upper)`` on the target. Required. Targets are
        clipped to them.
    fit_intercept : bool, default=True
        Fit an intercept. Without one, both boxes are widened to be symmetric
        about 0, so the model goes through the origin.
    alpha : float, default=0.0
        Ridge penalty ``alpha ||coef_||^2``, as scikit-learn's ``Ridge`` (the
        intercept is not penalised); applied to the released statistics
        (post-processing, free), on top of the ridge the fit chooses
        privately.
    {privacy_parameters}
    {random_state}
    {on_useless}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The released coefficients (post-processing of the releases); all 0,
        with a :class:`~dpgauss.exceptions.UtilityWarning`, when the released
        moments say the slopes do not beat the zero-coefficient model (the
        fit is then the intercept alone).
    intercept_ : float
        The intercept (0.0 without ``fit_intercept``).
    ridge_ : float
        The ridge added to the released Gram matrix, in box units.
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.linear_model.LinearRegression : The non-private model.
    SubsampleAggregate : Private versions of other estimators.

    Notes
    -----
    **Privacy.** rho-zCDP (or pure epsilon-DP with ``epsilon`` alone; or
    (epsilon, delta)-DP through the largest rho that implies it) with respect
    to replacing one row ``(x, y)``. Public: both boxes, n, d and every
    parameter. Four releases, planned and charged before any row is read,
    on rows mapped into the boxes (z and t, each entry in [-1, 1]):

    * the smallest eigenvalue of the features' Gram matrix (sensitivity
      ``(d + 1) / n`` by Weyl's inequality), a tenth of the cost;
    * with an intercept, the mean of t (sensitivity ``2 / n``), a tenth;
    * the second moment of the rows ``(z, 1, t)``, 0.3 of the rest;
    * in a second pass, the second moment of the rows ``(z, 1, r)``, ``r``
      the residual of a fit from the releases above, scaled to a released
      range and clipped to [-1, 1] (a function of the row and released
      values, so the same sensitivity), the remainder.

    Each second moment has Gaussian noise at Frobenius sensitivity
    ``sqrt(2) (d + 2) / n`` under zCDP; under pure DP the cube's K-norm
    noise on its upper triangle (each entry, the squares doubled, moves by
    at most ``2 / n``) or the Laplace release of the box's l1 bound,
    whichever is less noisy. The costs compose to the total (adaptive
    composition); the proofs, with the floating-point terms, are in
    :mod:`dpgauss.releases._linear_noise`. The coefficients, ``predict``
    and ``score`` are post-processing (``score`` on private rows is not
    private).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivateLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1.0, 1.0, size=(100_000, 2))
    >>> y = X @ [1.5, -2.0] + 0.5 + rng.normal(0.0, 0.1, 100_000)
    >>> model = PrivateLinearRegression(
    ...     bounds=(-1.0, 1.0), target_bounds=(-5.0, 5.0), rho=0.5, random_state=0
    ... ).fit(X, y)
    >>> np.round(model.coef_, 1), round(model.intercept_, 1)
    (array([ 1.5, -2. ]), 0.5)
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "bounds": ["array-like", None],
        "target_bounds": ["array-like", None],
        "fit_intercept": ["boolean"],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        bounds=None,
        target_bounds=None,
        *,
        fit_intercept=True,
        alpha=0.0,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
    ):
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.fit_intercept = fit_intercept
        self.alpha = alpha
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Release the model, charging ``budget`` first.

        Parameters
        ----------
        X : array-like, numpy.memmap or dask array of shape (n_samples, n_features)
            Training rows; at least 2, finite. Not modified.
        y : array-like of shape (n_samples,)
            Targets, finite. Not modified.

        Returns
        -------
        self : PrivateLinearRegression
            The fitted model.
        """
        return self._private_fit(X, y)

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_`` (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predictions.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_

    def score(self, X, y, sample_weight=None):
        """R^2 of :meth:`predict` on ``X`` and ``y`` (not private: it reads them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights.

        Returns
        -------
        float
            The coefficient of determination.

        Warns
        -----
        PrivacyLeakWarning
            When called by scikit-learn's cross-validation or search on a test
            fold (the score is published without noise and without a charge).
        """
        warn_if_scored_in_search(self)
        return super().score(X, y, sample_weight=sample_weight)

    # -- the template's hooks -----------------------------------------------------
    def _check_params(self):
        owner = type(self).__name__
        missing = [
            name
            for name, value in (
                ("bounds (on the features)", self.bounds),
                ("target_bounds (on y)", self.target_bounds),
            )
            if value is None
        ]
        if missing:
            raise ValueError(
                f"{owner}: {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} missing. Both boxes are "
                "required, from public knowledge (a codebook, a valid range), "
                "never from the private rows."
            )
        check_bounds(self.bounds, owner=owner)
        check_bounds(self.target_bounds, 1, owner, "target_bounds")

    def _validate_targets(self, y, X):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target "
                "y is None."
            )
        with np.errstate(all="ignore"):
            y = column_or_1d(y, dtype=np.float64, warn=True)
            if y.shape[0] != X.shape[0]:
                raise ValueError(
                    f"X has {X.shape[0]} rows but y has {y.shape[0]} targets."
                )
            if not np.all(np.isfinite(y)):
                raise ValueError("Input y contains NaN or infinity.")
        return y

    def _build_plan(self, total, data):
        n = data.n if data.n is not None else 2
        return ReleasePlan(total, linear_entries(total, n, data.d, self.fit_intercept))

    def _predict_error(self, plan, data, mechanisms):
        """The predicted error against the zero-coefficient model's, on
        reference rows (:func:`~dpgauss.releases._linear.linear_prediction`;
        public values only)."""
        if data.n is None or "refine" not in mechanisms:
            return None
        return linear_prediction(mechanisms, data.d, self.fit_intercept)

    def _check_utility(self, plan, data):
        """Refuse (or warn, per ``on_useless``) before the spend when the fit
        is predicted no better than the zero-coefficient model."""
        prediction = data.prediction
        if prediction is None or not prediction.loses:
            return
        report_useless(
            self,
            f"{type(self).__name__}: with n={data.n}, d={data.d} and "
            f"{plan.total}, the release's noise is predicted to make its "
            f"predictions no better than the zero-coefficient model's (mean "
            f"squared error {prediction.error:.3g} against {prediction.baseline:.3g} "
            "in box units, for features filling a tenth of their box that "
            "explain half of y's variance). Use more rows, a larger budget, "
            "fewer features or tighter bounds.",
        )

    def _fit_releases(self, data, plan, rng):
        d = data.d
        boxes = regression_boxes(
            self.bounds,
            self.target_bounds,
            d,
            self.fit_intercept,
            type(self).__name__,
        )
        released = release_linear(
            data.X, data.y, boxes, self.fit_intercept, plan, rng, float(self.alpha)
        )
        if not released.slopes_kept:  # a released value: the warning is free
            warnings.warn(
                f"{type(self).__name__}: the released moments say the slopes, "
                "within their noise, do not beat the zero-coefficient model, so "
                "the fit is the intercept alone (coef_ is 0). Use more rows, a "
                "larger budget, fewer features or tighter bounds.",
                UtilityWarning,
                stacklevel=caller_stacklevel(),
            )
        return {
            "coef_": released.coef,
            "intercept_": float(released.intercept),
            "ridge_": released.ridge,
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
