"""PrivateStandardScaler: standardisation with a private mean and variance.

scikit-learn's ``StandardScaler`` in front of a private estimator reads the
rows without noise and publishes their mean and variance in the fitted
``Pipeline``; this scaler releases both privately from a public box.

**Rows into the box.** ``bounds = (lower, upper)`` is public (scalars or one
value per feature). With the public ``c = fl(lower/2 + upper/2)`` and
``h = fl(upper/2 - lower/2)`` (halves first: no overflow for any finite
bounds), every entry of a row becomes

    z_j = clip(fl(fl(x_j - c_j) / h_j), -1, 1)

(a NaN, possible only when scikit-learn's ``assume_finite`` switches validation
off, becomes 0, the center). The offset is taken before clipping (the library's
floating-point rule, :mod:`dpgauss.utils._sums`): an entry 1e12 box widths
away, or one whose offset overflows to infinity, is clipped to -1 or 1 like any
other, and no cancellation of ``clip(x) - c`` can leave the box. ``clip``
returns the value or an end point, so ``|z_j| <= 1`` holds exactly, as
computed. The second statistic is ``v_j = fl(fl(z_j^2) - 1/2)``: ``z_j^2`` lies
in [0, 1], rounding is monotone and 0, 1/2 and 1 are floats, so ``fl(z_j^2)``
is in [0, 1] and ``v_j`` in [-1/2, 1/2] exactly. Each z and v is a function of
its own row and public values only.

**Sensitivity** (neighbours replace one row; n and d public). The releases
are the means ``m = (1/n) sum_i z_i`` and ``s = (1/n) sum_i v_i`` (d-vectors).
Replacing row i by i' moves m by ``(z_i' - z_i) / n``: every coordinate by at
most 2/n, so by at most ``2 sqrt(d) / n`` in l2 and ``2 d / n`` in l1; it moves
s by ``(v_i' - v_i) / n``: every coordinate by at most 1/n, so ``sqrt(d) / n``
in l2 and ``d / n`` in l1. Both bounds are reached (a row at -1e12 replaced by
one at +1e12 moves every coordinate of m by exactly 2/n). The z rows lie in
the l2 ball of radius ``r = sqrt(d)`` and the v rows in that of radius
``sqrt(d) / 2``, so these are the clipped-mean sensitivities ``2 r / n`` of
:func:`~dpgauss.mechanisms._releases.mean_mechanism`, which adds the chunked
summation's rounding ``2 e r`` (:func:`~dpgauss.utils._sums.summation_error`:
the computed means are within ``e r`` of the exact ones, in l2, and within
``e`` per coordinate) and, for pure DP, takes ``sqrt(d)`` times the l2 bound
as the l1 one (``2 d / n + 2 e d`` and ``d / n + e d``). ``r`` is
``sqrt(d)`` rounded up by one ulp, so it is at least the real square root.
The noise is the exact lattice Gaussian (zCDP) or Laplace (pure DP) of
:mod:`dpgauss.mechanisms`.

**The joint release.** With ``with_std`` the two statistics are one release,
``moments = (m, 2 s)`` (2d entries), at the whole cost (the mean alone, with
``with_std=False``, is the ``mean`` release above): l2 sensitivity ``2.2683
sqrt(d) / n``, l1 ``25 d / (8 n)``, about 20% less noise on both than two
releases at half the cost each. The proof, with its floating-point argument,
is in :mod:`dpgauss.releases._moments`.

**Post-processing** (free): ``m`` and ``s + 1/2`` are clipped to [-1, 1] and
[0, 1]; the variance in box units, ``s + 1/2 - m^2``, is clipped to
``[floor, 1]`` (a distribution on [-1, 1] has variance at most 1), where
``floor`` is ``FLOOR_FRACTION`` of the noise scale of s (public: from n, d
and the cost; a released variance below the noise cannot be told from it
and is read as small rather than as the noise level), capped at 1, and at
least 2^-80, so ``var_ > 0`` and ``scale_ > 0`` for every noise draw;
``mean_ = clip(c + h m, lower, upper)``, ``var_ = h^2 var``, ``scale_ = h
sqrt(var)``.
"""

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.preprocessing._faint_scale import scaler_faint_warning
from dpgauss.releases._box import box_frame, check_bounds, warn_rows_at_edge
from dpgauss.releases._moments import (
    SECOND_WEIGHT,
    box_moments,
    moments_mechanism,
    weighted_moments,
)
from dpgauss.releases._prediction import report_baseline
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._leak import caller_stacklevel
from dpgauss.utils._sklearn_compat import _fit_context
from dpgauss.utils._sums import (
    n_partial_sums,
)

__all__ = ["PrivateStandardScaler"]

