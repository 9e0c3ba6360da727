"""warn_if_scored_in_search: warns inside scikit-learn's model selection only.

Until the estimators' ``score`` calls it, it is exercised through a stand-in
estimator whose ``score`` calls it and through a custom ``scoring`` callable.
Searches run with ``n_jobs=1`` here: in a worker process the warning is raised
there (scikit-learn forwards the warning filters, so under pytest's
``filterwarnings = error`` it would become an error in the worker).
"""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, cross_val_score, validation_curve
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dpgauss import PrivacyBudget
from dpgauss.exceptions import PrivacyLeakWarning
from dpgauss.model_selection import make_private_scorer
from dpgauss.utils._leak import private_scoring, warn_if_scored_in_search

MATCH = r"Stand\.score read a private test fold.*make_private_scorer"


class Stand(BaseEstimator):
    """A density stand-in whose score calls the leak check, as estimators will."""

    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def score_samples(self, X):
        return -np.sum((np.asarray(X) - self.shift) ** 2, axis=1)

    def score(self, X, y=None):
        warn_if_scored_in_search(self)
        return float(np.mean(self.score_samples(X)))


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(40, 2))


def test_silent_outside_model_selection(X):
    est = Stand().fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_scored_in_search(est) is False
        est.score(X)


def test_warns_in_cross_val_score(X):
    with pytest.warns(PrivacyLeakWarning, match=MATCH):
        cross_val_score(Stand(), X, cv=3)


def test_warns_in_grid_search_and_names_the_way_out(X):
    search = GridSearchCV(Stand(), {"shift": [0.0, 1.0]}, cv=2)
    with pytest.warns(PrivacyLeakWarning, match=r"check_search_budget"):
        search.fit(X)


def test_warns_through_a_pipeline_and_validation_curve(X):
    pipe = make_pipeline(FunctionTransformer(np.tanh), Stand())
    with pytest.warns(PrivacyLeakWarning, match=MATCH):
        cross_val_score(pipe, X, cv=2)
    with pytest.warns(PrivacyLeakWarning, match=MATCH):
        validation_curve(Stand(), X, None, param_name="shift", param_range=[0, 1], cv=2)


def test_warns_from_a_custom_scoring_callable(X):
    def scoring(estimator, X_test, y_test=None):
        warn_if_scored_in_search(estimator)
        return float(np.mean(estimator.score_samples(X_test)))

    with pytest.warns(PrivacyLeakWarning, match=MATCH):
        cross_val_score(Stand(), X, cv=2, scoring=scoring)


def test_silent_inside_the_private_scorer(X):
    budget = PrivacyBudget(rho=10.0)
    scorer = make_private_scorer(budget=budget, rho=0.1, bounds=(-20.0, 0.0))

    def per_sample(estimator, X_test, y_test):
        # A per-sample score that goes through score (as a user might): the
        # private scorer clips and noises what it reads, so nothing warns.
        estimator.score(X_test)
        return estimator.score_samples(X_test)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cross_val_score(Stand(), X, cv=2, scoring=scorer)
        scorer.score = per_sample
        cross_val_score(Stand(), X, cv=2, scoring=scorer)
    assert len(budget.ledger()) == 4


def test_private_scoring_mark_is_reset_after_an_error(X):
    with pytest.raises(RuntimeError, match="boom"), private_scoring():
        raise RuntimeError("boom")
    with pytest.warns(PrivacyLeakWarning, match=MATCH):
        cross_val_score(Stand(), X, cv=2)
