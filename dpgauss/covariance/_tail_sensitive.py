"""TailSensitiveCovariance: AdaptiveCov (Dong, Liang and Yi 2022, Algorithm 3).

A private radius, a private trace, a sparse-vector search for the clipping
threshold that balances clipping bias against noise, then the better of clipped
GaussCov and clipped SeparateCov. Fixes the authors' code: the Gauss noise proxy
scales with tau^2 (not tau) inside the search, the final choice is evaluated at
the chosen tau (not tau/2), and the noise proxies are explicit expected-value
formulas (see :mod:`dpgauss.covariance._kernels`) instead of an unexplained /6.
"""

import math
import numbers

import numpy as np

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.covariance._kernels import (
    predicted_gauss_error,
    predicted_separate_error,
    release_trace,
)
from dpgauss.covariance._private_covariance import (
    RELEASES,
    choose_method,
    noise_sd,
    split_mean,
)
from dpgauss.covariance._sums import (
    clipped_mean_sum,
    clipped_sums,
    row_norms,
    shifted_norms,
)
from dpgauss.mechanisms import AboveThreshold
from dpgauss.utils._random import check_generator
from dpgauss.utils._sklearn_compat import _fit_context
from dpgauss.utils.validation import split_cost

__all__ = ["TailSensitiveCovariance"]

#: Default shares of the (non-mean) cost: radius, trace, threshold search, final.
DEFAULT_SPLIT = (1 / 8, 1 / 32, 1 / 8, 23 / 32)
RADIUS_GRID = 80  # radii data_norm * 2^(-k/2), k = 0..79
#: The radius returned is this many grid steps (factor sqrt(2) each) above the
#: one where the scan stopped (the last radius judged to have fewer than T rows
#: outside). Two steps start the threshold search too high when d is small (its
#: queries are then mostly noise): measured 1.8x worse with a 100x loose bound.
STEP_BACK = 1
TAU_GRID = 120  # thresholds radius * 2^(-l/2), l = 0..119 (down to 2^-60 r)


def _as_epsilon(cost):
    """The pure epsilon of an SVT step costing ``cost`` (rho = eps^2 / 2)."""
    return cost.epsilon if isinstance(cost, PureDP) else math.sqrt(2.0 * cost.rho)


def release_plan(total, center, split):
    """The fit's releases as (cost, label) pairs, before any noise.

    Parameters
    ----------
    total : ZCDP or PureDP
        What the fit may spend.
    center : bool
        Whether a mean is released.
    split : tuple of 4 floats
        Shares of the non-mean cost: radius, trace, threshold search, final.

    Returns
    -------
    list of (cost, str)
        Mean (if any), radius (pure SVT), trace, threshold search (pure SVT),
        final release.
    """
    kind = "gaussian" if isinstance(total, ZCDP) else "laplace"
    plan, rest = split_mean(total, center)
    radius, trace, search, final = split_cost(rest, split)
    return [
        *plan,
        (PureDP(_as_epsilon(radius)), "above_threshold:radius"),
        (trace, f"{kind}:trace"),
        (PureDP(_as_epsilon(search)), "above_threshold:clip_threshold"),
        (final, "clipped_gauss_or_separate"),
    ]


def private_radius(norms, data_norm, epsilon, rng, beta=0.1):
    """Privately find a radius that only a thin tail of the norms exceeds.

    Scans the radii ``data_norm * 2^(-k/2)`` downward with AboveThreshold on
    ``count(norm > r)`` (sensitivity 1: one row moves one count) and threshold
    ``T = (4 / eps) log(K / beta)``, and returns the radius ``STEP_BACK`` grid
    steps above the one where the count was judged to exceed T. T is large
    enough that radii above every norm (count 0) rarely stop the scan however
    loose ``data_norm`` is; the about T rows beyond the result are a far tail
    that the threshold search would clip anyway.

    Parameters
    ----------
    norms : ndarray of shape (n,)
        Row norms (capped at ``data_norm``).
    data_norm : float
        Public upper bound, the start of the scan.
    epsilon : float
        Pure DP cost of the scan.
    rng : numpy.random.Generator
        Source of noise.
    beta : float, default=0.1
        Failure probability in the threshold.

    Returns
    -------
    float
        The radius.
    """
    radii = data_norm * 2.0 ** (-np.arange(RADIUS_GRID) / 2.0)
    ordered = np.sort(np.minimum(norms, data_norm))
    counts = ordered.size - np.searchsorted(ordered, radii, side="right")
    threshold = (4.0 / epsilon) * math.log(RADIUS_GRID / beta)
    svt = AboveThreshold(threshold=threshold, sensitivity=1.0, epsilon=epsilon)
    index = svt.first_above(counts.astype(float), rng)
    if index is None:
        return float(radii[-1])
    return float(radii[max(index - STEP_BACK, 0)])