#: Released variances (box units) are floored at this fraction of the second
#: moment's noise scale: a variance the noise swamps is better read as small
#: than as the noise level. Measured error of scale_ relative to the rows' sd
#: at n = 150 (Student-t columns at a tenth of the box, star98): 1.0-1.15
#: times the baseline's with the whole noise scale as floor, 0.8-0.96 with
#: half; a quarter gains a little more there but loses in the log scale
#: factor of breast cancer at rho = 0.1 (benchmarks/bench_scaler.py).
FLOOR_FRACTION = 0.5
#: Smallest variance in box units (h^2): with h in [1e-140, 1e140], ``var_``
#: stays a normal positive float64.
MIN_BOX_VARIANCE = 2.0**-80


def _moment_factory(n, d, name):
    """The factory of release ``name``: ``make(cost, n_partials=None)`` is its
    :func:`moment_mechanism` (or, for ``"moments"``, :func:`moments_mechanism`)
    for a pass adding ``n_partials`` chunk sums (None: the count of a plain
    pass over n rows)."""

    def make(cost, *, n_partials=None):
        if name == "moments":
            return moments_mechanism(cost, n, d, n_partials)
        return moment_mechanism(cost, n, d, name, n_partials)

    return make


def moment_mechanism(cost, n, d, name, n_partials=None):
    """The mechanism of the ``mean`` or ``second_moment`` release.

    Rows in the unit box lie in the l2 ball of radius ``sqrt(d)`` (``mean``)
    and their centered squares in that of radius ``sqrt(d) / 2``
    (``second_moment``), so the sensitivities are ``2 sqrt(d) / n`` and
    ``sqrt(d) / n`` (l2; l1: ``2 d / n`` and ``d / n``) plus the summation's
    rounding; see the module docstring.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The release's cost (Gaussian or Laplace noise).
    n, d : int
        Rows and features (public).
    name : {"mean", "second_moment"}
        The release.
    n_partials : int, default=None
        Chunk sums added (see :func:`~dpgauss.utils._sums.n_partial_sums`).

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        The calibrated mechanism.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.preprocessing._scaler import moment_mechanism
    >>> mech = moment_mechanism(ZCDP(0.5), n=100, d=4, name="second_moment")
    >>> round(mech.sensitivity, 9)
    0.02
    """
    # sqrt(d) rounded up: at least the real root, so 2 r / n bounds the real
    # sensitivity.
    radius = float(np.nextafter(math.sqrt(d), math.inf))
    if name == "second_moment":
        radius /= 2.0
    return mean_mechanism(cost, n, d, radius, n_partials)


#: A released variance (box units) below this many times the noise floor (the
#: second-moment noise's scale) is reported: its relative error is then about
#: 1/SWAMPED or more, so scale_'s is about 1/(2 SWAMPED) = 25% or more.
SWAMPED = 2.0


def _warn_if_swamped(box_var, floor, owner, mean=None, mean_sd=0.0):
    """UtilityWarning when released variances are within a few noise levels.

    Two causes, told apart by the released mean (box units): a feature whose
    mean lies within ``1 - EDGE_SHARE`` of an edge, beyond two noise sds
    (``mean_sd``), has its rows at or beyond that bound (clipped to it where
    the bounds are too narrow, or in other units), whatever its variance;
    the other swamped features' bounds are much wider than their spread. A
    function of released and public values only (post-processing): it says
    nothing the released ``mean_`` and ``var_`` do not.
    """
    swamped = box_var <= SWAMPED * floor
    edge = np.zeros_like(swamped)
    if mean is not None:
        edge = warn_rows_at_edge(owner, mean, mean_sd, said="each of mean_ and scale_")
    wide = int(np.count_nonzero(swamped & ~edge))
    if wide:
        # With other features at the box's edge, the likeliest cause of both
        # is bounds in other units than the rows: say which way to go.
        units = (
            " Other features sit at the box's edge (the warning above): the "
            "bounds are likely in other units than the rows; check them first."
            if np.any(edge)
            else ""
        )
        warnings.warn(
            f"{owner}: the released variance of {wide} of {box_var.size} "
            f"features is within {SWAMPED:g} times the noise level, in units of the "
            "box's half-width squared: the bounds are much wider than these "
            "features' spread (or the budget is small for n), so their scale_ is "
            "off by about 25% or more. Narrow the bounds from domain knowledge or "
            f"raise the budget.{units}",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )


