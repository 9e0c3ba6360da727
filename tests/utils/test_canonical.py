"""One release whatever the engine: canonical chunks, one tree, the same bits.

The estimators' part (every Dask-capable estimator, bit for bit across numpy,
memory maps and Dask chunkings) is in ``test_engines.py``; a
``dask.distributed`` cluster in ``test_cluster.py``.
"""

import itertools

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import dpgauss.utils._sums as sums
from dpgauss.releases._groups import labelled_statistics, weighted_statistics
from dpgauss.releases._moments import box_moments
from dpgauss.utils._canonical import cover_nodes, dyadic_cover, tree_reduce

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


@pytest.mark.parametrize("stop", range(1, 40))
def test_dyadic_cover_partitions_any_range_into_aligned_ranges(stop):
    for start in range(stop):
        cover = list(dyadic_cover(start, stop))
        position = start
        for i, k in cover:
            assert i * 2**k == position  # aligned, consecutive, left to right
            position += 2**k
        assert position == stop
        # Maximal: no two neighbours join into an aligned range inside.
        for (i, k), (j, h) in itertools.pairwise(cover):
            assert not (k == h and i % 2 == 0 and j == i + 1)


def test_block_nodes_give_the_whole_pass_s_tree_wherever_the_cuts_fall():
    # Random floats: any other order of additions would change the last bits.
    rng = np.random.default_rng(0)
    leaves = [rng.normal(size=3) * 10.0 ** rng.uniform(-8, 8) for _ in range(37)]
    whole = tree_reduce(len(leaves), leaves.__getitem__)
    for _ in range(50):
        cuts = np.sort(rng.choice(np.arange(1, 37), rng.integers(0, 8), False))
        known = {}
        for a, z in itertools.pairwise([0, *cuts, 37]):
            known.update(cover_nodes(a, z, leaves.__getitem__))
        np.testing.assert_array_equal(tree_reduce(37, known=known), whole)


def test_up_to_three_chunks_add_as_a_running_sum():
    # The canonical tree adds (p0 + p1) + p2: numpy releases of n <= 3 C rows
    # (the release battery's) are those of the former running sum.
    rng = np.random.default_rng(1)
    p = [rng.normal(size=4) * 10.0 ** rng.uniform(-8, 8) for _ in range(3)]
    for m in (1, 2, 3):
        running = np.zeros(4)
        for part in p[:m]:
            running += part
        np.testing.assert_array_equal(tree_reduce(m, p.__getitem__), running)


def _chunkings(n):
    # Blocks of every kind: multiples of C, not, smaller than C, one block,
    # uneven, columns split too.
    c = sums.CHUNK_ROWS
    cuts = sorted({0, n, *(v for v in (1, c - 1, 2 * c + 5) if v < n)})
    uneven = tuple(int(v) for v in np.diff(cuts))
    empty = (0, n // 2, 0, n - n // 2, 0)  # blocks of no rows
    rows = [c, 3 * c, 100, 333, c // 3, n, uneven, empty]
    return [(r, -1) for r in rows] + [(250, 2)]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(sums, "CHUNK_ROWS", 64)
    return 64


@pytest.mark.parametrize("n", [1000, 64 * 7, 65])
def test_dask_sums_are_numpy_s_bit_for_bit(small_chunks, n):
    rng = np.random.default_rng(2)
    X = rng.standard_t(3, size=(n, 3)) * np.array([1.0, 1e3, 1e-3])
    center, radius = np.array([0.1, 5.0, 0.0]), 40.0
    frame = rng.normal(size=(3, 3))
    bits = sums.fixed_point_bits(n)
    codes = rng.integers(-1, 3, n)

    def passes(A):
        out = [
            *sums.clipped_sums(A, center, radius, trace_bits=bits),
            *sums.clipped_sums(A, center, radius, transform=frame),
            *box_moments(A, center, np.array([1.0, 1e3, 1e-2])),
            sums.group_means(A, np.where(codes < 0, -1, codes % 2), 2),
        ]
        for outer in ("pooled", "per_class", "pooled_squares"):
            out += labelled_statistics(A, codes, 3, center, radius, outer)[1:]
        out += weighted_statistics(
            A, _half, np.zeros((2, 3)), [np.eye(3), frame], radius
        )
        return out

    expected = passes(X)
    for chunks in _chunkings(n):
        with dask.config.set(scheduler="threads"):
            got = passes(da.from_array(X, chunks=chunks))
        for a, b in zip(expected, got, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=str(chunks))
    # F-ordered rows: each chunk is made C-contiguous before its products.
    for a, b in zip(expected, passes(np.asfortranarray(X)), strict=True):
        np.testing.assert_array_equal(a, b)


def _half(block):
    # Each row's weight split between two groups (a public rule).
    return np.full((block.shape[0], 2), 0.5 - 2.0**-30)


def test_workers_raise_no_floating_point_warning_whatever_the_rows(small_chunks):
    # A Dask worker runs outside the fit's errstate: each chunk's computation
    # sets its own (with warnings as errors here, one would fail the pass).
    big = np.finfo(np.float64).max
    X = np.array([[big, -big, 1.0], [-big, big, 5e-324], [np.nan, 0.0, np.inf]] * 50)
    rows = da.from_array(X, chunks=(37, 2))
    expected = sums.clipped_sums(X, np.array([-big, big, 0.0]), 1e140)
    with dask.config.set(scheduler="threads"):
        got = sums.clipped_sums(rows, np.array([-big, big, 0.0]), 1e140)
        box_moments(rows, np.zeros(3), np.full(3, 1e-300))
    # One group whose first chunk sums to +inf and second to -inf: their sum
    # is NaN (a failed candidate), silently, in a worker and in the client.
    signs = np.repeat([1.0, -1.0, 0.0], [64, 64, 22])[:, None]
    for A in (big * signs, da.from_array(big * signs, chunks=(50, -1))):
        assert np.isnan(sums.group_means(A, np.zeros(150, dtype=int), 1)).all()
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_partial_sums_are_counted_the_same_on_every_engine(small_chunks):
    X = np.zeros((1000, 2))
    for chunks in _chunkings(1000):
        assert sums.n_partial_sums(da.from_array(X, chunks=chunks)) == 16
    assert sums.n_partial_sums(X) == 16


@pytest.mark.parametrize("shape", [(8192, 50), (64, 3), (1000, 7)])
def test_chunk_products_do_not_depend_on_threads_or_alignment(shape):
    # What makes a worker's chunk sums the client's (module docstring of
    # dpgauss.utils._canonical, point 2): on this machine's BLAS, the number
    # of threads and the buffer's alignment leave every bit in place.
    rng = np.random.default_rng(3)
    y = rng.normal(size=shape) * 10.0 ** rng.uniform(-5, 5, size=(shape[0], 1))
    frame = rng.normal(size=(shape[1], shape[1]))

    def products(a):
        return a.T @ a, a @ frame.T, a.sum(axis=0), np.einsum("ij,ij->i", a, a)

    with threadpool_limits(1):
        single = products(y)
    shifted = np.empty(y.size + 1)[1:].reshape(shape)
    shifted[...] = y
    for other in (products(y), products(shifted)):
        for a, b in zip(single, other, strict=True):
            np.testing.assert_array_equal(a, b)
