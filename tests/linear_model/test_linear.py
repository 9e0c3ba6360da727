"""PrivateLinearRegression (in progress, not exported): the fit template's contract."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from dpgauss import PrivacyBudget
from dpgauss.exceptions import UtilityWarning
from dpgauss.linear_model._linear import PrivateLinearRegression


def _rows(n=20_000, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    beta = np.array([1.5, -2.0, 0.5])[:d]
    return X, X @ beta + 0.5 + rng.normal(0.0, 0.2, n), beta


def _model(**kw):
    params = {"bounds": (-1.0, 1.0), "target_bounds": (-5.0, 5.0), "rho": 0.5}
    return PrivateLinearRegression(**{**params, **kw})


def test_fit_predict_and_score():
    # n = 2e4, rho 0.5: the moments' noise is ~3e-4 per entry in box units
    # against a Gram matrix of eigenvalues 1/3, so the coefficients land
    # within a few 1e-2 of the truth (times h_y = 5).
    X, y, beta = _rows()
    model = _model(random_state=0).fit(X, y)
    np.testing.assert_allclose(model.coef_, beta, atol=0.1)
    assert model.intercept_ == pytest.approx(0.5, abs=0.1)
    assert model.predict(X[:5]).shape == (5,)
    assert model.score(X, y) > 0.9
    assert model.privacy_spent_.rho == pytest.approx(0.5)


def test_pure_and_approximate_forms():
    X, y, beta = _rows(50_000)
    for kw in (
        {"rho": None, "epsilon": 1.0},
        {"rho": None, "epsilon": 1.0, "delta": 1e-6},
    ):
        model = _model(random_state=1, **kw).fit(X, y)
        np.testing.assert_allclose(model.coef_, beta, atol=0.3)


def test_bad_input_spends_nothing():
    X, y, _ = _rows(100)
    budget = PrivacyBudget(rho=1.0)
    bad_y = y.copy()
    bad_y[3] = np.nan
    for make, args in [
        (lambda: _model(budget=budget), (X, bad_y)),
        (lambda: _model(budget=budget), (X, y[:50])),
        (lambda: _model(budget=budget, bounds=None), (X, y)),
        (lambda: _model(budget=budget, target_bounds=None), (X, y)),
        (lambda: _model(budget=budget, target_bounds=(1.0, -1.0)), (X, y)),
    ]:
        with pytest.raises(ValueError):
            make().fit(*args)
    assert budget.spent().rho == 0.0
    assert np.all(np.isfinite(y))


def test_the_budget_is_charged_the_plan_and_clones_pickle():
    X, y, _ = _rows(1000)
    budget = PrivacyBudget(rho=1.0)
    model = _model(budget=budget, rho=0.25, random_state=2)
    costs = [c.rho for c in model.planned_costs(3, n_samples=1000)]
    # a tenth each to lambda_min and the target's mean (last), then 0.3 and
    # 0.7 of the rest to the two stages
    assert costs == pytest.approx([0.025, 0.06, 0.14, 0.025])
    model.fit(X, y)
    assert budget.spent().rho == pytest.approx(0.25)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X[:3]), model.predict(X[:3]))
    assert "coef_" not in vars(clone(model))


def test_without_intercept_the_model_goes_through_the_origin():
    X, y, beta = _rows()
    y = y - 0.5
    model = _model(fit_intercept=False, random_state=3).fit(X, y)
    assert model.intercept_ == 0.0
    np.testing.assert_allclose(model.coef_, beta, atol=0.1)


def test_a_fit_predicted_to_lose_to_the_zero_model_is_refused_before_the_spend():
    # Pure epsilon 0.5, n = 1000, d = 5: the Laplace noise on the moments
    # (scale 124 / n per entry) predicts a mean squared error of 2.4 against
    # the zero-coefficient model's 0.1 in box units (linear_prediction).
    from dpgauss.exceptions import UselessFitError, UtilityWarning

    rng = np.random.default_rng(5)
    X = rng.uniform(-1.0, 1.0, size=(1000, 5))
    y = X.sum(axis=1)
    budget = PrivacyBudget(epsilon=2.0)
    kw = {"rho": None, "epsilon": 0.5, "budget": budget}
    with pytest.raises(UselessFitError, match="zero-coefficient"):
        _model(**kw).fit(X, y)
    assert budget.spent().epsilon == 0.0
    with pytest.warns(UtilityWarning, match="zero-coefficient"):
        _model(on_useless="warn", random_state=0, **kw).fit(X, y)
    assert budget.spent().epsilon == pytest.approx(0.5)


def test_alpha_is_ridge_on_the_released_statistics():
    # rho 1e12: the noise and the private ridge vanish (about 1e-9 of the
    # Gram matrix), so the fit is scikit-learn's Ridge on the same rows up to
    # about 1e-6; features in boxes of different widths check the penalty's
    # units (alpha / h_j^2 in box units).
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(7)
    X = rng.uniform([-1.0, 0.0, 10.0], [1.0, 100.0, 20.0], size=(3000, 3))
    y = X @ [1.0, 0.02, -0.5] + 2.0 + rng.normal(0.0, 0.5, 3000)
    for alpha in (0.0, 50.0, 5000.0):
        model = PrivateLinearRegression(
            bounds=([-1.0, 0.0, 10.0], [1.0, 100.0, 20.0]),
            target_bounds=(-20.0, 20.0),
            alpha=alpha,
            rho=1e12,
            random_state=0,
        ).fit(X, y)
        want = Ridge(alpha=alpha).fit(X, y)
        np.testing.assert_allclose(model.coef_, want.coef_, rtol=1e-5, atol=1e-6)
        assert model.intercept_ == pytest.approx(want.intercept_, rel=1e-5)


def test_a_fallback_to_the_intercept_warns_and_errors_name_the_parameter():
    # Features explaining 0.1% of a target in a box 20 times its spread, at
    # rho 0.05 (n = 5,000): the released moments say the slopes do not pay,
    # so coef_ is 0, with a UtilityWarning (a released value: free).
    rng = np.random.default_rng(11)
    X = rng.uniform(-1.0, 1.0, size=(5000, 5))
    y = 0.03 * X[:, 0] + rng.normal(0.0, 1.0, 5000)
    model = _model(rho=0.05, target_bounds=(-20.0, 20.0), random_state=1)
    with pytest.warns(UtilityWarning, match="intercept alone"):
        model.fit(X, y)
    np.testing.assert_array_equal(model.coef_, np.zeros(5))
    with pytest.raises(ValueError, match="target_bounds must have lower < upper"):
        _model(target_bounds=(3.0, -3.0)).fit(X, y)
    with pytest.raises(ValueError, match=r"target_bounds \(on y\) is missing"):
        _model(target_bounds=None).fit(X, y)
