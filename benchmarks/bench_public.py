"""Public data for one Gaussian: PrivateMean and PrivateGaussianEstimator.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_public.py
[--trials 100] [--sweep-trials 100] [--seeds 20] [--table-seeds 5]
[--parts 123] [--quick]`` (about 2.5 minutes on one core).

The spec's single-Gaussian settings (``specs/bks2022.md`` sections 8.1 and
8.3), zCDP rho = 0.5, every trial on fresh data drawn from fixed seeds, one
process:

1. **Mean, one public row** (B1, the paper's Figure 1): d = 50, N(mu, I),
   mu = 1000 * ones, n = 1,000 (and a sweep over n = 2,000, 5,000, 10,000 for
   the plot), ``trials`` trials (``sweep_trials`` for n > 1,000). Methods, all
   on the same data in a trial: ``PrivateMean(rho, covariance=I)`` fitted with
   ``X_public`` one more row from the same Gaussian; ``PrivateMean(rho,
   covariance=I, mean_bound=R)`` with no public row and only the prior ball
   about 0 of radius R = 1000 sqrt(d) (the a-priori bound k sqrt(d), k = 1000,
   the CoinPress comparison of ``bench_mean.py``); the empirical mean. For
   context, ``PrivateMean(rho)`` with no covariance (its frame learned
   privately), with and without the public row. Metric: l2 error, 10%-trimmed
   mean over the trials (``scipy.stats.trim_mean(x, 0.1)``). Target: below
   0.30 with one public row, where CoinPress (t = 2) with only the prior
   radius gives more than 3.5 (the spec's stored value, 4.45, is the
   reference; CoinPress itself is not re-run here).
2. **Covariance with public rows** (B3): d = 20, Sigma = Q diag(10^U[-2, 2])
   Q^T (Q Haar: QR of a Gaussian matrix with the signs of R's diagonal moved
   into Q), mu = 1000 * ones, both redrawn for every seed; m public rows from
   the same Gaussian (the first m of 80, so the m are nested);
   ``PrivateGaussianEstimator(rho, random_state=seed).fit(X, X_public=P)``
   (no hints). Metrics: covariance error ``||Sigma^-1/2 Sigma_hat Sigma^-1/2 -
   I||_F`` and Mahalanobis mean error ``||Sigma^-1/2 (mu_hat - mu)||``, median
   over seeds. Targets at n = 20,000, m = 2d = 40, median of ``seeds`` seeds:
   covariance error below 0.35 and mean error below 0.05 (no public rows and
   the non-private estimates for context). A table over n in (2,000, 5,000,
   20,000) and m in (0, 21, 40, 80), ``table_seeds`` seeds, next to the
   numbers of ``docs/user_guide/public_data.rst`` (5 seeds, data drawn by
   ``tests/gaussian/test_public.py``, so not the same draws).
3. **Shifted public rows**: d = 20, n = 5,000, m = 80 public rows shifted by 5
   sds along the top eigenvector of Sigma, ``public_tv_bound`` in (0, 0.5,
   0.99), and by 20 sds with the bound 0 and 0.99; ``table_seeds`` seeds,
   medians (no target; the docs quote 0.066 against 0.056 unshifted, 1.1
   undeclared).

``--quick`` runs a few trials of every part and writes nothing. Otherwise
writes ``results/bench_public.md`` (the parts not run are kept from the last
file) and ``results/bench_public.png`` when matplotlib is installed and parts
1 and 2 ran. Exits 1 when a target is missed.
"""

import argparse
import os
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import stats

from dpgauss import PrivateGaussianEstimator, PrivateMean

RESULTS = Path(__file__).resolve().parent / "results"
RHO = 0.5
FAR = 1000.0
MEAN_D = 50
MEAN_NS = (1000, 2000, 5000, 10000)
COV_D = 20
COV_NS = (2000, 5000, 20000)
COV_MS = (0, 21, 40, 80)
TARGET_N, TARGET_M = 20000, 40
SHIFT_N, SHIFT_M, SHIFT_SDS, SHIFT_FAR = 5000, 80, 5.0, 20.0
TV_BOUNDS = (0.0, 0.5, 0.99)

