"""Speed of exact (lattice) noise against numpy's float noise, as ratios in one run.

Run: ``.venv/bin/python benchmarks/bench_noise.py [--budget 0.5]``.

For the Gaussian, symmetric Gaussian and Laplace mechanisms, one release of k
entries (k = 1, 100, 5,050 and 500,500; the symmetric matrices are d x d with
d (d + 1) / 2 entries: d = 1, 14, 100, 1000) is timed with ``exact=True`` (the
default: discrete noise sampled with integer arithmetic) and ``exact=False``
(numpy's float samplers, not float-safe), best of several repeats each,
alternating the two so that both see the same machine load. Targets (issue
brief): a 100 x 100 symmetric release in milliseconds, a 1000 x 1000 one well
under a second. Writes ``results/bench_noise.md``.
"""

import argparse
import platform
import time
from pathlib import Path

import numpy as np

from dpgauss.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
)

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = [(1, 1), (100, 14), (5_050, 100), (500_500, 1000)]  # (vector k, matrix d)


def _time(func, budget):
    """Best time of repeated calls, within about ``budget`` seconds (at least 3)."""
    times = []
    spent = 0.0
    while len(times) < 3 or (spent < budget and len(times) < 2000):
        start = time.perf_counter()
        func()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
    return min(times)


def _cases():
    for k, d in SIZES:
        yield (
            "Gaussian",
            k,
            lambda exact: GaussianMechanism(sensitivity=1.0, rho=0.5, exact=exact),
            np.zeros(k),
        )
        yield (
            "symmetric Gaussian",
            d * (d + 1) // 2,
            lambda exact: SymmetricGaussianMechanism(
                sensitivity=1.0, rho=0.5, exact=exact
            ),
            np.zeros((d, d)),
        )
        yield (
            "Laplace",
            k,
            lambda exact: LaplaceMechanism(sensitivity=1.0, epsilon=1.0, exact=exact),
            np.zeros(k),
        )


def run(budget):
    rng = np.random.default_rng(0)
    rows = []
    for name, entries, make, value in _cases():
        exact, floating = make(True), make(False)
        t_exact = _time(lambda m=exact, v=value: m.randomise(v, rng), budget)
        t_float = _time(lambda m=floating, v=value: m.randomise(v, rng), budget)
        rows.append((name, entries, t_float, t_exact))
        print(
            f"{name:20s} {entries:>8d}  float {t_float * 1e3:9.3f} ms  "
            f"exact {t_exact * 1e3:9.3f} ms  ratio {t_exact / t_float:7.1f}"
        )
    return rows


def write(rows, budget):
    lines = [
        "## Exact lattice noise against float noise",
        "",
        "One `randomise` call, best of repeated calls (about "
        f"{budget} s of calls per cell), exact and float timed in the same run on "
        f"{platform.machine()} / Python {platform.python_version()} / numpy "
        f"{np.__version__}.",
        "",
        "| mechanism | entries | float (ms) | exact (ms) | exact / float |",
        "|---|---|---|---|---|",
    ]
    for name, entries, t_float, t_exact in rows:
        lines.append(
            f"| {name} | {entries:,} | {t_float * 1e3:.3f} | {t_exact * 1e3:.3f} | "
            f"{t_exact / t_float:.1f} |"
        )
    lines += [
        "",
        "Requests of up to 64 entries use the scalar samplers (Python integers);",
        "larger ones the vectorised samplers (numpy integer arrays). Exact noise",
        "costs integer coins (Bernoulli(exp(-rational)) by the alternating-series",
        "sampler of Canonne, Kamath and Steinke 2020) instead of one float",
        "transform per entry, hence the ratios.",
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_noise.md").write_text("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.5)
    args = parser.parse_args()
    write(run(args.budget), args.budget)


if __name__ == "__main__":
    main()
