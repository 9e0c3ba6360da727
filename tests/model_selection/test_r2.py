"""The private R^2 scorer (dpgauss.model_selection._r2)."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_score

from dpgauss import PrivacyBudget, PrivateLinearRegression
from dpgauss.model_selection import PrivateR2Scorer, make_private_scorer
from dpgauss.model_selection._r2 import r2_means


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 3))
    return X, X @ [1.0, -2.0, 0.5] + 1.0 + rng.normal(0.0, 0.5, n)


def test_a_huge_budget_gives_scikit_learns_r2():
    # rho 1e12: each mean's noise sd is ~1e-6 / n; targets and predictions
    # inside the box (-6, 8), so the clipped statistics are the raw ones.
    X, y = _data()
    model = LinearRegression().fit(X[:2000], y[:2000])
    scorer = make_private_scorer(
        "r2",
        budget=PrivacyBudget(rho=1e13),
        rho=1e12,
        bounds=(-6.0, 8.0),
        random_state=0,
    )
    assert isinstance(scorer, PrivateR2Scorer)
    want = r2_score(y[2000:], model.predict(X[2000:]))
    assert scorer(model, X[2000:], y[2000:]) == pytest.approx(want, abs=1e-6)


def test_each_call_is_charged_and_a_bad_fold_is_not():
    X, y = _data()
    model = LinearRegression().fit(X, y)
    budget = PrivacyBudget(epsilon=3.0)
    scorer = make_private_scorer(
        "r2", budget=budget, epsilon=1.0, bounds=(-6.0, 8.0), random_state=1
    )
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        scorer(model, X, bad)
    assert budget.spent().epsilon == 0.0
    score = scorer(model, X, y)
    assert budget.spent().epsilon == pytest.approx(1.0)
    assert -1.0 < score <= 1.0
    with pytest.raises(ValueError, match="bounds are required"):
        make_private_scorer("r2", budget=budget, epsilon=1.0)


def test_the_means_stay_in_the_unit_box_for_any_prediction():
    # Predictions far outside the box, infinite or NaN: each row's entries
    # stay in [0, 1], the release's sensitivity.
    targets = np.array([-1e300, 0.0, 5.0, 1e300])
    for predictions in ([np.inf, -np.inf, np.nan, 1e308], [0.0, 0.0, 0.0, 0.0]):
        means = r2_means(predictions, targets, -1.0, 1.0)
        assert np.all((means >= 0.0) & (means <= 1.0))
    # A prediction beyond the box is scored as the box's end (NaN as low).
    np.testing.assert_allclose(
        r2_means([np.nan, 9.0], [1.0, 1.0], -1.0, 1.0), [0.5, 1.0, 1.0]
    )


def test_a_noise_draw_cannot_divide_by_about_zero():
    # A fold whose targets are all equal has variance 0: the released
    # variance is floored at 3 noise sds, so the score stays finite.
    X = np.zeros((50, 3))
    y = np.full(50, 2.0)
    model = LinearRegression().fit(np.eye(3), [2.0, 2.0, 2.0])
    scorer = make_private_scorer(
        "r2",
        budget=PrivacyBudget(rho=100.0),
        rho=0.01,
        bounds=(-6.0, 8.0),
        random_state=3,
    )
    for _ in range(20):
        assert np.isfinite(scorer(model, X, y))


def test_cross_validation_with_a_private_regressor_charges_fits_and_scores():
    # 3 folds: 3 fits at rho 0.3 and 3 scores at rho 0.1 (the search's cost
    # is their sum). At n = 4,000 the R^2 is near least squares' 0.94 (fits
    # and scores each err by ~0.01).
    X, y = _data()
    budget = PrivacyBudget(rho=1.2)
    model = PrivateLinearRegression(
        bounds=(-1.0, 1.0),
        target_bounds=(-6.0, 8.0),
        rho=0.3,
        budget=budget,
        random_state=0,
    )
    scorer = make_private_scorer(
        "r2", budget=budget, rho=0.1, bounds=(-6.0, 8.0), random_state=0
    )
    cv = KFold(n_splits=3, shuffle=True, random_state=0)
    scores = cross_val_score(model, X, y, cv=cv, scoring=scorer)
    assert budget.spent().rho == pytest.approx(1.2)
    assert np.all(scores > 0.85)
