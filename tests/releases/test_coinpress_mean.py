"""CoinPress mean steps: their factories, radii, gains, step counts and frame."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.mechanisms._checks import check_plan, check_release
from dpgauss.mechanisms._releases import mean_mechanism, second_moment_mechanism
from dpgauss.releases._coinpress import STEP_BETA, staged_costs, tail_radius
from dpgauss.releases._coinpress_mean import (
    MAX_FRAME_RADIUS,
    MAX_MEAN_RADIUS,
    MAX_MEAN_STEPS,
    MEAN_BETA,
    clip_gain,
    coinpress_mean,
    frame_point,
    mean_entries,
    mean_factory,
    mean_steps_for,
    pairs_covariance_entries,
    step_radius,
    weighted_tail_radius,
)
from dpgauss.releases._range import Stages, frame_count


@pytest.mark.parametrize("cost", [ZCDP(0.5), PureDP(1.0)])
def test_mean_factory_worst_case_is_the_most_steps_at_the_cap(cost):
    # Without a case: MAX_MEAN_STEPS steps at MAX_MEAN_RADIUS, every row its
    # own chunk sum; the smallest step is the one the check must reach.
    n, d = 1000, 4
    stages = mean_factory(n, d)(cost)
    assert isinstance(stages, Stages)
    assert stages.cost == cost
    assert len(stages.plan.releases()) == MAX_MEAN_STEPS
    parts = stages.parts()
    # Each distinct step cost is built once (the early steps share one or two).
    assert {p.cost for p, _, _ in parts} == set(staged_costs(cost, MAX_MEAN_STEPS))
    assert len(parts) < MAX_MEAN_STEPS
    smallest = staged_costs(cost, MAX_MEAN_STEPS)[0]
    expected = mean_mechanism(smallest, n, d, MAX_MEAN_RADIUS, n)
    assert parts[0][0].sensitivity == expected.sensitivity
    assert parts[0][0].cost == smallest
    assert {size for _, size, _ in parts} == {d}
    # The fit's own steps and chunk count.
    chosen = mean_factory(n, d)(cost, steps=3, n_partials=1)
    assert [r.name for r in chosen.plan.releases()] == ["mean_1", "mean_2", "mean_3"]
    assert [r.cost for r in chosen.plan.releases()] == staged_costs(cost, 3)


def test_mean_factory_refuses_a_step_float64_cannot_calibrate():
    # At rho = 1e-17 one step can be calibrated, the smallest of twenty not.
    release = Release("mean", ZCDP(1e-17), "gaussian", mean_factory(100, 3))
    with pytest.raises(ValueError, match="lattice"):
        check_release(release)
    check_release(release, steps=1)
    plan = ReleasePlan(ZCDP(1e-17), [release])
    with pytest.raises(ValueError, match="'mean' cannot be calibrated"):
        check_plan(plan, "Owner")


def test_a_step_calibrated_with_its_radius_is_the_mean_mechanism():
    entries = mean_entries(ZCDP(1.0), 2, 50, 3, 1)
    assert [e.size for e in entries] == [3, 3]
    plan = ReleasePlan(ZCDP(1.0), entries)
    mech = plan.calibrate("mean_1", radius=2.5)
    expected = mean_mechanism(entries[0].cost, 50, 3, 2.5, 1)
    assert mech.sensitivity == expected.sensitivity
    assert mech.cost == expected.cost


def test_coinpress_mean_calibrates_each_step_with_its_factory():
    # Entries planned without n or d (a priced plan, an audit) still serve:
    # the steps pass everything they know to the factories.
    rng = np.random.default_rng(0)
    X = rng.normal(7.0, 1.0, size=(5000, 3))
    stages = Stages(ZCDP(10.0), mean_entries(ZCDP(10.0), 3))
    mean, variance, radius = coinpress_mean(
        X, np.eye(3), np.zeros(3), 20.0, stages.plan, 3, rng, 1
    )
    stages.finish()
    np.testing.assert_allclose(mean, X.mean(axis=0), atol=0.1)
    assert 0.0 < variance < 1e-3
    assert 0.0 < radius < 1.0


def test_pairs_covariance_entries_clip_the_pairs_and_then_the_rows():
    n, d = 10_000, 4
    cost = ZCDP(1.0)
    entries = pairs_covariance_entries(cost, 3, n, d)
    names = [e.name for e in entries]
    assert names == ["precondition_1", "precondition_2", "second_moment"]
    gamma = tail_radius(d, STEP_BETA)
    first = entries[0].build()
    expected = second_moment_mechanism(entries[0].cost, frame_count(n), d, gamma)
    assert first.sensitivity == expected.sensitivity
    final = entries[-1].build()
    expected = second_moment_mechanism(entries[-1].cost, n, d, MAX_FRAME_RADIUS, n)
    assert final.sensitivity == expected.sensitivity
    assert {e.size for e in entries} == {d}
    # Priced without n: the same releases, with factories.
    priced = pairs_covariance_entries(cost, 3, None, d)
    assert [e.name for e in priced] == names
    assert all(e.make is not None for e in priced)
    assert [e.name for e in pairs_covariance_entries(cost, 1, n, d)] == [
        "second_moment"
    ]


def test_frame_point_stays_finite():
    big = float(np.finfo(np.float64).max)
    point = frame_point(np.eye(2) * 1e300, 1e-300, np.array([-1e300, 0.0]))
    np.testing.assert_array_equal(point, [-big, 0.0])
    point = frame_point(np.eye(2), 1.0, np.array([np.nan, 2.0]))
    np.testing.assert_array_equal(point, [0.0, 0.0])  # NaN reaches every entry


def test_clip_gain_matches_simulation():
    # E[clip(g + delta)] = J delta to first order; 200,000 rows give the
    # simulated J to about 0.003 (sd of a mean of bounded terms).
    rng = np.random.default_rng(0)
    for d, radius in ((1, 0.8), (5, 2.0), (30, 5.0)):
        delta = np.zeros(d)
        delta[0] = 0.05
        Y = rng.normal(size=(200_000, d)) + delta
        norms = np.linalg.norm(Y, axis=1)
        clipped = Y * np.minimum(1.0, radius / norms)[:, None]
        assert clipped[:, 0].mean() / 0.05 == pytest.approx(
            clip_gain(d, radius), abs=0.08
        )


def test_step_radius_clips_few_rows_and_beats_the_triangle_inequality():
    # Rows N(mu, I_d) around a center r away: the step's radius leaves out
    # at most about MEAN_BETA of them (the inner-product bound) plus the
    # gamma tail's MEAN_BETA; 20,000 rows give each fraction to about 0.002.
    # The radius is never above r + gamma and well below it when r is large.
    rng = np.random.default_rng(1)
    for d, r in ((2, 0.5), (10, 3.0), (50, 25.0), (50, 400.0)):
        gamma = tail_radius(d, MEAN_BETA)
        lam = step_radius(r, gamma)
        assert lam <= r + gamma
        offset = np.zeros(d)
        offset[0] = r
        rows = rng.normal(size=(20_000, d)) + offset
        outside = np.mean(np.linalg.norm(rows, axis=1) > lam)
        assert outside <= 2 * MEAN_BETA + 0.006
    assert step_radius(25.0, 10.0) < 0.87 * 35.0


@pytest.mark.parametrize("beta", [0.01, 0.1])
def test_weighted_tail_radius_is_the_quantile(beta):
    # The saddlepoint radius leaves out about beta of sum_j l_j g_j^2 for
    # skewed, flat, spiked and random spectra (and d = 1). With 40,000 draws
    # the exceedance fraction has sd sqrt(beta (1 - beta) / 40,000) <= 0.0015:
    # allow 4 sd plus the approximation's few percent of beta. The
    # Laurent-Massart bound it replaces left out 0.002 of the Zipf spectrum's
    # rows at beta = 0.01 (a radius 28% too large).
    rng = np.random.default_rng(3)
    spectra = [
        1.0 / np.arange(1.0, 257.0),
        np.ones(40),
        np.r_[np.ones(3), np.full(97, 1e-3)],
        rng.uniform(size=60) * 7.0,
        np.array([2.5]),
    ]
    for spectrum in spectra:
        g = rng.standard_normal((40_000, spectrum.size))
        norms = np.sqrt(np.square(g) @ spectrum)
        radius = weighted_tail_radius(spectrum, beta)
        outside = float(np.mean(norms > radius))
        tolerance = 4.0 * math.sqrt(beta * (1.0 - beta) / 40_000) + 0.05 * beta
        assert outside == pytest.approx(beta, abs=tolerance)
    assert weighted_tail_radius(np.zeros(3), beta) == 0.0
    assert weighted_tail_radius(np.array([np.nan, 1.0]), beta) == math.inf


def test_weighted_tail_radius_stays_finite_near_the_largest_float():
    big = np.finfo(np.float64).max / 4
    assert math.isfinite(weighted_tail_radius(np.full(3, big), 0.01))


def test_mean_steps_grow_with_the_starting_radius():
    radii = (10.0, 1e3, 1e6, 1e12)
    steps = [mean_steps_for(ZCDP(0.5), 1000, 50, r, 1) for r in radii]
    assert steps == sorted(steps)
    assert steps[0] < steps[-1] <= MAX_MEAN_STEPS


def _zero_inflated(n=20_000, d=8, seed=0):
    # 70% zeros per column, exponential otherwise (a claims table): skewed,
    # tied, far from Gaussian.
    rng = np.random.default_rng(seed)
    Z = rng.exponential(1.0, size=(n, d)) * (rng.random((n, d)) < 0.3)
    return Z * np.arange(1, d + 1)


@pytest.mark.parametrize("allowance", [1.0, 0.0])
def test_the_last_step_does_not_rescale_skewed_rows_into_bias(allowance, monkeypatch):
    # Clipping inside the rows' bulk and dividing by the Gaussian shrinkage
    # is unbiased for Gaussian rows only. Without the skew allowance (the
    # broken variant, allowance 0) the mean of these columns is 3.8-5.2
    # sampling errors off per column (rms, 5 seeds, rho 0.125 and 0.5), all
    # of it bias; with it 1.9-2.2 (the rest is plain CoinPress's clipping at
    # the tail radius). 3 sits between the two.
    import warnings

    from dpgauss import PrivateMean
    from dpgauss.releases import _coinpress_mean

    monkeypatch.setattr(_coinpress_mean, "SKEW_ALLOWANCE", allowance)
    X = _zero_inflated()
    n = X.shape[0]
    mu, sd = X.mean(axis=0), X.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateMean(rho=0.5, random_state=0).fit(X)
    rms = math.sqrt(float(np.mean(((est.mean_ - mu) / sd) ** 2)) * n)
    assert (rms < 3.0) == (allowance == 1.0)
