"""What a search or cross-validation will charge: :class:`SearchCost`.

Built by :mod:`dpgauss.model_selection._pricing` from public values only (the
estimator's planned costs at each fold's training size, the splitter, the
private scorers); it composes the charges per ledger and checks them against
each budget before anything runs.
"""

from dpgauss.accounting import ZCDP
from dpgauss.accounting._composition import compose
from dpgauss.accounting._costs import value_of
from dpgauss.exceptions import BudgetExceededError

__all__ = ["SearchCost"]


def _magnitude(total, costs):
    """The composed cost as one number in the currency of ``total``."""
    spent = compose(total, costs)
    return value_of(spent)


class SearchCost:
    """What a search or cross-validation will charge, priced before it runs.

    Returned by :func:`search_cost`, :func:`cross_validation_cost` and the checks
    built on them; not meant to be built by hand.

    Parameters
    ----------
    what : str
        What is priced (``"GridSearchCV"``, ``"cross-validation"``, ...).
    n_candidates : int
        Number of parameter settings.
    n_splits : int
        Number of train/test splits per candidate.
    n_scores : int
        Number of private scorer calls.
    fixed : dict
        Ledger path (None for private steps without a budget) to the list of
        costs of the cross-validation fits and scores.
    refits : list of dict
        For each candidate, ledger path to the costs of refitting it (empty list
        when the search does not refit).
    budgets : dict
        Ledger path to a budget handle.

    Attributes
    ----------
    what : str
        What is priced.
    n_candidates : int
        Number of parameter settings.
    n_splits : int
        Number of splits per candidate.
    n_fits : int
        Number of fits, the refit included.
    n_scores : int
        Number of private scorer calls.
    refit : bool
        Whether the price includes a refit.
    budgets : tuple of PrivacyBudget
        The budgets charged (one handle per ledger).

    See Also
    --------
    check_search_budget : Price a search and refuse it if it cannot pay.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import cross_validation_cost, make_private_scorer
    >>> budget = PrivacyBudget(rho=1.0)
    >>> est = PrivateCovariance(rho=0.1, data_norm=3.0, budget=budget)
    >>> scorer = make_private_scorer(budget=budget, rho=0.02, bounds=(-10.0, 0.0))
    >>> X = np.zeros((100, 2))  # only the shape is read
    >>> cost = cross_validation_cost(est, X, cv=5, scoring=scorer)
    >>> cost.n_fits, cost.n_scores, cost.total(budget)
    (5, 5, ZCDP(rho=0.6))
    """

    def __init__(
        self, *, what, n_candidates, n_splits, n_scores, fixed, refits, budgets
    ):
        self.what = what
        self.n_candidates = int(n_candidates)
        self.n_splits = int(n_splits)
        self.refit = bool(refits)
        self.n_fits = self.n_candidates * self.n_splits + int(self.refit)
        self.n_scores = int(n_scores)
        self._fixed = {key: list(costs) for key, costs in fixed.items()}
        self._refits = [dict(r) for r in refits]
        self._budgets = dict(budgets)
        self.budgets = tuple(self._budgets.values())

    def _key(self, budget):
        return None if budget is None else budget.path

    def _refit_options(self, key):
        options = []
        for refit in self._refits:
            costs = list(refit.get(key, []))
            if costs not in options:
                options.append(costs)
        return options or [[]]

    def costs(self, budget):
        """Return the costs charged to ``budget``, with the dearest refit.

        Parameters
        ----------
        budget : PrivacyBudget or None
            A budget (any handle to its ledger), or None for the costs of private
            steps that have no budget (they are charged to no ledger).

        Returns
        -------
        list of ZCDP, PureDP or ApproxDP
            One cost per release: the cross-validation fits and scores, then the
            refit of the most expensive candidate (the search refits the best
            one, which is not known in advance).
        """
        key = self._key(budget)
        total = ZCDP(1.0) if budget is None else budget.total
        refit = max(self._refit_options(key), key=lambda c: _magnitude(total, c))
        return [*self._fixed.get(key, []), *refit]

    def total(self, budget):
        """Return the composed cost charged to ``budget``, in its currency.

        Parameters
        ----------
        budget : PrivacyBudget or None
            A budget, or None (composed as zCDP).

        Returns
        -------
        ZCDP, PureDP or ApproxDP
            The composition of :meth:`costs`.
        """
        total = ZCDP(1.0) if budget is None else budget.total
        return compose(total, self.costs(budget))

    def check(self):
        """Raise unless every budget can pay the whole price; record nothing.

        Each budget is checked with the refit of every candidate (whichever wins),
        by :meth:`~dpgauss.PrivacyBudget.check`. Costs of private steps without a
        budget are charged to no ledger and not checked.

        Raises
        ------
        BudgetExceededError
            If a budget cannot pay; nothing is spent.
        """
        for key, budget in self._budgets.items():
            for refit in self._refit_options(key):
                try:
                    budget.check([*self._fixed.get(key, []), *refit])
                except BudgetExceededError as exc:
                    raise BudgetExceededError(
                        f"{self.what} needs {self.total(budget)} from the budget at "
                        f"{key!r} ({self._describe()}), but only "
                        f"{budget.remaining()} of {budget.total} remains. Nothing "
                        f"was spent and no data was read: {self._advice()}"
                    ) from exc

    @property
    def _one_fit(self):
        """Whether this prices one fit (``fit_cost``): no splits, no scores."""
        return self.n_splits == 0 and self.n_scores == 0

    def _advice(self):
        if self._one_fit:
            return "lower the privacy parameters of its private steps."
        return (
            "shrink the grid, the number of splits, or the privacy of each fit "
            "and score."
        )

    def _describe(self):
        if self._one_fit:
            return "one fit"
        refit = " + 1 refit" if self.refit else ""
        return (
            f"{self.n_candidates} candidates x {self.n_splits} splits = "
            f"{self.n_candidates * self.n_splits} fits{refit}, "
            f"{self.n_scores} private scores"
        )

    def __repr__(self):
        charged = "; ".join(f"{b.path}: {self.total(b)}" for b in self.budgets)
        return f"SearchCost({self.what}: {self._describe()}; {charged or 'no budget'})"


# -- what one fit charges ------------------------------------------------------------