def clipping_bias(norms, radius, taus):
    """``gamma(tau) = (1/n) sum (min(|y|, r)^2 - tau^2)_+`` for each tau.

    The Frobenius distance between the second moments of rows clipped at r and
    at tau is at most gamma(tau) (DLY Lemma 9); each row adds a term in
    [0, r^2 / n], so ``n gamma / r^2`` has sensitivity 1.
    """
    squared = np.sort(np.minimum(norms, radius) ** 2)
    suffix = np.concatenate([np.cumsum(squared[::-1])[::-1], [0.0]])
    above = np.searchsorted(squared, taus**2, side="right")
    count = squared.size - above
    return (suffix[above] - count * taus**2) / squared.size


def predicted_noise(cost, n, d, tau, trace):
    """min(clipped Gauss, clipped Separate) predicted error at threshold ``tau``."""
    gauss = predicted_gauss_error(cost, n, d, tau)
    separate = predicted_separate_error(cost, n, d, tau, min(trace, tau * tau))
    return min(gauss, separate)


def search_threshold(norms, radius, trace, final, n, d, epsilon, rng):
    """AboveThreshold over tau = r 2^(-l/2): first tau where bias exceeds noise.

    Query l is ``n (gamma(tau_l) - Noise(tau_l)) / r^2`` (sensitivity 1: Noise is
    public given the private trace); threshold 0. Returns the tau one grid step
    above the first query that fired (the last tau where bias < noise), or the
    smallest tau if none fired.
    """
    taus = radius * 2.0 ** (-np.arange(TAU_GRID, dtype=float) / 2.0)
    noise = np.array([predicted_noise(final, n, d, t, trace) for t in taus])
    queries = n * (clipping_bias(norms, radius, taus) - noise) / radius**2
    index = AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=epsilon).first_above(
        queries, rng
    )
    if index is None:
        return float(taus[-1])
    return float(taus[max(index - 1, 0)])


