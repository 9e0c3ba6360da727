"""Per-group statistics (dpgauss.releases._groups): what they sum, and that a
replaced row, which may change its group, moves them by at most the
sensitivities their mechanisms are calibrated for."""

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.releases._groups import (
    WEIGHT_MARGIN,
    count_mechanism,
    labelled_moment_mechanism,
    labelled_square_mechanism,
    labelled_statistics,
    labelled_sum_mechanism,
    weighted_count_mechanism,
    weighted_moment_mechanism,
    weighted_statistics,
    weighted_sum_mechanism,
)
from dpgauss.utils._sums import CHUNK_ROWS

#: Rows a neighbour may hold instead of row 0: far, overflowing, not finite,
#: subnormal.
ODD_ROWS = [
    lambda d: np.full(d, 1e12),
    lambda d: np.full(d, -1e300),
    lambda d: np.full(d, np.nan),
    lambda d: np.r_[np.inf, np.zeros(d - 1)],
    lambda d: np.full(d, 5e-324),
]


def _clipped(X, center, radius):
    y = X - center
    norms = np.linalg.norm(y, axis=1)
    return y * np.minimum(1.0, radius / norms)[:, None]


def _upper_l1(D):
    return np.abs(D[np.triu_indices(D.shape[0])]).sum()


