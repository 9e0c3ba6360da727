"""The joint release ``(m, w s)`` of per-coordinate means and centred squares
(:mod:`dpgauss.releases._moments`) at every weight, and the Gaussian's
diagonal plan built on it (w = 3/2). The scaler's and PCA's uses (w = 2) are
tested end to end in tests/preprocessing/test_scaler.py and
tests/decomposition."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.releases._box_gaussian import (
    SQUARE_WEIGHT,
    _release_moments,
    moments_entries,
)
from dpgauss.releases._moments import (
    MOMENTS_L1,
    MOMENTS_L2,
    box_moments,
    moments_l1,
    moments_l2,
    moments_mechanism,
    moments_sensitivities,
    weighted_moments,
)

WEIGHTS = [0.25, 0.5, 1.0, 1.2, math.sqrt(2.0), 1.5, 1.66, 1.67, 2.0, 3.0, 10.0]


def _changes():
    """Every pair (a, b) of a fine grid of [-1, 1]: one coordinate's move, as
    ``(|b - a|, |b^2 - a^2|)``."""
    grid = np.linspace(-1.0, 1.0, 1601)
    a, b = np.meshgrid(grid, grid)
    return np.abs(b - a), np.abs(b * b - a * a)


@pytest.mark.parametrize("w", WEIGHTS)
def test_the_l1_bound_holds_and_is_attained_on_a_grid(w):
    # The grid's step is 1/800: its maximum is within a step's change of the
    # supremum, at most (1 + 2 w) / 800 below it.
    dm, ds = _changes()
    l1 = (dm + w * ds).max()
    assert l1 <= moments_l1(w) + 1e-12
    assert l1 > moments_l1(w) - (1.0 + 2.0 * w) / 800.0


@pytest.mark.parametrize("w", WEIGHTS)
def test_the_l2_bound_holds_and_is_attained_on_a_grid(w):
    # moments_l2 rounds up to four decimals at least 5e-5 above the value.
    dm, ds = _changes()
    l2 = np.hypot(dm, w * ds).max()
    assert l2 <= moments_l2(w)
    assert l2 > moments_l2(w) - 2e-4 - (1.0 + 2.0 * w) / 800.0


def test_the_closed_forms():
    # w = 2: 25/8 and sqrt(71 + 8 sqrt(2)) / 4 = 2.26817..., kept at 2.2683;
    # w = 3/2: 8/3 (rounded up to a float) and 2, the means' alone; below
    # w^2 = 2 the l2 bound is 2, below w = 1/2 the l1 bound is 2.
    assert (MOMENTS_L1, MOMENTS_L2) == (3.125, 2.2683)
    assert moments_l1(1.5) >= 8.0 / 3.0
    assert moments_l1(1.5) == np.nextafter(8.0 / 3.0, 3.0)
    assert moments_l2(1.5) == 2.0
    assert moments_l2(1.41) == 2.0
    assert moments_l1(0.4) == 2.0
    # Just above the largest w keeping l2 at 2 (about 1.665) it rises.
    assert moments_l2(1.67) > 2.0


@pytest.mark.parametrize("w", [0.0, -1.0, math.inf, math.nan])
def test_weights_must_be_finite_and_positive(w):
    with pytest.raises(ValueError, match="square weight"):
        moments_mechanism(PureDP(1.0), 10, 2, weight=w)


@pytest.mark.parametrize(("n", "d"), [(50, 1), (300, 7), (20000, 30)])
@pytest.mark.parametrize("w", [1.5, 2.0, 3.0])
def test_mechanism_sensitivities_are_the_proven_ones_plus_rounding(n, d, w):
    bounds = moments_sensitivities(n, d, weight=w)
    pure = bounds["l1"]
    zcdp = moments_mechanism(ZCDP(0.5), n, d, weight=w).sensitivity
    # The floating-point terms are below 1e-6 relative at these n (the
    # summation error grows like n u).
    assert pure == pytest.approx(d * moments_l1(w) / n, rel=1e-6)
    assert pure >= d * moments_l1(w) / n
    linf = bounds["linf"]
    assert linf == pytest.approx(max(2.0, w) / n, rel=1e-6)
    assert linf >= max(2.0, w) / n
    # The pure mechanism is the one of smaller per-entry variance.
    mech = moments_mechanism(PureDP(1.0), n, d, weight=w)
    k = 2 * d
    if (k + 1) * (k + 2) / 3 * linf**2 < 2 * pure**2:
        assert isinstance(mech, LInfinityMechanism)
        assert mech.sensitivity == linf
    else:
        assert mech.sensitivity == pure
    assert zcdp == pytest.approx(math.sqrt(d) * moments_l2(w) / n, rel=1e-6)
    assert zcdp >= math.sqrt(d) * moments_l2(w) / n


@pytest.mark.parametrize(
    ("w", "pure", "low"),
    # The maximisers (b = 1, a = q - 1): q = 1 - 1/(2 w) in l1; q+ in l2
    # (w = 2: (2 + sqrt(2)) / 4; w = 3/2: q = 0, g(q+) = 32/9 < 4).
    [
        (1.5, True, -1.0 / 3.0),
        (1.5, False, -1.0),
        (2.0, True, -0.25),
        (2.0, False, (math.sqrt(2.0) - 2.0) / 4.0),
    ],
)
def test_the_worst_pair_reaches_the_mechanism_s_sensitivity(w, pure, low):
    # One row moves from z = low to z = 1 in every coordinate: the released
    # vector moves by the sensitivity, up to the rounding allowances and the
    # four-decimal rounding of the l2 bound at w = 2 (a bound 20 times too
    # small fails here and in the audit).
    n, d = 100, 4
    center, half = np.zeros(d), np.ones(d)
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(n, d))
    X[0] = low
    Y = X.copy()
    Y[0] = 1e12
    diff = weighted_moments(*box_moments(Y, center, half), w) - weighted_moments(
        *box_moments(X, center, half), w
    )
    moved = np.sum(np.abs(diff)) if pure else np.linalg.norm(diff)
    bound = moments_sensitivities(n, d, weight=w)["l1" if pure else "l2"]
    assert 0.9999 < moved / bound <= 1


@pytest.mark.parametrize("w", [0.7, 1.5, 2.0, 3.0])
def test_the_worst_pair_reaches_the_linf_sensitivity(w):
    # A mean entry moves by 2/n (z from -1 to 1, its square unmoved); a
    # square entry by w/n (z from 0 to 1, t q = 1): the larger is reached.
    n, d = 100, 4
    center, half = np.zeros(d), np.ones(d)
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(n, d))
    X[0] = -1e12 if w <= 2 else 0.0
    Y = X.copy()
    Y[0] = 1e12
    diff = weighted_moments(*box_moments(Y, center, half), w) - weighted_moments(
        *box_moments(X, center, half), w
    )
    bound = moments_sensitivities(n, d, weight=w)["linf"]
    assert 0.9999 < np.max(np.abs(diff)) / bound <= 1


@pytest.mark.parametrize("w", [1.5, 2.0, 0.7])
def test_far_rows_move_the_release_by_at_most_the_sensitivity(w):
    # Rows at +-1e300 and a random neighbour pair: never beyond the bound.
    n, d = 5000, 3
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n, d))
    X[::97] = 1e300
    center, half = np.zeros(d), np.full(d, 2.0)
    for seed in range(20):
        Y = X.copy()
        Y[seed] = np.random.default_rng(seed).uniform(-3.0, 3.0, size=d)
        diff = weighted_moments(*box_moments(X, center, half), w) - weighted_moments(
            *box_moments(Y, center, half), w
        )
        bounds = moments_sensitivities(n, d, weight=w)
        assert np.sum(np.abs(diff)) <= bounds["l1"]
        assert np.linalg.norm(diff) <= bounds["l2"]
        assert np.max(np.abs(diff)) <= bounds["linf"]


def _plan(total, n, d):
    return ReleasePlan(total, moments_entries(total, n, d))


def test_the_gaussian_s_weight_keeps_the_means_l2_sensitivity():
    # 3/2: the squares come free under zCDP; 8/3 per coordinate under pure DP.
    assert SQUARE_WEIGHT == 1.5
    mech = moments_entries(ZCDP(0.5), 300, 3)[0].build()
    assert mech.sensitivity == pytest.approx(2.0 * math.sqrt(3.0) / 300.0, rel=1e-9)


def test_release_is_close_to_the_truth_with_a_large_budget():
    # n = 20000 rows, rho = 50: the means' noise sd is 2 sqrt(3) / (n * 10)
    # ~ 2e-5 and the variances' sampling error about 0.01 * sqrt(2 / n) ~ 1e-4;
    # allow 1e-3.
    rng = np.random.default_rng(0)
    X = np.clip(rng.normal([0.3, -0.5, 0.0], 0.1, size=(20000, 3)), -1, 1)
    plan = _plan(ZCDP(50.0), 20000, 3)
    box = (np.zeros(3), np.ones(3))
    mean, variances, sd = _release_moments(X, *box, plan, np.random.default_rng(1))
    plan.finish()
    assert np.allclose(mean, X.mean(0), atol=1e-3)
    assert np.allclose(variances, X.var(0), atol=1e-3)
    assert sd > 0


@pytest.mark.parametrize("total", [PureDP(1e-4), ZCDP(1e-8)])
@pytest.mark.parametrize("seed", range(3))
def test_outputs_stay_in_the_box_for_swamping_noise(total, seed):
    X = np.random.default_rng(seed).uniform(-1, 1, size=(30, 4))
    X[0] = 1e12
    plan = _plan(total, 30, 4)
    box = (np.zeros(4), np.ones(4))
    mean, variances, sd = _release_moments(X, *box, plan, np.random.default_rng(seed))
    assert np.all(np.abs(mean) <= 1.0)
    assert np.all((variances >= 0.0) & (variances <= 1.0))
    assert math.isfinite(sd)


def test_swamped_variances_shrink_towards_zero():
    # Noise sd ~ 1e4 box units: the shrinkage weight is about 1e-10, so the
    # variances are below 1e-9 (towards 0, not a prior mean).
    X = np.random.default_rng(0).uniform(-1, 1, size=(30, 4))
    plan = _plan(ZCDP(1e-10), 30, 4)
    box = (np.zeros(4), np.ones(4))
    _, variances, _ = _release_moments(X, *box, plan, np.random.default_rng(0))
    assert np.all(variances < 1e-9)
