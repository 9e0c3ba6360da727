"""PrivateMean(bounds=...): the per-coordinate clipped mean in a public box."""

import warnings

import numpy as np
import pytest
from scipy.stats import chi2

import dpgauss.releases._box_mean as boxed
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.exceptions import UtilityWarning
from dpgauss.mean import PrivateMean
from dpgauss.mechanisms import LaplaceMechanism
from dpgauss.mechanisms._linf import LInfinityMechanism, linf_over_laplace
from dpgauss.releases._box_mean import BoxMeanMechanism, adapts


def _mixed_units(n, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.array([1e-3, 1.0, 1e3, 1e6])
    X = rng.normal(0.2, 0.1, size=(n, 4)) * scales
    return X, (-scales, scales)


def test_equal_half_widths_give_the_baseline_noise():
    # Equal widths: equal weights, epsilon / d per coordinate (Laplace scale
    # 2 d / (n epsilon)) or l2 sensitivity 2 sqrt(d) / n (Gaussian).
    n, d = 1000, 5
    laplace = BoxMeanMechanism(PureDP(1.0), n, np.full(d, 2.0), noise="laplace")
    assert isinstance(laplace.mechanism, LaplaceMechanism)
    assert np.allclose(laplace.noise_sd(), np.sqrt(2) * 2 * d / n, rtol=1e-6)
    gauss = BoxMeanMechanism(ZCDP(0.5), n, np.full(d, 2.0))
    assert np.allclose(gauss.noise_sd(), 2 * np.sqrt(d) / n, rtol=1e-6)


@pytest.mark.parametrize("d", [2, 5, 30])
def test_pure_cost_takes_the_cube_noise_on_equal_widths(d):
    # The K-norm mechanism of the cube: l-infinity sensitivity 2/n, each
    # entry's sd sqrt((d + 1)(d + 2) / 3) 2 / (n epsilon), against the
    # Laplace's sqrt(2) 2 d / (n epsilon): 0.71, 0.53, 0.42 of it.
    n = 1000
    best = BoxMeanMechanism(PureDP(1.0), n, np.full(d, 2.0))
    assert isinstance(best.mechanism, LInfinityMechanism)
    expected = np.sqrt((d + 1) * (d + 2) / 3) * 2 / n
    assert np.allclose(best.noise_sd(), expected, rtol=1e-6)
    laplace = BoxMeanMechanism(PureDP(1.0), n, np.full(d, 2.0), noise="laplace")
    ratio = np.linalg.norm(best.noise_sd()) / np.linalg.norm(laplace.noise_sd())
    assert ratio == pytest.approx(linf_over_laplace(d), rel=1e-6)


def test_very_unequal_windows_keep_the_laplace_weights():
    # One wide window and nine narrow ones (r = 1e-4): the cube noise is
    # (d + 1)(d + 2) / 3 sum r_j^2 = 44 * 4 in squared units of 1 / (n eps);
    # the Laplace weights' (sum r_j^(2/3))^3 = 1.61^3 = 4.2 is smaller.
    widths = np.r_[2.0, np.full(9, 1e-4)]
    mech = BoxMeanMechanism(PureDP(1.0), 1000, widths)
    assert isinstance(mech.mechanism, LaplaceMechanism)
    expected = np.sum(widths ** (2 / 3)) ** 1.5 * np.sqrt(2) / 1000
    assert np.linalg.norm(mech.noise_sd()) == pytest.approx(expected, rel=1e-6)
    one = BoxMeanMechanism(PureDP(1.0), 1000, np.array([2.0]))
    assert isinstance(one.mechanism, LaplaceMechanism)


@pytest.mark.parametrize("cost", [PureDP(1.0), ZCDP(0.5)])
def test_narrow_windows_get_less_noise(cost):
    # The optimal weights (module docstring): a narrow window's noise is
    # smaller than a wide one's, and the total is the closed-form optimum:
    # Laplace (sum r^(2/3))^(3/2) sqrt(2) / (n eps), Gaussian
    # (sum r) / (n sqrt(2 rho)).
    widths = np.array([2.0, 0.5, 0.01])
    mech = BoxMeanMechanism(cost, 1000, widths, noise="laplace")
    sd = mech.noise_sd()
    assert sd[0] > sd[1] > sd[2]
    if isinstance(cost, PureDP):
        expected = np.sum(widths ** (2 / 3)) ** 1.5 * np.sqrt(2) / 1000
    else:
        expected = np.sum(widths) / 1000
    assert np.linalg.norm(sd) == pytest.approx(expected, rel=1e-6)


def test_cube_noise_improves_the_realised_error():
    # Realised l2 error over 40 seeds at d = 8, epsilon 1, n = 2000, rows
    # filling the box: predicted ratio 0.48; the mean of squared errors over
    # 40 seeds has a relative sd of about sqrt(2 / 40) = 0.22 per side, so
    # the realised ratio of root mean squares is below 0.75 with room.
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(2000, 8))
    errors = {}
    for noise in ("best", "laplace"):
        sq = []
        for seed in range(40):
            mech = BoxMeanMechanism(PureDP(1.0), 2000, np.full(8, 2.0), noise=noise)
            out = mech.release(X.mean(0) + 1.0, np.random.default_rng(seed)) - 1.0
            sq.append(np.sum((out - X.mean(0)) ** 2))
        errors[noise] = np.sqrt(np.mean(sq))
    assert errors["best"] < 0.75 * errors["laplace"]


