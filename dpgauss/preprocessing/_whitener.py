"""PrivateWhitener: ZCA whitening by a privately released covariance.

Whitening with the exact covariance of the training rows publishes that
covariance in the fitted transformer. This one uses the releases of
:class:`~dpgauss.covariance.PrivateCovariance` (the same code,
:mod:`dpgauss.releases._center`, shared with
:class:`~dpgauss.decomposition.PrivatePCA` through
:mod:`dpgauss.releases._spectrum`): the mean of the rows clipped to a public
ball (``center=True``), then their covariance about it; or, with
``method="tail"``, those of :class:`~dpgauss.covariance.TailSensitiveCovariance`
(:mod:`dpgauss.releases._adaptive`). The whitening
matrix ``W = V diag(max(values, floor))^(-1/2) V^T`` is post-processing of the
released eigendecomposition, with the public floor of
:func:`~dpgauss.releases._center.whitening_floor` (the noise scale of the
release), so ``W`` is symmetric, positive definite and finite for every noise
draw. No new mechanism.
"""

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.base import PrivateEstimatorMixin
from dpgauss.releases._center import whitening_floor
from dpgauss.releases._spectrum import SpectrumReleaseMixin
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import _fit_context

__all__ = ["PrivateWhitener"]


@fill_doc
class PrivateWhitener(
    OneToOneFeatureMixin,
    TransformerMixin,
    SpectrumReleaseMixin,
    PrivateEstimatorMixin,
    BaseEstimator,
):
    """ZCA whitening with a differentially private mean and covariance.

    ``transform`` computes ``(x - mean_) @ whitening_``, where ``whitening_``
    is the inverse square root of the released covariance (its eigenvalues
    floored at a public noise level): the output has about the identity
    covariance, and its columns stay aligned with the input's (zero-phase
    whitening, unlike the rotation of ``PrivatePCA(whiten=True)``), so
    ``get_feature_names_out`` keeps the input's names. The covariance is
    released exactly as :class:`~dpgauss.covariance.PrivateCovariance` releases
    it, from rows clipped to a public l2 ball.

    Parameters
    ----------
    data_norm : float, default=None
        Public l2 radius B (or give ``bounds``): each row is clipped to the
        ball of radius B around the origin for the mean, and around the
        released mean for the
        covariance (with ``"tail"``, at a radius and a threshold found
        privately below B). Never taken from the data.
    {spectrum_bounds}
    center : bool, default=True
        Release the mean (a tenth of the cost) and whiten about it. If False,
        whiten by the second moment about the origin (``mean_`` is 0).
    method : {"auto", "gauss", "separate", "eigen", "tail", "diagonal"}, \
default="auto"
        The covariance release: ``"tail"`` is that of
        :class:`~dpgauss.covariance.TailSensitiveCovariance` (radius and
        clipping threshold found privately below ``data_norm``, which may then
        be loose; its defaults otherwise), the others are those of
        :class:`~dpgauss.covariance.PrivateCovariance` at the fixed radius
        ``data_norm``. ``"auto"`` stays the default: in the user guide's
        benchmark ``"tail"`` whitened better on digits (rho >= 0.1) and on the
        spiked data at rho <= 0.1, worse on standardised breast cancer (rho
        <= 1), on digits at rho = 0.01 and slightly on the spiked data from
        rho = 1. ``"diagonal"`` (with ``bounds`` only) whitens by the
        per-coordinate private variances, as a scaler does.
    {privacy_parameters}
    {random_state}
    {on_useless}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The released mean, or zeros when ``center=False``.
    covariance_ : ndarray of shape (n_features, n_features)
        The released covariance with its eigenvalues floored at
        ``eigenvalue_floor_``: symmetric positive definite.
    whitening_ : ndarray of shape (n_features, n_features)
        ``covariance_^(-1/2)``: symmetric positive definite, finite.
    eigenvalue_floor_ : float
        The smallest eigenvalue of ``covariance_``: the standard deviation of one
        noise entry of the final covariance release (a public function of n, d,
        ``data_norm`` and the cost; with ``"tail"`` also of the released
        clipping threshold), at least ``d 2^-52`` times the largest
        released eigenvalue. A direction whose released variance is below it is
        scaled by ``eigenvalue_floor_^(-1/2)``, not blown up by noise.
    method_ : str
        The final covariance release used (``"auto"`` resolved; for
        ``"tail"``, the mechanism it chose, ``"gauss"`` or ``"separate"``).
    n_samples_ : int
        The number of rows n (public).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivatePCA : Principal components (and PCA whitening) from the same release.
    PrivateStandardScaler : Per-feature standardisation (no rotation).

    Notes
    -----
    **Privacy.** rho-zCDP (``rho``, or ``epsilon`` and ``delta`` through the
    largest rho that implies them) or epsilon-DP (``epsilon`` alone, Laplace
    noise) with respect to replacing one row. The number of rows n, d,
    ``data_norm`` and every parameter are public. With ``"tail"`` the releases
    are exactly those of
    ``TailSensitiveCovariance(data_norm=data_norm, center=center)`` (same code
    and plan; sensitivities and the pairs' argument in its Notes and in
    :class:`~dpgauss.decomposition.PrivatePCA`'s): a tenth of the cost to the
    mean (``center=True``), of the rest 1/8 to the private radius scans
    (AboveThreshold, sensitivity 1), 1/32 to the trace, 1/8 to the private
    threshold search (AboveThreshold, sensitivity 1 plus the rounding) and
    23/32 to GaussCov or SeparateCov of the rows clipped at the chosen
    threshold. Otherwise they are exactly
    those of
    ``PrivateCovariance(method=method, data_norm=data_norm, center=center)``
    (same code and plan): with B = ``data_norm``, the clipped mean (l2
    sensitivity 2B/n; a tenth of the cost with ``center=True``), the trace
    (B^2/n; ``"auto"``, a sixteenth of the rest) and the covariance about the
    released mean (GaussCov: sqrt(2) B^2/n in Frobenius norm; SeparateCov and
    EMCov as documented there). Rows are clipped as offsets from the center, so
    these hold in floating point for any finite rows, the summation's rounding
    included. With ``bounds`` the releases are those of the rows mapped into
    the unit box (each a function of its own row and the public box) with B =
    sqrt(d), or the diagonal release (l1 sensitivity 9d/(4n), l2 2
    sqrt(d)/n; :mod:`dpgauss.releases._diagonal`), chosen from n, d and the
    cost only; the map back by ``diag(h)`` is post-processing. The plan is
    charged before any noise is drawn. ``covariance_``,
    ``whitening_``, the floor, ``transform`` and ``inverse_transform`` are
    post-processing (free; applied to private rows their output is not
    private).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.preprocessing import PrivateWhitener
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0], [[4.0, 1.5], [1.5, 1.0]], size=50_000)
    >>> white = PrivateWhitener(data_norm=8.0, rho=1.0, random_state=0).fit(X)
    >>> np.round(np.abs(np.cov(white.transform(X), rowvar=False)), 1)
    array([[1., 0.],
           [0., 1.]])
    >>> white.privacy_spent_
    ZCDP(rho=1.0)
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        **SpectrumReleaseMixin._spectrum_constraints,
    }

    def __init__(
        self,
        *,
        data_norm=None,
        bounds=None,
        center=True,
        method="auto",
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
    ):
        self.data_norm = data_norm
        self.bounds = bounds
        self.center = center
        self.method = method
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the mean and covariance of ``X``, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows, finite. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateWhitener
            The fitted transformer.
        """
        return self._private_fit(X)

    def transform(self, X):
        """Whiten ``X`` (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data. Not modified.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``(X - mean_) @ whitening_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return (X - self.mean_) @ self.whitening_

    def inverse_transform(self, X):
        """Map whitened data back to the original units (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Whitened data. Not modified.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``X @ covariance_^(1/2) + mean_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        values, vectors = self._model
        return (X @ vectors) * np.sqrt(values) @ vectors.T + self.mean_

    def _fit_releases(self, data, plan, rng):
        X = data.X
        mean, spectrum = self._release_spectrum(X, plan, rng)
        # Post-processing of released values and public ones only.
        floor = whitening_floor(spectrum)
        values = np.maximum(spectrum.values, floor)
        vectors = spectrum.vectors
        covariance = (vectors * values) @ vectors.T
        whitening = (vectors / np.sqrt(values)) @ vectors.T
        return {
            "mean_": np.asarray(mean, dtype=np.float64).copy(),
            "covariance_": 0.5 * (covariance + covariance.T),
            "whitening_": 0.5 * (whitening + whitening.T),
            "eigenvalue_floor_": floor,
            "method_": spectrum.method,
            "n_samples_": X.shape[0],
            "_model": (values, vectors),
        }
