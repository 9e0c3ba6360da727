"""Pricing searches and cross-validations before they run; exact accounting.

The price of a search is n_candidates x n_splits x (fit costs + scorer costs)
plus the refit. Each test that runs a search compares the ledger it leaves with
the price computed beforehand, event for event.
"""

import math
import warnings
from collections import Counter

import numpy as np
import pytest
from scipy.stats import uniform
from sklearn.base import BaseEstimator
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_validate,
    validation_curve,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, PolynomialFeatures

from dpgauss import PrivacyBudget, PrivateCovariance, TailSensitiveCovariance
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.exceptions import BudgetExceededError, PrivacyLeakWarning
from dpgauss.model_selection import (
    check_cross_validation_budget,
    check_search_budget,
    cross_validation_cost,
    make_private_scorer,
    search_cost,
)


class PerFeature(BaseEstimator):
    """A private stand-in whose fit costs rho = unit * n_features (to see widths)."""

    def __init__(self, unit=0.01, budget=None):
        self.unit = unit
        self.budget = budget

    def planned_costs(self, n_features, *, n_samples=None):
        return [ZCDP(self.unit * n_features)]

    def fit(self, X, y=None):
        X = np.asarray(X)
        if self.budget is not None:
            self.budget.spend_many(
                [(c, "gaussian:all") for c in self.planned_costs(X.shape[1])],
                estimator="PerFeature",
            )
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        return np.asarray(X)

    def score_samples(self, X):
        return -np.sum(np.asarray(X) ** 2, axis=1)


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(600, 3))


def _multiset(costs):
    return Counter(round(c.rho, 12) for c in costs)


def _recorded(budget):
    return [e.cost for e in budget.ledger()]


# -- exact accounting ------------------------------------------------------------------
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_records_exactly_the_predicted_events(X, n_jobs):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(data_norm=5.0, budget=budget, random_state=0)
    scorer = make_private_scorer(
        budget=budget, rho=0.05, bounds=(-30.0, 0.0), random_state=0
    )
    search = GridSearchCV(
        est,
        {"rho": [0.1, 0.3]},
        cv=3,
        scoring=scorer,
        error_score="raise",
        n_jobs=n_jobs,
    )
    cost = check_search_budget(search, X)
    assert (cost.n_candidates, cost.n_splits, cost.n_fits, cost.n_scores) == (
        2,
        3,
        7,
        6,
    )
    search.fit(X)

    # Prediction from planned_costs: 3 fits per candidate, one score per fit, and
    # the refit of the winner.
    fits = [c for rho in (0.1, 0.3) for c in est.set_params(rho=rho).planned_costs(3)]
    best = est.set_params(rho=search.best_params_["rho"]).planned_costs(3)
    predicted = fits * 3 + [ZCDP(0.05)] * 6 + best
    assert _multiset(_recorded(budget)) == _multiset(predicted)
    assert len(budget.ledger()) == 2 * 3 * 3 + 6 + 3
    assert budget.spent().rho == pytest.approx(
        3 * (0.1 + 0.3) + 6 * 0.05 + search.best_params_["rho"], rel=1e-12
    )
    # The price takes the dearest refit (rho = 0.3): it is an upper bound, tight
    # when the dearest candidate wins.
    assert cost.total(budget).rho == (pytest.approx(1.2 + 0.3 + 0.3, rel=1e-12))
    assert budget.spent().rho <= cost.total(budget).rho * (1 + 1e-12)


def test_the_price_fits_exactly(X):
    # A budget of exactly the price passes the check, and the search then fits.
    # rho: 3 x (0.1 + 0.3) + 6 x 0.05 + 0.3 = 1.8.
    budget = PrivacyBudget(rho=1.8)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    search = GridSearchCV(
        PrivateCovariance(data_norm=5.0, budget=budget),
        {"rho": [0.1, 0.3]},
        cv=3,
        scoring=scorer,
        error_score="raise",
    )
    check_search_budget(search, X)
    search.fit(X)


