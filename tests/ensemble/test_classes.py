"""A wrapped classifier's public classes: predict works, groups are checked."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.ensemble._group_fits import group_candidates, probe_shape

BOTH = ("coef_", "intercept_")


def _binary(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] - X[:, 1] + rng.normal(size=n) > 0).astype(int)
    return X, y


def _fit(X, y, **params):
    est = SubsampleAggregate(LogisticRegression(), rho=1.0, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def test_with_public_classes_the_released_classifier_predicts():
    X, y = _binary()
    est = _fit(X, y, statistic=BOTH, classes=[0, 1])
    np.testing.assert_array_equal(est.estimator_.classes_, [0, 1])
    reference = LogisticRegression().fit(X, y).score(X, y)
    # rho = 1 over about 60 groups of 100 rows: the released coefficients are
    # within a few tenths of the non-private ones, which costs at most a few
    # points of accuracy on this separable-ish problem (measured: 0.73 / 0.75).
    assert (est.predict(X) == y).mean() > reference - 0.05
    assert est.decision_function(X[:3]).shape == (3,)


def test_string_classes_and_several_of_them():
    X, y = _binary()
    labels = np.array(["low", "mid", "high"])[y + (X[:, 2] > 1.0)]
    est = _fit(X, labels, statistic=BOTH, classes=["mid", "low", "high"])
    # Sorted as scikit-learn sorts a fit's labels; three classes: (3, 3) + (3,).
    np.testing.assert_array_equal(est.estimator_.classes_, ["high", "low", "mid"])
    assert est.statistic_.shape == (12,)
    assert set(est.predict(X[:50])) <= {"high", "low", "mid"}


def test_without_what_predict_reads_the_error_says_what_to_give():
    X, y = _binary()
    est = _fit(X, y, statistic="coef_")
    with pytest.raises(AttributeError, match=r"statistic.*classes="):
        est.predict(X[:2])


@pytest.mark.parametrize(
    ("estimator", "classes", "match"),
    [
        (LinearRegression(), [0, 1], "not one"),
        (LogisticRegression(), [1], "at least two distinct"),
        (LogisticRegression(), [0, 0, 1], "at least two distinct"),
        (LogisticRegression(), [[0, 1]], "1-D"),
    ],
)
def test_bad_classes_are_refused_before_the_spend(estimator, classes, match):
    X, y = _binary(200)
    budget = PrivacyBudget(rho=1.0)
    est = SubsampleAggregate(estimator, classes=classes, rho=0.5, budget=budget)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert budget.spent() == ZCDP(0.0)


def test_a_group_that_learned_other_classes_is_a_failed_candidate():
    # Labels are never read to decide the classes: a group whose fit saw
    # another set (one lacks a class, one has a label outside the public
    # ones) fails, a function of that group's rows alone like any failed fit.
    X, y = _binary(300)
    y = y.copy()
    order = np.random.default_rng(1).permutation(300)
    y[order[:100]] = 0  # the first group has a single class
    y[order[100]] = 7  # the second has a label outside the public ones
    classes = np.array([0, 1])
    Y, size = group_candidates(
        LogisticRegression(), BOTH, X, y, 3, np.random.default_rng(1), (4,), classes
    )
    assert size == 100
    assert np.isnan(Y[0]).all()
    assert np.isnan(Y[1]).all()
    assert np.isfinite(Y[2]).all()


def test_the_probe_fits_on_the_public_classes():
    _, y = _binary(50)
    shape, shapes = probe_shape(
        LogisticRegression(), BOTH, None, 3, y, np.array(["a", "b", "c", "d"])
    )
    assert shapes == [(4, 3), (4,)]
    assert shape == (16,)
