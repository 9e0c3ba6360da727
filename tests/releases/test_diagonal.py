"""The diagonal release inside a box: its sensitivity, its plan choice and the
map back to data units."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._center import covariance_plan_entries
from dpgauss.releases._diagonal import (
    axes_prediction,
    box_plan_entries,
    diagonal_entries,
    diagonal_mechanism,
    diagonal_prediction,
    is_diagonal,
    release_diagonal,
    to_data_units,
)
from dpgauss.releases._measured import noise_quantile
from dpgauss.releases._variances import release_variances, variance_entries


def test_per_coordinate_sensitivity_bounds_are_reached_and_never_exceeded():
    # Every pair (a, b) on a fine grid of [-1, 1]: the l1 move of (z, z^2)
    # peaks at 9/4 (a = 1, b = -1/2) and the l2 move at 2 (a = 1, b = -1).
    grid = np.linspace(-1.0, 1.0, 801)
    a, b = np.meshgrid(grid, grid)
    l1 = np.abs(a - b) + np.abs(a * a - b * b)
    l2 = np.hypot(a - b, a * a - b * b)
    assert l1.max() <= 2.25 + 1e-12
    assert l1.max() == pytest.approx(2.25)
    assert l2.max() <= 2.0 + 1e-12
    assert l2.max() == pytest.approx(2.0)


@pytest.mark.parametrize("centered", [True, False])
def test_mechanism_calibrated_to_the_proven_sensitivity(centered):
    n, d = 100, 4
    l1 = (2.25 if centered else 1.0) * d / n
    l2 = (2.0 if centered else 1.0) * math.sqrt(d) / n
    laplace = diagonal_mechanism(PureDP(1.0), n, d, centered)
    gauss = diagonal_mechanism(ZCDP(0.5), n, d, centered)
    # The floating-point terms add a relative 1e-13 at most at n = 100.
    assert laplace.sensitivity == pytest.approx(l1, rel=1e-12)
    assert laplace.sensitivity >= l1
    assert gauss.sensitivity == pytest.approx(l2, rel=1e-12)
    assert gauss.sensitivity >= l2


def test_release_stays_in_the_box_for_any_draw():
    rng = np.random.default_rng(0)
    Z = rng.uniform(-1, 1, size=(30, 5))
    plan = ReleasePlan(PureDP(1e-3), diagonal_entries(PureDP(1e-3), 5, True, 30))
    mean, variances, sd = release_diagonal(Z, plan, rng)
    assert np.all(np.abs(mean) <= 1.0)
    assert np.all((variances >= 0.0) & (variances <= 1.0))
    assert math.isfinite(sd)


@pytest.mark.parametrize("pure", [True, False])
def test_released_variances_are_never_inflated_by_the_noise(pure):
    # A column filling the box (variance 1/3) and a faint one (1e-4, a
    # hundredth of the noise sd): over 200 draws the faint one is always 0
    # up to the floor (a draw beyond K sds has probability 1e-3 / d, so
    # about 0.1 of one in 200 fits), the wide one always kept, within 5
    # noise sds (sd 2e-3 at pure epsilon 1, n = 5,000, d = 2).
    rng = np.random.default_rng(0)
    n, d = 5000, 2
    Z = np.column_stack([rng.uniform(-1, 1, n), rng.normal(0.5, 0.01, n)])
    total = PureDP(1.0) if pure else ZCDP(0.5)
    true = Z.var(axis=0)
    for seed in range(200):
        plan = ReleasePlan(total, variance_entries(total, d, True, n))
        out = release_variances(Z, plan, np.random.default_rng(seed), True, pure)
        box_units = out.values * out.scale**2
        assert out.measured.tolist() == [True, False]
        assert box_units[1] == 0.0
        assert abs(box_units[0] - true[0]) < 0.01
        assert np.all(out.scale > 0.0) & np.all(out.scale <= 1.0)
        assert 0.0 < out.noise_sd <= 1.0 / noise_quantile(d, pure)


@pytest.mark.parametrize("seed", [0, 1, 2**31 - 1])
def test_released_variances_stay_in_the_box_for_any_draw(seed):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, size=(30, 5))
    plan = ReleasePlan(PureDP(1e-6), variance_entries(PureDP(1e-6), 5, True, 30))
    out = release_variances(Z, plan, rng, True, True)
    assert np.all(np.abs(out.mean) <= 1.0)
    assert np.all((out.values >= 0.0) & (out.values <= 1.0))
    assert np.all(np.isfinite(out.scale)) & np.all(out.scale <= 1.0)


def test_box_plan_adapts_to_the_budget():
    # Public values only: at pure epsilon 1 with 300 rows in 20 dimensions the
    # full release's noise is ~100 times the reference covariance, the diagonal
    # one's ~1; at rho = 10 with 100 000 rows the full release wins.
    def plan(total, n, d):
        full = covariance_plan_entries(total, d, "gauss", True, n, math.sqrt(d))
        entries = box_plan_entries(total, d, n, True, full)
        return ReleasePlan(total, entries)

    assert is_diagonal(plan(PureDP(1.0), 300, 20))
    assert not is_diagonal(plan(ZCDP(10.0), 100_000, 20))


def test_predictions_refuse_only_when_the_noise_swamps_the_box():
    big = diagonal_mechanism(PureDP(1e-3), 50, 10)
    small = diagonal_mechanism(PureDP(10.0), 5000, 10)
    assert diagonal_prediction(big, 10).loses
    assert not diagonal_prediction(small, 10).loses
    assert axes_prediction(big, 10).loses
    assert not axes_prediction(small, 10).loses


def test_map_back_caps_variances_and_breaks_ties_by_width():
    h = np.array([1.0, 1e3, 1e-3])
    values, vectors = to_data_units(np.array([5.0, 0.0, 0.0]), np.eye(3), h)
    cov = (vectors * values) @ vectors.T
    assert np.all(np.diag(cov) <= h * h * (1 + 1e-12))
    assert values.sum() <= np.sum(h * h) * (1 + 1e-12)
    # The zero release: axes by decreasing box width, values 0.
    values, vectors = to_data_units(np.zeros(3), np.eye(3), h)
    assert np.all(values == 0.0)
    assert np.argmax(np.abs(vectors[:, 0])) == 1
    assert np.argmax(np.abs(vectors[:, 1])) == 0
