"""A Pipeline fits whole or spends nothing (utils/_pipeline_budget.py)."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateLinearDiscriminantAnalysis,
    PrivateStandardScaler,
)
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import BudgetExceededError
from dpgauss.model_selection import fit_cost


def _data():
    X = np.random.default_rng(0).normal(size=(2000, 3))
    return X, (X[:, 0] > 0).astype(int)


def _pipeline(budget):
    return make_pipeline(
        PrivateStandardScaler((-5.0, 5.0), rho=1.0, budget=budget, random_state=0),
        PrivateLinearDiscriminantAnalysis(
            classes=[0, 1], data_norm=5.0, rho=1.0, budget=budget, random_state=0
        ),
    )


def test_a_refit_the_budget_cannot_pay_spends_nothing_and_keeps_the_fit():
    # The case: rho 3, a scaler and LDA at rho 1 each. The first fit
    # spends 2; the refit would need 2 more. It used to spend the last rho on
    # the scaler, then refuse LDA and leave the pipeline unfitted.
    X, y = _data()
    budget = PrivacyBudget(rho=3.0)
    pipe = _pipeline(budget).fit(X, y)
    mean, prediction = pipe[0].mean_.copy(), pipe.predict(X)
    with pytest.raises(BudgetExceededError, match="refused before any of them spends"):
        pipe.fit(X, y)
    assert budget.spent() == ZCDP(2.0)
    np.testing.assert_array_equal(pipe[0].mean_, mean)
    np.testing.assert_array_equal(pipe.predict(X), prediction)
    assert fit_cost(pipe, X).total(budget) == ZCDP(2.0)
    # The price of one fit reads as one fit, and so does its refusal (it said
    # "1 candidates x 0 splits" and "shrink the grid").
    cost = fit_cost(pipe, X)
    assert "one fit" in repr(cost)
    with pytest.raises(BudgetExceededError, match="lower the privacy parameters"):
        cost.check()


def test_a_pipeline_the_budget_can_pay_fits_as_before():
    X, y = _data()
    budget = PrivacyBudget(rho=4.0)
    pipe = _pipeline(budget)
    pipe.fit(X, y)
    pipe.fit(X, y)
    assert budget.spent() == ZCDP(4.0)


def test_the_price_follows_the_widths_through_other_steps():
    # PolynomialFeatures (degree 2, 3 columns in: 10 out) before a private
    # covariance on a budget that cannot pay it: refused before the fit, the
    # width read from a public stand-in.
    X, _ = _data()
    budget = PrivacyBudget(rho=0.5)
    pipe = make_pipeline(
        PolynomialFeatures(2),
        PrivateCovariance(rho=1.0, data_norm=30.0, budget=budget),
    )
    with pytest.raises(BudgetExceededError, match="refused before any of them"):
        pipe.fit(X)
    assert budget.spent() == ZCDP(0.0)
    assert fit_cost(pipe, X).total(budget) == ZCDP(1.0)
