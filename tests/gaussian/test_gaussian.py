"""PrivateGaussianEstimator: no hints, far means, bad conditioning, accounting."""

import math
import warnings

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.base import FitData
from dpgauss.exceptions import UtilityWarning


def _ratios(est, X, mu, C):
    """Private / non-private error, Mahalanobis (mean) and Mahalanobis-Frobenius."""
    inv = np.linalg.inv(np.linalg.cholesky(C))
    cov = np.linalg.norm(inv @ est.covariance_ @ inv.T - np.eye(len(mu)))
    cov0 = np.linalg.norm(inv @ np.cov(X.T, bias=True) @ inv.T - np.eye(len(mu)))
    mean = np.linalg.norm(inv @ (est.mean_ - mu))
    mean0 = np.linalg.norm(inv @ (X.mean(axis=0) - mu))
    return cov / cov0, mean / mean0


def test_no_hints_far_mean_bad_conditioning(rotated_gaussian):
    # d = 10, n = 8,000, rho = 0.5, the mean 1e4 away, condition number 1e3, no
    # hint: the coarse range (10% of the cost) and the frame bring both errors
    # within 1.1-1.3 times the non-private ones (measured medians over 3 seeds
    # 1.13 and 1.25); allow 1.6 per fit.
    for seed in range(3):
        X, mu, C = rotated_gaussian(10, 8000, seed, far=1e4, cond=1e3)
        est = PrivateGaussianEstimator(rho=0.5, random_state=seed).fit(X)
        cov, mean = _ratios(est, X, mu, C)
        assert cov < 1.6
        assert mean < 1.6
        np.testing.assert_array_equal(est.location_, est.mean_)


def test_hints_are_used_instead_of_the_range_search(rotated_gaussian):
    X, _, _ = rotated_gaussian(5, 4000, 0)
    budget = PrivacyBudget(rho=10.0)
    est = PrivateGaussianEstimator(
        rho=0.5, mean_bound=10.0, cov_bounds=(0.5, 2.0), budget=budget, random_state=0
    ).fit(X)
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert not any(name.startswith("range_") for name in names)
    assert names == [
        "precondition_1",
        "precondition_2",
        "precondition_3",
        "mean",
        "second_moment",
    ]
    assert budget.spent().rho == pytest.approx(0.5)
    values = np.linalg.eigvalsh(est.covariance_)
    assert values.min() >= 0.5 - 1e-12
    assert values.max() <= 2.0 + 1e-12


@pytest.mark.parametrize("kind", ["rho", "epsilon"])
def test_ledger_matches_the_plan(kind, rotated_gaussian):
    X, _, _ = rotated_gaussian(3, 3000, 1)
    budget = PrivacyBudget(rho=100.0)
    est = PrivateGaussianEstimator(budget=budget, random_state=0, **{kind: 1.0})
    est.fit(X)
    costs = [e.cost for e in budget.ledger()]
    assert costs == est.planned_costs(3)
    assert est.privacy_spent_ == (ZCDP(1.0) if kind == "rho" else PureDP(1.0))
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert names[:2] == ["range_location", "range_scale"]


