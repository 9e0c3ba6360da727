"""The winsorized aggregate: its plan entries and factories, the release, k_min."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp
from dpgauss.accounting._composition import compose
from dpgauss.accounting._plan import PlanError, ReleasePlan
from dpgauss.mechanisms import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._checks import MAX_RADIUS, MIN_RADIUS, check_plan
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.releases._range import range_failure
from dpgauss.releases._winsorized import (
    MIN_GROUPS,
    RADIUS_FACTOR,
    WINSOR_RISK,
    WINSOR_SHARES,
    winsorized_entries,
    winsorized_mean,
    winsorized_min_groups,
)


def _plan(total, auto_radius=True, k=None, p=None):
    return ReleasePlan(total, winsorized_entries(total, auto_radius, k=k, p=p))


# -- the plan --------------------------------------------------------------------
@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(1.0)])
def test_entries_split_the_total_by_the_shares(total):
    plan = _plan(total)
    assert [r.name for r in plan.releases()] == ["center", "radius", "mean"]
    assert compose(total, plan.costs()) == total
    shares = [getattr(r.cost, "rho", None) or r.cost.epsilon for r in plan.releases()]
    whole = getattr(total, "rho", None) or total.epsilon
    np.testing.assert_allclose(np.array(shares) / whole, WINSOR_SHARES)


def test_a_public_radius_drops_the_radius_search_and_keeps_the_ratio():
    total = ZCDP(0.5)
    plan = _plan(total, auto_radius=False)
    assert [r.name for r in plan.releases()] == ["center", "mean"]
    center, mean = (r.cost.rho for r in plan.releases())
    assert center + mean == pytest.approx(0.5)
    assert center / mean == pytest.approx(WINSOR_SHARES[0] / WINSOR_SHARES[2])


@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(1.0)])
def test_every_release_has_a_factory_that_builds_its_mechanism(total):
    k, p = 300, 4
    plan = _plan(total, k=k, p=p)
    built = {r.name: r.build() for r in plan.releases()}
    assert all(r.make is not None for r in plan.releases())
    noise = GaussianMechanism if isinstance(total, ZCDP) else LaplaceMechanism
    assert isinstance(built["center"], QuantileSearch)
    assert built["center"].n_features == p
    assert built["radius"].n_features == 1
    assert isinstance(built["mean"], noise)
    # the worst case is the largest radius; a fit passes the one it uses
    worst = mean_mechanism(plan.cost("mean"), k, p, MAX_RADIUS)
    assert built["mean"].sensitivity == worst.sensitivity
    mean = plan.releases()[-1]
    assert {c["radius"] for c in mean.cases} == {MIN_RADIUS, MAX_RADIUS}
    assert mean.size == p
    used = mean.build(radius=2.0, partials=3)
    assert (
        used.sensitivity == mean_mechanism(plan.cost("mean"), k, p, 2.0, 3).sensitivity
    )
    assert check_plan(plan, "Owner").keys() == {"center", "radius", "mean"}


def test_a_priced_plan_has_factories_that_need_k_and_p():
    plan = _plan(ZCDP(0.5))
    assert all(r.make is not None for r in plan.releases())
    with pytest.raises(PlanError, match="without p"):
        plan.releases()[0].build()
    mean = plan.releases()[-1]
    with pytest.raises(PlanError, match="without k"):
        mean.build()
    assert mean.build(k=100, p=2).cost == plan.cost("mean")


def test_the_check_refuses_a_budget_float64_cannot_calibrate():
    plan = _plan(ZCDP(1e-30), k=100, p=3)
    with pytest.raises(ValueError, match="Owner: the release 'center'"):
        check_plan(plan, "Owner")


# -- the release -----------------------------------------------------------------
def _candidates(k=400, p=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(loc=[1.0, -2.0, 0.5][:p], scale=0.1, size=(k, p))


@pytest.mark.parametrize("radius", ["auto", 0.5])
def test_the_release_draws_each_planned_mechanism_once(radius):
    Y = _candidates()
    plan = _plan(ZCDP(1.0), auto_radius=radius == "auto", k=400, p=3)
    value, used, mech, center = winsorized_mean(
        Y, plan, np.random.default_rng(0), radius
    )
    plan.finish()  # every planned release drew exactly once
    assert value.shape == center.shape == (3,)
    assert np.abs(value - [1.0, -2.0, 0.5]).max() < 0.1
    assert mech.sensitivity == pytest.approx(2.0 * used / 400, rel=1e-6)
    if radius == "auto":
        assert MIN_RADIUS <= used <= MAX_RADIUS
        # RADIUS_FACTOR times the median distance, about 0.1 sqrt(3) here
        assert used == pytest.approx(RADIUS_FACTOR * 0.1 * math.sqrt(3), rel=0.5)
    else:
        assert used == 0.5


def test_the_release_is_reproducible_and_failed_candidates_are_not_an_error():
    Y = _candidates()
    Y[::7] = np.nan
    Y[3] = np.inf
    runs = []
    for _ in range(2):
        plan = _plan(ZCDP(1.0), k=400, p=3)
        runs.append(winsorized_mean(Y, plan, np.random.default_rng(5))[0])
        plan.finish()
    np.testing.assert_array_equal(runs[0], runs[1])
    assert np.all(np.isfinite(runs[0]))
    assert np.abs(runs[0] - [1.0, -2.0, 0.5]).max() < 0.5


def test_a_far_candidate_is_clipped_to_the_radius():
    """One candidate at 1e300 moves the clipped mean by at most 2R/k: with the
    same noise draws, the two releases differ by about that."""
    Y = _candidates()
    far = Y.copy()
    far[0] = 1e300
    out = []
    for data in (Y, far):
        plan = _plan(ZCDP(1.0), auto_radius=False, k=400, p=3)
        value, _, _, center = winsorized_mean(data, plan, np.random.default_rng(1), 0.5)
        out.append((value, center))
    (a, ca), (b, cb) = out
    np.testing.assert_array_equal(ca, cb)  # the median search ignores one row here
    assert np.linalg.norm(a - b) <= 2.0 * 0.5 / 400 + 1e-9


# -- k_min -----------------------------------------------------------------------
def _k_min(total, p, auto_radius=True):
    return winsorized_min_groups(_plan(total, auto_radius), p)


def test_k_min_is_the_fewest_groups_within_the_risk():
    # The documented value (epsilon 1, delta 1e-6, p = 5), and the union bound
    # of both searches crosses WINSOR_RISK exactly there.
    total = ZCDP(approx_to_zcdp(1.0, 1e-6))
    k = _k_min(total, 5)
    assert k == 1510
    plan = _plan(total)

    def risk(k):
        return range_failure(plan.cost("center"), k, 5, capped=False) + range_failure(
            plan.cost("radius"), k, 1, capped=False
        )

    assert risk(k) <= WINSOR_RISK < risk(k - 1)
    # more budget: fewer groups; more values: more groups; a public radius: one
    # search fewer; pure DP's Laplace steps: many more
    assert _k_min(ZCDP(0.5), 5) < k < _k_min(total, 20)
    assert _k_min(total, 5, auto_radius=False) < k
    assert _k_min(PureDP(1.0), 5) > 10 * k


def test_k_min_is_at_least_the_fewest_groups():
    assert _k_min(ZCDP(1e6), 1) == MIN_GROUPS


def test_the_release_is_finite_when_the_median_search_goes_astray():
    # Candidates at the largest floats: the median search ends there, where
    # adding the mean's noise (huge at a tiny budget) could overflow; the
    # release is clipped into the finite floats (post-processing).
    Y = np.full((40, 3), 1.7e308)
    for seed in range(5):
        plan = _plan(ZCDP(1e-8), k=40, p=3)
        value = winsorized_mean(Y, plan, np.random.default_rng(seed))[0]
        assert np.all(np.isfinite(value))
