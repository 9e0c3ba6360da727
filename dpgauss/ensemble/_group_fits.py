"""The subsample step of SubsampleAggregate: split the rows, fit each group, read
the statistics; and the public shape and the assembled estimator around it.

**Privacy.** Neighbouring datasets differ by replacing one row; n, k and the
wrapped estimator are public. :func:`group_candidates` splits the rows by a
permutation drawn from the fit's own generator, independently of the data,
into k groups of ``n // k`` rows, and fits a clone on each group alone, so
replacing one row changes one group's rows and at most one candidate. A fit
that raises anything (``KeyboardInterrupt`` and ``SystemExit`` included), or
returns a statistic of the wrong size or not finite, gives a *failed*
candidate, a fixed placeholder (a NaN row), never an exception: after the spend
an exception that one row could provoke would be a release. Warnings of the
group fits are swallowed for the same reason, and each fit runs with
floating-point errors ignored. Two estimators' groups are computed without
calling their fit (:mod:`dpgauss.ensemble._direct_fits`), the same
candidates. Nothing here is private on its own: the aggregators that follow
are private for any k candidates of which one changes.

:func:`probe_shape` reads the statistic's shape from a fit on public probe
rows (data-independent), and :func:`assemble` sets released values on a fresh
clone (post-processing).
"""

import warnings

import numpy as np
from sklearn import config_context
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from dpgauss.ensemble._direct_fits import direct_candidates, direct_fit, take_rows
from dpgauss.ensemble._isolation import isolated_candidates, start_method
from dpgauss.releases._winsorized import MIN_GROUPS

__all__ = [
    "MIN_GROUP_ROWS",
    "assemble",
    "astray_to_center",
    "attribute_names",
    "auto_groups",
    "fit_group",
    "group_candidates",
    "min_group_rows",
    "probe_shape",
    "read_statistic",
]

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
#: Groups have at least this many rows per parameter of the group fit (plus
#: one): see :func:`min_group_rows`.
ROWS_PER_PARAMETER = 2


def min_group_rows(p, d):
    """The fewest rows a group may have for a statistic of p values on d
    features: ``2 (q + 1)`` with ``q = min(p, d + 1)`` (public).

    q is the number of parameters a group fit determines: a linear model on d
    features has d + 1 (coefficients and intercept) whatever part of it the
    statistic reads, and a statistic of p < d + 1 values (a location, a
    scalar) needs no more than p + 1 rows to be defined. With s rows and q
    parameters, least squares on Gaussian rows has coefficient covariance
    ``sigma^2 E[(X'X)^-1] = sigma^2 I / (s - q - 1)`` (the inverse Wishart
    mean) against ``sigma^2 I / s`` for large s: with ``s = 2 (q + 1)`` a
    group's statistic is at most twice as variable as its size suggests, while
    with ``s <= q + 1`` it is undefined (a minimum-norm fit, shrunk towards 0:
    groups of 2-3 rows for a 6-parameter model returned the truth shrunk 5x).
    """
    q = min(int(p), int(d) + 1)
    return max(MIN_GROUP_ROWS, ROWS_PER_PARAMETER * (q + 1))


