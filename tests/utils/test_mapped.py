"""Rows under a row-wise map, read chunk by chunk (dpgauss.utils._mapped)."""

import numpy as np
import pytest

import dpgauss.utils._sums as sums
from dpgauss.utils._mapped import MappedRows, mapped_rows


def _augment(rows, c, out=None):
    rows = np.asarray(rows, dtype=np.float64)
    mapped = np.hstack([2.0 * rows, np.full((rows.shape[0], 1), c)])
    if out is None:
        return mapped
    out[...] = mapped
    return out


def test_chunks_indexing_and_the_whole_array_are_the_map_of_the_rows(
    monkeypatch, tmp_path
):
    monkeypatch.setattr(sums, "CHUNK_ROWS", 64)
    X = np.random.default_rng(0).normal(size=(1000, 3)).astype(np.float32)
    whole = _augment(X, 7.0)
    path = tmp_path / "rows.npy"
    np.save(path, X)
    for rows in (X, np.load(path, mmap_mode="r")):
        Z = mapped_rows(rows, _augment, 7.0, width=4)
        assert isinstance(Z, MappedRows)
        assert Z.shape == (1000, 4)
        # Copies: a pass maps every chunk into one buffer, which the next
        # chunk overwrites.
        chunks = [chunk.copy() for chunk in sums.iter_chunks(Z)]
        assert len(chunks) == sums.n_partial_sums(Z) == 16
        assert np.array_equal(np.concatenate(chunks), whole)
        assert np.array_equal(Z[[3, 999, 3]], whole[[3, 999, 3]])
        assert np.array_equal(Z[10:20, 2:], whole[10:20, 2:])
        assert np.array_equal(np.asarray(Z), whole)
        # The canonical sums: the same bits as over the mapped array itself.
        got = sums.clipped_sums(Z, np.zeros(4), 5.0)
        want = sums.clipped_sums(whole, np.zeros(4), 5.0)
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_a_dask_array_is_mapped_in_its_blocks_with_the_same_sums(monkeypatch):
    da = pytest.importorskip("dask.array")
    monkeypatch.setattr(sums, "CHUNK_ROWS", 64)
    X = np.random.default_rng(1).normal(size=(1000, 3))
    Z = mapped_rows(da.from_array(X, chunks=(333, 2)), _augment, 7.0, width=4)
    assert sums.is_dask_array(Z)
    assert Z.shape == (1000, 4)
    got = sums.clipped_sums(Z, np.zeros(4), 5.0)
    want = sums.clipped_sums(_augment(X, 7.0), np.zeros(4), 5.0)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_indexing_has_numpys_semantics_on_the_mapped_array():
    # An integer row with a column, and row and column arrays (paired point
    # by point), select what they select in the mapped array; they raised or
    # returned the outer product before.
    X = np.random.default_rng(2).normal(size=(7, 3))
    Z, whole = mapped_rows(X, _augment, 7.0, width=4), _augment(X, 7.0)
    for index in (
        0,
        -1,
        (0, 1),
        (-1, slice(None)),
        ([0, 1], [1, 3]),
        ([0, 2], 1),
        (slice(None), [0, 3]),
        slice(None, None, -2),
        (slice(1, 6, 3), -1),
        np.arange(7) % 2 == 0,
        (np.arange(7) % 2 == 0, 3),
        np.array([[0, 1], [2, 6]]),
    ):
        assert np.array_equal(Z[index], whole[index]), index
    for index in (Ellipsis, (Ellipsis, 0), None):
        with pytest.raises(IndexError, match="must select rows"):
            Z[index]
