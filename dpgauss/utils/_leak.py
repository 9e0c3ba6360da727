"""Warn when privacy leaks around a private estimator.

Two situations are detected from the call stack and public structure only:
an estimator's non-private ``score`` used by model selection
(:func:`warn_if_scored_in_search`), and a private estimator fitted in a
``Pipeline`` after a step that learns from the same rows without noise
(:func:`warn_if_fitted_after_leaky_step`).

An estimator's ``score(X)`` reads ``X``. Inside ``cross_val_score``,
``cross_validate``, ``validation_curve`` or a ``GridSearchCV`` the rows it reads
are a private test fold, and the mean log-likelihoods it returns are published in
``cv_results_``, ``best_score_`` and ``best_params_`` without noise and without
any charge to a budget. :func:`warn_if_scored_in_search` detects that situation
(scikit-learn's ``sklearn.model_selection._validation`` on the call stack) and
issues :class:`~dpgauss.exceptions.PrivacyLeakWarning`.

A :class:`~dpgauss.model_selection.PrivateScorer` reads the same rows through
``score_samples``, but clips and noises what it reads and pays for it first; while
it computes, :func:`private_scoring` marks the context so that nothing warns.
"""

import contextlib
import contextvars
import sys
import warnings
import weakref

from dpgauss.exceptions import PrivacyLeakWarning

__all__ = [
    "is_private",
    "learns_from_rows",
    "private_scoring",
    "reads_labels",
    "warn_if_fitted_after_leaky_step",
    "warn_if_scored_in_search",
    "warn_if_split_by_labels",
]

#: The module whose functions (``_fit_and_score``, ``_score``) call scorers in
#: every scikit-learn cross-validation and search.
_MODEL_SELECTION_MODULE = "sklearn.model_selection._validation"
#: How many frames up the stack to look. A scorer is called a handful of frames
#: below ``_fit_and_score`` (``_score``, the scorer, ``Pipeline.score``, the
#: estimator's ``score``); 64 leaves room for deep pipelines and stays cheap.
_MAX_DEPTH = 64

_IN_PRIVATE_SCORER = contextvars.ContextVar("dpgauss_private_scoring", default=False)


@contextlib.contextmanager
def private_scoring():
    """Mark the enclosed code as a private scorer's paid-for read of a test fold.

    Used by :class:`~dpgauss.model_selection.PrivateScorer` around its call to
    ``score_samples`` (or the per-sample callable); thread- and task-local.

    Yields
    ------
    None
        Nothing; the context is marked until the block exits.
    """
    token = _IN_PRIVATE_SCORER.set(True)
    try:
        yield
    finally:
        _IN_PRIVATE_SCORER.reset(token)


#: Packages whose frames a warning skips to point at the caller's own line.
_LIBRARY_PREFIXES = ("dpgauss", "sklearn", "joblib", "numpy", "scipy")


def caller_stacklevel():
    """The ``stacklevel`` at which a warning points at the first frame outside
    dpgauss, scikit-learn, joblib, numpy and scipy (the user's own line).

    For the function that calls this one and then ``warnings.warn``; 2 (its
    caller) when no such frame is found or the stack cannot be read.

    Examples
    --------
    >>> from dpgauss.utils._leak import caller_stacklevel
    >>> caller_stacklevel() >= 1
    True
    """
    getframe = getattr(sys, "_getframe", None)
    if getframe is None:
        return 2
    frame, level = getframe(1), 1
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if level > 1 and name.split(".")[0] not in _LIBRARY_PREFIXES:
            return level
        frame, level = frame.f_back, level + 1
    return 2


def _callers():
    """The frames above the caller of this function's caller, innermost
    first, at most :data:`_MAX_DEPTH` (none where the interpreter gives no
    cheap stack access: the checks then stay silent)."""
    getframe = getattr(sys, "_getframe", None)
    if getframe is None:  # not CPython
        return
    frame = getframe(2)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return
        yield frame
        frame = frame.f_back


def _called_from_model_selection():
    """True when scikit-learn's cross-validation code is on the call stack."""
    return any(
        frame.f_globals.get("__name__") == _MODEL_SELECTION_MODULE
        for frame in _callers()
    )


