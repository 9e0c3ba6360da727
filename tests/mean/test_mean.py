"""PrivateMean: covariance-aware and variance-aware means with no bounds."""

import math
import warnings

import numpy as np
import pytest

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.base import FitData
from dpgauss.exceptions import UtilityWarning
from dpgauss.mean import PrivateMean
from dpgauss.releases._coinpress_mean import (
    step_radius,
)


def _mahalanobis_ratio(mean, X, mu, C):
    inv = np.linalg.inv(np.linalg.cholesky(C))
    return np.linalg.norm(inv @ (mean - mu)) / np.linalg.norm(inv @ (X.mean(0) - mu))


def test_no_hints_far_mean_bad_conditioning(rotated_gaussian):
    # d = 10, n = 8,000, rho = 0.5, mean 1e4 away, condition number 1e3, no
    # hint: the frame makes the error about isotropic in the Mahalanobis norm.
    # Measured ratios to the non-private error over 10 seeds: median 1.04; a
    # single fit's ratio fluctuates with the non-private error itself (its
    # chi_10 spread), so allow 1.5 per fit.
    for seed in range(3):
        X, mu, C = rotated_gaussian(10, 8000, seed, far=1e4, cond=1e3)
        est = PrivateMean(rho=0.5, random_state=seed).fit(X)
        assert est.method_ == "coinpress"
        assert _mahalanobis_ratio(est.mean_, X, mu, C) < 1.5


def test_known_covariance_and_radius_hint_as_in_coinpress():
    # CoinPress's mean benchmark: N(0, I_50), n = 1,000, rho = 0.5, R = 10
    # sqrt(d). The noise adds about 0.06^2 to the non-private 0.22^2 per fit
    # (trimmed mean over 30 fits 0.258 against the repository's best 0.271).
    errors = []
    for seed in range(6):
        X = np.random.default_rng(seed).normal(size=(1000, 50))
        est = PrivateMean(
            rho=0.5,
            covariance=np.eye(50),
            mean_bound=10 * math.sqrt(50),
            random_state=seed,
        ).fit(X)
        errors.append(np.linalg.norm(est.mean_))
        assert not hasattr(est, "frame_share_")
    assert np.median(errors) < 0.32


def test_a_loose_radius_hint_takes_more_steps_not_more_error():
    X = np.random.default_rng(0).normal(size=(1000, 50))
    tight = PrivateMean(
        rho=0.5, covariance=np.eye(50), mean_bound=70.0, random_state=0
    ).fit(X)
    loose = PrivateMean(
        rho=0.5, covariance=np.eye(50), mean_bound=7e4, random_state=0
    ).fit(X)
    assert loose.mean_steps_ > tight.mean_steps_
    # Each is the non-private error plus noise of about 0.06 per unit norm.
    assert np.linalg.norm(loose.mean_) < 0.4
    assert np.linalg.norm(tight.mean_) < 0.4


def test_plan_weights_skewed_variances():
    # PLAN's skewed setting scaled down: sds d/i, mean 10 * ones, n = 10^4,
    # rho = 0.125, d = 128. Variance-aware weights keep the l2 error near the
    # non-private one (measured 1.1-1.3x); isotropic clipping (the coinpress
    # frame cannot be learned here) would pay about sqrt(d ||s||_2^2 /
    # ||s||_1^2) = 3x more noise.
    d, n = 128, 10_000
    sds = d / np.arange(1, d + 1)
    ratios = []
    for seed in range(3):
        X = 10.0 + np.random.default_rng(seed).normal(size=(n, d)) * sds
        est = PrivateMean(rho=0.125, mean_bound=1e6, random_state=seed).fit(X)
        assert est.method_ == "plan"
        ratios.append(
            np.linalg.norm(est.mean_ - 10.0) / np.linalg.norm(X.mean(0) - 10.0)
        )
    assert np.median(ratios) < 1.6


def test_auto_chooses_from_public_values():
    X = np.random.default_rng(0).normal(size=(20_000, 10))
    assert PrivateMean(rho=0.5, random_state=0).fit(X).method_ == "coinpress"
    small = X[:2000, :].repeat(5, axis=1)[:, :40]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        assert PrivateMean(rho=0.5, random_state=0).fit(small).method_ == "plan"
        given = PrivateMean(rho=0.5, covariance=np.eye(40), random_state=0)
        assert given.fit(small).method_ == "coinpress"