# Spec section 8.1 (100 trials, 10%-trimmed means): n -> (non-private,
# CoinPress t = 2 with R = 1000 sqrt(d), one public row + CoinPress t = 2).
SPEC_B1 = {
    1000: (0.220, 4.450, 0.269),
    1818: (0.161, 1.356, 0.183),
    2636: (0.134, 0.670, 0.147),
    3454: (0.118, 0.397, 0.127),
    4272: (0.108, 0.273, 0.114),
    5090: (0.099, 0.206, 0.104),
    5909: (0.093, 0.162, 0.096),
    6727: (0.085, 0.137, 0.088),
    7545: (0.081, 0.117, 0.083),
    8363: (0.075, 0.104, 0.078),
    9181: (0.072, 0.095, 0.074),
    10000: (0.072, 0.087, 0.073),
}
# docs/user_guide/public_data.rst: median covariance error of 5 seeds,
# n -> errors at m = 0, 21, 40, 80.
DOCS_COV = {
    2000: (23, 5.6, 1.5, 1.0),
    5000: (2.3, 0.58, 0.44, 0.41),
    20000: (0.18, 0.16, 0.15, 0.15),
}
TARGET_MEAN_ONE_ROW = 0.30
REFERENCE_NO_PUBLIC = 3.5
TARGET_COV, TARGET_MAHAL = 0.35, 0.05

M_PUBLIC = "PrivateMean(covariance=I), 1 public row"
M_RADIUS = "PrivateMean(covariance=I, mean_bound=R), no public row"
M_EMPIRICAL = "empirical mean (non-private)"
M_FREE_PUBLIC = "PrivateMean(), 1 public row (frame learned)"
M_FREE = "PrivateMean(), no hints, no public row"
MEAN_METHODS = (M_PUBLIC, M_RADIUS, M_EMPIRICAL, M_FREE_PUBLIC, M_FREE)


# -- helpers -------------------------------------------------------------------
def _tm(values):
    return float(stats.trim_mean(np.asarray(values, dtype=float), 0.1))


def _tsd(values):
    """Standard deviation of the 10%-trimmed sample."""
    return float(np.std(stats.trimboth(np.sort(np.asarray(values, float)), 0.1)))


