"""PrivateEllipticEnvelope: accounting, threshold, outlier share, finiteness, API."""

import math

import numpy as np
import pytest
from scipy.stats import chi2
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks

from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateEllipticEnvelope,
    PrivateStandardScaler,
)
from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp
from dpgauss.exceptions import BudgetExceededError

COV3 = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, -0.3], [0.2, -0.3, 0.5]])


def _gaussian(n, seed, cov=COV3):
    rng = np.random.default_rng(seed)
    return rng.multivariate_normal(np.zeros(cov.shape[0]), cov, size=n)


# -- accounting --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "total"),
    [
        ({"rho": 0.8}, ZCDP(0.8)),
        ({"epsilon": 2.0}, PureDP(2.0)),
        ({"epsilon": 1.0, "delta": 1e-6}, ZCDP(approx_to_zcdp(1.0, 1e-6))),
    ],
)
@pytest.mark.parametrize("method", ["auto", "gauss", "separate", "coinpress"])
def test_ledger_is_the_plan_and_the_covariance_plan(params, total, method):
    budget = PrivacyBudget(rho=100.0)
    X = _gaussian(300, 0)
    env = PrivateEllipticEnvelope(
        method=method, **params, data_norm=5.0, budget=budget, random_state=0
    ).fit(X)
    charges = [(e.cost, e.mechanism) for e in budget.ledger()]
    assert charges == env._pricing_plan(3, total=total).charges()
    # The same releases as PrivateCovariance with these parameters, so its
    # sensitivities, proof and audits (tests/audit/test_covariance_audit.py)
    # cover the envelope's fit.
    twin = PrivateCovariance(method=method, **params, data_norm=5.0)
    assert charges == twin._pricing_plan(3, total=total).charges()
    assert env.planned_costs(3) == [c for c, _ in charges]
    assert env.privacy_spent_ == total or math.isclose(
        getattr(env.privacy_spent_, "rho", 0.0), total.rho, rel_tol=1e-12
    )


def test_gauss_plan_is_a_tenth_for_the_mean():
    budget = PrivacyBudget(rho=10.0)
    PrivateEllipticEnvelope(
        method="gauss", rho=1.0, data_norm=5.0, budget=budget, random_state=0
    ).fit(_gaussian(100, 0))
    assert [e.cost for e in budget.ledger()] == [ZCDP(0.1), ZCDP(0.9)]


def test_fit_is_private_covariance_fit():
    """Same seed, same parameters, no budget: the same Gaussian, bit for bit."""
    X = _gaussian(500, 1)
    kw = {"rho": 0.5, "data_norm": 5.0, "random_state": 3}
    env = PrivateEllipticEnvelope(contamination=0.2, **kw).fit(X)
    cov = PrivateCovariance(**kw).fit(X)
    for name in ("location_", "covariance_", "precision_", "eigenvalue_floor_"):
        np.testing.assert_array_equal(getattr(env, name), getattr(cov, name))
    assert env.method_ == cov.method_


# -- threshold and methods ---------------------------------------------------------
@pytest.mark.parametrize("contamination", [1e-300, 0.01, 0.1, 0.25, 0.5])
@pytest.mark.parametrize("d", [1, 3, 12])
def test_offset_is_the_chi_square_quantile(contamination, d):
    X = _gaussian(50, 0, np.eye(d))
    env = PrivateEllipticEnvelope(
        contamination=contamination, rho=1.0, data_norm=4.0, random_state=0
    ).fit(X)
    assert env.offset_ == -chi2.isf(contamination, df=d)
    assert math.isfinite(env.offset_)
    assert env.offset_ < 0
    if contamination >= 0.01:  # 1 - c is exact enough there
        assert env.offset_ == pytest.approx(-chi2.ppf(1 - contamination, df=d))


