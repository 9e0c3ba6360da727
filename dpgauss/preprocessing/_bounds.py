"""Public bounds from a small share of a budget: a private box or norm bound.

Every estimator that clips needs a bound the data cannot have chosen:
``bounds=(lower, upper)`` or ``data_norm``. Where domain knowledge (a
codebook, a sensor's range) gives none, :class:`PrivateBounds` finds one with
the library's bound-free quantile search
(:class:`~dpgauss.mechanisms._range.QuantileSearch`): a noisy binary search
over the order of every finite float64, so it needs no bound itself.

**The plan** (public: n, d, the cost and the parameters). ``kind="box"``:
two searches of all d columns at half the cost each, for the ``q`` and ``1 -
q`` quantiles of every feature. ``kind="norm"``: one search of one column at
the whole cost, for the ``1 - q`` quantile of the rows' distances to the
public ``location``. ``q`` is as far out as the noise allows: the search's
count at the quantile must stand :data:`TAIL_SDS` noise sds above 0, so
``q = max(Q_MIN, TAIL_SDS sd / n)`` (``sd`` the search's count noise sd,
public); where that is beyond :data:`Q_MAX` the fit is refused before any
spend.

**Privacy.** Each search is a composition of 64 releases of counts whose l2
(l1) sensitivity is ``sqrt(columns)`` (``columns``) when one row is replaced,
proven exact in :mod:`dpgauss.mechanisms._range`; a distance ``||x - location||``
is a function of one row and public values. The two searches of a box cost
half each (basic composition): the fit costs exactly its ``rho`` or
``epsilon``. Everything after the searches is post-processing of released
values and public ones.

**The answer** (post-processing). A box's released quantiles ``[a, b]`` are
widened on each side by ``(Z_COVER - z_q) / (2 z_q)`` times ``b - a``
(``z_q`` the standard normal's ``1 - q`` quantile): a Gaussian column's box
reaches :data:`Z_COVER` sds either side of its mean (the rows it clips: 6 in
100,000). Heavier tails are clipped more (Student t with 3 degrees of
freedom at ``q = 1/64``: about 1%); the estimators' own error then carries
the clipping bias, as with any box. A column whose two quantiles coincide
(at least ``1 - 2 q`` of its values tied) gets a box of half-width
:data:`TIED_WIDTH` times its value's magnitude (at least 1e-6) and a warning. A
norm bound is the released quantile times :data:`NORM_MARGIN`. Every bound is
finite, and every half-width is within what the estimators accept.
"""

import warnings

import numpy as np
from sklearn.base import BaseEstimator

from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._checks import MAX_RADIUS, MIN_RADIUS
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.releases._prediction import report_useless
from dpgauss.releases._private_box import (
    Q_MIN,
    TAIL_SDS,
    TIED_WIDTH,
    box_search_entries,
    box_search_fails,
    needed_rows,
    release_private_box,
    tail_quantile,
)
from dpgauss.releases._range import search_factory
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._messages import shown_indices
from dpgauss.utils._sklearn_compat import StrOptions, _fit_context

__all__ = ["PrivateBounds"]

#: A norm bound is the released distance quantile times this.
NORM_MARGIN = 1.5