@pytest.mark.parametrize(
    "params",
    [
        {"rho": 1.0},
        {"epsilon": 1.0, "mean_bound": 10.0},
        {"rho": 1.0, "method": "plan"},
        {"rho": 1.0, "covariance": np.eye(3)},
        {"rho": 1.0, "cov_bounds": (0.1, 10.0), "mean_bound": 5.0},
    ],
)
def test_ledger_matches_the_plan(params):
    X = np.random.default_rng(1).normal(size=(3000, 3))
    budget = PrivacyBudget(rho=100.0)
    est = PrivateMean(budget=budget, random_state=0, on_useless="warn", **params)
    est.fit(X)
    costs = [e.cost for e in budget.ledger()]
    assert costs == est.planned_costs(3)
    total = ZCDP(1.0) if "rho" in params else PureDP(1.0)
    assert est.privacy_spent_ == total
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert names[-1] == "mean"
    assert ("frame" in names) == ("covariance" not in params)


def test_the_plan_does_not_depend_on_n():
    # method="auto" resolves from n during the fit; the charges must not.
    est = PrivateMean(rho=1.0)
    costs = est.planned_costs(40)
    for n in (300, 100_000):
        budget = PrivacyBudget(rho=10.0)
        X = np.random.default_rng(0).normal(size=(n, 40))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            PrivateMean(rho=1.0, budget=budget, random_state=0, on_useless="warn").fit(
                X
            )
        assert [e.cost for e in budget.ledger()] == costs