def _haar(d, rng):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _fit(est, X, public=None):
    """Fit, returning the estimator and whether it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, X_public=public)
    return est, len(caught) > 0


def _fmt(x):
    if not np.isfinite(x):
        return str(x)
    if abs(x) >= 100:
        return f"{x:.3g}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


# -- part 1: the mean with one public row ------------------------------------
def _mean_trial(n, trial):
    d = MEAN_D
    rng = np.random.default_rng(np.random.SeedSequence([9, 1, n, trial]))
    mu = np.full(d, FAR)
    X = mu + rng.standard_normal((n, d))
    public = mu + rng.standard_normal((1, d))
    radius = FAR * np.sqrt(d)
    eye = np.eye(d)
    fits = {
        M_PUBLIC: (
            PrivateMean(rho=RHO, covariance=eye, random_state=trial, on_useless="warn"),
            public,
        ),
        M_RADIUS: (
            PrivateMean(
                rho=RHO,
                covariance=eye,
                mean_bound=radius,
                random_state=trial,
                on_useless="warn",
            ),
            None,
        ),
        M_FREE_PUBLIC: (
            PrivateMean(rho=RHO, random_state=trial, on_useless="warn"),
            public,
        ),
        M_FREE: (PrivateMean(rho=RHO, random_state=trial, on_useless="warn"), None),
    }
    out = {M_EMPIRICAL: (float(np.linalg.norm(X.mean(0) - mu)), "", False)}
    for name, (est, pub) in fits.items():
        est, warned = _fit(est, X, pub)
        tag = f"{est.method_} t={est.mean_steps_}"
        out[name] = (float(np.linalg.norm(est.mean_ - mu)), tag, warned)
    return out


def part_mean(trials, sweep_trials, ns):
    table = {}
    for n in ns:
        reps = trials if n == ns[0] else sweep_trials
        rows = {m: {"err": [], "tags": Counter(), "warned": 0} for m in MEAN_METHODS}
        for trial in range(reps):
            for name, (err, tag, warned) in _mean_trial(n, trial).items():
                rows[name]["err"].append(err)
                rows[name]["tags"][tag] += 1
                rows[name]["warned"] += warned
        table[n] = rows
        print(f"part 1: n = {n} done", flush=True)
    n0 = ns[0]
    lines = [
        "## 1. Mean, one public row (spec section 8.1, B1)",
        "",
        f"d = {MEAN_D}, N(mu, I), mu = 1000 * ones, rho = {RHO}, R = 1000 sqrt(d) "
        f"= {FAR * np.sqrt(MEAN_D):.0f}. l2 error over {trials} trials at "
        f"n = {n0} and {sweep_trials} at larger n (fresh data per trial, "
        "seeds fixed): 10%-trimmed mean (the metric), median, sd of the "
        "trimmed sample, max. `steps`: the method and CoinPress mean steps "
        "used (counts over trials). Spec: its prototype's values at that n "
        "(non-private; CoinPress t = 2 with R only, k = 1000; one public row "
        "+ CoinPress t = 2).",
        "",
        "| n | method | trimmed mean | median | trimmed sd | max | steps | spec |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, rows in table.items():
        spec = SPEC_B1.get(n)
        refs = {}
        if spec:
            refs = {M_EMPIRICAL: spec[0], M_RADIUS: spec[1], M_PUBLIC: spec[2]}
        for name, r in rows.items():
            e = np.asarray(r["err"])
            tags = ", ".join(f"{k} x{c}" for k, c in sorted(r["tags"].items()) if k)
            if r["warned"]:
                tags += f"; warned x{r['warned']}"
            ref = _fmt(refs[name]) if name in refs else ""
            if name == M_RADIUS and ref:
                ref += " (CoinPress t=2)"
            lines.append(
                f"| {n} | {name} | {_fmt(_tm(e))} | {_fmt(np.median(e))} | "
                f"{_fmt(_tsd(e))} | {_fmt(e.max())} | {tags} | {ref} |"
            )
    rows = table[n0]
    ours = _tm(rows[M_PUBLIC]["err"])
    radius = _tm(rows[M_RADIUS]["err"])
    verdicts = [
        f"1a. one public row, n = {n0}: trimmed-mean error {ours:.3f} (target "
        f"< {TARGET_MEAN_ONE_ROW}): {'PASS' if ours < TARGET_MEAN_ONE_ROW else 'FAIL'}",
        f"1b. reference, no public row and only the prior radius R = 1000 sqrt(d): "
        f"CoinPress t = 2 gives {SPEC_B1[1000][1]} in the spec (stored, not re-run "
        f"here; > {REFERENCE_NO_PUBLIC}: the comparison the target refers to "
        f"holds). Ours, PrivateMean(covariance=I, mean_bound=R), gives "
        f"{radius:.3f} ({'above' if radius > REFERENCE_NO_PUBLIC else 'below'} "
        f"{REFERENCE_NO_PUBLIC}): it picks its number of mean steps from R "
        f"({', '.join(k for k in sorted(rows[M_RADIUS]['tags']))}), so a far "
        "prior costs it far less than CoinPress t = 2: INFO",
        f"1c. context, non-private, n = {n0}: {_tm(rows[M_EMPIRICAL]['err']):.3f} "
        f"(spec {SPEC_B1[1000][0]:.3f}): INFO",
    ]
    lines += [""]
    return lines, verdicts, table


# -- part 2: the covariance with public rows ---------------------------------
def _model(seed):
    """Sigma's eigenvectors Q and eigenvalues, and mu, for one seed."""
    rng = np.random.default_rng(np.random.SeedSequence([9, 2, seed]))
    Q = _haar(COV_D, rng)
    values = 10.0 ** rng.uniform(-2.0, 2.0, COV_D)
    return Q, values, np.full(COV_D, FAR)


def _draw(model, n, m, key, shift=0.0):
    Q, values, mu = model
    rng = np.random.default_rng(np.random.SeedSequence(key))
    root = (Q * np.sqrt(values)) @ Q.T
    X = mu + rng.standard_normal((n, COV_D)) @ root
    public = mu + rng.standard_normal((m, COV_D)) @ root
    public += shift * np.sqrt(values.max()) * Q[:, np.argmax(values)]
    return X, public


def _errors(model, mean, cov):
    Q, values, mu = model
    inverse_root = (Q / np.sqrt(values)) @ Q.T
    mahal = float(np.linalg.norm(inverse_root @ (mean - mu)))
    white = inverse_root @ cov @ inverse_root - np.eye(COV_D)
    return mahal, float(np.linalg.norm(white))


def _gauss(model, X, public, seed, **params):
    est = PrivateGaussianEstimator(
        rho=RHO, random_state=seed, **params, on_useless="warn"
    )
    est, warned = _fit(est, X, public)
    return (*_errors(model, est.mean_, est.covariance_), warned)


