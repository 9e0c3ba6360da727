"""What the private discriminant analyses share: labels, class statistics, releases.

Both classifiers model each class k as a Gaussian N(mu_k, Sigma_k) (LDA: one
pooled Sigma) with prior pi_k, and classify by the largest posterior. Their
releases are sums over the rows of one class, so they are charged for the
replace-one relation in which **one changed row can change its class as well
as its features** (it leaves one class and joins another).

**Labels.** The classes are a public constructor parameter: ``np.unique(y)``
on private labels would publish which labels occur (in ``classes_``). Labels
outside them are refused before any spend, like NaN in ``X`` (input
validation, seen by the data holder, not released); a class absent from ``y``
is not detected (its released count is noise around 0). The check does not
depend on scikit-learn's configuration (with ``assume_finite`` a NaN or
infinite label is refused as continuous or as outside the classes). Each
row's class index is computed once, before the spend, from its own label only
(:func:`encode_labels`); should a row with another label reach the releases
(``class_statistics`` called directly), it counts in no class and its offset
is 0, so the sensitivities below still hold.

**Rows into the ball.** With the public ``location`` c and radius
``B = data_norm``, a row becomes ``y = clip(x - c, B)``
(:func:`~dpgauss.utils._sums.clip_rows`: the offset first, then the scaling,
so ``||y|| <= B`` as computed for every finite input and a row 1e12 radii away
lies on the sphere like any other).

**Sensitivities** (n, d, K and the classes public; ``e`` the summation's
relative rounding bound, :func:`~dpgauss.utils._sums.summation_error`):

* ``class_counts``: the K counts ``n_k`` (exact integers). A replaced row
  lowers one count by 1 and raises another by 1, or changes none: l2 ``sqrt(2)``,
  l1 2.
* ``class_sums``: the K x d matrix of ``S_k / n``, ``S_k`` the sum of the
  class's offsets, released as one vector. Same class: ``S_k`` moves by
  ``y' - y``, of norm at most 2B; different classes: ``S_a`` by ``-y`` and
  ``S_b`` by ``y'``, of joint norm ``sqrt(||y||^2 + ||y'||^2) <= sqrt(2) B``.
  So l2 ``2B / n``; l1 ``2 sqrt(d) B / n`` (same class: ``sqrt(d)`` times the
  l2 change; different classes: ``||y||_1 + ||y'||_1``). Rounding: each
  computed ``S_k / n`` is within ``e B`` of the exact one (l2), for both
  datasets, so the K computed sums differ from the exact difference by at most
  ``2 e B sqrt(K)`` in l2 (``sqrt(K d)`` times that in l1), whatever the
  order of summation.
* ``second_moment`` (LDA): ``M = (1/n) sum_i y_i y_i^T`` pooled over the
  rows of every class (ignored rows add 0): Frobenius ``sqrt(2) B^2 / n``
  (:func:`~dpgauss.mechanisms._releases.second_moment_mechanism`, with its
  rounding term).
* ``class_second_moments`` (QDA): the K blocks ``M_k = (1/n) sum_{i in k}
  y_i y_i^T`` released as one block-diagonal Kd x Kd symmetric matrix (the
  off-diagonal blocks are 0 for every dataset and change by nothing; only the
  diagonal blocks' noise is drawn, ``randomise_blocks``, which is the
  marginal of the full release: post-processing). Same
  class: ``M_k`` moves by ``(y'y'^T - y y^T) / n``, Frobenius at most
  ``sqrt(2) B^2 / n``; different classes: ``M_a`` by ``-y y^T / n`` and
  ``M_b`` by ``y'y'^T / n``, jointly ``sqrt(||y||^4 + ||y'||^4) / n <=
  sqrt(2) B^2 / n``. l1 over the upper triangle: ``||y y^T||`` there is
  ``((sum |y_j|)^2 + ||y||^2) / 2 <= (d + 1) B^2 / 2``, so at most
  ``(d + 1) B^2 / n`` in both cases. Rounding: each block within ``e B^2``
  (Frobenius) for both datasets, ``2 e B^2 sqrt(K)`` jointly
  (``sqrt(K d (d + 1) / 2)`` times that in l1).

Noise is the exact lattice Gaussian (zCDP) or Laplace (pure DP) of
:mod:`dpgauss.mechanisms`; the costs are split once, in the plan. Everything
after the releases (priors, means, covariances, the classifier) is
post-processing.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _assert_all_finite,
    check_consistent_length,
    column_or_1d,
)

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import as_pure, kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms import (
    QuantileMechanism,
)
from dpgauss.mechanisms._checks import (
    MIN_RADIUS,
    calibration_error,
    check_noise_scale,
    check_radius,
)
from dpgauss.mechanisms._factory import additive
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.releases._covariance import gauss_spectrum
from dpgauss.utils._leak import caller_stacklevel, warn_if_scored_in_search
from dpgauss.utils._sklearn_compat import Interval, StrOptions, _fit_context
from dpgauss.utils._sums import (
    clip_rows,
    clipped_sums,
    is_dask_array,
    iter_chunks,
    n_partial_sums,
    over_labelled_blocks,
    row_norms,
    summation_error,
)
from dpgauss.utils.validation import check_data_norm

#: Quantile of the rows' distances to the released center that the adaptive
#: clipping radius targets.
RADIUS_QUANTILE = 0.9
#: Candidates of the radius release: ``data_norm * j / (RADIUS_GRID - 1)``.
RADIUS_GRID = 4097
#: A released radius within this share of data_norm is reported (the rows'
#: 90% distance is then probably data_norm or more; the top 64 candidates).
AT_BOUND = 1.0 / 64.0
#: A released mean clipped offset of at least this share of the clipping
#: radius is reported (most rows then lie at or beyond the radius).
EDGE_SHARE = 0.9
#: Share of the cost for the center and the radius (each) with adaptive clipping.
ADAPTIVE_SHARE = 0.05

__all__ = [
    "DiscriminantMixin",
    "block_moment_mechanism",
    "check_classes",
    "class_statistics",
    "class_sum_mechanism",
    "count_mechanism",
]


def check_classes(classes, owner):
    """The public classes as a sorted array of unique labels (at least two).

    Raises
    ------
    ValueError
        If ``classes`` is missing, not 1-D, has repeated labels, fewer than two
        labels or labels that cannot be ordered.
    """
    if classes is None:
        raise ValueError(
            f"{owner}: classes is required: the public list of class labels. "
            "dpgauss never reads them off y (np.unique(y) would publish which "
            "labels occur in the private rows)."
        )
    if isinstance(classes, str | bytes):
        raise ValueError(f"{owner}: classes must be a list of labels, not a string.")
    labels = np.asarray(classes)
    if labels.ndim != 1:
        raise ValueError(f"{owner}: classes must be one-dimensional.")
    try:
        unique = np.unique(labels)
    except TypeError as exc:
        raise ValueError(f"{owner}: classes must be comparable ({exc}).") from exc
    if unique.size != labels.size:
        raise ValueError(f"{owner}: classes has repeated labels.")
    if unique.size < 2:
        raise ValueError(f"{owner}: classes needs at least two labels.")
    return unique


def encode_labels(y, classes):
    """Each label's index in the sorted ``classes``, or -1 for another label.

    Never raises or warns on the values of ``y`` (which are private), and each
    row's code depends on its own label only: where numpy cannot compare the
    whole array with a class (an object array holding an array, say), the
    labels are compared one by one, and one that cannot be compared matches
    no class.
    """
    y = np.asarray(y)
    codes = np.full(y.shape[0], -1, dtype=np.intp)
    for k, label in enumerate(classes):
        codes[_matches(y, label)] = k
    return codes


def _matches(y, label):
    """Boolean mask of the rows of ``y`` equal to ``label`` (row by row)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            hit = np.asarray(y == label, dtype=bool)
            if hit.shape == (y.shape[0],):
                return hit
        except (TypeError, ValueError):
            pass
        hit = np.zeros(y.shape[0], dtype=bool)
        for i, value in enumerate(y):
            try:
                hit[i] = bool(value == label)
            except (TypeError, ValueError):
                pass
        return hit