def test_input_and_parameters_are_checked_before_spending():
    budget = PrivacyBudget(rho=1.0)
    X = np.random.default_rng(0).normal(size=(100, 2))
    bad_covariances = {
        "square": np.eye(3)[:2],
        "features": np.eye(3),
        "NaN": np.array([[1.0, np.nan], [np.nan, 1.0]]),
        "symmetric": np.array([[1.0, 0.5], [0.0, 1.0]]),
        "positive definite": np.array([[1.0, 1.0], [1.0, 1.0]]),
    }
    for match, C in bad_covariances.items():
        with pytest.raises(ValueError, match=match):
            PrivateMean(rho=0.5, covariance=C, budget=budget).fit(X)
    with pytest.raises(ValueError, match="cov_bounds"):
        PrivateMean(rho=0.5, cov_bounds=(2.0, 1.0), budget=budget).fit(X)
    with pytest.raises(ValueError, match="mean_bound"):
        PrivateMean(rho=0.5, mean_bound=math.inf, budget=budget).fit(X)
    Y = X.copy()
    Y[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        PrivateMean(rho=0.5, budget=budget).fit(Y)
    np.testing.assert_array_equal(Y[1:], X[1:])
    assert budget.spent().rho == 0.0


def test_extreme_rows_complete():
    rng = np.random.default_rng(0)
    for X in (
        rng.normal(1e300, 1e297, size=(500, 3)),
        rng.normal(0.0, 1e-300, size=(500, 3)),
        np.column_stack([rng.normal(size=500), np.full(500, 4.0)]),
        np.vstack([rng.normal(size=(499, 3)), [1e12, -1e12, 1e12]]),
    ):
        for method in ("coinpress", "plan"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UtilityWarning)
                est = PrivateMean(rho=1.0, method=method, random_state=0).fit(X)
            assert np.all(np.isfinite(est.mean_))


def test_transform_centers_and_inverts():
    X = np.random.default_rng(0).normal(3.0, 1.0, size=(5000, 4))
    est = PrivateMean(rho=1.0, random_state=0).fit(X)
    Z = est.transform(X)
    np.testing.assert_allclose(Z, X - est.mean_)
    np.testing.assert_allclose(est.inverse_transform(Z), X)
    assert list(est.get_feature_names_out()) == ["x0", "x1", "x2", "x3"]


def test_frame_predictions_use_the_pairs_the_frame_reads():
    # The frame reads at most FRAME_PAIRS pairs; auto's frame-noise
    # prediction assumed n // 2 and chose coinpress at n = 10^6, rho = 1e-4
    # with a frame five times noisier than predicted.
    from dpgauss.mean._mean import frame_noise
    from dpgauss.releases._coinpress_mean import MAX_MEAN_RADIUS
    from dpgauss.releases._range import FRAME_PAIRS, frame_count

    assert frame_count(10**6) == FRAME_PAIRS
    assert frame_count(1001) == 500
    cost = ZCDP(1e-4)
    assert frame_noise(cost, 10**6, 50) == frame_noise(cost, 2 * FRAME_PAIRS, 50)
    # A radius or spread that is not finite gives the public cap, never NaN.
    for args in ((math.nan, 5.0), (math.inf, 5.0, 0.0), (0.0, 5.0, math.inf)):
        assert step_radius(*args) == MAX_MEAN_RADIUS


@pytest.mark.parametrize("far", [1e7, 1e12])
def test_no_hint_mean_reached_beyond_a_million_sds(far):
    # n = 1,000, d = 50: the norm search finds ||mu|| <= 4 R and the steps
    # start from 0. With the steps' radius capped at 10^6 sds, the fit
    # would return a center 3 ||mu|| away. The empirical
    # mean errs about sqrt(d / n) = 0.22; the bench's median ratio here is
    # about 1.1 (benchmarks/results/bench_mean.md), so 3 leaves room for
    # the draw while catching any failure to reach the mean (ratio >= 10^6).
    rng = np.random.default_rng(7)
    d = 50
    mu = rng.standard_normal(d)
    mu *= far / np.linalg.norm(mu)
    X = mu + rng.standard_normal((1000, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est = PrivateMean(rho=1.0, random_state=0).fit(X)
    ratio = np.linalg.norm(est.mean_ - mu) / np.linalg.norm(X.mean(axis=0) - mu)
    assert ratio < 3.0
    assert est.mean_steps_ > 3


def test_tukey_is_approximate_dp_and_fails_honestly():
    from sklearn.exceptions import NotFittedError

    from dpgauss.accounting import ApproxDP
    from dpgauss.exceptions import PrivateTestFailedError

    # d = 5, n = 2,000, (1, 1e-6): BGSUZ's mechanism errs about 0.07 in the
    # Mahalanobis norm (benchmarks/results/bench_tukey.md: median 0.079 over 40
    # fits, no failure); one fit stays below 0.25 (about 3 times the median).
    X = np.random.default_rng(0).normal(size=(2000, 5))
    budget = PrivacyBudget(epsilon=10.0, delta=1e-5)
    est = PrivateMean(
        epsilon=1.0, delta=1e-6, method="tukey", budget=budget, random_state=0
    ).fit(X)
    assert est.method_ == "tukey"
    assert np.linalg.norm(est.mean_) < 0.25
    assert est.privacy_spent_ == ApproxDP(1.0, 1e-6)
    assert [e.cost for e in budget.ledger()] == [ApproxDP(1.0, 1e-6)]
    # Too few rows: the check fails, the cost is charged, nothing is fitted.
    small = PrivateMean(
        epsilon=1.0, delta=1e-6, method="tukey", budget=budget, random_state=0
    )
    with pytest.raises(PrivateTestFailedError, match="spent"):
        small.fit(X[:50])
    assert len(budget.ledger()) == 2
    with pytest.raises(NotFittedError):
        small.transform(X)


def test_tukey_parameters_are_checked_before_spending():
    X = np.random.default_rng(0).normal(size=(500, 2))
    budget = PrivacyBudget(epsilon=10.0, delta=1e-5)
    for params in (
        {"rho": 1.0},
        {"epsilon": 1.0},
        {"epsilon": 1.0, "delta": 1e-6, "mean_bound": 3.0},
        {"epsilon": 1.0, "delta": 1e-6, "cov_bounds": (0.1, 2.0)},
    ):
        with pytest.raises(ValueError, match="tukey"):
            PrivateMean(method="tukey", budget=budget, **params).fit(X)
    assert len(budget.ledger()) == 0


def test_tukey_whitened_by_a_public_covariance():
    # Axis-aligned depth is not affine invariant: whitening by a known
    # covariance makes a correlated, badly scaled Gaussian isotropic.
    C = np.array([[400.0, 19.0], [19.0, 1.0]])
    mu = np.array([1e4, -3e4])
    X = np.random.default_rng(0).multivariate_normal(mu, C, 3000)
    est = PrivateMean(
        epsilon=1.0, delta=1e-6, method="tukey", covariance=C, random_state=0
    ).fit(X)
    inv = np.linalg.inv(np.linalg.cholesky(C))
    assert np.linalg.norm(inv @ (est.mean_ - mu)) < 0.25


@pytest.mark.parametrize("method", ["coinpress", "plan", "tukey"])
def test_assume_finite_does_not_break_privacy(method):
    # scikit-learn's assume_finite lets NaN and inf rows through validation;
    # each method must still release (a row-by-row map), never raise after the
    # charge depending on one row (the tukey path once did: a full break).
    from sklearn import config_context

    X = np.random.default_rng(0).normal(size=(3000, 3))
    X[0] = [np.nan, np.inf, -np.inf]
    params = {"epsilon": 2.0, "delta": 1e-6} if method == "tukey" else {"rho": 1.0}
    with config_context(assume_finite=True):
        est = PrivateMean(method=method, random_state=0, **params).fit(X)
    assert np.all(np.isfinite(est.mean_))


def test_hopeless_coordinate_search_falls_back_to_the_norms():
    # n = 200, d = 30, rho = 0.1: both union bounds exceed 1; uncapped, the
    # one-column norm search still ranks better (capped at 1, the comparison
    # would be 1 < 1 and the d-column search would stay, error inf).
    est = PrivateMean(rho=0.1)
    plan = est._pricing_plan(30, total=ZCDP(0.1))
    assert est._location_by_norm(plan, FitData(n=200, d=30))
    assert not est._location_by_norm(plan, FitData(n=100_000, d=30))


@pytest.mark.parametrize(
    ("params", "n", "d"),
    [
        ({"rho": 1.0}, 20_000, 3),
        ({"rho": 0.5}, 2000, 40),
        ({"epsilon": 1.0, "mean_bound": 10.0}, 3000, 3),
        ({"rho": 1.0, "method": "plan"}, 3000, 3),
        ({"rho": 1.0, "cov_bounds": (0.1, 10.0), "method": "plan"}, 3000, 3),
        ({"rho": 1.0, "covariance": np.eye(3)}, 3000, 3),
        ({"epsilon": 1.0, "delta": 1e-6, "method": "tukey"}, 3000, 3),
    ],
)
def test_every_planned_release_has_a_factory_and_builds(params, n, d):
    # The check before the spend is the plan's own factories; the frame's
    # is that of the method the fit will resolve from n, d and its cost.
    from dpgauss.mechanisms._checks import check_noise_scale

    est = PrivateMean(**params)
    data = est._prepare_fit(FitData(n=n, d=d, n_partials=1))
    plan = est._build_plan(est._privacy_total(), data)
    for release in plan.releases():
        assert release.make is not None
        for case in release.cases:
            check_noise_scale(release.build(**case), size=release.size)
    names = [r.name for r in plan.releases()]
    assert set(est._check_calibration(plan, data)) == set(names)
    if "frame" in names:
        frame = plan.releases()[names.index("frame")].build()
        inner = [r.name for r in frame.plan.releases()]
        plan_method = est._resolve_method(plan, n, d) == "plan"
        assert inner == (
            ["log_scales"] if plan_method else [f"precondition_{k}" for k in (1, 2, 3)]
        )
    priced = est._pricing_plan(d)
    assert all(release.make is not None for release in priced.releases())


def test_an_uncalibratable_budget_is_refused_before_the_spend():
    # At rho = 1e-17 one mean step can be calibrated, but the smallest of
    # MAX_MEAN_STEPS (a fit may choose them all) cannot: refused before the
    # spend, as is a Tukey cost the mechanism cannot take.
    from dpgauss.releases._coinpress_mean import mean_factory

    X = np.random.default_rng(0).normal(size=(500, 3))
    budget = PrivacyBudget(rho=1.0)
    est = PrivateMean(rho=1e-17, covariance=np.eye(3), mean_bound=5.0, budget=budget)
    with pytest.raises(ValueError, match="PrivateMean: the release 'mean' cannot"):
        est.fit(X)
    assert budget.ledger() == []
    one_step = mean_factory(500, 3)(ZCDP(1e-17), steps=1)
    from dpgauss.mechanisms._checks import check_noise_scale

    check_noise_scale(one_step)
    budget = PrivacyBudget(epsilon=10.0, delta=0.99)
    est = PrivateMean(epsilon=0.1, delta=0.9, method="tukey", budget=budget)
    with pytest.raises(ValueError, match="PrivateMean: the release 'tukey' cannot"):
        est.fit(X)
    assert budget.ledger() == []