def test_methods_follow_scikit_learn_conventions():
    X = _gaussian(2000, 2)
    T = _gaussian(300, 3) * 1.5
    env = PrivateEllipticEnvelope(rho=1.0, data_norm=6.0, random_state=0).fit(X)
    dist = env.mahalanobis(T)
    np.testing.assert_array_equal(env.score_samples(T), -dist)
    np.testing.assert_array_equal(env.decision_function(T), -dist - env.offset_)
    labels = env.predict(T)
    assert labels.dtype.kind == "i"
    np.testing.assert_array_equal(labels, np.where(dist <= -env.offset_, 1, -1))
    assert set(np.unique(labels)) == {-1, 1}
    y = np.where(np.arange(300) % 3 == 0, -1, 1)
    assert env.score(T, y) == pytest.approx(np.mean(labels == y))
    # The model is a Gaussian: a point on its quantile boundary is an inlier.
    values, vectors = np.linalg.eigh(env.covariance_)
    edge = env.location_ + vectors[:, 0] * math.sqrt(values[0] * -env.offset_)
    assert env.decision_function(edge[None])[0] == pytest.approx(0.0, abs=1e-9)


def test_fit_predict_is_fit_then_predict_without_a_budget():
    X = _gaussian(400, 4)
    est = PrivateEllipticEnvelope(rho=1.0, data_norm=6.0, random_state=5)
    np.testing.assert_array_equal(
        clone(est).fit_predict(X), clone(est).fit(X).predict(X)
    )


def test_outlier_checks_apart_from_the_data_quantile(monkeypatch):
    """scikit-learn's outlier checks with their one data-quantile assertion
    (expected to fail in tests/test_common.py) recorded instead of asserted:
    shapes, dtypes, label values, decision = score_samples - offset_,
    predict = sign of decision, malformed input and fit_predict all pass."""
    seen = []
    monkeypatch.setattr(
        estimator_checks,
        "check_outlier_corruption",
        lambda found, expected, decision: seen.append((found, expected)),
    )
    for est in (
        PrivateEllipticEnvelope(rho=1.0, data_norm=8.0),
        # Predicted no better than the zero matrix at pure epsilon on the
        # checks' few rows: the checks are of the interface.
        PrivateEllipticEnvelope(
            epsilon=1.0, data_norm=8.0, method="separate", on_useless="warn"
        ),
    ):
        name = type(est).__name__
        estimator_checks.check_outliers_train(name, est)
        estimator_checks.check_outliers_train(name, est, readonly_memmap=True)
        estimator_checks.check_outliers_fit_predict(name, est)
    assert seen
    assert all(expected == 30 for _, expected in seen)


# -- the flagged share ---------------------------------------------------------------
def test_clean_gaussian_outlier_share_near_contamination():
    """At large rho and n the flagged share of fresh clean rows is contamination.

    The count among m fresh rows is Binomial(m, p), p the share the fitted model
    flags; 4 binomial sds at c = 0.1, m = 10^5 is 0.0038 (two-sided 6e-5). p
    itself differs from c through the estimate: with x^T Sigma^-1 x scaled by
    (1 + e), p moves by about q f(q) e, where q = chi2.isf(c, 3) = 6.25 and
    f the chi-square density (q f(q) = 0.27); the sample covariance's relative
    spectral error at n = 20,000, d = 3 is at most about 2 sqrt(d / n) = 0.025
    (Bai-Yin edge; rho = 100 adds noise 100 times smaller), so 0.0068. No row is
    clipped in practice (data_norm 6 is 4 sds of the widest direction).
    """
    c = 0.1
    env = PrivateEllipticEnvelope(
        contamination=c, rho=100.0, data_norm=6.0, random_state=0
    ).fit(_gaussian(20_000, 10))
    share = float(np.mean(env.predict(_gaussian(100_000, 11)) == -1))
    q = chi2.isf(c, 3)
    tolerance = 4 * math.sqrt(c * (1 - c) / 100_000) + q * chi2.pdf(q, 3) * 0.025
    assert abs(share - c) <= tolerance


