"""Price a search or a cross-validation before it runs, and refuse it up front.

A search charges, for each candidate and each split, one fit (the costs the
estimator's ``planned_costs(n_features, n_samples=...)`` lists, for every private
step, at the fold's training size) and one
call of each private scorer (two with ``return_train_score=True``), then a refit.
All of these depend on public values only (parameters, the number of rows and of
columns, the splitter), so the whole price is known before any data are read. A
search that runs out of budget half-way has spent on candidates it then
discards; checking the price first avoids that.
"""

import collections.abc
import numbers
import warnings
from collections import defaultdict

from sklearn.base import clone, is_classifier
from sklearn.model_selection import (
    GridSearchCV,
    ParameterGrid,
    ParameterSampler,
    RandomizedSearchCV,
    check_cv,
)

from dpgauss.exceptions import PrivacyLeakWarning
from dpgauss.model_selection._cost import SearchCost
from dpgauss.model_selection._scorer import PrivateScorer
from dpgauss.utils._leak import reads_labels
from dpgauss.utils._widths import fit_charges

__all__ = [
    "check_cross_validation_budget",
    "check_search_budget",
    "cross_validation_cost",
    "search_cost",
]

#: Parameters that are public bounds: choosing them by non-private scores reads
#: them off the data, the very thing the privacy model forbids.
_PUBLIC_BOUNDS = ("data_norm", "location", "bounds")


def _n_samples_of(X):
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


# -- scorers, splits, candidates -----------------------------------------------------
def _scorers(scoring):
    """The private scorers in ``scoring`` and a description of the others."""
    if scoring is None:
        return [], ["the estimator's own score"]
    if isinstance(scoring, PrivateScorer):
        return [scoring], []
    if isinstance(scoring, str):
        return [], [repr(scoring)]
    if isinstance(scoring, dict):
        private = [s for s in scoring.values() if isinstance(s, PrivateScorer)]
        others = [
            f"{name!r}"
            for name, s in scoring.items()
            if not isinstance(s, PrivateScorer)
        ]
        return private, others
    if isinstance(scoring, (list, tuple, set, frozenset)):
        return [], [repr(s) for s in scoring]
    return [], [repr(scoring)]


def _n_features_of(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[1])
    return len(X[0])


def _splitter(cv, y, estimator):
    if isinstance(cv, collections.abc.Iterator):
        raise ValueError(
            "cv is an iterator: pricing would consume it and the search would then "
            "see no splits. Pass a splitter, an int, or a list of (train, test) "
            "pairs."
        )
    return check_cv(cv, y, classifier=is_classifier(estimator))


def _grid_names(grids):
    grids = [grids] if isinstance(grids, collections.abc.Mapping) else list(grids)
    return sorted({name for grid in grids for name in grid})


def _candidates(search):
    if isinstance(search, GridSearchCV):
        return list(ParameterGrid(search.param_grid)), _grid_names(search.param_grid)
    if isinstance(search, RandomizedSearchCV):
        dists = search.param_distributions
        dists = [dists] if isinstance(dists, collections.abc.Mapping) else list(dists)
        if any(hasattr(v, "rvs") for grid in dists for v in grid.values()):
            raise ValueError(
                "RandomizedSearchCV can be priced only when every distribution is a "
                "list of values (the candidates are then a fixed sample of a grid); "
                "a scipy distribution draws candidates whose cost is not known in "
                "advance. Use lists, or GridSearchCV."
            )
        state = search.random_state
        if isinstance(state, bool) or not isinstance(state, numbers.Integral):
            raise ValueError(
                "RandomizedSearchCV can be priced only with an int random_state (the "
                f"candidates must be the ones the search will draw), got {state!r}."
            )
        with warnings.catch_warnings():  # the search itself warns about n_iter
            warnings.simplefilter("ignore", UserWarning)
            sampled = list(ParameterSampler(dists, search.n_iter, random_state=state))
        return sampled, _grid_names(dists)
    raise TypeError(
        "only GridSearchCV and RandomizedSearchCV can be priced (successive halving "
        f"fits on data-dependent subsets), got {type(search).__name__}. For "
        "cross_validate, cross_val_score or validation_curve use "
        "cross_validation_cost."
    )


# -- the price -----------------------------------------------------------------------
def _warn(message, stacklevel):
    """Issue a PrivacyLeakWarning; ``stacklevel`` is counted from this function.

    Every private helper here takes the ``stacklevel`` right for itself and passes
    one more to the helper it calls, so the warning points at the user's call.
    """
    warnings.warn(message, PrivacyLeakWarning, stacklevel=stacklevel)