def auto_groups(n, d, classifier, rows=0, floor=MIN_GROUP_ROWS):
    """The "auto" number of groups from the public n and d: groups of
    ``max(25, 5 d, rows)`` rows, or ``max(100, 10 d)`` for a classifier, and at
    least ``5 MIN_GROUPS`` groups of ``floor`` rows when n allows (the
    aggregators may ask for more)."""
    size = max(AUTO_GROUP_ROWS, AUTO_ROWS_PER_FEATURE * d, rows, floor)
    if classifier:
        size = max(AUTO_CLASSIFIER_ROWS, AUTO_CLASSIFIER_ROWS_PER_FEATURE * d, floor)
    return max(n // size, min(MIN_GROUPS * 5, n // floor))


def attribute_names(statistic):
    """The fitted attributes ``statistic`` names (a tuple), or None for a
    callable."""
    if isinstance(statistic, str):
        return (statistic,)
    if isinstance(statistic, (tuple, list)) and all(
        isinstance(s, str) for s in statistic
    ):
        return tuple(statistic)
    return None


def read_statistic(statistic, fitted):
    """The statistic's parts (float arrays) read from a fitted estimator."""
    names = attribute_names(statistic)
    if names is None:
        return [np.asarray(statistic(fitted), dtype=np.float64)]
    return [np.asarray(getattr(fitted, n), dtype=np.float64) for n in names]


def public_classes(estimator, classes):
    """The sorted public classes (None when not given), after checking them.

    Raises ValueError when classes are given for an estimator that is not a
    classifier, or are not a 1-D list of at least two distinct labels.
    """
    if classes is None:
        return None
    if not is_classifier(estimator):
        raise ValueError(
            "SubsampleAggregate: classes are for a wrapped classifier; "
            f"{type(estimator).__name__} is not one. Nothing was spent."
        )
    labels = np.asarray(classes)
    unique = np.unique(labels) if labels.ndim == 1 else labels
    if labels.ndim != 1 or unique.size < 2 or unique.size != labels.size:
        raise ValueError(
            "SubsampleAggregate: classes must be a 1-D list of at least two "
            f"distinct labels, got {classes!r}. Nothing was spent."
        )
    return unique


def probe_shape(estimator, statistic, output_shape, d, y, classes=None, isolated=False):
    """The statistic's shape: given, or from a fit on public probe rows.

    With ``isolated``, the probe is also fitted in a process of its own
    (:func:`~dpgauss.ensemble._isolation.isolated_candidates`): if that fails
    where the fit in this process gave a finite statistic (isolation cannot
    work here: an estimator a spawned process cannot import, no processes
    allowed), ValueError before the spend rather than every group failing
    after it. This check runs when ``output_shape`` is given too (the probe
    is then fitted for it alone; a probe that cannot fit skips it, as the
    shape is known).

    Returns
    -------
    shape : tuple of int
        The statistic's shape (its parts concatenated when several).
    shapes : list of tuple or None
        Each part's shape (None when ``output_shape`` is given).
    """
    given = None if output_shape is None else tuple(int(s) for s in output_shape)
    if given is not None and not isolated:
        return given, None
    rows = max(2 * d + 2, 20)
    rng = np.random.default_rng(12345)
    Xp = rng.standard_normal((rows, d))
    yp = None
    if y is not None:
        y_arr = np.asarray(y)
        if is_classifier(estimator):
            labels = np.arange(2) if classes is None else classes
            yp = labels[np.arange(rows) % labels.size]
        elif y_arr.ndim == 2:
            yp = rng.standard_normal((rows, y_arr.shape[1]))
        else:
            yp = rng.standard_normal(rows)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = clone(estimator).fit(Xp, yp)
            parts = read_statistic(statistic, fitted)
    except Exception as exc:
        if given is not None:  # the shape is known; isolation is not checked
            return given, None
        raise ValueError(
            "SubsampleAggregate could not read the statistic from a fit on "
            f"public probe rows ({exc!r}); give output_shape. Nothing was spent."
        ) from exc
    shapes = [np.shape(p) for p in parts]
    size = int(sum(np.prod(s, dtype=np.int64) for s in shapes))
    if isolated and np.all(np.isfinite(np.concatenate([np.ravel(q) for q in parts]))):
        probe = (estimator, statistic, Xp, yp, classes)
        if np.isnan(isolated_candidates(fit_group, lambda g: probe, 1, size)).any():
            raise ValueError(
                "SubsampleAggregate(isolation='process') could not fit the "
                "estimator on public probe rows in a process of its own (on this "
                "platform each group's process is started by "
                f"{start_method()!r}). Nothing was spent."
            )
    if given is not None:
        return given, None
    shape = shapes[0] if len(shapes) == 1 else (size,)
    return tuple(int(s) for s in shape), shapes


def group_candidates(
    estimator,
    statistic,
    X,
    y,
    k,
    rng,
    shape,
    classes=None,
    isolation=False,
    n_jobs=None,
):
    """The k candidates (rows; NaN rows: failed group fits) and the group size.

    The rows are split by ``rng.permutation`` into k groups of ``n // k`` rows
    (the remainder left out); see the module docstring. With public
    ``classes``, a group whose fit learned other classes fails (a function of
    that group's rows alone, like any failed fit). With ``isolation``, each
    group is fitted in a process of its own
    (:func:`~dpgauss.ensemble._isolation.isolated_candidates`), by the same
    :func:`fit_group` on the same rows. With ``n_jobs`` other than None or
    1, the generic group fits run in joblib's workers and come back in group
    order (the same candidates).
    """
    n = X.shape[0]
    s = n // k
    order = rng.permutation(n)
    p = int(np.prod(shape, dtype=np.int64))

    def group_args(g):
        idx = order[g * s : (g + 1) * s]
        return (
            estimator,
            statistic,
            X[idx],
            None if y is None else take_rows(y, idx),
            classes,
        )

    if isolation:
        return isolated_candidates(fit_group, group_args, k, p), s
    direct = direct_fit(estimator, attribute_names(statistic), X, y, classes)
    Y = np.full((k, p), np.nan)
    # Public configuration for the group fits: X was validated finite before
    # the spend and the estimator's parameters by the probe fit, so sklearn's
    # per-call checks are skipped (fit_group fails a group whose float target
    # is not finite, as those checks did).
    with config_context(assume_finite=True, skip_parameter_validation=True):
        if direct is not None:
            # EmpiricalCovariance ignores y (of any shape): not read at all
            target = y if type(estimator) is LinearRegression else None
            flats = direct_candidates(direct, X, target, order, k, s)
        elif n_jobs is None or n_jobs == 1:
            flats = (fit_group(*group_args(g)) for g in range(k))
        else:
            flats = _pooled_candidates(group_args, k, p, n_jobs)
        for g, flat in enumerate(flats):
            if flat is not None and flat.shape == (p,) and np.all(np.isfinite(flat)):
                Y[g] = flat
    return Y, s


def _pooled_candidates(group_args, k, p, n_jobs):
    """The candidates of :func:`fit_group` in joblib's workers, in group order
    (sklearn's Parallel carries the caller's configuration to them).

    A fit that kills its worker (a crash in compiled code) makes the pool
    raise, which after the spend would be a release: the groups not yet
    answered are then fitted each in a process of its own, where such a
    crash fails that group alone."""
    done = []
    try:
        for flat in Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(fit_group)(*group_args(g)) for g in range(k)
        ):
            done.append(flat)
    except Exception:  # the pool's, never a fit's (fit_group catches those)
        rest = len(done)
        Y = isolated_candidates(fit_group, lambda g: group_args(rest + g), k - rest, p)
        done.extend(Y)
    return done


