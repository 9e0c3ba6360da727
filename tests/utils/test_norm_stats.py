"""Streamed norm statistics (dpgauss.utils._norm_stats)."""

import numpy as np
import pytest

from dpgauss.releases._radius import scan_counts
from dpgauss.releases._threshold_search import clipped_levels, search_levels
from dpgauss.utils._norm_stats import norm_statistics
from dpgauss.utils._sums import CHUNK_ROWS, fixed_point_bits, row_norms


def test_chunked_statistics_are_the_whole_vectors_integers(tmp_path):
    # Rows spanning several chunks, with far, huge and non-finite rows: the
    # counts and fixed-point sums are exactly those of the whole norm vector
    # (integers add whatever the chunking), on numpy, memmap and Dask rows.
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(0)
    n = 2 * CHUNK_ROWS + 17
    X = rng.standard_t(2, size=(n, 4)).astype(np.float32)
    X[5] = [1e30, -1e30, 0, 1]
    X[CHUNK_ROWS + 3] = [np.inf, 0, 0, 0]  # as under assume_finite
    np.save(tmp_path / "x.npy", X)
    center = np.array([0.1, 0.0, -0.2, 3.0])
    norms = row_norms(X, center)
    bits, levels = fixed_point_bits(n), np.r_[0.0, search_levels(7.0)]
    want_counts = scan_counts(norms, 50.0)
    want_sums = clipped_levels(norms, 7.0, levels, bits)
    for rows in (X, np.load(tmp_path / "x.npy", mmap_mode="r"), da.from_array(X, 7001)):
        got = norm_statistics(rows, center, scan_counts, 50.0)
        np.testing.assert_array_equal(got, want_counts)
        got = norm_statistics(rows, center, clipped_levels, 7.0, levels, bits)
        np.testing.assert_array_equal(got, want_sums)
    assert np.isfinite(X[CHUNK_ROWS + 3]).sum() == 3  # the caller's rows untouched