def class_statistics(X, codes, n_classes, location, radius, outer):
    """Counts, sums and second moments of the clipped rows of each class.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows (read in chunks, a Dask array block by block in its workers;
        not modified).
    codes : ndarray of int of shape (n_samples,)
        Each row's class index, -1 for an ignored row (offset 0).
    n_classes : int
        K.
    location : ndarray of shape (n_features,)
        The public center c.
    radius : float
        The public radius B.
    outer : {"pooled", "per_class", None}
        Which second moments to sum.

    Returns
    -------
    counts : ndarray of int64 of shape (K,)
    sums : ndarray of shape (K, d)
        Sums of the clipped offsets ``clip(x - c, B)`` of each class.
    moments : ndarray of shape (d, d) or (K, d, d) or None
        Sums of their outer products (pooled or per class), exactly symmetric.

    Notes
    -----
    Each block adds its chunk sums (at most CHUNK_ROWS rows each) and the
    blocks' sums are then added: ``n_partial_sums(X)`` partial sums in all,
    the count the mechanisms' rounding term is calibrated for.
    """
    codes = np.asarray(codes)
    counts = np.bincount(codes[codes >= 0], minlength=n_classes).astype(np.int64)
    if is_dask_array(X):
        parts = over_labelled_blocks(
            X, codes, _block_class_statistics, n_classes, location, radius, outer
        )
    else:
        parts = [_block_class_statistics(X, codes, n_classes, location, radius, outer)]
    with np.errstate(all="ignore"):
        sums = np.sum([p[0] for p in parts], axis=0)
        moments = None
        if outer is not None:
            moments = np.sum([p[1] for p in parts], axis=0)
            moments = 0.5 * (moments + np.swapaxes(moments, -1, -2))
    return counts, sums, moments


