"""The staged Gaussian's clipping radius for its augmented rows."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._box_staged import (
    TAU_STEPS,
    TRACE_MULTIPLE,
    augmented_radius,
    clipping_tau,
    reference_tau,
    release_staged,
    snap_tau,
    staged_entries,
    tau_grid,
)
from dpgauss.utils._sums import clip_rows

WEIGHT = 1.5


def test_the_grid_runs_down_from_sqrt_2d_in_quarter_octaves():
    taus = tau_grid(8)
    assert taus.shape == (TAU_STEPS,)
    assert taus[0] == pytest.approx(4.0)
    np.testing.assert_allclose(taus[1:] / taus[:-1], 2.0**-0.25)


def test_snap_takes_the_smallest_radius_whose_square_covers_the_target():
    taus = tau_grid(5)
    assert snap_tau(taus[3] ** 2, 5) == taus[3]
    assert snap_tau(taus[3] ** 2 * 1.0001, 5) == taus[2]
    assert snap_tau(1e9, 5) == taus[0]
    for low in (0.0, -1.0):
        assert snap_tau(low, 5) == taus[-1]
    assert snap_tau(float("nan"), 5) == taus[0]


def test_augmented_radius_bounds_the_rows_and_rounds_up():
    for tau in tau_grid(7):
        row = np.append(np.full(7, tau / math.sqrt(7)), tau)
        assert np.linalg.norm(row) <= augmented_radius(tau)


def test_tau_covers_three_times_the_released_trace_and_its_noise():
    # Variances 0.01 per coordinate, d = 4, released without noise (var 0
    # but for the floor): tau^2 is the grid's first value at or above 3 x 0.04.
    mean = np.zeros(4)
    second = np.full(4, 0.01)
    tau = clipping_tau(second, mean, 0.0, WEIGHT)
    assert tau * tau >= TRACE_MULTIPLE * 0.04
    assert tau * tau < TRACE_MULTIPLE * 0.04 * math.sqrt(2.0)
    # Noise widens it: its sd over 4 entries, twice, added to the trace.
    noisy = clipping_tau(second, mean, 1e-4, WEIGHT)
    assert noisy > tau


def test_the_reference_tau_is_that_of_columns_filling_a_tenth():
    d = 6
    assert reference_tau(d) == snap_tau(TRACE_MULTIPLE * 0.1 * d, d)


def test_rows_are_clipped_into_the_ball_about_the_center_only_when_beyond():
    rng = np.random.default_rng(0)
    Z = rng.uniform(-1, 1, size=(500, 3))
    center = np.array([0.5, -0.2, 0.1])
    Y = clip_rows(Z, center, 0.7)
    norms = np.linalg.norm(Y, axis=1)
    assert np.all(norms <= 0.7 * (1 + 1e-12))
    inside = np.linalg.norm(Z - center, axis=1) <= 0.7
    np.testing.assert_array_equal(Y[inside], (Z - center)[inside])
    np.testing.assert_allclose(norms[~inside], 0.7)


@pytest.mark.parametrize("spread", [0.02, 0.3])
def test_the_augmented_release_is_built_at_the_first_stages_radius(spread, monkeypatch):
    # Columns of sd `spread` in [-1, 1]^4 at rho = 50: the radius the second
    # release is calibrated at follows the rows' spread, not the box.
    n, d = 4000, 4
    rng = np.random.default_rng(1)
    X = np.clip(
        rng.normal(0.1, spread, size=(n, d)) + rng.normal(0, 1, (n, 1)) * spread, -1, 1
    )
    total = ZCDP(50.0)
    plan = ReleasePlan(total, staged_entries(total, n, d, WEIGHT))
    radii = []
    calibrate = plan.calibrate

    def spy(name, **case):
        if name == "second_moment":
            radii.append(case["radius"])
        return calibrate(name, **case)

    monkeypatch.setattr(plan, "calibrate", spy)
    mean, values, vectors, diagonal, _ = release_staged(
        X, np.zeros(d), np.ones(d), plan, np.random.default_rng(2), WEIGHT
    )
    assert not diagonal
    (radius,) = radii
    trace = float(np.trace(np.cov(X, rowvar=False)))
    assert radius**2 >= 2 * TRACE_MULTIPLE * trace
    assert radius**2 <= 2 * TRACE_MULTIPLE * trace * 2.0
    np.testing.assert_allclose(mean, X.mean(axis=0), atol=0.01)
    C = (vectors * values) @ vectors.T
    S = np.cov(X, rowvar=False, bias=True)
    np.testing.assert_allclose(C, S, atol=0.05 * spread)