def part_cov(seeds, table_seeds):
    cells = {}  # (n, m) -> list of (mahal, cov, warned); m = -1: non-private

    def add(key, value):
        cells.setdefault(key, []).append(value)

    for seed in range(max(seeds, table_seeds)):
        model = _model(seed)
        for n in COV_NS:
            if seed >= table_seeds and n != TARGET_N:
                continue
            X, public = _draw(model, n, max(COV_MS), [9, 2, seed, n])
            add((n, -1), (*_errors(model, X.mean(0), np.cov(X.T)), False))
            for m in COV_MS:
                if seed >= table_seeds and m not in (0, TARGET_M):
                    continue
                add((n, m), _gauss(model, X, public[:m] if m else None, seed))
        print(f"part 2: seed {seed} done", flush=True)

    def med(key, i):
        return float(np.median([v[i] for v in cells[key]]))

    def warned(key):
        k = sum(v[2] for v in cells[key])
        return f" (warned x{k})" if k else ""

    target = cells[(TARGET_N, TARGET_M)]
    lines = [
        "## 2. Covariance with public rows (spec section 8.3, B3)",
        "",
        f"d = {COV_D}, rho = {RHO}, Sigma = Q diag(10^U[-2, 2]) Q^T (Q Haar), "
        "mu = 1000 * ones, both redrawn per seed; "
        "`PrivateGaussianEstimator(rho)` with no hints, "
        "`fit(X, X_public=P)`; P the first m of 80 public rows.",
        "",
        f"### Targets: n = {TARGET_N}, m = {TARGET_M} (2d), median of "
        f"{len(target)} seeds",
        "",
        "| method | Mahalanobis mean error | covariance error |",
        "|---|---|---|",
    ]
    for label, key in [
        (f"public m = {TARGET_M}", (TARGET_N, TARGET_M)),
        ("no public rows", (TARGET_N, 0)),
        ("non-private (empirical mean, np.cov)", (TARGET_N, -1)),
    ]:
        lines.append(
            f"| {label}{warned(key)} | {med(key, 0):.4f} | {med(key, 1):.4f} |"
        )
    lines += [
        "",
        f"Per seed, m = {TARGET_M} (Mahalanobis mean error / covariance error): "
        + ", ".join(f"{v[0]:.4f} / {v[1]:.3f}" for v in target)
        + ".",
        "",
        f"### n x m, median of {table_seeds} seeds",
        "",
        "Covariance error, ours (docs page's earlier 5-seed value); then the "
        "Mahalanobis mean error. The spec's prototype (a different learner, "
        "its no-public column with good a-priori bounds) had, for m = 0 / 21 / "
        "40 / 80: n = 2,000: 11.7 / 1.9e4 / 8.57 / 2.82; n = 5,000: 0.710 / "
        "46.0 / 0.862 / 0.738; n = 20,000: 0.247 / 0.253 / 0.248 / 0.250.",
        "",
        "| n | non-private | "
        + " | ".join(f"m = {m}" if m else "no public" for m in COV_MS)
        + " |",
        "|---|---|" + "---|" * len(COV_MS),
    ]
    table = {}
    for n in COV_NS:
        sub = {key: cells[key][:table_seeds] for key in cells if key[0] == n}
        row = [f"{np.median([v[1] for v in sub[(n, -1)]]):.3f}"]
        for j, m in enumerate(COV_MS):
            vals = sub[(n, m)]
            cov = float(np.median([v[1] for v in vals]))
            table[(n, m)] = (float(np.median([v[0] for v in vals])), cov)
            k = sum(v[2] for v in vals)
            row.append(
                f"{_fmt(cov)} ({DOCS_COV[n][j]:g})" + (f", warned x{k}" if k else "")
            )
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    lines += [
        "",
        "| n | non-private | "
        + " | ".join(f"m = {m}" if m else "no public" for m in COV_MS)
        + " |",
        "|---|---|" + "---|" * len(COV_MS),
    ]
    for n in COV_NS:
        npv = np.median([v[0] for v in cells[(n, -1)][:table_seeds]])
        row = [f"{npv:.4f}"] + [f"{table[(n, m)][0]:.4f}" for m in COV_MS]
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    far = []
    for (n, m), (_, cov) in table.items():
        docs = DOCS_COV[n][COV_MS.index(m)]
        if not 0.5 <= cov / docs <= 2.0:
            far.append(f"n = {n}, m = {m}: {_fmt(cov)} against {docs:g}")
    lines += [
        "",
        "Against the docs page (a factor 2 either way counts as reproduced): "
        + ("; ".join(far) + " differ." if far else "all within a factor 2."),
        "",
    ]
    mahal, cov = med((TARGET_N, TARGET_M), 0), med((TARGET_N, TARGET_M), 1)
    verdicts = [
        f"2a. n = {TARGET_N}, m = {TARGET_M}: median covariance error {cov:.4f} "
        f"(target < {TARGET_COV}): {'PASS' if cov < TARGET_COV else 'FAIL'}",
        f"2b. n = {TARGET_N}, m = {TARGET_M}: median Mahalanobis mean error "
        f"{mahal:.4f} (target < {TARGET_MAHAL}): "
        f"{'PASS' if mahal < TARGET_MAHAL else 'FAIL'}",
    ]
    return lines, verdicts, table


