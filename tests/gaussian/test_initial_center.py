"""PrivateGaussianEstimator(initial_center="subsample"): the winsorized aggregate
of group means as the mean steps' first ball."""

import warnings

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.exceptions import UtilityWarning
from dpgauss.gaussian._gaussian import center_factory
from dpgauss.utils._sums import group_means


def _names(budget):
    return [e.mechanism.split(":")[1] for e in budget.ledger()]


@pytest.mark.parametrize(
    ("params", "spent"),
    [
        ({"rho": 1.0}, ZCDP(1.0)),
        # Pure DP needs far more groups (Laplace count noise: 378,819 at epsilon
        # 0.05, d = 3); a large range_share brings it to 4,736.
        ({"epsilon": 10.0, "range_share": 0.4}, PureDP(10.0)),
    ],
)
def test_ledger_matches_the_plan(params, spent, rotated_gaussian):
    # The center takes range_location's place and cost; the nested releases
    # (median, radius, clipped mean) each draw once (the plan's finish checks).
    X, _, _ = rotated_gaussian(3, 6000, 1)
    budget = PrivacyBudget(rho=100.0)
    est = PrivateGaussianEstimator(
        budget=budget, initial_center="subsample", random_state=0, **params
    ).fit(X)
    assert [e.cost for e in budget.ledger()] == est.planned_costs(3)
    assert est.privacy_spent_ == spent
    assert _names(budget)[:2] == ["subsample_center", "range_scale"]
    ranged = PrivateGaussianEstimator(**params).planned_costs(3)
    assert est.planned_costs(3) == ranged  # same costs, release by release


def test_ignored_when_a_hint_or_public_rows_give_the_location(rotated_gaussian):
    X, _, _ = rotated_gaussian(3, 3000, 2)
    for extra, fit_kw in (({"mean_bound": 10.0}, {}), ({}, {"X_public": X[:5]})):
        budget = PrivacyBudget(rho=10.0)
        PrivateGaussianEstimator(
            rho=0.5, initial_center="subsample", budget=budget, random_state=0, **extra
        ).fit(X, **fit_kw)
        assert "subsample_center" not in _names(budget)
        assert "range_location" not in _names(budget)


def test_far_mean_bad_conditioning_as_accurate_as_the_range_start(rotated_gaussian):
    # As test_gaussian's no-hint test: d = 10, n = 8,000, rho = 0.5, the mean
    # 1e4 away, condition number 1e3. Both starts give errors within 1.1-1.3
    # times the non-private ones (the mean steps forget the start radius:
    # benchmarks/bench_gaussian_center.py); allow 1.6 per fit.
    for seed in range(3):
        X, mu, C = rotated_gaussian(10, 8000, seed, far=1e4, cond=1e3)
        est = PrivateGaussianEstimator(
            rho=0.5, initial_center="subsample", random_state=seed
        ).fit(X)
        inv = np.linalg.inv(np.linalg.cholesky(C))
        cov = np.linalg.norm(inv @ est.covariance_ @ inv.T - np.eye(10))
        cov0 = np.linalg.norm(inv @ np.cov(X.T, bias=True) @ inv.T - np.eye(10))
        mean = np.linalg.norm(inv @ (est.mean_ - mu))
        mean0 = np.linalg.norm(inv @ (X.mean(axis=0) - mu))
        assert cov / cov0 < 1.6
        assert mean / mean0 < 1.6


