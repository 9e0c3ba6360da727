"""PrivateBounds: public bounds from a small share of a budget."""

import warnings

import numpy as np
import pytest
from scipy import stats

from dpgauss import (
    PrivacyBudget,
    PrivateBounds,
    PrivateMean,
    PrivateStandardScaler,
)
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.exceptions import UselessFitError, UtilityWarning
from dpgauss.releases._box import check_bounds
from dpgauss.releases._private_box import (
    Q_MIN,
    Z_COVER,
    box_margin,
    tail_quantile,
)
from dpgauss.releases._private_box import finite_box as _finite_box
from dpgauss.testing.estimator_checks import check_dp_estimator


def _columns(n, seed=0):
    # Three scales and locations no codebook would share: a far mean, a
    # thousandth, a thousand.
    rng = np.random.default_rng(seed)
    return rng.normal([1e6, 0.0, -5e3], [1.0, 1e-3, 1e3], size=(n, 3))


def test_the_plan_splits_the_cost_and_reads_n_only():
    est = PrivateBounds(rho=0.2)
    assert est.planned_costs(3, n_samples=1000) == [ZCDP(0.1), ZCDP(0.1)]
    assert PrivateBounds("norm", epsilon=1.0).planned_costs(3) == [PureDP(1.0)]
    # q: 4 count noise sds over n, at least 1/64. Each search's steps cost
    # rho / 128 with l2 sensitivity sqrt(3): sd sqrt(3 * 64 / 0.2) = 31.
    sd = np.sqrt(3 * 64 / (2 * 0.1))
    assert tail_quantile(ZCDP(0.1), 1000, 3) == pytest.approx(4 * sd / 1000)
    assert tail_quantile(ZCDP(0.1), 10**6, 3) == Q_MIN


def test_a_box_holds_any_scale_and_location():
    # n = 20,000 at rho 0.1: q = 1/64, the box reaches Z_COVER sds either
    # side of each Gaussian column's mean; the quantiles' rank error (a few
    # count sds of 31, against 312 rows beyond each) moves an edge by under
    # a tenth of an sd, so 3.5-4.5 sds and at most 1e-3 of the rows clipped
    # (4 sds: 6e-5).
    X = _columns(20_000)
    est = PrivateBounds(rho=0.1, random_state=0).fit(X)
    lower, upper = est.bounds_
    z_low = (lower - X.mean(0)) / X.std(0)
    z_high = (upper - X.mean(0)) / X.std(0)
    assert np.all((z_low < -3.5) & (z_low > -4.5)), z_low
    assert np.all((z_high > 3.5) & (z_high < 4.5)), z_high
    assert np.mean((X < lower) | (X > upper)) < 1e-3
    assert est.quantile_ == Q_MIN
    check_bounds(est.bounds_, 3)


def test_pure_epsilon_searches_a_nearer_quantile():
    # epsilon 1 on 20,000 rows: Laplace steps of scale 64 * 3 / 0.5 = 384
    # counts (sd 543), so q = 4 * 543 / 20,000 = 0.11; the margin widens the
    # box to Z_COVER sds of a Gaussian column all the same.
    X = _columns(20_000)
    est = PrivateBounds(epsilon=1.0, random_state=0).fit(X)
    assert est.quantile_ == pytest.approx(4 * 384 * np.sqrt(2) / 20_000)
    lower, upper = est.bounds_
    assert np.mean((X < lower) | (X > upper)) < 1e-3
    assert np.all(upper - lower < 2 * 5.0 * X.std(0))
    # The margin is Gaussian-calibrated: at q its edges reach Z_COVER sds.
    z = stats.norm.isf(est.quantile_)
    assert z + 2 * z * box_margin(est.quantile_) == pytest.approx(Z_COVER)


def test_heavy_tails_are_clipped_a_little_more():
    # Student t with 3 degrees of freedom: the box is calibrated on a
    # Gaussian's tail, so beyond its edges lie about 1% of the rows (0.9%
    # for t_3 beyond 4 sds of the 1/64 quantiles' Gaussian equivalent).
    X = np.random.default_rng(1).standard_t(3, size=(20_000, 2))
    lower, upper = PrivateBounds(rho=0.1, random_state=0).fit(X).bounds_
    assert np.mean((X < lower) | (X > upper)) < 0.02


def test_a_tied_column_gets_a_narrow_box_and_a_warning():
    # 99% zeros: both searched quantiles are 0, the box is 0 +- 1e-6.
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.normal(size=20_000), rng.random(20_000) < 0.01])
    with pytest.warns(UtilityWarning, match=r"feature\(s\) 1 coincide"):
        est = PrivateBounds(rho=0.1, random_state=0).fit(X)
    lower, upper = est.bounds_
    assert lower[1] < 0.0 < upper[1]
    assert upper[1] - lower[1] < 1e-5
    check_bounds(est.bounds_, 2)


@pytest.mark.parametrize("far", [1e300, -np.finfo(np.float64).max, 5e-324])
def test_far_rows_give_valid_bounds(far):
    # A row at the ends of float64 (or a subnormal): the search is over every
    # finite float, the widening saturates, and the half-widths are clamped
    # into what the estimators accept.
    X = _columns(5_000)
    X[0] = far
    est = PrivateBounds(rho=0.5, random_state=0).fit(X)
    lower, upper = check_bounds(est.bounds_, 3)
    assert np.all(np.isfinite(lower) & np.isfinite(upper))
    est = PrivateBounds("norm", rho=0.5, random_state=0).fit(X)
    assert np.isfinite(est.data_norm_)
    assert est.data_norm_ > 0