class TailSensitiveCovariance(BasePrivateCovariance):
    """Private covariance that adapts its clipping to the tail of the row norms.

    AdaptiveCov of Dong, Liang and Yi (2022): finds a radius privately (so
    ``data_norm`` may be a loose upper bound), releases the trace, searches with
    the sparse vector technique for the clipping threshold at which clipping bias
    overtakes noise, and releases the covariance of the rows clipped there with
    whichever of GaussCov and SeparateCov is predicted to be better.

    Parameters
    ----------
    rho : float, default=None
        Privacy as rho-zCDP. Give exactly one of ``rho``, ``epsilon``, or
        ``epsilon`` and ``delta``.
    epsilon : float, default=None
        Privacy as pure epsilon-DP (alone; Laplace noise throughout) or, with
        ``delta``, as (epsilon, delta)-DP converted to the largest rho.
    delta : float, default=None
        See ``epsilon``; ``0 < delta < 1``.
    budget : PrivacyBudget, default=None
        A shared budget charged with every release before the data are read.
    data_norm : float, default=None
        Required. A public upper bound on the l2 norm of ``x - location``; it may
        be loose (10x or 1000x too large): the radius actually used is found
        privately below it.
    center : bool, default=True
        If True, release the mean (a tenth of the cost) and estimate the
        covariance around it; if False, the second moment about ``location``.
    location : array-like of shape (n_features,), default=None
        Public centre (the origin when None).
    split : tuple of 4 floats, default=(1/8, 1/32, 1/8, 23/32)
        Shares of the (non-mean) cost for the radius search, the trace, the
        threshold search and the final release; positive, summing to 1. The
        radius and the search get the paper's 1/8 each: the radius scan clips
        about T = (4/eps) log(K/beta) rows, so a smaller share clips a top group
        of a few hundred rows at rho = 0.1. The trace needs little.
    random_state : None, int, Generator or RandomState, default=None
        Source of noise. ``None`` is the only setting for a real release.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance, symmetric PSD.
    location_ : ndarray of shape (n_features,)
        The private mean (``center=True``) or ``location``.
    precision_ : ndarray of shape (n_features, n_features)
        Inverse of the covariance with eigenvalues floored at
        ``eigenvalue_floor_``.
    eigenvalue_floor_ : float
        Public floor: the sd of one noise entry of the final release.
    radius_ : float
        The privately found radius.
    clip_threshold_ : float
        The privately chosen clipping threshold (at most ``radius_``).
    method_ : str
        ``"gauss"`` or ``"separate"``: the final mechanism.
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateCovariance : Fixed clipping at ``data_norm``.

    Notes
    -----
    **Privacy.** rho-zCDP (or epsilon-DP with ``epsilon`` alone) with respect to
    replacing one row; n and all parameters are public. Releases, in order, each
    paid before any noise: the mean (sensitivity 2B/n, rows clipped to the found
    radius r); the radius (AboveThreshold on counts, sensitivity 1, pure
    eps-DP, charged eps^2/2 under zCDP); the trace of the rows clipped at r
    (sensitivity r^2/n); the threshold search (AboveThreshold on
    ``n (gamma - Noise) / r^2``, sensitivity 1, the noise proxies being public
    given the private trace); and the final GaussCov or SeparateCov release on the
    rows clipped at the chosen tau (sensitivities scaled by tau^2, see
    :class:`PrivateCovariance`). The choices between branches use only released
    values (post-processing); so do the projection onto {PSD, trace <= released
    upper bound} and the eigenvalue floor.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.covariance import TailSensitiveCovariance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0], [[1.0, 0.5], [0.5, 1.0]], size=20000)
    >>> est = TailSensitiveCovariance(rho=1.0, data_norm=100.0, random_state=0)
    >>> np.round(est.fit(X).covariance_, 1)
    array([[1. , 0.5],
           [0.5, 1. ]])
    """

    _parameter_constraints: dict = {
        **BasePrivateCovariance._parameter_constraints,
        "center": ["boolean"],
        "location": ["array-like", None],
        "split": [tuple, list],
    }

    def __init__(
        self,
        *,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        data_norm=None,
        center=True,
        location=None,
        split=DEFAULT_SPLIT,
        random_state=None,
    ):
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.data_norm = data_norm
        self.center = center
        self.location = location
        self.split = split
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the tail-sensitive private covariance, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : TailSensitiveCovariance
            The fitted estimator.
        """
        total, bound = self._resolve_public()
        plan = self._plan(total, None)
        X, centre = self._read_input(total, X)
        self._charge(total, plan)
        rng = check_generator(self.random_state)
        costs = [cost for cost, _ in plan]
        if self.center:
            costs = costs[1:]
        norms = row_norms(X, centre)
        radius = private_radius(norms, bound, costs[0].epsilon, rng)
        if self.center:
            mean_sum = clipped_mean_sum(X, centre, radius, norms)
            new_centre = self._release_centre(
                X, centre, radius, plan[0][0], rng, mean_sum
            )
            norms = shifted_norms(X, centre, norms, new_centre - centre)
            centre = new_centre
        self._fit_clipped(X, centre, radius, np.minimum(norms, radius), costs[1:], rng)
        return self

    def _plan(self, total, d):
        return release_plan(total, bool(self.center), self._check_split())

    def _fit_clipped(self, X, centre, radius, norms, costs, rng):
        """Trace, threshold search and final release around ``centre``."""
        trace_cost, search_cost, final = costs
        n, d = X.shape
        trace, upper = release_trace(np.mean(norms**2), trace_cost, n, radius, rng)
        tau = search_threshold(
            norms, radius, trace, final, n, d, search_cost.epsilon, rng
        )
        M = clipped_sums(X, centre, tau)[1] / n
        self.method_ = choose_method(final, n, d, tau, min(trace, tau * tau))
        release = RELEASES[self.method_]
        estimate, mechanism = release(M, n, tau, final, rng, trace_cap=upper)
        self.radius_, self.clip_threshold_ = radius, tau
        self._set_covariance(estimate, centre, noise_sd(mechanism), tau * tau)

    def _check_split(self):
        split = tuple(self.split)
        if (
            len(split) != 4
            or not all(isinstance(s, numbers.Real) and s > 0 for s in split)
            or not math.isclose(sum(split), 1.0)
        ):
            raise ValueError(
                "split must be 4 positive shares (radius, trace, threshold search, "
                f"final) summing to 1, got {self.split!r}."
            )
        return split