def warn_if_scored_in_search(estimator):
    """Warn when ``estimator.score`` runs inside scikit-learn's model selection.

    Call it first thing in an estimator's ``score``. It issues
    :class:`~dpgauss.exceptions.PrivacyLeakWarning` when the call comes from
    ``sklearn.model_selection`` (``cross_val_score``, ``cross_validate``,
    ``validation_curve``, ``GridSearchCV``, ``RandomizedSearchCV``, ...), where
    the rows scored are a private test fold and the scores are published without
    noise. It stays silent elsewhere (scoring public data by hand) and while a
    :class:`~dpgauss.model_selection.PrivateScorer` computes.

    Parameters
    ----------
    estimator : object
        The estimator whose ``score`` is running (named in the message).

    Returns
    -------
    bool
        Whether a warning was issued.

    Examples
    --------
    >>> from dpgauss.utils._leak import warn_if_scored_in_search
    >>> warn_if_scored_in_search(object())  # not inside a cross-validation
    False
    """
    if _IN_PRIVATE_SCORER.get() or not _called_from_model_selection():
        return False
    name = type(estimator).__name__
    warnings.warn(
        f"{name}.score read a private test fold inside scikit-learn's model "
        "selection: the scores it returns (cv_results_, best_score_, best_params_, "
        "cross_val_score's array) are computed on private rows without noise, are "
        "not differentially private and are not charged to any budget. Score with "
        "scoring=dpgauss.model_selection.make_private_scorer(budget=..., rho=..., "
        "bounds=(low, high)) instead, and price the search first with "
        "dpgauss.model_selection.check_search_budget(search, X) (use "
        "error_score='raise').",
        PrivacyLeakWarning,
        stacklevel=caller_stacklevel(),
    )
    return True


# -- folds formed from the labels or groups ------------------------------------------
#: The scikit-learn functions that hold the checked splitter of a
#: cross-validation in a local variable while they clone the estimator for
#: each fold (the clones are made in the calling process, worker processes
#: or not): the module, the function, the variable.
#: A search's is ``cv`` in ``evaluate_candidates`` (the clones are made
#: there), ``cv_orig`` in ``fit`` up to scikit-learn 1.8, the search's
#: ``_checked_cv_orig`` from 1.9.
_SPLITTER_FRAMES = {
    ("sklearn.model_selection._validation", "cross_validate"): ("cv",),
    ("sklearn.model_selection._validation", "cross_val_predict"): ("cv",),
    ("sklearn.model_selection._validation", "validation_curve"): ("cv",),
    ("sklearn.model_selection._validation", "learning_curve"): ("cv",),
    ("sklearn.model_selection._validation", "permutation_test_score"): ("cv",),
    ("sklearn.model_selection._search", "evaluate_candidates"): ("cv",),
    ("sklearn.model_selection._search", "fit"): ("cv_orig", "self._checked_cv_orig"),
}


def reads_labels(splitter):
    """Whether a splitter forms its folds from the labels or the groups
    (scikit-learn's stratified and group splitters, by name: ``StratifiedKFold``,
    ``RepeatedStratifiedKFold``, ``StratifiedShuffleSplit``, ``GroupKFold``,
    ``LeaveOneGroupOut``, ...)."""
    name = type(splitter).__name__
    return "Stratified" in name or "Group" in name


def _running_splitter():
    """The checked splitter of the cross-validation on the call stack, or None."""
    for frame in _callers():
        key = (frame.f_globals.get("__name__"), frame.f_code.co_name)
        for name in _SPLITTER_FRAMES.get(key, ()):
            owner, _, attribute = name.partition(".")
            value = frame.f_locals.get(owner)
            if attribute:
                value = getattr(value, attribute, None)
            if value is not None:
                return value
    return None


