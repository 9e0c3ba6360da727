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
    """The prediction at the plan's worst public case."""
    mechanisms = {r.name: r.build() for r in linear_entries(total, n, d, True)}
    return linear_prediction(mechanisms, d, True)


@pytest.mark.parametrize(
    ("n", "d", "total", "loses"),
    # As measured by bench_linear.py's sweep (fitted with on_useless="warn";
    # |beta| 2.5, noise sd 0.5, box +-8): n = 1,000, d = 5 at rho 0.01 and
    # pure epsilon 1 ended at the intercept alone (R^2 -0.06 and -0.01, the
    # baseline's mean about 0); n = 100,000, d = 50 at rho 0.001 reached R^2
    # 0.80 and n = 10,000, d = 20 at rho 0.01 0.78 (least squares 0.89).
    # Fair's shape at pure epsilon 0.5 (4,774 rows, 8 features) ended at the
    # intercept (-0.004); at rho 0.5, 0.037 against least squares' 0.051.
    [
        (1000, 5, ZCDP(0.01), True),
        (1000, 5, PureDP(1.0), True),
        (100_000, 50, ZCDP(0.001), False),
        (10_000, 20, ZCDP(0.01), False),
        (4774, 8, PureDP(0.5), True),
        (4774, 8, ZCDP(0.5), False),
    ],
)
def test_the_prediction_follows_what_the_fit_measured(n, d, total, loses):
    assert _predict(total, n, d).loses is loses


def test_the_prediction_tends_to_least_squares_with_the_budget():
    # Reference rows: least squares' error is half the baseline's (features
    # explaining half of y's variance); noise adds to it and falls with rho.
    errors = [_predict(ZCDP(rho), 10_000, 5).error for rho in (0.01, 1.0, 1e6)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] == pytest.approx(0.05, rel=1e-3)
