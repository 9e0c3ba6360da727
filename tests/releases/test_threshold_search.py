"""The clipping-threshold search (dpgauss.releases._threshold_search)."""

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.mechanisms import AboveThreshold
from dpgauss.releases._covariance import covariance_entries
from dpgauss.releases._threshold_search import (
    TAU_GRID,
    WORST_SENSITIVITY,
    predicted_noise,
    query_sensitivity,
    search_factory,
    search_floor,
    search_threshold,
    tau_grid,
    threshold_queries,
)


def test_search_does_not_ask_the_query_whose_answer_cannot_change_the_result(recorder):
    # The threshold search's query at tau = r has no bias: firing there or at
    # the next query returns the same value, so it is not asked, and noise
    # alone cannot keep the radius (at n = 150 it did in about a third of the
    # fits). The first query asked maps to the old second one.
    norms = np.concatenate([np.full(50, 0.3), np.full(50, 0.05)])
    taus = tau_grid(1.0)
    noise = np.full(TAU_GRID, 1e-3)
    for fire_at, expected in ((0, taus[0]), (2, taus[2]), (None, taus[-2])):
        rec = recorder(fire_at)
        got = search_threshold(norms, 1.0, noise, 100, lambda s, r=rec: r, None)
        assert got == expected
        assert rec.asked.size == TAU_GRID - 1


def _search(norms, trace, final, n, d, rng):
    plan = ReleasePlan(final, covariance_entries("auto", final, d))
    noise = [predicted_noise(plan, n, d, t, trace) for t in tau_grid(1.0)]

    def make_svt(sensitivity):
        return AboveThreshold(threshold=0.0, sensitivity=sensitivity, epsilon=1.0)

    return search_threshold(norms, 1.0, noise, n, make_svt, rng)


def test_threshold_search_clips_a_thin_tail_and_keeps_a_thick_one():
    n, d = 20_000, 50
    final = ZCDP(0.05)
    rng = np.random.default_rng(0)
    # Five rows of norm 1 add a bias of 5/n (1 - tau^2) ~ 2.5e-4 when clipped;
    # the predicted (denoised) noise at tau = 1 is ~2e-3 (0.4 sqrt(2 t sigma),
    # t ~ 2^-6, sigma ~ 1.1e-3) and falls like tau, so clipping pays; where the
    # noisy search stops varies from run to run, so the typical run must clip.
    thin = np.concatenate([np.full(5, 1.0), np.full(n - 5, 2.0**-3)])
    taus = [_search(thin, np.mean(thin**2), final, n, d, rng) for _ in range(20)]
    assert np.median(taus) <= 0.5
    thick = np.full(n, 1.0)
    tau = _search(thick, 1.0, final, n, d, rng)
    assert tau == 1.0  # clipping every row would cost far more than noise


def test_search_floor_is_where_bias_surely_exceeds_noise():
    # gamma(tau) = mean((min(|y|, 1)^2 - tau^2)_+) >= t - tau^2: at the floor the
    # exact bias exceeds the noise for every set of norms (here 200 random sets
    # of every shape, with the exact t), so a noise-free search would have
    # stopped at or above it.
    rng = np.random.default_rng(0)
    taus = tau_grid(1.0)
    for _ in range(200):
        norms = rng.uniform(0, 1, rng.integers(5, 50)) ** rng.uniform(0.2, 5)
        t = float(np.mean(norms**2))
        noise = t * rng.uniform(0, 1) * taus**2  # falls with tau, as predicted
        floor = search_floor(1.0, noise, t)
        bias = np.mean(np.maximum(norms**2 - taus[floor] ** 2, 0.0))
        assert taus[floor] ** 2 <= t - noise[floor] or floor == TAU_GRID - 1
        assert bias >= noise[floor] - 1e-12
    # No tau qualifies (trace within the noise): the whole grid.
    assert search_floor(1.0, np.ones(TAU_GRID), 0.5) == TAU_GRID - 1
    assert search_floor(1.0, np.zeros(TAU_GRID), 0.0) == TAU_GRID - 1


def test_search_does_not_fall_below_the_floor():
    # A threshold the queries never reach (the threshold noise of a search on
    # few rows can be that large): before, the search returned the bottom of
    # the grid, 2^-60 r, and the estimate was the zero matrix. With the trace
    # it returns the tau above the floor (0.5: t = 0.25 with no noise).
    norms = np.full(100, 0.5)  # t = 0.25
    noise = np.zeros(TAU_GRID)

    def never(sensitivity):
        return AboveThreshold(threshold=1e9, sensitivity=sensitivity, epsilon=1.0)

    rng = np.random.default_rng(0)
    taus = tau_grid(1.0)
    floor = search_floor(1.0, noise, 0.25)
    assert taus[floor] == 0.5  # tau^2 = 0.25 <= t - 0
    got = search_threshold(norms, 1.0, noise, 100, never, rng, trace=0.25)
    assert got == taus[floor - 1]
    # Without it the bottom of the grid is the floor.
    assert search_threshold(norms, 1.0, noise, 100, never, rng) == taus[-2]


