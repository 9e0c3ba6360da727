"""The covariance's probed plan in a box (dpgauss.releases._box_probe)."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._box_probe import (
    EVIDENCE_SDS,
    correlations_pay,
    is_probed,
    probe_entries,
    probe_prediction,
    release_probed,
)

RADIUS = math.sqrt(4.0)


def _plan(rho=0.5, n=2000, d=4):
    return ReleasePlan(ZCDP(rho), probe_entries(ZCDP(rho), d, n, RADIUS))


def test_the_plan_costs_the_whole_budget_and_both_options_the_same():
    plan = _plan()
    assert is_probed(plan)
    assert [r.name for r in plan.entries[:2]] == ["mean", "box_probe"]
    assert plan.spent().rho == pytest.approx(0.5, rel=1e-9)
    choice = plan.entries[2]
    full, moments = (
        sum(r.cost.rho for r in choice.options[k]) for k in ("full", "moments")
    )
    assert full == moments


def test_the_prediction_is_the_better_option():
    plan = _plan()
    mechanisms = {r.name: r.build() for r in plan.releases()}
    assert 0.0 < probe_prediction(mechanisms, 4) < 1.0


def _noise_only(rng, d, off):
    upper = np.triu(rng.normal(0.0, math.sqrt(off), (d, d)), 1)
    return upper + upper.T


def test_independent_columns_take_the_moments_option_in_most_draws():
    # Noise alone: the chi-squared sum of the d (d - 1) / 2 = 15 off-diagonal
    # entries in noise units has mean 0 and sd sqrt(30); it exceeds 1.5 sds
    # in about 6-8% of draws (its right tail is heavier than the normal's).
    # 1000 draws: the rate is within 0.03 of that with probability > 0.99.
    rng = np.random.default_rng(0)
    d, off = 6, 1e-4
    raw = np.full(d, 0.05)
    taken = [
        correlations_pay(_noise_only(rng, d, off), raw, 0.01, off, 1e-6, (4e-5, 2e-5))
        for _ in range(1000)
    ]
    assert np.mean(taken) < 0.11


def test_correlated_columns_take_the_full_option():
    rng = np.random.default_rng(1)
    d, off = 6, 1e-4
    raw = np.full(d, 0.05)
    signal = 0.5 * 0.05 * (np.ones((d, d)) - np.eye(d))  # correlation 0.5
    taken = [
        correlations_pay(
            signal + _noise_only(rng, d, off), raw, 0.01, off, 1e-6, (4e-5, 2e-5)
        )
        for _ in range(100)
    ]
    assert all(taken)
    assert EVIDENCE_SDS > 0


@pytest.mark.parametrize("rho", [1e-6, 0.5])
def test_releases_stay_in_the_box_for_every_draw(rho):
    # Rows already in box units, some at the corners; a tiny budget makes the
    # noise thousands of times the box: the outputs stay finite and the
    # variances within the box's (post-processing of clipped releases).
    rng = np.random.default_rng(2)
    X = np.clip(rng.normal(0.0, 0.5, (300, 4)), -1.0, 1.0)
    X[:5] = 1.0
    for seed in range(5):
        plan = _plan(rho, n=300)
        rng = np.random.default_rng(seed)
        center, center_sd, result = release_probed(X, RADIUS, plan, rng)
        assert center_sd > 0
        assert np.all(np.abs(center) <= 1.0)
        values = getattr(result, "values", None)
        assert np.all(np.isfinite(values))
        assert np.all(values <= RADIUS * RADIUS + 1e-9)