def variance_floor(mechanism, weight=1.0):
    """The noise scale of the second moment in box units (that of
    ``mechanism`` over ``weight``, the second statistic's weight in its
    release), capped at 1, at least :data:`MIN_BOX_VARIANCE`. Released
    variances below twice it are reported; they are floored at
    :data:`FLOOR_FRACTION` of it. The cube's K-norm noise counts by the
    Laplace scale of the same per-entry sd (its own ``scale`` is the radius's,
    far below an entry's noise)."""
    scale = float(mechanism.scale)
    if isinstance(mechanism, LInfinityMechanism):
        scale = float(mechanism.sd()) / math.sqrt(2.0)
    return min(max(scale / weight, MIN_BOX_VARIANCE), 1.0)


@fill_doc
class PrivateStandardScaler(
    OneToOneFeatureMixin, TransformerMixin, PrivateEstimatorMixin, BaseEstimator
):
    """Standardise features by a private mean and variance within public bounds.

    The private counterpart of :class:`sklearn.preprocessing.StandardScaler`:
    ``transform`` computes ``(x - mean_) / scale_``, where the per-feature mean
    and variance are released with noise, from rows clipped to a public box.
    Put it in front of other estimators in a ``Pipeline`` so that the
    standardisation does not leak the data (a ``StandardScaler`` publishes the
    exact mean and variance of the training rows).

    Parameters
    ----------
    bounds : pair of float or array-like, default=None
        Public bounds ``(lower, upper)`` on the features: scalars (the same
        for every feature) or arrays of one value per feature, with
        ``lower < upper``. Required. Rows are clipped to this box before any
        statistic is computed, so privacy holds for any input; values outside
        it bias the result (accuracy only). Choose it from domain knowledge,
        never from the private rows; a box much wider than the data costs
        accuracy (the noise scales with its width).
    with_mean : bool, default=True
        Center the data in ``transform``.
    with_std : bool, default=True
        Scale the data to unit variance in ``transform``; the variance is
        released only then (the mean too, as scikit-learn does).
    {privacy_parameters}
    {random_state}
    {on_useless}

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,) or None
        The private mean, inside the box; None when ``with_mean`` and
        ``with_std`` are both False.
    var_ : ndarray of shape (n_features,) or None
        The private variance, positive (floored); None when ``with_std`` is
        False.
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``, positive for every noise draw; None when ``with_std``
        is False.
    n_samples_seen_ : int
        The number of rows n (public in dpgauss's privacy model).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : The non-private scaler.
    PrivateMean : A private mean without bounds.

    Notes
    -----
    **Privacy.** rho-zCDP (or pure epsilon-DP with ``epsilon`` alone, Laplace
    noise; or (epsilon, delta)-DP through the largest rho that implies it)
    with respect to replacing one row. Public: ``bounds``, n, d and every
    parameter. With the box's center c and half-width h, each entry becomes
    ``z = clip((x - c) / h, -1, 1)`` (the offset is taken first, so a row
    1e12 box widths away, or an overflowing one, is clipped like any other and
    ``|z| <= 1`` holds exactly in floating point). The releases, planned and
    charged before any data are read:

    * ``moments`` (with ``with_std``): the means ``m = (1/n) sum_i z_i`` and
      ``s = (1/n) sum_i (z_i^2 - 1/2)`` as one vector ``(m, 2 s)`` at the
      whole cost. Replacing one row moves each coordinate's pair by at most
      ``2.2683 / n`` in l2 and ``25 / (8 n)`` in l1: l2 sensitivity
      ``2.2683 sqrt(d) / n`` (l1 ``25 d / (8 n)``).
    * ``mean`` (with ``with_std=False``): ``(1/n) sum_i z_i``. Replacing one
      row moves each coordinate by at most 2/n: l2 sensitivity ``2 sqrt(d) /
      n`` (l1 ``2 d / n``).

    Each sensitivity also carries the floating-point and chunked summation's
    rounding bounds (a relative 1e-12 at n = 1e6).
    ``with_mean=False, with_std=False`` releases nothing and costs nothing.
    ``mean_``, ``var_`` and ``scale_`` are post-processing: the mean is
    clipped to the box, the variance (in units of ``h^2``) to ``[floor, 1]``,
    ``floor`` half the second moment's noise scale (public) or at least
    2^-80.
    ``transform`` and ``inverse_transform`` are post-processing too: they
    spend nothing (applied to private rows, their output is of course not
    private). The proof, with the floating-point argument, is in
    :mod:`dpgauss.preprocessing._scaler`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.preprocessing import PrivateStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal([10.0, -5.0], [2.0, 0.5], size=(100_000, 2))
    >>> scaler = PrivateStandardScaler(
    ...     bounds=([0.0, -10.0], [20.0, 0.0]), rho=0.5, random_state=0
    ... ).fit(X)
    >>> np.round(scaler.mean_, 2), np.round(scaler.scale_, 2)
    (array([10., -5.]), array([2. , 0.5]))
    >>> scaler.privacy_spent_
    ZCDP(rho=0.5)
    >>> np.round(scaler.transform([[12.0, -4.0]]), 1)
    array([[1., 2.]])
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "bounds": ["array-like", None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
    }

    def __init__(
        self,
        bounds=None,
        *,
        with_mean=True,
        with_std=True,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
        on_useless="raise",
    ):
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the private mean and variance, charging ``budget`` first.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Training data; at least 2 rows, finite. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateStandardScaler
            The fitted scaler.
        """
        return self._private_fit(X)

    def transform(self, X):
        """Standardise ``X`` by the released mean and scale (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data. Not modified.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``(X - mean_) / scale_`` (without the centering when
            ``with_mean=False``, the scaling when ``with_std=False``).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        out = np.array(X, dtype=np.float64, copy=True)
        if self.with_mean:
            out -= self.mean_
        if self.with_std:
            out /= self.scale_
        return out

    def inverse_transform(self, X):
        """Map standardised data back to the original units (free).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Standardised data. Not modified.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``X * scale_ + mean_`` (each part only when it was applied).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        out = np.array(X, dtype=np.float64, copy=True)
        if self.with_std:
            out *= self.scale_
        if self.with_mean:
            out += self.mean_
        return out

    # -- parameters and plan -------------------------------------------------------
    def _check_params(self):
        check_bounds(self.bounds, owner=type(self).__name__)

    def _release_names(self):
        if self.with_std:
            return ["moments"]
        return ["mean"] if self.with_mean else []

    def _build_plan(self, total, data):
        n, d = data.n, data.d
        check_bounds(self.bounds, d, owner=type(self).__name__)
        names = self._release_names()
        kind = kind_of(total)
        # Both statistics: one joint release at the whole cost (module
        # docstring), never worse than two at half the cost each.
        size = 2 * d if names == ["moments"] else d
        return ReleasePlan(
            total,
            [
                Release(name, total, kind, make=_moment_factory(n, d, name), size=size)
                for name in names
            ],
        )

    def _check_utility(self, plan, data):
        """Warn before the spend where the box-fixed noise would put columns
        that fill little of their box far from their own mean and sd
        (:mod:`dpgauss.preprocessing._faint_scale`; public values only: n, d
        and the planned release's noise). Never refuses: the release is about
        the simplest private answer with the box."""
        releases = plan.releases()
        if not releases or data.n is None:
            return
        message = scaler_faint_warning(
            type(self).__name__,
            releases[0].build(),
            plan.total,
            data.n,
            data.d,
            with_std=self.with_std,
            weight=SECOND_WEIGHT,
        )
        if message is not None:
            report_baseline(self, message)

    # -- the fit ---------------------------------------------------------------------
    def _fit_releases(self, data, plan, rng):
        X = data.X
        n, d = X.shape
        fitted = {"mean_": None, "var_": None, "scale_": None, "n_samples_seen_": n}
        names = self._release_names()
        if not names:
            return fitted
        lower, upper = check_bounds(self.bounds, d, owner=type(self).__name__)
        center, half = box_frame(lower, upper)
        partials = n_partial_sums(X)
        first, squares = box_moments(X, center, half, second=self.with_std)
        if not self.with_std:
            mech = plan.calibrate("mean", n_partials=partials)
            m1 = np.clip(mech.randomise(first, rng), -1.0, 1.0)
            fitted["mean_"] = np.clip(center + half * m1, lower, upper)
            # Post-processing: the released mean and its public noise sd.
            owner = type(self).__name__
            warn_rows_at_edge(owner, m1, float(mech.sd(d)), said="mean_")
            return fitted
        # (m, 2 s): doubling is exact in floating point.
        mech = plan.calibrate("moments", n_partials=partials)
        noisy = np.asarray(
            mech.randomise(weighted_moments(first, squares, SECOND_WEIGHT), rng),
            dtype=np.float64,
        )
        # Everything below is post-processing of the release.
        m1 = np.clip(noisy[:d], -1.0, 1.0)
        fitted["mean_"] = np.clip(center + half * m1, lower, upper)
        m2 = np.clip(noisy[d:] / SECOND_WEIGHT + 0.5, 0.0, 1.0)
        noise = variance_floor(mech, SECOND_WEIGHT)
        floor = max(FLOOR_FRACTION * noise, MIN_BOX_VARIANCE)
        box_var = np.clip(m2 - m1 * m1, floor, 1.0)
        mean_sd = float(mech.sd(2 * d))  # public: the release's calibration
        _warn_if_swamped(box_var, noise, type(self).__name__, m1, mean_sd)
        fitted["var_"] = half * half * box_var
        fitted["scale_"] = half * np.sqrt(box_var)
        return fitted
