"""PrivateEllipticEnvelope: outlier detection from a private Gaussian fit.

The private counterpart of :class:`sklearn.covariance.EllipticEnvelope`. The
fit is :class:`~dpgauss.covariance.PrivateCovariance`'s, unchanged: the same
release plan, the same releases, the same post-processing into
N(``location_``, ``covariance_``). What the envelope adds is a threshold and
the scikit-learn outlier-detector methods, all of them post-processing.

**The threshold.** scikit-learn's ``EllipticEnvelope`` sets ``offset_`` to the
``contamination`` quantile of the training rows' negated Mahalanobis
distances: a data quantile, published without noise. Here ``offset_`` is the
quantile the fitted model itself predicts: a row drawn from N(mu, Sigma) has
a squared Mahalanobis distance distributed as chi-square with d degrees of
freedom, so ::

    offset_ = -chi2.isf(contamination, df=d)

(``isf(c)`` is ``ppf(1 - c)`` without the cancellation of ``1 - c``: it stays
finite for every ``contamination`` in (0, 0.5]). It depends on two public
values only and costs nothing. It is the exact quantile only for the true
Gaussian; the noise in the fitted covariance and mean, and the rows clipped
to ``data_norm``, move the flagged fraction away from ``contamination`` (see
the class's Notes and ``benchmarks/bench_envelope.py``).

**Finite scores.** ``precision_`` and the distances come from the fitted
eigen-decomposition, whose eigenvalues are floored
(:class:`~dpgauss.density.GaussianDensityMixin`), so the distance of a finite
row is finite unless it exceeds float64's range; such a distance (far rows
against a tiny floor) is reported as the largest float64, so
``score_samples`` and ``decision_function`` are finite for every noise draw
and every finite row, without a floating-point warning.
"""

import numbers

import numpy as np
from scipy.stats import chi2
from sklearn.base import OutlierMixin
from sklearn.metrics import accuracy_score

from dpgauss.covariance._private_covariance import PrivateCovariance
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._leak import warn_if_scored_in_search
from dpgauss.utils._sklearn_compat import Interval, _fit_context

__all__ = ["PrivateEllipticEnvelope", "chi2_offset"]

_MAX_FLOAT = float(np.finfo(np.float64).max)


def chi2_offset(contamination, n_features):
    """The envelope's threshold: minus the chi-square ``1 - contamination`` quantile.

    Parameters
    ----------
    contamination : float
        The public share of outliers, in (0, 0.5].
    n_features : int
        The dimension d (the chi-square's degrees of freedom).

    Returns
    -------
    float
        ``-chi2.isf(contamination, df=n_features)``, finite and negative.

    Examples
    --------
    >>> from dpgauss.covariance._elliptic_envelope import chi2_offset
    >>> round(chi2_offset(0.1, 2), 4)
    -4.6052
    """
    return -float(chi2.isf(float(contamination), df=int(n_features)))


