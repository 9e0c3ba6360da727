"""PrivatePCA: principal components of a privately released covariance.

scikit-learn's ``PCA`` publishes the exact top eigenvectors of the training
rows' covariance (and its mean, and its spectrum) in every fitted ``Pipeline``.
This estimator makes exactly the releases of one of the private covariance
estimators (the code is the same, :mod:`dpgauss.releases._spectrum`): by
default (``method="tail"``) those of
:class:`~dpgauss.covariance.TailSensitiveCovariance`
(:mod:`dpgauss.releases._adaptive`: a private radius below the public
bound, the mean, the trace, a private clipping threshold, then GaussCov or
SeparateCov on the rows clipped there); with ``"auto"``, ``"gauss"``,
``"separate"`` or ``"eigen"`` those of
:class:`~dpgauss.covariance.PrivateCovariance`
(:mod:`dpgauss.releases._center`: the mean of the rows clipped to the public
ball of radius B, then the covariance of the rows clipped to the ball of radius
B around that mean). Everything PCA needs afterwards (the eigendecomposition,
the choice of components, their signs, the explained variances and their
ratios, the projections) is a function of the released values and public
ones: post-processing, free.

No new mechanism: the sensitivities, their floating-point argument and the
audits are those of the covariance releases (see
:mod:`dpgauss.covariance._tail_sensitive`,
:mod:`dpgauss.covariance._private_covariance` and ``tests/audit/``).
"""

import math
import numbers

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from dpgauss.accounting._plan import ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.decomposition._axes import (
    axes_entries,
    axes_noise,
    full_wins_for_components,
    is_axes,
    release_axes,
)
from dpgauss.decomposition._components import (
    full_components_prediction,
    squared_prediction,
    threshold_spectrum,
    warn_unresolved_components,
)
from dpgauss.releases._box import box_location
from dpgauss.releases._center import whitening_floor
from dpgauss.releases._diagonal import (
    diagonal_entries,
    is_diagonal,
    variance_sampling,
)
from dpgauss.releases._prediction import Prediction, report_baseline
from dpgauss.releases._spectrum import SpectrumReleaseMixin
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import Interval, _fit_context

__all__ = ["PrivatePCA"]


def flip_signs(components):
    """Make the largest-magnitude entry of every row positive (post-processing).

    scikit-learn's ``svd_flip`` convention for ``components_`` (an eigenvector's
    sign is arbitrary); ties go to the first such entry.

    Parameters
    ----------
    components : ndarray of shape (k, d)
        Orthonormal rows.

    Returns
    -------
    ndarray of shape (k, d)
        The rows, some negated.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.decomposition._pca import flip_signs
    >>> flip_signs(np.array([[0.6, -0.8], [0.8, 0.6]]))
    array([[-0.6,  0.8],
           [ 0.8,  0.6]])
    """
    if components.size == 0:
        return components
    top = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), top])
    signs[signs == 0] = 1.0
    return components * signs[:, np.newaxis]


def select_n_components(n_components, ratio, d):
    """The number of components kept (post-processing of released ratios).

    ``None``: all d. An int: itself. A float in (0, 1): the fewest components
    whose released explained-variance ratios add up to at least it (all d when
    they never do, as when every released eigenvalue is 0).
    """
    if n_components is None:
        return d
    if isinstance(n_components, numbers.Integral):
        return int(n_components)
    reached = np.flatnonzero(np.cumsum(ratio) >= float(n_components))
    return int(reached[0]) + 1 if reached.size else d


