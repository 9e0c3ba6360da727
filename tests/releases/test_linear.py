"""The linear regression release (dpgauss.releases._linear)."""

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._linear import (
    linear_entries,
    regression_boxes,
    release_linear,
)


def _rows(n, d, seed=0, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    beta = np.linspace(-2.0, 2.5, d)
    y = X @ beta + 3.0 + rng.normal(0.0, noise, n)
    return X, y, beta


def _fit(X, y, total, fit_intercept=True, seed=0, target=(-12.0, 18.0)):
    n, d = X.shape
    boxes = regression_boxes((-1.0, 1.0), target, d, fit_intercept, "Test")
    plan = ReleasePlan(total, linear_entries(total, n, d, fit_intercept))
    return release_linear(X, y, boxes, fit_intercept, plan, np.random.default_rng(seed))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_huge_budget_gives_least_squares(fit_intercept):
    # rho 1e12: the noise (sd ~ R^2 / (n sqrt(rho))) and the ridge it sets are
    # ~1e-9 of the Gram matrix's entries, so the coefficients are those of
    # least squares on the same rows (none clipped: y within the target box)
    # up to about 1e-6.
    X, y, _ = _rows(5000, 4)
    if not fit_intercept:
        y = y - 3.0
    got = _fit(X, y, ZCDP(1e12), fit_intercept)
    A = np.column_stack([X, np.ones(len(y))]) if fit_intercept else X
    want = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(got.coef, want[:4], atol=1e-5)
    if fit_intercept:
        assert got.intercept == pytest.approx(want[4], abs=1e-5)
    else:
        assert got.intercept == 0.0


@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(1.0)])
def test_the_coefficients_are_close_at_a_moderate_budget(total):
    # n = 1e5, d = 5: the moments' noise on the Gram matrix is ~1e-4 of its
    # smallest eigenvalue (1/3 for uniform columns), so the error is the
    # sampling error plus a few 1e-3 in box units (times h_y = 15).
    X, y, beta = _rows(100_000, 5, seed=1)
    got = _fit(X, y, total, seed=2)
    assert np.max(np.abs(got.coef - beta)) < 0.2
    assert got.intercept == pytest.approx(3.0, abs=0.2)


def test_every_noise_draw_gives_finite_coefficients():
    # n = 30 at rho 1e-4: the noise dwarfs the statistics, the released Gram
    # matrix is far from positive definite; the ridge and the raised spectrum
    # keep the solve defined.
    X, y, _ = _rows(30, 6, seed=3)
    for seed in range(20):
        got = _fit(X, y, ZCDP(1e-4), seed=seed)
        assert np.all(np.isfinite(got.coef))
        assert np.isfinite(got.intercept)
        assert got.ridge > 0.0


def test_the_caller_rows_are_not_modified_and_far_rows_are_boxed():
    X, y, _ = _rows(2000, 3, seed=4)
    X[0] = 1e300
    y[1] = -np.inf
    kept = (X.copy(), y.copy())
    got = _fit(X, y, ZCDP(1.0), seed=5)
    assert np.all(np.isfinite(got.coef))
    np.testing.assert_array_equal(X, kept[0])
    np.testing.assert_array_equal(y, kept[1])


@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_box_l1_bound_holds_for_every_pair_of_corners_and_random_rows(
    d, fit_intercept
):
    # Brute force of the module docstring's pure-DP bound: every pair of rows
    # (z, s, t) with z, t at the corners of the box (where the upper
    # triangle's change is largest) and 2,000 random pairs inside. Without
    # an intercept the bound is attained by a pair of corners; with one it is
    # a little slack (27 of 27.5 at d = 5: the constant's coordinate cannot
    # split its share as the product bound allows).
    import itertools

    from dpgauss.releases._linear import INTERCEPT_SCALE, box_l1

    s = INTERCEPT_SCALE if fit_intercept else None
    bound = box_l1(d, fit_intercept)

    def row(v):
        return np.array([*v[:-1], s, v[-1]] if s is not None else list(v))

    def l1(a, b):
        A = np.outer(b, b) - np.outer(a, a)
        return np.abs(A[np.triu_indices(len(a))]).sum()

    corners = [row(c) for c in itertools.product([-1.0, 0.0, 1.0], repeat=d + 1)]
    worst = max(l1(a, b) for a in corners for b in corners)
    rng = np.random.default_rng(d)
    for _ in range(2000):
        a, b = (row(rng.uniform(-1.0, 1.0, d + 1)) for _ in range(2))
        assert l1(a, b) <= bound
    assert worst <= bound
    tight = 1.0 - 1e-9 if not fit_intercept else 0.9
    assert worst >= bound * tight - 1e-12


