"""The box route of the unbounded estimators: a private box, then the boxed
release, where their own scale search cannot measure the columns."""

import math
import warnings

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateBounds, PrivateGaussianEstimator, PrivateMean
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.base import FitData
from dpgauss.exceptions import UtilityWarning


def _mixed_units(n=2000, d=6, seed=102):
    # Correlated Gaussian columns whose sds span 1e-3 to 1e6 (nine decades).
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, d)) / np.sqrt(d) + np.eye(d)
    return (rng.standard_normal((n, d)) @ A) * np.logspace(-3, 6, d) + 5.0


@pytest.mark.parametrize("cls", [PrivateMean, PrivateGaussianEstimator])
def test_the_route_is_public_and_its_ledger_is_its_plan(cls):
    # n = 2,000, d = 6, rho 0.25: no share up to 0.25 measures the scales,
    # and the box search at half the cost reaches its quantiles.
    X = _mixed_units()
    est = cls(rho=0.25, random_state=0)
    total, data = ZCDP(0.25), FitData(n=2000, d=6, X_public=None, n_public=0)
    assert est._box_route(total, data)
    planned = est.planned_costs(6, n_samples=2000)
    budget = PrivacyBudget(rho=1.0)
    # Said before the spend: half the budget buys what a codebook gives.
    with pytest.warns(UtilityWarning, match="finding a box") as caught:
        est.set_params(budget=budget, on_useless="raise").fit(X)
    assert "bounds=(lower, upper)" in str(caught[0].message)
    assert [e.cost for e in budget.ledger()] == planned
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert names[:2] == ["box_low", "box_high"]
    # The searches take half the cost, the boxed release the rest.
    assert sum(c.rho for c in planned[:2]) == pytest.approx(0.125, rel=1e-12)
    assert budget.spent() == ZCDP(0.25)
    # At rho 1 the scales are measured (a raised share): no box route.
    assert not est._box_route(ZCDP(1.0), data)
    # Unknown n (pricing before the rows): no box route.
    assert not est._box_route(total, FitData(n=None, d=6, X_public=None, n_public=0))


@pytest.mark.parametrize(
    "params",
    [
        {"mean_bound": 1e7},
        {"cov_bounds": (1e-7, 1e13)},
        {"bounds": (-1e7, 1e7)},
    ],
)
def test_a_hint_keeps_its_own_route(params):
    data = FitData(n=2000, d=6, X_public=None, n_public=0)
    for cls in (PrivateMean, PrivateGaussianEstimator):
        assert not cls(rho=0.25, **params)._box_route(ZCDP(0.25), data)
    assert not PrivateMean(rho=0.25, method="coinpress")._box_route(ZCDP(0.25), data)
    assert not PrivateGaussianEstimator(
        rho=0.25, initial_center="subsample"
    )._box_route(ZCDP(0.25), data)


def test_mixed_units_at_a_small_budget_land_near_the_simplest_private_answer():
    # Before the route, at rho 0.125: the mean 1e6 sampling errors off (every
    # column given one scale) and the Gaussian's covariance 1e13 times the
    # non-private error. The route is the box finder at half the budget plus
    # the boxed mean at the other half, so its error is that answer's: per
    # column a few sampling errors (noise sd about 4 sds of the column times
    # 2 sqrt(d) / (n sqrt(rho / 2)) = 0.07 sd, 3 sampling errors at n =
    # 2,000); 20 is far below the failure and above any seed's draw.
    X = _mixed_units()
    n = X.shape[0]
    mu, sd = X.mean(axis=0), X.std(axis=0)
    C = np.cov(X, rowvar=False, bias=True)
    D = np.diag(1.0 / sd)
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean = PrivateMean(rho=0.125, random_state=seed).fit(X)
            gauss = PrivateGaussianEstimator(rho=0.125, random_state=seed).fit(X)
        assert mean.method_ == "private_box"
        assert np.max(np.abs(mean.mean_ - mu) / sd * math.sqrt(n)) < 20.0
        assert np.max(np.abs(gauss.mean_ - mu) / sd * math.sqrt(n)) < 20.0
        # Correlations within 0.5 and variances within a factor 2: the
        # covariance in the columns' own units, not 1e13 off.
        assert np.max(np.abs(D @ (gauss.covariance_ - C) @ D)) < 1.0


def test_the_route_matches_private_bounds_then_the_boxed_mean():
    # The same releases as a user's two fits, PrivateBounds then
    # PrivateMean(bounds=...), at the same costs, differ only in the noise:
    # the box is the same search, post-processed the same way.
    X = _mixed_units()
    est = PrivateMean(rho=0.25, random_state=0).fit(X)
    box = PrivateBounds(rho=0.125, random_state=0).fit(X).bounds_
    assert np.all(np.diag(est.frame_) > 0)
    # Both boxes hold the columns' means and are a few sds wide.
    width = (box[1] - box[0]) / X.std(axis=0)
    assert np.all((width > 4) & (width < 20))
    released = 2.0 / np.diag(est.frame_) / X.std(axis=0)
    assert np.all((released > 4) & (released < 20))


def test_pure_epsilon_route():
    X = _mixed_units(n=20_000)
    budget = PrivacyBudget(epsilon=4.0)
    est = PrivateMean(epsilon=2.0, budget=budget, random_state=0)
    data = FitData(n=20_000, d=6, X_public=None, n_public=0)
    if not est._box_route(PureDP(2.0), data):
        pytest.skip("the scales are measured at this budget")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    assert est.method_ == "private_box"
    assert budget.spent() == PureDP(2.0)


def test_the_box_searches_read_a_data_independent_subset(monkeypatch):
    # At most RANGE_ROWS rows (drawn independently of the data), as the range
    # searches: sorting all n rows twice cost 2.4 times the time of the old
    # path on a 4e6 x 10 memmap. q follows from the subset's size (public).
    from dpgauss.releases import _private_box
    from dpgauss.releases._range import RANGE_ROWS

    seen = []
    original = _private_box.release_private_box

    def spy(rows, plan, rng, q, names):
        seen.append((rows.shape[0], q))
        return original(rows, plan, rng, q, names)

    monkeypatch.setattr(_private_box, "release_private_box", spy)
    n, d, rho = 60_000, 3, 1e-4
    est = PrivateMean(rho=rho, random_state=0)
    data = FitData(n=n, d=d, X_public=None, n_public=0)
    assert est._box_route(ZCDP(rho), data)
    X = np.random.default_rng(0).normal(size=(n, d)) * [1e-3, 1.0, 1e3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    assert est.method_ == "private_box"
    rows, q = seen[0]
    assert rows == RANGE_ROWS
    from dpgauss.releases._private_box import tail_quantile

    assert q == tail_quantile(ZCDP(rho / 4), RANGE_ROWS, d)


@pytest.mark.parametrize("cls", [PrivateMean, PrivateGaussianEstimator])
def test_the_library_check_prices_the_route_at_n(cls):
    # check_budget_charged_exactly compared the ledger with the plan priced
    # without n, which keeps range_share and no route: it failed on these.
    from dpgauss.testing.estimator_checks import check_budget_charged_exactly

    X = np.random.default_rng(0).normal(size=(2000, 3))
    est = cls(rho=0.1, random_state=0)
    assert est._box_route(ZCDP(0.1), FitData(n=2000, d=3, X_public=None, n_public=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        check_budget_charged_exactly(est, X)