def test_threshold_queries_match_their_definition():
    # n gamma(tau) / r^2 - c with gamma(tau) = mean (min(|y|, r)^2 - tau^2)_+;
    # the fixed-point sums floor each term onto a 2^-k grid (k = 50 for n = 4),
    # so they agree with the float definition to 4 * 2^-50.
    norms = np.array([0.1, 0.5, 0.9, 2.0])
    taus = tau_grid(1.0)
    queries, _ = threshold_queries(norms, 1.0, np.zeros(taus.size), norms.size)
    brute = [np.sum(np.maximum(np.minimum(norms, 1.0) ** 2 - t**2, 0)) for t in taus]
    np.testing.assert_allclose(queries, brute, atol=4 * 2.0**-48)


def test_search_returns_a_point_of_the_grid_at_most_the_radius():
    rng = np.random.default_rng(1)
    make = search_factory(None, None, 3, None)

    def make_svt(sensitivity):
        return make(PureDP(1.0), sensitivity=sensitivity)

    for radius in (1.0, 3.0, 1e-50):
        grid = tau_grid(radius)
        for _ in range(20):
            n = int(rng.integers(5, 400))
            norms = radius * rng.uniform(0, 1.5, n)
            noise = rng.uniform(0, 0.1) * grid**2
            trace = float(np.mean(np.minimum(norms, radius) ** 2))
            tau = search_threshold(norms, radius, noise, n, make_svt, rng, trace)
            assert tau in grid
            assert tau <= radius


def _final(d, n, radius, cost=None):
    cost = ZCDP(0.5) if cost is None else cost
    return ReleasePlan(cost, covariance_entries("auto", cost, d, n, radius))


def test_search_factory_builds_the_search_the_fit_runs():
    n, d, radius = 500, 4, 2.0
    make = search_factory(_final(d, n, radius), n, d, radius)
    norms = np.random.default_rng(0).uniform(0, radius, n)
    noise = np.full(TAU_GRID, 1e-3)
    _, sensitivity = threshold_queries(norms, radius, noise, n)
    svt = make(PureDP(0.125), sensitivity=sensitivity)
    assert svt.cost == PureDP(0.125)
    assert svt.monotone
    assert svt.threshold == 0.0
    assert svt.sensitivity == sensitivity
    # Without a sensitivity: that of the offsets the predicted noise at the
    # full trace gives, at the case's rows and radius.
    for rows, tau in ((n, radius), (n // 2, radius * 2.0**-99)):
        noise = predicted_noise(_final(d, n, radius), rows, d, tau, tau * tau)
        svt = make(PureDP(0.125), rows=rows, radius=tau)
        assert svt.sensitivity == query_sensitivity(rows, rows * noise / tau**2)
        assert 1.0 <= svt.sensitivity < 1.0 + 1e-9


def test_query_sensitivity_is_that_of_the_queries():
    norms = np.linspace(0.0, 1.0, 50)
    noise = np.linspace(0.0, 0.5, TAU_GRID)
    _, sensitivity = threshold_queries(norms, 1.0, noise, norms.size)
    offsets = norms.size * noise
    assert sensitivity == query_sensitivity(norms.size, float(np.max(offsets)))


def test_worst_sensitivity_is_the_hardest_calibration():
    # The exact run's noise, in grid units, for any sensitivity in [1, 8) is
    # at most the worst case's: an epsilon the check accepts there is
    # accepted by every run.
    worst = AboveThreshold(
        threshold=0.0, sensitivity=WORST_SENSITIVITY, epsilon=1.0, monotone=True
    )
    rng = np.random.default_rng(0)
    for sensitivity in np.concatenate([[1.0, 1.5, 2.0, 4.0], rng.uniform(1, 8, 200)]):
        svt = AboveThreshold(
            threshold=0.0, sensitivity=sensitivity, epsilon=1.0, monotone=True
        )
        assert svt.noise_scales[1] <= worst.noise_scales[1]
    # And it is refused where the run would be.
    epsilon = 2.0 * (2**21 + 1) / 2**52 * 0.99
    with pytest.raises(ValueError, match="too small"):
        search_factory(None, 10, 2, 1.0)(PureDP(epsilon), sensitivity=WORST_SENSITIVITY)
    # A sensitivity of 1 (the search's smallest) would hide it.
    search_factory(None, 10, 2, 1.0)(PureDP(epsilon), sensitivity=1.0)


def test_search_factory_refuses_a_prediction_float64_cannot_hold():
    # At a radius far below data_norm the offsets n Noise / tau^2 overflow;
    # the sensitivity would be infinite, which AboveThreshold refuses.
    make = search_factory(_final(3, 10, 1e300, ZCDP(1e-300)), 10, 3, 1e300)
    with pytest.raises(ValueError):
        make(PureDP(1.0))