def test_a_search_that_cannot_pay_is_refused_before_spending(X):
    # Without the check, this search spends 4 of the 6 rho on fits and scores it
    # then cannot finish; with it, nothing is spent.
    budget = PrivacyBudget(rho=6.0)
    scorer = make_private_scorer(budget=budget, rho=0.5, bounds=(-30.0, 0.0))
    search = GridSearchCV(
        PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget),
        {"center": [True, False]},
        cv=3,
        scoring=scorer,
        error_score="raise",
    )
    with pytest.raises(
        BudgetExceededError,
        match=r"GridSearchCV needs rho=6\.5 .*2 candidates x 3 splits = 6 fits "
        r"\+ 1 refit, 6 private scores.*Nothing was spent",
    ):
        check_search_budget(search, X)
    assert budget.ledger() == []
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        search.fit(X)
    assert budget.spent().rho == pytest.approx(6.0, rel=1e-12)  # the waste


def test_every_candidate_refit_is_checked(X):
    # Refit of the rho=0.3 candidate does not fit, the 0.1 one would: refused,
    # since the winner is not known in advance.
    budget = PrivacyBudget(rho=1.2 + 0.3 + 0.2)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    search = GridSearchCV(
        PrivateCovariance(data_norm=5.0, budget=budget),
        {"rho": [0.1, 0.3]},
        cv=3,
        scoring=scorer,
        error_score="raise",
    )
    with pytest.raises(BudgetExceededError, match=r"needs rho=1\.8"):
        check_search_budget(search, X)
    search.set_params(refit=False)
    assert check_search_budget(search, X).n_fits == 6


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cross_validate_records_exactly_its_price(X, n_jobs):
    budget = PrivacyBudget(rho=10.0)
    est = TailSensitiveCovariance(rho=0.2, data_norm=5.0, budget=budget)
    scorer = make_private_scorer(budget=budget, epsilon=0.2, bounds=(-30.0, 0.0))
    cost = check_cross_validation_budget(
        est, X, cv=KFold(4), scoring=scorer, return_train_score=True
    )
    cross_validate(
        est,
        X,
        cv=KFold(4),
        scoring=scorer,
        return_train_score=True,
        n_jobs=n_jobs,
        error_score="raise",
    )
    recorded = _recorded(budget)
    assert Counter(recorded) == Counter(cost.costs(budget))
    assert Counter(c for c in recorded if isinstance(c, PureDP))[PureDP(0.2)] == 8
    assert cost.total(budget) == budget.spent()


def test_validation_curve_is_priced_as_a_grid_without_refit(X):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(data_norm=5.0, budget=budget)
    scorer = make_private_scorer(budget=budget, rho=0.01, bounds=(-30.0, 0.0))
    equivalent = GridSearchCV(
        est,
        {"rho": [0.1, 0.2]},
        cv=3,
        scoring=scorer,
        refit=False,
        return_train_score=True,
        error_score="raise",
    )
    cost = check_search_budget(equivalent, X)
    validation_curve(
        est, X, None, param_name="rho", param_range=[0.1, 0.2], cv=3, scoring=scorer
    )
    assert _multiset(_recorded(budget)) == _multiset(cost.costs(budget))
    assert cost.n_scores == 2 * 3 * 2


# -- pipelines and widths --------------------------------------------------------------
def test_pipeline_with_a_public_transform(X):
    budget = PrivacyBudget(rho=5.0)
    pipe = make_pipeline(
        FunctionTransformer(np.tanh),
        PrivateCovariance(rho=0.25, data_norm=2.0, budget=budget),
    )
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    cost = cross_validation_cost(pipe, X, cv=4, scoring=scorer)
    assert cost.total(budget).rho == (pytest.approx(4 * 0.3, rel=1e-12))


