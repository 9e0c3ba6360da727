"""The private radius scan (dpgauss.releases._radius): grid, threshold, factory."""

import math

import numpy as np
import pytest

from dpgauss.accounting import PureDP
from dpgauss.mechanisms import AboveThreshold
from dpgauss.releases._radius import (
    RADIUS_BETA,
    RADIUS_GRID,
    full_threshold,
    private_radius,
    radius_grid,
    radius_mechanism,
    scan_counts,
    scan_factory,
    scan_threshold,
    smallest_radius,
)


@pytest.mark.parametrize("loose", [1.0, 10.0, 1000.0])
def test_private_radius_finds_the_top_of_the_norms(loose):
    # 600 of 10,000 rows at norm 1: the result is never below the largest norm,
    # and at most one grid step (sqrt 2) above it unless noise stops the
    # scan early on one of the count-0 radii above the data: each does so with
    # probability about exp(-T eps / 4) / 2 = 1/1600 (T = 4 log(800) / eps), so
    # with 20 such radii (loose = 1000) in about 1% of runs; allow 10%.
    norms = np.concatenate([np.full(600, 1.0), np.full(9400, 0.01)])
    rng = np.random.default_rng(0)
    svt = radius_mechanism(1.0, norms.size)
    radii = np.array([private_radius(norms, loose, svt, rng) for _ in range(100)])
    assert radii.min() >= 1.0 - 1e-12
    assert np.mean(radii <= math.sqrt(2) * 1.0001) >= 0.9


def test_scan_does_not_ask_the_query_whose_answer_cannot_change_the_result(recorder):
    # The radius scan's count at data_norm is 0 (norms are clipped to it):
    # firing there or at the next query returns the same value, so it is not
    # asked, and noise alone cannot stop the scan at the top (at n = 150 it
    # did in about a third of the fits). The first query asked maps to the
    # old second one.
    norms = np.concatenate([np.full(50, 0.3), np.full(50, 0.05)])
    svt = recorder(fire_at=0)
    assert private_radius(norms, 1.0, svt, None) == 1.0
    assert svt.asked.size == RADIUS_GRID - 1
    assert svt.asked[0] == 0.0  # count beyond 1/sqrt(2): none
    svt = recorder(fire_at=3)  # the radius 2^-2 (query 4): return 2^-1.5
    assert private_radius(norms, 1.0, svt, None) == 2.0**-1.5
    assert private_radius(norms, 1.0, recorder(), None) == 1.0


@pytest.mark.parametrize("n", [2, 40, 150, 10**6])
def test_scan_threshold_is_reachable_with_n_rows(n):
    # DLY's T = (4/eps) log(K/beta) was 178 at eps = 0.15, above n = 150, where
    # the scan could then only stop by noise; with monotone noise the full T is
    # (2/eps) (log(K/beta) + 1) = 102. The cap keeps T at most n / 2 and leaves
    # large n untouched.
    eps = 0.15
    full = (2.0 / eps) * (math.log(RADIUS_GRID / RADIUS_BETA) + 1.0)
    assert full_threshold(eps) == pytest.approx(full)
    assert scan_threshold(eps, n) == min(full_threshold(eps), n / 2)


def test_scan_that_never_fires_returns_the_bound():
    # Fewer rows than the threshold and no noise large enough: no evidence that
    # the bound is loose, so the bound itself (not the bottom of the grid).
    svt = AboveThreshold(threshold=1e6, sensitivity=1.0, epsilon=10.0)
    norms = np.full(5, 0.5)
    assert private_radius(norms, 4.0, svt, np.random.default_rng(0)) == 4.0


def test_radius_is_a_point_of_the_public_grid():
    # Whatever the norms and the noise, the scan returns one of the public
    # radii data_norm * 2^(-k/2): the release is the index AboveThreshold
    # released, nothing else of the data.
    rng = np.random.default_rng(0)
    for data_norm in (1.0, 7.5, 1e-100, 1e100):
        grid = radius_grid(data_norm)
        assert grid[0] == data_norm
        assert grid[-1] == smallest_radius(data_norm)
        for epsilon in (0.01, 1.0, 100.0):
            norms = data_norm * rng.uniform(0, 2, 300) ** rng.uniform(0.2, 8)
            svt = radius_mechanism(epsilon, norms.size)
            assert private_radius(norms, data_norm, svt, rng) in grid


@pytest.mark.parametrize("rows", [3, 150, 10_000])
def test_scan_factory_builds_the_scan_the_fit_runs(rows):
    make = scan_factory(rows)
    svt = make(PureDP(0.25))
    assert isinstance(svt, AboveThreshold)
    assert svt.cost == PureDP(0.25)
    assert svt.monotone
    assert svt.threshold == scan_threshold(0.25, rows)
    assert svt.sensitivity == 1.0
    # The construction refuses an epsilon too small for the exact run: the
    # check before the spend builds the factory, so this happens before it.
    with pytest.raises(ValueError, match="too small"):
        make(PureDP(1e-300))


def _sorted_scan_counts(norms, data_norm):
    # The sorted computation scan_counts used before its sort-free one,
    # verbatim: the reference it must equal count for count.
    radii = radius_grid(data_norm)
    ordered = np.sort(np.minimum(np.asarray(norms, dtype=np.float64), data_norm))
    return (ordered.size - np.searchsorted(ordered, radii, side="right")).astype(
        np.int64
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("data_norm", [1.0, 60.0, 1e-140, 1e140, 3.0e7])
def test_scan_counts_equal_the_sorted_counts_on_adversarial_norms(seed, data_norm):
    # Norms on the grid's radii and an ulp either side, ties, 0, NaN, inf,
    # 1e+-300, beyond data_norm: the bucketed counts are the sorted ones.
    rng = np.random.default_rng(seed)
    radii = radius_grid(data_norm)
    on_grid = np.concatenate(
        [radii, np.nextafter(radii, 0.0), np.nextafter(radii, np.inf)]
    )
    special = [0.0, -0.0, 1.0, np.nan, np.inf, 1e300, 1e-300, 5e-324]
    special += [data_norm * 2, float(np.finfo(float).max)]
    pool = np.concatenate([on_grid, special, data_norm * rng.random(40)])
    for size in [0, 1, 7, 500]:
        norms = rng.choice(pool, size=size)
        got = scan_counts(norms, data_norm)
        want = _sorted_scan_counts(norms, data_norm)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
