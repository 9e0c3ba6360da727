"""The released aggregate stays within the public bound for every noise draw."""

import warnings

import numpy as np
import pytest
from sklearn.covariance import EmpiricalCovariance
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import LinearSVC

from dpgauss import PrivacyBudget
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.ensemble._group_fits import (
    DEFAULT_BOUND,
    astray_to_center,
    bounded_statistic,
)
from dpgauss.exceptions import UselessFitError, UtilityWarning


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.mark.parametrize("seed", [0, 1, 2**31 - 1])
@pytest.mark.parametrize("scale", [1.0, 1e12])
@pytest.mark.parametrize("epsilon", [1e-3, 1.0])
def test_tiny_budgets_and_huge_rows_stay_within_the_bound(seed, scale, epsilon):
    # With k far below k_min the searches go astray (to any float up to 1e308);
    # the projection is what keeps the output within the public bound.
    rng = np.random.default_rng(seed)
    X = scale * rng.standard_normal((2000, 3))
    y = (X[:, 0] > 0).astype(int)
    est = SubsampleAggregate(
        LogisticRegression(),
        statistic=("coef_", "intercept_"),
        classes=[0, 1],
        epsilon=epsilon,
        on_useless="warn",
        random_state=seed,
    )
    _fit(est, X, y)
    assert np.all(np.isfinite(est.statistic_))
    assert np.abs(est.statistic_).max() <= DEFAULT_BOUND
    assert np.abs(est.center_).max() <= DEFAULT_BOUND
    assert np.abs(est.estimator_.coef_).max() <= DEFAULT_BOUND


def test_a_given_bound_is_the_one_used():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.standard_normal(2000)
    est = SubsampleAggregate(
        LinearRegression(), bound=0.25, epsilon=1e-3, on_useless="warn"
    )
    _fit(est, X, y)
    assert np.abs(est.statistic_).max() <= 0.25


@pytest.mark.parametrize("logistic", [False, True])
@pytest.mark.parametrize("n", [300, 1000, 10_000])
def test_a_useless_fit_spent_on_request_releases_the_centre_not_the_bound(n, logistic):
    # Pure epsilon 1 with a 5-coefficient statistic: k_min is far above what n
    # allows, so the fit is predicted useless; spent with on_useless="warn",
    # its searches land at the bound (1e6 in every seed before): the centre, 0,
    # is released instead, and the plan is still charged.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (n, 5))
    y = X.sum(axis=1) + rng.normal(size=n)
    inner, extra = LinearRegression(), {}
    if logistic:
        inner, extra, y = LogisticRegression(), {"classes": [0, 1]}, (y > 0) * 1
    for seed in range(3):
        budget = PrivacyBudget(epsilon=10.0)
        est = SubsampleAggregate(
            inner, epsilon=1.0, on_useless="warn", random_state=seed, budget=budget
        ).set_params(**extra)
        with pytest.warns(UtilityWarning, match="too few"):
            est.fit(X, y)
        np.testing.assert_array_equal(est.statistic_, 0.0)
        np.testing.assert_array_equal(est.center_, 0.0)
        assert [e.cost for e in budget.ledger()] == est.planned_costs(5)
        np.testing.assert_array_equal(est.estimator_.coef_, 0.0)


def test_the_centre_replaces_only_a_release_at_the_bound():
    # Post-processing of the released aggregate and median and the bound.
    value, center = np.array([0.5, -2.0]), np.array([0.4, -1.9])
    out = astray_to_center(value, center, 5.0)
    np.testing.assert_array_equal(out[0], value)
    np.testing.assert_array_equal(out[1], center)
    for v, c in [([5.0, 0.0], center), (value, [0.0, -5.0]), ([np.nan, 0], None)]:
        out = astray_to_center(np.array(v), c, 5.0)
        np.testing.assert_array_equal(out[0], 0.0)
        assert out[1] is None if c is None else np.all(out[1] == 0.0)


def test_the_projection_is_post_processing_within_the_bound():
    # It reads the released value and the public bound only: the same value
    # gives the same output, inside the bound, and values inside are kept.
    v = np.array([1e308, -np.inf, np.nan, 3.0, -7.0])
    out = bounded_statistic(v, 5.0)
    np.testing.assert_array_equal(out, [5.0, -5.0, 0.0, 3.0, -5.0])
    np.testing.assert_array_equal(bounded_statistic(out, 5.0), out)


def test_a_psd_statistic_is_scaled_and_stays_psd():
    A = np.array([[4e200, 1e200], [1e200, 1e200]])
    out = bounded_statistic(A, 1e3, psd=True)
    assert np.abs(out).max() == pytest.approx(1e3)
    assert np.linalg.eigvalsh(out).min() >= 0
    small = np.eye(2)
    np.testing.assert_array_equal(bounded_statistic(small, 1e3, psd=True), small)


def test_psd_default_bound_is_scale_free():
    # The psd aggregate is relative (scale-free): its default bound is the
    # widest public radius, so covariances at 1e70 are not shrunk.
    est = SubsampleAggregate(EmpiricalCovariance(), space="psd")
    assert est._bound() == 1e140
    assert SubsampleAggregate(EmpiricalCovariance())._bound() == DEFAULT_BOUND


@pytest.mark.parametrize(
    ("estimator", "statistic"),
    [
        (LogisticRegression(), ("coef_", "intercept_")),
        (LinearSVC(), ("coef_", "intercept_")),
        (GaussianNB(), ("theta_", "var_", "class_prior_")),
    ],
)
def test_a_wrapped_classifier_predicts_with_its_public_classes(estimator, statistic):
    # rho 0.5 on 20,000 rows: about 400+ groups, enough for the searches at
    # this budget (k_min 334 for p = 5); accuracy well above the 0.5 majority.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 3))
    y = (X[:, 0] > 0).astype(int)
    est = SubsampleAggregate(
        estimator,
        statistic=statistic,
        classes=[0, 1],
        rho=0.5,
        on_useless="warn",
        random_state=0,
    )
    _fit(est, X, y)
    np.testing.assert_array_equal(est.estimator_.classes_, [0, 1])
    pred = est.predict(X)
    assert set(np.unique(pred)) <= {0, 1}
    assert (pred == y).mean() > 0.8


def test_psd_auto_radius_predicted_to_fail_is_refused_before_the_spend():
    # 800 groups of 100 rows in 2 dimensions at epsilon 4: the largest useful
    # radius (0.354) holds about 60% of pairs of clean group covariances, the
    # test needs 90%; it failed after the charge in every fit.
    X = np.random.default_rng(0).standard_normal((80_000, 2))
    budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
    est = SubsampleAggregate(
        EmpiricalCovariance(),
        statistic="covariance_",
        aggregator="populous",
        space="psd",
        epsilon=4.0,
        delta=1e-6,
        n_groups=800,
        budget=budget,
    )
    with pytest.raises(UselessFitError, match="neighbours"):
        est.fit(X)
    assert budget.ledger() == []
