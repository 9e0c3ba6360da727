"""TailSensitiveCovariance: AdaptiveCov (Dong, Liang and Yi 2022, Algorithm 3).

A private radius, a private trace, a sparse-vector search for the clipping
threshold that balances clipping bias against noise, then the better of clipped
GaussCov and clipped SeparateCov. The plan (with the factories the check
before the spend builds) is in :mod:`dpgauss.releases._adaptive_plan`, the
releases in :mod:`dpgauss.releases._adaptive` (shared with
``PrivatePCA(method="tail")`` and ``PrivateWhitener(method="tail")``); this
module holds the estimator: its parameters, and the Gaussian model it builds
from the released spectrum.
"""

import math
import numbers

import numpy as np

from dpgauss.accounting import PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.releases._adaptive import release_adaptive
from dpgauss.releases._adaptive_plan import DEFAULT_SPLIT, adaptive_plan
from dpgauss.releases._box import check_bounds
from dpgauss.releases._diagonal import (
    BOX_FILL,
    BoxMixin,
    box_rows,
    box_useless_message,
    entry_mechanisms,
    is_diagonal,
    reference_norm,
    with_sampling,
)
from dpgauss.releases._prediction import Prediction, report_useless
from dpgauss.releases._threshold_search import predicted_noise
from dpgauss.releases._variances import (
    release_variances,
    variance_entries,
    variance_prediction,
)
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import _fit_context

__all__ = ["TailSensitiveCovariance"]

#: The raw noise of the final release over its Frobenius error once denoised
#: and projected under the released trace, taken by the prediction: measured
#: on standard Gaussian rows (d = 5 and 20, n = 50 to 2,000, pure epsilon 0.5
#: and 1), fits whose raw noise was up to 1.6 times the zero matrix's error
#: still beat it in the median; from about 3 times they did not.
DENOISED = 2.0

#: The squared clipping threshold the search is taken to end at, in units of
#: the rows' trace (the prediction without a box): the threshold search stops
#: where clipping bias overtakes the noise, at the largest norms of the bulk,
#: 2 to 3 times the trace for Gaussian rows (``E||x||^2 = tr C``) and more
#: for heavier tails. It steers the refusal only.
TAIL = 3.0