def _price(
    what,
    estimator,
    candidates,
    searched,
    X,
    y,
    groups,
    cv,
    scoring,
    return_train_score,
    refit,
    n_features,
    stacklevel,
):
    if n_features is not None and (
        isinstance(n_features, bool)
        or not isinstance(n_features, numbers.Integral)
        or n_features < 1
    ):
        raise ValueError(f"n_features must be an int >= 1, got {n_features!r}.")
    splitter = _splitter(cv, y, estimator)
    n_splits = int(splitter.get_n_splits(X, y, groups))
    private, others = _scorers(scoring)
    calls = n_splits * (2 if return_train_score else 1)
    budgets, fixed, refits = {}, defaultdict(list), []
    d = _n_features_of(X)
    # Each fold's fit is priced at its own training size (public: the split of
    # row indices), the refit at all rows.
    sizes = [len(train) for train, _ in splitter.split(X, y, groups)]
    any_private = False
    for params in candidates:
        est = clone(estimator).set_params(**clone(params, safe=False))
        by_size = {}  # folds of one size charge the same (KFold: two sizes)
        for size in sizes:
            if size not in by_size:
                by_size[size] = fit_charges(est, d, n_features, budgets, size)
            charges = by_size[size]
            any_private = any_private or bool(charges)
            for key, costs in charges.items():
                fixed[key].extend(costs)
        charges = fit_charges(est, d, n_features, budgets, _n_samples_of(X))
        for scorer in private:
            budgets.setdefault(scorer.budget.path, scorer.budget)
            fixed[scorer.budget.path].extend([scorer.cost] * calls)
        refits.append(charges)
    _leak_warnings(
        what, estimator, splitter, others, searched, any_private, stacklevel + 1
    )
    return SearchCost(
        what=what,
        n_candidates=len(candidates),
        n_splits=n_splits,
        n_scores=len(candidates) * calls * len(private),
        fixed=fixed,
        refits=refits if refit else [],
        budgets=budgets,
    )


def _leak_warnings(what, estimator, splitter, others, searched, any_private, level):
    if others:
        bounds = [n for n in searched if n.rsplit("__", 1)[-1] in _PUBLIC_BOUNDS]
        worst = (
            f" Worst case: the search tunes {', '.join(bounds)}, a public bound; "
            "choosing it by non-private scores reads it off the data."
            if bounds
            else ""
        )
        _warn(
            f"{what} scores private test folds with {', '.join(others)}, which is not "
            "a private scorer: the scores (cv_results_, best_score_, best_params_, "
            "cross_val_score's array) are computed on private rows without noise, "
            f"are not differentially private and are charged to no budget.{worst} "
            "Use scoring=dpgauss.model_selection.make_private_scorer(...).",
            level + 1,
        )
    if not any_private:
        _warn(
            f"{what}: no step of {type(estimator).__name__} charges a privacy budget "
            "(none has planned_costs), so its fits read the training folds without "
            "privacy and a private scorer cannot make the search private.",
            level + 1,
        )
    name = type(splitter).__name__
    if reads_labels(splitter):
        _warn(
            f"{what} splits with {name}, which reads the labels or groups: the folds "
            "are then not a public function of the row index, which the privacy "
            "of the scores assumes. Use KFold or ShuffleSplit.",
            level + 1,
        )


def _search_cost(search, X, y, groups, n_features, stacklevel):
    candidates, searched = _candidates(search)
    return _price(
        type(search).__name__,
        search.estimator,
        candidates,
        searched,
        X,
        y,
        groups,
        search.cv,
        search.scoring,
        search.return_train_score,
        bool(search.refit),
        n_features,
        stacklevel + 1,
    )


def search_cost(search, X, y=None, *, groups=None, n_features=None):
    """Return what a search will charge, before it runs.

    The price is n_candidates x n_splits x (the fit's costs + the private scorers'
    costs, twice with ``return_train_score``) plus, when the search refits, the
    refit of the most expensive candidate. A fit's costs are the
    ``planned_costs(n_features, n_samples=...)`` (at the fold's size) of every
    private step found through
    ``get_params(deep=True)`` (a Pipeline with several private steps costs their
    sum). Only the shape of ``X`` (and ``y`` and ``groups``, for the splitter) is
    read.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        The unfitted search. A RandomizedSearchCV needs list-valued
        distributions and an int ``random_state``.
    X : array-like of shape (n_samples, n_features)
        The data the search will be fitted on (only its shape is read).
    y : array-like, default=None
        Targets, if the search gets them.
    groups : array-like, default=None
        Groups, if the splitter uses them.
    n_features : int, default=None
        The number of columns every private step receives. By default it is
        ``X``'s for a private estimator or a Pipeline's first private step, and
        is found by fitting the steps before it on a public stand-in array (never
        on ``X``); give it when those steps change the width in a data-dependent
        way.

    Returns
    -------
    SearchCost
        The price, per budget.

    Warns
    -----
    PrivacyLeakWarning
        When the search's ``scoring`` is not a :class:`PrivateScorer` (the scores
        read the private test folds without noise; worst when the grid holds a
        public bound such as ``data_norm``), when no step charges a budget, or
        when the splitter reads labels or groups.

    See Also
    --------
    check_search_budget : Also refuse the search if a budget cannot pay.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import make_private_scorer, search_cost
    >>> budget = PrivacyBudget(rho=5.0)
    >>> scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-10.0, 0.0))
    >>> search = GridSearchCV(
    ...     PrivateCovariance(data_norm=3.0, budget=budget),
    ...     {"rho": [0.1, 0.2]}, cv=3, scoring=scorer, error_score="raise",
    ... )
    >>> cost = search_cost(search, np.zeros((300, 2)))
    >>> cost.n_fits, cost.n_scores
    (7, 6)
    >>> cost.total(budget)  # 3 x (0.1 + 0.2) + 6 x 0.05 + 0.2 (dearest refit)
    ZCDP(rho=1.4)
    """
    return _search_cost(search, X, y, groups, n_features, stacklevel=3)


