"""A Pipeline fits whole or spends nothing: its budgets checked before its
first private step spends.

scikit-learn's ``Pipeline.fit`` fits the steps in order, and each private
step charges its budget when its turn comes. A pipeline whose budget can pay
its first private steps but not the last used to spend on the first ones,
then refuse the last ("Nothing was spent", of that step only) and leave the
pipeline half refitted: budget rho 3, a private scaler at rho 1 and LDA at
rho 1, fitted once, then again: the scaler spent the last rho, LDA refused.

Here the first private step of the pipeline being fitted (found on the call
stack, outermost ``Pipeline.fit``) prices the whole fit before it spends or
clears anything: every private step's planned costs at the width it receives
(:func:`~dpgauss.utils._widths.private_parts`; public values only: the
pipeline's structure, n and d) are checked against each budget involved, and
a budget that cannot pay them all raises
:class:`~dpgauss.exceptions.BudgetExceededError`. Nothing has been spent then,
and every private step keeps its previous fit: the pipeline stays usable.
Where the price cannot be read (a width only a fit would tell, a composite
step that holds a private one), the steps charge one by one as before.
"""

from dpgauss.exceptions import BudgetExceededError
from dpgauss.utils._leak import _PIPELINE_MODULE, _callers, is_private
from dpgauss.utils._widths import contains_private, fit_charges, private_parts

__all__ = ["check_pipeline_budget"]


def _outermost_pipeline_fit():
    """``(pipeline, X)`` of the outermost ``Pipeline.fit`` on the call stack,
    or None."""
    found = None
    for frame in _callers():
        if (
            frame.f_globals.get("__name__") == _PIPELINE_MODULE
            and frame.f_code.co_name == "fit"
            and isinstance(getattr(frame.f_locals.get("self"), "steps", None), list)
            and "X" in frame.f_locals
        ):
            found = (frame.f_locals["self"], frame.f_locals["X"])
    return found


def _first_private(pipeline):
    """The first private step of ``pipeline`` (nested pipelines searched), or
    None when it sits in a composite step (a ``ColumnTransformer``, say)."""
    for _, step in pipeline.steps:
        if is_private(step):
            return step
        if isinstance(getattr(step, "steps", None), list):
            inner = _first_private(step)
            if inner is not None:
                return inner
        if contains_private(step):
            return None
    return None


def check_pipeline_budget(estimator):
    """Refuse, before ``estimator`` spends or clears its fit, a pipeline fit
    that its budgets cannot pay in full (module docstring); a no-op unless
    ``estimator`` is the first private step of the pipeline being fitted.

    Parameters
    ----------
    estimator : object
        The private estimator about to fit.

    Raises
    ------
    BudgetExceededError
        If a budget the pipeline's private steps charge cannot pay them all;
        nothing is spent.

    Examples
    --------
    >>> from dpgauss.utils._pipeline_budget import check_pipeline_budget
    >>> check_pipeline_budget(object())  # not inside a Pipeline.fit: nothing
    """
    found = _outermost_pipeline_fit()
    if found is None:
        return
    pipeline, X = found
    if _first_private(pipeline) is not estimator:
        return
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return
    n, d = int(shape[0]), int(shape[1])
    budgets = {}
    try:
        charges = fit_charges(pipeline, d, None, budgets, n)
    except (ValueError, TypeError):  # a price only a fit can tell: step by step
        return
    for key, budget in budgets.items():
        try:
            budget.check(charges[key])
        except BudgetExceededError as exc:
            # The steps charging this ledger (the width does not matter here).
            steps = ", ".join(
                type(obj).__name__
                for obj, _ in private_parts(pipeline, d, 1)
                if getattr(getattr(obj, "budget", None), "path", None) == key
            )
            raise BudgetExceededError(
                f"{type(pipeline).__name__}: its private steps ({steps}) need more "
                "together than the budget has left, so the fit is refused before "
                "any of them spends; every step keeps its previous fit. "
                f"{exc}"
            ) from exc
