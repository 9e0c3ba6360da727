"""PrivateCovariance: the Dong-Liang-Yi covariance mechanisms behind one estimator.

Rows are clipped to a public l2 ball; their second moment about a public (or
privately released) centre is released by GaussCov, SeparateCov or EMCov, or by
whichever of GaussCov and SeparateCov a private trace predicts to be better.
References: Dong, Liang and Yi (2022), "Differentially private covariance
revisited"; Amin et al. (2019) for EMCov; Dwork et al. (2014) for GaussCov.
"""

import math

import numpy as np

from dpgauss.accounting import ZCDP
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.covariance._eigen import eigen_release, eigen_step_costs
from dpgauss.covariance._kernels import (
    gauss_release,
    predicted_gauss_error,
    predicted_separate_error,
    release_trace,
    separate_release,
)
from dpgauss.covariance._sums import clipped_sums
from dpgauss.utils._random import check_generator
from dpgauss.utils._sklearn_compat import StrOptions, _fit_context
from dpgauss.utils.validation import split_cost

__all__ = ["PrivateCovariance"]

#: Share of the fit's privacy cost spent on the mean when ``center=True``. The
#: covariance is then estimated around the released mean, so the mean's error
#: enters only quadratically (see ``benchmarks/bench_centering.py``).
MEAN_SHARE = 0.1

#: Share of the (non-mean) cost that ``method="auto"`` spends on the trace.
AUTO_TRACE_SHARE = 1.0 / 16.0

RELEASES = {
    "gauss": gauss_release,
    "separate": separate_release,
    "eigen": eigen_release,
}


def noise_sd(mechanism):
    """Standard deviation of one noise entry of a calibrated mechanism."""
    gaussian = type(mechanism).__name__.endswith("GaussianMechanism")
    return mechanism.scale * (1.0 if gaussian else math.sqrt(2.0))


#: SeparateCov is chosen only when predicted at least this much better: the
#: GaussCov prediction is the more reliable one (its noise norm is known in
#: distribution; the separate proxy's calibration spread is about 17% in log),
#: so near-ties go to GaussCov. Every choice of the calibration table is unchanged.
SEPARATE_MARGIN = 0.9


def choose_method(cost, n, d, radius, trace):
    """The method with the smaller predicted error: ``"gauss"`` or ``"separate"``.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The cost of the final release.
    n, d : int
        Rows and features.
    radius : float
        Clipping radius.
    trace : float
        A private estimate of the second moment's trace.

    Returns
    -------
    str
        ``"gauss"`` or ``"separate"``.
    """
    gauss = predicted_gauss_error(cost, n, d, radius)
    separate = predicted_separate_error(cost, n, d, radius, trace)
    return "separate" if separate < SEPARATE_MARGIN * gauss else "gauss"


def split_mean(total, center):
    """The mean's release (a one-entry plan, empty without centring) and the cost
    left for the covariance (``MEAN_SHARE`` of ``total`` goes to the mean)."""
    if not center:
        return [], total
    mean, rest = split_cost(total, [MEAN_SHARE, 1.0 - MEAN_SHARE])
    kind = "gaussian" if isinstance(total, ZCDP) else "laplace"
    return [(mean, f"{kind}:mean")], rest


def release_plan(total, method, center, d):
    """The fit's releases as (cost, label) pairs, in order, before any noise.

    Parameters
    ----------
    total : ZCDP or PureDP
        What the fit may spend.
    method : str
        ``"auto"``, ``"gauss"``, ``"separate"`` or ``"eigen"``.
    center : bool
        Whether a mean is released first.
    d : int
        Number of features.

    Returns
    -------
    list of (cost, str)
        The ledger entries; they compose to at most ``total``.
    """
    kind = "gaussian" if isinstance(total, ZCDP) else "laplace"
    plan, rest = split_mean(total, center)
    if method == "auto":
        trace, final = split_cost(rest, [AUTO_TRACE_SHARE, 1 - AUTO_TRACE_SHARE])
        return [*plan, (trace, f"{kind}:trace"), (final, "auto:gauss_or_separate")]
    if method == "gauss":
        return [*plan, (rest, f"{kind}:second_moment")]
    if method == "separate":
        values, vectors = split_cost(rest, [0.5, 0.5])
        eigenvectors = f"{kind}:second_moment_for_eigenvectors"
        return [*plan, (values, f"{kind}:eigenvalues"), (vectors, eigenvectors)]
    return plan + eigen_step_costs(rest, d)