# -- part 3: shifted public rows ---------------------------------------------
def part_shift(seeds):
    rows = {}
    for seed in range(seeds):
        model = _model(seed)
        key = [9, 3, seed]
        X, public = _draw(model, SHIFT_N, SHIFT_M, key)
        _, shifted = _draw(model, SHIFT_N, SHIFT_M, key, shift=SHIFT_SDS)
        _, far = _draw(model, SHIFT_N, SHIFT_M, key, shift=SHIFT_FAR)
        runs = {
            "non-private": (*_errors(model, X.mean(0), np.cov(X.T)), False),
            "no public rows": _gauss(model, X, None, seed),
            "unshifted public, tv bound 0": _gauss(model, X, public, seed),
        }
        for tv in TV_BOUNDS:
            runs[f"shifted public, tv bound {tv:g}"] = _gauss(
                model, X, shifted, seed, public_tv_bound=tv
            )
        for tv in (TV_BOUNDS[0], TV_BOUNDS[-1]):
            runs[f"shifted {SHIFT_FAR:g} sds, tv bound {tv:g}"] = _gauss(
                model, X, far, seed, public_tv_bound=tv
            )
        for name, value in runs.items():
            rows.setdefault(name, []).append(value)
        print(f"part 3: seed {seed} done", flush=True)
    lines = [
        "## 3. Shifted public rows (`public_tv_bound`)",
        "",
        f"d = {COV_D}, n = {SHIFT_N}, m = {SHIFT_M} public rows shifted by "
        f"{SHIFT_SDS:g} sds along Sigma's top eigenvector (Sigma as in part 2), "
        f"rho = {RHO}; median of {seeds} seeds. No target. The docs page "
        "quotes, for this setting: mean error 0.066 with the bound declared, "
        "0.056 unshifted, 1.1 undeclared (tv bound 0). The last two rows: "
        f"public rows shifted by {SHIFT_FAR:g} sds instead.",
        "",
        "| method | Mahalanobis mean error | covariance error | per seed (mean) |",
        "|---|---|---|---|",
    ]
    table = {}
    for name, vals in rows.items():
        mahal = float(np.median([v[0] for v in vals]))
        cov = float(np.median([v[1] for v in vals]))
        table[name] = (mahal, cov)
        k = sum(v[2] for v in vals)
        label = name + (f" (warned x{k})" if k else "")
        each = ", ".join(_fmt(v[0]) for v in vals)
        lines.append(f"| {label} | {_fmt(mahal)} | {_fmt(cov)} | {each} |")
    lines += [""]
    return lines, [], table


# -- report --------------------------------------------------------------------
def _earlier_parts():
    """The sections of ``results/bench_public.md`` by part."""
    path = RESULTS / "bench_public.md"
    if not path.exists():
        return {}
    parts = {}
    text = path.read_text().split("\n## Targets")[0]
    for section in re.split(r"(?m)^(?=## \d\. )", text)[1:]:
        parts[section[3]] = [*section.rstrip("\n").split("\n"), ""]
    return parts


def _earlier_verdicts():
    path = RESULTS / "bench_public.md"
    if not path.exists():
        return {}
    found = {}
    for line in path.read_text().split("\n"):
        match = re.match(r"- (\d)[a-z]\. ", line)
        if match:
            found.setdefault(match.group(1), []).append(line[2:])
    return found


