"""PrivateCovariance: the Dong-Liang-Yi covariance mechanisms behind one estimator.

Rows are clipped to a public l2 ball; their second moment about a public (or
privately released) center is released by GaussCov, SeparateCov or EMCov, or by
whichever of GaussCov and SeparateCov a private trace predicts to be better.
References: Dong, Liang and Yi (2022), "Differentially private covariance
revisited"; Amin et al. (2019) for EMCov; Dwork et al. (2014) for GaussCov.
"""

import numbers

import numpy as np

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.releases._box_probe import (
    is_probed,
    probe_entries,
    probe_prediction,
    release_probed,
)
from dpgauss.releases._center import (
    Spectrum,
    covariance_plan_entries,
    mean_entries,
    release_center,
    release_spectrum,
    useless_release_message,
)
from dpgauss.releases._coinpress import (
    coinpress_entries,
    learn_frame,
    release_in_frame,
)
from dpgauss.releases._covariance import filled_prediction
from dpgauss.releases._diagonal import (
    BOX_FILL,
    BoxMixin,
    box_rows,
    box_useless_message,
    full_prediction,
    is_diagonal,
    reference_norm,
    with_sampling,
)
from dpgauss.releases._energy_probe import (
    MIN_FEATURES,
    energy_entries,
    energy_prediction,
    is_energy_probed,
    release_energy_probed,
)
from dpgauss.releases._prediction import Prediction, report_useless
from dpgauss.releases._variances import (
    box_variance_entries,
    release_variances,
    variance_entries,
    variance_prediction,
)
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import Interval, StrOptions, _fit_context
from dpgauss.utils._sums import n_partial_sums

__all__ = ["PrivateCovariance", "norm_prediction"]


def norm_prediction(mechanisms, method, d, radius):
    """The release's predicted Frobenius error against the zero matrix's on
    reference rows of the ``data_norm`` ball (public values only).

    The rows the ball is taken to bound are those of real tables in their
    codebook box scaled to it: each coordinate's variance ``BOX_FILL r^2 /
    d`` (a tenth of the box's ``r^2 / d``; real columns have 0.04 to 0.27 of
    it), any two correlated 0.3, so trace ``BOX_FILL r^2`` and ``||C||_F =
    reference_norm(d) r^2 / d``. Rows filling the ball (trace ``r^2``, the
    previous reference) made the zero matrix's error 7 times larger at d =
    10 against the same noise, so fits that lost to it on every real table
    (modechoice at pure epsilon 0.5: 3.1 times its error) were predicted
    useful. Data concentrated in fewer directions, or filling the ball more,
    fare better than predicted; a ``data_norm`` far looser than the rows
    fares worse.
    """
    filled = filled_prediction(
        mechanisms, method, d, radius, trace=BOX_FILL * radius * radius
    )
    if filled is None:
        return None
    baseline = reference_norm(d) * radius * radius / d
    return Prediction(filled.error, baseline, "frobenius")