def test_pipeline_with_two_private_steps_costs_the_sum(X):
    budget = PrivacyBudget(rho=5.0)
    pipe = make_pipeline(
        PerFeature(unit=0.01, budget=budget), PerFeature(unit=0.02, budget=budget)
    )
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    # A private step is never fitted to probe the width after it (that would
    # spend), so the second step's width is given.
    cost = cross_validation_cost(pipe, X, cv=2, scoring=scorer, n_features=3)
    # Per fit: 0.01 x 3 + 0.02 x 3 = 0.09; per split 0.09 + 0.05.
    assert cost.total(budget).rho == (pytest.approx(2 * 0.14, rel=1e-12))


def test_width_reaching_a_private_step_is_probed_on_a_stand_in(X):
    # PolynomialFeatures(2) maps 3 columns to 10: the private step sees 10.
    budget = PrivacyBudget(rho=5.0)
    pipe = make_pipeline(PolynomialFeatures(2), PerFeature(unit=0.01, budget=budget))
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-1e3, 0.0))
    cost = cross_validation_cost(pipe, X, cv=2, scoring=scorer)
    assert cost.total(budget).rho == (pytest.approx(2 * (0.1 + 0.05), rel=1e-12))
    cross_validate(pipe, X, cv=2, scoring=scorer, error_score="raise")
    assert budget.spent() == cost.total(budget)
    # n_features overrides the probe.
    cost = cross_validation_cost(pipe, X, cv=2, scoring=scorer, n_features=4)
    assert cost.total(budget).rho == (pytest.approx(2 * (0.04 + 0.05), rel=1e-12))


def test_a_width_that_cannot_be_probed_asks_for_n_features(X):
    # A private step before another is never fitted to probe a width (it would
    # spend), so the second's width is unknown.
    budget = PrivacyBudget(rho=5.0)
    pipe = make_pipeline(PerFeature(budget=budget), PerFeature(budget=budget))
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-1e3, 0.0))
    with pytest.raises(ValueError, match="pass n_features="):
        cross_validation_cost(pipe, X, cv=2, scoring=scorer)
    assert budget.ledger() == []
    cost = cross_validation_cost(pipe, X, cv=2, scoring=scorer, n_features=3)
    assert cost.n_fits == 2
    with pytest.raises(ValueError, match="n_features must be an int"):
        cross_validation_cost(pipe, X, cv=2, scoring=scorer, n_features=0)


def test_grid_over_pipeline_steps(X):
    # Candidates may swap the private step itself.
    budget = PrivacyBudget(rho=5.0)
    pipe = make_pipeline(FunctionTransformer(np.tanh), PerFeature(budget=budget))
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-1e3, 0.0))
    grid = {
        "perfeature": [
            PerFeature(unit=0.01, budget=budget),
            PrivateCovariance(rho=0.2, data_norm=2.0, budget=budget),
        ]
    }
    search = GridSearchCV(pipe, grid, cv=2, scoring=scorer, error_score="raise")
    cost = search_cost(search, X)
    # 2 x (0.03 + 0.2) + 4 x 0.05 + max(0.03, 0.2)
    assert cost.total(budget).rho == (pytest.approx(0.46 + 0.2 + 0.2, rel=1e-12))


# -- budgets ---------------------------------------------------------------------------
def test_separate_budgets_are_checked_separately(X):
    fits, scores = PrivacyBudget(rho=10.0), PrivacyBudget(rho=0.2)
    scorer = make_private_scorer(budget=scores, rho=0.05, bounds=(-30.0, 0.0))
    est = PrivateCovariance(rho=0.1, data_norm=5.0, budget=fits)
    cost = cross_validation_cost(est, X, cv=5, scoring=scorer)
    assert cost.total(fits).rho == (pytest.approx(0.5, rel=1e-12))
    assert cost.total(scores).rho == (pytest.approx(0.25, rel=1e-12))
    assert set(cost.budgets) == {fits, scores}
    with pytest.raises(BudgetExceededError, match=r"needs rho=0\.25"):
        check_cross_validation_budget(est, X, cv=5, scoring=scorer)


