"""PrivateQuadraticDiscriminantAnalysis: class priors, means and covariances.

The releases and their sensitivities are in
:mod:`dpgauss.discriminant_analysis._base` (``class_counts``, ``class_sums``
and ``class_second_moments``, the K per-class second moments as one
block-diagonal matrix: a changed row moves at most two blocks, jointly by at
most ``sqrt(2) B^2 / n`` in Frobenius norm, the same as one pooled second
moment). The classifier is post-processing: each block is denoised and
projected onto {PSD, trace <= B^2} (the covariance estimators' GaussCov
spectrum), rescaled by ``n / n_k`` and centered by the class mean; its
eigenvalues are floored and shrunk as in
:func:`~dpgauss.releases._classes.shrink_spectrum` (with the class's
own noise level, ``n / n_k`` times the release's), the class means are
shrunk or replaced by their average where they show no signal above their
noise (:mod:`dpgauss.releases._class_rule`), and a row gets the class of
largest ``log pi_k - log|Sigma_k| / 2 - (x - mu_k)^T Sigma_k^-1 (x - mu_k) / 2
+ s_k^2 tr(Sigma_k^-1) / 2``, the last term the noise correction of the
released mean (``noise_correction_``). The class covariances are centered
by ``mu_k mu_k^T - s_k^2 I``: the released mean's outer product exceeds the
true one by its noise, ``s_k^2 I`` on average.
"""

import math

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.discriminant_analysis._base import DiscriminantMixin
from dpgauss.releases._class_rule import noise_corrections, usable_means
from dpgauss.releases._classes import (
    class_covariance,
    class_variances,
    pool_spectra,
)
from dpgauss.releases._groups import labelled_moment_mechanism
from dpgauss.utils._docstring import fill_doc

__all__ = ["PrivateQuadraticDiscriminantAnalysis"]


