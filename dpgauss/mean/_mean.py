"""PrivateMean: a private mean whose error is small in the data's own geometry.

Two zCDP (or pure DP) methods share one plan, so that ``method="auto"`` can
choose between them from public n and d during the fit without changing what
is charged:

* ``"coinpress"``: a covariance frame A with ``A C A^T`` about the identity
  (learned privately by CoinPress preconditioning steps on pair differences,
  or ``covariance^(-1/2)`` when the user gives a public covariance), then the
  CoinPress clipped-mean steps in that frame. The error is then about
  isotropic in the data's Mahalanobis norm (Biswas, Dong, Kamath and Ullman
  2020; Brown et al. 2021 call this covariance-aware).
* ``"plan"``: per-coordinate private scales sigma_j, then the clipped mean in
  the frame ``diag(sigma_j^(-1/2))``: the variance-aware scaling of PLAN
  (Aumueller, Lebeda, Nelson and Pagh 2024), which minimises the l2 error of
  a Gaussian-mechanism mean over diagonal frames (Cauchy-Schwarz: the error is
  ``(sum_j s_j^2 sigma_j^2)(sum_j 1/s_j^2) / (rho n^2)``, smallest at
  ``s_j^2 = 1/sigma_j``). It needs no covariance, so it suits d large
  relative to n.

See ``specs/klsu2019.md`` (section 4) and ``specs/bgsuz2021.md``.
"""

import math
import numbers
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.accounting import ApproxDP, split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.mean._frame import (
    FRAME_STEPS,
    LOG_WINDOW,
    frame_entries,
    frame_factory,
    frame_noise,
    log_scales,
    log_scales_factory,
    tukey_factory,
)
from dpgauss.mean._warnings import warn_swamped_columns
from dpgauss.releases._box import check_bounds, inside_bounds, public_box
from dpgauss.releases._box_mean import (
    box_mean_plan,
    box_predict,
    boxed_mean,
    is_adaptive,
    whole_box_warning,
)
from dpgauss.releases._coinpress import frame_inverse
from dpgauss.releases._coinpress_mean import (
    MAX_MEAN_RADIUS,
    SPECTRUM_BETA,
    coinpress_mean,
    mean_factory,
    mean_steps_for,
    pairs_frame,
    weighted_tail_radius,
)
from dpgauss.releases._hints import RangeHintsMixin
from dpgauss.releases._prediction import report_baseline, report_useless
from dpgauss.releases._private_box import (
    box_route_plan,
    is_box_route,
    release_route_box,
    warn_box_route,
)
from dpgauss.releases._range import (
    RANGE_ROWS,
    frame_count,
    frame_pairs,
    largest_scale,
)
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import Interval, StrOptions, _fit_context
from dpgauss.utils._sums import n_partial_sums

__all__ = [
    "FRAME_STEPS",
    "LOG_WINDOW",
    "PrivateMean",
    "frame_entries",
    "frame_factory",
    "frame_noise",
    "log_scales",
    "log_scales_factory",
    "tukey_factory",
]

#: ``method="auto"`` learns a covariance frame when a preconditioning step's
#: predicted spectral noise (whitened units) is below this; the identity is
#: the target, so a larger noise makes the frame worse than per-coordinate
#: scales.
FRAME_NOISE_LIMIT = 1.0
#: The plan method's weights are ``sigma_j + PLAN_FLOOR mean(sigma)``: a floor
#: against under-estimated small sds (PLAN's own is 1, which costs 36-43% of
#: noise variance on Zipf-decaying sds; 0.1-0.25 cost 1-7%).
PLAN_FLOOR = 0.1
#: With ``bounds``, the fit refuses (by default) when its error at data
#: filling the box is predicted above this multiple of the baseline's; the
#: adaptive plan's worst case is its center and windowed mean on the whole
#: box, about 1.3 (pure DP) or 1.1 (zCDP) times the baseline, which it
#: takes only where the data's spread can be resolved well inside the box.
BOX_LOSS = 1.5


