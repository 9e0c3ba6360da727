"""Large inputs: Dask arrays and memory-mapped files give the numpy estimate."""

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateCovariance, TailSensitiveCovariance

da = pytest.importorskip("dask.array")


@pytest.mark.parametrize(
    "est",
    [
        PrivateCovariance(rho=1.0, data_norm=6.0, random_state=0),
        PrivateCovariance(
            method="separate", epsilon=2.0, data_norm=6.0, random_state=0
        ),
        TailSensitiveCovariance(rho=1.0, data_norm=60.0, random_state=0),
    ],
    ids=lambda e: type(e).__name__ + getattr(e, "method", ""),
)
def test_dask_array_gives_the_numpy_estimate(est):
    # Same random_state, same release, bit for bit: the sums are formed on the
    # same canonical chunks and added along the same tree whatever the blocks
    # (dpgauss.utils._canonical; every estimator in tests/utils/test_engines.py).
    X = np.random.default_rng(0).normal(size=(20_000, 5))
    a = est.fit(X).covariance_
    b = est.fit(da.from_array(X, chunks=(3_000, 5))).covariance_
    np.testing.assert_array_equal(a, b)
    assert est.n_features_in_ == 5


def test_dask_input_is_validated_lazily_and_before_spending():
    budget = PrivacyBudget(rho=1.0)
    X = np.random.default_rng(0).normal(size=(100, 3))
    X[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget).fit(
            da.from_array(X, chunks=(30, 3))
        )
    with pytest.raises(ValueError, match="minimum of 2"):
        PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget).fit(
            da.from_array(X[:1], chunks=(1, 3))
        )
    assert budget.ledger() == []


def test_dask_rows_of_unknown_count_are_refused_with_the_remedy():
    budget = PrivacyBudget(rho=1.0)
    X = da.from_array(np.random.default_rng(0).normal(size=(100, 3)), chunks=(30, 3))
    filtered = X[X[:, 0] > 0]  # boolean indexing: the row counts are unknown
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget).fit(filtered)
    assert budget.ledger() == []
    filtered.compute_chunk_sizes()
    PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget).fit(filtered)


def test_memory_mapped_input_for_every_estimator(tmp_path):
    path = tmp_path / "X.npy"
    X = np.random.default_rng(1).normal(size=(5000, 4))
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    for est in (
        PrivateCovariance(method="separate", rho=1.0, data_norm=5.0, random_state=0),
        TailSensitiveCovariance(rho=1.0, data_norm=5.0, random_state=0),
    ):
        # The same chunks and the same tree in memory and from the file.
        np.testing.assert_array_equal(
            est.fit(mapped).covariance_, est.fit(X).covariance_
        )


def test_memory_mapped_file_is_read_with_file_reads(tmp_path, monkeypatch):
    # Pages touched through a mapping count as the process's resident memory;
    # a file-backed memmap is therefore read chunk by chunk with ordinary file
    # reads into one buffer (sums.read_into).
    import dpgauss.utils._sums as sums

    path = tmp_path / "X.npy"
    X = np.random.default_rng(2).normal(size=(1000, 3))
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    assert sums.file_backed(mapped)
    calls = []
    original = sums.read_into
    monkeypatch.setattr(
        sums, "read_into", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    monkeypatch.setattr(sums, "CHUNK_ROWS", 300)
    est = PrivateCovariance(rho=1.0, data_norm=5.0, random_state=0).fit(mapped)
    assert len(calls) >= 3 * 4  # finiteness check, mean pass, second moment pass
    np.testing.assert_array_equal(
        est.covariance_,
        PrivateCovariance(rho=1.0, data_norm=5.0, random_state=0).fit(X).covariance_,
    )
    bad = tmp_path / "bad.npy"
    X[500, 1] = np.nan
    np.save(bad, X)
    with pytest.raises(ValueError, match="NaN or infinity"):
        PrivateCovariance(rho=1.0, data_norm=5.0).fit(np.load(bad, mmap_mode="r"))


def test_copy_on_write_memmap_is_read_from_memory(tmp_path):
    # A copy-on-write map's changes live in memory only; reading the file would
    # ignore them (a row redacted in memory would still be read).
    path = tmp_path / "X.npy"
    X = np.random.default_rng(4).normal(size=(500, 3))
    np.save(path, X * 100)
    mapped = np.load(path, mmap_mode="c")
    mapped /= 100
    a = PrivateCovariance(rho=1.0, data_norm=5.0, random_state=0).fit(mapped)
    b = PrivateCovariance(rho=1.0, data_norm=5.0, random_state=0).fit(X)
    # (X * 100) / 100 is X up to rounding: close, not equal, rows.
    np.testing.assert_allclose(a.covariance_, b.covariance_, rtol=1e-12, atol=1e-15)
