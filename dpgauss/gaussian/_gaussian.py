"""PrivateGaussianEstimator: N(mu, Sigma) with no bounds on mu or Sigma.

Kamath, Li, Singhal and Ullman (2019) in the practical CoinPress form (Biswas,
Dong, Kamath and Ullman 2020), with a bound-free private range finder; see
``specs/klsu2019.md`` (sections 3.5, 3.8, 4 and its addendum).
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.density import GaussianDensityMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.gaussian._subsample_center import (
    center_factory,
    center_fewest,
    center_groups,
    subsample_start,
)
from dpgauss.gaussian._warnings import (
    faint_mean_warning,
    warn_unresolved_directions,
    warn_zeroed_variances,
)
from dpgauss.releases._box import (
    check_bounds,
    inside_bounds,
    public_box,
    warn_rows_at_edge,
)
from dpgauss.releases._box_gaussian import (
    box_gaussian_messages,
    box_gaussian_plan,
    box_gaussian_predict,
    from_box,
    release_box_gaussian,
)
from dpgauss.releases._center import eigenvalue_floor
from dpgauss.releases._coinpress import (
    STEP_BETA,
    frame_units,
    release_in_frame,
    tail_radius,
)
from dpgauss.releases._coinpress_mean import (
    MAX_FRAME_RADIUS,
    MAX_MEAN_RADIUS,
    MAX_MEAN_STEPS,
    coinpress_mean,
    mean_factory,
    mean_steps_for,
    pairs_covariance_entries,
    pairs_frame,
)
from dpgauss.releases._hints import RangeHintsMixin
from dpgauss.releases._prediction import report_useless
from dpgauss.releases._private_box import (
    box_route_plan,
    is_box_route,
    release_route_box,
    warn_box_route,
)
from dpgauss.releases._range import frame_pairs
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import Interval, StrOptions, _fit_context
from dpgauss.utils._sums import n_partial_sums

__all__ = ["PrivateGaussianEstimator"]


@fill_doc
class PrivateGaussianEstimator(
    RangeHintsMixin, PrivateEstimatorMixin, GaussianDensityMixin, BaseEstimator
):
    """Private Gaussian N(mu, Sigma) with no bound on the mean or the covariance.

    Learns the mean and the covariance of data whose scale and location are not
    known: everything a-priori is an optional loose hint, and without hints a
    private range finder pays a small share of the budget for a coarse center
    and scale. Then (CoinPress, the practical form of the recursive private
    preconditioning of Kamath, Li, Singhal and Ullman 2019):

    1. **Coarse range** (no hints): the private median of every coordinate and
       the private median of ``|x/2 - x'/2|`` over random pairs of rows, by a
       noisy binary search over all of float64 (no bound needed). With
       ``initial_center="subsample"`` the center is found after the frame
       instead, by subsample and aggregate (below).
    2. **Frame**: ``cov_steps - 1`` CoinPress covariance steps on the pair
       differences (which need no center) learn a whitening frame A.
    3. **Mean**: CoinPress mean steps in that frame, as many as the released
       starting radius needs (``mean_steps``).
    4. **Covariance**: the second moment of all n rows around the released mean,
       in the frame, clipped at a Gaussian tail radius, released by GaussCov
       (denoised) and mapped back. Pair differences alone would cost a factor
       sqrt(2) (they halve the sample).

    Parameters
    ----------
    {privacy_parameters}
    mean_bound : float, default=None
        Optional public hint: ``||mu|| <= mean_bound``. Without it, the coarse
        center is found privately.
    cov_bounds : tuple of 2 floats, default=None
        Optional public hint ``(lower, upper)`` on the eigenvalues of Sigma: the
        frame starts at ``I / sqrt(upper)``, and the estimate's eigenvalues are
        kept in ``[lower, upper]``. Without it, the coarse scale is found
        privately.
    bounds : tuple (lower, upper), default=None
        A public box, from domain knowledge, never from the data: scalars or
        one value per feature. It replaces both hints and the steps below:
        rows are mapped to the unit box (``(x - center) / half_width``,
        clipped), so features in different units cost nothing, and the mean
        and covariance are released there by one of three plans, chosen
        before the spend from n, d and the cost: one release of the
        per-coordinate means and second moments (a diagonal covariance);
        under zCDP, that release at a quarter of the budget, then, chosen
        from the values it released, either one GaussCov release of the
        rows centred on its means, clipped at a radius set by its released
        variances and augmented by a constant (whose last column is the
        means' offset), or the same release again; or, under pure DP, the box
        mean of
        :class:`~dpgauss.mean.PrivateMean` then the full covariance about
        it. The plan taken is the one predicted best against the
        diagonal Gaussian (per-coordinate means and variances at half the
        budget each), the simplest private answer for both; the fit refuses
        before the spend when it is predicted to lose to it (see the user
        guide). The estimate is mapped
        back (free); the mean lies in the box and each variance is at most
        the squared half-width. ``cov_steps``, ``mean_steps``,
        ``range_share`` and ``mean_share`` are not used. Excludes
        ``mean_bound``, ``cov_bounds``, ``initial_center="subsample"`` and
        ``X_public``.
    cov_steps : int, default=4
        CoinPress covariance steps, the final release included (at most 20:
        each step can stretch a direction the data do not fill, and on
        low-rank data 10 or more collapsed the estimate).
    mean_steps : int or "auto", default="auto"
        CoinPress mean steps (at most 20). ``"auto"`` chooses them from n, d,
        the cost and the released starting radius (a far mean needs more
        steps; as :class:`~dpgauss.mean.PrivateMean` does), ``mean_steps_``.
    range_share : float, default=0.05
        Share of the cost for each coarse-range search (the center, the scale;
        only those a missing hint needs run). A search stays on track when its
        count noise is far below n / 2: with the default at rho = 0.5 that
        takes n of about 320 sqrt(d) or more (a ``UtilityWarning`` says when
        it is predicted to fail with probability above 1%). The scale search
        takes more (up to 0.25) where this share cannot measure the columns'
        scales at n and the cost; where no such share can, a
        ``UtilityWarning`` says the fit assumes columns of about the same
        spread.
    mean_share : float, default=0.3
        Share of the rest for the mean steps; the covariance steps get the
        remainder (a quarter of it for the frame, three quarters for the final
        release).
    initial_center : {{"range", "subsample"}}, default="range"
        How the mean steps' first ball is found when neither ``mean_bound``
        nor public rows give it (otherwise ignored). ``"range"``: the coarse
        range's coordinate medians, with a radius of 4 scales per coordinate.
        ``"subsample"``: the rows are split at random into k groups, and the
        winsorized aggregate of :class:`~dpgauss.ensemble.SubsampleAggregate`
        (a private median, a private radius R and a clipped mean) of the
        groups' means mapped into the learned frame is the center, with
        radius ``(1 + 2 / 2.5) R`` plus the noise's tail. Same cost
        (``range_share``); k is the fewest groups that keep its searches on
        track with probability 0.99, so the groups are as large as possible
        and the radius small. With fewer rows than that, the range step runs
        instead (a ``UtilityWarning`` says so; decided from n, d and the cost
        before anything is spent). See the user guide for when it helps
        (``benchmarks/bench_gaussian_center.py``).
    {public_tv_bound}
    {random_state}
    {on_useless}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private mean.
    location_ : ndarray of shape (n_features,)
        The same as ``mean_`` (the covariance estimators' name).
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance, symmetric positive definite.
    precision_ : ndarray of shape (n_features, n_features)
        The inverse of ``covariance_``.
    eigenvalue_floor_ : float
        The smallest eigenvalue of the model's spectrum, in the units it was
        released in: with ``bounds``, box units (``covariance_`` is
        ``diag(h)`` times it, h the half-widths); with ``cov_bounds``, the
        rows' units; otherwise the frame's per-column units (``s_j`` the
        norm of row j of the inverse of ``frame_``, about column j's sd).
        Columns in very different units so keep their own precision.
    mean_steps_ : int
        The number of mean steps the ``mean`` release was split into.
    frame_ : ndarray of shape (n_features, n_features)
        The learned whitening frame A (``A covariance_ A^T`` is about the
        identity).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateCovariance : With a public bound on the rows' norms.

    Notes
    -----
    **Privacy.** rho-zCDP (or epsilon-DP with ``epsilon`` alone) with respect to
    replacing one row; n and every parameter (the hints included) are public.
    Releases, each planned and charged before any noise is drawn:

    * ``subsample_center`` (``initial_center="subsample"``, instead of
      ``range_location``): the winsorized aggregate of k group means, each
      mapped by the released frame (one row changes one group's mean; the
      aggregate is private for any k candidates:
      :mod:`dpgauss.releases._winsorized`), its three parts nested in one
      charge; the groups are drawn independently of the data and k is public;
    * ``range_location`` and ``range_scale``: noisy binary searches (64
      steps, each a Gaussian or Laplace release of d counts, l2 sensitivity
      sqrt(d), l1 d; :class:`~dpgauss.mechanisms._range.QuantileSearch`), on
      the rows and on ``|x/2 - x'/2|`` over pairs drawn independently of the
      data (one row changes one pair);
    * ``precondition_k``: second moments of the pairs, mapped by the current
      frame and clipped to a public radius (sensitivity ``sqrt(2) r^2 / m``, m
      pairs);
    * ``mean``: one charge made of the CoinPress mean steps ``mean_k``
      (:class:`~dpgauss.releases._range.Stages`), clipped means in the frame
      (sensitivity ``2 lambda / n``); their number is chosen from public
      values and a released radius and their costs always add up to the
      charge, so by adaptive composition with a fixed total it costs the
      charge whatever was chosen;
    * ``second_moment``: the rows' second moment around the released mean, in
      the frame, clipped at a public radius (``sqrt(2) r^2 / n``).

    With ``bounds`` the releases are instead those of
    :mod:`dpgauss.releases._box_gaussian`, of rows mapped into the unit box
    (each a function of its own row and the public box): ``box_moments``
    (per-coordinate means and centred squares weighted by 3/2,
    :mod:`dpgauss.releases._moments`: l1 sensitivity ``8 d / (3 n)``, l2
    ``2 sqrt(d) / n``), or, under zCDP, ``box_first`` (the same release at a
    quarter of the cost) then the choice ``box_second``, made from its
    released values, between ``second_moment`` (GaussCov of the rows ``(y,
    tau)``: ``y`` the box row less the released means, scaled into the ball
    of radius ``tau``, ``tau`` from the released variances on a public grid
    up to ``sqrt(2 d)``, rows in the ball of radius ``sqrt(2) tau``) and
    ``box_rest`` (the moments again), each at the rest of the cost
    (:mod:`dpgauss.releases._box_staged`), or
    ``box_mean`` (with ``box_center`` and ``box_spread`` when it adapts its
    windows; :mod:`dpgauss.releases._box_mean`) then ``trace`` and GaussCov
    or SeparateCov about the released mean at radius ``sqrt(d)``. The plan
    and the split read n, d and the cost only; the map back, the projection
    into the box and the cap of the variances are post-processing.

    **The box route** (no hint, no public rows, ``initial_center="range"``):
    where the scale search cannot measure the columns' scales at any share up
    to 0.25 (the frame would start as if the columns shared their units) and
    a box search at half the cost can reach its quantiles (n, d and the cost
    decide), the fit releases ``box_low`` and ``box_high`` (the quantile
    searches of :class:`~dpgauss.preprocessing.PrivateBounds`, a quarter of
    the cost each), widens them into a box (post-processing) and makes the
    ``bounds`` releases above in it with the other half.

    Each radius and frame is a function of earlier releases and public values,
    and each clipped row lies in its ball in floating point whatever the row
    (a row whose image is not finite is mapped to the center), so every
    sensitivity holds for any finite input; radii computed from releases are
    capped at public values (1e15 for the mean steps, 1e6 for the
    covariance's, in the frame). The frames, the center of the coarse box, the
    spectral denoiser, the change of coordinates and the eigenvalue floor are
    post-processing. Accuracy, not privacy, depends on the data being Gaussian.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.gaussian import PrivateGaussianEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([1e4, -3e4], [[4.0, 1.9], [1.9, 1.0]], 20000)
    >>> est = PrivateGaussianEstimator(rho=1.0, random_state=0).fit(X)
    >>> np.round(est.mean_), np.round(est.covariance_, 1)
    (array([ 10000., -30000.]), array([[4. , 1.9],
           [1.9, 1. ]]))
    """

    _PUBLIC_FRAME = True

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "mean_bound": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "public_tv_bound": [Interval(numbers.Real, 0, 1, closed="left")],
        "cov_bounds": [tuple, list, None],
        "bounds": [tuple, list, None],
        "cov_steps": [Interval(numbers.Integral, 1, 20, closed="both")],
        "mean_steps": [
            Interval(numbers.Integral, 1, MAX_MEAN_STEPS, closed="both"),
            StrOptions({"auto"}),
        ],
        "range_share": [Interval(numbers.Real, 0, 0.5, closed="neither")],
        "mean_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "initial_center": [StrOptions({"range", "subsample"})],
    }

    def __init__(
        self,
        *,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        mean_bound=None,
        cov_bounds=None,
        bounds=None,
        cov_steps=4,
        mean_steps="auto",
        range_share=0.05,
        mean_share=0.3,
        initial_center="range",
        public_tv_bound=0.0,
        random_state=None,
        on_useless="raise",
    ):
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.mean_bound = mean_bound
        self.cov_bounds = cov_bounds
        self.bounds = bounds
        self.cov_steps = cov_steps
        self.mean_steps = mean_steps
        self.range_share = range_share
        self.mean_share = mean_share
        self.initial_center = initial_center
        self.public_tv_bound = public_tv_bound
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, X_public=None):
        """Fit the private Gaussian, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows. Not modified.
        y : None
            Ignored.
        {X_public}

        Returns
        -------
        self : PrivateGaussianEstimator
            The fitted estimator.
        """
        return self._private_fit(X, X_public=X_public)

    # -- parameters ---------------------------------------------------------------
    def _check_params(self):
        self._check_hints()
        if self.bounds is not None:
            check_bounds(self.bounds, owner=type(self).__name__)
            if (
                self.mean_bound is not None
                or self.cov_bounds is not None
                or self.initial_center != "range"
            ):
                raise ValueError(
                    f"{type(self).__name__}: bounds is the whole public hint; leave "
                    "mean_bound and cov_bounds unset and initial_center='range'."
                )

    def _box(self, d):
        """The public box's center and half-widths (``bounds``)."""
        return public_box(self.bounds, d, type(self).__name__)

    def _scale_known(self, data):
        return self.bounds is not None or super()._scale_known(data)

    def _location_known(self, data):
        # The coarse range does not search the location when subsample_center
        # gives it (the scales are then searched on the pairs).
        return (
            self.bounds is not None
            or super()._location_known(data)
            or self._subsample_center(data)
        )

    def _public_scale(self, data):
        return None if self.bounds is not None else super()._public_scale(data)

    # -- the initial center by subsample and aggregate ------------------------------
    def _subsample_asked(self, data):
        return self.initial_center == "subsample" and not super()._location_known(data)

    def _subsample_center(self, data):
        """Whether ``subsample_center`` runs: asked for, no hint or public rows
        give the location, and n is at least the fewest groups that keep its
        searches on track (public values only; before a fit, for pricing, it
        is assumed to run: both starts cost the same)."""
        fallback = data.public.get("center_fallback", False)
        return self._subsample_asked(data) and not fallback

    def _prepare_fit(self, data):
        """Whether a fit asked for ``initial_center="subsample"`` takes the
        range step instead (too few rows for its searches): decided from n, d
        and the cost, all public."""
        data = super()._prepare_fit(data)
        if data.n is None or not self._subsample_asked(data):
            return data
        entries, _ = self._range_entries(self._privacy_total(), data)
        cost = next(e.cost for e in entries if e.name == "subsample_center")
        return data.derive(center_fallback=data.n < center_fewest(cost, data.d))

    def _range_names(self, data):
        names = super()._range_names(data)
        return ["subsample_center", *names] if self._subsample_center(data) else names

    def _center_groups(self, plan, n, d):
        """k: the groups of ``subsample_center`` (:func:`center_groups`)."""
        return center_groups(plan.cost("subsample_center"), n, d)

    def _range_release(self, name, cost, data):
        if name != "subsample_center":
            return super()._range_release(name, cost, data)
        return Release(name, cost, kind_of(cost), center_factory(data.n, data.d))

    def _box_route(self, total, data):
        # An explicit initial_center="subsample" keeps the frame and its
        # fallback, the range step.
        if self.initial_center == "subsample":
            return False
        return super()._box_route(total, data)

    def _check_utility(self, plan, data):
        n, d = data.n, data.d
        if is_box_route(plan):
            warn_box_route(type(self).__name__, data.n, data.d, plan.total)
            return
        if self._subsample_asked(data) and not self._subsample_center(data):
            warnings.warn(
                f"{type(self).__name__}: n={n} rows are too few for "
                f"initial_center='subsample' at {plan.total} with d={d} (its private "
                "median and radius searches would go astray with a chance above "
                "0.01 and the mean steps start from a wrong ball); the range step "
                "runs instead, at the same cost.",
                UtilityWarning,
                stacklevel=4,
            )
        if self.bounds is not None:
            self._check_box_utility(plan, data)
            return
        super()._check_utility(plan, data)

    def _predict_error(self, plan, data, mechanisms):
        """With ``bounds``: the mean's and the covariance's predicted errors
        against their baselines (:func:`~dpgauss.releases._box_gaussian.
        box_gaussian_predict`); otherwise none."""
        if self.bounds is None:
            return None
        return box_gaussian_predict(plan.total, data.n, data.d, mechanisms)

    def _check_box_utility(self, plan, data):
        """Refuse (or warn) when the mean or the covariance is predicted to
        lose to its baseline; warn when either is predicted far beyond the
        non-private error, or the mean's box-fixed noise is for columns that
        fill little of their box (public values only)."""
        owner = type(self).__name__
        useless, astray = box_gaussian_messages(
            owner, data.prediction, plan.total, data.n, data.d
        )
        if astray is None:
            astray = faint_mean_warning(owner, data.prediction, plan, data.n, data.d)
        if useless is not None:
            report_useless(self, useless)
        elif astray is not None:
            warnings.warn(astray, UtilityWarning, stacklevel=4)

    def _subsample_start(self, X, frame, plan, rng):
        """The released center and the first mean step's radius
        (:func:`~dpgauss.gaussian._subsample_center.subsample_start`)."""
        k = self._center_groups(plan, *X.shape)
        return subsample_start(X, frame, plan, rng, k)

    # -- the plan -----------------------------------------------------------------
    def _build_plan(self, total, data):
        n, d = data.n, data.d
        if self.bounds is not None:
            if data.n_public:
                raise ValueError(
                    f"{type(self).__name__}: bounds is the whole public hint; "
                    "X_public is not used with it, leave it unset."
                )
            return ReleasePlan(total, box_gaussian_plan(total, n, d))
        if self._box_route(total, data):
            return box_route_plan(total, n, d, box_gaussian_plan)
        entries, rest = self._range_entries(total, data)
        mean_share = float(self.mean_share)
        mean, cov = split_cost(rest, [mean_share, 1.0 - mean_share])
        cov_entries = pairs_covariance_entries(cov, int(self.cov_steps), n, d)
        mean_release = Release("mean", mean, kind_of(total), mean_factory(n, d))
        entries += [*cov_entries[:-1], mean_release, cov_entries[-1]]
        return ReleasePlan(total, entries)

    # -- the fit ------------------------------------------------------------------
    def _fit_releases(self, data, plan, rng):
        X = data.X
        d = X.shape[1]
        if self.bounds is not None:
            return self._fit_box(X, plan, rng, self._box(d))
        if is_box_route(plan):
            bounds, box = release_route_box(X, plan, rng, type(self).__name__)
            return self._fit_box(X, plan, rng, box, bounds=bounds)
        pairs = frame_pairs(X, rng)  # x/2 - x'/2: covariance C/2
        bounds = self._bounds()
        found = self._coarse_range(data, pairs, plan, rng, bounds is None)
        coarse, scale = found.center, found.scales
        top = bounds[1] if bounds is not None and found.frame is None else found.top
        frame = pairs_frame(
            pairs, scale, top, plan, int(self.cov_steps), rng, found.frame
        )
        gamma = tail_radius(d, STEP_BETA)
        if scale is None:  # every coordinate's sd is at most sqrt(top)
            scale = np.full(d, math.sqrt(top))
        if self._subsample_center(data):
            coarse, radius = self._subsample_start(X, frame, plan, rng)
        else:
            radius = self._mean_radius(data, frame, scale, found)
        partials = n_partial_sums(X)
        cost = plan.cost("mean")
        if self.mean_steps == "auto":
            start = min(radius, MAX_MEAN_RADIUS)
            steps = mean_steps_for(cost, X.shape[0], d, start, partials)
        else:
            steps = int(self.mean_steps)
        stages = plan.calibrate("mean", steps=steps, n_partials=partials)
        mean, variance, error = coinpress_mean(
            X, frame, coarse, radius, stages.plan, steps, rng, partials
        )
        stages.finish()
        final = min(gamma + error, MAX_FRAME_RADIUS)
        # The spectrum in the frame's per-column units (released values), so
        # mixed units keep their precision; cov_bounds bound the spectrum in
        # the rows' units, which then stay.
        units = frame_units(frame) if bounds is None else None
        values, vectors, sd, cap, units = release_in_frame(
            X, mean, frame, final, plan, rng, partials, True, variance, units
        )
        if bounds is not None:
            values = np.clip(values, bounds[0], bounds[1])
        floor = eigenvalue_floor(values, sd, cap)
        warn_unresolved_directions(type(self).__name__, values, floor)
        mean = self._within_hints(mean)
        fitted = self._gaussian_attributes(mean, values, vectors, floor, units)
        fitted.update(mean_=fitted["location_"].copy(), frame_=frame, mean_steps_=steps)
        return fitted

    def _fit_box(self, X, plan, rng, box, bounds=None):
        """The releases in the box ``(center, half)``
        (:mod:`dpgauss.releases._box_gaussian`), mapped back
        (post-processing); ``bounds``: the released box of the box route
        (``self.bounds`` otherwise)."""
        center, half = box
        released = release_box_gaussian(X, center, half, plan, rng)
        mean, values, vectors, floor, mean_sd = released
        # Post-processing: the released box-unit mean and its public noise sd.
        warn_rows_at_edge(type(self).__name__, mean, mean_sd, said="the fit")
        warn_zeroed_variances(type(self).__name__, values, vectors)
        mean, values, vectors, floor, scale = from_box(
            mean, values, vectors, floor, center, half
        )
        bounds = self.bounds if bounds is None else bounds
        mean = inside_bounds(mean, bounds, X.shape[1], type(self).__name__)
        # A public change of units: the model is diag(scale) times its Gaussian.
        fitted = self._gaussian_attributes(mean, values, vectors, floor, scale)
        fitted.update(
            mean_=fitted["location_"].copy(), frame_=np.diag(1.0 / half), mean_steps_=1
        )
        return fitted
