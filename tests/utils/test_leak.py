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
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    cross_val_score,
    validation_curve,
)
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


# -- folds formed from the labels ----------------------------------------------------
def _classifier():
    from dpgauss import PrivateLinearDiscriminantAnalysis

    return PrivateLinearDiscriminantAnalysis(
        classes=[0, 1], bounds=(-4.0, 4.0), rho=1.0
    )


def _labelled():
    X = np.random.default_rng(0).normal(size=(200, 2))
    return X, (X[:, 0] > 0).astype(int)


SPLIT_MATCH = (
    r"cross-validated with (Repeated)?Stratified\w+.*KFold\(n_splits=\d+, shuffle"
)


def test_folds_from_the_labels_are_named():
    # A classifier's cv=5 is a StratifiedKFold: one changed label moves rows
    # between folds. Reported at clone time, in the calling process, for
    # cross_val_score, validation_curve and a search (with worker processes
    # too).
    from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold

    from dpgauss.utils._leak import reads_labels

    X, y = _labelled()
    clf = _classifier()
    # The score leak (the estimator's own score) is tested above: ignored here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PrivateLinearDiscriminantAnalysis.score")
        with pytest.warns(PrivacyLeakWarning, match=SPLIT_MATCH):
            cross_val_score(clf, X, y, cv=5)
        with pytest.warns(PrivacyLeakWarning, match=SPLIT_MATCH):
            validation_curve(clf, X, y, param_name="rho", param_range=[1.0], cv=3)
        for splitter in (StratifiedKFold(3), RepeatedStratifiedKFold(n_splits=2)):
            search = GridSearchCV(clf, {"rho": [0.5, 1.0]}, cv=splitter)
            with pytest.warns(PrivacyLeakWarning, match=SPLIT_MATCH):
                search.fit(X, y)
    assert reads_labels(StratifiedKFold())
    assert not reads_labels(KFold())


def test_folds_from_the_labels_warn_once_per_run():
    # A newcomer's run: five identical warnings for cv=5, eight for a search
    # with cv=3, and the text said cv=5 whatever the cv.
    X, y = _labelled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", "PrivateLinearDiscriminantAnalysis.score")
        cross_val_score(_classifier(), X, y, cv=3)
        GridSearchCV(_classifier(), {"rho": [0.5, 1.0]}, cv=3).fit(X, y)
    split = [str(w.message) for w in caught if "cross-validated with" in str(w.message)]
    assert len(split) == 2
    assert "an integer cv is a StratifiedKFold" in split[0]
    assert "KFold(n_splits=3, shuffle=True" in split[0]


def test_folds_from_the_row_index_are_silent():
    X, y = _labelled()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PrivateLinearDiscriminantAnalysis.score")
        warnings.filterwarnings("error", "cross-validated with", PrivacyLeakWarning)
        cross_val_score(_classifier(), X, y, cv=KFold(5, shuffle=True, random_state=0))
        GridSearchCV(_classifier(), {"rho": [0.5, 1.0]}, cv=KFold(3)).fit(X, y)