@pytest.mark.parametrize("cost", [{"epsilon": 1.0}, {"rho": 0.5}])
def test_mixed_units_stay_within_the_baseline_noise(cost):
    # The budget is split in box units, so each column's error is a few of
    # the baseline's noise sds in its own units: in the data's units the
    # realised l2 error is within 5 times the baseline's noise there (the
    # 1e6 column dominates).
    X, bounds = _mixed_units(2000)
    est = PrivateMean(bounds=bounds, random_state=0, **cost).fit(X)
    assert est.method_ == "box"
    total = PureDP(1.0) if "epsilon" in cost else ZCDP(0.5)
    noise = BoxMeanMechanism(total, 2000, np.full(4, 2.0)).noise_sd()
    base = float(np.linalg.norm(bounds[1] * noise))
    assert np.linalg.norm(est.mean_ - X.mean(0)) < 5 * base


@pytest.mark.parametrize("seed", range(5))
def test_outputs_stay_in_the_box_with_far_rows_and_tiny_budgets(seed):
    X, bounds = _mixed_units(50, seed)
    X[0] = 1e12
    X[1] = -1e300
    est = PrivateMean(bounds=bounds, epsilon=1e-6, random_state=seed).fit(X)
    assert np.all(np.isfinite(est.mean_))
    assert np.all(np.abs(est.mean_) <= bounds[1])


def test_adaptive_windows_draw_once_each_and_stay_in_the_box(monkeypatch):
    # Force the adaptive plan (its noise limit raised) on a small budget,
    # where the whole-box noise dominates the sampling error.
    monkeypatch.setattr(boxed, "ADAPT_NOISE", 10.0)
    rng = np.random.default_rng(1)
    X = rng.normal(0.0, 0.01, size=(2000, 2))
    total = PureDP(0.05)
    assert adapts(total, 2000, 2)
    calls = []
    original = boxed._window_mean

    def counted(z, low, high, about=None):
        calls.append(high - low)
        return original(z, low, high, about)

    monkeypatch.setattr(boxed, "_window_mean", counted)
    est = PrivateMean(bounds=(-1.0, 1.0), epsilon=0.05, random_state=0).fit(X)
    # center, spread, windowed mean; the plan checked each drew exactly once.
    assert len(calls) == 3
    assert np.all(calls[2] <= 2.0)
    assert est.privacy_spent_ == total
    assert np.all(np.abs(est.mean_) <= 1.0)


