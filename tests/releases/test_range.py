"""The coarse range: its searches' factories, the nested release, the helpers."""

import contextvars
import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import PlanError, Release, ReleasePlan
from dpgauss.mechanisms._checks import check_plan, check_release
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.releases._pairs import Pairing
from dpgauss.releases._range import (
    FRAME_PAIRS,
    HALF_PAIR_MEDIAN,
    RANGE_ROWS,
    Stages,
    coarse_range,
    finite_mean,
    frame_count,
    frame_pairs,
    norm_bound,
    pair_scale,
    range_release,
    range_subset,
    scale_costs,
    scaled_deviations,
    search_factory,
    top_eigenvalue,
)

BIG = float(np.finfo(np.float64).max)


@pytest.mark.parametrize("cost", [ZCDP(0.5), PureDP(1.0)])
def test_range_releases_build_every_search_the_fit_may_run(cost):
    # range_location: the d coordinate medians or the one column of norms;
    # range_scale also the nested scales-then-top release (its two parts at
    # scale_costs), so the check before the spend reaches each of them.
    d = 4
    location = range_release("range_location", cost, d)
    kind = "gaussian" if isinstance(cost, ZCDP) else "laplace"
    assert location.label == f"{kind}:range_location"
    assert [location.build(**c).n_features for c in location.cases] == [d, 1]
    scale = range_release("range_scale", cost, d)
    built = [scale.build(**c) for c in scale.cases]
    assert [b.n_features for b in built[:2]] == [d, 1]
    stages = built[2]
    assert isinstance(stages, Stages)
    assert stages.cost == cost
    (scales, d_scales, _), (top, d_top, _) = stages.parts()
    assert (scales.n_features, top.n_features) == (d, 1)
    assert [scales.cost, top.cost] == scale_costs(cost)
    assert (d_scales, d_top) == (1, 1)  # a search checks its own columns
    for release in (location, scale):
        for case in release.cases:
            check_release(release, **case)


def test_a_search_no_float64_can_hold_is_refused_before_the_spend():
    plan = ReleasePlan(ZCDP(1e-300), [range_release("range_scale", ZCDP(1e-300), 3)])
    with pytest.raises(ValueError, match="'range_scale' cannot be calibrated"):
        check_plan(plan, "Owner")


def test_search_factory_takes_the_columns_and_the_quantile():
    search = search_factory(5, 0.25)(ZCDP(1.0))
    assert (search.n_features, search.quantile) == (5, 0.25)
    assert search_factory(5)(ZCDP(1.0), columns=1).n_features == 1


def test_stages_charge_once_and_check_their_parts():
    stages = Stages(
        ZCDP(1.0), [Release("a", ZCDP(0.25), "g"), Release("b", ZCDP(0.75), "g")]
    )
    with pytest.raises(PlanError, match="never made"):
        stages.finish()
    assert stages.draws == 0
    with pytest.raises(PlanError, match="more than"):
        Stages(ZCDP(1.0), [Release("a", ZCDP(0.5), "g"), Release("b", ZCDP(0.6), "g")])
    # A sub-release without a factory cannot be checked: a bug, not a ValueError.
    with pytest.raises(PlanError, match="without a factory"):
        stages.parts()


def test_stages_parts_are_each_sub_release_at_each_of_its_cases():
    make = search_factory(3)
    stages = Stages(
        ZCDP(1.0),
        [
            Release("a", ZCDP(0.25), "g", make, cases=({}, {"columns": 1})),
            Release("b", ZCDP(0.75), "g", make, size=7, bounded=False),
        ],
    )
    parts = stages.parts()
    assert [(p.n_features, p.cost, size, bounded) for p, size, bounded in parts] == [
        (3, ZCDP(0.25), 1, True),
        (1, ZCDP(0.25), 1, True),
        (3, ZCDP(0.75), 7, False),
    ]
    assert all(p.draws == 0 for p, _, _ in parts)
    assert stages.plan.releases()[0].name == "a"  # nothing was calibrated
    stages.plan.calibrate("a", columns=3)  # so the fit still can


@pytest.mark.parametrize("d", [1, 3])
def test_coarse_range_calibrates_each_search_with_its_factory(d):
    # With a large budget the searches find the sample's medians and scales;
    # every release of the plan (the nested one's parts included) draws once.
    rng = np.random.default_rng(0)
    X = rng.normal(1e6, 3.0, size=(4000, d))
    pairs = frame_pairs(X, rng)
    cost = ZCDP(1e4)
    names = ("range_location", "range_scale")
    plan = ReleasePlan(ZCDP(2e4), [range_release(n, cost, d) for n in names])
    found = coarse_range(X, pairs, plan, rng, True, True)
    plan.finish()
    np.testing.assert_allclose(found.center, 1e6, atol=0.5)
    np.testing.assert_allclose(found.scales, 3.0, rtol=0.2)
    assert found.top > 0
    assert found.bound is None