class PrivateCovariance(BasePrivateCovariance):
    """Differentially private covariance estimator (Dong, Liang and Yi 2022).

    Rows are clipped to a public l2 ball, their second moment about a centre is
    released with calibrated noise by the chosen mechanism, and the result is
    post-processed into a symmetric positive semidefinite covariance.

    Parameters
    ----------
    method : {"auto", "gauss", "separate", "eigen"}, default="auto"
        The release mechanism.

        - ``"gauss"``: GaussCov, noise on the second moment; error ~ d / n.
        - ``"separate"``: SeparateCov, noisy eigenvalues (half the cost) paired
          with the eigenvectors of a noisy copy (the other half); error
          ~ d^(1/4) sqrt(trace / n) + sqrt(d) / n, far better when the trace is
          small or d is large.
        - ``"eigen"``: EMCov (Amin et al. 2019), eigenvectors one at a time by the
          exponential mechanism (exact Bingham sampling); a baseline, O(d^4).
        - ``"auto"``: spends 1/16 of the cost on the trace, then runs whichever of
          ``"gauss"`` and ``"separate"`` has the smaller predicted error.

        With ``epsilon`` alone every method is pure DP (Laplace noise).
    rho : float, default=None
        Privacy as rho-zCDP. Give exactly one of ``rho``, ``epsilon``, or
        ``epsilon`` and ``delta``.
    epsilon : float, default=None
        Privacy as pure epsilon-DP (alone) or, with ``delta``, as
        (epsilon, delta)-DP, converted to the largest rho that implies it.
    delta : float, default=None
        See ``epsilon``; ``0 < delta < 1``.
    budget : PrivacyBudget, default=None
        A shared budget charged with every release of every fit, before the data
        are read. ``None`` charges nothing but still records ``privacy_spent_``.
    data_norm : float, default=None
        Required. Public l2 radius B: each row ``x`` is clipped to the ball of
        radius B around ``location`` (around the released mean for the
        covariance pass when ``center=True``). Never taken from the data.
    center : bool, default=True
        If True, release the mean of the clipped rows (a tenth of the cost), then
        estimate the second moment of the rows around it: the covariance. If
        False, return the second moment about ``location``.
    location : array-like of shape (n_features,), default=None
        Public centre of the clipping ball (the origin when None), and the point
        the second moment is taken about when ``center=False``.
    random_state : None, int, Generator or RandomState, default=None
        Source of noise. ``None`` (operating-system entropy) is the only setting
        for a real release: anyone who knows an int seed can reproduce the noise.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance, symmetric PSD with trace at most data_norm^2.
    location_ : ndarray of shape (n_features,)
        The private mean (``center=True``) or ``location``.
    precision_ : ndarray of shape (n_features, n_features)
        Inverse of ``covariance_`` with its eigenvalues floored at
        ``eigenvalue_floor_``.
    eigenvalue_floor_ : float
        Public floor (the standard deviation of one noise entry of the final
        release), used for ``precision_`` and the log-likelihood.
    method_ : str
        The mechanism used (``"auto"`` resolved to ``"gauss"`` or ``"separate"``).
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
    trace B^2/n; each EMCov utility u^T (nM) u moves by at most B^2. The releases
    compose additively (zCDP; pure epsilon-DP steps count epsilon^2/2) and are
    recorded one by one in the budget before any noise is drawn. Everything after
    them (eigen-decompositions, sorting, the projection onto {PSD, trace <= B^2}
    or the private trace bound, the eigenvalue floor) is post-processing.
    Guarantees assume ideal real-valued noise (see :mod:`dpgauss.mechanisms`).

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
    """

    _parameter_constraints: dict = {
        **BasePrivateCovariance._parameter_constraints,
        "method": [StrOptions({"auto", "gauss", "separate", "eigen"})],
        "center": ["boolean"],
        "location": ["array-like", None],
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
        random_state=None,
    ):
        self.method = method
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.data_norm = data_norm
        self.center = center
        self.location = location
        self.random_state = random_state

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
        total, radius = self._resolve_public()
        X, centre = self._read_input(total, X)
        n, d = X.shape
        plan = self._plan(total, d)
        self._charge(total, plan)
        rng = check_generator(self.random_state)
        if self.center:
            centre = self._release_centre(X, centre, radius, plan[0][0], rng)
        M = clipped_sums(X, centre, radius)[1] / n
        estimate, mechanism = self._release(M, n, radius, plan, total, rng)
        self._set_covariance(estimate, centre, noise_sd(mechanism), radius**2)
        return self

    def _plan(self, total, d):
        return release_plan(total, self.method, bool(self.center), d)

    def _release(self, M, n, radius, plan, total, rng):
        """Run the chosen mechanism on the second moment ``M``."""
        d = M.shape[0]
        final = split_mean(total, self.center)[1]
        cap, method = None, self.method
        if method == "auto":  # the plan ends with the trace and the final release
            (trace_cost, _), (final, _) = plan[-2:]
            trace, cap = release_trace(np.trace(M), trace_cost, n, radius, rng)
            method = choose_method(final, n, d, radius, trace)
        self.method_ = method
        return RELEASES[method](M, n, radius, final, rng, trace_cap=cap)
