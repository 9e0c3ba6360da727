"""Warn when an estimator's non-private ``score`` is used by model selection.

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

from dpgauss.exceptions import PrivacyLeakWarning

__all__ = ["private_scoring", "warn_if_scored_in_search"]

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


def _called_from_model_selection():
    """True when scikit-learn's cross-validation code is on the call stack."""
    getframe = getattr(sys, "_getframe", None)
    if getframe is None:  # not CPython: no cheap stack access, stay silent
        return False
    frame = getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return False
        if frame.f_globals.get("__name__") == _MODEL_SELECTION_MODULE:
            return True
        frame = frame.f_back
    return False


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
    >>> from dpgauss.model_selection._leak import warn_if_scored_in_search
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
        stacklevel=3,
    )
    return True