def test_private_steps_without_a_budget_are_priced_but_not_checked(X):
    budget = PrivacyBudget(rho=1.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    est = PrivateCovariance(rho=0.1, data_norm=5.0)
    cost = check_cross_validation_budget(est, X, cv=3, scoring=scorer)
    assert cost.total(None).rho == (pytest.approx(0.3, rel=1e-12))
    assert cost.budgets == (budget,)


# -- candidates ------------------------------------------------------------------------
def test_randomized_search_candidates_are_the_ones_it_draws(X):
    budget = PrivacyBudget(rho=20.0)
    scorer = make_private_scorer(budget=budget, rho=0.01, bounds=(-30.0, 0.0))
    search = RandomizedSearchCV(
        PrivateCovariance(data_norm=5.0, budget=budget, random_state=0),
        {"rho": [0.1, 0.2, 0.3, 0.4], "center": [True, False]},
        n_iter=3,
        cv=2,
        random_state=5,
        scoring=scorer,
        error_score="raise",
    )
    cost = check_search_budget(search, X)
    search.fit(X)
    drawn = [p["rho"] for p in search.cv_results_["params"]]
    assert cost.total(budget).rho == pytest.approx(
        2 * sum(drawn) + 6 * 0.01 + max(drawn), rel=1e-12
    )
    best = search.best_params_["rho"]
    assert budget.spent().rho == pytest.approx(
        2 * sum(drawn) + 6 * 0.01 + best, rel=1e-12
    )


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"param_distributions": {"rho": uniform(0.1, 0.2)}}, "list of values"),
        ({"random_state": None}, "int random_state"),
        ({"random_state": np.random.RandomState(0)}, "int random_state"),
    ],
)
def test_randomized_search_that_cannot_be_priced(X, params, match):
    budget = PrivacyBudget(rho=20.0)
    scorer = make_private_scorer(budget=budget, rho=0.01, bounds=(-30.0, 0.0))
    search = RandomizedSearchCV(
        PrivateCovariance(data_norm=5.0, budget=budget),
        {"rho": [0.1, 0.2]},
        n_iter=2,
        random_state=0,
        scoring=scorer,
    ).set_params(**params)
    with pytest.raises(ValueError, match=match):
        search_cost(search, X)


def test_only_grid_and_randomized_searches(X):
    with pytest.raises(TypeError, match="only GridSearchCV and RandomizedSearchCV"):
        search_cost(PrivateCovariance(rho=0.1, data_norm=1.0), X)