def test_coarse_range_by_norm_and_one_scale_search_one_column():
    rng = np.random.default_rng(1)
    X = rng.normal(0.0, 1.0, size=(3000, 4)) + 50.0
    pairs = frame_pairs(X, rng)
    cost = ZCDP(1e4)
    names = ("range_location", "range_scale")
    plan = ReleasePlan(ZCDP(2e4), [range_release(n, cost, 4) for n in names])
    found = coarse_range(X, pairs, plan, rng, True, True, by_norm=True, one_scale=True)
    plan.finish()
    assert found.bound >= 100.0  # 4 times the median norm bounds ||mu|| = 100
    assert found.scales is None
    assert found.top > 0
    np.testing.assert_array_equal(found.center, 0.0)


def test_top_eigenvalue_bounds_every_spectrum():
    # With a large budget the released median is the sample median, and
    # lambda_1 <= 2 M^2 / median(chi2_1) for every spectrum (equality for one
    # spike); for a flat spectrum the bound is about 2.2 d lambda_1.
    rng = np.random.default_rng(0)
    d = 20
    for spectrum in (
        np.ones(d),
        np.r_[100.0, np.ones(d - 1)],
        np.r_[1.0, 1e-9 * np.ones(d - 1)],
    ):
        Z = rng.standard_normal((20000, d)) * np.sqrt(spectrum / 2)
        plan = ReleasePlan(ZCDP(1e4), [range_release("range_scale", ZCDP(1e4), d)])
        top = top_eigenvalue(Z, plan, rng)
        assert top >= 0.97 * spectrum.max()
        assert top <= 2.4 * spectrum.sum()


def test_norm_bound_is_positive_and_finite_for_tied_and_huge_rows():
    for X in (np.zeros((200, 3)), np.full((200, 3), BIG)):
        plan = ReleasePlan(ZCDP(1e4), [range_release("range_location", ZCDP(1e4), 3)])
        bound = norm_bound(X, plan, np.random.default_rng(0))
        plan.finish()
        assert 0.0 < bound
        assert not math.isnan(bound)


def test_frame_count_and_range_subset_are_public_and_capped():
    assert frame_count(10**7) == FRAME_PAIRS
    assert frame_count(7) == 3
    rng = np.random.default_rng(0)
    some = range_subset(10**6, rng)
    assert some.size == RANGE_ROWS
    assert np.all(np.diff(some) > 0)
    np.testing.assert_array_equal(range_subset(50, rng), np.arange(50))


def test_frame_pairs_are_disjoint_half_differences():
    # The pairing is drawn from the generator alone, each row in one pair.
    X = np.random.default_rng(2).normal(size=(21, 2))
    first, second = Pairing(21, np.random.default_rng(3)).indices()
    pairs = frame_pairs(X, np.random.default_rng(3))
    assert pairs.shape == (10, 2)
    used = np.r_[first[:10], second[:10]]
    assert np.unique(used).size == 20
    np.testing.assert_allclose(pairs, X[first[:10]] / 2 - X[second[:10]] / 2)


def test_pair_scale_is_sigma_and_stays_within_float64():
    sigma = np.array([1.0, 1e-5, 7.0])
    np.testing.assert_allclose(pair_scale(HALF_PAIR_MEDIAN * sigma), sigma)
    scales = pair_scale([0.0, 1.0, np.inf, 1e-320])
    assert np.all(np.isfinite(scales))
    assert np.all(scales > 0)
    assert scales.max() / scales.min() <= 2.0**200
    np.testing.assert_array_equal(pair_scale([0.0, 0.0]), 1.0)
    # An unmeasured (zero) column takes the typical scale, not a tiny one.
    np.testing.assert_allclose(
        pair_scale(HALF_PAIR_MEDIAN * np.array([0.0, 1.0, 2.0, 3.0]))[0], 2.0
    )


def _tied_columns(n, rng):
    """Counts, a rare indicator, a zero-inflated column and a Gaussian one."""
    counts = rng.poisson(0.7, n).astype(float)
    rare = (rng.random(n) < 0.02).astype(float)
    inflated = np.where(rng.random(n) < 0.8, 0.0, rng.lognormal(1.0, 0.5, n))
    return np.column_stack([counts, rare, inflated, rng.normal(5.0, 3.0, n)])