@fill_doc
class PrivateQuadraticDiscriminantAnalysis(DiscriminantMixin, BaseEstimator):
    """Quadratic discriminant analysis with private priors, means and covariances.

    The private counterpart of
    :class:`sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis`: each
    class is a Gaussian with its own mean and covariance, released with noise
    from rows clipped to a public ball (or one found privately), and a row is
    assigned to the class of largest posterior. It needs more rows per class
    than :class:`PrivateLinearDiscriminantAnalysis` (each class's covariance
    carries noise scaled by ``n / n_k``).

    Parameters
    ----------
    classes : array-like of shape (n_classes,), default=None
        The public class labels (at least two). Required: reading them off
        ``y`` would publish which labels occur. ``y`` may hold only these
        labels.
    data_norm : float, default=None
        Public bound B on the l2 norm of ``x - location``; rows are clipped to
        it. Give it or ``bounds``, from domain knowledge.
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
        Shrinks each released class covariance towards a multiple of the
        identity (post-processing), as in
        :class:`PrivateLinearDiscriminantAnalysis` (with the class's own noise
        level for "auto").
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
        The released class counts after post-processing.
    means_ : ndarray of shape (n_classes, n_features)
        Released class means.
    covariance_ : ndarray of shape (n_classes, n_features, n_features)
        Released class covariances (positive definite).
    rotations_ : list of ndarray of shape (n_features, n_features)
        Eigenvectors of each class covariance (with ``bounds``, of the
        covariance in box units, ``covariance_[k] / outer(h, h)``: the
        posteriors are the same and need no data-unit decomposition).
    scalings_ : list of ndarray of shape (n_features,)
        Its eigenvalues (positive).
    noise_correction_ : ndarray of shape (n_classes,)
        Added to each class's log posterior: ``s_k^2 tr(Sigma_k^-1) / 2``,
        the average amount by which the noise ``s_k^2`` per coordinate of the
        released mean lowers the class's score (0 when the classifier falls
        back on the priors). Released and public values only.
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
    PrivateLinearDiscriminantAnalysis : One pooled covariance (less noise).
    sklearn.discriminant_analysis.QuadraticDiscriminantAnalysis : Not private.

    Notes
    -----
    **Privacy.** rho-zCDP (or pure epsilon-DP with ``epsilon`` alone; or
    (epsilon, delta)-DP through the largest rho that implies it) with respect
    to replacing one row, its label included. Public: ``classes``,
    ``data_norm``, ``bounds``, ``location``, ``priors``, n, d and every other
    parameter.
    With ``clipping="adaptive"`` (but not with ``bounds`` under pure DP) two
    releases come first (5% of the cost each): ``center``, the mean of the
    rows clipped to ``data_norm`` (l2 sensitivity ``2 data_norm / n``), and
    ``radius``, a quantile of the rows' distances to it by the exponential
    mechanism (utility sensitivity 1).
    Then, with B the radius used and the rest of the cost split 5%, 45% and
    50%:

    * ``class_counts``: l2 sensitivity ``sqrt(2)`` (l1 2);
    * ``class_sums``, the K class sums over n: l2 ``2B/n`` (l1
      ``2 sqrt(d) B / n``);
    * ``class_second_moments``, the K blocks ``(1/n) sum_{i in k} y_i
      y_i^T`` as one block-diagonal matrix: Frobenius ``sqrt(2) B^2 / n`` (l1
      over the upper triangle ``(d + 1) B^2 / n``);
    * or, in the diagonal plan (10%, 60% and 30%), ``pooled_squares``, the
      d-vector ``(1/n) sum_i y_i o y_i``: l1 ``2 B^2 / n``, l2 ``sqrt(2) B^2
      / n`` (one shared diagonal covariance for every class);

    each with the summation's rounding term (proofs in
    :mod:`dpgauss.releases._groups`). With ``bounds`` the rows are first
    mapped into the unit box (each from its own row and the public box), B is
    ``sqrt(d)`` and ``location`` the box's center. Without a released center
    (pure DP, or ``clipping="fixed"``) the rows stay in ``[-1, 1]^d`` about
    the box's center and ``pooled_squares`` is charged the cube's l2
    ``sqrt(d) / n``, l1 ``d / n`` (:mod:`dpgauss.releases._cube`; the
    counts, sums and class blocks gain nothing, their bounds are attained at
    the cube's corners). Under pure DP the
    diagonal plan then gives half the squares' share (the half that buys the
    ball's noise at the cube's sensitivity) to ``class_sums``. The plan
    (``covariance_type="auto"``) and the refusal before the spend (a fit
    predicted no better than the majority class on a public reference problem
    raises :class:`~dpgauss.exceptions.UselessFitError` with
    ``on_useless="raise"``) read public values only. Everything after is
    post-processing (the means' shrinkage, their noise correction and the
    fall-back on the priors where the released means show no signal above
    their noise, and the warning where a released class count lies within two
    noise sds of zero: :mod:`dpgauss.releases._class_rule`); ``predict`` and
    ``predict_proba`` on private rows are not
    private outputs, and ``score`` reads its rows (it warns inside a search).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.discriminant_analysis import (
    ...     PrivateQuadraticDiscriminantAnalysis,
    ... )
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.5, (5000, 2)), rng.normal(0, 2, (5000, 2))])
    >>> y = np.repeat([0, 1], 5000)
    >>> clf = PrivateQuadraticDiscriminantAnalysis(
    ...     classes=[0, 1], data_norm=10.0, rho=1.0, random_state=0
    ... ).fit(X, y)
    >>> clf.predict([[0.0, 0.0], [3.0, 3.0]])
    array([0, 1])
    >>> clf.privacy_spent_
    ZCDP(rho=1.0)
    """

    _RELEASES = {
        "full": ("class_counts", "class_sums", "class_second_moments"),
        "diag": ("class_counts", "class_sums", "pooled_squares"),
    }
    _SHARES = {"full": (0.05, 0.45, 0.5), "diag": (0.1, 0.6, 0.3)}

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
        # The cube gives the class blocks no gain (releases._cube): unused.
        def class_second_moments(cost, *, radius=data_norm):
            return labelled_moment_mechanism(cost, n, d, K, radius, partials)

        return {"class_second_moments": class_second_moments}

    def _fit_releases(self, data, plan, rng):
        n, d = data.n, data.d
        diag = self._moment_name(plan) == "pooled_squares"
        outer = "pooled_squares" if diag else "per_class"
        parts = self._release_classes(data, plan, rng, outer=outer)
        radius = parts["radius"]
        K = parts["classes"].size
        # E[m m^T] = mu mu^T + s^2 I: the means' noise is not class spread.
        noise_var = parts["noise_var"]
        if diag:
            # One pooled diagonal covariance for every class (per-class
            # variances carry n / n_k times the noise).
            mech = plan.calibrate("pooled_squares", radius=radius)
            released = mech.randomise(parts["moments"] / n, rng)
            offsets = parts["offsets"]
            weights = parts["sizes"] / float(n)
            weights = weights / max(1.0, float(np.sum(weights)))
            pooled = class_variances(
                released,
                1.0,
                weights @ np.maximum(offsets * offsets - noise_var[:, None], 0.0),
                mech.sd(d),
                radius * radius,
                self.shrinkage,
            )
        else:
            mech = plan.calibrate("class_second_moments", radius=radius)
            # The diagonal blocks of the block-diagonal release, drawn without
            # forming the (K d) x (K d) matrix (randomise_blocks).
            released = mech.randomise_blocks(parts["moments"] / n, rng)
        box = self._box(d)
        spectra = []
        for k in range(K):
            m = parts["offsets"][k]
            scale = n / parts["sizes"][k]
            if diag:
                spectra.append((pooled, np.eye(d)))
            else:
                spectra.append(
                    class_covariance(
                        mech,
                        released[k],
                        radius * radius,
                        scale,
                        np.outer(m, m) - noise_var[k] * np.eye(d),
                        self.shrinkage,
                    )
                )
        if not diag and self.shrinkage == "auto":
            noise = [math.sqrt(d) * mech.sd() * n / size for size in parts["sizes"]]
            spectra = pool_spectra(spectra, parts["sizes"], noise)
        covariances, rotations, scalings = [], [], []
        for values, vectors in spectra:
            values, vectors = self._box_spectrum(values, vectors)
            covariances.append((vectors * values) @ vectors.T)
            rotations.append(vectors)
            scalings.append(values)
        # The test of the means' signal reads the classes' pooled covariance
        # (a convex mix of positive definite matrices: its eigenvalues are at
        # least the smallest class's, floored there for rounding).
        weights = parts["sizes"] / float(np.sum(parts["sizes"]))
        pooled_cov = np.einsum("k,kij->ij", weights, np.array(covariances))
        pooled_values, pooled_vectors = np.linalg.eigh(
            0.5 * (pooled_cov + pooled_cov.T)
        )
        floor = min(float(np.min(v)) for v in scalings)
        offsets, noise_var = usable_means(
            parts["offsets"],
            parts["sizes"],
            noise_var,
            np.maximum(pooled_values, floor),
            pooled_vectors,
        )
        if self._warn_if_priors_only(offsets):
            # The priors' rule: every class also takes the pooled covariance,
            # so the scores differ by log pi_k alone (post-processing of the
            # same released values; the test above read nothing else).
            values = np.maximum(pooled_values, floor)
            shared = (pooled_vectors * values) @ pooled_vectors.T
            covariances = [shared] * K
            rotations = [pooled_vectors] * K
            scalings = [values] * K
        parts = {**parts, "offsets": offsets}
        traces = np.array([float(np.sum(1.0 / v)) for v in scalings])
        correction = noise_corrections(noise_var, traces)
        if box is not None:  # the public map back (post-processing)
            covariances = [c * np.outer(box[1], box[1]) for c in covariances]
        return {
            **self._class_attributes(parts),
            "noise_correction_": correction,
            "covariance_": np.array(covariances),
            "rotations_": rotations,
            "scalings_": scalings,
        }

    def _joint_log_likelihood(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        d = X.shape[1]
        means = self.means_
        box = self._box(d)
        if box is not None:
            # The rotations and scalings are in box units: the densities of
            # z = (x - c) / h differ from those of x by the same factor for
            # every class, so the posteriors are the same.
            with np.errstate(all="ignore"):
                X = (X - box[0]) / box[1]
                means = (means - box[0]) / box[1]
        scores = []
        for k in range(self.classes_.size):
            offsets = (X - means[k]) @ self.rotations_[k]
            distances = np.sum(offsets * offsets / self.scalings_[k], axis=1)
            logdet = float(np.sum(np.log(self.scalings_[k])))
            scores.append(
                math.log(self.priors_[k])
                + float(self.noise_correction_[k])
                - 0.5 * (logdet + distances + d * math.log(2.0 * math.pi))
            )
        return np.column_stack(scores)

    def decision_function(self, X):
        """Class scores (free; not private on private X).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, the log-odds of the second; otherwise the log
            posterior of each class up to a constant.
        """
        scores = self._joint_log_likelihood(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        """The class of largest posterior (free; not private on private X).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        scores = self._joint_log_likelihood(X)
        return self.classes_[np.argmax(scores, axis=1)]