def warn_if_split_by_labels(estimator):
    """Warn when ``estimator`` is cloned for a cross-validation whose folds read
    the labels or groups.

    scikit-learn clones the estimator once per fold in the calling process
    (with worker processes too) while ``cross_validate`` (``cross_val_score``),
    ``validation_curve``, ``learning_curve``, ``cross_val_predict``,
    ``permutation_test_score`` or a search's ``fit`` holds the checked
    splitter; a classifier's ``cv=5`` is a ``StratifiedKFold``. Folds formed
    from the labels are not a public function of the row index: changing one
    row's label moves other rows between folds (up to 8 of 1,000 rows with
    5 folds), so a fold's fit and score can differ in several rows between
    neighbouring data sets and pay a multiple of what the ledger records.
    Issues :class:`~dpgauss.exceptions.PrivacyLeakWarning` naming the
    splitter and the fix; reads the call stack and the splitter's class only.

    Parameters
    ----------
    estimator : object
        The estimator being cloned (named in the message).

    Returns
    -------
    bool
        Whether a warning was issued.

    Examples
    --------
    >>> from dpgauss.utils._leak import warn_if_split_by_labels
    >>> warn_if_split_by_labels(object())  # not inside a cross-validation
    False
    """
    splitter = _running_splitter()
    if splitter is None or not reads_labels(splitter):
        return False
    if _warned_already(splitter):  # one warning per run, not one per fold
        return False
    # The same number of folds in the advice (public: the splitter's own).
    splits = getattr(splitter, "n_splits", None)
    splits = splits or getattr(splitter, "cvargs", {}).get("n_splits") or 5
    warnings.warn(
        f"{type(estimator).__name__} is cross-validated with "
        f"{type(splitter).__name__}, which forms the folds from the labels or "
        "groups: changing one row's label moves other rows between folds, so a "
        "fold's fit and its score can pay several times what the ledger records "
        "(an integer cv is a StratifiedKFold for a classifier). Split without "
        f"reading the rows: cv=KFold(n_splits={splits}, shuffle=True, "
        "random_state=0).",
        PrivacyLeakWarning,
        stacklevel=caller_stacklevel(),
    )
    return True


#: The splitters already warned about (weakly held: one warning per run).
_WARNED_SPLITTERS = weakref.WeakSet()


def _warned_already(splitter):
    """Whether ``splitter`` (the run's checked splitter object) was warned
    about; records it. A splitter that takes no weak reference is always new."""
    try:
        if splitter in _WARNED_SPLITTERS:
            return True
        _WARNED_SPLITTERS.add(splitter)
    except TypeError:
        return False
    return False


# -- a non-private, data-dependent step before a private one in a Pipeline ----------
#: The module whose ``Pipeline.fit`` / ``_fit`` fit the steps in order.
_PIPELINE_MODULE = "sklearn.pipeline"
#: Transformers that need ``fit`` but learn only the number of columns (public),
#: so fitting them on private rows releases nothing.
SHAPE_ONLY_STEPS = frozenset({"PolynomialFeatures"})


def is_private(obj):
    """Whether ``obj`` is a private estimator instance (it has ``planned_costs``:
    dpgauss finds private steps by duck typing, never by importing them)."""
    return not isinstance(obj, type) and callable(getattr(obj, "planned_costs", None))


def _combined_parts(step):
    """The transformers a ``ColumnTransformer`` or ``FeatureUnion`` combines
    (its ``remainder`` included), or None for any other step."""
    name = type(step).__name__
    if name == "ColumnTransformer":
        parts = [t for _, t, _ in step.transformers]
        return [*parts, step.remainder]
    if name == "FeatureUnion":
        return [t for _, t in step.transformer_list]
    return None