def _plot(results, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = [p for p in "123" if p in results]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2))
    for ax, p in zip(np.atleast_1d(axes), panels, strict=True):
        table = results[p]
        if p == "1":
            ns = sorted(table)
            for name in MEAN_METHODS:
                ys = [_tm(table[n][name]["err"]) for n in ns]
                ax.plot(ns, ys, marker="o", label=name.replace("PrivateMean", "PM"))
            spec_ns = sorted(SPEC_B1)
            for j, label in enumerate(
                ["spec: non-private", "spec: CoinPress t=2, R only", "spec: 1 public"]
            ):
                ax.plot(
                    spec_ns,
                    [SPEC_B1[n][j] for n in spec_ns],
                    ls="--",
                    lw=0.8,
                    color="grey" if j != 1 else "red",
                    label=label,
                )
            ax.axhline(TARGET_MEAN_ONE_ROW, color="k", lw=0.6, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("n")
            ax.set_ylabel("l2 error, 10%-trimmed mean")
            ax.set_title(f"1. mean, d = {MEAN_D}, mu = 1000 * 1, rho = {RHO}")
        elif p == "2":
            xs = np.arange(len(COV_MS))
            for n in COV_NS:
                line = ax.plot(
                    xs, [table[(n, m)][1] for m in COV_MS], marker="o", label=f"n={n}"
                )[0]
                ax.plot(
                    xs, DOCS_COV[n], ls="--", lw=0.8, color=line.get_color(), marker="x"
                )
            ax.axhline(TARGET_COV, color="k", lw=0.6, ls=":")
            ax.set_xticks(xs, [str(m) for m in COV_MS])
            ax.set_yscale("log")
            ax.set_xlabel("public rows m (dashed: docs page)")
            ax.set_ylabel("covariance error, median")
            ax.set_title(f"2. Gaussian, d = {COV_D}, cond <= 1e4, rho = {RHO}")
        else:
            names = list(table)
            ax.barh(names, [table[k][0] for k in names])
            ax.set_xscale("log")
            ax.set_xlabel("Mahalanobis mean error, median")
            ax.set_title(f"3. shifted public rows, n = {SHIFT_N}, m = {SHIFT_M}")
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=100, help="part 1, n = 1,000")
    parser.add_argument(
        "--sweep-trials", type=int, default=100, help="part 1, n > 1,000"
    )
    parser.add_argument("--seeds", type=int, default=20, help="part 2's targets")
    parser.add_argument(
        "--table-seeds", type=int, default=5, help="part 2's n x m table and part 3"
    )
    parser.add_argument("--parts", default="123", help="digits 1-3")
    parser.add_argument(
        "--quick", action="store_true", help="a few trials of every part, no files"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.trials, args.sweep_trials, args.seeds, args.table_seeds = 5, 3, 3, 2
    start = time.perf_counter()
    runners = {
        "1": lambda: part_mean(args.trials, args.sweep_trials, MEAN_NS),
        "2": lambda: part_cov(args.seeds, args.table_seeds),
        "3": lambda: part_shift(args.table_seeds),
    }
    parts = {} if args.quick else _earlier_parts()
    verdicts = {} if args.quick else _earlier_verdicts()
    results = {}
    for p in args.parts:
        t0 = time.perf_counter()
        lines, verdicts[p], results[p] = runners[p]()
        parts[p] = [*lines, f"({time.perf_counter() - t0:.0f} s)", ""]
    elapsed = time.perf_counter() - start
    flat = [v for p in sorted(verdicts) for v in verdicts[p]]
    header = [
        "# bench_public: public data for one Gaussian",
        "",
        f"`python benchmarks/bench_public.py --trials {args.trials} --sweep-trials "
        f"{args.sweep_trials} --seeds {args.seeds} --table-seeds {args.table_seeds} "
        f"--parts {args.parts}`{' --quick' if args.quick else ''}; one process, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}. "
        "See the script's docstring for the protocol.",
        "",
    ]
    body = [x for p in sorted(parts) for x in parts[p]]
    footer = ["## Targets", "", *[f"- {v}" for v in flat], ""]
    footer.append(
        f"Run time of the last invocation (parts {args.parts}): {elapsed:.0f} s."
    )
    text = "\n".join(header + body + footer) + "\n"
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_public.md").write_text(text)
        if "1" in results and "2" in results:
            _plot(results, RESULTS / "bench_public.png")
    return 1 if any("FAIL" in v for v in flat) else 0


if __name__ == "__main__":
    sys.exit(main())