def test_input_and_parameters_are_checked_before_spending():
    budget = PrivacyBudget(rho=1.0)
    X = np.random.default_rng(0).normal(size=(100, 2))
    for bad in ((1.0,), (2.0, 1.0), (0.0, math.inf), "wide"):
        with pytest.raises(ValueError, match="cov_bounds"):
            PrivateGaussianEstimator(rho=0.5, cov_bounds=bad, budget=budget).fit(X)
    with pytest.raises(ValueError, match="mean_bound"):
        PrivateGaussianEstimator(rho=0.5, mean_bound=math.inf, budget=budget).fit(X)
    Y = X.copy()
    Y[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PrivateGaussianEstimator(rho=0.5, budget=budget).fit(Y)
    assert budget.spent().rho == 0.0


def test_extreme_rows_complete_after_the_charge():
    # Rows at 1e300 and 1e-300 scales, a constant column, a row 1e12 times the
    # rest away: the fit completes with a finite positive definite covariance.
    rng = np.random.default_rng(0)
    for X in (
        rng.normal(1e300, 1e297, size=(500, 3)),
        rng.normal(0.0, 1e-300, size=(500, 3)),
        np.column_stack([rng.normal(size=500), np.full(500, 4.0)]),
        np.vstack([rng.normal(size=(499, 3)), [1e12, -1e12, 1e12]]),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            est = PrivateGaussianEstimator(rho=1.0, random_state=0).fit(X)
        assert np.all(np.isfinite(est.covariance_))
        assert np.all(np.isfinite(est.mean_))
        assert np.linalg.eigvalsh(est.covariance_).min() > 0


def test_warns_when_the_range_search_is_predicted_to_fail():
    X = np.random.default_rng(0).normal(size=(200, 20))
    with pytest.warns(UtilityWarning, match="go astray"):
        PrivateGaussianEstimator(rho=0.5, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateGaussianEstimator(
            rho=0.5, mean_bound=5.0, cov_bounds=(0.1, 10.0), random_state=0
        ).fit(X)


def test_sample_score_and_mahalanobis_describe_one_gaussian(rotated_gaussian):
    X, _, _ = rotated_gaussian(4, 5000, 2)
    est = PrivateGaussianEstimator(rho=1.0, random_state=0).fit(X)
    draws = est.sample(20000, random_state=1)
    np.testing.assert_allclose(np.cov(draws.T), est.covariance_, atol=0.1)
    assert np.isfinite(est.score(X))
    assert est.mahalanobis(X).shape == (5000,)


@pytest.mark.parametrize("far", [0.0, 1e9])
def test_few_rows_no_hints_start_from_the_top_eigenvalue(far, rotated_gaussian):
    # n = 1,000, d = 50, rho = 1: the coordinate searches would go astray, so
    # the norms are searched. The frame used to start from the pairs'
    # largest coordinate times 2 sqrt(d) (an eigenvalue bound about 60 d too
    # large) and 2 fixed mean steps: measured medians over 5 seeds were
    # 8 (mean) and 4.5 (covariance) at far = 0 and 2e4 times at 1e5. From
    # top_eigenvalue and mean_steps="auto" they are about 2.6 and 0.6 at every
    # distance up to 1e12; 6 and 2 per fit leave room for the draw and catch
    # either regression.
    X, mu, C = rotated_gaussian(50, 1000, 3, far=far)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est = PrivateGaussianEstimator(rho=1.0, random_state=0).fit(X)
    cov, mean = _ratios(est, X, mu, C)
    assert mean < 6.0
    assert cov < 2.0
    assert est.mean_steps_ >= (8 if far else 2)


def test_top_eigenvalue_bounds_every_spectrum():
    # With a large budget the released median is the sample median, and
    # lambda_1 <= 2 M^2 / median(chi2_1) for every spectrum (equality for one
    # spike); for a flat spectrum the bound is about 2.2 d lambda_1.
    from dpgauss.accounting._plan import Release, ReleasePlan
    from dpgauss.releases._range import top_eigenvalue

    rng = np.random.default_rng(0)
    d = 20
    for spectrum in (
        np.ones(d),
        np.r_[100.0, np.ones(d - 1)],
        np.r_[1.0, 1e-9 * np.ones(d - 1)],
    ):
        Z = rng.standard_normal((20000, d)) * np.sqrt(spectrum / 2)
        plan = ReleasePlan(ZCDP(1e4), [Release("range_scale", ZCDP(1e4), "g")])
        top = top_eigenvalue(Z, plan, rng)
        assert top >= 0.97 * spectrum.max()
        assert top <= 2.4 * spectrum.sum()


def test_the_scale_search_that_runs_is_the_one_predicted(monkeypatch):
    # rho = 1e-4, n = 10^5, d = 5: the coordinate medians stay on track but
    # the d-column scale search (4/5 of range_scale) would not, so the
    # one-column search on the pairs must run with the whole cost, and the
    # warning must judge the search that runs, not the d-column one. At d = 1
    # the one scale takes the whole cost and no "top" search runs.
    from dpgauss.releases import _range

    calls = []
    original = _range.top_eigenvalue

    def spy(pairs, plan, rng, name="range_scale", scales=None):
        calls.append(name)
        return original(pairs, plan, rng, name, scales)

    monkeypatch.setattr(_range, "top_eigenvalue", spy)
    est = PrivateGaussianEstimator(rho=1e-4, random_state=0)
    plan = est._pricing_plan(5, total=ZCDP(1e-4))
    assert est._one_scale(plan, FitData(n=100_000, d=5))
    assert not est._location_by_norm(plan, FitData(n=100_000, d=5))
    assert est._range_search("range_scale", plan, FitData(n=100_000, d=5))[1] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(np.random.default_rng(0).normal(size=(100_000, 5)))
    assert calls == ["range_scale"]
    calls.clear()
    PrivateGaussianEstimator(rho=1.0, random_state=0).fit(
        np.random.default_rng(1).normal(size=(3000, 1))
    )
    assert calls == []
