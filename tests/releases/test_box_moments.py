"""The weighted release of per-coordinate means and second moments in a box."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._box_moments import (
    SQUARE_WEIGHT,
    moments_entries,
    moments_mechanism,
    release_moments,
)


def _changes():
    """Every pair (x, y) of a fine grid of [-1, 1]: one coordinate's move."""
    grid = np.linspace(-1.0, 1.0, 801)
    x, y = np.meshgrid(grid, grid)
    return np.abs(y - x), np.abs(y * y - x * x)


def test_the_l1_bound_is_the_parabola_maximum_and_is_attained():
    # t + t s / b <= (2 + b)^2 / (4 b) = 8/3 at b = 2/3, attained at s = 2/3
    # (x = -2/3, y = 4/3 is outside; x = -1/3... on the grid the maximum is
    # within a grid step of the bound).
    dm, ds = _changes()
    l1 = dm + ds / SQUARE_WEIGHT
    assert l1.max() <= 8.0 / 3.0 + 1e-12
    assert l1.max() > 8.0 / 3.0 - 1e-4


def test_the_l2_bound_is_the_means_alone():
    # t^2 (1 + s^2 / b^2) <= 4, attained at x = -1, y = 1 (the square does not
    # move): the second moments add nothing to the l2 sensitivity.
    dm, ds = _changes()
    l2 = np.hypot(dm, ds / SQUARE_WEIGHT)
    assert l2.max() == pytest.approx(2.0, abs=1e-12)


def test_a_smaller_weight_would_raise_the_l2_bound():
    # The docstring's threshold: below about 0.6006 the interior maximum wins.
    dm, ds = _changes()
    assert np.hypot(dm, ds / 0.55).max() > 2.0 + 1e-3


@pytest.mark.parametrize(("n", "d"), [(50, 1), (300, 7), (20000, 30)])
def test_mechanism_sensitivities_are_the_proven_ones_plus_rounding(n, d):
    pure = moments_mechanism(PureDP(1.0), n, d).sensitivity
    zcdp = moments_mechanism(ZCDP(0.5), n, d).sensitivity
    # The floating-point terms are below 1e-6 relative at these n (the
    # summation error grows like n u).
    assert pure == pytest.approx(8.0 * d / (3.0 * n), rel=1e-6)
    assert pure >= 8.0 * d / (3.0 * n)
    assert zcdp == pytest.approx(2.0 * math.sqrt(d) / n, rel=1e-6)
    assert zcdp >= 2.0 * math.sqrt(d) / n


def _plan(total, n, d):
    return ReleasePlan(total, moments_entries(total, n, d))


def test_release_is_close_to_the_truth_with_a_large_budget():
    # n = 20000 rows, rho = 50: the means' noise sd is 2 sqrt(3) / (n * 10)
    # ~ 2e-5 and the variances' sampling error about 0.01 * sqrt(2 / n) ~ 1e-4;
    # allow 1e-3.
    rng = np.random.default_rng(0)
    Z = np.clip(rng.normal([0.3, -0.5, 0.0], 0.1, size=(20000, 3)), -1, 1)
    plan = _plan(ZCDP(50.0), 20000, 3)
    mean, variances, sd = release_moments(Z, plan, np.random.default_rng(1))
    plan.finish()
    assert np.allclose(mean, Z.mean(0), atol=1e-3)
    assert np.allclose(variances, Z.var(0), atol=1e-3)
    assert sd > 0


@pytest.mark.parametrize("total", [PureDP(1e-4), ZCDP(1e-8)])
@pytest.mark.parametrize("seed", range(3))
def test_outputs_stay_in_the_box_for_swamping_noise(total, seed):
    Z = np.random.default_rng(seed).uniform(-1, 1, size=(30, 4))
    plan = _plan(total, 30, 4)
    mean, variances, sd = release_moments(Z, plan, np.random.default_rng(seed))
    assert np.all(np.abs(mean) <= 1.0)
    assert np.all((variances >= 0.0) & (variances <= 1.0))
    assert math.isfinite(sd)


def test_swamped_variances_shrink_towards_zero():
    # Noise sd ~ 1e4 box units: the shrinkage weight is about 1e-10, so the
    # variances are below 1e-9 (towards 0, not a prior mean).
    Z = np.random.default_rng(0).uniform(-1, 1, size=(30, 4))
    plan = _plan(ZCDP(1e-10), 30, 4)
    _, variances, _ = release_moments(Z, plan, np.random.default_rng(0))
    assert np.all(variances < 1e-9)