def test_extreme_rows_complete_after_the_charge():
    # Rows at 1e300 (group means overflow in the frame: failed candidates),
    # 1e-300, a constant column, a row 1e12 times the rest away.
    rng = np.random.default_rng(0)
    for X in (
        rng.normal(1e300, 1e297, size=(800, 3)),
        np.full((800, 2), 1.7e308) * np.where(rng.random((800, 1)) < 0.5, 1, -1),
        rng.normal(0.0, 1e-300, size=(800, 3)),
        np.column_stack([rng.normal(size=800), np.full(800, 4.0)]),
        np.vstack([rng.normal(size=(799, 3)), [1e12, -1e12, 1e12]]),
    ):
        budget = PrivacyBudget(rho=2.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            est = PrivateGaussianEstimator(
                rho=1.0, initial_center="subsample", budget=budget, random_state=0
            ).fit(X)
        assert budget.spent() == ZCDP(1.0)
        assert np.all(np.isfinite(est.mean_))
        assert np.all(np.isfinite(est.covariance_))
        assert np.linalg.eigvalsh(est.covariance_).min() > 0


def test_too_few_rows_take_the_range_step_with_a_warning_before_the_spend():
    # At rho = 0.5 the center's cost (0.025) needs 1,490 groups at d = 5; with
    # fewer rows its searches would go astray (bench_gaussian_center: n = 3,000,
    # d = 20, rho = 0.1 started the mean steps from radius 1e15, mean errors
    # 1e58). The range step runs instead, at the same cost.
    X = np.random.default_rng(0).normal(size=(1000, 5))
    budget = PrivacyBudget(rho=1.0)
    est = PrivateGaussianEstimator(
        rho=0.5, initial_center="subsample", budget=budget, random_state=0
    )
    with pytest.warns(UtilityWarning, match="the range step runs instead"):
        est.fit(X)
    assert _names(budget)[:2] == ["range_location", "range_scale"]
    assert [e.cost for e in budget.ledger()] == est.planned_costs(5)
    assert np.linalg.norm(est.mean_) < 0.3
    assert "_center_fallback" not in vars(est)  # transient
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        X = np.random.default_rng(0).normal(size=(1500, 5))
        budget = PrivacyBudget(rho=1.0)
        PrivateGaussianEstimator(
            rho=0.5, initial_center="subsample", budget=budget, random_state=0
        ).fit(X)
        assert _names(budget)[0] == "subsample_center"


def test_bad_option_is_refused_before_the_spend():
    budget = PrivacyBudget(rho=1.0)
    X = np.random.default_rng(0).normal(size=(100, 2))
    with pytest.raises(ValueError, match="initial_center"):
        PrivateGaussianEstimator(rho=0.5, initial_center="median", budget=budget).fit(X)
    assert budget.spent().rho == 0.0


def test_group_means_each_depend_on_their_own_rows_only():
    # One row changed moves its group's mean only, whatever its value; numpy,
    # chunked (more rows than a chunk) and Dask arrays agree.
    rng = np.random.default_rng(3)
    n, k = 20_000, 997
    X = rng.normal(size=(n, 3))
    labels = np.full(n, -1)
    labels[rng.permutation(n)[: k * (n // k)]] = np.repeat(np.arange(k), n // k)
    base = group_means(X, labels, k)
    expect = np.array([X[labels == g].mean(axis=0) for g in range(k)])
    np.testing.assert_allclose(base, expect, rtol=1e-12)
    Y = X.copy()
    row = int(np.flatnonzero(labels >= 0)[5])
    Y[row] = 1e300
    moved = group_means(Y, labels, k)
    changed = np.flatnonzero(np.any(moved != base, axis=1))
    assert changed.tolist() == [labels[row]]
    dropped = int(np.flatnonzero(labels < 0)[0])
    Y = X.copy()
    Y[dropped] = 1e300
    np.testing.assert_array_equal(group_means(Y, labels, k), base)
    da = pytest.importorskip("dask.array")
    np.testing.assert_allclose(
        group_means(da.from_array(X, chunks=(3001, 3)), labels, k), base, rtol=1e-12
    )


def test_start_ball_holds_the_mean_and_is_tighter_than_the_range_start():
    # n = 3000, d = 2, rho = 0.5: k = 230 groups of 13 rows, whose means are
    # about 0.28 apart per coordinate in the frame A = I / 2 (sd 2): R = 2.5
    # times their median distance (about 1.2), the start (1 + 2 / 2.5) R plus
    # the noise's tail, about 2; the range start is 4 sqrt(2) = 5.7 here.
    rng = np.random.default_rng(4)
    X = rng.normal(5.0, 2.0, size=(3000, 2))
    est = PrivateGaussianEstimator(rho=0.5, initial_center="subsample")
    cost = ZCDP(0.5)
    make = center_factory(3000, 2)
    plan = ReleasePlan(cost, [Release("subsample_center", cost, "gaussian", make)])
    center, radius = est._subsample_start(
        X, np.eye(2) / 2.0, plan, np.random.default_rng(9)
    )
    plan.finish()  # each nested release drew exactly once
    assert np.linalg.norm(center - 5.0) < 0.2
    assert np.linalg.norm((center - 5.0) / 2.0) <= radius < 2.5