@pytest.mark.parametrize("location", [False, True])
def test_tied_columns_keep_scales_near_their_sd(location):
    # Most pair differences of these columns are exactly 0: the scale search
    # reads the nonzero ones, so no scale falls far below its column's sd (the
    # median of all differences made them 2^-20 of the smallest positive one,
    # and the rescaled pairs' top then shrank every column's frame). The
    # nonzero 3/4 quantile read as a Gaussian's is within a few times the sd
    # for these shapes (an indicator's: 4.4 sd at 2%), and a column with too
    # few nonzero pairs to measure takes the typical scale (the rare
    # indicator, sd 0.14, then about 2, 15 times it): a tenth to 30 times.
    from dpgauss.accounting import ZCDP
    from dpgauss.accounting._plan import ReleasePlan
    from dpgauss.releases._range import coarse_range, range_release

    rng = np.random.default_rng(4)
    X = _tied_columns(20_000, rng)
    for seed in range(5):
        plan = ReleasePlan(
            ZCDP(0.2),
            [
                range_release("range_location", ZCDP(0.1), 4),
                range_release("range_scale", ZCDP(0.1), 4),
            ],
        )
        gen = np.random.default_rng(seed)
        pairs = frame_pairs(X, gen)
        found = coarse_range(X, pairs, plan, gen, location, True)
        ratio = found.scales / X.std(axis=0)
        assert np.all(ratio > 0.1), ratio
        assert np.all(ratio < 30.0), ratio
        assert 0 < found.top < 100.0


def test_the_searched_norms_never_overflow_and_match_numpy():
    # The range searches count rows by their norms with far=True: a row whose
    # norm overflows, or that is not finite, counts as far (the largest float).
    from dpgauss.utils._sums import row_norms

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    norms = row_norms(X, 0.0, far=True)
    np.testing.assert_allclose(norms, np.linalg.norm(X, axis=1), rtol=1e-14)
    huge = np.array([[BIG, BIG], [1e-320, 0.0], [np.nan, 1.0], [np.inf, 0.0]])
    norms = row_norms(huge, 0.0, far=True)
    assert norms[0] == BIG
    assert norms[1] == pytest.approx(1e-320)
    assert norms[2] == BIG
    assert norms[3] == BIG


def test_finite_mean_and_scaled_deviations_of_huge_rows():
    rows = np.full((4, 2), BIG / 2)
    rows[0, 0] = -BIG / 2
    center = finite_mean(rows)
    assert np.all(np.isfinite(center))
    center, deviations, size = scaled_deviations(rows)
    assert np.all(np.isfinite(deviations))
    assert np.abs(deviations).max() == 1.0
    assert math.isfinite(size)
    assert size > 0
    _, deviations, size = scaled_deviations(np.ones((3, 2)))
    assert size == 1.0
    assert not deviations.any()


def test_a_search_calibrated_from_the_plan_is_the_search_the_factory_builds():
    release = range_release("range_location", ZCDP(0.5), 6)
    plan = ReleasePlan(ZCDP(0.5), [release])
    search = plan.calibrate("range_location", columns=6)
    expected = QuantileSearch(ZCDP(0.5), 6)
    assert search.step.scale == expected.step.scale
    assert search.cost == expected.cost


def test_stages_parts_build_equal_sub_releases_once():
    make = search_factory(2)
    entries = [Release(f"s{k}", ZCDP(0.25), "g", make) for k in range(4)]
    parts = Stages(ZCDP(1.0), entries).parts()
    assert len(parts) == 1
    assert parts[0][0].cost == ZCDP(0.25)


def test_rescaled_pairs_raise_no_warning_in_a_dask_worker():
    # Lazy Dask pairs were rescaled by the released scales in the workers,
    # outside any errstate: a pair beyond the scales' range warned 'overflow
    # encountered in divide' there (a warning that depends on the rows, after
    # the spend). The at most RANGE_ROWS pairs are now rescaled in memory.
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    Z = np.random.default_rng(0).standard_normal((300, 3))
    Z[7] = 1e300

    def fresh_context(dsk, keys, **kwargs):  # numpy's default errstate
        return contextvars.Context().run(dask.get, dsk, keys, **kwargs)

    def top(rows):
        plan = ReleasePlan(ZCDP(1e4), [range_release("range_scale", ZCDP(1e4), 3)])
        rng = np.random.default_rng(1)
        return top_eigenvalue(rows, plan, rng, scales=np.full(3, 1e-10))

    with dask.config.set(scheduler=fresh_context):
        got = top(da.from_array(Z, chunks=(100, -1)))
    assert got == top(Z)
