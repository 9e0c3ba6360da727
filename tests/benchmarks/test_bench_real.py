"""Smoke test of benchmarks/bench_real.py: one small job and the report.

Synthetic data only (no statsmodels) and no peers: about a second.
"""

import math
import os

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks")


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(os.path.abspath(BENCH))
    import _baselines
    import _real_report
    import bench_real

    return bench_real, _baselines, _real_report


def test_one_job_and_report(bench, tmp_path):
    bench_real, _, report = bench
    only = ["PrivateMean", "PrivateCovariance", "PrivateStandardScaler"]
    rows, peer_jobs = bench_real.run_job("student_t3", 150, "eps1", 0, only)
    assert {r["estimator"] for r in rows} == set(only)
    for r in rows:
        assert r["status"] in {"ok", "refused"}, r["message"]
        assert math.isfinite(r["base_err"])
    assert {job[1] for job in peer_jobs} >= {"diffprivlib.mean", "opendp.mean"}
    report.write(rows, str(tmp_path / "smoke"), "smoke", 1.0)
    assert "## PrivateMean (mean)" in (tmp_path / "smoke.md").read_text()


@pytest.mark.parametrize("privacy", [{"epsilon": 1e-3}, {"rho": 1e-6}])
def test_baselines_stay_in_the_box(bench, privacy):
    # Rows at 1e12 and a tiny budget: the clip and the truncation keep the
    # releases within the box whatever the noise.
    _, B, _ = bench
    rng = np.random.default_rng(0)
    X = np.full((20, 3), 1e12)
    lower, upper = np.zeros(3), np.ones(3)
    mean = B.box_mean(X, lower, upper, privacy, rng)
    assert np.all((mean >= lower) & (mean <= upper))
    _, var = B.box_moments(X, lower, upper, privacy, rng)
    assert np.all((var >= 0) & (var <= 0.25))
    assert B.majority_class(np.zeros(20), np.array([0, 1]), privacy, rng) in (0, 1)