def test_the_baseline_plan_at_large_n_and_rho():
    # The noise is below the sampling error: no window (its clipping bias
    # on skewed columns would cost more than the noise it saves).
    assert not adapts(ZCDP(0.5), 6366, 9)
    assert not adapts(PureDP(1.0), 6366, 9)


def test_bounds_exclude_the_other_hints():
    X, bounds = _mixed_units(100)
    with pytest.raises(ValueError, match="whole public hint"):
        PrivateMean(bounds=bounds, mean_bound=1.0, rho=1.0).fit(X)
    with pytest.raises(ValueError, match="lower < upper"):
        PrivateMean(bounds=(1.0, -1.0), rho=1.0).fit(X)
    with pytest.raises(ValueError, match="features"):
        PrivateMean(bounds=([0, 0], [1, 1]), rho=1.0).fit(X)


@pytest.mark.parametrize("seed", range(3))
def test_the_mean_stays_in_the_mean_bound_ball(seed):
    # Projection into the public ball ||mu|| <= mean_bound: whatever the noise
    # of a tiny budget, the output is within the hint.
    rng = np.random.default_rng(seed)
    X = rng.normal(0.1, 1.0, size=(60, 3))
    est = PrivateMean(
        mean_bound=1.0,
        cov_bounds=(0.5, 2.0),
        epsilon=1e-3,
        random_state=seed,
        on_useless="warn",
    )
    est.fit(X)
    assert np.linalg.norm(est.mean_) <= 1.0 + 1e-12


def test_faint_reach_is_the_noise_over_the_astray_sampling_error():
    # A column of sd s (box units) has sampling sd s / sqrt(n): the noise sd
    # sigma is ASTRAY times it at s = sigma sqrt(n) / ASTRAY; the 5-vector is
    # beyond ASTRAY in one fit of ten up to sqrt(chi2_5's 0.9 quantile / 5)
    # times that (releases._box_mean.reach_of_noise).
    cost, n, d = PureDP(1.0), 150, 5
    sigma = BoxMeanMechanism(cost, n, np.full(d, 2.0)).noise_sd().max()
    factor = np.sqrt(chi2.ppf(0.9, d) / d)
    assert boxed.faint_reach(cost, n, d) == pytest.approx(
        sigma * np.sqrt(n) / 10 * factor
    )


def test_the_whole_box_warning_from_public_values():
    # Student t rows at n = 150, epsilon 1, d = 5: the noise is 10 sampling
    # errors of a column of sd 0.061 half-widths (their sds are 0.05-0.08),
    # and more than that in one fit of ten up to 0.083.
    message = boxed.whole_box_warning("PrivateMean", PureDP(1.0), 150, 5)
    assert "0.083 of its half-width" in message
    assert "simplest private answer" in message
    # fair's n and d at epsilon 1: resolved down to sds of 0.021 half-widths.
    assert boxed.whole_box_warning("PrivateMean", PureDP(1.0), 4775, 8) is None
    assert boxed.whole_box_warning("PrivateMean", ZCDP(0.5), 4775, 8) is None


def test_a_far_whole_box_mean_warns_and_spends_under_the_default_policy():
    # Columns filling a twentieth of their box: the release is the whole-box
    # mean (no refusal: it beats its baseline), the error is many sampling
    # errors, and the fit says so before the spend.
    rng = np.random.default_rng(0)
    X = rng.standard_t(3, size=(150, 5))
    est = PrivateMean(epsilon=1.0, bounds=(-30.0, 30.0), random_state=0)
    with pytest.warns(UtilityWarning, match="fixed by the box"):
        est.fit(X)
    assert est.privacy_spent_ == PureDP(1.0)
    assert np.all(np.abs(est.mean_) <= 30.0)


def test_no_whole_box_warning_where_the_noise_is_below_the_sampling_error():
    X, bounds = _mixed_units(5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateMean(rho=0.5, bounds=bounds, random_state=0).fit(X)
