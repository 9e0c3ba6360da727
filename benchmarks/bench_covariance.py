"""Speed and accuracy of PrivateCovariance against numpy.cov, measured in one run.

Run: ``.venv/bin/python benchmarks/bench_covariance.py [--quick]``. Prints a
markdown table; times are ratios to ``numpy.cov`` on the same array in the same
run (the machines are shared and noisy, so absolute times mean little).
"""

import argparse
import math
import time

import numpy as np

from dpgauss import PrivateCovariance


def _best_time(func, repeat):
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def speed(n, d, repeat=3):
    """Return (seconds for numpy.cov, seconds for a fit, ratio)."""
    X = np.random.default_rng(0).normal(size=(n, d))
    est = PrivateCovariance(
        rho=1.0, data_norm=2 * math.sqrt(d), random_state=0, on_useless="warn"
    )
    base = _best_time(lambda: np.cov(X, rowvar=False), repeat)
    fit = _best_time(lambda: est.fit(X), repeat)
    return base, fit, fit / base


def accuracy(n, d, rho, reps=20):
    """Return the mean Frobenius error against the empirical covariance."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    X *= np.minimum(1.0, 3.0 * math.sqrt(d) / np.linalg.norm(X, axis=1))[:, None]
    exact = np.cov(X, rowvar=False, bias=True)
    errors = [
        np.linalg.norm(
            PrivateCovariance(
                rho=rho, data_norm=3.0 * math.sqrt(d), random_state=s, on_useless="warn"
            )
            .fit(X)
            .covariance_
            - exact
        )
        for s in range(reps)
    ]
    return float(np.mean(errors)), float(np.linalg.norm(exact))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    sizes = (
        [(100_000, 20), (100_000, 100)]
        if args.quick
        else [(100_000, 20), (1_000_000, 20), (100_000, 100), (1_000_000, 100)]
    )
    print("| n | d | numpy.cov (s) | fit (s) | fit / numpy.cov |")
    print("|---|---|---|---|---|")
    for n, d in sizes:
        base, fit, ratio = speed(n, d)
        print(f"| {n} | {d} | {base:.3f} | {fit:.3f} | {ratio:.2f} |")
    print()
    print("| n | d | rho | mean Frobenius error (20 fits) | zero matrix |")
    print("|---|---|---|---|---|")
    for n, d, rho in [(10_000, 10, 0.1), (10_000, 10, 1.0), (10_000, 50, 1.0)]:
        err, zero = accuracy(n, d, rho)
        print(f"| {n} | {d} | {rho} | {err:.4f} | {zero:.4f} |")


if __name__ == "__main__":
    main()