def test_an_iterator_of_splits_is_refused_a_list_is_priced(X):
    budget = PrivacyBudget(rho=5.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    est = PrivateCovariance(rho=0.1, data_norm=5.0, budget=budget)
    splits = list(KFold(3).split(X))
    with pytest.raises(ValueError, match="cv is an iterator"):
        cross_validation_cost(est, X, cv=iter(splits), scoring=scorer)
    assert cross_validation_cost(est, X, cv=splits, scoring=scorer).n_splits == 3


# -- warnings --------------------------------------------------------------------------
def test_a_search_scored_by_the_estimator_warns(X):
    budget = PrivacyBudget(rho=5.0)
    search = GridSearchCV(
        PrivateCovariance(rho=0.1, budget=budget), {"data_norm": [1.0, 5.0]}, cv=2
    )
    with pytest.warns(
        PrivacyLeakWarning,
        match=r"the estimator's own score.*Worst case: the search tunes data_norm",
    ):
        cost = search_cost(search, X)
    assert cost.n_scores == 0


def test_a_mixed_dict_of_scorers_warns_about_the_non_private_one(X):
    budget = PrivacyBudget(rho=5.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    est = PrivateCovariance(rho=0.1, data_norm=5.0, budget=budget)
    with pytest.warns(
        PrivacyLeakWarning, match=r"scores private test folds with 'raw'"
    ):
        cost = cross_validation_cost(
            est, X, cv=2, scoring={"private": scorer, "raw": lambda e, X, y=None: 0.0}
        )
    assert cost.n_scores == 2


def test_warning_points_at_the_callers_line(X):
    budget = PrivacyBudget(rho=5.0)
    search = GridSearchCV(PrivateCovariance(rho=0.1, data_norm=1.0, budget=budget), {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search_cost(search, X)
        check_cross_validation_budget(search.estimator, X, cv=2)
    assert [w.filename for w in caught] == [__file__, __file__]


def test_a_non_private_estimator_warns(X):
    budget = PrivacyBudget(rho=5.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    with pytest.warns(PrivacyLeakWarning, match="no step of FunctionTransformer"):
        cross_validation_cost(FunctionTransformer(), X, cv=2, scoring=scorer)


def test_a_splitter_that_reads_labels_warns(X):
    budget = PrivacyBudget(rho=5.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    est = PrivateCovariance(rho=0.1, data_norm=5.0, budget=budget)
    y = np.arange(len(X)) % 2
    with pytest.warns(PrivacyLeakWarning, match="StratifiedKFold, which reads"):
        cross_validation_cost(est, X, y, cv=StratifiedKFold(2), scoring=scorer)


def test_check_warns_unless_error_score_is_raise(X):
    budget = PrivacyBudget(rho=5.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    search = GridSearchCV(
        PrivateCovariance(rho=0.1, data_norm=5.0, budget=budget),
        {"center": [True]},
        cv=2,
        scoring=scorer,
    )
    with pytest.warns(UserWarning, match="error_score='raise'"):
        check_search_budget(search, X)


def test_repr_summarises_the_price(X):
    budget = PrivacyBudget(rho=5.0)
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-30.0, 0.0))
    est = PrivateCovariance(rho=0.1, data_norm=5.0, budget=budget)
    text = repr(cross_validation_cost(est, X, cv=2, scoring=scorer))
    assert text.startswith("SearchCost(cross-validation: 1 candidates x 2 splits")
    assert math.isclose(float(text.rsplit("rho=", 1)[1].rstrip(")")), 0.3)


def test_one_to_one_private_steps_keep_the_width():
    # A private scaler before a private covariance: the covariance gets as many
    # columns as X, known without fitting the scaler (which would spend).
    from sklearn.pipeline import make_pipeline

    from dpgauss import PrivateCovariance, PrivateStandardScaler

    budget = PrivacyBudget(rho=10.0)
    pipe = make_pipeline(
        PrivateStandardScaler((-5.0, 5.0), rho=0.5, budget=budget),
        PrivateCovariance(rho=1.0, data_norm=4.0, budget=budget),
    )
    scorer = make_private_scorer(budget=budget, rho=0.05, bounds=(-1e3, 0.0))
    X = np.zeros((40, 4))
    cost = cross_validation_cost(pipe, X, cv=2, scoring=scorer)  # no n_features
    assert cost.total(budget).rho == pytest.approx(2 * (0.5 + 1.0 + 0.05))
    assert budget.ledger() == []


class PerRow(PerFeature):
    """Charges in proportion to the rows it is fitted on: a plan from n."""

    def planned_costs(self, n_features, *, n_samples=None):
        return [ZCDP(self.unit * n_samples)]


def test_each_fold_is_priced_at_its_own_training_size():
    # 10 rows in 3 folds train on 6, 7 and 7 rows; the refit on all 10.
    budget = PrivacyBudget(rho=1e6)
    est = PerRow(unit=1.0, budget=budget)
    X = np.zeros((10, 2))
    search = GridSearchCV(est, {"unit": [1.0]}, cv=KFold(3), scoring=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        cost = search_cost(search, X)
    # The folds' charges, then the refit's: the dearest charge composed.
    assert sorted(c.rho for c in cost.costs(budget)) == [6.0, 7.0, 7.0, 10.0]
