"""The tail-sensitive covariance's plan (dpgauss.releases._adaptive_plan)."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._composition import compose
from dpgauss.accounting._plan import Choice
from dpgauss.mechanisms._checks import check_plan, check_release
from dpgauss.releases._adaptive_plan import (
    DEFAULT_SPLIT,
    adaptive_cases,
    adaptive_plan,
    single_scan_cost,
    smallest_threshold,
    two_scans,
)
from dpgauss.releases._radius import smallest_radius
from dpgauss.releases._threshold_search import WORST_SENSITIVITY
from dpgauss.utils._sums import fixed_point_bits


@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(2.0)])
@pytest.mark.parametrize("center", [True, False])
def test_plan_shape_and_costs_add_up_to_the_total(total, center):
    plan = adaptive_plan(total, 4, center, n=1000, data_norm=3.0)
    names = [e.name for e in plan.entries]
    expected = ["trace", "clip_radius", "covariance"]
    if center:
        assert names == ["scans", "mean", *expected]
        scans = plan.entries[0]
        assert set(scans.options) == {"both", "pairs"}
    else:
        assert names == ["radius", *expected]
    assert isinstance(plan.entries[-1], Choice)
    # The charges compose to the total (up to the rounding of the split).
    spent = plan.spent()
    if isinstance(total, ZCDP):
        assert spent.rho == pytest.approx(total.rho, rel=1e-12)
        assert spent.rho <= total.rho
    else:
        assert spent.epsilon == pytest.approx(total.epsilon, rel=1e-12)
        assert spent.epsilon <= total.epsilon
    assert compose(total, plan.costs()) == spent


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("total", [ZCDP(1.0), PureDP(1.0)])
def test_every_release_has_a_factory_that_builds_at_each_case(center, total):
    plan = adaptive_plan(total, 3, center, n=150, data_norm=8.0)
    for release in plan.releases():
        assert release.make is not None
        for case in release.cases:
            mechanism = check_release(release, **case)
            assert mechanism.cost == release.cost
    built = check_plan(plan, "Test")
    assert set(built) == {r.name for r in plan.releases()}


def test_priced_plan_has_factories_and_the_same_costs():
    priced = adaptive_plan(ZCDP(1.0), 3, True)
    fitted = adaptive_plan(ZCDP(1.0), 3, True, n=500, data_norm=2.0)
    assert all(r.make is not None for r in priced.releases())
    assert priced.charges() == fitted.charges()


def test_cases_cover_both_row_counts_and_both_ends_of_the_grids():
    n, bound = 301, 5.0
    cases = adaptive_cases(n, bound, center=True)
    tiny = smallest_threshold(bound)
    assert tiny == bound * 2.0**-99  # 2^-39.5 (the scan) times 2^-59.5 (the search)
    assert cases["mean"] == ({}, {"radius": smallest_radius(bound)})
    assert cases["trace"] == (
        {"bits": fixed_point_bits(n)},
        {"bits": fixed_point_bits(n // 2)},
    )
    corners = [(c["rows"], c["radius"]) for c in cases["second_moment"]]
    assert corners == [(n, bound), (n, tiny), (n // 2, bound), (n // 2, tiny)]
    assert all(c["n_partials"] == c["rows"] for c in cases["eigenvectors"])
    assert cases["clip_radius"][-1] == {"sensitivity": WORST_SENSITIVITY}
    assert len(adaptive_cases(n, bound, center=False)["second_moment"]) == 2


def test_check_refuses_a_grid_float64_cannot_hold():
    # data_norm 1e-120: the clipping grid reaches 1e-120 * 2^-99, below the
    # smallest radius whose squares stay normal (1e-140).
    plan = adaptive_plan(ZCDP(1.0), 3, True, n=100, data_norm=1e-120)
    with pytest.raises(ValueError, match=r"Test: the release .* cannot be calibrated"):
        check_plan(plan, "Test")


@pytest.mark.parametrize("kind", ["rho", "epsilon"])
def test_single_scan_cost_is_dominated_by_the_halves(kind):
    for value in np.logspace(-6, 3, 50):
        total = ZCDP(float(value)) if kind == "rho" else PureDP(float(value))
        plan = adaptive_plan(total, 2, True)
        halves = [plan.cost("radius"), plan.cost("spread_radius")]
        single = single_scan_cost(halves, kind == "epsilon")
        assert single == plan.cost("pair_radius")
        if kind == "epsilon":
            assert single.epsilon == math.fsum(h.epsilon for h in halves)


def test_two_scans_only_when_both_thresholds_are_reachable():
    plan = adaptive_plan(ZCDP(1.0), 3, True, n=10**6, data_norm=1.0)
    assert two_scans(plan, 10**6)
    small = adaptive_plan(ZCDP(0.1), 3, True, n=150, data_norm=1.0)
    assert not two_scans(small, 150)


def test_default_split_is_four_positive_shares_summing_to_one():
    assert len(DEFAULT_SPLIT) == 4
    assert math.isclose(sum(DEFAULT_SPLIT), 1.0)
