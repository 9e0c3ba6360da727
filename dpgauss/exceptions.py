"""Exceptions and warnings raised by dpgauss."""

__all__ = [
    "BudgetExceededError",
    "LedgerError",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
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


class PrivacyLeakWarning(UserWarning):
    """Reserved for settings that weaken the privacy guarantee.

    No estimator issues it yet; fixed seeds are documented instead (every
    ``random_state`` docstring says that an int seed is for tests and research).
    """