def _block_class_statistics(X, codes, n_classes, location, radius, outer):
    """The class sums (and moments) of one block of rows, chunk by chunk.

    Everything under errstate, in a Dask worker too (outside the fit's):
    no floating-point warning may depend on the rows.
    """
    d = X.shape[1]
    sums = np.zeros((n_classes, d))
    if outer == "pooled":
        moments = np.zeros((d, d))
    elif outer == "per_class":
        moments = np.zeros((n_classes, d, d))
    else:
        moments = None
    start = 0
    with np.errstate(all="ignore"):
        for chunk in iter_chunks(X):
            stop = start + chunk.shape[0]
            labels = codes[start:stop]
            y = clip_rows(chunk, location, radius)
            y[labels < 0] = 0.0
            for k in range(n_classes):
                rows = y[labels == k]
                if rows.shape[0]:
                    sums[k] += rows.sum(axis=0)
                    if outer == "per_class":
                        moments[k] += rows.T @ rows
            if outer == "pooled":
                moments += y.T @ y
            start = stop
    return sums, moments


def count_mechanism(cost):
    """Noise for the K class counts: l2 sensitivity sqrt(2), l1 2 (module docstring)."""
    return additive(cost, l2=math.sqrt(2.0), l1=2.0)


def class_sum_mechanism(cost, n, d, n_classes, radius, n_partials=None):
    """Noise for the K x d class sums divided by n (module docstring).

    l2 ``2B/n + 2 e B sqrt(K)``; l1 ``2 sqrt(d) B / n + 2 e B K sqrt(d)``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.discriminant_analysis._base import class_sum_mechanism
    >>> round(class_sum_mechanism(ZCDP(1.0), 100, 4, 3, 1.0).sensitivity, 9)
    0.02
    """
    rounding = 2.0 * summation_error(n, n_partials) * radius * math.sqrt(n_classes)
    l2 = 2.0 * radius / n + rounding
    l1 = 2.0 * math.sqrt(d) * radius / n + math.sqrt(n_classes * d) * rounding
    return additive(cost, l2=l2, l1=l1)