def fit_group(estimator, statistic, X, y, classes):
    """One group's candidate: ``statistic`` of a clone of ``estimator`` fitted
    on the group's rows, flattened; None when the fit fails (raises anything,
    or learns classes other than the public ``classes``).

    Warnings are swallowed and floating-point errors ignored (see the module
    docstring).
    """
    try:
        # errstate per group: a fit that calls np.seterr cannot re-arm
        # floating-point exceptions for the aggregation that follows
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _finite_target(y)  # what assume_finite skips (X: before the spend)
            fitted = clone(estimator).fit(X, y)
            parts = read_statistic(statistic, fitted)
            if classes is not None and not np.array_equal(
                np.asarray(fitted.classes_), classes
            ):
                raise ValueError("the group's classes are not the public ones")
        flat = np.concatenate([np.ravel(q) for q in parts])
    except BaseException:
        # Anything a group fit raises (KeyboardInterrupt and SystemExit
        # included: re-raising them after the spend would let one row
        # decide between a result and an exception) is a failed
        # candidate.
        return None
    finally:
        with np.errstate(all="ignore"):  # a finaliser's np.seterr is undone
            fitted = parts = None
    return flat


def _finite_target(y):
    """Raise ValueError on a float target that is not finite, as fit does
    without ``assume_finite`` (SVR or a tree fit a NaN target otherwise)."""
    target = np.asarray(0.0 if y is None else y)
    if target.dtype.kind in "fc" and not np.all(np.isfinite(target)):
        raise ValueError("the group's target is not finite")