@fill_doc
class PrivateEllipticEnvelope(OutlierMixin, PrivateCovariance):
    """Differentially private outlier detection by a Gaussian envelope.

    The private counterpart of :class:`sklearn.covariance.EllipticEnvelope`:
    a private Gaussian fit (exactly :class:`PrivateCovariance`'s) and a row
    is an outlier when its squared Mahalanobis distance to the fitted model
    exceeds the chi-square quantile that a public ``contamination`` gives.
    ``score_samples``, ``decision_function``, ``predict`` and ``score`` follow
    scikit-learn's conventions.

    Parameters
    ----------
    contamination : float in (0, 0.5], default=0.1
        Public: the share of outliers the fitted Gaussian should flag. Sets
        ``offset_ = -chi2.isf(contamination, df=n_features)`` (the model's
        quantile; scikit-learn takes the training rows' quantile, which reads
        the data without noise).
    method : {"auto", "gauss", "separate", "eigen", "coinpress", "diagonal"}, \
default="auto"
        The covariance release, as in :class:`PrivateCovariance`.
    {privacy_parameters}
    data_norm : float, default=None
        Public l2 radius B (or give ``bounds``): rows are clipped to the
        ball of radius B around ``location`` for the fit (only: rows are scored as they
        are). Never taken from the data. For unbounded data without a scale,
        see the Notes.
    center : bool, default=True
        Release the mean (a tenth of the cost) and fit the covariance around
        it; if False, the model is centered at ``location``.
    location : array-like of shape (n_features,), default=None
        Public center of the clipping ball (the origin when None).
    coinpress_steps : int, default=3
        ``method="coinpress"`` only, as in :class:`PrivateCovariance`.
    bounds : pair of float or array-like, default=None
        Public box ``(lower, upper)``, the alternative to ``data_norm``, as in
        :class:`PrivateCovariance` (rows are mapped into it for the fit only;
        they are scored as they are).
    {random_state}
    {on_useless}

    Attributes
    ----------
    location_ : ndarray of shape (n_features,)
        The private mean (or ``location`` when ``center=False``).
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance, positive definite (eigenvalues floored at
        ``eigenvalue_floor_``).
    precision_ : ndarray of shape (n_features, n_features)
        The inverse of ``covariance_``.
    offset_ : float
        ``-chi2.isf(contamination, df=n_features)``: ``decision_function`` is
        ``score_samples - offset_``. Public (no data read).
    eigenvalue_floor_ : float
        The smallest eigenvalue of ``covariance_`` (see
        :class:`PrivateCovariance`).
    method_ : str
        The mechanism used (``"auto"`` resolved).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost (what was charged to ``budget``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateCovariance : The private fit the envelope is built on.
    sklearn.covariance.EllipticEnvelope : The non-private detector (robust MCD).

    Notes
    -----
    **Privacy.** The fit is :class:`PrivateCovariance`'s fit with the same
    parameters: rho-zCDP (``rho``, or ``epsilon`` and ``delta``) or pure
    epsilon-DP (``epsilon`` alone) with respect to replacing one row; n,
    ``data_norm``, ``location``, ``contamination`` and every other parameter
    are public. Rows are clipped to the ball of radius B = ``data_norm``
    (offsets from the center, so a row 1e12 radii away is clipped like any
    other); the clipped mean has l2 sensitivity 2B/n, the second moment
    sqrt(2) B^2/n in Frobenius norm (the full list, the floating-point
    argument and the budget split, a tenth to the mean when ``center=True``,
    are in :class:`PrivateCovariance`'s Notes). ``offset_`` is a function of
    ``contamination`` and d only. ``score_samples``, ``decision_function``,
    ``predict``, ``mahalanobis`` and ``sample`` are post-processing of the
    release: they spend nothing.

    **Predictions on the training rows are not private.** ``fit_predict(X)``,
    or ``predict`` / ``decision_function`` / ``score`` applied to the rows the
    model was fitted on, return one value per private row computed from that
    row without noise: the model is private, these outputs are not (a row's
    label says whether that row is far from the model). The same holds for any
    private rows scored later. Publish the model, or labels of rows whose
    owners may see them, not the labels of a private data set.

    **Not robust.** scikit-learn's envelope fits the Minimum Covariance
    Determinant, which ignores up to half the rows. This fit averages every
    (clipped) row, outliers included: clipping bounds each row's influence
    (that is what privacy needs) but a tenth of the rows at the clipping
    radius still stretches the covariance towards them, so contamination
    lowers their distances and the detection rate. On the benchmarks
    (``benchmarks/bench_envelope.py``, user guide) this costs ranking quality
    against the MCD even at large rho, as it does for the non-private
    empirical covariance.

    **The flagged share.** ``offset_`` is the quantile of the true Gaussian.
    The fitted one has noise (and rows beyond ``data_norm`` were clipped, which
    shrinks the covariance): small eigenvalues drawn too small inflate the
    distances, so at small rho or n, or with a loose ``data_norm``, more than
    ``contamination`` of clean Gaussian rows can be flagged. The threshold is
    not corrected for this; the user guide shows the measured share.

    Without a public ``data_norm``: :class:`PrivateGaussianEstimator` needs no
    bound, and its fitted ``mahalanobis`` with the same chi-square quantile
    is the same detector (post-processing).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.covariance import PrivateEllipticEnvelope
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0], [[1.0, 0.5], [0.5, 1.0]], size=20000)
    >>> env = PrivateEllipticEnvelope(rho=1.0, data_norm=6.0, random_state=0)
    >>> env = env.fit(X)
    >>> round(env.offset_, 3)
    -4.605
    >>> env.predict([[0.0, 0.0], [3.0, -3.0]])
    array([ 1, -1])
    >>> round(float(np.mean(env.predict(X) == -1)), 2)  # not private: X's labels
    0.1
    """

    _parameter_constraints: dict = {
        **PrivateCovariance._parameter_constraints,
        "contamination": [Interval(numbers.Real, 0, 0.5, closed="right")],
    }

    def __init__(
        self,
        *,
        contamination=0.1,
        method="auto",
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        data_norm=None,
        center=True,
        location=None,
        coinpress_steps=3,
        bounds=None,
        random_state=None,
        on_useless="raise",
    ):
        self.contamination = contamination
        self.method = method
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.data_norm = data_norm
        self.center = center
        self.location = location
        self.coinpress_steps = coinpress_steps
        self.bounds = bounds
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the private Gaussian of ``X``, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateEllipticEnvelope
            The fitted estimator.
        """
        return self._private_fit(X)

    def _fit_releases(self, data, plan, rng):
        X = data.X
        fitted = super()._fit_releases(data, plan, rng)
        fitted["offset_"] = chi2_offset(self.contamination, X.shape[1])
        return fitted

    def score_samples(self, X):
        """Return the negated squared Mahalanobis distances (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score. Applied to private rows, the result is not private.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``-mahalanobis(X)``; a distance beyond float64's range counts as
            the largest float64, so the scores are finite.
        """
        with np.errstate(all="ignore"):
            distances = self.mahalanobis(X)
        distances[~(distances <= _MAX_FLOAT)] = _MAX_FLOAT  # also NaN from inf - inf
        return -distances

    def decision_function(self, X):
        """Return ``score_samples(X) - offset_``: negative for outliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score. Applied to private rows, the result is not private.

        Returns
        -------
        ndarray of shape (n_samples,)
            The chi-square quantile minus the squared Mahalanobis distance.
        """
        return self.score_samples(X) - self.offset_

    def predict(self, X):
        """Label each row: 1 for an inlier, -1 for an outlier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to label. Applied to private rows, the labels are not private.

        Returns
        -------
        ndarray of shape (n_samples,)
            1 where ``decision_function(X) >= 0``, else -1.
        """
        return np.where(self.decision_function(X) >= 0, 1, -1)

    def fit_predict(self, X, y=None, **kwargs):
        """Fit on ``X`` and label its rows (the labels are not private).

        The fit is private; the labels are one value per row of ``X``,
        computed from that row without noise: do not publish them for
        private rows (see Notes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.
        **kwargs : dict
            Passed to ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``self.fit(X).predict(X)``.
        """
        return self.fit(X, y, **kwargs).predict(X)

    def score(self, X, y, sample_weight=None):
        """Return the accuracy of ``predict(X)`` against ``y`` (not private).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            True labels, 1 for inliers and -1 for outliers.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        float
            ``accuracy_score(y, predict(X))``.

        Warns
        -----
        PrivacyLeakWarning
            When called by scikit-learn's cross-validation or search on a test
            fold (the score is published without noise and without a charge).
        """
        warn_if_scored_in_search(self)
        return accuracy_score(y, self.predict(X), sample_weight=sample_weight)
