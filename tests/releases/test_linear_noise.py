"""The linear regression's mechanisms (dpgauss.releases._linear_noise): the
box rows' sensitivities, brute-forced over corners and random rows."""

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.releases._linear_noise import mean_mechanism


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

    from dpgauss.releases._linear_noise import INTERCEPT_SCALE, box_l1

    s = INTERCEPT_SCALE if fit_intercept else None
    bound = box_l1(d, fit_intercept)

    def row(v):
        return np.array([*v[:-1], s, v[-1]] if s is not None else list(v))

    def upper(rows):  # each row's upper triangle of a a^T, one row per row
        rows = np.atleast_2d(rows)
        i, j = np.triu_indices(rows.shape[1])
        return rows[:, i] * rows[:, j]

    def l1(a, b):
        return np.abs(upper(b) - upper(a)).sum(axis=-1)

    corners = upper([row(c) for c in itertools.product([-1.0, 0.0, 1.0], repeat=d + 1)])
    # Every pair of corners, a block of first rows at a time (vectorised).
    worst = max(
        float(np.abs(corners[:, None, :] - block[None, :, :]).sum(axis=-1).max())
        for block in np.array_split(corners, max(1, len(corners) // 64))
    )
    rng = np.random.default_rng(d)
    a = np.array([row(v) for v in rng.uniform(-1.0, 1.0, (2000, d + 1))])
    b = np.array([row(v) for v in rng.uniform(-1.0, 1.0, (2000, d + 1))])
    assert np.all(l1(a, b) <= bound)
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
    from dpgauss.releases._linear_noise import (
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
    from dpgauss.releases._linear_noise import moments_mechanism

    mech = moments_mechanism(PureDP(1.0), 1000, 3, True)
    M = np.full((5, 5), 0.25)
    out = mech.randomise(M, np.random.default_rng(0))
    np.testing.assert_array_equal(out, out.T)
    assert out[3, 3] == 1.0  # the intercept's constant column, s = 1
    assert mech.draws == 1
    diag, off = mech.entry_variances()
    assert diag == pytest.approx(off / 4.0)


@pytest.mark.parametrize("total", [ZCDP(0.3), PureDP(0.3)])
def test_the_mean_is_calibrated_to_two_over_n(total):
    # t in [-1, 1]: replacing a row moves its mean by at most 2 / n; the
    # rounding terms add about 3e-10 of it at n = 1000 (5e-13 absolute).
    mech = mean_mechanism(total, 1000, 4, True)
    assert 2.0 / 1000 <= mech.sensitivity < 2.0 / 1000 * (1.0 + 1e-9)
