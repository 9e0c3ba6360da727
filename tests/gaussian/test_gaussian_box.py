"""PrivateGaussianEstimator(bounds=...): the box as the whole public hint."""

import math
import warnings

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateGaussianEstimator
from dpgauss.accounting import PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.exceptions import UselessFitError, UtilityWarning
from dpgauss.releases._box_gaussian import (
    _entries,
    box_gaussian_plan,
    box_gaussian_predict,
    from_box,
)
from dpgauss.releases._faint import moments_variances


def _mixed_units(n, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.array([1e-3, 1.0, 1e3, 1e6])
    return rng.normal(0.2, 0.1, size=(n, 4)) * scales, scales


def test_mixed_units_cost_nothing():
    # In box units the rows are N(0.2, 0.01 I) in [-1, 1]^4: at rho 0.5 and
    # n = 3000 the mean's noise is about 1e-3 box units and the sds' a few
    # percent (measured: mean within 1e-3, sds 0.098-0.102); allow 10x.
    X, s = _mixed_units(3000)
    est = PrivateGaussianEstimator(bounds=(-s, s), rho=0.5, random_state=0).fit(X)
    assert np.all(np.abs(est.mean_ - X.mean(0)) / s < 1e-2)
    sds = np.sqrt(np.diag(est.covariance_)) / s
    assert np.all(np.abs(sds - 0.1) < 0.03)


@pytest.mark.parametrize("seed", range(4))
def test_outputs_within_the_box_for_far_rows_and_tiny_budgets(seed):
    X, s = _mixed_units(400, seed)
    X[0] = 1e12
    est = PrivateGaussianEstimator(
        bounds=(-s, s), epsilon=1e-3, random_state=seed, on_useless="warn"
    ).fit(X)
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.abs(est.mean_) <= s)
    assert np.all(np.diag(est.covariance_) <= s**2 * (1 + 1e-12))


def test_from_box_caps_the_variances_and_keeps_definiteness():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(3, 3)) * 5
    values, vectors = np.linalg.eigh(A @ A.T)
    mean, new, _, floor, _ = from_box(
        np.array([3.0, -0.5, np.nan]), values, vectors, 1e-9, np.zeros(3), np.ones(3)
    )
    assert np.array_equal(mean, [1.0, -0.5, 0.0])
    assert new.min() >= floor > 0


def test_bounds_exclude_the_other_hints():
    X, s = _mixed_units(100)
    with pytest.raises(ValueError, match="whole public hint"):
        PrivateGaussianEstimator(bounds=(-s, s), cov_bounds=(0, 1), rho=1).fit(X)
    with pytest.raises(ValueError, match="whole public hint"):
        PrivateGaussianEstimator(bounds=(-s, s), rho=1).fit(X, X_public=X[:10])


def _star98_like(n, d, seed=0):
    """Columns that fill a twentieth of their box's width (box-unit sd 0.05)."""
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 0.05, size=(n, d))


def test_a_fit_predicted_to_lose_refuses_before_the_spend():
    # n = 150, d = 22, epsilon = 1: each variance's noise (Laplace scale
    # 8 d / (3 n) ~ 0.39 box units) swamps the reference variance 0.1, so the
    # covariance is predicted no better than the zero matrix.
    X = _star98_like(150, 22)
    budget = PrivacyBudget(epsilon=2.0)
    est = PrivateGaussianEstimator(
        bounds=(-1, 1), epsilon=1.0, budget=budget, random_state=0
    )
    with pytest.raises(UselessFitError, match="Nothing was spent"):
        est.fit(X)
    assert budget.spent().epsilon == 0.0
    assert not hasattr(est, "covariance_")
    warned = PrivateGaussianEstimator(
        bounds=(-1, 1), epsilon=1.0, random_state=0, on_useless="warn"
    )
    with pytest.warns(UtilityWarning, match="covariance is predicted"):
        warned.fit(X)
    assert np.all(np.isfinite(warned.covariance_))


@pytest.mark.parametrize(
    ("privacy", "n"),
    [({"epsilon": 1.0}, 300), ({"rho": 0.5}, 300), ({"rho": 0.5}, 5000)],
)
def test_every_plan_stays_in_the_box_with_rows_1e12_away(privacy, n):
    X, s = _mixed_units(n, 1)
    X[:3] = 1e12
    X[3] = -1e12
    est = PrivateGaussianEstimator(
        bounds=(-s, s), random_state=0, on_useless="warn", **privacy
    ).fit(X)
    assert np.all(np.abs(est.mean_) <= s)
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.diag(est.covariance_) <= s**2 * (1 + 1e-12))
    assert np.all(np.linalg.eigvalsh(est.covariance_) > 0)


