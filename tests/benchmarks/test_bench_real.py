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


def _rows(estimator, errs, base_errs, status="ok"):
    return [
        {
            "data": "t",
            "privacy": "eps1",
            "n": 150,
            "seed": seed,
            "estimator": estimator,
            "task": "mean",
            "hint": "bounds",
            "status": status,
            "warned": 0,
            "flagged": 0,
            "err": e if status == "ok" else math.nan,
            "base_err": b,
            "np_err": 0.01,
            "message": "",
        }
        for seed, (e, b) in enumerate(zip(errs, base_errs, strict=True))
    ]


def test_a_refusal_is_behind_a_peer_only_below_the_baseline(bench):
    # A refusal leaves the user the baseline: a peer at 1.5x the baseline is
    # not ahead of it, a peer at 0.5x is; ten seeds apart by a factor two are
    # significant at 0.05, three are not (a permutation test's smallest
    # p-value on 3 + 3 labels is 1/20).
    _, _, report = bench
    base = [1.0] * 10
    for peer, expected in ((1.5, "0 (row, peer)"), (0.5, "1 (row, peer)")):
        rows = _rows("PrivateMean", base, base, status="refused")
        rows += _rows("diffprivlib.mean", [peer] * 10, base)
        text = "\n".join(report._targets(report.summarize(rows)))
        assert f"Ahead of the peers: {expected}" in text
    spread = np.exp(np.random.default_rng(0).normal(0.0, 0.2, size=(2, 10)))
    assert report._significantly_below(0.5 * spread[0], spread[1])
    assert not report._significantly_below(0.5 * spread[0, :3], spread[1, :3])


def test_a_row_is_held_to_one_baseline_policy(bench):
    # The covariance's two simple answers, the private diagonal (drawn per
    # seed) and the zero matrix (error 1): a row is held to the one with the
    # smaller median, for every seed, not to the per-seed minimum. A
    # diagonal whose errors straddle 1 has median 1.1, so the zero matrix
    # (1.0) is the row's baseline; the per-seed minimum would have median 0.9.
    _, _, report = bench
    base = [0.7, 0.8, 0.9, 0.95, 1.05, 1.15, 1.25, 1.3, 1.4, 1.5]
    rows = [dict(r, base_alt=1.0) for r in _rows("PrivateCovariance", base, base)]
    rec = report.summarize(rows)[("PrivateCovariance", "mean", "t", "eps1", 150)]
    assert rec["base_errs"] == [1.0] * 10
    narrow = [
        dict(r, base_alt=1.0) for r in _rows("PrivateCovariance", [1] * 3, [0.5] * 3)
    ]
    rec = report.summarize(narrow)[("PrivateCovariance", "mean", "t", "eps1", 150)]
    assert rec["base_errs"] == [0.5] * 3


def test_the_false_discovery_rate_count(bench):
    # Benjamini-Hochberg at q = 0.05 over m = 4: the k-th smallest p-value
    # must be at most 0.0125 k. 0.01 (<= 0.0125) and 0.02 (<= 0.025) pass,
    # 0.2 (> 0.0375) and 0.9 do not: 2. Twenty p-values of 0.04, each
    # significant alone, stay so together (0.04 <= 0.05 at k = 20); one
    # among nineteen of 0.9 does not (0.04 > 0.05 / 20).
    _, _, report = bench
    assert report.fdr_significant([0.9, 0.02, 0.2, 0.01]) == 2
    assert report.fdr_significant([0.04] * 20) == 20
    assert report.fdr_significant([0.04] + [0.9] * 19) == 0
    assert report.fdr_significant([]) == 0
    # Uniform p-values (every row drawn like its baseline): about 5% pass
    # the row-wise test, and almost never the corrected one.
    p = np.random.default_rng(0).uniform(size=2000)
    assert 60 <= np.sum(p < 0.05) <= 140  # binomial(2000, 0.05): 100 +- 4.4 sd
    assert report.fdr_significant(p) <= 2


def test_the_noise_floor_fails_one_mechanism_against_itself_rarely(bench):
    """Two draws of one heavy-tailed mechanism (log-normal errors, sd 0.8 in
    logs: digits' mean spans 2.9 to 16 over 30 seeds) fail the noise-aware
    floor about ALPHA of the time: 200 rows of 30 seeds each, at most 2 ALPHA
    (the binomial sd at 200 rows is 0.015). The old bar, the worst seed
    within 3x the baseline's *median*, failed the same rows about 88% of the
    time. A mechanism twice as bad fails nearly always."""
    _, _, report = bench
    rng = np.random.default_rng(7)

    def fails(factor):
        out = []
        for _ in range(200):
            base = [{"base_err": e} for e in rng.lognormal(0.0, 0.8, 30)]
            spent = [{"err": e} for e in factor * rng.lognormal(0.0, 0.8, 30)]
            ok, *_ = report._noise_floor(spent, base)
            out.append(not ok)
        return np.mean(out)

    assert fails(1.0) <= 2 * report.ALPHA
    assert fails(2.0) >= 0.9


def test_the_baseline_is_read_from_its_draws(bench):
    """Each seed's baseline is the median of its draws and its worst seed the
    median over draws of the worst seed. Errors are log-normal: a row effect
    per seed (sd 0.5 in logs) times noise (sd 0.8), the estimator one draw per
    seed, the baseline one or nine. Over 300 rows of 30 seeds an estimator
    drawn like its baseline fails about ALPHA of the time either way (at most
    2 ALPHA; binomial sd 0.013); one 1.5 times worse is caught in about 0.47
    of the rows against one draw and 0.62 against nine (measured; asserted
    with a margin of 3 binomial sds, 0.08)."""
    _, _, report = bench
    rng = np.random.default_rng(11)

    def fails(factor, k):
        out = []
        for _ in range(300):
            rows = []
            for seed, effect in enumerate(rng.lognormal(0.0, 0.5, 30)):
                draws = effect * rng.lognormal(0.0, 0.8, k)
                err = factor * effect * rng.lognormal(0.0, 0.8)
                row = _rows("PrivateMean", [err], [float(np.median(draws))])[0]
                rows.append(dict(row, seed=seed, base_draws=" ".join(map(str, draws))))
            rec = report.summarize(rows)[("PrivateMean", "mean", "t", "eps1", 150)]
            out.append(not rec["noise_ok"])
        return np.mean(out)

    assert fails(1.0, 9) <= 2 * report.ALPHA
    assert fails(1.5, 9) >= fails(1.5, 1) + 0.08
    assert fails(2.0, 9) >= 0.9