@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_cube_release_sees_each_entry_move_by_at_most_two(d, fit_intercept):
    # The doubled upper triangle less the constant's square: every entry moves
    # by at most 2 between any two box rows (brute force over the corners and
    # the centre and 2,000 random pairs), which is the l-infinity sensitivity
    # (times n) the K-norm mechanism is calibrated to. (For small d the
    # Laplace release has the smaller noise and is taken instead.)
    import itertools

    from dpgauss.accounting import PureDP
    from dpgauss.releases._linear import (
        INTERCEPT_SCALE,
        CubeMomentsMechanism,
        moments_mechanism,
    )

    n = 1000
    chosen = moments_mechanism(PureDP(1.0), n, d, fit_intercept)
    if isinstance(chosen, CubeMomentsMechanism):  # the rounding: ~1e-9 relative
        assert 2.0 / n <= chosen.sensitivity < 2.0 / n * (1.0 + 1e-8)
    q = d + (2 if fit_intercept else 1)
    constant = d if fit_intercept else None
    mech = CubeMomentsMechanism(sensitivity=2.0, epsilon=1.0, q=q, constant=constant)
    s = INTERCEPT_SCALE if fit_intercept else None

    def entries(v):
        a = np.array([*v[:-1], s, v[-1]] if s is not None else list(v))
        return np.outer(a, a)[mech.rows, mech.cols] * mech.weights

    grid = [entries(c) for c in itertools.product([-1.0, 0.0, 1.0], repeat=d + 1)]
    worst = max(np.abs(a - b).max() for a in grid for b in grid)
    assert worst == 2.0
    rng = np.random.default_rng(d)
    for _ in range(2000):
        a, b = (entries(rng.uniform(-1.0, 1.0, d + 1)) for _ in range(2))
        assert np.abs(a - b).max() <= 2.0


def test_the_cube_release_is_symmetric_with_the_public_constant():
    from dpgauss.accounting import PureDP
    from dpgauss.releases._linear import moments_mechanism

    mech = moments_mechanism(PureDP(1.0), 1000, 3, True)
    M = np.full((5, 5), 0.25)
    out = mech.randomise(M, np.random.default_rng(0))
    np.testing.assert_array_equal(out, out.T)
    assert out[3, 3] == 1.0  # the intercept's constant column, s = 1
    assert mech.draws == 1
    diag, off = mech.entry_variances()
    assert diag == pytest.approx(off / 4.0)


def test_slopes_lost_in_the_noise_give_the_zero_coefficient_model():
    # A target whose features explain 0.1% of its variance, in a box 20 times
    # its spread, at rho 0.05: the noise's error on the slopes (~1e-3 in box
    # units) dwarfs what they explain (~1e-6), so the release is the
    # intercept alone; the same rows with a strong signal keep their slopes.
    rng = np.random.default_rng(11)
    X = rng.uniform(-1.0, 1.0, size=(5000, 5))
    weak = 0.03 * X[:, 0] + rng.normal(0.0, 1.0, 5000)
    got = _fit(X, weak, ZCDP(0.05), target=(-20.0, 20.0), seed=1)
    np.testing.assert_array_equal(got.coef, np.zeros(5))
    assert got.intercept == pytest.approx(0.0, abs=0.5)
    strong = 3.0 * X[:, 0] + rng.normal(0.0, 1.0, 5000)
    got = _fit(X, strong, ZCDP(0.05), target=(-20.0, 20.0), seed=1)
    assert got.coef[0] == pytest.approx(3.0, abs=0.5)