@fill_doc
class PrivateMean(
    RangeHintsMixin,
    OneToOneFeatureMixin,
    TransformerMixin,
    PrivateEstimatorMixin,
    BaseEstimator,
):
    """Private mean with no bounds, accurate in the data's own geometry.

    Finds everything it needs privately (a coarse center and scales by noisy
    binary searches), learns a frame in which the rows are about isotropic or
    variance-balanced, and releases the CoinPress clipped mean in that frame.
    Optional public hints (``mean_bound``, ``cov_bounds``, a known
    ``covariance``) replace the searches they make unnecessary. As a
    transformer it centers data on the private mean.

    Parameters
    ----------
    {privacy_parameters}
    method : {{"auto", "coinpress", "plan", "tukey"}}, default="auto"
        - ``"coinpress"``: a private covariance frame (or the given
          ``covariance``), then the clipped mean in it; small error in the
          Mahalanobis norm.
        - ``"plan"``: private per-coordinate scales sigma_j, then the clipped
          mean in the frame ``diag(sigma_j^(-1/2))`` (variance-aware, PLAN);
          small l2 error when d is large relative to n (not per-coordinate:
          columns in much smaller units than the rest can be off by many of
          their own sds; standardise them first).
        - ``"tukey"``: the restricted exponential mechanism on axis-aligned
          Tukey depth with a propose-test-release check (Brown, Gaboardi,
          Smith, Ullman and Zakynthinou 2021): (epsilon, delta)-DP only (give
          ``epsilon`` and ``delta``), robust to outliers, for small n and d up
          to about 20; in the rows' coordinates, or whitened by
          ``covariance`` when given. When the private check fails, ``fit``
          raises :class:`~dpgauss.exceptions.PrivateTestFailedError`: the
          budget is spent and the estimator stays unfitted.
        - ``"auto"``: ``"coinpress"`` when a covariance is given or when the
          frame's predicted noise (public: n, d and the cost) is small enough
          for the frame to help, else ``"plan"`` (never ``"tukey"``); the box
          route (Notes) where coinpress could not measure the columns'
          scales and a private box can be found.
    covariance : array-like of shape (n_features, n_features), default=None
        A public covariance of the rows (positive definite). The frame is then
        ``covariance^(-1/2)`` and no budget is spent on it.
    mean_bound : float, default=None
        Optional public hint: ``||mu|| <= mean_bound``. Without it, the coarse
        center is found privately.
    cov_bounds : tuple of 2 floats, default=None
        Optional public hint ``(lower, upper)`` on the eigenvalues of the
        covariance; ``upper`` starts the frame. Without it (and without
        ``covariance``), the coordinates' scales are found privately.
    bounds : tuple (lower, upper), default=None
        A public box, from domain knowledge (a codebook's ranges), never from
        the data: scalars or one value per feature. Rows are mapped to the
        unit box (``(x - center) / half_width``, clipped), so features in
        different units cost nothing, and no range search is needed. The mean
        is then a per-coordinate clipped mean with noise: on the whole box
        (the simplest private answer), or, where n and the budget let a
        private center and spread narrow each coordinate's clipping window,
        in that window. ``mean_`` lies in the box. On the whole box the noise
        is set by the box, not the rows: where it would exceed 10 sampling
        errors of columns with sds of a twentieth of their half-widths (n,
        d and the budget decide), the fit warns before the spend. Excludes
        ``method`` other
        than ``"auto"``, ``covariance``, ``mean_bound`` and ``cov_bounds``;
        ``X_public`` is not used.
    range_share : float, default=0.05
        Share of the cost for each coarse-range search that runs. The scale
        search takes more (up to 0.25) where this share cannot measure the
        columns' scales at n and the cost; where no such share can, a
        ``UtilityWarning`` says the fit assumes columns of about the same
        spread (give ``cov_bounds``, or ``bounds`` for the box path).
    frame_share : float, default=0.2
        Share of the rest for the frame (none when ``covariance`` is given);
        the mean steps get the remainder.
    {public_tv_bound}
    {random_state}
    {on_useless}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private mean.
    method_ : str
        The method used (``"coinpress"``, ``"plan"``, ``"tukey"``, with
        ``bounds`` ``"box"``, or ``"private_box"``: the box route, see
        Notes).
    frame_ : ndarray of shape (n_features, n_features)
        The frame the mean was clipped in (post-processing of releases).
    mean_steps_ : int
        The number of CoinPress mean steps the mean release was split into
        (chosen from n, d and the starting radius; 0 for ``"tukey"``).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateGaussianEstimator : The mean and the covariance.

    Notes
    -----
    **Privacy.** rho-zCDP (or epsilon-DP with ``epsilon`` alone) with respect to
    replacing one row; n, every parameter and the hints (``covariance``
    included) are public. The releases, planned and charged before any noise:

    * ``range_location``, ``range_scale`` (only without the hints that make
      them unnecessary): noisy binary searches
      (:class:`~dpgauss.mechanisms._range.QuantileSearch`) on at most 50,000
      rows (and pairs ``x/2 - x'/2``) drawn independently of the data;
    * ``frame`` (not with ``covariance``): for ``coinpress``, preconditioning
      releases of the pairs' second moment, mapped by the current frame and
      clipped to a public radius (sensitivity ``sqrt(2) r^2 / m``, m pairs);
      for ``plan``, the pairs' per-coordinate second moments in the coarse
      scales, each clipped to ``[-3, 3]`` (sensitivity ``sqrt(2 d) 9 / m``);
    * ``mean``: CoinPress mean steps, each the clipped mean of the rows
      mapped by the frame (sensitivity ``2 lambda / n``, lambda the step's
      clipping radius).

    * ``tukey`` (``method="tukey"`` alone, (epsilon, delta)-DP): the
      propose-test-release check and the restricted exponential mechanism of
      :class:`~dpgauss.mean._tukey.RestrictedTukeyMechanism` (axis-aligned
      depth changes by at most 1 per replaced row; the released point is the
      correctly rounded float of an exact sample). A failed check is released
      as such (the exception), its cost charged.

    * with ``bounds`` instead of all the above: ``box_mean``, the
      per-coordinate means of the rows mapped to the unit box and clipped to
      windows of widths ``r_j <= 2`` (per-coordinate sensitivity ``r_j / n``;
      l1 or l2 sensitivity of the weighted vector in
      :mod:`dpgauss.releases._box_mean`), preceded, when n and the cost allow, by
      ``box_center`` and ``box_spread`` (the same release on the whole box,
      and of ``|z_j - m_j|`` in ``[0, 2]``) that set the windows. The
      windows, the combination and the projection into the box are
      post-processing of released values.

    ``frame`` and ``mean`` are each one charge made of sub-releases
    (:class:`~dpgauss.releases._range.Stages`) whose number is chosen from n,
    d and released values, and whose costs always add up to the charge: by
    adaptive composition with a fixed total, each costs its charge whatever
    was chosen. Which method ``"auto"`` uses depends on n, d and the cost
    only.

    **The box route** (``method="auto"`` with no hint, covariance or public
    rows; ``method_ = "private_box"``): where the scale search cannot measure
    the columns' scales at any share up to 0.25 (the frame would start as if
    the columns shared their units) and a box search at half the cost can
    reach its quantiles (n, d and the cost decide), the fit releases instead
    ``box_low`` and ``box_high`` (the q and 1 - q quantile searches of
    :class:`~dpgauss.preprocessing.PrivateBounds`, a quarter of the cost
    each), widens them into a box (post-processing) and releases the boxed
    mean above in it with the other half: the simplest private answer
    without public knowledge.

    Radii computed from releases are capped at a public 1e15 in the frame;
    frames and the way back are post-processing, and every clipped row lies
    in its ball in floating point whatever the row.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mean import PrivateMean
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([1e4, -3e4], [[4.0, 1.9], [1.9, 1.0]], 20000)
    >>> est = PrivateMean(rho=0.5, random_state=0).fit(X)
    >>> np.round(est.mean_), est.method_
    (array([ 10000., -30000.]), 'coinpress')
    >>> np.round(est.transform(X[:1]), 1)
    array([[-0.2, -0.1]])
    """

    _HINTS = "mean_bound and cov_bounds (or covariance)"

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "method": [StrOptions({"auto", "coinpress", "plan", "tukey"})],
        "covariance": ["array-like", None],
        "mean_bound": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "cov_bounds": [tuple, list, None],
        "bounds": [tuple, list, None],
        "range_share": [Interval(numbers.Real, 0, 0.5, closed="neither")],
        "frame_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "public_tv_bound": [Interval(numbers.Real, 0, 1, closed="left")],
    }

    def __init__(
        self,
        *,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        method="auto",
        covariance=None,
        mean_bound=None,
        cov_bounds=None,
        bounds=None,
        range_share=0.05,
        frame_share=0.2,
        public_tv_bound=0.0,
        random_state=None,
        on_useless="raise",
    ):
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.method = method
        self.covariance = covariance
        self.mean_bound = mean_bound
        self.cov_bounds = cov_bounds
        self.bounds = bounds
        self.range_share = range_share
        self.frame_share = frame_share
        self.public_tv_bound = public_tv_bound
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, X_public=None):
        """Fit the private mean, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows. Not modified.
        y : None
            Ignored.
        {X_public}

        Returns
        -------
        self : PrivateMean
            The fitted estimator.
        """
        return self._private_fit(X, X_public=X_public)

    def transform(self, X):
        """Center ``X`` on the private mean (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``X - mean_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X - self.mean_

    def inverse_transform(self, X):
        """Add the private mean back.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Centered data.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``X + mean_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X + self.mean_

    # -- parameters -----------------------------------------------------------
    def _privacy_total(self):
        if self.method != "tukey":
            return super()._privacy_total()
        if self.rho is not None or self.epsilon is None or self.delta is None:
            raise ValueError(
                "PrivateMean(method='tukey') is (epsilon, delta)-DP: give epsilon "
                "and delta (and not rho)."
            )
        super()._privacy_total()  # validates the numbers
        return ApproxDP(float(self.epsilon), float(self.delta))

    def _check_params(self):
        if self.bounds is not None:
            check_bounds(self.bounds, owner="PrivateMean")
            others = [self.covariance, self.mean_bound, self.cov_bounds]
            if self.method != "auto" or any(v is not None for v in others):
                raise ValueError(
                    "PrivateMean: bounds is the whole public hint; leave method at "
                    "'auto' and covariance, mean_bound and cov_bounds unset."
                )
        if self.method == "tukey" and (
            self.mean_bound is not None or self.cov_bounds is not None
        ):
            raise ValueError(
                "PrivateMean(method='tukey') needs no bounds and does not use "
                "mean_bound or cov_bounds; leave them unset."
            )
        self._check_hints()
        if self.covariance is not None:
            self._public_frame(None)

    def _public_frame(self, d):
        """``covariance^(-1/2)`` and the coordinates' sds, from the public hint."""
        C = np.array(self.covariance, dtype=np.float64, copy=True)
        if C.ndim != 2 or C.shape[0] != C.shape[1]:
            raise ValueError(
                f"covariance must be a square matrix, got shape {C.shape}."
            )
        if d is not None and C.shape[0] != d:
            raise ValueError(
                f"covariance is {C.shape[0]} x {C.shape[0]} but X has {d} features."
            )
        if not np.all(np.isfinite(C)):
            raise ValueError("covariance contains NaN or infinity.")
        if not np.allclose(C, C.T, rtol=1e-10, atol=0.0):
            raise ValueError("covariance must be symmetric.")
        top = float(np.max(np.abs(C)))
        values, vectors = (
            np.linalg.eigh(0.5 * (C + C.T) / top) if top > 0 else (np.zeros(1), None)
        )
        if not values.min() > C.shape[0] * np.finfo(np.float64).eps * values.max():
            raise ValueError("covariance must be positive definite.")
        frame = (vectors / np.sqrt(values)) @ vectors.T / math.sqrt(top)
        return frame, np.sqrt(np.diag(C))

    def _scale_known(self, data):
        return self.covariance is not None or self.cov_bounds is not None

    # -- the plan -------------------------------------------------------------
    def _box(self, d):
        """The public box's center and half-widths (``bounds``)."""
        return public_box(self.bounds, d, "PrivateMean")

    def _build_plan(self, total, data):
        n, d = data.n, data.d
        if self.bounds is not None:
            return ReleasePlan(total, box_mean_plan(total, n, d))
        if self.covariance is not None:
            self._public_frame(d)  # its shape must match X's (before any spend)
        if self.method == "tukey":
            if data.n_public:
                raise ValueError(
                    "PrivateMean(method='tukey') does not use X_public (it needs "
                    "no range); leave it unset or use another method."
                )
            tukey = Release("tukey", total, "tukey_depth", tukey_factory(d))
            return ReleasePlan(total, [tukey])
        if self._box_route(total, data):
            return box_route_plan(total, n, d, box_mean_plan)
        entries, rest = self._range_entries(total, data)
        if self.covariance is None:
            frame, rest = split_cost(rest, [self.frame_share, 1.0 - self.frame_share])
            # The method follows from n, d and the frame's cost, all public.
            method = None if n is None else self._method_for(frame, n, d)
            make = frame_factory(method, n, d)
            entries.append(Release("frame", frame, kind_of(total), make))
        entries.append(Release("mean", rest, kind_of(total), mean_factory(n, d)))
        return ReleasePlan(total, entries)

    def _box_route(self, total, data):
        # Only "auto" chooses; a given covariance makes the scales known.
        if self.method != "auto" or self.covariance is not None:
            return False
        return super()._box_route(total, data)

    def _predict_error(self, plan, data, mechanisms):
        if is_box_route(plan):
            return None  # the box is released: no public reference fill
        if self.bounds is None:
            return super()._predict_error(plan, data, mechanisms)
        prediction = box_predict(plan.total, data.n, data.d, mechanisms)
        if not is_adaptive(plan):
            # The whole-box release's noise is set by the box, not by the
            # data's spread: _check_utility warns from it for columns that
            # fill little of their box, instead of the reference fill's
            # far-from-non-private warning.
            prediction = replace(prediction, sampling=None)
        return prediction

    def _check_utility(self, plan, data):
        if is_box_route(plan):
            warn_box_route("PrivateMean", data.n, data.d, plan.total)
            return
        if self.bounds is not None:
            # The baseline plan is the baseline with weights by the box: never
            # predicted worse; the adaptive one is taken only when predicted
            # narrower, but at data that fill the box it may lose.
            prediction = data.prediction
            if prediction.error > BOX_LOSS * prediction.baseline:
                report_useless(
                    self,
                    f"PrivateMean: with n={data.n}, d={data.d} and {plan.total}, "
                    f"the boxed mean is predicted at {prediction.error:.3g} against "
                    f"{prediction.baseline:.3g} for the per-coordinate clipped mean "
                    "on the box. Give a larger budget or more rows.",
                )
            elif not is_adaptive(plan) and data.n is not None:
                message = whole_box_warning("PrivateMean", plan.total, data.n, data.d)
                if message is not None:
                    report_baseline(self, message)
        elif self.method != "tukey":  # tukey needs no range
            super()._check_utility(plan, data)

    def _coordinate_scales(self, total, data, names, share):
        # The per-coordinate plan reads the columns' scales by log_scales;
        # "auto" takes it where the frame's cost at this share is too small.
        if self.method == "plan":
            return False
        if self.method == "coinpress" or self.covariance is not None:
            return True
        # The rest after the range searches as the plan splits it.
        _, rest = self._range_costs(total, names, share)
        frame, _ = split_cost(rest, [self.frame_share, 1.0 - self.frame_share])
        return self._method_for(frame, data.n, data.d) == "coinpress"

    def _scales_unmeasured(self, plan, data):
        # The per-coordinate plan measures every column by log_scales.
        if self._resolve_method(plan, data.n, data.d) == "plan":
            return False
        return super()._scales_unmeasured(plan, data)

    def _range_search(self, name, plan, data):
        rows, columns = super()._range_search(name, plan, data)
        n, d = data.n, data.d
        if name == "range_scale" and self._resolve_method(plan, n, d) == "plan":
            # largest_scale searches one column of the pairs
            return min(frame_count(n), RANGE_ROWS), 1
        return rows, columns

    def _resolve_method(self, plan, n, d):
        """``"coinpress"`` or ``"plan"``, from public values only."""
        frame = None if self.covariance is not None else plan.cost("frame")
        return self._method_for(frame, n, d)

    def _method_for(self, frame, n, d):
        """The method at the frame's cost ``frame`` (None with ``covariance``)."""
        if self.covariance is not None or self.method == "coinpress":
            return "coinpress"
        if self.method == "plan":
            return "plan"
        return "coinpress" if frame_noise(frame, n, d) <= FRAME_NOISE_LIMIT else "plan"

    # -- the fit ----------------------------------------------------------------
    def _fit_releases(self, data, plan, rng):
        X = data.X
        n, d = X.shape
        if self.method == "tukey":
            return self._tukey(X, plan, rng)
        if is_box_route(plan):
            return self._private_box_mean(X, plan, rng)
        if self.bounds is not None:
            center, half = self._box(d)
            mean, _ = boxed_mean(X, center, half, plan, rng, "PrivateMean")
            mean = inside_bounds(mean, self.bounds, d, "PrivateMean")
            frame = np.diag(1.0 / half)
            return {"mean_": mean, "method_": "box", "frame_": frame, "mean_steps_": 1}
        method = self._resolve_method(plan, n, d)
        bounds = self._bounds()
        names = set(self._range_names(data))
        pairs = frame_pairs(X, rng)  # x/2 - x'/2: covariance C/2
        per_coordinate = method == "coinpress" and "range_scale" in names
        found = self._coarse_range(data, pairs, plan, rng, per_coordinate)
        coarse, scales = found.center, found.scales
        top = bounds[1] if bounds is not None else found.top
        if self.covariance is not None:
            frame, scales = self._public_frame(d)
        else:
            stages = plan.calibrate("frame", method=method, rows=pairs.shape[0])
            if method == "coinpress":
                frame = pairs_frame(
                    pairs, scales, top, stages.plan, FRAME_STEPS + 1, rng
                )
            else:
                if "range_scale" in names:
                    widest = largest_scale(pairs, plan, rng)
                else:
                    widest = math.sqrt(bounds[1])
                scales = log_scales(pairs, widest, stages.plan, rng)
                weights = scales + PLAN_FLOOR * float(np.mean(scales))
                # diag(w^(-1/2)), scaled so the rows' largest variance in it is
                # about 1 (frames of data at 1e-300 stay in range).
                spectrum = scales * (scales / weights)
                spectrum = spectrum / float(spectrum.max())
                frame = np.diag(np.sqrt(spectrum) / scales)
            stages.finish()
        if scales is None:  # every coordinate's sd is at most sqrt(top)
            scales = np.full(d, math.sqrt(top))
        radius = self._mean_radius(data, frame, scales, found)
        # The rows' covariance in the frame: about I (coinpress), about
        # diag(sigma_j^2 / w_j), scaled (plan).
        if method == "coinpress":
            spectrum = None
        gamma = (
            None if spectrum is None else weighted_tail_radius(spectrum, SPECTRUM_BETA)
        )
        partials = n_partial_sums(X)
        start = min(radius, MAX_MEAN_RADIUS)
        steps = mean_steps_for(plan.cost("mean"), n, d, start, partials, gamma)
        stages = plan.calibrate("mean", steps=steps, n_partials=partials)
        mean, variance, _ = coinpress_mean(
            X, frame, coarse, radius, stages.plan, steps, rng, partials, spectrum
        )
        stages.finish()
        if spectrum is not None and self.covariance is None:
            warn_swamped_columns("PrivateMean", variance, spectrum, n)
        return {
            "mean_": self._within_hints(mean),
            "method_": method,
            "frame_": frame,
            "mean_steps_": steps,
        }

    def _private_box_mean(self, X, plan, rng):
        """The box route: the private box, then the boxed mean in it."""
        (lower, upper), (center, half) = release_route_box(X, plan, rng, "PrivateMean")
        mean, _ = boxed_mean(X, center, half, plan, rng)
        mean = np.clip(mean, lower, upper)
        return {
            "mean_": mean,
            "method_": "private_box",
            "frame_": np.diag(1.0 / half),
            "mean_steps_": 1,
        }

    def _tukey(self, X, plan, rng):
        d = X.shape[1]
        rows = np.asarray(X, dtype=np.float64)
        frame = np.eye(d)
        if self.covariance is not None:
            # Whitening by a public matrix is a fixed map of each row.
            frame, _ = self._public_frame(d)
            with np.errstate(all="ignore"):
                rows = rows @ frame.T
            rows = np.nan_to_num(rows, nan=0.0)
        mech = plan.calibrate("tukey", features=d)
        center = mech.release(rows, rng)
        if self.covariance is not None:
            inverse, scale = frame_inverse(frame)
            with np.errstate(all="ignore"):
                center = (inverse @ center) / scale
        return {"mean_": center, "method_": "tukey", "frame_": frame, "mean_steps_": 0}
