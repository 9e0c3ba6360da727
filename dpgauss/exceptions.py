"""Exceptions and warnings raised by dpgauss."""

__all__ = [
    "BudgetExceededError",
    "LedgerError",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
    "PrivateTestFailedError",
    "UselessFitError",
    "UtilityWarning",
]


class PrivacyAccountingError(ValueError):
    """A privacy cost cannot be charged to a budget of this kind.

    For example, a rho-zCDP release cannot be charged to a pure epsilon-DP budget,
    because zero-concentrated DP does not imply pure DP.
    """


class BudgetExceededError(PrivacyAccountingError):
    """A spend would take a :class:`~dpgauss.PrivacyBudget` over its total.

    It is raised before any noise is drawn, and nothing is recorded in the
    ledger. An estimator whose budget is already too small when ``fit`` starts
    raises it before reading the data; if another process spends first while
    the data are being validated, it raises after validation, still before any
    release.
    """


class LedgerError(RuntimeError):
    """A budget cannot reach its ledger (file missing, unreadable or not a ledger).

    dpgauss never creates a fresh ledger silently in that case: doing so would
    forget earlier spends and so break the total the budget promises.
    """


class PrivateTestFailedError(RuntimeError):
    """The private test did not pass; the budget is spent.

    Raised by propose-test-release mechanisms (for example
    :class:`dpgauss.mean._tukey.RestrictedTukeyMechanism`) when their noisy
    check that the data are far from unsafe fails. The check read the data, so
    its privacy cost is spent; nothing is released but the failure itself,
    which the mechanism's privacy guarantee covers. More rows, or a larger
    epsilon or delta, make the check pass more often.
    """


class PrivacyLeakWarning(UserWarning):
    """A computation on private data that is not differentially private.

    Issued by :mod:`dpgauss.model_selection` when a search or cross-validation
    scores private test folds without noise:

    * :func:`~dpgauss.model_selection.search_cost` (and the checks built on it)
      warns when the ``scoring`` of a search or cross-validation is not a
      :class:`~dpgauss.model_selection.PrivateScorer` (the estimator's own
      ``score``, a metric name, any other callable), when no step of the
      estimator charges a privacy budget, and when the folds are chosen by
      reading labels or groups;
    * :func:`dpgauss.utils._leak.warn_if_scored_in_search` warns when
      an estimator's ``score`` is called from scikit-learn's model selection
      (``cross_val_score``, ``GridSearchCV``, ...), whose ``cv_results_``,
      ``best_score_`` and ``best_params_`` then reveal the private test folds.

    Fixed seeds do not trigger it: every ``random_state`` docstring says that an
    int seed is for tests and research.
    """


class UselessFitError(ValueError):
    """The public values predict the fit no better than its baseline.

    Raised before anything is spent (the default ``on_useless="raise"`` of
    every private estimator) when a fit's own prediction, computed from public
    values only (n, d, the budget, the public bounds and hints), says its
    release is no better than the simplest private answer with the same public
    knowledge (its *baseline*: the zero matrix for a covariance bounded by
    ``data_norm``, say) or that a private search it needs would go astray. The
    message says why and what would help (more rows, a larger budget, a box,
    hints, public rows). ``on_useless="warn"`` spends anyway and warns with
    :class:`UtilityWarning` instead. A refusal reads no private row: raising it
    reveals nothing.
    """


class UtilityWarning(UserWarning):
    """The public parameters predict a release no better than knowing nothing.

    Issued, with ``on_useless="warn"``, where the default raises
    :class:`UselessFitError`, and after a release whose released values show
    it is mostly noise. Before the spend it is issued, for example, by
    :class:`~dpgauss.PrivateCovariance` before it spends anything,
    from public values only (n, d, the budget, ``data_norm``, ``method``), when
    the predicted Frobenius error of the release exceeds that of the zero matrix
    for data spread evenly over the ``data_norm`` ball (trace ``data_norm^2``,
    all eigenvalues equal, so ``||C||_F = data_norm^2 / sqrt(d)``). Data that
    do not fill the ball (a loose bound) fare worse than predicted; data
    concentrated in a few directions (a large ``||C||_F`` for their trace) can
    fare better, so a warning at large d with low-rank data may be pessimistic.
    The remedies are a larger budget, more rows or a tighter ``data_norm``.
    Filter it with :mod:`warnings` when a poor release is expected (a search
    over budgets, a test).
    """
