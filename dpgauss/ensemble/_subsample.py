"""SubsampleAggregate: a private version of any estimator (subsample and aggregate).

The rows are split at random into k groups; a clone of a non-private
scikit-learn estimator is fitted on each group; a statistic (a vector) is read
from each fit; the k statistics (the *candidates*) are aggregated privately.
Replacing one row changes one group, hence at most one candidate, whatever the
estimator does: privacy rests on the group structure alone, and each
aggregator below is private for *any* k candidates (the proofs never look at
how a candidate was computed).

Aggregators
-----------
``"winsorized"`` (default; zCDP, or pure DP for ``epsilon`` alone). A private
coordinate-wise median of the candidates (bound-free binary search over the
float64 order, :class:`~dpgauss.mechanisms._range.QuantileSearch`), a private
quantile of their distances to it (the clipping radius R; or a public
``radius``), then the mean of the candidates clipped to the ball of radius R
around the median plus Gaussian (Laplace) noise. Each step treats the
candidates as k rows of which one changes: the median and the quantile are the
library's audited searches, and the clipped mean has l2 sensitivity 2R/k plus
the summation term (:func:`~dpgauss.mechanisms._releases.mean_mechanism`).

``"populous"`` ((epsilon, delta)-DP). Ashtiani and Liaw's populous mean
(Algorithm 1) with our tightened constants and exact arithmetic: see
:mod:`dpgauss.ensemble._populous` for the proof. Its neighbour radius is public
(``radius``) or chosen by sparse vector over a geometric grid.

The per-group fits are not private and are never stored on the fitted
estimator (unlike :class:`sklearn.ensemble.BaggingRegressor`'s
``estimators_``): only released values are.
"""

import gc
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.utils import check_consistent_length
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from dpgauss.accounting import ZCDP, ApproxDP, PureDP, approx_to_zcdp, split_cost
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.ensemble import _populous as populous
from dpgauss.ensemble import _psd as psd
from dpgauss.exceptions import PrivateTestFailedError, UtilityWarning
from dpgauss.mechanisms import AboveThreshold, GaussianMechanism
from dpgauss.mechanisms._checks import (
    MAX_RADIUS,
    MIN_RADIUS,
    calibration_error,
    check_noise_scale,
)
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.releases._winsorized import (
    _MAX_FLOAT,
    MIN_GROUPS,
    WINSOR_RISK,
    winsorized_entries,
    winsorized_mean,
    winsorized_min_groups,
)
from dpgauss.utils._sklearn_compat import HasMethods, Interval, StrOptions

__all__ = ["SubsampleAggregate"]

#: "auto" groups have about this many rows each (at least ``AUTO_ROWS_PER_FEATURE``
#: per feature).
AUTO_GROUP_ROWS = 25
AUTO_ROWS_PER_FEATURE = 5
#: ... and for a classifier (``is_classifier``), whose small-sample fits are
#: biased: LogisticRegression at n = 1e5, d = 5, epsilon 1, delta 1e-6 (2 seeds)
#: was 0.51 from the truth with groups of 25 rows, 0.27 with 50, 0.13 with 100.
AUTO_CLASSIFIER_ROWS = 100
AUTO_CLASSIFIER_ROWS_PER_FEATURE = 10
#: Fewest rows per group.
MIN_GROUP_ROWS = 2
#: Populous mean: test threshold T and ramp (a, b) (spec Section 12.1).
THRESHOLD, RAMP = 0.9, (0.55, 0.75)
#: Populous epsilon shares: sparse vector (radius="auto") and the test; delta is
#: split evenly between the test and the mask.
SVT_SHARE, TEST_SHARE = 0.1, 0.2
#: Populous groups at most (exact neighbour counting is O(k^2 p)).
MAX_POPULOUS_GROUPS = 10_000
#: The PSD space: groups at most (O(k^2 q^3) certified tests) and "auto" rows
#: per group per matrix dimension (Thompson distances of ~0.5 between group
#: covariances: the bound's (t^2 - 1) t^2 s / n is flat for s from 50 q to
#: 100 q and grows on either side).
MAX_PSD_GROUPS, PSD_ROWS_PER_DIM = 5_000, 50
#: Sparse vector's radius grid: 2^(j/2), |j| <= 2 * GRID_OCTAVES.
GRID_OCTAVES = 100
#: The PSD space's radius grid starts at 2^-PSD_GRID_LOW (then as above, up to
#: the largest radius the release is calibrated for at this k).
PSD_GRID_LOW = 10
#: Largest useful shape noise: sd times the matrix size q, in trace units (the
#: average eigenvalue of the trace-normalised matrix is 1 / q).
PSD_USEFUL = 0.5


def _attribute_names(statistic):
    if isinstance(statistic, str):
        return (statistic,)
    if isinstance(statistic, (tuple, list)) and all(
        isinstance(s, str) for s in statistic
    ):
        return tuple(statistic)
    return None