def cross_validation_cost(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    cv=None,
    scoring=None,
    return_train_score=False,
    n_features=None,
):
    """Return what a cross-validation will charge, before it runs.

    For :func:`~sklearn.model_selection.cross_validate` and
    :func:`~sklearn.model_selection.cross_val_score` (no refit): n_splits x (the
    fit's costs + the private scorers' costs, twice with ``return_train_score``).
    For :func:`~sklearn.model_selection.validation_curve`, which always scores
    the training folds too, price the equivalent ``GridSearchCV(estimator,
    {param_name: param_range}, cv=cv, scoring=scoring, refit=False,
    return_train_score=True)`` with :func:`search_cost`.

    Parameters
    ----------
    estimator : estimator
        The unfitted estimator (or Pipeline).
    X : array-like of shape (n_samples, n_features)
        The data (only its shape is read).
    y : array-like, default=None
        Targets, if any.
    groups : array-like, default=None
        Groups, if the splitter uses them.
    cv : int, splitter or list of splits, default=None
        As in scikit-learn (None is 5-fold).
    scoring : PrivateScorer, dict, str, callable or None, default=None
        As in scikit-learn; anything but private scorers warns.
    return_train_score : bool, default=False
        Whether the training folds are scored too.
    n_features : int, default=None
        See :func:`search_cost`.

    Returns
    -------
    SearchCost
        The price, per budget.

    Warns
    -----
    PrivacyLeakWarning
        As :func:`search_cost`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import cross_validation_cost, make_private_scorer
    >>> budget = PrivacyBudget(rho=1.0)
    >>> scorer = make_private_scorer(budget=budget, epsilon=0.1, bounds=(-10.0, 0.0))
    >>> est = PrivateCovariance(rho=0.05, data_norm=3.0, budget=budget)
    >>> cross_validation_cost(est, np.zeros((100, 2)), cv=4, scoring=scorer).total(
    ...     budget
    ... )  # 4 x (0.05 + 0.1^2 / 2)
    ZCDP(rho=0.22)
    """
    return _price(
        "cross-validation",
        estimator,
        [{}],
        [],
        X,
        y,
        groups,
        cv,
        scoring,
        return_train_score,
        False,
        n_features,
        3,
    )


def check_search_budget(search, X, y=None, *, groups=None, n_features=None):
    """Price a search and raise now if a budget it charges cannot pay for it.

    Call it just before ``search.fit(X, y)``: a search that runs out of budget
    half-way has already paid for candidates it then discards. Give the search
    ``error_score="raise"``, so that a refused spend inside it is an error rather
    than a silent ``nan`` score. The check records nothing; a spend made by
    another process between the check and the fit can still make the fit raise.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        The unfitted search.
    X : array-like of shape (n_samples, n_features)
        The data the search will be fitted on (only its shape is read).
    y : array-like, default=None
        Targets, if any.
    groups : array-like, default=None
        Groups, if the splitter uses them.
    n_features : int, default=None
        See :func:`search_cost`.

    Returns
    -------
    SearchCost
        The price, which every budget involved can pay.

    Raises
    ------
    BudgetExceededError
        If a budget cannot pay for the whole search (the refit of any candidate
        included); nothing is spent.

    Warns
    -----
    PrivacyLeakWarning
        As :func:`search_cost`.
    UserWarning
        When ``search.error_score`` is not ``"raise"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import check_search_budget, make_private_scorer
    >>> budget = PrivacyBudget(rho=1.0)
    >>> scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-10.0, 0.0))
    >>> search = GridSearchCV(
    ...     PrivateCovariance(data_norm=3.0, budget=budget),
    ...     {"rho": [0.1, 0.2]}, cv=3, scoring=scorer, error_score="raise",
    ... )
    >>> check_search_budget(search, np.zeros((300, 2)))
    Traceback (most recent call last):
    ...
    dpgauss.exceptions.BudgetExceededError: GridSearchCV needs rho=1.4 ...
    >>> budget.spent()
    ZCDP(rho=0.0)
    """
    cost = _search_cost(search, X, y, groups, n_features, stacklevel=3)
    if search.error_score != "raise":
        warnings.warn(
            f"{type(search).__name__} has error_score={search.error_score!r}: a "
            "BudgetExceededError inside it would become a silent score of "
            f"{search.error_score!r} (after the budget was partly spent). Use "
            "error_score='raise'.",
            UserWarning,
            stacklevel=2,
        )
    cost.check()
    return cost