def test_the_staged_plan_gives_the_baselines_mean_and_a_full_covariance():
    # d = 4, n = 20000, rho = 0.5: the first stage (a quarter) releases the
    # variances, 0.01 box units, far above its noise, so the augmented option
    # runs at 3/4 of rho. The mean's noise is that of the whole rho, 2 sqrt(4)
    # / n = 2e-4 box units per coordinate (sd); an off-diagonal entry's is
    # 2 sqrt(2) d / (n sqrt(2 * 0.375)) / sqrt(2) ~ 4.6e-4, and the entry is
    # kept when it clears 2.39 of those (1.1e-3; the true covariance is
    # 5e-3). Recovered within 3e-3 box units (6 sds), the mean within 4e-3.
    rng = np.random.default_rng(0)
    cov = 0.01 * np.array([[1, 0.5, 0, 0], [0.5, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    X = rng.multivariate_normal([0.2, -0.3, 0.0, 0.1], cov, size=20000)
    est = PrivateGaussianEstimator(bounds=(-1, 1), rho=0.5, random_state=0).fit(X)
    assert np.all(np.abs(est.mean_ - X.mean(0)) < 4e-3)
    assert abs(est.covariance_[0, 1] - np.cov(X.T)[0, 1]) < 3e-3


def test_a_fit_predicted_far_from_the_rows_warns_and_a_close_one_does_not():
    # d = 8, n = 300, rho = 0.1: the covariance is predicted beyond 10 times
    # its sampling error (~ 0.017 box units at variance 0.1 / 3): a warning.
    # At rho = 50 and d = 4 the augmented plan's noise is below the sampling
    # error: none.
    rng = np.random.default_rng(0)
    far = PrivateGaussianEstimator(bounds=(-1, 1), rho=0.1, random_state=0)
    with pytest.warns(UtilityWarning, match="non-private sampling error"):
        far.fit(rng.normal(0, 0.3, size=(300, 8)))
    close = PrivateGaussianEstimator(bounds=(-1, 1), rho=50.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        close.fit(rng.normal(0, 0.3, size=(5000, 4)))


def test_pure_dp_means_beat_the_diagonal_gaussian_s():
    # The baseline releases its means at half the budget (Laplace scale
    # 4 d / (n epsilon) per coordinate, sd sqrt(2) times it); the moments
    # release (2d entries, l-infinity sensitivity 2 / n) takes the cube's
    # K-norm noise at the whole budget, sd sqrt((2d + 1)(2d + 2) / 3) 2 /
    # (n epsilon): 0.446 of the baseline's at d = 8. A pure fit at n = 4000 is
    # not refused for its mean (it warns that the diagonal covariance is far
    # from the rows' correlations), whichever plan scores best.
    X = np.random.default_rng(0).normal(0, 0.3, size=(4000, 8))
    est = PrivateGaussianEstimator(bounds=(-1, 1), epsilon=1.0, random_state=0)
    with pytest.warns(UtilityWarning, match="non-private sampling error"):
        est.fit(X)
    assert np.all(np.abs(est.mean_) <= 1.0)
    total, n, d = PureDP(1.0), 4000, 8
    entries = _entries(total, n, d, None)
    assert [r.name for r in entries] == ["box_moments"]
    built = {r.name: r.build() for r in ReleasePlan(total, entries).releases()}
    mean = box_gaussian_predict(total, n, d, built).mean
    expected = math.sqrt((2 * d + 1) * (2 * d + 2) / 3) * 2 / (math.sqrt(2) * 4 * d)
    # No lattice in the ideal scales: the ratio up to the rounding terms.
    assert mean.error == pytest.approx(expected * mean.baseline, rel=1e-6)


def test_moments_variances_drop_what_the_noise_could_make():
    # Noise sd 0.01 on each second moment, none on the means (at 0): one
    # variance below 0 shows a faint column, so the strict quantile (3.29 sds
    # of a Gaussian at 1 - 0.001/4) applies: 0.015 (1.5 sds) is 0, 0.5 is
    # kept as released, and nothing leaves [0, 1].
    second = np.array([-0.3, 0.015, 0.5, 1.2])
    out = moments_variances(second, np.zeros(4), 0.0, 1e-4)
    assert out.tolist() == [0.0, 0.0, 0.5, 1.0]


def test_a_diagonal_fit_of_columns_filling_a_thousandth_of_the_box():
    # Student t rows (3 dof) in a box 100 wide fill about 1e-3 of it: at n =
    # 150 and epsilon 1 each variance's noise sd is about 0.09 box units, a
    # hundred times the variances. Each is released as 0 (then the floor, a
    # millionth of the largest) unless its noise clears k = 2.77 sds, which
    # a Laplace draw does with chance about 1% per coordinate (a twentieth
    # per fit, FALSE_KEEPS): over 20 fits of 5 coordinates, 1 expected; allow
    # 4 beyond twice their variance (the zero matrix's relative error is 1).
    beyond = []
    for seed in range(20):
        X = np.random.default_rng(seed).standard_t(3, size=(150, 5))
        est = PrivateGaussianEstimator(
            bounds=(-50.0, 50.0), epsilon=1.0, random_state=seed, on_useless="warn"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            est.fit(X)
        beyond.append(int(np.sum(np.diag(est.covariance_) > 2.0 * X.var(axis=0))))
    plan = box_gaussian_plan(PureDP(1.0), 150, 5)
    assert [r.name for r in plan] == ["box_moments"]
    assert sum(beyond) <= 4, beyond