@fill_doc
class PrivatePCA(
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    SpectrumReleaseMixin,
    PrivateEstimatorMixin,
    BaseEstimator,
):
    """Principal component analysis from a differentially private covariance.

    The private counterpart of :class:`sklearn.decomposition.PCA`: the mean and
    the covariance of the rows are released with calibrated noise, exactly as
    :class:`~dpgauss.covariance.TailSensitiveCovariance` releases them (by
    default: rows clipped at a radius and a threshold found privately below
    the public bound) or as :class:`~dpgauss.covariance.PrivateCovariance`
    does (rows clipped at the public bound), and the principal axes are the
    eigenvectors of the released covariance. ``transform`` projects onto them,
    ``inverse_transform`` maps back; both are free (post-processing).

    Parameters
    ----------
    n_components : int, float or None, default=None
        Number of components to keep. ``None``: all ``n_features``. An int in
        ``[1, n_features]``. A float in (0, 1): the fewest components whose
        released explained-variance ratios (see ``explained_variance_ratio_``)
        add up to at least it; chosen from released values, so free, but noisy.
        The releases never depend on it (every fit releases the whole
        covariance), so changing it costs a new fit but not a different plan.
    data_norm : float, default=None
        Public l2 bound B on ``|x|`` (or give ``bounds``), never taken from
        the data;
        choose it from domain knowledge. With ``"tail"`` it may be loose (the
        radius and the clipping threshold are found privately below it); with
        the other methods each row is clipped to the ball of radius B around
        the origin for the mean, and around the released mean for the
        covariance, and the noise grows with B^2.
    {spectrum_bounds}
    center : bool, default=True
        Release the mean (a tenth of the cost) and analyse the covariance about
        it, as PCA does. If False, the components are those of the second
        moment about the origin (data known to be centered) and ``mean_`` is 0.
    method : {"tail", "auto", "gauss", "separate", "eigen", "diagonal"}, \
default="tail"
        The covariance release:

        - ``"tail"``: that of
          :class:`~dpgauss.covariance.TailSensitiveCovariance` (its defaults:
          ``location`` the origin, its default budget split). It spends 9/32
          of the non-mean cost finding a radius and a clipping threshold at
          which clipping bias balances noise, then releases GaussCov or
          SeparateCov (whichever it predicts better for the covariance) of the
          rows clipped there; with few rows it may estimate the covariance
          from differences of random pairs of rows. In the user guide's
          benchmark it never captured more than 0.006 less variance than
          ``"gauss"`` (standardised breast cancer at rho >= 1), and far more
          where ``data_norm`` is loose for most rows (digits: 0.97 against
          0.33 for 2 components at rho = 0.1).

        The others are the releases of
        :class:`~dpgauss.covariance.PrivateCovariance`, rows clipped at the
        fixed radius ``data_norm``:

        - ``"gauss"``: GaussCov, noise on the whole covariance; the components
          are the eigenvectors of the noisy matrix, at the full cost.
        - ``"separate"``: SeparateCov; the eigenvalues are released at half
          the cost (accurate ``explained_variance_``), the components are the
          eigenvectors of a noisy copy at the other half.
        - ``"eigen"``: EMCov (Amin et al. 2019), the components one at a time
          by the exponential mechanism; a baseline, O(d^4) and slow beyond
          d = 100 (see the user guide's benchmark).
        - ``"auto"``: ``"gauss"`` (the default before ``"tail"``). The
          components of SeparateCov are the eigenvectors of a GaussCov release
          at half the cost, so GaussCov's
          are better for PCA whatever the data; ``PrivateCovariance``'s
          ``"auto"`` (a sixteenth of the cost on a trace that picks GaussCov
          or SeparateCov by their predicted covariance error) would spend
          budget on a choice whose answer for the components is known (see
          the user guide's benchmark).
        - ``"diagonal"``: with ``bounds`` only, the per-coordinate variances
          (the ``axes`` release, the joint mean and second moment ``(m, 2
          s)`` of the box rows, which puts less noise on the variances than
          :class:`~dpgauss.covariance.PrivateCovariance`'s ``"diagonal"``;
          with ``center=False`` that release of the second moments): the
          components are the coordinate axes ordered by their private
          variances, PCA's simplest private answer. Refused before the spend
          when the noise of one variance is at least the largest variance a
          box coordinate can have (no better than a random subspace).
    whiten : bool, default=False
        Divide each projected component by the square root of its explained
        variance (floored at ``eigenvalue_floor_``), as scikit-learn does.
    {privacy_parameters}
    {random_state}
    {on_useless}

    Attributes
    ----------
    components_ : ndarray of shape (`n_components_`, n_features)
        Principal axes: orthonormal rows (for every noise draw), eigenvectors of
        the released covariance by decreasing released eigenvalue, each signed
        so that its largest-magnitude entry is positive (scikit-learn's
        convention).
    explained_variance_ : ndarray of shape (`n_components_`,)
        The released eigenvalues of the kept components (>= 0, decreasing),
        rescaled by ``n / (n - 1)`` to match scikit-learn's unbiased
        normalisation. With ``"gauss"`` they are the denoised eigenvalues of the
        noisy matrix; with ``"separate"`` and ``"eigen"`` the separately
        released eigenvalues of the covariance.
    explained_variance_ratio_ : ndarray of shape (`n_components_`,)
        ``explained_variance_`` divided by the released total variance (the
        sum of all ``n_features`` released eigenvalues, not the data's true
        total variance); all 0 when every released eigenvalue is 0.
    singular_values_ : ndarray of shape (`n_components_`,)
        ``sqrt((n - 1) explained_variance_)``: the singular values a centered
        data matrix with the released covariance would have (scikit-learn's
        relation); computed from released values and n, not from the rows.
    mean_ : ndarray of shape (n_features,)
        The released mean (shrunk and projected as in the covariance estimator
        whose releases are made: ``location_`` there), or zeros when
        ``center=False``.
    n_components_ : int
        The number of components kept.
    noise_variance_ : float
        The mean of the released eigenvalues (rescaled like
        ``explained_variance_``) of the components not kept (0 when all are
        kept): scikit-learn's probabilistic-PCA noise estimate, from released
        values.
    eigenvalue_floor_ : float
        The smallest variance ``whiten`` divides by (in the units of
        ``explained_variance_``): the standard deviation of one noise entry of
        the final covariance release (public; with ``"tail"`` a function of
        the released clipping threshold), at least ``d 2^-52`` times the
        largest released eigenvalue, so whitening is finite for every draw.
    components_resolved_ : ndarray of shape (n_components,), dtype bool
        False for a component whose ``explained_variance_`` is within a few
        times ``eigenvalue_floor_`` (a warning names it): its variance is the
        denoiser's floor, however small it reads, not the rows' variance, and
        its direction is noise.
    method_ : str
        The final covariance release used: ``"auto"`` resolved, and for
        ``"tail"`` the mechanism it chose (``"gauss"`` or ``"separate"``).
    n_samples_ : int
        The number of rows n (public in dpgauss's privacy model).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost (what was charged to ``budget``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.decomposition.PCA : The non-private estimator.
    PrivateCovariance : The covariance release underneath.
    PrivateWhitener : ZCA whitening from the same release.

    Notes
    -----
    **Privacy.** The fit is rho-zCDP (``rho``, or ``epsilon`` and ``delta``
    through the largest rho that implies them) or epsilon-DP (``epsilon``
    alone, Laplace noise) with respect to replacing one row of ``X``. The
    number of rows n, d, ``data_norm`` and every parameter are public.

    With ``"tail"`` the releases are exactly those of
    ``TailSensitiveCovariance(data_norm=data_norm, center=center)`` (same
    code, same plan, see its Notes): the radius scans (AboveThreshold on
    counts, sensitivity 1, pure), the mean (``center=True``, sensitivity 2r/n
    for rows clipped at the released radius r, or at ``data_norm`` when n
    allows only one scan), the trace (r^2/n, or s^2/m for the m = n // 2
    pair differences at their radius s), the threshold search (AboveThreshold,
    sensitivity 1 plus the rounding) and GaussCov or SeparateCov on the rows
    clipped at the chosen threshold tau (sensitivities with tau^2 for r^2);
    budget split: a tenth to the mean (``center=True``), of the rest 1/8 to
    the scans, 1/32 to the trace, 1/8 to the search and 23/32 to the final
    release. The pairing is drawn from the fit's generator independently of
    the data, and replacing one row changes at most one pair difference.

    With the other methods the releases are exactly those of
    ``PrivateCovariance(method=method, data_norm=data_norm, center=center)``
    (same code, same plan; ``"auto"`` is ``"gauss"`` here): with B =
    ``data_norm``, the clipped mean (sensitivity 2B/n in l2) and the
    covariance about the released mean by GaussCov (second moment, sqrt(2)
    B^2/n in Frobenius norm), SeparateCov (sorted eigenvalues, sqrt(2) B^2/n in
    l2, and a noisy copy of the second moment) or EMCov (eigenvalues, and
    d - 1 exponential-mechanism steps of utility sensitivity B^2). Rows are
    clipped as offsets from the center, so the bounds hold in floating point
    for any finite rows (1e12 radii away, overflowing offsets included); the
    summation's rounding is added to each sensitivity. Budget split: a tenth
    to the mean (``center=True``), the rest to the covariance (SeparateCov and
    EMCov halve it between eigenvalues and eigenvectors). The plan is charged
    before any noise is drawn. The components, their number (also for a float
    ``n_components``), signs, explained variances, ratios,
    ``noise_variance_`` and the floor are post-processing, as are
    ``transform`` and ``inverse_transform`` (applied to private rows, their
    output is of course not private). EMCov's sampler assumes ideal real
    arithmetic; the other noise is drawn exactly on a lattice.
    With ``bounds`` the releases are those of the rows mapped into the unit
    box (a function of each row and the public box) with ``data_norm =
    sqrt(d)``, or the per-coordinate release: ``axes``, the joint
    ``(m, 2 s)`` of the box rows' means and centred squares (l1 sensitivity
    25d/(8n), l2 2.2683 sqrt(d)/n; proof in :mod:`dpgauss.releases._moments`),
    or with ``center=False`` the diagonal release of the second moments (l1
    d/n, l2 sqrt(d)/n; :mod:`dpgauss.releases._diagonal`). The choice between
    the full and the per-coordinate release (the full one where its
    predicted error is at most 1.2 times the diagonal release's under pure
    epsilon, 0.75 times under zCDP, and it is not predicted to lose to the
    zero matrix) reads n, d and the cost only; the variances ``s + 1/2 -
    m^2`` projected onto [0, 1] and shrunk towards a public prior, their
    order and the map back by
    ``diag(h)`` are post-processing, as is zeroing the full release's
    off-diagonal entries before its eigendecomposition when, together, they
    are consistent with its public noise (box units).
    Everything after the releases (for ``"tail"`` also the choice between
    centering and pairs, the search's end and GaussCov or SeparateCov) uses
    released and public values only.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.decomposition import PrivatePCA
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 3)) * [3.0, 1.0, 0.3]
    >>> pca = PrivatePCA(n_components=2, data_norm=12.0, rho=1.0, random_state=0)
    >>> Z = pca.fit_transform(X)
    >>> Z.shape, pca.privacy_spent_
    ((20000, 2), ZCDP(rho=1.0))
    >>> np.round(np.abs(pca.components_), 1)
    array([[1., 0., 0.],
           [0., 1., 0.]])
    >>> np.round(pca.explained_variance_, 1)
    array([9., 1.])
    >>> pca.get_feature_names_out()
    array(['privatepca0', 'privatepca1'], dtype=object)
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        **SpectrumReleaseMixin._spectrum_constraints,
        "n_components": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="neither"),
            None,
        ],
        "whiten": ["boolean"],
    }

    def __init__(
        self,
        n_components=None,
        *,
        data_norm=None,
        bounds=None,
        center=True,
        method="tail",
        whiten=False,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
    ):
        self.n_components = n_components
        self.data_norm = data_norm
        self.bounds = bounds
        self.center = center
        self.method = method
        self.whiten = whiten
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
        self : PrivatePCA
            The fitted estimator.
        """
        return self._private_fit(X)

    def transform(self, X):
        """Project ``X`` onto the principal axes (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data. Not modified.

        Returns
        -------
        ndarray of shape (n_samples, `n_components_`)
            ``(X - mean_) @ components_.T``, each column divided by
            ``sqrt(max(explained_variance_, eigenvalue_floor_))`` when
            ``whiten``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Z = (X - self.mean_) @ self.components_.T
        if self.whiten:
            Z /= self._whitening_scale()
        return Z

    def inverse_transform(self, X):
        """Map projected data back to the feature space (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, `n_components_`)
            Projected (and, with ``whiten``, whitened) data. Not modified.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``X @ components_ + mean_`` (columns first multiplied back by the
            whitening scale when ``whiten``); exact for rows in the span of the
            components.
        """
        check_is_fitted(self)
        Z = check_array(X, dtype=np.float64)
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} features, but {type(self).__name__} has "
                f"n_components_={self.n_components_}."
            )
        if self.whiten:
            Z = Z * self._whitening_scale()
        return Z @ self.components_ + self.mean_

    @property
    def _n_features_out(self):
        """Number of output features, for ``get_feature_names_out``."""
        return self.n_components_

    def _whitening_scale(self):
        return np.sqrt(np.maximum(self.explained_variance_, self.eigenvalue_floor_))

    # -- parameters and plan --------------------------------------------------------
    #: The diagonal release's baseline is a random subspace: its axes are the
    #: private-variance ordering, PCA's simplest private answer.
    _axes_baseline = True

    def _method(self):
        # Public reason (the class docstring): for the components, GaussCov at
        # the full cost dominates SeparateCov, whose eigenvectors come from a
        # GaussCov release at half the cost. ("tail" keeps its own choice: its
        # releases are TailSensitiveCovariance's.)
        return "gauss" if self.method == "auto" else self.method

    def _build_plan(self, total, data):
        d = data.d
        k = self.n_components
        if isinstance(k, numbers.Integral) and k > d:
            raise ValueError(
                f"{type(self).__name__}: n_components={k} must be between 1 and "
                f"n_features={d}."
            )
        box_choice = self.bounds is not None and self.method in ("auto", "tail")
        if box_choice and data.n is not None:
            # PCA's own choice between the full and the per-coordinate
            # release (its margin, not the covariance estimators'): public
            # values only (n, d, the cost), before the spend; both plans cost
            # the same total. No probe of the correlations first (as
            # PrivateCovariance's): its full option, GaussCov at the box's
            # radius, loses to "tail" where rows fill little of their box
            # (docs/user_guide/decomposition.rst).
            if full_wins_for_components(total, data.n, d, self.center):
                return self._full_plan(total, data.n, d)
            plan = ReleasePlan(total, diagonal_entries(total, d, self.center, data.n))
        else:
            plan = super()._build_plan(total, data)
        if is_diagonal(plan) and self.center:
            # The axes need the variances, not the means: the joint (m, 2 s)
            # puts 1.77 times less noise on them than the diagonal release's
            # (m, s) at the same cost (0.57 of its noise sd in box units).
            return ReleasePlan(total, axes_entries(total, data.n, d))
        return plan

    def _predict_error(self, plan, data, mechanisms):
        if is_axes(plan):
            # The axes beat a random subspace while one released variance's
            # noise sd is below 1, the largest variance a box coordinate can
            # have (as for the diagonal release). Public values only.
            noise = axes_noise(mechanisms["axes"], data.d)
            sampling = None if data.n is None else variance_sampling(data.n)
            return Prediction(math.sqrt(noise), 1.0, "variance sd", sampling)
        prediction = super()._predict_error(plan, data, mechanisms)
        if self.bounds is None or is_diagonal(plan):
            return prediction
        # The full release in a box, in the components' units: the variance
        # a perturbed subspace misses is second order in the perturbation.
        # "tail" (no fixed-radius prediction) is predicted as GaussCov at the
        # box's radius, the worst its search can end at. Public values only.
        if prediction is None and self._method() == "tail":
            return full_components_prediction(plan.total, data.n, data.d, self.center)
        return squared_prediction(prediction)

    def _check_utility(self, plan, data):
        super()._check_utility(plan, data)
        if is_axes(plan) or is_diagonal(plan):
            # Public values only (the plan was chosen from n, d and the
            # cost): the axes cannot see correlations between columns, so
            # their distance from the non-private components is unknown.
            report_baseline(
                self,
                f"{type(self).__name__}: with n={data.n}, d={data.d} and "
                f"{plan.total}, the full covariance release is not predicted to "
                "beat the per-coordinate one: the components are the coordinate "
                "axes ordered by private variances (the simplest private "
                "answer), which miss any variance shared between columns. More "
                "rows or a larger budget allow the full release.",
            )

    def _release_spectrum(self, X, plan, rng):
        d = X.shape[1]
        if is_axes(plan):
            mean, spectrum, mean_sd = release_axes(X, self._box(d), plan, rng)
            self._warn_at_edge(mean, mean_sd)  # post-processing
            return box_location(mean, self.bounds, d, type(self).__name__), spectrum
        mean, spectrum = super()._release_spectrum(X, plan, rng)
        box = self._box(X.shape[1])
        if box is None or spectrum.method not in ("gauss", "separate"):
            # Without a box the releases stay exactly the covariance
            # estimators' (their components, too).
            return mean, spectrum
        # Post-processing of the release: its off-diagonal entries are
        # zeroed when, together, they are consistent with its noise (the
        # noise sd is public, in box units; the box's map scaled it by the
        # smallest h^2).
        half = box[1]
        sd = spectrum.noise_sd / float(np.min(half * half))
        return mean, threshold_spectrum(spectrum, sd, half)

    # -- the fit --------------------------------------------------------------------
    def _fit_releases(self, data, plan, rng):
        X = data.X
        n, d = X.shape
        mean, spectrum = self._release_spectrum(X, plan, rng)
        # Everything below reads released values and public ones only.
        unbiased = n / (n - 1.0)
        variances = spectrum.values * unbiased
        total = float(np.sum(variances))
        ratio = variances / total if total > 0 else np.zeros(d)
        k = select_n_components(self.n_components, ratio, d)
        floor = whitening_floor(spectrum) * unbiased
        unresolved = warn_unresolved_components(
            type(self).__name__, variances[:k], floor
        )
        resolved = np.ones(k, dtype=bool)
        resolved[unresolved] = False
        rest = variances[k:]
        return {
            "components_": flip_signs(spectrum.vectors[:, :k].T.copy()),
            "explained_variance_": variances[:k].copy(),
            "explained_variance_ratio_": ratio[:k].copy(),
            "singular_values_": np.sqrt(spectrum.values[:k] * n),
            "mean_": np.asarray(mean, dtype=np.float64).copy(),
            "n_components_": k,
            "noise_variance_": float(np.mean(rest)) if rest.size else 0.0,
            "eigenvalue_floor_": floor,
            "components_resolved_": resolved,
            "method_": spectrum.method,
            "n_samples_": n,
        }
