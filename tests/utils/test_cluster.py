"""A ``dask.distributed`` cluster with worker processes gives numpy's release bit
for bit, and the ledger is written by the client only.

One ``LocalCluster`` (two worker processes, one thread each) for the module;
skipped when ``distributed`` is not installed.
"""

import sqlite3
import warnings

import numpy as np
import pytest

import dpgauss.utils._sums as sums
from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateLinearDiscriminantAnalysis,
    PrivateMean,
    PrivateStandardScaler,
    TailSensitiveCovariance,
)

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

# 5,000 rows in blocks of 700 against canonical chunks of 512 (set in the
# client; the workers receive the chunk size with each task): 10 chunks, most
# blocks cut a chunk in two.
N, BLOCK, CHUNK = 5_000, 700, 512
X = np.random.default_rng(0).normal(size=(N, 4)) * np.array([1.0, 2.0, 0.5, 3.0])
LABELS = np.repeat([0, 1], N // 2)
BOX = ([-8.0] * 4, [8.0] * 4)


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        # Start-up and shutdown notices of distributed are not dpgauss's.
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=50,
        )
        with cluster, distributed.Client(cluster) as c:
            yield c


def _fits():
    return [
        (PrivateCovariance(rho=0.5, data_norm=8.0, random_state=0), {}),
        (TailSensitiveCovariance(rho=0.5, data_norm=60.0, random_state=0), {}),
        (PrivateMean(bounds=BOX, rho=0.5, random_state=0), {}),
        (PrivateStandardScaler(bounds=BOX, rho=0.5, random_state=0), {}),
        (
            PrivateLinearDiscriminantAnalysis(
                classes=[0, 1], data_norm=8.0, rho=0.5, random_state=0
            ),
            {"y": LABELS},
        ),
    ]


def _numbers(est):
    return {
        k: np.asarray(v).tobytes()
        for k, v in vars(est).items()
        if k.endswith("_") and isinstance(v, (np.ndarray, float))
    }


def _spy_on_sqlite():
    """In a worker: record every SQLite connection it opens."""
    calls = []
    original = sqlite3.connect

    def connect(*args, **kwargs):
        calls.append(str(args[:1]))
        return original(*args, **kwargs)

    sqlite3.connect = connect
    sqlite3.spied_calls = calls


def _sqlite_calls():
    return list(getattr(sqlite3, "spied_calls", ["no spy"]))


def test_a_cluster_gives_numpy_s_release_and_the_client_keeps_the_ledger(
    client, tmp_path, monkeypatch
):
    # One test, so that pytest-xdist starts one cluster (about 4 s).
    monkeypatch.setattr(sums, "CHUNK_ROWS", CHUNK)
    rows = da.from_array(X, chunks=(BLOCK, -1))
    for est, kwargs in _fits():
        expected = _numbers(est.fit(X, **kwargs))
        assert expected
        assert _numbers(est.fit(rows, **kwargs)) == expected, type(est).__name__

    # A budget never travels to a worker: pickling one (a task carrying it)
    # fails in the client, and the workers open no SQLite file at all.
    path = tmp_path / "study.ledger"
    budget = PrivacyBudget(rho=2.0, path=path)

    def refuse(self):
        raise AssertionError("a PrivacyBudget was pickled")

    client.run(_spy_on_sqlite)
    monkeypatch.setattr(PrivacyBudget, "__getstate__", refuse)
    for est, kwargs in _fits()[:2]:
        est.set_params(budget=budget).fit(rows, **kwargs)
    events = PrivacyBudget.open(path).ledger()
    # Each fit's charges, in the order of the fits (one event per release).
    assert list(dict.fromkeys(e.estimator for e in events)) == [
        "PrivateCovariance",
        "TailSensitiveCovariance",
    ]
    assert len(events) == len(budget.ledger()) > 2
    assert all(calls == [] for calls in client.run(_sqlite_calls).values())