def test_no_box_is_nan_or_empty_and_a_clamped_one_says_so():
    # Found by an adversarial review: rows at both ends of float64 overflowed
    # the widening to -inf and +inf and the box came out NaN; a column at
    # 1e160 +- 1e150 or 0 +- 1e300 got lower == upper. Every box is now
    # valid (finite, ordered as computed, half-widths the estimators accept);
    # one that cannot hold the rows is clamped with a warning.
    top = np.finfo(np.float64).max
    rng = np.random.default_rng(0)
    for X in (
        np.r_[np.full((500, 1), -top), np.full((500, 1), top)],
        rng.normal(1e160, 1e150, (1000, 1)),
        rng.normal(0.0, 1e300, (1000, 1)),
    ):
        with pytest.warns(UtilityWarning, match=r"feature\(s\) 0 is clamped"):
            est = PrivateBounds(rho=10.0, random_state=0).fit(X)
        lower, upper = check_bounds(est.bounds_, 1)
        assert np.all(lower < upper)


def test_dask_rows_give_numpy_s_answer():
    # kind="norm" crashed on a Dask array after the charge (review finding).
    da = pytest.importorskip("dask.array")
    X = _columns(2_000)
    for kind, attribute in (("box", "bounds_"), ("norm", "data_norm_")):
        lazy = PrivateBounds(kind, rho=1.0, random_state=0).fit(da.from_array(X, 500))
        eager = PrivateBounds(kind, rho=1.0, random_state=0).fit(X)
        np.testing.assert_array_equal(
            getattr(lazy, attribute), getattr(eager, attribute)
        )


def test_too_few_rows_refuse_before_the_spend():
    # rho 0.01: each search at 0.005, count sd sqrt(3 * 64 / 0.01) = 139,
    # so the quartiles need 4 * 139 / (1/4) = 2218 rows.
    budget = PrivacyBudget(rho=1.0)
    X = _columns(100)
    with pytest.raises(UselessFitError, match="needs at least 2218 rows"):
        PrivateBounds(rho=0.01, budget=budget).fit(X)
    assert budget.spent() == ZCDP(0.0)
    # With on_useless="warn" it searches the quartiles.
    with pytest.warns(UtilityWarning, match="quartiles"):
        est = PrivateBounds(rho=0.01, on_useless="warn", random_state=0).fit(X)
    assert est.quantile_ == 0.25
    check_bounds(est.bounds_, 3)


def test_a_norm_bound_about_a_public_location():
    X = _columns(20_000)
    center = np.array([1e6, 0.0, -5e3])
    est = PrivateBounds("norm", location=center, rho=0.1, random_state=0).fit(X)
    distances = np.linalg.norm(X - center, axis=1)
    # The 63/64 quantile of the distances (count sd 18 against 312 rows
    # beyond it) times 1.5: above every row here.
    assert est.bounds_ is None
    assert np.quantile(distances, 0.99) < est.data_norm_ < 2 * distances.max()
    with pytest.raises(ValueError, match="location must be 3 finite numbers"):
        PrivateBounds("norm", location=[0.0, 1.0], rho=0.1).fit(X)


@pytest.mark.parametrize(
    ("kind", "attribute"), [("box", "bounds_"), ("norm", "data_norm_")]
)
def test_the_dp_checks(kind, attribute):
    # Charged exactly, clones share the budget and draw independent noise,
    # parameters untouched, bad parameters refused before any spend.
    X = _columns(300)
    est = PrivateBounds(kind, rho=10.0, budget=PrivacyBudget(rho=1e6), random_state=0)
    check_dp_estimator(est, X, attribute)


def test_the_estimators_take_the_bounds_and_share_the_budget():
    X = _columns(20_000)
    budget = PrivacyBudget(rho=0.5)
    box = PrivateBounds(rho=0.05, budget=budget, random_state=0).fit(X).bounds_
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        mean = PrivateMean(bounds=box, rho=0.2, budget=budget, random_state=0)
        mean.fit(X)
        scaler = PrivateStandardScaler(bounds=box, rho=0.25, budget=budget)
        scaler.set_params(random_state=0).fit(X)
    # Noise sd of the mean about 8 sds / n / sqrt(0.4) per column: 6e-4 sds.
    assert np.all(np.abs(mean.mean_ - X.mean(0)) < 0.01 * X.std(0))
    assert np.all(np.abs(scaler.scale_ / X.std(0) - 1) < 0.05)
    assert budget.spent() == ZCDP(0.5)


def test_rounding_of_the_box_is_not_a_clamp():
    # The centre and half-width round trip of _finite_box moves an end by an
    # ulp or two; that is not a clamp (statsmodels' fair, age: a box of
    # [10.44, 53.56] was reported "clamped ... misses most of their rows").
    rng = np.random.default_rng(0)
    ends = rng.uniform(-100.0, 100.0, size=(2, 10_000))
    low, high = np.minimum(*ends), np.maximum(*ends)
    lower, upper, _ = _finite_box(low, high)
    moved = (lower > low) | (upper < high)
    assert moved.any()  # the round trip does move some ends inward
    X = np.c_[rng.normal(29.0, 6.8, 6_000), rng.normal(9.0, 7.3, 6_000)]
    for seed in range(5):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UtilityWarning)
            PrivateBounds(rho=0.1, random_state=seed).fit(X)