@fill_doc
class PrivateCovariance(BoxMixin, BasePrivateCovariance):
    """Differentially private covariance estimator (Dong, Liang and Yi 2022).

    Rows are clipped to a public l2 ball, their second moment about a center is
    released with calibrated noise by the chosen mechanism, and the result is
    post-processed into a symmetric positive semidefinite covariance.

    Parameters
    ----------
    method : {"auto", "gauss", "separate", "eigen", "coinpress", "diagonal"}, \
default="auto"
        The release mechanism.

        - ``"gauss"``: GaussCov, noise on the second moment; error ~ d / n.
        - ``"separate"``: SeparateCov, noisy eigenvalues (half the cost) paired
          with the eigenvectors of a noisy copy (the other half); error
          ~ d^(1/4) sqrt(trace / n) + sqrt(d) / n, far better when the trace is
          small or d is large.
        - ``"eigen"``: EMCov (Amin et al. 2019), eigenvectors one at a time by the
          exponential mechanism (exact Bingham sampling); a research baseline,
          O(d^4), 5 to 60 times less accurate than the others in the DLY
          benchmarks and often worse than the zero matrix: not for analysis.
        - ``"auto"``: spends 1/16 of the cost on the trace, then runs whichever of
          ``"gauss"`` and ``"separate"`` has the smaller predicted error.
        - ``"coinpress"``: CoinPress (Biswas, Dong, Kamath and Ullman 2020),
          ``coinpress_steps - 1`` preconditioning releases (a quarter of the
          cost) that learn a whitening frame, then GaussCov in that frame,
          clipped at a Gaussian tail radius (three quarters). For badly
          conditioned data whose scale ``data_norm`` bounds only loosely: the
          noise scales with the whitened rows, not with B.

        - ``"diagonal"``: with ``bounds`` only, the per-coordinate means and
          variances: one release of 2d numbers (the means and twice the
          centred second moments, box units: l2 sensitivity ``2.2683
          sqrt(d)/n``, under pure epsilon l-infinity ``2/n`` with the cube's
          K-norm noise; without ``center`` the d second moments, l1 ``d/n``,
          l2 ``sqrt(d)/n``), a diagonal covariance. The
          simplest private covariance with a box, far better than the full
          release at pure epsilon and small n. A variance is kept only where
          it clears a high quantile of its own noise, 0 otherwise (the zero
          matrix's answer for that column, never an overstatement).

        With ``bounds``, ``"auto"`` first compares, before the spend, the
        full release's predicted error with the diagonal release's on
        reference data (variance 0.1 per box coordinate, correlation 0.3) and
        takes the smaller. Under zCDP, where that is the full release, the
        fit probes first (:mod:`dpgauss.releases._box_probe`): GaussCov at a
        quarter of the covariance's share, then, read from the probe's
        off-diagonal entries, GaussCov again at the rest (the two averaged:
        the noise of one release at their joint cost) where the columns'
        correlations show above the noise, the per-coordinate release at the
        rest where they do not (with a warning where the probe cannot rule
        out correlations that would put that diagonal beyond 10 times the
        non-private sampling error). Under pure epsilon, where that is the full
        release and d >= 3, it probes with one scalar
        (:mod:`dpgauss.releases._energy_probe`): the Frobenius norm of the
        second moment's off-diagonal entries, Laplace noise at a tenth of
        the covariance's share, then GaussCov at the rest where that energy
        predicts the full release the better, the per-coordinate release at
        the rest otherwise. With ``epsilon`` alone every method is pure DP
        (Laplace noise).
    {privacy_parameters}
    data_norm : float, default=None
        Public l2 radius B (or give ``bounds``): each row ``x`` is clipped
        to the ball of radius B around ``location`` (around the released mean for the
        covariance pass when ``center=True``). Never taken from the data.
    center : bool, default=True
        If True, release the mean of the clipped rows (a tenth of the cost), then
        estimate the second moment of the rows around it: the covariance. If
        False, return the second moment about ``location``.
    location : array-like of shape (n_features,), default=None
        Public center of the clipping ball (the origin when None), and the point
        the second moment is taken about when ``center=False``.
    coinpress_steps : int, default=3
        ``method="coinpress"`` only: the number of releases, the final one
        included (1 is GaussCov at ``data_norm``; at most 20: each step can
        stretch a direction the data do not fill). More steps help when
        ``data_norm`` is loose or the data badly conditioned (4-5 for a bound
        1000 times the scale).
    bounds : pair of float or array-like, default=None
        Public box ``(lower, upper)``: scalars or one value per feature, the
        alternative to ``data_norm`` (give exactly one; never taken from the
        data). Each row is mapped into the unit box ``clip((x - c) / h, -1,
        1)`` (c the box's centre, h its half-widths), released there (the
        second moment about the released mean, rows clipped at ``sqrt(d)``
        about it; about the box's centre with ``center=False``), and mapped
        back by ``diag(h)`` (free): columns in different units each keep their own
        scale. Variances come back at most ``h^2``, eigenvalues at most
        ``sum(h^2)``, the location inside the box. ``location`` must be None.
        With ``method="auto"`` the fit takes the per-coordinate release
        (``"diagonal"``) where it is predicted better than the full one.
    {random_state}
    {on_useless}

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance: symmetric positive definite, the released
        eigenvalues (projected onto {>= 0, sum <= data_norm^2}) floored at
        ``eigenvalue_floor_``.
    location_ : ndarray of shape (n_features,)
        The private mean, shrunk towards ``location`` by its noise (positive-part
        James-Stein, post-processing; ``center=True``), or ``location``.
    precision_ : ndarray of shape (n_features, n_features)
        The inverse of ``covariance_``.
    eigenvalue_floor_ : float
        The smallest eigenvalue of ``covariance_``: the smaller of the standard
        deviation of one noise entry of the final release and the mean released
        eigenvalue (``2^-52 data_norm^2 / d`` if all are 0), post-processing.
        ``covariance_``, ``precision_``, ``score_samples``, ``mahalanobis`` and
        ``sample`` all describe the same Gaussian N(``location_``,
        ``covariance_``).
    method_ : str
        The mechanism used (``"auto"`` resolved to ``"gauss"`` or
        ``"separate"``, or with ``bounds`` to ``"diagonal"``, the
        per-coordinate release).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost (what was charged to ``budget``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    TailSensitiveCovariance : Also finds a clipping radius privately.
    sklearn.covariance.EmpiricalCovariance : The non-private estimator.

    Notes
    -----
    **Privacy.** The fit is rho-zCDP (``rho``, or ``epsilon`` and ``delta``) or
    epsilon-DP (``epsilon`` alone) with respect to replacing one row of ``X``; the
    number of rows n, ``data_norm``, ``location`` and every other parameter are
    public. Privacy holds for every dataset of finite rows because each row is
    clipped to the ball the noise is calibrated for (non-finite input is refused
    before any spend; see the user guide's privacy model). With B = data_norm:
    the clipped mean has sensitivity 2B/n (l2) and 2 sqrt(d) B/n (l1); the second
    moment sqrt(2) B^2/n (Frobenius) and min(d + 1, sqrt(2) d) B^2/n (l1, upper
    triangle); its sorted eigenvalues sqrt(2) B^2/n (l2) and 2 B^2/n (l1); its
    trace B^2/n; each EMCov utility u^T (nM) u moves by at most B^2. These bounds
    hold in floating point for any finite rows, 1e15 radii away included: rows are
    clipped as offsets from the center, and the rounding of the sums is added to
    each sensitivity (:mod:`dpgauss.mechanisms._releases`). The releases are
    listed in a release plan before the data are read; they compose additively
    (zCDP; pure epsilon-DP steps count epsilon^2/2) and are recorded together in
    the budget before any noise is drawn; a private choice (``"auto"``) is
    charged at its most expensive option. With ``bounds`` the releases are
    the same, of the rows mapped into the unit box (each a function of its
    own row and the public box) with B = sqrt(d), or the per-coordinate
    release of :mod:`dpgauss.releases._variances` (the 2d-vector of
    per-coordinate means and twice the centred second moments of
    :mod:`dpgauss.releases._moments`: l2 sensitivity 2.2683 sqrt(d)/n, l1
    25d/(8n), l-infinity 2/n, proven there; without ``center`` the second
    moments of :mod:`dpgauss.releases._diagonal`, l1 d/n, l2 sqrt(d)/n); the
    choice between them reads n, d and the cost only. The probed plan (zCDP)
    releases the mean, then GaussCov of the second moment about it at a
    share, then GaussCov again or the per-coordinate release at the rest: a
    choice read from the first GaussCov's released matrix (post-processing),
    charged at its more expensive option (both cost the same). The pure
    probed plan releases the mean, then the off-diagonal energy
    ``||offdiag(M)||_F`` of the second moment about it (Laplace, l1
    sensitivity ``sqrt(2) d / n`` plus rounding: ``offdiag`` is an
    orthogonal projection, so the energy moves by at most ``||M - M'||_F``;
    proof in :mod:`dpgauss.releases._energy_probe`), then GaussCov or the
    per-coordinate release at the rest, a choice read from the released
    energy and public values (post-processing), both options one release at
    the same cost. Keeping
    a released variance only above its noise, the map back by
    ``diag(h)``, the cap of the variances at ``h^2`` and of the location to
    the box are post-processing. Everything after them
    (the mean's shrinkage towards ``location``, eigen-decompositions, with
    a box the full release's off-diagonal test and the zeroing of
    coordinates within its noise (:mod:`dpgauss.releases._offdiagonal`), the
    spectral denoiser of
    :mod:`dpgauss.releases._denoise`, the isotonic projection of noisy sorted
    eigenvalues, the projection onto {PSD, trace <= B^2} or the private trace
    bound, the eigenvalue floor) is post-processing: functions of released
    values and public noise parameters only. Noise is
    drawn exactly on a lattice (see :mod:`dpgauss.mechanisms`), except EMCov's
    eigenvector steps, whose continuous sampler assumes ideal real arithmetic.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.covariance import PrivateCovariance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0], [[1.0, 0.5], [0.5, 1.0]], size=20000)
    >>> est = PrivateCovariance(rho=1.0, data_norm=6.0, random_state=0).fit(X)
    >>> np.round(est.covariance_, 1)
    array([[1. , 0.5],
           [0.5, 1. ]])
    >>> est.method_, est.privacy_spent_
    ('gauss', ZCDP(rho=1.0))

    Columns in different units, with a public box per column: at pure
    epsilon and 300 rows the fit takes the per-coordinate release.

    >>> X[:, 1] *= 1000
    >>> box = ([-5, -5000], [5, 5000])
    >>> est = PrivateCovariance(epsilon=1.0, bounds=box, random_state=0)
    >>> est.fit(X[:300]).method_
    'diagonal'
    >>> bool(np.all(np.diag(est.covariance_) <= [25, 25e6]))
    True
    """

    _parameter_constraints: dict = {
        **BasePrivateCovariance._parameter_constraints,
        "method": [
            StrOptions({"auto", "gauss", "separate", "eigen", "coinpress", "diagonal"})
        ],
        "coinpress_steps": [Interval(numbers.Integral, 1, 20, closed="both")],
        "bounds": ["array-like", None],
    }

    def __init__(
        self,
        *,
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
        """Fit the private covariance of ``X``, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateCovariance
            The fitted estimator.
        """
        return self._private_fit(X)

    def _check_params(self):
        self._check_norm_or_box()
        if self.bounds is not None and self.location is not None:
            raise ValueError(
                f"{type(self).__name__}: with bounds the clipping centre is the "
                "box's centre; leave location=None."
            )

    def _mean_entries(self, total, n, d):
        return mean_entries(total, self.center, n, d, self._radius(d))

    def _build_plan(self, total, data):
        n, d, radius = data.n, data.d, self._radius(data.d)
        if self.method == "diagonal":
            return ReleasePlan(total, variance_entries(total, d, self.center, n))
        if self.method != "coinpress":
            entries = covariance_plan_entries(
                total, d, self.method, self.center, n, radius
            )
            if self.bounds is not None and self.method == "auto":
                entries = box_variance_entries(total, d, n, self.center, entries)
                if self._probed(total, n, d, entries):
                    if isinstance(total, ZCDP):
                        entries = probe_entries(total, d, n, radius)
                    else:
                        entries = energy_entries(total, d, n, radius)
            return ReleasePlan(total, entries)
        # In the frame I / B (rows in the ball of radius B): radius 1 for the
        # first step, which clips at B, the Gaussian tail radius after it.
        entries, rest = self._mean_entries(total, n, d)
        steps = coinpress_entries(rest, self._steps, d, n, bound=radius)
        return ReleasePlan(total, entries + steps)

    def _probed(self, total, n, d, entries):
        """Whether a fit with ``bounds`` and ``method="auto"`` whose public
        choice (``entries``) is the full release takes a probed plan instead:
        with ``center``, that of :mod:`dpgauss.releases._box_probe` under
        zCDP, that of :mod:`dpgauss.releases._energy_probe` under pure epsilon
        (``d >= MIN_FEATURES`` of that module, where its scalar resolves what
        the full release would keep). The probe reads the data's
        correlations before the full release is taken (the public choice
        assumed them); where the public choice is the per-coordinate release,
        a probe would only take a share from it. Public values only."""
        full = not is_diagonal(ReleasePlan(total, entries))
        pure = isinstance(total, PureDP) and d >= MIN_FEATURES
        kinds = isinstance(total, ZCDP) or pure
        return self.center and kinds and n is not None and full

    def _predict_error(self, plan, data, mechanisms):
        """The Frobenius error predicted on reference data against the zero
        matrix's (None for "eigen" and "coinpress"): with ``bounds`` those of
        :func:`~dpgauss.releases._diagonal.reference_norm` in box units; with
        ``data_norm`` at pure epsilon the same proportions of the ball
        (:func:`norm_prediction`), under zCDP rows filling the ball evenly
        (the Gaussian paths' refusals are unchanged)."""
        d = data.d
        if is_probed(plan) or is_energy_probed(plan):
            if is_probed(plan):
                error = probe_prediction(mechanisms, d)
            else:
                error = energy_prediction(mechanisms, d)
            return with_sampling(
                Prediction(error, reference_norm(d), "frobenius"), data.n, d
            )
        if is_diagonal(plan):
            prediction = variance_prediction(mechanisms["diagonal"], d, self.center)
            return with_sampling(prediction, data.n, d)
        if self.bounds is not None:
            prediction = full_prediction(mechanisms, self.method, d)
            return with_sampling(prediction, data.n, d)
        if isinstance(plan.total, PureDP):
            return norm_prediction(mechanisms, self.method, d, self._radius(d))
        return filled_prediction(mechanisms, self.method, d, self._radius(d))

    def _check_utility(self, plan, data):
        """Refuse (or warn) when public values predict no better than zero."""
        if self.bounds is not None:
            message = box_useless_message(
                type(self).__name__, data.prediction, plan, data.n, data.d
            )
        else:
            message = useless_release_message(
                type(self).__name__,
                data.prediction,
                plan,
                data.n,
                data.d,
                float(self.data_norm),
            )
        if message is not None:
            report_useless(self, message)

    def _fit_releases(self, data, plan, rng):
        X, d = data.X, data.d
        box = self._box(d)
        if box is not None:
            X = box_rows(X, box)
        if is_probed(plan) or is_energy_probed(plan):
            release = release_probed if is_probed(plan) else release_energy_probed
            center, center_sd, result = release(X, self._radius(d), plan, rng)
            if isinstance(result, Spectrum):
                self._warn_at_edge(center, center_sd)
                fitted = self._confined_model(
                    center,
                    result.values,
                    result.vectors,
                    result.noise_sd,
                    result.cap,
                    result.measured,
                    isinstance(plan.total, PureDP),
                    box,
                )
                fitted["method_"] = "gauss"
            else:
                # The location is the second release's mean: warn from it.
                self._warn_at_edge(result.mean, result.mean_sd)
                fitted = self._diagonal_model(box, result)
                fitted["method_"] = "diagonal"
            return fitted
        if is_diagonal(plan):
            measured = release_variances(X, plan, rng, self.center)
            self._warn_at_edge(measured.mean, measured.mean_sd)
            fitted = self._diagonal_model(box, measured)
            fitted["method_"] = "diagonal"
            return fitted
        radius = self._radius(d)
        location = np.zeros(d) if box is not None else self._location(d)
        center, shift, center_sd = release_center(
            X, location, radius, self.center, plan, rng
        )
        if box is not None:  # the clipped mean of box rows lies in the box
            center = np.clip(center, -1.0, 1.0)
        self._warn_at_edge(center, center_sd)
        if self.method == "coinpress":
            return self._coinpress(X, center, plan, rng, shift, box)
        spectrum = release_spectrum(X, center, shift, radius, self.method, plan, rng)
        # Confined by the release's own diagonal (post-processing; see
        # BasePrivateCovariance._confined_model).
        fitted = self._confined_model(
            center,
            spectrum.values,
            spectrum.vectors,
            spectrum.noise_sd,
            radius * radius,
            spectrum.measured,
            isinstance(plan.total, PureDP),
            box,
        )
        fitted["method_"] = spectrum.method
        return fitted

    def _in_data_units(self, box, center, values, vectors, noise_sd, cap=None):
        """The fitted model from a spectrum released in the fit's units (box
        units with ``bounds``, mapped back by ``diag(h)``: post-processing)."""
        if box is None:
            radius = float(self.data_norm)
            cap = radius * radius if cap is None else cap
            return self._model_attributes(center, values, vectors, noise_sd, cap)
        return self._box_model(box, center, values, vectors, noise_sd)

    @property
    def _steps(self):
        return int(self.coinpress_steps)

    def _coinpress(self, X, center, plan, rng, shift=0.0, box=None):
        """CoinPress from the frame ``I / B`` (rows in the ball of radius B).

        The first step, at radius 1 in that frame, clips at B; the later ones
        at the Gaussian tail radius of the whitened rows, and the final release
        is divided by the known clipping shrinkage there (post-processing).
        """
        d = X.shape[1]
        frame = np.eye(d) / self._radius(d)
        partials = n_partial_sums(X)
        frame, radius = learn_frame(
            X, center, frame, 1.0, plan, self._steps, rng, partials
        )
        # The mean's error per coordinate, taken into the frame along the
        # identity (its average over directions: shift ||A||_F^2 / d).
        in_frame = shift * float(np.sum(frame * frame)) / d
        values, vectors, sd, cap, _ = release_in_frame(
            X,
            center,
            frame,
            radius,
            plan,
            rng,
            partials,
            correct=self._steps > 1,
            shift=in_frame,
        )
        fitted = self._in_data_units(box, center, values, vectors, sd, cap)
        fitted["method_"] = "coinpress"
        return fitted
