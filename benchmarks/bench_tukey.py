"""Accuracy of RestrictedTukeyMechanism (BGSUZ Alg. 1, axis-aligned depth).

Run: ``.venv/bin/python benchmarks/bench_tukey.py [--reps 40]``.

Median Mahalanobis error ``||mu_hat - mu||`` (Sigma = I, mu = 3 * ones) and the
number of failed private tests over ``reps`` datasets, for d in {2, 5, 10} and
n in {500, 2000, 10000}, at ``ApproxDP(1, 1e-6)``, beside the non-private
mean's median error on the same data (the spec's section 7.4 benchmark). Plus
d = 5, n = 2000 with 5% of rows at 1e6 in every coordinate (one-sided) and at
+-1e6 with random signs. Writes ``results/bench_tukey.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from dpgauss.accounting import ApproxDP
from dpgauss.exceptions import PrivateTestFailedError
from dpgauss.mean._tukey import RestrictedTukeyMechanism

RESULTS = Path(__file__).resolve().parent / "results"
COST = ApproxDP(1.0, 1e-6)


def _setting(d, n, reps, outliers=0.0, signs=False):
    mech = RestrictedTukeyMechanism(COST, d)
    private, exact, failures, seconds = [], [], 0, 0.0
    for rep in range(reps):
        rng = np.random.default_rng(1000 + rep)
        X = rng.normal(3.0, 1.0, size=(n, d))
        k = int(outliers * n)
        X[:k] = 1e6 * (rng.choice([-1.0, 1.0], size=(k, d)) if signs else 1.0)
        exact.append(np.linalg.norm(X.mean(axis=0) - 3.0))
        start = time.perf_counter()
        try:
            private.append(np.linalg.norm(mech.release(X, rng) - 3.0))
        except PrivateTestFailedError:
            failures += 1
        seconds += time.perf_counter() - start
    return {
        "private": float(np.median(private)) if private else float("nan"),
        "exact": float(np.median(exact)),
        "failures": failures,
        "ms": 1000 * seconds / reps,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args(argv)
    reps = args.reps
    lines = [
        "# bench_tukey: RestrictedTukeyMechanism, Sigma = I, ApproxDP(1, 1e-6)",
        "",
        f"Median Mahalanobis error over {reps} datasets (failed tests excluded "
        "from the median, counted separately); non-private = the empirical mean "
        "of the same data. Spec 7.4 (the author's scratch implementation, 40 "
        "trials): d=2: 0.077 (14 FAIL) / 0.039 / 0.012; d=5: all FAIL / 0.074 / "
        "0.026; d=10: all FAIL / 0.125 / 0.038.",
        "",
        "| d | n | private | failures | non-private | ms per release |",
        "|---|---|---|---|---|---|",
    ]
    for d in (2, 5, 10):
        for n in (500, 2000, 10_000):
            r = _setting(d, n, reps)
            lines.append(
                f"| {d} | {n} | {r['private']:.3f} | {r['failures']}/{reps} | "
                f"{r['exact']:.3f} | {r['ms']:.1f} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        "5% of rows far away (d = 5, n = 2000; the non-private mean is ruined):",
        "",
        "| outliers | private | failures | non-private |",
        "|---|---|---|---|",
    ]
    for label, signs in (
        ("at (1e6, ..., 1e6)", False),
        ("at +-1e6, random signs", True),
    ):
        r = _setting(5, 2000, reps, outliers=0.05, signs=signs)
        lines.append(
            f"| {label} | {r['private']:.3f} | {r['failures']}/{reps} | "
            f"{r['exact']:.3g} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "One-sided outliers move every coordinate's order statistics by 5% of the "
        "ranks: even the non-private coordinatewise median is then off by "
        "Phi^-1(0.5/0.95) sqrt(5) = 0.148, about twice the clean error.",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_tukey.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