@fill_doc
class PrivateBounds(PrivateEstimatorMixin, BaseEstimator):
    """Private bounds for the estimators that clip: a box per feature or a norm bound.

    Finds, from a small and stated share of a budget, the public bounds other
    estimators need: ``bounds=(lower, upper)`` (``kind="box"``) or
    ``data_norm`` (``kind="norm"``). It reads no bound itself: the library's
    bound-free quantile search runs over every finite float64, so any scale
    and any location work (a column at 1e6 +- 1e-3, one at 0 +- 1e6). Spend
    what it costs from the same budget as the fits that use its answer, and
    give them the rest.

    Parameters
    ----------
    kind : {{"box", "norm"}}, default="box"
        ``"box"``: a box per feature (for ``bounds``). ``"norm"``: a bound on
        the rows' distance to ``location`` (for ``data_norm``).
    location : array-like of shape (n_features,), default=None
        ``kind="norm"``: the public point the distances are measured from
        (the clipping centre of the estimator that will use the bound); None
        is the origin. Ignored for a box.
    {privacy_parameters}
    {random_state}
    {on_useless}

    Attributes
    ----------
    bounds_ : tuple of two ndarrays of shape (n_features,)
        ``kind="box"``: ``(lower, upper)``, finite, ``lower < upper``; None
        for a norm bound.
    data_norm_ : float
        ``kind="norm"``: the bound on ``||x - location||``; None for a box.
    quantile_ : float
        The quantile ``q`` searched (public: from n, d and the cost): a box
        from the ``q`` and ``1 - q`` quantiles, a norm bound from the ``1 -
        q`` quantile of the distances.
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateStandardScaler : Takes ``bounds``.
    PrivateMean : Takes ``bounds``, or finds its own range without any.

    Notes
    -----
    **Privacy.** rho-zCDP (or pure epsilon-DP with ``epsilon`` alone, Laplace
    noise; or (epsilon, delta)-DP through the largest rho that implies it)
    with respect to replacing one row. Public: n, d, ``kind``, ``location``
    and the privacy parameters. A box is two quantile searches of the d
    columns at half the cost each, a norm bound one search of the distances
    at the whole cost; each search composes 64 count releases whose
    sensitivity is exact (:mod:`dpgauss.mechanisms._range`). The widening,
    the ordering and the clamping to valid half-widths are post-processing.
    The answer is as private as any release: pass it to the estimators that
    clip and compose its cost with theirs (a shared ``budget`` does).

    **Accuracy.** ``q`` is 1/64 where n allows (the count noise at most
    ``n / 256``) and up to 1/4 otherwise; below that the fit refuses before
    any spend. A Gaussian column's box reaches about 4 of its sds either
    side of its mean; heavier tails are clipped more. The box follows the
    data's own spread, not a codebook's: where domain knowledge gives
    bounds, they cost nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivacyBudget, PrivateBounds, PrivateStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal([1e6, 0.0], [1.0, 1e-3], size=(20_000, 2))
    >>> budget = PrivacyBudget(rho=1.0)
    >>> finder = PrivateBounds(rho=0.1, budget=budget, random_state=0).fit(X)
    >>> lower, upper = finder.bounds_
    >>> in_sds = lambda b: np.round((b - X.mean(0)) / X.std(0))
    >>> in_sds(lower), in_sds(upper)
    (array([-4., -4.]), array([4., 4.]))
    >>> scaler = PrivateStandardScaler(bounds=finder.bounds_, rho=0.9,
    ...                                budget=budget, random_state=0).fit(X)
    >>> np.round(scaler.scale_ / X.std(0), 2)
    array([1., 1.])
    >>> budget.spent()
    ZCDP(rho=1.0)
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "kind": [StrOptions({"box", "norm"})],
        "location": ["array-like", None],
    }

    def __init__(
        self,
        kind="box",
        *,
        location=None,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
    ):
        self.kind = kind
        self.location = location
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the bounds, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; at least 2 rows, finite. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateBounds
            The fitted finder.
        """
        return self._private_fit(X)

    # -- parameters and plan -------------------------------------------------------
    def _location(self, d):
        if self.location is None:
            return np.zeros(d)
        location = np.asarray(self.location, dtype=np.float64)
        if location.shape != (d,) or not np.all(np.isfinite(location)):
            raise ValueError(
                f"PrivateBounds: location must be {d} finite numbers (one per "
                f"feature), got shape {location.shape}."
            )
        return location

    def _columns(self, d):
        """The columns each search reads: d for a box, the distances' one."""
        return 1 if self.kind == "norm" else d

    def _build_plan(self, total, data):
        d, kind = data.d, kind_of(total)
        if self.kind == "norm":
            self._location(d)
            q = Q_MIN if data.n is None else tail_quantile(total, data.n, 1)
            search = search_factory(1, 1.0 - q)
            return ReleasePlan(total, [Release("norm", total, kind, search, size=1)])
        return ReleasePlan(total, box_search_entries(total, data.n, d))

    def _quantile(self, plan, data):
        cost = plan.releases()[0].cost
        return tail_quantile(cost, data.n, self._columns(data.d))

    def _check_utility(self, plan, data):
        if data.n is None:
            return
        columns = self._columns(data.d)
        cost = plan.releases()[0].cost
        if box_search_fails(cost, data.n, columns):
            sd = QuantileSearch(cost, columns).count_sd()
            report_useless(
                self,
                f"PrivateBounds: with n={data.n}, d={data.d} and {plan.total}, the "
                f"quantile search's counts have noise sd {sd:.3g}, so even the "
                f"quartiles are within {TAIL_SDS:g} noise sds of 0 and the search "
                f"could end anywhere. It needs at least {needed_rows(cost, columns)} "
                "rows at this budget, or a larger budget.",
            )

    def _fit_releases(self, data, plan, rng):
        X = data.X
        d = X.shape[1]
        q = self._quantile(plan, data)
        fitted = {"quantile_": q, "bounds_": None, "data_norm_": None}
        if self.kind == "norm":
            # One float per row (a Dask array is computed here: n values).
            distances = np.asarray(
                np.linalg.norm(X - self._location(d), axis=1), dtype=np.float64
            )
            # An overflowing distance is +inf, which the search cannot take:
            # the largest float is above every finite one the same way.
            distances = np.nan_to_num(distances, posinf=np.finfo(np.float64).max)
            found = float(plan.calibrate("norm").release(distances[:, None], rng)[0])
            bound = max(abs(found) * NORM_MARGIN, MIN_RADIUS)
            fitted["data_norm_"] = float(min(bound, MAX_RADIUS))
            return fitted
        lower, upper, tied, held = release_private_box(X, plan, rng, q)
        if np.any(tied):
            warnings.warn(
                f"PrivateBounds: the released {q:.3g} and {1 - q:.3g} quantiles of "
                f"feature(s) {shown_indices(tied)} coincide: most of their values "
                "appear tied at one value, so their box is that value +- "
                f"{TIED_WIDTH:g} of its magnitude and clips the rest. Give those "
                "features bounds from domain knowledge.",
                UtilityWarning,
                stacklevel=4,
            )
        if not np.all(held | tied):
            warnings.warn(
                "PrivateBounds: the box of feature(s) "
                f"{shown_indices(~(held | tied))} is "
                f"clamped: its released spread or location is beyond what a box "
                f"the estimators accept can hold (half-widths up to {MAX_RADIUS:g}, "
                "within 2^40 of them from 0), so it misses most of their rows. "
                "Rescale those features (their units) before fitting.",
                UtilityWarning,
                stacklevel=4,
            )
        fitted["bounds_"] = (lower, upper)
        return fitted