def test_labelled_statistics_sum_each_groups_clipped_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) * 2.0
    codes = rng.integers(-1, 3, 300)  # -1: a row in no group
    center, B = np.full(3, 0.5), 1.5
    counts, sums, moments = labelled_statistics(X, codes, 3, center, B, "per_class")
    _, _, pooled = labelled_statistics(X, codes, 3, center, B, "pooled")
    y = _clipped(X, center, B)
    assert counts.dtype == np.int64
    for k in range(3):
        rows = y[codes == k]
        assert counts[k] == rows.shape[0]
        np.testing.assert_allclose(sums[k], rows.sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(moments[k], rows.T @ rows, rtol=1e-12)
        np.testing.assert_array_equal(moments[k], moments[k].T)
    inside = y[codes >= 0]
    np.testing.assert_allclose(pooled, inside.T @ inside, rtol=1e-12)
    assert labelled_statistics(X, codes, 3, center, B, None)[2] is None


def test_labelled_statistics_of_an_empty_group_are_zero():
    X = np.ones((10, 2))
    counts, sums, moments = labelled_statistics(
        X, np.zeros(10, dtype=int), 2, np.zeros(2), 1.0, "per_class"
    )
    assert counts.tolist() == [10, 0]
    assert not sums[1].any()
    assert not moments[1].any()


def test_labelled_statistics_of_a_dask_array_match_numpy():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2 * CHUNK_ROWS + 50, 2))
    codes = rng.integers(0, 2, X.shape[0])
    dense = labelled_statistics(X, codes, 2, np.zeros(2), 2.0, "per_class")
    lazy = labelled_statistics(
        da.from_array(X, chunks=(CHUNK_ROWS // 2, 2)),
        codes,
        2,
        np.zeros(2),
        2.0,
        "per_class",
    )
    np.testing.assert_array_equal(dense[0], lazy[0])
    for a, b in zip(dense[1:], lazy[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_one_hot_weights_give_the_labelled_statistics():
    # The labelled form is the weighted one with one-hot weights (summed
    # another way, so equal up to rounding).
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    codes = rng.integers(0, 3, 400)
    onehot = np.eye(3)[codes]
    position = {"start": 0}

    def weigh(block):
        start = position["start"]
        position["start"] += block.shape[0]
        return onehot[start : start + block.shape[0]]

    center = np.full(3, 0.2)
    counts, sums, moments = weighted_statistics(
        X, weigh, np.tile(center, (3, 1)), [np.eye(3)] * 3, 1.0
    )
    ref = labelled_statistics(X, codes, 3, center, 1.0, "per_class")
    np.testing.assert_array_equal(counts, ref[0])
    np.testing.assert_allclose(sums, ref[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(moments, ref[2], rtol=1e-12, atol=1e-12)


def test_weighted_statistics_weigh_each_group_in_its_own_frame():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 2))
    r = rng.dirichlet(np.ones(3), 50) * (1.0 - WEIGHT_MARGIN)
    centers = rng.normal(size=(3, 2))
    transforms = [np.diag([1.0, 2.0]), np.eye(2), np.array([[1.0, 0.5], [0, 1]])]
    counts, sums, moments = weighted_statistics(
        X, lambda block: r, centers, transforms, 1.0
    )
    np.testing.assert_allclose(counts, r.sum(axis=0))
    for j in range(3):
        y = _clipped((X - centers[j]) @ transforms[j].T, 0.0, 1.0)
        np.testing.assert_allclose(sums[j], (r[:, j, None] * y).sum(axis=0))
        np.testing.assert_allclose(moments[j], (r[:, j, None] * y).T @ y)


@pytest.mark.parametrize("outer", ["per_class", "pooled"])
def test_a_row_changing_group_moves_the_labelled_statistics_within_the_bounds(outer):
    rng = np.random.default_rng(4)
    n, d, K, B = 60, 3, 3, 1.0
    X = rng.normal(size=(n, d))
    codes = rng.integers(0, K, n)
    center = np.zeros(d)
    sums_mech = labelled_sum_mechanism(ZCDP(1.0), n, d, K, B, 1)
    sums_l1 = labelled_sum_mechanism(PureDP(1.0), n, d, K, B, 1)
    moments_mech = labelled_moment_mechanism(ZCDP(1.0), n, d, K, B, 1)
    moments_l1 = labelled_moment_mechanism(PureDP(1.0), n, d, K, B, 1)
    base = labelled_statistics(X, codes, K, center, B, outer)
    for make in ODD_ROWS:
        for new_code in range(K):
            Y, other = X.copy(), codes.copy()
            Y[0], other[0] = make(d), new_code
            stats = labelled_statistics(Y, other, K, center, B, outer)
            assert all(np.all(np.isfinite(s)) for s in stats)
            dc = (stats[0] - base[0]).astype(float)
            assert np.linalg.norm(dc) <= count_mechanism(ZCDP(1.0)).sensitivity
            assert np.abs(dc).sum() <= count_mechanism(PureDP(1.0)).sensitivity
            ds = (stats[1] - base[1]) / n
            assert np.linalg.norm(ds) <= sums_mech.sensitivity
            assert np.abs(ds).sum() <= sums_l1.sensitivity
            if outer == "per_class":
                dm = (stats[2] - base[2]) / n
                assert np.linalg.norm(dm) <= moments_mech.sensitivity
                assert sum(_upper_l1(D) for D in dm) <= moments_l1.sensitivity


def test_a_replaced_row_moves_the_weighted_statistics_within_the_bounds():
    rng = np.random.default_rng(5)
    n, d, k, C = 40, 2, 3, 1.5
    X = rng.normal(size=(n, d))
    centers = rng.normal(size=(k, d))
    transforms = [np.eye(d)] * k

    fixed = rng.dirichlet(np.ones(k), n) * (1.0 - WEIGHT_MARGIN)
    base = weighted_statistics(X, lambda b: fixed, centers, transforms, C)
    mechs = {
        "l2": (
            weighted_count_mechanism(ZCDP(1.0), n, k, 1),
            weighted_sum_mechanism(ZCDP(1.0), n, d, k, C, 1),
            weighted_moment_mechanism(ZCDP(1.0), n, d, k, C, 1),
        ),
        "l1": (
            weighted_count_mechanism(PureDP(1.0), n, k, 1),
            weighted_sum_mechanism(PureDP(1.0), n, d, k, C, 1),
            weighted_moment_mechanism(PureDP(1.0), n, d, k, C, 1),
        ),
    }
    for make in ODD_ROWS:
        Y = X.copy()
        Y[0] = make(d)
        r = fixed.copy()
        r[0] = np.eye(k)[rng.integers(k)] * (1.0 - WEIGHT_MARGIN)  # another group
        stats = weighted_statistics(Y, lambda b, r=r: r, centers, transforms, C)
        assert all(np.all(np.isfinite(s)) for s in stats)
        diffs = [(a - b) / n for a, b in zip(stats, base, strict=True)]
        for diff, l2, l1 in zip(
            diffs[:2], mechs["l2"][:2], mechs["l1"][:2], strict=True
        ):
            assert np.linalg.norm(diff) <= l2.sensitivity
            assert np.abs(diff).sum() <= l1.sensitivity
        assert np.linalg.norm(diffs[2]) <= mechs["l2"][2].sensitivity
        assert sum(_upper_l1(D) for D in diffs[2]) <= mechs["l1"][2].sensitivity


@pytest.mark.parametrize("cost", [ZCDP(0.5), PureDP(1.0)])
def test_the_two_forms_calibrate_the_same_bounds(cost):
    # Main terms identical; the rounding terms are the same bound computed in
    # another order (and a looser dimension for the weighted moments' l1).
    n, d, k, C = 1000, 4, 3, 2.0
    labelled = labelled_sum_mechanism(cost, n, d, k, C)
    weighted = weighted_sum_mechanism(cost, n, d, k, C)
    assert weighted.sensitivity == pytest.approx(labelled.sensitivity, rel=1e-12)
    labelled = labelled_moment_mechanism(cost, n, d, k, C)
    weighted = weighted_moment_mechanism(cost, n, d, k, C)
    assert weighted.sensitivity >= labelled.sensitivity
    assert weighted.sensitivity == pytest.approx(labelled.sensitivity, rel=1e-9)
    main = {ZCDP: np.sqrt(2.0) * C**2 / n, PureDP: (d + 1.0) * C**2 / n}
    assert main[type(cost)] <= labelled.sensitivity <= main[type(cost)] * (1 + 1e-9)
    count = weighted_count_mechanism(cost, n, k)
    main = {ZCDP: np.sqrt(2.0) / n, PureDP: 2.0 / n}
    assert main[type(cost)] <= count.sensitivity <= main[type(cost)] * (1 + 1e-9)
    assert count_mechanism(cost).sensitivity == main[type(cost)] * n


def test_the_labelled_moments_are_one_symmetric_release():
    mech = labelled_moment_mechanism(ZCDP(1.0), 100, 2, 3, 1.0)
    blocks = np.array([np.eye(2)] * 3)
    released = mech.randomise_blocks(blocks, np.random.default_rng(0))
    assert released.shape == (3, 2, 2)
    for block in released:
        np.testing.assert_array_equal(block, block.T)


def test_pooled_squares_are_the_diagonal_of_the_pooled_moment():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(50, 3))
    codes = rng.integers(-1, 2, 50)  # rows in no group add nothing
    center = np.full(3, 0.1)
    _, _, squares = labelled_statistics(X, codes, 2, center, 1.5, "pooled_squares")
    _, _, moment = labelled_statistics(X, codes, 2, center, 1.5, "pooled")
    np.testing.assert_allclose(squares, np.diag(moment), rtol=1e-12)


def test_a_changed_row_moves_the_pooled_squares_within_their_bounds():
    # l1 2 B^2 / n and l2 sqrt(2) B^2 / n: attained by B e_1 against B e_2
    # (a class change or not), never exceeded by the odd rows.
    rng = np.random.default_rng(9)
    n, d, K, B = 40, 3, 2, 2.0
    X = rng.normal(size=(n, d))
    codes = rng.integers(0, K, n)
    center = np.zeros(d)
    l2 = labelled_square_mechanism(ZCDP(1.0), n, d, 1, B, 1).sensitivity
    l1 = labelled_square_mechanism(PureDP(1.0), n, d, 1, B, 1).sensitivity
    assert l2 >= np.sqrt(2.0) * B * B / n
    assert l1 >= 2.0 * B * B / n
    rows = [*(make(d) for make in ODD_ROWS), np.eye(d)[0] * 1e12, np.eye(d)[1] * 9]
    worst = 0.0
    for a in rows:
        for b in rows:
            for code in range(K):
                Y, Z, other = X.copy(), X.copy(), codes.copy()
                Y[0], Z[0], other[0] = a, b, code
                qa = labelled_statistics(Y, codes, K, center, B, "pooled_squares")[2]
                qb = labelled_statistics(Z, other, K, center, B, "pooled_squares")[2]
                assert np.all(np.isfinite(qa))
                assert np.all(qa >= 0.0)
                delta = (qa - qb) / n
                assert np.linalg.norm(delta) <= l2
                assert np.abs(delta).sum() <= l1
                worst = max(worst, np.abs(delta).sum())
    assert worst >= 0.99 * 2.0 * B * B / n  # the bound is attained
