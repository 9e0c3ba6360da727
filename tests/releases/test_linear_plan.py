"""The linear regression's plan (dpgauss.releases._linear_plan): its releases
and the prediction before the spend."""

import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.releases._linear_plan import linear_entries, linear_prediction


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_shares_compose_to_the_total(fit_intercept):
    entries = linear_entries(PureDP(2.0), 1000, 4, fit_intercept)
    names = [r.name for r in entries]
    # The mean of t only serves the intercept.
    want = ["lambda_min", "moments", "refine"]
    assert names == ([*want, "target_mean"] if fit_intercept else want)
    assert sum(r.cost.epsilon for r in entries) == pytest.approx(2.0, rel=1e-12)
    rest = 2.0 * (0.8 if fit_intercept else 0.9)
    assert entries[1].cost.epsilon == pytest.approx(0.3 * rest)


def _predict(total, n, d):
    mechanisms = {r.name: r.build() for r in linear_entries(total, n, d, True)}
    return linear_prediction(mechanisms, d, True)


@pytest.mark.parametrize(
    ("total", "loses"),
    # Diabetes' shape (331 training rows, 10 features): at rho 0.5 the fit
    # held out R^2 0.19 (codebook boxes, 5 splits; least squares 0.44), at
    # pure epsilon 0.5 and 1 it fell below zero (-0.03, -0.006).
    [(ZCDP(0.5), False), (PureDP(0.5), True), (PureDP(1.0), True)],
)
def test_the_prediction_follows_what_the_fit_measured(total, loses):
    assert _predict(total, 331, 10).loses is loses


def test_the_prediction_tends_to_least_squares_with_the_budget():
    # Reference rows: least squares' error is half the baseline's (features
    # explaining half of y's variance); noise adds to it and falls with rho.
    errors = [_predict(ZCDP(rho), 10_000, 5).error for rho in (0.01, 1.0, 1e6)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] == pytest.approx(0.05, rel=1e-3)
    # Never more than the explained variance plus the baseline's, whatever
    # the noise: the ridge shrinks towards the zero-coefficient model.
    assert _predict(ZCDP(1e-6), 100, 5).error < 0.1 + 0.05 + 1e-9
