"""PrivateGaussianEstimator: the two initial centers, end to end.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_gaussian_center.py
[--full] [--quick]`` (the default about 4 minutes on one core; ``--full`` adds
n = 10^6 and 10 seeds, about 25 minutes).

``bench_subsample.py`` found SubsampleAggregate (winsorized) a better
bound-free center than the range step at the range step's budget (its
``range_location`` cost, rho 0.025): distance to the true mean 0.0087 against
0.016 at n = 10^5, 0.038 against 0.050 at 10^4. This benchmark asks whether the
better center makes a better *estimator*: ``initial_center="range"`` against
``"subsample"`` (same plan, same costs), on N(mu, C) with ||mu|| = 10^6 in a
random direction and C a random rotation of ``geomspace(1, cond, d)``, for n,
d, rho and cond below, over seeds:

* the start radius of the mean steps, in the learned frame (released values);
* the number of mean steps "auto" chose;
* the mean's Mahalanobis error and the covariance's Mahalanobis-Frobenius error
  ``||C^-1/2 C_hat C^-1/2 - I||_F``, each divided by the non-private
  estimate's on the same rows;
* the fit time, as a ratio subsample / range in the same run.

Medians over seeds. Writes ``results/bench_gaussian_center.md`` (not with
``--quick``).
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from dpgauss import PrivateGaussianEstimator

RESULTS = Path(__file__).resolve().parent / "results"
STARTS = []


class _Recorded(PrivateGaussianEstimator):
    """Records the start radius each fit hands the mean steps."""

    def _mean_radius(self, frame, scales, found):
        radius = super()._mean_radius(frame, scales, found)
        STARTS.append(radius)
        return radius

    def _subsample_start(self, X, frame, plan, rng):
        center, radius = super()._subsample_start(X, frame, plan, rng)
        STARTS.append(radius)
        return center, radius


def sample(n, d, cond, seed):
    rng = np.random.default_rng([11, n, d, seed])
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    C = Q @ np.diag(np.geomspace(1.0, cond, d)) @ Q.T
    mu = rng.normal(size=d)
    mu *= 1e6 / np.linalg.norm(mu)
    return rng.multivariate_normal(mu, C, size=n), mu, C


def errors(mean, cov, mu, C):
    inv = np.linalg.inv(np.linalg.cholesky(C))
    d = len(mu)
    return (
        float(np.linalg.norm(inv @ (mean - mu))),
        float(np.linalg.norm(inv @ cov @ inv.T - np.eye(d))),
    )


def one(n, d, rho, cond, seed):
    X, mu, C = sample(n, d, cond, seed)
    mean0, cov0 = errors(X.mean(axis=0), np.cov(X.T, bias=True), mu, C)
    out = {}
    for start in ("range", "subsample"):
        STARTS.clear()
        tic = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = _Recorded(rho=rho, initial_center=start, random_state=seed).fit(X)
        seconds = time.perf_counter() - tic
        mean, cov = errors(est.mean_, est.covariance_, mu, C)
        out[start] = {
            "radius": STARTS[-1],
            "steps": est.mean_steps_,
            "mean": mean / mean0,
            "cov": cov / cov0,
            "seconds": seconds,
            "warned": bool(caught),
        }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    ns = [3_000, 10_000, 100_000] + ([1_000_000] if args.full else [])
    seeds = 2 if args.quick else (10 if args.full else 5)
    settings = [
        (n, d, rho, cond)
        for n in ns
        for d in (5, 20)
        for rho in (0.1, 0.5)
        for cond in (1.0, 1e3)
        if not (args.quick and (d == 20 or cond == 1.0))
    ]
    flag = " --full" if args.full else ""
    lines = [
        "# PrivateGaussianEstimator: initial_center='range' vs 'subsample'",
        "",
        f"Command: `benchmarks/bench_gaussian_center.py{flag}`; {seeds} seeds, "
        "medians. Errors are ratios to the non-private "
        "estimate's; radius is the mean steps' start radius in the frame; "
        "time is subsample / range in the same run; 'warned' counts fits with a "
        "UtilityWarning (range, subsample).",
        "",
        "| n | d | rho | cond | radius range | radius subsample | steps r/s "
        "| mean range | mean subsample | cov range | cov subsample | time ratio "
        "| warned |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    tic = time.perf_counter()
    for n, d, rho, cond in settings:
        runs = [one(n, d, rho, cond, seed) for seed in range(seeds)]

        def med(start, key, runs=runs):
            return float(np.median([r[start][key] for r in runs]))

        ratio = [r["subsample"]["seconds"] / r["range"]["seconds"] for r in runs]
        warned = [sum(r[s]["warned"] for r in runs) for s in ("range", "subsample")]
        row = (
            f"| {n:.0e} | {d} | {rho} | {cond:g} | {med('range', 'radius'):.3g} "
            f"| {med('subsample', 'radius'):.3g} "
            f"| {med('range', 'steps'):g}/{med('subsample', 'steps'):g} "
            f"| {med('range', 'mean'):.3f} | {med('subsample', 'mean'):.3f} "
            f"| {med('range', 'cov'):.3f} | {med('subsample', 'cov'):.3f} "
            f"| {np.median(ratio):.2f} "
            f"| {warned[0]}/{warned[1]} |"
        )
        print(row, flush=True)
        lines.append(row)
    lines += ["", f"Total {time.perf_counter() - tic:.0f} s."]
    if not args.quick:
        name = "bench_gaussian_center" + ("_full" if args.full else "")
        (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