def learns_from_rows(step):
    """Whether fitting ``step`` reads the values of the rows without noise.

    False for ``None``/"passthrough", dpgauss's private estimators (they pay),
    stateless transformers (scikit-learn's tag ``requires_fit=False``:
    ``FunctionTransformer``, ``Normalizer``, ...) and :data:`SHAPE_ONLY_STEPS`;
    a nested ``Pipeline`` learns from the rows when one of its steps does;
    a ``ColumnTransformer`` or ``FeatureUnion`` when one of its transformers
    does ("drop" and "passthrough" do not); True for everything else (a
    ``StandardScaler``, ``PCA``, ``SimpleImputer``, an encoder's categories,
    ...).

    Parameters
    ----------
    step : object
        A pipeline step.

    Returns
    -------
    bool
        True when its fit is a non-private function of the rows.

    Examples
    --------
    >>> from sklearn.preprocessing import FunctionTransformer, StandardScaler
    >>> from dpgauss.utils._leak import learns_from_rows
    >>> learns_from_rows(StandardScaler()), learns_from_rows(FunctionTransformer())
    (True, False)
    """
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return False
    if is_private(step):
        return False
    steps = getattr(step, "steps", None)
    if isinstance(steps, list):
        return any(learns_from_rows(s) for _, s in steps)
    parts = _combined_parts(step)
    if parts is not None:
        return any(learns_from_rows(part) for part in parts)
    if type(step).__name__ in SHAPE_ONLY_STEPS:
        return False
    try:
        return bool(step.__sklearn_tags__().requires_fit)
    except Exception:  # not a scikit-learn estimator: assume it learns
        return True


def leaky_steps_before(pipeline, estimator):
    """Names of the steps fitted on the rows before ``estimator`` that learn
    from them without noise (nested pipelines searched); None when
    ``estimator`` is not one of ``pipeline``'s steps (by identity)."""
    leaky = []
    for name, step in pipeline.steps:
        if step is estimator:
            return leaky
        inner = getattr(step, "steps", None)
        if isinstance(inner, list):
            found = leaky_steps_before(step, estimator)
            if found is not None:
                return leaky + [f"{name}__{n}" for n in found]
        if learns_from_rows(step):
            leaky.append(name)
    return None


def _fitting_pipelines():
    """The scikit-learn Pipelines whose ``fit`` is on the call stack, outermost last."""
    found = []
    for frame in _callers():
        if frame.f_globals.get("__name__") == _PIPELINE_MODULE:
            owner = frame.f_locals.get("self")
            if isinstance(getattr(owner, "steps", None), list) and all(
                owner is not p for p in found
            ):
                found.append(owner)
    return found


def warn_if_fitted_after_leaky_step(estimator):
    """Warn when ``estimator`` is fitted in a Pipeline after a non-private step.

    Called by every private fit before it reads the data. A step such as
    ``StandardScaler`` fitted on the same private rows publishes what it learnt
    (its ``mean_``, ``scale_``) in the fitted pipeline, and hands the private
    step rows transformed by it, so that one changed row moves every row the
    private step sees: the private step's sensitivity no longer holds, and the
    pipeline as a whole is not differentially private. Detected from the call
    stack (scikit-learn's ``Pipeline.fit``) and the public structure of the
    pipeline only; silent outside a pipeline, when the estimator is not found
    among the steps (a pipeline with ``memory`` fits clones) and when the
    estimator itself sits inside a ``ColumnTransformer`` or ``FeatureUnion``
    (the steps before it are looked into, see :func:`learns_from_rows`).

    Parameters
    ----------
    estimator : object
        The private estimator about to be fitted.

    Returns
    -------
    list of str
        The names of the steps warned about (empty when none).

    Examples
    --------
    >>> from dpgauss.utils._leak import warn_if_fitted_after_leaky_step
    >>> warn_if_fitted_after_leaky_step(object())  # not inside a Pipeline
    []
    """
    for pipeline in reversed(_fitting_pipelines()):  # outermost first
        leaky = leaky_steps_before(pipeline, estimator)
        if leaky is None:
            continue
        if leaky:
            name = type(estimator).__name__
            steps = ", ".join(repr(s) for s in leaky)
            warnings.warn(
                f"Pipeline step(s) {steps} before {name} learn from the private "
                "rows without noise: what they learn is published in the fitted "
                f"pipeline, and the rows they hand {name} each depend on every "
                f"row, so {name}'s privacy guarantee does not hold for the "
                "pipeline. Use private steps (dpgauss.PrivateStandardScaler, ...) "
                "or steps fitted on public data only.",
                PrivacyLeakWarning,
                stacklevel=caller_stacklevel(),
            )
        return leaky
    return []
