"""Pair differences (dpgauss.releases._pairs): the pairing and the rows z."""

import numpy as np
import pytest

from dpgauss.releases._pairs import PAIR_BLOCK, PAIR_GROUP, PairDifferences, Pairing
from dpgauss.releases._radius import scan_counts
from dpgauss.releases._threshold_search import clipped_levels, search_levels
from dpgauss.utils._norm_stats import norm_statistics
from dpgauss.utils._sums import clipped_sums, fixed_point_bits, row_norms

GROUP_ROWS = PAIR_BLOCK * PAIR_GROUP
# Sizes with one group, several groups with a short last block, n odd.
SIZES = [
    2,
    7,
    10,
    1000,
    GROUP_ROWS,
    GROUP_ROWS + 1,
    3 * GROUP_ROWS + 2 * PAIR_BLOCK + 5,
]


@pytest.mark.parametrize("n", SIZES)
def test_each_row_is_in_at_most_one_pair(n):
    pairing = Pairing(n, np.random.default_rng(n))
    first, second = pairing.indices()
    assert first.size == second.size == n // 2
    used = np.concatenate([first, second])
    assert np.unique(used).size == used.size == 2 * (n // 2)
    assert used.min() >= 0
    assert used.max() < n


@pytest.mark.parametrize("n", SIZES)
def test_the_pairing_is_a_function_of_the_generator_alone(n):
    # Pairing never sees the data: the same seed gives the same pairs, and
    # two datasets paired with it are read at the same rows.
    a, b = Pairing(n, np.random.default_rng(5)), Pairing(n, np.random.default_rng(5))
    for x, y in zip(a.indices(), b.indices(), strict=True):
        np.testing.assert_array_equal(x, y)
    first, second = a.indices()
    for seed in (0, 1):
        X = np.random.default_rng(seed).normal(size=(n, 2)) * 10.0**seed
        Z = PairDifferences(X, Pairing(n, np.random.default_rng(5))).rows()
        np.testing.assert_array_equal(Z, X[first] / 2 - X[second] / 2)


@pytest.mark.parametrize("n", [7, 1000, GROUP_ROWS])
def test_one_group_is_the_uniform_pairing(n):
    # Up to one group the pairing is the draw used before (rng.permutation).
    order = np.random.default_rng(3).permutation(n)
    first, second = Pairing(n, np.random.default_rng(3)).indices()
    np.testing.assert_array_equal(first, order[: n // 2])
    np.testing.assert_array_equal(second, order[n // 2 : 2 * (n // 2)])


@pytest.mark.parametrize("n", [2, 7, 10, GROUP_ROWS + 3])
def test_replacing_one_row_changes_at_most_one_pair(n):
    # The privacy of the pairs path: for a pairing drawn independently of the
    # data, neighbours' pair rows z differ in at most one row, whichever row is
    # replaced and however far (1e300 keeps x/2 - x'/2 finite).
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3))
    base = PairDifferences(X, Pairing(n, np.random.default_rng(1))).rows()
    rows = range(n) if n < 100 else rng.choice(n, size=20, replace=False)
    for j in rows:
        Y = X.copy()
        Y[j] = [1e300, -1e300, 1e12]
        other = PairDifferences(Y, Pairing(n, np.random.default_rng(1)))
        z = other.rows()
        assert np.any(base != z, axis=1).sum() <= 1
        assert np.all(np.isfinite(z))
        counts = other.norm_statistics(scan_counts, 1e3)
        np.testing.assert_array_equal(
            counts, scan_counts(row_norms(z, 0.0 * X[0]), 1e3)
        )


def _engines(X, tmp_path):
    """The same rows as numpy, a memory-mapped .npy file and a Dask array."""
    da = pytest.importorskip("dask.array")
    path = tmp_path / "rows.npy"
    np.save(path, X)
    return {
        "numpy": X,
        "memmap": np.load(path, mmap_mode="r"),
        "dask": da.from_array(X, chunks=(5_000, 2)),
    }


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_engine_forms_the_same_pairs_and_statistics(tmp_path, dtype):
    # Same z rows in the same order, and the exact integer statistics the
    # fit uses (scan counts, fixed-point sums at the search's levels) agree
    # on numpy, memory-mapped and Dask rows, for the pairs and the rows.
    n = 2 * GROUP_ROWS + 3 * PAIR_BLOCK + 1
    X = (np.random.default_rng(0).standard_t(3, size=(n, 3)) * 5).astype(dtype)
    bits, levels = fixed_point_bits(n // 2), search_levels(4.0)
    first, second = Pairing(n, np.random.default_rng(2)).indices()
    want = X[first].astype(np.float64) / 2 - X[second].astype(np.float64) / 2
    center = np.array([0.5, -1.0, 2.0])
    norms = row_norms(X, center)
    for name, rows in _engines(X, tmp_path).items():
        pairs = PairDifferences(rows, Pairing(n, np.random.default_rng(2)))
        np.testing.assert_array_equal(pairs.rows(), want, err_msg=name)
        got = pairs.norm_statistics(clipped_levels, 4.0, levels, bits)
        expect = clipped_levels(row_norms(want, np.zeros(3)), 4.0, levels, bits)
        np.testing.assert_array_equal(got, expect, err_msg=name)
        counts = norm_statistics(rows, center, scan_counts, 30.0)
        np.testing.assert_array_equal(counts, scan_counts(norms, 30.0), err_msg=name)


def test_pair_rows_have_half_the_covariance_whatever_the_mean():
    rng = np.random.default_rng(0)
    C = np.array([[2.0, 0.5], [0.5, 1.0]])
    X = rng.multivariate_normal([1e3, -50.0], C, size=200_000)
    Z = PairDifferences(X, Pairing(X.shape[0], rng)).rows()
    # Sampling error of a 2x2 second moment over 1e5 rows: about 0.01.
    np.testing.assert_allclose(Z.T @ Z / Z.shape[0], C / 2, atol=0.02)


def test_sorted_rows_are_mixed_as_by_the_uniform_pairing():
    # Four classes sorted by label (the reason for a random pairing): the
    # blockwise pairs' second moment is within sampling error of the
    # covariance, as a uniform pairing's; a pairing of neighbours, or of
    # whole blocks with one partner each, is several times off.
    rng = np.random.default_rng(0)
    n, d = 100_000, 10
    means = rng.normal(size=(4, d)) * 3
    X = rng.normal(size=(n, d)) + np.repeat(means, n // 4, axis=0)
    C = np.cov(X.T)
    errors = []
    for seed in range(5):
        Z = PairDifferences(X, Pairing(n, np.random.default_rng(seed))).rows()
        errors.append(np.linalg.norm(2 * Z.T @ Z / Z.shape[0] - C) / np.linalg.norm(C))
    # Measured (bench_memory.py --mixing): the uniform pairing's largest
    # relative error over 20 pairings 0.009; plain 1,024-row blocks 0.12.
    assert max(errors) < 0.02


def test_a_dask_graph_of_pairs_carries_nothing_n_long(monkeypatch):
    # The graph holds slices of the array's blocks and each group's few
    # numbers (its blocks' ranges, a seed), not an index per row: pickled,
    # well under one byte per row (an n-length index array is eight).
    import pickle

    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    n = 200_000
    X = da.random.default_rng(0).standard_normal((n, 3), chunks=(10_000, 3))
    captured = {}

    def capture(*tasks, **kwargs):
        graph = {}
        for task in tasks:
            graph.update(dict(task.__dask_graph__()))
        captured["graph"] = graph
        return tuple(task.compute() for task in tasks)

    monkeypatch.setattr(dask, "compute", capture)
    counts = PairDifferences(X, Pairing(n, np.random.default_rng(0))).norm_statistics(
        scan_counts, 10.0
    )
    assert counts[-1] == n // 2  # every pair's norm above the smallest radius
    assert len(pickle.dumps(captured["graph"])) < n


@pytest.mark.parametrize(
    "dtype", [np.float64, ">f8", np.float16, np.uint64, ">i4", np.int8]
)
def test_pairs_read_from_a_file_at_any_offset_and_byte_order(tmp_path, dtype):
    # The file reads (readinto at offset + row * width) give the rows a gather
    # from memory gives: a raw file with an odd header of 13 bytes, a .npy file,
    # big-endian and narrow dtypes, n odd over three groups with a short last
    # block, all pairs and the first few (the coarse range's count).
    from dpgauss.utils._sums import file_backed

    n, d = 2 * GROUP_ROWS + PAIR_BLOCK + 7, 3
    rng = np.random.default_rng(4)
    X = (rng.standard_normal((n, d)) * 40).astype(dtype)
    X[0] = np.iinfo(X.dtype).max if X.dtype.kind in "iu" else np.finfo(X.dtype).max
    raw = tmp_path / "rows.bin"
    raw.write_bytes(b"x" * 13 + X.tobytes())
    np.save(tmp_path / "rows.npy", X)
    files = {
        "raw": np.memmap(raw, dtype=X.dtype, mode="r", offset=13, shape=(n, d)),
        "npy": np.load(tmp_path / "rows.npy", mmap_mode="r"),
    }
    wide = X.astype(np.float64)
    for count in (None, 1_000):
        pairing = Pairing(n, np.random.default_rng(9), count=count)
        first, second = pairing.indices()
        want = wide[first] / 2 - wide[second] / 2
        for name, rows in files.items():
            assert file_backed(rows), name
            got = PairDifferences(rows, pairing).rows()
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {count}")


@pytest.mark.parametrize("cache", [True, False])
def test_kept_pair_norms_give_the_statistics_of_a_new_gather(
    tmp_path, monkeypatch, cache
):
    # The pairs' norms kept after the first statistic (numpy, memmap) give
    # every later statistic the integers a fresh gather gives (the second
    # call is the one served from the kept norms), with rows at 0, 1e+-300
    # and ties; with the cache off (NORM_CACHE_PAIRS = 0) nothing is kept.
    import dpgauss.releases._pairs as pairs_module

    if not cache:
        monkeypatch.setattr(pairs_module, "NORM_CACHE_PAIRS", 0)
    n = GROUP_ROWS + 2 * PAIR_BLOCK + 3
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, 3))
    X[rng.choice(n, 40, replace=False)] = [1e300, -1e300, 1.0]
    X[rng.choice(n, 40, replace=False)] = [1e-300, 0.0, 0.0]
    X[rng.choice(n, 40, replace=False)] = 0.0
    first, second = Pairing(n, np.random.default_rng(3)).indices()
    norms = row_norms(X[first] / 2 - X[second] / 2, np.zeros(3))
    bits, levels = fixed_point_bits(n // 2), np.concatenate([[0.0], search_levels(2.0)])
    for name, rows in _engines(X, tmp_path).items():
        pairs = PairDifferences(rows, Pairing(n, np.random.default_rng(3)))
        for _ in range(2):
            np.testing.assert_array_equal(
                pairs.norm_statistics(scan_counts, 1e3), scan_counts(norms, 1e3)
            )
            np.testing.assert_array_equal(
                pairs.norm_statistics(clipped_levels, 2.0, levels, bits),
                clipped_levels(norms, 2.0, levels, bits),
                err_msg=name,
            )
        kept = cache and name != "dask"
        assert (pairs._norms is not None) == kept, name


def test_pair_sums_in_reused_buffers_equal_those_of_fresh_chunks(tmp_path):
    # clipped_sums forms the chunks of z in two buffers used again for every
    # chunk; the sums equal, bit for bit, those of fresh copies of the chunks
    # (rows at 1e+-300 and 0 included), on every engine.
    n = 2 * GROUP_ROWS + 7
    rng = np.random.default_rng(8)
    X = rng.standard_normal((n, 3))
    X[rng.choice(n, 30, replace=False)] = [1e300, -1e300, 2.0]
    X[rng.choice(n, 30, replace=False)] = 0.0
    for name, rows in _engines(X, tmp_path).items():
        pairs = PairDifferences(rows, Pairing(n, np.random.default_rng(4)))
        fresh = pairs.map(clipped_sums, np.zeros(3), 2.0)  # new arrays per chunk
        got = pairs.clipped_sums(2.0)
        want = [np.zeros(3), np.zeros((3, 3))]
        for y, yy in fresh:
            want[0] += y
            want[1] += yy
        np.testing.assert_array_equal(got[0], want[0], err_msg=name)
        np.testing.assert_array_equal(got[1], want[1], err_msg=name)


@pytest.mark.parametrize("n", SIZES)
def test_group_rows_are_the_blocks_ranges_in_order(n):
    # The vectorised rows of a group's blocks equal the concatenated
    # ranges (the short last block cut at n) they replaced.
    from dpgauss.releases._pairs import _block_ranges, _ranges

    pairing = Pairing(n, np.random.default_rng(n))
    for t in range(pairing.groups):
        blocks = pairing.group_blocks(t)
        if blocks is None:
            continue
        want = np.concatenate([np.arange(a, z) for a, z in _block_ranges(n, blocks)])
        got = _ranges(n, blocks)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
