"""A shared budget records every fit made by scikit-learn's meta-estimators.

Each PrivateCovariance(method="gauss") fit with ``center=True`` makes two releases
(mean and second moment) whose costs add up to the fit's rho, and every call of
the private scorer makes one, so the expected ledger is known exactly from the
number of fits and scores. Searches and cross-validations score with
:func:`dpgauss.model_selection.make_private_scorer`: an estimator's own ``score``
reads the private test folds without noise (and warns, with PrivacyLeakWarning).
"""

import math
import os
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dpgauss import PrivacyBudget, PrivateCovariance
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import BudgetExceededError, PrivacyLeakWarning
from dpgauss.model_selection import (
    check_cross_validation_budget,
    check_search_budget,
    make_private_scorer,
    search_cost,
)


@pytest.fixture
def X():
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 4))


def _rho_recorded(budget):
    return math.fsum(e.cost.rho for e in budget.ledger())


def _scorer(budget, rho=0.05):
    # Per-sample log-likelihoods of 4-d data are clipped to [-40, 0] (public).
    return make_private_scorer(
        budget=budget, rho=rho, bounds=(-40.0, 0.0), random_state=0
    )


def test_clone_shares_the_budget(X):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(
        method="gauss", rho=0.5, data_norm=5.0, budget=budget, random_state=0
    )
    twin = clone(est)
    assert twin.budget is budget
    twin.fit(X)
    est.fit(X)
    assert _rho_recorded(budget) == pytest.approx(1.0, abs=1e-15)
    assert len(budget.ledger()) == 4


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cross_val_score_records_every_fold(X, n_jobs):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(
        method="gauss", rho=0.3, data_norm=5.0, budget=budget, random_state=0
    )
    scorer = _scorer(budget)
    cost = check_cross_validation_budget(est, X, cv=KFold(5), scoring=scorer)
    scores = cross_val_score(
        est, X, cv=KFold(5), scoring=scorer, n_jobs=n_jobs, error_score="raise"
    )
    assert np.all(np.isfinite(scores))
    events = budget.ledger()
    assert len(events) == 5 * (2 + 1)  # 5 fits, 2 releases each, 5 scores
    assert _rho_recorded(budget) == pytest.approx(5 * (0.3 + 0.05), rel=1e-12)
    assert budget.spent() == cost.total(budget)
    if n_jobs == 2:  # every fold was fitted, and recorded, in a loky worker
        assert os.getpid() not in {e.pid for e in events}


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_records_every_fit_and_the_refit(X, n_jobs):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(
        method="gauss", data_norm=5.0, budget=budget, random_state=0
    )
    grid = {"rho": [0.1, 0.2], "center": [True, False]}
    search = GridSearchCV(
        est, grid, cv=3, scoring=_scorer(budget), n_jobs=n_jobs, error_score="raise"
    )
    check_search_budget(search, X)
    search.fit(X)
    best = search.best_params_
    # 4 candidates x 3 folds + 1 refit; a centered fit makes 2 releases, else 1;
    # each of the 12 cross-validation fits is scored once.
    n_events = 3 * (2 * 2 + 2 * 1) + 12 + (2 if best["center"] else 1)
    events = budget.ledger()
    assert len(events) == n_events
    expected_rho = 3 * 2 * (0.1 + 0.2) + 12 * 0.05 + best["rho"]
    assert _rho_recorded(budget) == pytest.approx(expected_rho, rel=1e-12)
    assert search.best_estimator_.privacy_spent_ == ZCDP(best["rho"])
    n_refit = 2 if best["center"] else 1
    assert {e.pid for e in events[-n_refit:]} == {os.getpid()}  # refit in parent
    if n_jobs == 2:  # the cross-validation fits ran, and spent, in loky workers
        assert os.getpid() not in {e.pid for e in events[:-n_refit]}
    print(f"GridSearchCV(n_jobs={n_jobs}): {len(events)} releases recorded")


def test_grid_search_is_refused_up_front(X):
    # 5 fits of rho=0.5 and 5 scores of rho=0.1 (+ refit) need 3.5 > 2: refused
    # before anything is spent.
    budget = PrivacyBudget(rho=2.0)
    est = PrivateCovariance(
        method="gauss", rho=0.5, data_norm=5.0, budget=budget, random_state=0
    )
    search = GridSearchCV(
        est, {"center": [True]}, cv=5, scoring=_scorer(budget, 0.1), error_score="raise"
    )
    with pytest.raises(BudgetExceededError, match=r"needs rho=3\.5"):
        check_search_budget(search, X)
    assert budget.ledger() == []


def test_grid_search_stops_at_the_cap(X):
    # Without the check: room for 3 folds of 0.5 + 0.1; the 4th fit raises before
    # reading the data, after 1.8 of the 2.0 were spent on a search that then
    # has no result (the waste the up-front check avoids).
    budget = PrivacyBudget(rho=2.0)
    est = PrivateCovariance(
        method="gauss", rho=0.5, data_norm=5.0, budget=budget, random_state=0
    )
    search = GridSearchCV(
        est, {"center": [True]}, cv=5, scoring=_scorer(budget, 0.1), error_score="raise"
    )
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        search.fit(X)
    assert _rho_recorded(budget) == pytest.approx(1.8, rel=1e-12)


def test_search_scored_by_the_estimator_warns_when_priced(X):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(method="gauss", rho=0.1, budget=budget, random_state=0)
    search = GridSearchCV(est, {"data_norm": [1.0, 5.0]}, cv=3)
    with pytest.warns(PrivacyLeakWarning, match="the search tunes data_norm"):
        cost = search_cost(search, X)
    assert cost.n_scores == 0  # the leaked scores are charged to nothing


def test_pipeline_with_public_transform(X):
    budget = PrivacyBudget(rho=5.0)
    pipe = make_pipeline(
        FunctionTransformer(np.tanh),  # a fixed map: reads no statistic of X
        PrivateCovariance(
            method="gauss", rho=0.25, data_norm=2.0, budget=budget, random_state=0
        ),
    )
    scorer = _scorer(budget)
    cost = check_cross_validation_budget(pipe, X, cv=4, scoring=scorer)
    scores = cross_val_score(
        pipe, X, cv=4, scoring=scorer, n_jobs=2, error_score="raise"
    )
    assert np.all(np.isfinite(scores))
    assert _rho_recorded(budget) == pytest.approx(4 * (0.25 + 0.05), rel=1e-12)
    assert budget.spent() == cost.total(budget)


def test_fitted_estimator_pickles_with_its_budget(X):
    budget = PrivacyBudget(rho=5.0)
    est = PrivateCovariance(
        method="gauss", rho=0.5, data_norm=5.0, budget=budget, random_state=0
    )
    est.fit(X)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.covariance_, est.covariance_)
    np.testing.assert_array_equal(restored.score_samples(X), est.score_samples(X))
    restored.fit(X)  # the restored copy still charges the same ledger
    assert _rho_recorded(budget) == pytest.approx(1.0, abs=1e-15)