def test_breast_cancer_malignant_rows_rank_as_outliers():
    """A private pipeline (scaler and envelope on one budget, rho = 1 in all):
    benign rows and 40 malignant ones (10%); the malignant rows must rank far
    above chance (benchmarks/bench_envelope.py: median AUC 0.84 over 5 draws)."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = np.concatenate(
        [np.flatnonzero(y == 1), rng.choice(np.flatnonzero(y == 0), 40, False)]
    )
    X, outlier = X[rows], y[rows] == 0
    bounds = (0.0, np.ceil(load_breast_cancer().data.max(axis=0) * 150) / 100)
    budget = PrivacyBudget(rho=1.0)
    model = make_pipeline(
        PrivateStandardScaler(bounds, rho=0.25, budget=budget, random_state=0),
        PrivateEllipticEnvelope(
            rho=0.75, data_norm=2 * math.sqrt(30), budget=budget, random_state=0
        ),
    ).fit(X)
    assert budget.spent() == ZCDP(1.0)
    assert roc_auc_score(outlier, -model.decision_function(X)) > 0.75


# -- finiteness and refusals ----------------------------------------------------------
@pytest.mark.parametrize("rho", [1e-12, 1e-3, 1.0])
@pytest.mark.parametrize("method", ["auto", "separate", "coinpress"])
def test_extreme_rows_and_tiny_rho_give_finite_scores(rho, method):
    X = _gaussian(200, 6)
    X[:3] = [[1e12 * 5.0, 0, 0], [0, -1e12 * 5.0, 0], [1e300, -1e300, 1e300]]
    env = PrivateEllipticEnvelope(
        rho=rho, data_norm=5.0, method=method, random_state=0, on_useless="warn"
    ).fit(X)
    assert np.all(np.isfinite(env.precision_))
    T = np.vstack([X, [[1e308, -1e308, 1e308]], -X[:3]])
    for values in (env.score_samples(T), env.decision_function(T)):
        assert np.all(np.isfinite(values))
    assert set(np.unique(env.predict(T))) <= {-1, 1}
    assert np.all(env.predict(T[:3]) == -1)


def test_distances_beyond_float_range_are_capped():
    """Rows all at the center: the spectrum is the floor; distances of rows
    1e150 away overflow and are reported as the largest float64, not inf."""
    X = np.zeros((100, 2))
    env = PrivateEllipticEnvelope(
        rho=1e6, data_norm=1e-100, center=False, random_state=0
    ).fit(X)
    T = np.array([[1e150, 1e150], [0.0, 0.0]])
    scores = env.score_samples(T)
    assert scores[0] == -np.finfo(np.float64).max
    assert np.isfinite(env.decision_function(T)).all()
    np.testing.assert_array_equal(env.predict(T), [-1, 1])


GOOD = _gaussian(50, 7)


@pytest.mark.parametrize(
    ("params", "X", "match"),
    [
        ({"contamination": 0.0}, GOOD, "contamination"),
        ({"contamination": 0.6}, GOOD, "contamination"),
        ({"contamination": -0.1}, GOOD, "contamination"),
        ({"contamination": "auto"}, GOOD, "contamination"),
        ({"contamination": np.nan}, GOOD, "contamination"),
        ({"data_norm": None}, GOOD, "data_norm is required"),
        ({"data_norm": -1.0}, GOOD, "data_norm"),
        ({"rho": None}, GOOD, "rho"),
        ({}, np.where(GOOD > 1, np.nan, GOOD), "NaN"),
        ({}, GOOD[:1], "1 sample"),
        ({"location": [0.0, 0.0]}, GOOD, "location must be"),
    ],
)
def test_bad_input_is_refused_before_spending(params, X, match):
    params = {"rho": 1.0, "data_norm": 4.0, **params}
    budget = PrivacyBudget(rho=10.0)
    original = X.copy()
    with pytest.raises(ValueError, match=match):
        PrivateEllipticEnvelope(**params, budget=budget).fit(X)
    assert budget.ledger() == []
    np.testing.assert_array_equal(X, original)


def test_budget_too_small_refuses_before_spending():
    budget = PrivacyBudget(rho=0.5)
    env = PrivateEllipticEnvelope(rho=1.0, data_norm=4.0, budget=budget)
    with pytest.raises(BudgetExceededError):
        env.fit(GOOD)
    assert budget.ledger() == []
    assert not hasattr(env, "offset_")
