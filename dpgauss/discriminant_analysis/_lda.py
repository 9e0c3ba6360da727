"""PrivateLinearDiscriminantAnalysis: class priors, means and a pooled covariance.

The releases and their sensitivities are in
:mod:`dpgauss.discriminant_analysis._base` (``class_counts``, ``class_sums``)
and :func:`~dpgauss.mechanisms._releases.second_moment_mechanism` (the pooled
``second_moment``). The classifier is post-processing:

1. the released second moment is denoised and projected onto {PSD, trace <=
   B^2} (:func:`~dpgauss.releases._covariance.gauss_spectrum`, the covariance
   estimators' GaussCov spectrum);
2. the between-class part ``sum_k w_k m_k m_k^T`` (released weights and mean
   offsets) is subtracted, giving the pooled within-class covariance;
3. its eigenvalues are floored at a public level and shrunk towards their mean
   (``shrinkage``), so the precision exists for every noise draw;
4. the released means are shrunk, or replaced by their average where they
   show no signal above their noise (the priors' rule), and each class's
   score gets the noise correction ``s_k^2 tr(Sigma^-1) / 2``
   (:mod:`dpgauss.releases._class_rule`);
5. ``coef_k = Sigma^-1 m_k``, ``intercept_k = -m_k^T Sigma^-1 m_k / 2 + log
   pi_k + s_k^2 tr(Sigma^-1) / 2 - coef_k . c``, scikit-learn's
   ``LinearDiscriminantAnalysis`` decision rule with the correction.
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.discriminant_analysis._base import DiscriminantMixin
from dpgauss.mechanisms._releases import second_moment_mechanism
from dpgauss.releases._class_rule import noise_corrections, usable_means
from dpgauss.releases._classes import class_covariance, class_variances
from dpgauss.releases._cube import cube_moment_mechanism
from dpgauss.utils._docstring import fill_doc

__all__ = ["PrivateLinearDiscriminantAnalysis"]


@fill_doc
class PrivateLinearDiscriminantAnalysis(
    LinearClassifierMixin, DiscriminantMixin, BaseEstimator
):
    """Linear discriminant analysis with private priors, means and covariance.

    The private counterpart of
    :class:`sklearn.discriminant_analysis.LinearDiscriminantAnalysis`: each
    class is modelled as a Gaussian with its own mean and a covariance shared
    by all classes, all three released with noise from rows clipped to a
    public ball, and a row is assigned to the class of largest posterior.

    Parameters
    ----------
    classes : array-like of shape (n_classes,), default=None
        The public class labels (at least two). Required: reading them off
        ``y`` would publish which labels occur. ``y`` may hold only these
        labels.
    data_norm : float, default=None
        Public bound on the l2 norm of ``x - location``; rows are clipped to
        it. Give it or ``bounds``, from domain knowledge (for pixels in [0, 1],
        ``sqrt(d)``; for standardised features, a few times ``sqrt(d)``).
    {discriminant_box}
    location : array-like of shape (n_features,) or float, default=None
        Public center of the clipping ball (None: the origin).
    clipping : {"adaptive", "fixed"}, default="adaptive"
        "fixed" clips the rows to ``data_norm`` around ``location``.
        "adaptive" spends 5% of the cost on a private center (the mean of the
        rows clipped to ``data_norm``) and 5% on a private radius (the 90%
        quantile of the distances to it, at most ``data_norm``), and clips the
        class statistics to that smaller ball: less noise when ``data_norm``
        is loose, at the price of clipping the farthest tenth of the rows.
        With ``bounds`` under pure DP the fit clips to the box as "fixed"
        does (the box already fixes the frame).
    priors : array-like of shape (n_classes,), default=None
        Public class priors (normalised to sum to 1); None releases them from
        the private class counts.
    shrinkage : "auto", float in [0, 1] or None, default="auto"
        Shrinks the released within-class covariance towards a multiple of the
        identity (post-processing, free): ``(1 - a) Sigma + a mean(eig) I``.
        "auto" sets ``a`` from the release's public noise level (see
        :func:`~dpgauss.releases._classes.shrink_spectrum`); None
        only floors the eigenvalues at the noise level.
    {privacy_parameters}
    {random_state}
    {on_useless}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public classes, sorted.
    priors_ : ndarray of shape (n_classes,)
        Class priors (released or the public ones).
    clip_center_ : ndarray of shape (n_features,)
        The center the class statistics were clipped around: ``location``, or
        with ``clipping="adaptive"`` the released center.
    clip_radius_ : float
        The radius they were clipped to: ``data_norm``, or with
        ``clipping="adaptive"`` the released radius (a warning says when it is
        ``data_norm`` itself, i.e. the bound is likely too small).
    class_count_ : ndarray of shape (n_classes,)
        The released class counts after post-processing (at least
        ``max(1, noise sd)``, at most n).
    means_ : ndarray of shape (n_classes, n_features)
        Released class means.
    covariance_ : ndarray of shape (n_features, n_features)
        Released pooled within-class covariance (positive definite).
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights of the decision function (one row for two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Its intercepts.
    covariance_type_ : {"full", "diag"}
        The plan the fit took (``covariance_type``, or the one "auto" chose).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.

    See Also
    --------
    PrivateQuadraticDiscriminantAnalysis : One covariance per class.
    sklearn.discriminant_analysis.LinearDiscriminantAnalysis : Not private.

    Notes
    -----
    **Privacy.** rho-zCDP (or pure epsilon-DP with ``epsilon`` alone; or
    (epsilon, delta)-DP through the largest rho that implies it) with respect
    to replacing one row, its label included: a changed row may leave one
    class and join another. Public: ``classes``, ``data_norm``, ``bounds``,
    ``location``, ``priors``, n, d and every other parameter. Rows become
    ``clip(x - location, B)``. The releases are planned and charged before any data are
    read. With ``clipping="adaptive"`` (but not with ``bounds`` under pure
    DP) two come first (5% of the cost
    each): ``center``, the mean of the rows clipped to ``data_norm`` around
    ``location`` (l2 sensitivity ``2 data_norm / n``), and ``radius``, the 90%
    quantile of the rows' distances to it by the exponential mechanism over a
    public grid (utility sensitivity 1); B is then that radius (else
    ``data_norm``) and the rows are clipped around the released center. Then,
    with 5%, 55% and 40% of the rest:

    * ``class_counts``, the K counts: l2 sensitivity ``sqrt(2)``, l1 2;
    * ``class_sums``, the K class sums over n as one K d vector: l2
      ``2B/n``, l1 ``2 sqrt(d) B / n``;
    * ``second_moment``, ``(1/n) sum_i y_i y_i^T`` over every class: Frobenius
      ``sqrt(2) B^2 / n``, upper-triangle l1 ``min(d + 1, sqrt(2) d) B^2 / n``;
    * or, in the diagonal plan (10%, 60% and 30%), ``pooled_squares``, the
      d-vector ``(1/n) sum_i y_i o y_i``: l2 ``sqrt(2) B^2 / n``, l1 ``2 B^2 /
      n``;

    each with the summation's rounding term (proofs in
    :mod:`dpgauss.releases._groups`). With ``bounds`` the rows are first
    mapped into the unit box (each from its own row and the public box), B is
    ``sqrt(d)`` and ``location`` the box's center. Without a released center
    (pure DP, or ``clipping="fixed"``) the rows stay in ``[-1, 1]^d`` about
    the box's center, and two releases are charged the cube's smaller
    sensitivities (:mod:`dpgauss.releases._cube`): ``pooled_squares`` l2
    ``sqrt(d) / n``, l1 ``d / n``; ``second_moment`` l1 ``d (d + 1) / (2 n)``
    (Frobenius unchanged); the counts and sums gain nothing. Under pure DP the
    diagonal plan then gives half the squares' share (the half that buys the
    ball's noise at the cube's sensitivity) to ``class_sums``. The plan
    (``covariance_type="auto"``) and the refusal before the spend (a fit
    predicted no better than the majority class on a public reference problem
    raises :class:`~dpgauss.exceptions.UselessFitError` with
    ``on_useless="raise"``) read public values only. The means, priors,
    covariance and classifier are post-processing, and so is the
    ``UtilityWarning`` of a class whose released count lies within two noise
    sds of zero (its prior and mean are then mostly noise:
    :mod:`dpgauss.releases._class_rule`), and so are ``predict``,
    ``predict_proba`` and ``decision_function`` (applied to private rows,
    their outputs are of course not private); ``score`` reads its rows and is
    not private (it warns inside a search).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.discriminant_analysis import PrivateLinearDiscriminantAnalysis
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-1, 1, (5000, 2)), rng.normal(1, 1, (5000, 2))])
    >>> y = np.repeat([0, 1], 5000)
    >>> clf = PrivateLinearDiscriminantAnalysis(
    ...     classes=[0, 1], data_norm=5.0, rho=1.0, random_state=0
    ... ).fit(X, y)
    >>> clf.predict([[-2.0, -2.0], [2.0, 2.0]])
    array([0, 1])
    >>> round(clf.score(X, y), 2)
    0.93
    >>> clf.privacy_spent_
    ZCDP(rho=1.0)

    With a public box under pure DP, and one pooled diagonal covariance:

    >>> clf = PrivateLinearDiscriminantAnalysis(
    ...     classes=[0, 1],
    ...     bounds=(-5.0, 5.0),
    ...     covariance_type="diag",
    ...     epsilon=1.0,
    ...     random_state=0,
    ... ).fit(X, y)
    >>> bool(np.all(clf.covariance_ == np.diag(np.diag(clf.covariance_))))
    True
    >>> round(clf.score(X, y), 2)
    0.93
    """

    _RELEASES = {
        "full": ("class_counts", "class_sums", "second_moment"),
        "diag": ("class_counts", "class_sums", "pooled_squares"),
    }
    _SHARES = {"full": (0.05, 0.55, 0.4), "diag": (0.1, 0.6, 0.3)}

    def __init__(
        self,
        classes=None,
        *,
        data_norm=None,
        bounds=None,
        covariance_type="auto",
        location=None,
        clipping="adaptive",
        priors=None,
        shrinkage="auto",
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
    ):
        self.classes = classes
        self.data_norm = data_norm
        self.bounds = bounds
        self.covariance_type = covariance_type
        self.location = location
        self.clipping = clipping
        self.priors = priors
        self.shrinkage = shrinkage
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state
        self.on_useless = on_useless

    def _moment_factories(self, n, d, K, data_norm, partials, cube=False):
        def second_moment(cost, *, radius=data_norm):
            if cube:  # rows in the unit cube: releases._cube
                return cube_moment_mechanism(cost, n, d, radius, partials)
            return second_moment_mechanism(cost, n, d, radius, partials)

        return {"second_moment": second_moment}

    def _fit_releases(self, data, plan, rng):
        n, d = data.n, data.d
        diag = self._moment_name(plan) == "pooled_squares"
        outer = "pooled_squares" if diag else "pooled"
        parts = self._release_classes(data, plan, rng, outer=outer)
        radius = parts["radius"]
        offsets = parts["offsets"]
        weights = parts["sizes"] / float(n)
        weights = weights / max(1.0, float(np.sum(weights)))
        noise_var = parts["noise_var"]
        if diag:
            mech = plan.calibrate("pooled_squares", radius=radius)
            released = mech.randomise(parts["moments"] / n, rng)
            # E[m m] = mu mu + s^2 per coordinate: the noise's part removed.
            between = weights @ np.maximum(offsets * offsets - noise_var[:, None], 0.0)
            values = class_variances(
                released, 1.0, between, mech.sd(d), radius * radius, self.shrinkage
            )
            vectors = np.eye(d)
        else:
            mech = plan.calibrate("second_moment", radius=radius)
            released = mech.randomise(parts["moments"] / n, rng)
            between = (offsets.T * weights) @ offsets
            between = between - float(weights @ noise_var) * np.eye(d)
            values, vectors = class_covariance(
                mech, released, radius * radius, 1.0, between, self.shrinkage
            )
        values, vectors = self._box_spectrum(values, vectors)
        covariance = (vectors * values) @ vectors.T
        offsets, noise_var = usable_means(
            offsets, parts["sizes"], noise_var, values, vectors
        )
        self._warn_if_priors_only(offsets)
        parts = {**parts, "offsets": offsets}
        correction = noise_corrections(noise_var, float(np.sum(1.0 / values)))
        # Sigma^-1 m_k from the eigendecomposition (values > 0 for every draw).
        solved = ((offsets @ vectors) / values) @ vectors.T
        location = parts["center"]
        coef = solved
        intercept = (
            -0.5 * np.einsum("kd,kd->k", offsets, solved)
            + np.log(parts["priors"])
            + correction
            - coef @ location
        )
        box = self._box(d)
        if box is not None:  # z = (x - c) / h: the same rule on x (free)
            coef = coef / box[1]
            intercept = intercept - coef @ box[0]
            covariance = covariance * np.outer(box[1], box[1])
        if parts["classes"].size == 2:
            coef = coef[1:] - coef[:1]
            intercept = intercept[1:] - intercept[:1]
        return {
            **self._class_attributes(parts),
            "covariance_": covariance,
            "coef_": coef,
            "intercept_": intercept,
        }

    def _joint_log_likelihood(self, X):
        check_is_fitted(self)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([np.zeros_like(scores), scores])
        return scores

    def decision_function(self, X):
        """Class scores (free; not private on private X).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, the log-odds of the second; otherwise one score
            per class (log posterior up to a constant).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return super().decision_function(X)