class SubsampleAggregate(PrivateEstimatorMixin, BaseEstimator):
    """A differentially private version of any estimator, by subsample and aggregate.

    Parameters
    ----------
    estimator : estimator object
        A (non-private) scikit-learn estimator; a clone is fitted on each group.
    statistic : str, tuple of str or callable, default="coef\\_"
        What each group's fit contributes: a fitted attribute, several
        (concatenated), or ``statistic(fitted_estimator) -> array``.
    aggregator : {"winsorized", "populous"}, default="winsorized"
        How the k group statistics are aggregated (see Notes).
    space : {"euclidean", "psd"}, default="euclidean"
        Where the statistic lives. "psd": a symmetric positive semi-definite
        matrix (a covariance), compared by Ashtiani and Liaw's relative
        semimetric (no bound on its size is needed); needs
        ``aggregator="populous"`` and a square matrix statistic such as
        ``"covariance_"``.
    n_groups : int or "auto", default="auto"
        The number k of groups. "auto": groups of ``max(25, 5 n_features)``
        rows, or ``max(100, 10 n_features)`` for a classifier (small-sample
        classifier fits are biased); for "winsorized", at least the k_min below
        when n allows (groups of 2 rows or more); for "populous", at least the
        fewest groups its test needs (and at most 10,000; with ``space="psd"``,
        groups of at least ``50 q`` rows for a q x q statistic and at most
        5,000 groups). "winsorized" with
        fewer than k_min groups warns (:class:`~dpgauss.exceptions.UtilityWarning`,
        from public values, before the spend): its median and radius searches
        may then leave the candidates' range, and the release be 1e100 off.
        k_min depends on the budget and the statistic's size p only (1,510 at
        epsilon 1, delta 1e-6, p = 5; 334 at rho 0.5); see the user guide.
    radius : float or "auto", default="auto"
        "winsorized": a public clipping radius around the private median, or
        "auto" for a private quantile of the distances. "populous": the public
        neighbour radius tau, or "auto" for sparse vector over a geometric grid
        (for "psd", tau is relative: neighbours satisfy
        ``A / (1 + tau) <= B <= (1 + tau) A``).
    output_shape : tuple of int or None, default=None
        The shape of ``statistic`` (public). None: read from a fit on a public
        probe (standard normal rows; for a classifier, two classes).
    rho, epsilon, delta : float, default=None
        The privacy of one fit: ``rho`` (zCDP), ``epsilon`` (pure DP) or
        ``epsilon`` and ``delta``. "populous" is (epsilon, delta)-DP and needs
        ``epsilon`` and ``delta``.
    budget : PrivacyBudget, default=None
        A shared budget charged before the data are read.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the groups' split and the noise. Only an int seed makes a fit
        reproducible (tests and research).

    Attributes
    ----------
    statistic_ : ndarray of shape ``output_shape``
        The released aggregate.
    estimator_ : estimator object
        When ``statistic`` names attributes: an unfitted clone of ``estimator``
        with those attributes set to the released values (and
        ``n_features_in_``); ``predict``, ``transform``, ``decision_function``
        and ``predict_proba`` delegate to it. None otherwise.
    n_groups_ : int
        k.
    group_size_ : int
        Rows per group (the ``n - k * group_size_`` left over are not used).
    radius_ : float
        The clipping radius ("winsorized") or neighbour radius ("populous") used.
    center_ : ndarray or None
        The private median ("winsorized").
    sensitivity_ : float
        The l2 sensitivity the last release was calibrated for.
    privacy_spent_ : ZCDP, PureDP or ApproxDP
        What the fit cost.
    n_features_in_ : int
        Number of features.

    See Also
    --------
    dpgauss.PrivateMean : A private mean of the rows themselves.

    Notes
    -----
    **Privacy.** Neighbouring datasets differ by replacing one row; n, d, the
    estimator, k and every parameter are public. The split into groups uses the
    fit's own randomness, independent of the data, so one replaced row changes
    one group's rows and at most one candidate. Every aggregator is private for
    any candidates: a wrapped estimator that is unstable, wrong, slow to
    converge, raises (its candidate is failed: a fixed public placeholder for
    "winsorized", nobody's neighbour for "populous") or even centers its rows on
    their non-private mean cannot break the guarantee; it can only make the
    result useless. Warnings and exceptions of the group fits are swallowed (a
    warning that depends on the data would be a release), and each runs with
    floating-point errors ignored. What is assumed of the estimator: each fit
    is a function of its own group's rows and its own randomness, with no
    state shared across clones (class-level caches of earlier fits) and no
    output of its own: what it prints or logs (``verbose=1``) is not
    private.

    * "winsorized": the median search, the radius search and the clipped mean
      each treat the k candidates as rows of which one changes; shares 0.2,
      0.1 and 0.7 of the budget (0.2 / 0.8 with a public radius). rho-zCDP (or
      epsilon-DP).
    * "populous" (Ashtiani and Liaw 2022, Algorithm 1): (epsilon, delta)-DP.
      The budget is split into sparse vector (0.1 epsilon, pure; only with
      ``radius="auto"``), the truncated-Laplace test (0.2 epsilon, delta / 2)
      and the Gaussian mask (the rest, as the largest rho whose conversion at
      delta / 2 fits). The test fails honestly when the candidates are not
      clustered: :class:`~dpgauss.exceptions.PrivateTestFailedError`, budget
      spent, nothing fitted. The proof (tightened constants: mask sensitivity
      about 33 tau / k against the paper's 400 tau / k) is in
      :mod:`dpgauss.ensemble._populous`.
    * "populous" with ``space="psd"``: the same test and weights with the
      relative semimetric (neighbours when ``Y_i <= (1 + tau) Y_j`` and
      ``Y_j <= (1 + tau) Y_i``), decided by a certified float64 test that
      never calls a non-neighbour a neighbour; the mask is two zCDP lattice
      Gaussian releases, of the trace-normalised weighted mean (Frobenius
      sensitivity ``2 Delta / (1 - Delta)``) and of its log-trace
      (``-ln(1 - Delta)``), ``Delta = ((1 + tau)^2 - 1)(1 + tau)^2 S`` with S
      the Euclidean bound's weight sum (about 19.5 / k at tau = 0.3). Proof in
      :mod:`dpgauss.ensemble._psd`. Candidates must have entries between
      ``2^-500`` (trace) and ``2^500``; others are failed.

    Accuracy needs the estimator to be accurate on n / k rows: the error of the
    aggregate is about the spread of the candidates times ``sqrt(p) / k``
    times the noise multiplier. The winsorized aggregator's constant is several
    times smaller than the populous mean's (2R/k against about 33 tau / k) and
    it usually needs fewer groups (k_min against the populous test's minimum), so it is
    the default; see the user guide for the measured comparison.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from dpgauss.ensemble import SubsampleAggregate
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20000, 3))
    >>> y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=20000)
    >>> est = SubsampleAggregate(LinearRegression(), statistic=("coef_", "intercept_"),
    ...                          rho=0.5, random_state=0).fit(X, y)
    >>> bool(np.abs(est.estimator_.coef_ - [1.0, -2.0, 0.5]).max() < 0.2)
    True
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "estimator": [HasMethods(["fit"]), None],
        "statistic": [str, tuple, list, callable],
        "aggregator": [StrOptions({"winsorized", "populous"})],
        "space": [StrOptions({"euclidean", "psd"})],
        "n_groups": [
            Interval(numbers.Integral, 2, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "radius": [
            Interval(numbers.Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "output_shape": [tuple, None],
    }

    def __init__(
        self,
        estimator=None,
        *,
        statistic="coef_",
        aggregator="winsorized",
        space="euclidean",
        n_groups="auto",
        radius="auto",
        output_shape=None,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.statistic = statistic
        self.aggregator = aggregator
        self.space = space
        self.n_groups = n_groups
        self.radius = radius
        self.output_shape = output_shape
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.random_state = random_state

    # -- parameters -------------------------------------------------------------------
    def _check_params(self):
        if self.estimator is None:  # (one without fit fails its constraint)
            raise ValueError("SubsampleAggregate needs an estimator to wrap.")
        if self.space == "psd" and self.aggregator != "populous":
            raise ValueError(
                "space='psd' is implemented for aggregator='populous' only; "
                f"got aggregator={self.aggregator!r}."
            )
        if _attribute_names(self.statistic) is None and not callable(self.statistic):
            raise TypeError(
                "statistic must be an attribute name, a tuple of names or a "
                f"callable, got {self.statistic!r}."
            )
        if self.radius != "auto" and not (
            MIN_RADIUS <= float(self.radius) <= MAX_RADIUS
        ):
            raise ValueError(
                f"radius={self.radius!r} is outside [{MIN_RADIUS:g}, {MAX_RADIUS:g}]."
            )
        if self.output_shape is not None and not all(
            isinstance(s, numbers.Integral) and s >= 1 for s in self.output_shape
        ):
            raise ValueError(
                f"output_shape must be a tuple of positive ints: {self.output_shape!r}"
            )

    def _privacy_total(self):
        if self.aggregator != "populous":
            return super()._privacy_total()
        if self.rho is not None or self.epsilon is None or self.delta is None:
            raise ValueError(
                "SubsampleAggregate(aggregator='populous') is (epsilon, delta)-DP: "
                "give epsilon and delta (and not rho)."
            )
        super()._privacy_total()  # validates the numbers
        return ApproxDP(float(self.epsilon), float(self.delta))

    # -- public shape -----------------------------------------------------------------
    def _probe_shape(self, d, y):
        """The statistic's shape: given, or from a fit on public probe rows."""
        if self.output_shape is not None:
            return tuple(int(s) for s in self.output_shape), None
        rows = max(2 * d + 2, 20)
        rng = np.random.default_rng(12345)
        Xp = rng.standard_normal((rows, d))
        yp = None
        if y is not None:
            y_arr = np.asarray(y)
            if is_classifier(self.estimator):
                yp = np.arange(rows) % 2
            elif y_arr.ndim == 2:
                yp = rng.standard_normal((rows, y_arr.shape[1]))
            else:
                yp = rng.standard_normal(rows)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = clone(self.estimator).fit(Xp, yp)
                parts = self._read(fitted)
        except Exception as exc:
            raise ValueError(
                "SubsampleAggregate could not read the statistic from a fit on "
                f"public probe rows ({exc!r}); give output_shape. Nothing was spent."
            ) from exc
        shapes = [np.shape(p) for p in parts]
        size = int(sum(np.prod(s, dtype=np.int64) for s in shapes))
        shape = shapes[0] if len(shapes) == 1 else (size,)
        return tuple(int(s) for s in shape), shapes

    def _read(self, fitted):
        names = _attribute_names(self.statistic)
        if names is None:
            return [np.asarray(self.statistic(fitted), dtype=np.float64)]
        return [np.asarray(getattr(fitted, n), dtype=np.float64) for n in names]

    # -- the plan ---------------------------------------------------------------------
    def _groups(self, data, total):
        """k from public values only."""
        n, d = data.n, data.d
        is_populous = self.aggregator == "populous"
        need = self._populous_min_groups(total) if is_populous else MIN_GROUPS
        if self.n_groups != "auto":
            k = int(self.n_groups)
        else:
            rows = max(AUTO_GROUP_ROWS, AUTO_ROWS_PER_FEATURE * d)
            most = MAX_POPULOUS_GROUPS
            if self.space == "psd":
                rows = max(rows, PSD_ROWS_PER_DIM * self._matrix_size(data))
                most = MAX_PSD_GROUPS
            if is_classifier(self.estimator):
                rows = max(AUTO_CLASSIFIER_ROWS, AUTO_CLASSIFIER_ROWS_PER_FEATURE * d)
            k = max(n // rows, min(MIN_GROUPS * 5, n // MIN_GROUP_ROWS))
            if is_populous:
                k = min(max(k, need), most)
            else:  # enough groups for sane searches, when n allows
                plan = self._build_plan(total, data)
                fewest = _winsorized_min_groups(plan, data.public["shape"])
                k = max(k, min(fewest, n // MIN_GROUP_ROWS))
        if is_populous:
            if k < need:
                raise ValueError(
                    f"the populous test needs at least {need} groups at this epsilon "
                    f"and delta; n_groups={k}. Nothing was spent."
                )
        elif k < MIN_GROUPS:
            raise ValueError(f"n_groups={k} is below {MIN_GROUPS}. Nothing was spent.")
        if n // k < MIN_GROUP_ROWS:
            raise ValueError(
                f"n_samples={n} rows cannot fill {k} groups of at least "
                f"{MIN_GROUP_ROWS} rows. Nothing was spent."
            )
        return k

    def _check_utility(self, plan, data):
        """Warn (UtilityWarning) when the winsorized searches may go astray.

        Computed from public values only (k, the plan's costs, the statistic's
        shape), before anything is spent: not a release.
        """
        shape = data.public["shape"]
        if self.aggregator == "populous":
            return
        k = self._groups(data, plan.total)
        fewest = _winsorized_min_groups(plan, shape)
        if k < fewest:
            warnings.warn(
                f"SubsampleAggregate: {k} groups are too few for the winsorized "
                f"aggregator at {plan.total} with a statistic of "
                f"{int(np.prod(shape, dtype=np.int64))} values: its private "
                "median and radius searches may go astray (a union bound gives a "
                f"chance above {WINSOR_RISK:g}), and then the release can be 1e100 "
                f"or more off, silently. It needs at least {fewest} groups (n >= "
                f"{fewest * MIN_GROUP_ROWS} rows, groups of {MIN_GROUP_ROWS}; more "
                "rows per group are more accurate). Use more rows, a larger budget "
                "or more groups (n_groups); a public radius removes only the "
                "radius search, not the median's.",
                UtilityWarning,
                stacklevel=4,
            )

    def _populous_parts(self, total):
        auto = self.radius == "auto"
        eps, delta = total.epsilon, total.delta
        eps_svt = SVT_SHARE * eps if auto else 0.0
        eps_test = TEST_SHARE * eps
        delta_test = 0.5 * delta
        eps_mask = eps - eps_svt - eps_test
        rho = approx_to_zcdp(eps_mask, delta - delta_test)
        return eps_svt, eps_test, delta_test, rho

    def _populous_min_groups(self, total):
        _, eps_t, delta_t, _ = self._populous_parts(total)
        delta_cal = populous.calibration_delta(eps_t, delta_t)
        if not delta_cal > 0:
            raise ValueError(
                f"delta={total.delta!r} is too small for the populous test's "
                "exact pass probability. Nothing was spent."
            )
        return populous.min_groups(eps_t, delta_cal, THRESHOLD, *RAMP)

    def _build_plan(self, total, data):
        if self.aggregator == "populous":
            eps_svt, eps_t, delta_t, rho = self._populous_parts(total)
            entries = []
            if self.radius == "auto":
                entries.append(Release("radius", PureDP(eps_svt), "above_threshold"))
            entries.append(
                Release("test", ApproxDP(eps_t, delta_t), "truncated_laplace")
            )
            if self.space == "psd":
                share = psd.shape_share(self._matrix_size(data))
                shape, scale = split_cost(ZCDP(rho), [share, 1.0 - share])
                entries += [
                    Release("mask", shape, "gaussian"),
                    Release("scale", scale, "gaussian"),
                ]
            else:
                entries.append(Release("mask", ZCDP(rho), "gaussian"))
            return ReleasePlan(total, entries)
        entries = winsorized_entries(total, self.radius == "auto")
        return ReleasePlan(total, entries)

    def _matrix_size(self, data):
        """The PSD statistic's size q (its shape must be (q, q)); public."""
        shape = data.public["shape"]
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(
                "space='psd' needs a square matrix statistic (such as "
                f"'covariance_'); its shape is {shape}. Nothing was spent."
            )
        return int(shape[0])

    def _psd_noise(self, k, radius, rho_shape):
        """The shape noise's sd (trace units) at this radius, or inf beyond
        MAX_DELTA; public."""
        delta = psd.mean_sensitivity(k, 1.0 + radius, THRESHOLD, *RAMP)
        if delta > psd.MAX_DELTA:
            return math.inf
        return psd.release_sensitivities(delta)[0] / math.sqrt(2.0 * rho_shape)

    def _psd_radii(self, k, rho_shape, q):
        """The PSD radii sparse vector chooses from: ``2^(j/2)`` from
        ``2^-PSD_GRID_LOW`` up to the largest whose shape noise is useful
        (sd at most ``PSD_USEFUL_NOISE / q``, q the matrix size: larger radii
        would release noise, and a failed test is the better answer). Public."""
        grid = 2.0 ** (np.arange(-2 * PSD_GRID_LOW, 2 * GRID_OCTAVES + 1) / 2.0)
        keep = [r for r in grid if self._psd_noise(k, r, rho_shape) * q <= PSD_USEFUL]
        if not keep:
            raise ValueError(
                f"{k} groups are too few for a useful PSD populous mean at this "
                f"budget (even at radius {grid[0]:g} the noise's sd exceeds "
                f"{PSD_USEFUL} / {q}); use more rows or a larger budget. Nothing "
                "was spent."
            )
        return np.array(keep)

    def _check_psd_radius(self, k, plan, q):
        rho_shape = plan.cost("mask").rho
        if self.radius == "auto":
            self._psd_radii(k, rho_shape, q)
            return
        if 1.0 + float(self.radius) == 1.0:
            raise ValueError(
                f"radius={self.radius!r} is below float64's resolution around 1 "
                "(1 + radius == 1): no two matrices could be neighbours. Nothing "
                "was spent."
            )
        noise = self._psd_noise(k, float(self.radius), rho_shape)
        if noise == math.inf:
            raise ValueError(
                f"radius={self.radius!r} is too large for {k} groups in the PSD "
                f"space (its bound exceeds {psd.MAX_DELTA}); use a smaller radius "
                "or more groups. Nothing was spent."
            )
        if noise * q > PSD_USEFUL:
            # From public values only (k, radius, budget): not a release.
            warnings.warn(
                f"SubsampleAggregate(space='psd'): at radius={self.radius!r} and "
                f"{k} groups the released matrix's noise sd is {noise:.3g} of its "
                "trace: the result will be mostly noise. Use more rows, a larger "
                "budget or a smaller radius.",
                UtilityWarning,
                stacklevel=4,
            )

    def _check_psd_noise(self, plan, q):
        # The worst calibration any radius can need: Delta = MAX_DELTA.
        shape_sens, scale_sens = psd.release_sensitivities(psd.MAX_DELTA)
        size = q * (q + 1) // 2
        mech = GaussianMechanism(sensitivity=shape_sens, rho=plan.cost("mask").rho)
        check_noise_scale(mech, size=size)
        mech = GaussianMechanism(sensitivity=scale_sens, rho=plan.cost("scale").rho)
        check_noise_scale(mech, size=1)

    def _check_calibration(self, plan, data):
        k = self._groups(data, plan.total)
        p = int(np.prod(data.public["shape"], dtype=np.int64))
        if self.space == "psd":  # ValueErrors of their own, before the rest
            q = self._matrix_size(data)
            self._check_psd_radius(k, plan, q)
        try:
            if self.aggregator == "populous":
                if self.space == "psd":
                    self._check_psd_noise(plan, q)
                else:
                    sens = populous.mask_sensitivity(k, MAX_RADIUS, THRESHOLD, *RAMP)
                    rho = plan.cost("mask").rho
                    check_noise_scale(
                        GaussianMechanism(sensitivity=sens, rho=rho), size=p
                    )
                if self.radius == "auto":
                    AboveThreshold(
                        threshold=float(k * k),
                        sensitivity=2.0 * (k - 1),
                        epsilon=plan.cost("radius").epsilon,
                    )
                return
            QuantileSearch(plan.cost("center"), p)
            for radius in (MIN_RADIUS, MAX_RADIUS):
                mech = mean_mechanism(plan.cost("mean"), k, p, radius, 1)
                check_noise_scale(mech, size=p)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            raise calibration_error(type(self).__name__, "a noise scale", exc) from exc

    # -- fit --------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Fit the estimator on each group and release the private aggregate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private rows (finite floats).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Targets, split with the rows and passed to each group's fit.

        Returns
        -------
        self : SubsampleAggregate
            The fitted estimator.

        Raises
        ------
        PrivateTestFailedError
            "populous" only: the test did not pass (the budget is spent).
        """
        if y is not None:
            check_consistent_length(X, y)
        return self._private_fit(X, y)

    def _validate_targets(self, y, X):
        return y  # passed to each group's fit, which validates it

    def _prepare_fit(self, data):
        """The statistic's public shape(s), from a fit on public probe rows.

        Pricing knows no targets: it probes only where the plan needs the shape
        (``space="psd"``: the matrix size sets the budget split).
        """
        data = super()._prepare_fit(data)
        if data.pricing and self.space != "psd":
            return data
        shape, shapes = self._probe_shape(data.d, data.y)
        return data.derive(shape=shape, shapes=shapes)

    def _candidates(self, X, y, k, rng, shape):
        n = X.shape[0]
        s = n // k
        order = rng.permutation(n)
        p = int(np.prod(shape, dtype=np.int64))
        Y = np.full((k, p), np.nan)
        for g in range(k):
            idx = order[g * s : (g + 1) * s]
            try:
                # errstate per group: a fit that calls np.seterr cannot re-arm
                # floating-point exceptions for the aggregation that follows
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fitted = clone(self.estimator).fit(
                        X[idx], None if y is None else _take(y, idx)
                    )
                    parts = self._read(fitted)
                flat = np.concatenate([np.ravel(q) for q in parts])
            except BaseException:
                # Anything a group fit raises (KeyboardInterrupt and SystemExit
                # included: re-raising them after the spend would let one row
                # decide between a result and an exception) is a failed
                # candidate.
                continue
            if flat.shape == (p,) and np.all(np.isfinite(flat)):
                Y[g] = flat
        with np.errstate(all="ignore"):  # a finaliser's np.seterr is undone
            fitted = parts = None
        return Y, s

    def _fit_releases(self, data, plan, rng):
        X = data.X
        d = X.shape[1]
        shape = data.public["shape"]
        k = self._groups(data, plan.total)
        Y, s = self._candidates(X, data.y, k, rng, shape)
        # The releases run with float errors ignored (their outputs are clamped
        # where it matters) and without the cycle collector: a group fit's
        # object in a reference cycle could otherwise be finalised here and
        # call np.seterr(all="raise"), making an overflow that depends on the
        # data raise after the spend.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with np.errstate(all="ignore"):
                if self.aggregator == "populous":
                    value, radius, sens, center = self._populous(Y, k, plan, rng, data)
                else:
                    value, radius, sens, center = self._winsorized(Y, k, plan, rng)
        finally:
            if collecting:
                gc.enable()
        out = {
            "statistic_": np.asarray(value).reshape(shape),
            "estimator_": self._assemble(value, d, shape, data.public["shapes"]),
            "n_groups_": k,
            "group_size_": s,
            "radius_": float(radius),
            "center_": center,
            "sensitivity_": float(sens),
        }
        return out

    def _assemble(self, value, d, shape, shapes):
        names = _attribute_names(self.statistic)
        if names is None or shapes is None:
            if names is not None and len(names) == 1:
                est = clone(self.estimator)
                try:
                    setattr(est, names[0], np.asarray(value).reshape(shape))
                    est.n_features_in_ = d
                except AttributeError:
                    return None
                return est
            return None
        est = clone(self.estimator)
        start = 0
        try:
            for name, part_shape in zip(names, shapes, strict=True):
                size = int(np.prod(part_shape, dtype=np.int64))
                part = np.asarray(value[start : start + size]).reshape(part_shape)
                setattr(est, name, part if part_shape else float(part))
                start += size
            est.n_features_in_ = d
        except AttributeError:  # a read-only attribute (a property): no estimator_
            return None
        return est

    # -- aggregators ------------------------------------------------------------------
    def _winsorized(self, Y, k, plan, rng):
        value, radius, mech, center = winsorized_mean(Y, plan, rng, self.radius)
        return value, radius, mech.sensitivity, center

    def _run_test(self, counts, k, tau, plan, rng):
        test = plan.calibrate("test", lambda c: _PopulousTest(c, k))
        if not test.run(int(counts.sum()), rng):
            raise PrivateTestFailedError(
                "SubsampleAggregate(aggregator='populous'): the private test did not "
                f"pass (the group statistics are not clustered within radius "
                f"{tau:.3g}); its cost ({plan.total}) is spent. More rows per group, "
                "a larger radius or another aggregator may help."
            )

    def _populous(self, Y, k, plan, rng, data):
        if self.space == "psd":
            return self._populous_psd(Y, k, plan, rng, self._matrix_size(data))
        T, (a, b) = THRESHOLD, RAMP
        if self.radius == "auto":
            grid = 2.0 ** (np.arange(-2 * GRID_OCTAVES, 2 * GRID_OCTAVES + 1) / 2.0)
            tau = self._svt_radius(_pair_counts(Y, grid), grid, k, plan, rng)
        else:
            tau = float(self.radius)
        h, t = populous.snap_grid(tau)
        Ys = populous.snap(Y, h)
        counts = populous.neighbour_counts(Ys, h, t)
        self._run_test(counts, k, tau, plan, rng)
        A_w, B_w = populous.weight_params(k, a, b)
        weights = np.minimum(np.maximum(counts - A_w, 0), B_w)
        used = t * h
        sens = populous.mask_sensitivity(k, used, T, a, b)
        mech = plan.calibrate(
            "mask", lambda c: GaussianMechanism(sensitivity=sens, rho=c.rho)
        )
        coords = populous.exact_lattice_mean(Ys, weights, mech.grid)
        return mech.randomise_lattice(coords, rng), used, sens, None

    def _populous_psd(self, Y, k, plan, rng, q):
        """The populous mean in the PSD space (proof: :mod:`dpgauss.ensemble._psd`)."""
        T, (a, b) = THRESHOLD, RAMP
        S, ok = psd.sanitise(Y, q)
        V = psd.log_vectors(S, ok)
        if self.radius == "auto":
            grid = self._psd_radii(k, plan.cost("mask").rho, q)
            tau = self._svt_radius(psd.pair_counts(V, grid), grid, k, plan, rng)
        else:
            tau = float(self.radius)
        t = 1.0 + tau  # the relation is the one of this float t, exactly
        counts = psd.neighbour_counts(S, V, t)
        self._run_test(counts, k, tau, plan, rng)
        A_w, B_w = populous.weight_params(k, a, b)
        weights = np.minimum(np.maximum(counts - A_w, 0), B_w)
        delta = psd.mean_sensitivity(k, t, T, a, b)
        shape_sens, scale_sens = psd.release_sensitivities(delta)
        shape_mech = plan.calibrate(
            "mask", lambda c: GaussianMechanism(sensitivity=shape_sens, rho=c.rho)
        )
        scale_mech = plan.calibrate(
            "scale", lambda c: GaussianMechanism(sensitivity=scale_sens, rho=c.rho)
        )
        coords, trace = psd.trace_normalised_mean(S, weights, shape_mech.grid)
        upper = shape_mech.randomise_lattice(coords, rng)
        log_trace = float(scale_mech.randomise([math.log(trace)], rng)[0])
        # Post-processing: the symmetric matrix, eigenvalues floored at the
        # shape noise's sd, times the released scale.
        floor = shape_mech.effective_scale(len(coords))
        value = _psd_matrix(upper, q, floor, log_trace)
        return value.ravel(), t - 1.0, shape_sens, None

    def _svt_radius(self, counts, grid, k, plan, rng):
        """The first grid radius whose pair count clears the threshold (sparse vector).

        Query j is ``N_j = |{(i, l) : distance(Y_i, Y_l) <= grid_j}|`` for a
        distance computed as a fixed function of each pair (failed candidates
        count only with themselves), so replacing one candidate moves every N_j
        by at most 2 (k - 1). The threshold asks for a Q well above the test's
        sure-pass level ``T + 2A``.
        """
        eps_t, delta_t = plan.cost("test").epsilon, plan.cost("test").delta
        A = populous.test_half_width(k, eps_t, delta_t)
        target = min(1.0, THRESHOLD + 2.0 * A + 0.5 * (1.0 - THRESHOLD - 2.0 * A))
        svt = plan.calibrate(
            "radius",
            lambda c: AboveThreshold(
                threshold=target * k * k,
                sensitivity=2.0 * (k - 1),
                epsilon=c.epsilon,
            ),
        )
        j = svt.first_above(counts.astype(np.float64), rng)
        if j is None:
            j = grid.size - 1
        return float(grid[j])

    # -- delegation -------------------------------------------------------------------
    def _has(name):
        def check(self):
            est = getattr(self, "estimator_", None)
            target = est if est is not None else self.estimator
            return hasattr(target, name)

        return check

    @available_if(_has("predict"))
    def predict(self, X):
        """Predict with ``estimator_`` (the released attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray
            ``estimator_.predict(X)``.
        """
        return self._delegate().predict(X)

    @available_if(_has("transform"))
    def transform(self, X):
        """Transform with ``estimator_`` (the released attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray
            ``estimator_.transform(X)``.
        """
        return self._delegate().transform(X)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """Decision function of ``estimator_`` (the released attributes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray
            ``estimator_.decision_function(X)``.
        """
        return self._delegate().decision_function(X)

    def _delegate(self):
        check_is_fitted(self)
        if self.estimator_ is None:
            raise AttributeError(
                "estimator_ is None: statistic is a callable, so no estimator "
                "can be assembled from the released values."
            )
        return self.estimator_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _psd_matrix(upper, q, floor, log_trace):
    """Post-processing of the PSD release: the symmetric matrix of ``upper``,
    its eigenvalues floored at ``floor`` and times ``exp(log_trace)``, clamped
    (finite, condition number at most 1e12) so that the result is a usable
    positive definite matrix for every noise draw."""
    tiny = float(np.finfo(np.float64).tiny)
    with np.errstate(all="ignore"):
        nu = np.zeros((q, q))
        nu[np.triu_indices(q)] = upper
        nu = nu + np.triu(nu, 1).T
        try:
            vals, vecs = np.linalg.eigh(nu)
        except np.linalg.LinAlgError:  # a fixed fallback on the released values
            vals, vecs = np.diag(nu).copy(), np.eye(q)
        vals = np.where(np.isfinite(vals), vals, floor)
        log_lam = np.log(np.maximum(vals, floor)) + log_trace
        top = math.log(_MAX_FLOAT / (4.0 * q))
        lam = np.exp(np.clip(log_lam, math.log(tiny) + 60.0, top))
        lam = np.maximum(lam, lam.max() * 1e-12)  # condition number <= 1e12
        value = (vecs * lam) @ vecs.T
        return (value + value.T) / 2.0


def _take(y, idx):
    if hasattr(y, "iloc"):
        return y.iloc[idx]
    return np.asarray(y)[idx]


def _pair_counts(Y, grid, block=None):
    """For each grid radius r, the number of ordered pairs (self pairs included)
    whose computed distance is at most r; failed candidates pair only with
    themselves. The distance of a pair is computed the same way wherever the
    pair sits (a row-wise sum over its p differences)."""
    k = Y.shape[0]
    if block is None:  # from the public k and p: at most 2e6 floats at once
        block = max(1, min(64, 2_000_000 // max(1, k * Y.shape[1])))
    ok = np.all(np.isfinite(Y), axis=1)
    Z = Y[ok]
    hist = np.zeros(grid.size + 1, dtype=np.int64)
    with np.errstate(all="ignore"):
        for start in range(0, Z.shape[0], block):
            diff = Z[start : start + block, None, :] - Z[None, :, :]
            dist = np.sqrt(np.sum(diff * diff, axis=2))
            dist = np.where(np.isnan(dist), np.inf, dist)
            hist += np.bincount(
                np.searchsorted(grid, dist.ravel(), side="left"),
                minlength=grid.size + 1,
            )
    counts = np.cumsum(hist)[: grid.size] + (k - Z.shape[0])
    return counts


class _PopulousTest:
    """The truncated-Laplace test of the populous mean (one draw per fit).

    ``cost`` is ApproxDP(eps, delta); the closed-form pass probability is
    computed at ``delta - (1 + e^eps) ETA`` (see
    :func:`dpgauss.ensemble._populous.pass_probability`).
    """

    def __init__(self, cost, k):
        self.cost, self.k = cost, int(k)
        self.delta_cal = populous.calibration_delta(cost.epsilon, cost.delta)
        if not self.delta_cal > 0:
            raise ValueError("delta is too small for the test.")
        self.draws = 0

    def run(self, total, rng):
        """True with probability P[Q + Z >= T + A], ``Q = total / k^2``."""
        self.draws += 1
        p = populous.pass_probability(
            total, self.k, THRESHOLD, self.cost.epsilon, self.delta_cal
        )
        return bool(rng.random() < p)


def _winsorized_min_groups(plan, shape):
    """:func:`~dpgauss.releases._winsorized.winsorized_min_groups` for a
    statistic of this shape."""
    return winsorized_min_groups(plan, int(np.prod(shape, dtype=np.int64)))
