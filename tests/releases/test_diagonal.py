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


def _kept(Z, total, seeds):
    """How often each column's variance was kept over ``seeds`` fits, and the
    largest kept box-unit variance of each."""
    n, d = Z.shape
    kept, largest = np.zeros(d, int), np.zeros(d)
    for seed in range(seeds):
        plan = ReleasePlan(total, variance_entries(total, d, True, n))
        out = release_variances(Z, plan, np.random.default_rng(seed), True)
        kept += out.measured
        largest = np.maximum(largest, out.values * out.scale**2)
        assert np.all(out.scale > 0.0) & np.all(out.scale <= 1.0)
    return kept, largest


@pytest.mark.parametrize("pure", [True, False])
def test_faint_columns_are_never_inflated_when_several_show(pure):
    # One column filling the box (variance 1/3) and five faint ones (1e-4, a
    # hundredth of the noise sd). A faint column's released variance is below
    # 0 about half the time, so some is in all but 1/32 of the fits, and the
    # strict rule then keeps a faint one with probability 1e-3; in the other
    # fits each is kept beyond 2 sds (Gaussian tail 0.023, the cube's
    # lighter). Expected faint keeps over 200 fits: about 200 (1/32) 5 (0.046)
    # + 0.2 = 1.6; 7 or more has Poisson probability 0.002.
    rng = np.random.default_rng(0)
    n = 5000
    faint = rng.normal(0.5, 0.01, (n, 5))
    Z = np.column_stack([rng.uniform(-1, 1, n), faint])
    kept, largest = _kept(Z, PureDP(1.0) if pure else ZCDP(0.5), 200)
    assert kept[0] == 200
    assert abs(largest[0] - Z[:, 0].var()) < 0.01
    assert kept[1:].sum() <= 6


@pytest.mark.parametrize("pure", [True, False])
def test_a_single_faint_column_is_kept_about_as_often_as_its_noise_clears_the_garrote(
    pure,
):
    # With one faint column among wide ones nothing in the release tells it
    # from a wide column measured at 1-2 sds: its variance is below 0 half
    # the time (strict rule), else kept when its noise exceeds the garrote's
    # 1.25 sds (Gaussian 0.106, the cube's lighter), shrunk: about 0.106 of
    # the fits. Expected 21 of 200; 36 or more has Poisson probability
    # 0.002. Kept, it is at most its noise's 1 - 1e-3 / 3 quantile less the
    # garrote's share.
    rng = np.random.default_rng(1)
    n = 5000
    Z = np.column_stack([rng.uniform(-1, 1, (n, 2)), rng.normal(0.5, 0.01, n)])
    kept, _ = _kept(Z, PureDP(1.0) if pure else ZCDP(0.5), 200)
    assert kept[:2].tolist() == [200, 200]
    assert kept[2] <= 35


@pytest.mark.parametrize("pure", [True, False])
def test_columns_that_fill_their_box_are_kept_from_two_sds(pure):
    # Four columns uniform on [-1/2, 1/2] (variance 1/12) at n = 250: about
    # 3.6 noise sds (cube) and 9 (Gaussian) above 0. No released variance is
    # below 0 (a draw 3.6 sds low has probability below 0.001 per column) and
    # the median is above 2 sds in about 0.97 of the fits, so each is kept
    # from 2 sds: P(z >= 2 | 3.6) = 0.95 for Gaussian-like noise, where the
    # strict quantile (3.6 sds) would keep half (the cube's case; Gaussian
    # noise leaves the columns 9 sds above 0, kept by either rule). Over 50
    # fits x 4 columns the rate's binomial sd at 0.92 is 0.019: at least 0.8
    # kept.
    rng = np.random.default_rng(2)
    Z = rng.uniform(-0.5, 0.5, (250, 4))
    kept, largest = _kept(Z, PureDP(1.0) if pure else ZCDP(0.5), 50)
    assert kept.sum() / 200 >= 0.8
    assert np.all(largest <= 1.0)


def test_an_edge_column_is_not_inflated_by_the_noise_on_its_mean():
    # A column at the box's edge (mean -0.99, variance 1e-4) at n = 150: the
    # mean's noise sd is about 0.1 (cube, epsilon 1), and a draw that pulls
    # the mean towards 0 adds 2 |m| e to the variance. The noise sd is taken
    # at |mean| + sd, so the column is kept no more often than a faint one:
    # with three faint edge columns some variance is below 0 in all but 1/8
    # of the fits (strict rule, a keep per 1,000), and in those each is kept
    # beyond the garrote's 1.25 sds (cube tail under 0.1): expected under
    # 200 (1/8) 3 (0.1) = 7.5 of 600; 16 or more has Poisson probability
    # 0.004.
    rng = np.random.default_rng(3)
    n = 150
    edge = np.clip(rng.normal(-0.99, 0.01, (n, 3)), -1, 1)
    Z = np.column_stack([rng.uniform(-1, 1, (n, 2)), edge])
    kept, _ = _kept(Z, PureDP(1.0), 200)
    assert kept[2:].sum() <= 15


@pytest.mark.parametrize(
    ("size", "a", "b"), [(4, 0.5, 0.0), (18, 0.5, 1.0), (18, 0.5, 2.0)]
)
def test_cube_quantile_matches_simulation(size, a, b):
    # x with P(R (a U + b U') > x) = 0.01, R ~ Gamma(size + 1): the
    # empirical exceedance over 400,000 draws has sd sqrt(0.01 0.99 / 4e5) =
    # 1.6e-4; allow 5 sds.
    from dpgauss.releases._faint import _cube_quantile

    x = _cube_quantile(size, a, b, 0.01)
    rng = np.random.default_rng(4)
    m = 400_000
    draws = rng.gamma(size + 1.0, 1.0, m) * (
        a * rng.uniform(-1, 1, m) + b * rng.uniform(-1, 1, m)
    )
    assert abs(np.mean(draws > x) - 0.01) < 5 * 1.6e-4


@pytest.mark.parametrize("seed", [0, 1, 2**31 - 1])
def test_released_variances_stay_in_the_box_for_any_draw(seed):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, size=(30, 5))
    plan = ReleasePlan(PureDP(1e-6), variance_entries(PureDP(1e-6), 5, True, 30))
    out = release_variances(Z, plan, rng, True)
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