def check_cross_validation_budget(
    estimator,
    X,
    y=None,
    *,
    groups=None,
    cv=None,
    scoring=None,
    return_train_score=False,
    n_features=None,
):
    """Price a cross-validation and raise now if a budget cannot pay for it.

    Call it before :func:`~sklearn.model_selection.cross_validate` or
    :func:`~sklearn.model_selection.cross_val_score` with the same arguments,
    and pass ``error_score="raise"`` to those.

    Parameters
    ----------
    estimator : estimator
        The unfitted estimator (or Pipeline).
    X : array-like of shape (n_samples, n_features)
        The data (only its shape is read).
    y : array-like, default=None
        Targets, if any.
    groups : array-like, default=None
        Groups, if the splitter uses them.
    cv : int, splitter or list of splits, default=None
        As in scikit-learn (None is 5-fold).
    scoring : PrivateScorer, dict, str, callable or None, default=None
        As in scikit-learn.
    return_train_score : bool, default=False
        Whether the training folds are scored too.
    n_features : int, default=None
        See :func:`search_cost`.

    Returns
    -------
    SearchCost
        The price, which every budget involved can pay.

    Raises
    ------
    BudgetExceededError
        If a budget cannot pay; nothing is spent.

    Warns
    -----
    PrivacyLeakWarning
        As :func:`search_cost`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import (
    ...     check_cross_validation_budget, make_private_scorer)
    >>> budget = PrivacyBudget(rho=1.0)
    >>> scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-10.0, 0.0))
    >>> est = PrivateCovariance(rho=0.1, data_norm=3.0, budget=budget)
    >>> check_cross_validation_budget(est, np.zeros((100, 2)), cv=5, scoring=scorer)
    SearchCost(cross-validation: 1 candidates x 5 splits = 5 fits, 5 private ...)
    """
    cost = _price(
        "cross-validation",
        estimator,
        [{}],
        [],
        X,
        y,
        groups,
        cv,
        scoring,
        return_train_score,
        False,
        n_features,
        3,
    )
    cost.check()
    return cost


def fit_cost(estimator, X, y=None, *, n_features=None):
    """Price one fit of an estimator or a pipeline, before it runs.

    Every private step's planned costs at the width it receives and the
    number of rows of ``X`` (only its shape is read), per budget. A pipeline's
    ``fit`` checks this price itself before its first private step spends
    (and refuses a fit its budgets cannot pay in full); call this to see the
    price, or to check it before a longer script starts.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The unfitted (or fitted: only its parameters are read) estimator.
    X : array-like of shape (n_samples, n_features)
        The data the fit will see (only its shape is read).
    y : array-like, default=None
        Ignored; for symmetry with ``fit``.
    n_features : int, default=None
        The columns the private steps receive, where a step before them
        changes the width in a way a public stand-in cannot tell.

    Returns
    -------
    SearchCost
        The price of one fit (``n_fits`` 1): ``total(budget)`` per budget,
        ``check()`` to raise if a budget cannot pay it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from dpgauss import PrivacyBudget, PrivatePCA, PrivateStandardScaler
    >>> from dpgauss.model_selection import fit_cost
    >>> budget = PrivacyBudget(rho=1.0)
    >>> pipe = make_pipeline(
    ...     PrivateStandardScaler((-10.0, 10.0), rho=0.25, budget=budget),
    ...     PrivatePCA(2, data_norm=5.0, rho=0.5, budget=budget),
    ... )
    >>> cost = fit_cost(pipe, np.zeros((1000, 4)))
    >>> cost.n_fits, cost.total(budget)
    (1, ZCDP(rho=0.75))
    >>> cost.check()  # the budget can pay it: nothing raised, nothing spent
    >>> budget.spent()
    ZCDP(rho=0.0)
    """
    budgets = {}
    charges = fit_charges(
        estimator, _n_features_of(X), n_features, budgets, _n_samples_of(X)
    )
    return SearchCost(
        what=type(estimator).__name__,
        n_candidates=1,
        n_splits=0,
        n_scores=0,
        fixed={},
        refits=[charges],
        budgets=budgets,
    )