def assemble(estimator, statistic, value, d, shape, shapes, classes=None):
    """An unfitted clone of ``estimator`` carrying the released values as its
    named attributes (and ``n_features_in_``, and the public ``classes`` as
    ``classes_``), or None when ``statistic`` is a callable or an attribute
    cannot be set."""
    est = _assemble(estimator, statistic, value, d, shape, shapes)
    if est is not None and classes is not None:
        est.classes_ = classes
    return est


def _assemble(estimator, statistic, value, d, shape, shapes):
    names = attribute_names(statistic)
    if names is None or shapes is None:
        if names is not None and len(names) == 1:
            est = clone(estimator)
            try:
                setattr(est, names[0], np.asarray(value).reshape(shape))
                est.n_features_in_ = d
            except AttributeError:
                return None
            return est
        return None
    est = clone(estimator)
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


def call_released(owner, method, X):
    """``owner.estimator_.method(X)`` on the assembled estimator of a fitted
    SubsampleAggregate ``owner``, saying what to give when the released
    attributes are not all the method reads."""
    check_is_fitted(owner)
    if owner.estimator_ is None:
        raise AttributeError(
            "estimator_ is None: statistic is a callable, so no estimator "
            "can be assembled from the released values."
        )
    try:
        return getattr(owner.estimator_, method)(X)
    except (AttributeError, NotFittedError) as exc:
        raise AttributeError(
            f"estimator_.{method} needs attributes the fit did not release "
            f"({exc}). Name every attribute it reads in statistic (for a linear "
            "model, statistic=('coef_', 'intercept_')) and, for a classifier, "
            "give its public classes (classes=...)."
        ) from exc


_MAX_FLOAT = float(np.finfo(np.float64).max)
#: The default public bound on a Euclidean statistic's entries: far above a
#: fitted model's coefficients or a mean in the units data are usually kept in,
#: far below where a search gone astray lands.
DEFAULT_BOUND = 1e6


def bounded_statistic(value, bound, psd=False):
    """``value`` within the public ``bound``: post-processing of a release.

    Euclidean: the entrywise projection onto ``[-bound, bound]`` (NaN, which a
    release never gives, to 0). PSD: the matrix times ``min(1, bound / max|v|)``,
    a positive multiple, so it stays symmetric positive semi-definite. Either
    reads only the released value and the public bound, so the output is as
    private as the release, and it lies within ``bound`` for every noise draw.
    """
    value = np.nan_to_num(np.asarray(value, dtype=np.float64), nan=0.0)
    if not psd:
        return np.clip(value, -bound, bound)
    value = np.clip(value, -_MAX_FLOAT, _MAX_FLOAT)
    top = float(np.max(np.abs(value), initial=0.0))
    if top <= bound:
        return value
    return value * (bound / top)


def astray_to_center(value, center, bound):
    """The released aggregate and median, or the statistic's centre (0) for
    both when the release went astray.

    In a fit predicted useless (too few or too small groups, run on request
    with ``on_useless="warn"``) the private median and radius searches go
    astray and the aggregate lands at the public ``bound`` (1e6, not a
    statistic's value). A release with an entry (of the aggregate or of the
    released median ``center``) at or beyond ``bound``, or not finite, is
    replaced by the zero vector (and so is the median): the centre of the
    public box ``[-bound, bound]^p``, the simplest answer with the same
    public knowledge. Otherwise both are returned as they are. A function
    of released values and the public bound only: post-processing, free.
    """
    value = np.asarray(value, dtype=np.float64)
    parts = [value] if center is None else [value, np.asarray(center, np.float64)]
    with np.errstate(invalid="ignore"):
        astray = any(not np.all(np.abs(part) < bound) for part in parts)
    if not astray:
        return value, center
    return np.zeros_like(value), None if center is None else np.zeros_like(parts[1])