def block_moment_mechanism(cost, n, d, n_classes, radius, n_partials=None):
    """Noise for the K per-class second moments as one block-diagonal matrix.

    Frobenius ``sqrt(2) B^2 / n + 2 e B^2 sqrt(K)``; l1 over the upper triangle
    ``(d + 1) B^2 / n`` plus ``sqrt(K d (d + 1) / 2)`` times the rounding.
    """
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2 * math.sqrt(n_classes)
    l2 = math.sqrt(2.0) * r2 / n + rounding
    upper = n_classes * d * (d + 1) / 2.0
    l1 = (d + 1.0) * r2 / n + math.sqrt(upper) * rounding
    return additive(cost, l2=l2, l1=l1, symmetric=True)


def _radius_mechanism(cost, data_norm):
    """The exponential-mechanism quantile of the distances (pure DP)."""
    return QuantileMechanism(
        RADIUS_QUANTILE,
        bounds=(0.0, data_norm),
        epsilon=as_pure(cost).epsilon,
        n_candidates=RADIUS_GRID,
    )


def shrink_spectrum(values, noise_sd, d, shrinkage):
    """Floor and shrink the eigenvalues of a released covariance (free).

    Parameters
    ----------
    values : ndarray of shape (d,)
        Eigenvalues of the within-class covariance (any sign).
    noise_sd : float
        Standard deviation of one entry of the second-moment release (public).
    d : int
        Features.
    shrinkage : None, "auto" or float in [0, 1]
        Weight of the scaled identity ``mean(values) I``; "auto" takes
        ``eta / (eta + mean(values))`` with ``eta = sqrt(d) noise_sd``, the
        typical size of the release's noise eigenvalues (the noise matrix's
        spectrum spreads over about ``[-2 eta, 2 eta]``): about 0 when the
        average variance dominates the noise, about 1 (the nearest-mean
        classifier) when the noise swamps it.

    Returns
    -------
    ndarray of shape (d,)
        Positive eigenvalues.
    """
    floor = max(noise_sd, 1e-300)
    values = np.maximum(values, floor)
    average = float(np.mean(values))
    if shrinkage is None:
        weight = 0.0
    elif isinstance(shrinkage, str):
        eta = np.sqrt(d) * noise_sd
        weight = eta / (eta + average)
    else:
        weight = float(shrinkage)
    return (1.0 - weight) * values + weight * average


def class_covariance(mechanism, released, cap, scale, between, shrinkage):
    """A class (or pooled within-class) covariance from a released second moment.

    Post-processing: the released matrix's spectrum is denoised and projected
    onto {PSD, trace <= cap}
    (:func:`~dpgauss.releases._covariance.gauss_spectrum`), rescaled by
    ``scale`` (``n / n_k`` for one class's share of the rows), the
    between-part ``between`` (released means) is subtracted, and the
    eigenvalues are floored and shrunk (:func:`shrink_spectrum`, with the
    release's noise sd times ``scale``).

    Returns
    -------
    values : ndarray of shape (d,)
        Positive eigenvalues.
    vectors : ndarray of shape (d, d)
        Eigenvectors.
    """
    d = released.shape[0]
    values, vectors, _ = gauss_spectrum(mechanism, released, cap)
    second = (vectors * (values * scale)) @ vectors.T
    cov = second - between
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    sd = mechanism.sd() * scale
    return shrink_spectrum(values, sd, d, shrinkage), vectors


def project_ball(offsets, radius):
    """Rows scaled into the l2 ball of ``radius`` (released values: free)."""
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(offsets, axis=1)
        factor = np.where(norms > radius, radius / np.maximum(norms, 1e-300), 1.0)
    return offsets * factor[:, None]


