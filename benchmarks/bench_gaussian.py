"""Cost of privacy of PrivateGaussianEstimator, with no hints.

Run: ``.venv/bin/python benchmarks/bench_gaussian.py [--reps 10] [--quick]``.

Cost of privacy = private error / non-private error on the same data (the
empirical mean and covariance), median over ``reps`` datasets. Errors are in
the data's own geometry: the mean's ``||Sigma^-1/2 (mu_hat - mu)||``, the
covariance's ``||Sigma^-1/2 Sigma_hat Sigma^-1/2 - I||_F``. Data: N(mu, Sigma)
with Sigma a random rotation of ``geomspace(1, cond, d)``. Settings (the issue's
targets in brackets):

* d = 10 and 50, n from 1,000 to 100,000, rho in {0.1, 0.5, 1}, mu = 0, cond 1,
  no hints: the table and the plot [d = 10, n = 8,000, rho = 0.5: both <= 1.2];
* d = 100, n = 80,000, rho = 0.5 [both <= 1.5];
* d = 10, n = 8,000, rho = 0.5, mu at distance 1e4, cond 1e3: no hints against
  exact hints (``mean_bound = ||mu||``, ``cov_bounds = (1, 1e3)``) [no hints
  within 1.5x the hinted error].

Every fit spends (``on_useless="warn"``): the table measures the release in
every setting, including those where the default refuses before the spend
because it predicts a search going astray (``bench_real.py`` counts refusals).

Writes ``results/bench_gaussian.md`` (and ``.png`` when matplotlib is
installed).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from dpgauss import PrivateGaussianEstimator
from dpgauss.exceptions import UtilityWarning

RESULTS = Path(__file__).resolve().parent / "results"


def _data(d, n, seed, far=0.0, cond=1.0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    C = Q @ np.diag(np.geomspace(1.0, cond, d)) @ Q.T
    mu = rng.normal(size=d)
    mu = mu / np.linalg.norm(mu) * far
    return rng.multivariate_normal(mu, C, size=n), mu, C


def _errors(est, X, mu, C):
    inv = np.linalg.inv(np.linalg.cholesky(C))
    d = len(mu)
    cov = np.linalg.norm(inv @ est.covariance_ @ inv.T - np.eye(d))
    cov0 = np.linalg.norm(inv @ np.cov(X.T, bias=True) @ inv.T - np.eye(d))
    mean = np.linalg.norm(inv @ (est.mean_ - mu))
    mean0 = np.linalg.norm(inv @ (X.mean(axis=0) - mu))
    return cov, mean, cov0, mean0


def _setting(d, n, rho, reps, far=0.0, cond=1.0, **hints):
    rows = []
    for rep in range(reps):
        X, mu, C = _data(d, n, 1000 + rep, far, cond)
        if hints.get("mean_bound") == "exact":
            hints = {**hints, "mean_bound": float(np.linalg.norm(mu)) + 1e-9}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            est = PrivateGaussianEstimator(
                rho=rho, random_state=rep, on_useless="warn", **hints
            ).fit(X)
        rows.append(_errors(est, X, mu, C))
    a = np.array(rows)
    return {
        "cov": float(np.median(a[:, 0] / a[:, 2])),
        "mean": float(np.median(a[:, 1] / a[:, 3])),
        "cov_abs": float(np.median(a[:, 0])),
        "mean_abs": float(np.median(a[:, 1])),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 repetitions, fewer n")
    args = parser.parse_args(argv)
    reps = 3 if args.quick else args.reps
    ns = (1000, 8000, 100000) if args.quick else (1000, 3000, 8000, 30000, 100000)
    start = time.perf_counter()
    lines = [
        f"Cost of privacy (private / non-private error, median of {reps}), no "
        "hints: mean (Mahalanobis), covariance (Mahalanobis-Frobenius).",
        "",
        "| d | n | rho | mean | cov |",
        "|---|---|---|---|---|",
    ]
    table = {}
    for d in (10, 50):
        for rho in (0.1, 0.5, 1.0):
            for n in ns:
                r = _setting(d, n, rho, reps)
                table[(d, n, rho)] = r
                lines.append(
                    f"| {d} | {n} | {rho} | {r['mean']:.3f} | {r['cov']:.3f} |"
                )
    targets = []
    r = table.get((10, 8000, 0.5)) or _setting(10, 8000, 0.5, reps)
    ok = r["mean"] <= 1.2 and r["cov"] <= 1.2
    targets.append(("d=10, n=8000, rho=0.5: mean, cov <= 1.2", r, ok))
    r = _setting(100, 80000, 0.5, max(3, reps // 3))
    targets.append(
        (
            "d=100, n=80000, rho=0.5: mean, cov <= 1.5",
            r,
            r["mean"] <= 1.5 and r["cov"] <= 1.5,
        )
    )
    free = _setting(10, 8000, 0.5, reps, far=1e4, cond=1e3)
    hinted = _setting(
        10,
        8000,
        0.5,
        reps,
        far=1e4,
        cond=1e3,
        mean_bound="exact",
        cov_bounds=(1.0, 1e3),
    )
    ok = (
        free["mean_abs"] <= 1.5 * hinted["mean_abs"]
        and free["cov_abs"] <= 1.5 * hinted["cov_abs"]
    )
    lines += [
        "",
        "| target | mean | cov | ok |",
        "|---|---|---|---|",
    ]
    for name, r, ok_ in targets:
        lines.append(
            f"| {name} | {r['mean']:.3f} | {r['cov']:.3f} | {'ok' if ok_ else 'MISS'} |"
        )
    lines.append(
        f"| mean 1e4 away, cond 1e3, no hints vs exact hints (errors): <= 1.5x | "
        f"{free['mean_abs']:.4f} vs {hinted['mean_abs']:.4f} | "
        f"{free['cov_abs']:.3f} vs {hinted['cov_abs']:.3f} | {'ok' if ok else 'MISS'} |"
    )
    targets.append(("far", None, ok))
    missed = sum(not t[2] for t in targets)
    lines += ["", f"{missed} of {len(targets)} targets missed."]
    text = "\n".join(lines) + "\n"
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_gaussian.md").write_text(text)
        _plot(table, ns, RESULTS / "bench_gaussian.png")
    return 0 if missed == 0 else 1


def _plot(table, ns, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key in zip(axes, ("mean", "cov"), strict=True):
        for d in (10, 50):
            for rho in (0.1, 0.5, 1.0):
                ys = [table[(d, n, rho)][key] for n in ns]
                ax.plot(ns, ys, marker="o", label=f"d={d}, rho={rho}")
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n")
        ax.set_title(f"{key}: private / non-private error")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