@fill_doc
class TailSensitiveCovariance(BoxMixin, BasePrivateCovariance):
    """Private covariance that adapts its clipping to the tail of the row norms.

    AdaptiveCov of Dong, Liang and Yi (2022): finds a radius privately (so
    ``data_norm`` may be a loose upper bound), releases the trace, searches with
    the sparse vector technique for the clipping threshold at which clipping bias
    overtakes noise, and releases the covariance of the rows clipped there with
    whichever of GaussCov and SeparateCov is predicted to be better.

    Parameters
    ----------
    {privacy_parameters}
    data_norm : float, default=None
        A public upper bound on the l2 norm of ``x - location`` (or give
        ``bounds``); it may be loose (10x or 1000x too large): the radius
        actually used is found privately below it.
    center : bool, default=True
        If True, release the mean (a tenth of the cost) and estimate the
        covariance either around it or, when the mean's noise would cost more
        (few rows, a mean far from ``location``), from differences of random
        pairs of rows, which need no center (see Notes); if False, the second
        moment about ``location``.
    location : array-like of shape (n_features,), default=None
        Public center (the origin when None).
    split : tuple of 4 floats, default=(1/8, 1/32, 1/8, 23/32)
        Shares of the (non-mean) cost for the radius search, the trace, the
        threshold search and the final release; positive, summing to 1. The
        radius and the search get the paper's 1/8 each: the radius scan clips
        about T = (2/eps) (log(K/beta) + 1) rows (at most n/2), so a smaller
        share clips a larger top group. The trace needs little. With
        ``center=True`` the radius share pays the two scans (or one).
    bounds : pair of float or array-like, default=None
        Public box ``(lower, upper)``: scalars or one value per feature, the
        alternative to ``data_norm`` (give exactly one; never taken from the
        data). Each row is mapped into the unit box ``clip((x - c) / h, -1,
        1)`` (c the box's centre, h its half-widths), the releases are made
        there (``data_norm`` ``sqrt(d)`` about the box's centre), and the
        result is mapped back by ``diag(h)`` (free): columns in different
        units each keep their own scale. Variances come back at most ``h^2``,
        the location inside the box. Before the spend the fit compares the
        tail-sensitive release's predicted error with the per-coordinate
        (diagonal) release's on reference data (variance 0.1 per box
        coordinate, correlation 0.3) and takes the smaller (``method_``
        ``"diagonal"``: the d means and variances, one release, see
        :class:`PrivateCovariance`). ``location`` must be None.
    {random_state}
    {on_useless}

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance: symmetric positive definite, the released
        eigenvalues floored at ``eigenvalue_floor_``, confined by the final
        release's own diagonal (each variance at most the released diagonal
        plus a high quantile of its noise; a feature within the noise while
        another is far above it 0 but for the floor, with a
        ``UtilityWarning``; see Notes).
    location_ : ndarray of shape (n_features,)
        The private mean, shrunk towards ``location`` by its noise (positive-part
        James-Stein, post-processing; ``center=True``), or ``location``.
    precision_ : ndarray of shape (n_features, n_features)
        The inverse of ``covariance_``.
    eigenvalue_floor_ : float
        The smallest eigenvalue of the released spectrum: the smaller of the sd
        of one noise entry of the final release and the mean released
        eigenvalue (``2^-52 tau^2 / d`` if all are 0). With ``bounds``, or when
        the confinement changed the estimate, it is in the units of the frame
        the model is kept in (box units, or the released per-feature bounds),
        so a feature set to 0 gets a variance far below the others' noise.
    radius_ : float
        The privately found radius (for pairs, of ``(x - x') / sqrt(2)``, whose
        second moment is the covariance); in box units with ``bounds``, where
        the diagonal release reports the box's radius ``sqrt(d)``.
    clip_radius_ : float
        The privately chosen radius the rows were clipped to (at most ``radius_``).
    centering_ : {"mean", "pairs", "none"}
        How the covariance was centered: around the released mean, by pair
        differences, or not at all (``center=False``).
    method_ : str
        ``"gauss"`` or ``"separate"``: the final mechanism; ``"diagonal"``
        for the per-coordinate release (``bounds`` only).
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
    paid before any noise:

    * the radius scans (AboveThreshold on counts of norms beyond each radius,
      sensitivity 1, pure eps-DP, charged eps^2/2 under zCDP): around
      ``location`` with ``center=False``; with ``center=True`` around
      ``location`` and of the pairs' norms (half the share each), or of the
      pairs' norms only when n is too small for two (a choice from n and the
      costs; the ledger charges the dominating option);
    * with ``center=True``, the mean (sensitivity 2r/n, rows clipped to the
      radius r around ``location``, or to ``data_norm`` after one scan);
    * the trace: of the rows clipped at r (sensitivity r^2/n) with
      ``center=False``, of the m = n // 2 pairs clipped at their radius s
      (sensitivity s^2/m) with ``center=True``;
    * the threshold search (AboveThreshold on ``m (gamma - Noise) / r^2``,
      sensitivity 1, on the rows the covariance is estimated from);
    * the final GaussCov or SeparateCov release on those rows clipped at the
      chosen tau (sensitivities scaled by tau^2 and computed for their number
      of rows, see :class:`PrivateCovariance`).

    The scans' and the search's queries are monotone (replacing one row moves
    them all in one direction), so AboveThreshold uses its monotone variant
    (query noise Lap(2/eps), proof in :class:`~dpgauss.mechanisms.AboveThreshold`).
    Everything else uses released values only (post-processing): the mean's
    shrinkage towards ``location``, the choice between centering around the
    mean and pairs, where the threshold search's grid ends (where the released
    trace shows that clipping bias exceeds the noise), the choice of GaussCov or
    SeparateCov, the spectral denoiser, the projection onto {PSD, trace <=
    released upper bound} and the eigenvalue floor. The searches' queries are
    computed exactly in integer fixed point and the sums' rounding is part of
    every sensitivity, so the bounds hold in floating point for any finite rows.
    The releases come from one release plan, recorded in the budget before any
    noise is drawn; each choice is charged at its dominating option.

    **With a box** (``bounds``) every row is first mapped into the unit box
    (a function of its own row and the public box) and the releases above
    are made on those rows with ``data_norm = sqrt(d)``, or, when it is
    predicted better (a choice from n, d and the cost only, made before the
    spend), the one per-coordinate release of :class:`PrivateCovariance`
    (the 2d-vector of means and twice the centred second moments: l2
    sensitivity 2.2683 sqrt(d)/n, l-infinity 2/n under pure epsilon, proven
    in :mod:`dpgauss.releases._moments`), each variance kept only above its
    noise. The full release's off-diagonal test and the zeroing of
    coordinates within its noise (:mod:`dpgauss.releases._offdiagonal`),
    the cap of the box-unit variances at 1, the map back by ``diag(h)`` and
    the projection of the location into the box are post-processing.

    **Confined by the released diagonal.** The final release's noise is the
    same on every entry whatever each column's scale. The diagonal of its
    noisy matrix (GaussCov's release, SeparateCov's noisy copy) measures each
    feature's second moment with public noise sd s: each variance of the
    estimate is capped at that diagonal plus K s (K the ``1 - 0.001 / d``
    quantile of one noise draw), and a feature whose released diagonal is
    below K s while the largest is at least 4 K s above it has its row and
    column set to 0, the zero matrix's answer (no positive value is within a
    bounded factor of a variance that may be 0). A ``UtilityWarning`` names
    every feature within the noise. Post-processing of released values
    (:mod:`dpgauss.releases._measured`).

    **Pairs** (``center=True``). The rows are paired by a random permutation
    drawn from the fit's generator, independently of the data, and
    ``z = x/2 - x'/2`` has second moment C/2 whatever the mean. Replacing one
    row changes at most one of the m rows z, so a release on them with the
    sensitivities of m rows is private with respect to the rows of X. The
    mean's error adds a rank-one term (Frobenius norm its squared error, d
    times the noise variance unshrunk, about twice it shrunk when the mean is at
    ``location``) that no denoising removes; the pairs double the
    noise. The covariance is estimated around the released mean when the two
    errors, predicted from released values (the pairs' trace, the radii) and
    added in quadrature, are below the pairs' predicted error; otherwise from
    the pairs (``centering_``). With one scan (small n) the pairs' radius is
    unreliable (the scan's count threshold is within its noise of m), and the
    pairs are taken only when the mean's error also exceeds the scale of the
    covariance (``tr C / sqrt(d)``, from the pairs' trace): four times it when
    that trace is precise, once when it is noisy and shows most pairs at the
    clip.

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
        "split": [tuple, list],
        "bounds": ["array-like", None],
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
        bounds=None,
        random_state=None,
        on_useless="raise",
    ):
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.data_norm = data_norm
        self.center = center
        self.location = location
        self.split = split
        self.bounds = bounds
        self.random_state = random_state
        self.on_useless = on_useless

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
        return self._private_fit(X)

    def _check_params(self):
        owner = type(self).__name__
        if self.bounds is None:
            super()._check_params()
        elif self.data_norm is not None:
            raise ValueError(
                f"{owner}: give either data_norm (a bound on the l2 norm of a "
                "row) or bounds (a box), not both."
            )
        else:
            check_bounds(self.bounds, owner=owner)
            if self.location is not None:
                raise ValueError(
                    f"{owner}: with bounds the clipping centre is the box's "
                    "centre; leave location=None."
                )
        split = tuple(self.split)
        if (
            len(split) != 4
            or not all(
                isinstance(s, numbers.Real) and not isinstance(s, bool) and s > 0
                for s in split
            )
            or not math.isclose(sum(split), 1.0)
        ):
            raise ValueError(
                "split must be 4 positive shares (radius, trace, threshold search, "
                f"final) summing to 1, got {self.split!r}."
            )

    def _build_plan(self, total, data):
        n, d = data.n, data.d
        plan = adaptive_plan(
            total, d, self.center, tuple(self.split), n, self._radius(d)
        )
        if self.bounds is None or n is None:
            return plan
        # With a box: the tail-sensitive release or the diagonal one, whichever
        # is predicted the smaller error on the reference data (public values
        # only, before the spend; both plans cost ``total``).
        diagonal = variance_entries(total, d, self.center, n)
        built = entry_mechanisms(total, diagonal)
        diag = variance_prediction(built["diagonal"], d, self.center)
        full = self._box_tail_prediction(plan, n, d)
        if not full.loses and full.error <= diag.error:
            return plan
        return ReleasePlan(total, diagonal)

    def _box_tail_prediction(self, plan, n, d):
        """The tail-sensitive release's predicted Frobenius error in box units
        on the reference data of :func:`~dpgauss.releases._diagonal.\
reference_norm` (variance ``BOX_FILL`` per coordinate, trace ``d BOX_FILL``),
        against the zero matrix's. Public values only.

        Taken at the worst threshold the search can end at, the box's radius
        ``sqrt(d)``, with no credit for the denoiser: at the small n where the
        choice matters the scans and the search go astray on tied and
        skewed columns (randhie, anes96 and fair at n = 150: errors 2 to 6
        times the predicted best case, where the diagonal release was near
        its own prediction). The mean's error is left out.
        """
        trace = d * BOX_FILL
        error = predicted_noise(plan, n, d, math.sqrt(d), trace)
        return Prediction(error, reference_norm(d), "frobenius")

    def _predict_error(self, plan, data, mechanisms):
        """The fit's Frobenius error against the zero matrix's (public values
        only).

        With ``bounds``: the diagonal release's (:func:`~dpgauss.releases.\
_diagonal.diagonal_prediction`) or :meth:`_box_tail_prediction`, whichever
        the plan holds. With ``data_norm``, per unit of the rows' squared
        clipping radius tau^2: the final release's noise at a threshold tau is
        proportional to tau^2
        (:func:`~dpgauss.releases._threshold_search.predicted_noise`), and so
        is the zero matrix's error for rows whose trace is ``tau^2 / TAIL``
        (the threshold search stops at the largest norms of the bulk, about
        TAIL times the trace) spread evenly over the d directions
        (``||C||_F = tau^2 / (TAIL sqrt(d))``, the smallest Frobenius norm a
        covariance of that trace has): their ratio depends on n, d and the
        costs alone. With ``center=True`` the better of the two centerings,
        the mean's error left out (around the mean: n rows; pairs: m = n // 2
        rows, twice the noise of ``z``, whose covariance is half). The
        spectral denoiser and the projection remove part of the raw noise: it
        is divided by :data:`DENOISED`.
        """
        n, d = data.n, data.d
        if is_diagonal(plan):
            prediction = variance_prediction(mechanisms["diagonal"], d, self.center)
            return with_sampling(prediction, n, d)
        if self.bounds is not None:
            return with_sampling(self._box_tail_prediction(plan, n, d), n, d)
        trace = 1.0 / TAIL
        error = predicted_noise(plan, n, d, 1.0, trace)
        if self.center and n // 2 >= 1:
            error = min(error, 2.0 * predicted_noise(plan, n // 2, d, 1.0, trace / 2))
        return Prediction(error / DENOISED, trace / math.sqrt(d), "frobenius")

    def _check_utility(self, plan, data):
        """Refuse (or warn) when the fit is predicted to lose to its baseline."""
        prediction = getattr(data, "prediction", None)
        if prediction is None or not prediction.loses:
            return
        if self.bounds is not None:
            message = box_useless_message(
                type(self).__name__, prediction, plan, data.n, data.d
            )
        else:
            message = (
                f"{type(self).__name__}: with n={data.n}, d={data.d} and "
                f"{plan.total}, the final release's noise is predicted to "
                "exceed the zero matrix's error at every clipping radius "
                f"({prediction.error:.3g} against {prediction.baseline:.3g} per "
                "unit of the squared radius, for rows whose trace is a third "
                "of it, spread evenly). More rows, a larger budget or a box "
                "(bounds) would help."
            )
        report_useless(self, message)

    def _fit_releases(self, data, plan, rng):
        X, d = data.X, data.d
        box = self._box(d)
        if box is not None:
            X = box_rows(X, box)
        if is_diagonal(plan):
            measured = release_variances(X, plan, rng, self.center)
            self._warn_at_edge(measured.mean, measured.mean_sd)
            fitted = self._diagonal_model(box, measured)
            radius = self._radius(d)
            fitted.update(
                method_="diagonal",
                radius_=radius,
                clip_radius_=radius,
                centering_="mean" if self.center else "none",
            )
            return fitted
        location = np.zeros(d) if box is not None else self._location(d)
        release = release_adaptive(X, location, self._radius(d), self.center, plan, rng)
        self._warn_at_edge(release.center, release.center_sd)
        fitted = self._confined_model(
            release.center,
            release.values,
            release.vectors,
            release.noise_sd,
            release.cap,
            release.measured,
            isinstance(plan.total, PureDP),
            box,
        )
        fitted.update(
            method_=release.method,
            radius_=release.radius,
            clip_radius_=release.clip_radius,
            centering_=release.centering,
        )
        return fitted