class DiscriminantMixin(ClassifierMixin, PrivateEstimatorMixin):
    """Shared parameters, validation, the count and sum releases, and prediction.

    Subclasses set ``_SHARES`` (the cost split over ``_RELEASES``), implement
    ``_moment_makers(n, d, K, B, partials)`` (their second-moment release),
    ``_fit_releases`` (on :meth:`_release_classes`) and
    ``_joint_log_likelihood(X)``.
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "classes": ["array-like", None],
        "data_norm": [float, int, None],
        "location": ["array-like", float, int, None],
        "clipping": [StrOptions({"adaptive", "fixed"})],
        "priors": ["array-like", None],
        "shrinkage": [
            StrOptions({"auto"}),
            Interval(numbers.Real, 0, 1, closed="both"),
            None,
        ],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Release the private class statistics and build the classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; at least 2, finite. Not modified.
        y : array-like of shape (n_samples,)
            Class labels, each one of ``classes`` (checked before any spend).

        Returns
        -------
        self
            The fitted classifier.
        """
        return self._fit_labelled(X, y)

    # -- fit -----------------------------------------------------------------------
    def _fit_labelled(self, X, y):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        return self._private_fit(X, y)

    def _validate_targets(self, y, X):
        """The labels as integer codes into ``classes``, checked before the spend."""
        owner = type(self).__name__
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        if y.dtype.kind in "fc":
            _assert_all_finite(y, input_name="y")
        if type_of_target(y) == "continuous":
            raise ValueError(
                f"Unknown label type: continuous. {owner} is a classifier: y must "
                "hold class labels (from classes)."
            )
        classes = check_classes(self.classes, owner)
        codes = encode_labels(y, classes)
        if np.any(codes < 0):
            raise ValueError(
                f"{owner}: y contains labels that are not in classes "
                f"({classes.size} public labels); every label must be one of them."
            )
        # The labels are compared with the classes once, here, before the
        # spend: after it only these integer codes are read (a comparison that
        # warns, as numpy's may on mixed types, would be a release).
        return codes

    def _check_params(self):
        owner = type(self).__name__
        classes = check_classes(self.classes, owner)
        check_radius(check_data_norm(self.data_norm, owner=owner))
        if self.priors is not None:
            priors = np.asarray(self.priors, dtype=np.float64)
            if priors.shape != classes.shape:
                raise ValueError(
                    f"{owner}: priors needs one value per class ({classes.size})."
                )
            if not (np.all(np.isfinite(priors)) and np.all(priors > 0)):
                raise ValueError(f"{owner}: priors must be positive and finite.")

    def _location(self, d):
        owner = type(self).__name__
        if self.location is None:
            return np.zeros(d)
        location = np.asarray(self.location, dtype=np.float64)
        if location.ndim == 0:
            location = np.full(d, float(location))
        if location.shape != (d,) or not np.all(np.isfinite(location)):
            raise ValueError(
                f"{owner}: location must be finite with one value per feature ({d})."
            )
        return location

    def _release_names(self):
        adaptive = ("center", "radius") if self.clipping == "adaptive" else ()
        return (*adaptive, *self._RELEASES)

    def _build_plan(self, total, data):
        d = data.d
        self._location(d)
        kind = kind_of(total)
        shares = list(self._SHARES)
        if self.clipping == "adaptive":
            rest = 1.0 - 2.0 * ADAPTIVE_SHARE
            shares = [ADAPTIVE_SHARE, ADAPTIVE_SHARE, *(rest * s for s in shares)]
        costs = split_cost(total, shares)
        releases = []
        for name, cost in zip(self._release_names(), costs, strict=True):
            if name == "radius":  # exponential mechanism: pure, at the same rho
                releases.append(Release(name, as_pure(cost), "exponential"))
            else:
                releases.append(Release(name, cost, kind))
        return ReleasePlan(total, releases)

    def _makers(self, n, d, radius, partials=None):
        K = check_classes(self.classes, type(self).__name__).size
        makers = {
            "class_counts": count_mechanism,
            "class_sums": lambda c: class_sum_mechanism(c, n, d, K, radius, partials),
        }
        makers.update(self._moment_makers(n, d, K, radius, partials))
        return makers

    def _check_makers(self, plan, n, d, radius, partials):
        """Build every class-statistic mechanism at ``radius`` and check it
        (raises ValueError, OverflowError or ZeroDivisionError)."""
        K = check_classes(self.classes, type(self).__name__).size
        sizes = {"class_counts": K, "class_sums": K * d, "class_second_moments": K * d}
        for name, make in self._makers(n, d, radius, partials).items():
            check_noise_scale(make(plan.cost(name)), size=sizes.get(name, d))

    def _check_calibration(self, plan, data):
        n, d = data.n, data.d
        B = float(self.data_norm)
        # The chunk sums the fit's passes add (more than ceil(n / CHUNK_ROWS)
        # for a Dask array of many blocks): the mechanisms checked here are
        # the ones the fit builds, to the last bit of their sensitivity.
        partials = data.n_partials
        # data_norm, and with adaptive clipping the smallest positive candidate
        # of the radius release. The lattice calibration is not monotone in
        # the radius (its grid is a power of two near the noise scale), so a
        # radius in between can still fail: the fit then clips to data_norm
        # (see _clipping_ball), which is checked here.
        radii = [B]
        if self.clipping == "adaptive":
            radii.append(max(B / (RADIUS_GRID - 1), MIN_RADIUS))
        try:
            if self.clipping == "adaptive":
                check_noise_scale(
                    mean_mechanism(plan.cost("center"), n, d, B, partials), size=d
                )
                _radius_mechanism(plan.cost("radius"), B)
            for radius in radii:
                self._check_makers(plan, n, d, radius, partials)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            raise calibration_error(type(self).__name__, "a noise scale", exc) from exc

    def _clipping_ball(self, X, plan, rng, location):
        """The center and radius the class statistics are clipped to.

        ``"fixed"``: the public ``location`` and ``data_norm``. ``"adaptive"``:
        two releases. ``center``: the mean of the rows clipped to ``data_norm``
        around ``location`` (l2 sensitivity ``2B/n``,
        :func:`~dpgauss.mechanisms._releases.mean_mechanism`), projected into
        that ball. ``radius``: the RADIUS_QUANTILE quantile of the rows'
        distances to that center, chosen among the public grid ``B j / 4096``
        by the exponential mechanism (:class:`~dpgauss.mechanisms.QuantileMechanism`:
        replacing a row changes every count by at most 1); a choice of 0 is
        raised to the first positive candidate. Both are released values, so
        what is clipped to them is charged as in the module docstring.

        Should the class-statistic mechanisms not calibrate at the released
        radius (the exact samplers' integer limits, reached only at budgets
        near 1e-16, are not monotone in the radius), ``data_norm`` is used
        instead: it was checked before the spend, and the switch reads
        released and public values only, so the fit completes for every
        noise draw at the same privacy.
        """
        n, d = X.shape
        B = float(self.data_norm)
        if self.clipping == "fixed":
            return location, B
        partials = n_partial_sums(X)
        total, _ = clipped_sums(X, location, B, with_outer=False)
        mech = plan.calibrate("center", lambda c: mean_mechanism(c, n, d, B, partials))
        offset = project_ball(mech.randomise(total / n, rng)[None, :], B)[0]
        center = location + offset
        norms = row_norms(X, center)
        mech = plan.calibrate("radius", lambda c: _radius_mechanism(c, B))
        radius = float(mech.release(norms, rng))
        if radius >= (1.0 - AT_BOUND) * B:  # a released value: warning is free
            warnings.warn(
                f"{type(self).__name__}: the released {RADIUS_QUANTILE:.0%} radius "
                "of the rows around the released center is within "
                f"{AT_BOUND:.0%} of data_norm: probably {1 - RADIUS_QUANTILE:.0%} "
                "of the rows or more lie beyond data_norm and are clipped, which "
                "biases the class means and covariance. A larger data_norm (or "
                "rows in other units) fits better.",
                UtilityWarning,
                stacklevel=caller_stacklevel(),
            )
        radius = max(radius, B / (RADIUS_GRID - 1), MIN_RADIUS)
        try:
            self._check_makers(plan, n, d, radius, partials)
        except (ValueError, OverflowError, ZeroDivisionError):
            radius = B
        return center, radius

    def _warn_if_clipped_away(self, mean_offset, radius, noise):
        """UtilityWarning when the released mean clipped offset (the sum of the
        released class sums over n) lies near the clipping sphere: most rows
        then lie at or beyond the radius, all pulled to its edge in one
        direction. ``noise`` (public) is about the norm of the release's
        noise in that sum, subtracted twice so that noise alone rarely warns.
        Reads released and public values only."""
        with np.errstate(all="ignore"):
            size = np.linalg.norm(mean_offset) - 2.0 * noise
            near = size >= EDGE_SHARE * radius
        if near:
            warnings.warn(
                f"{type(self).__name__}: the released mean of the clipped rows "
                f"lies within {1 - EDGE_SHARE:.0%} of the edge of the clipping ball "
                f"(radius {radius:.3g}): most rows are probably at or beyond it, "
                "clipped to its edge, so the class means and covariance say little. "
                "Check data_norm and location against the rows' units.",
                UtilityWarning,
                stacklevel=caller_stacklevel(),
            )

    @staticmethod
    def _class_attributes(parts):
        """The fitted attributes both analyses set from :meth:`_release_classes`."""
        return {
            "classes_": parts["classes"],
            "clip_center_": parts["center"],
            "clip_radius_": parts["radius"],
            "priors_": parts["priors"],
            "class_count_": parts["sizes"],
            "means_": parts["center"] + parts["offsets"],
        }

    def _release_classes(self, data, plan, rng, outer):
        """The center, radius, count and sum releases; the exact moments."""
        X = data.X
        n, d = X.shape
        classes = check_classes(self.classes, type(self).__name__)
        K = classes.size
        center, radius = self._clipping_ball(X, plan, rng, self._location(d))
        counts, sums, moments = class_statistics(X, data.y, K, center, radius, outer)
        makers = self._makers(n, d, radius, n_partial_sums(X))
        mech = plan.calibrate("class_counts", makers["class_counts"])
        noisy_counts = mech.randomise(counts.astype(np.float64), rng)
        count_sd = mech.sd()
        mech = plan.calibrate("class_sums", makers["class_sums"])
        noisy_sums = mech.randomise((sums / n).ravel(), rng).reshape(K, d)
        # Post-processing. A count below max(1, its noise sd) is taken as that
        # floor (a mean divided by a count near 0 is noise), and each mean
        # offset is projected into the ball every clipped row lies in.
        floor = max(1.0, count_sd)
        sizes = np.clip(noisy_counts, floor, float(n))
        offsets = project_ball(noisy_sums * (n / sizes)[:, None], radius)
        self._warn_if_clipped_away(
            noisy_sums.sum(axis=0), radius, mech.sd() * math.sqrt(K * d)
        )
        if self.priors is None:
            priors = sizes / np.sum(sizes)
        else:
            priors = np.asarray(self.priors, dtype=np.float64)
            priors = priors / np.sum(priors)
        return {
            "classes": classes,
            "center": center,
            "radius": radius,
            "sizes": sizes,
            "offsets": offsets,
            "priors": priors,
            "moments": moments,
            "makers": makers,
        }

    # -- prediction (post-processing) ----------------------------------------------
    def predict_proba(self, X):
        """Posterior probability of each class (free; not private on private X).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``.
        """
        scores = self._joint_log_likelihood(X)
        scores = scores - scores.max(axis=1, keepdims=True)
        proba = np.exp(scores)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        scores = self._joint_log_likelihood(X)
        top = scores.max(axis=1, keepdims=True)
        return scores - top - np.log(np.exp(scores - top).sum(axis=1, keepdims=True))

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on ``X`` and ``y`` (not private: it reads them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            Their labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights.

        Returns
        -------
        float
            Accuracy of :meth:`predict`.

        Warns
        -----
        PrivacyLeakWarning
            When called by scikit-learn's cross-validation or search on a test
            fold (the accuracy is published without noise and without a charge).
        """
        warn_if_scored_in_search(self)
        return super().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
