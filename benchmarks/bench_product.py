"""PrivateProductDistribution against the non-private mean and the plain
Gaussian mechanism (Kamath, Li, Singhal and Ullman 2019, section 5).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_product.py
[--seeds 30] [--quick]`` (about 15 seconds on one core).

Settings: d = 200, n = 20,000, zCDP rho = 0.5, marginals redrawn for every
seed from (a) sparse ``p_j ~ U[0, 2/d]`` and (b) dense ``p_j ~ U[0.2, 0.5]``;
data ``x_ij ~ Bernoulli(p_j)`` from fixed seeds. Methods on the same data:

* ``PrivateProductDistribution(rho=0.5)`` (the rounds on all rows, budget
  split equally, exact noise);
* the non-private empirical mean;
* the plain Gaussian mechanism: the column counts (l2 sensitivity sqrt(d))
  with noise sd ``sqrt(d) / sqrt(2 rho)``, divided by n, clipped to
  ``[1/(2n), 1 - 1/(2n)]`` (the same floor as the estimator; numpy noise);
* the paper's form, the same rounds each on its
  own block of ``n / (R + 1)`` rows at the full rho (parallel composition).

Metric: the Hellinger distance ``sqrt(1 - prod_j BC_j)`` between the product
distributions (``BC_j = sqrt(p q) + sqrt((1 - p)(1 - q))``; total variation
is at most ``sqrt(2)`` times it). Reported: the median and worst over seeds
of the ratio to the non-private distance, and the median gain over the plain
Gaussian mechanism (its distance over ours). Target: in the sparse setting,
ratio at most 2 for every seed. Writes ``results/bench_product.md`` and
``results/bench_product.png`` (matplotlib, when installed); ``--quick`` runs
3 seeds and writes nothing. Exits 1 when the target is missed.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from dpgauss import PrivateProductDistribution
from dpgauss.accounting import ZCDP
from dpgauss.product._product import counts_mechanism, product_rounds, round_names

RESULTS = Path(__file__).resolve().parent / "results"
D, N, RHO = 200, 20_000, 0.5
SETTINGS = {
    "sparse U[0, 2/d]": lambda rng: rng.uniform(0.0, 2.0 / D, D),
    "dense U[0.2, 0.5]": lambda rng: rng.uniform(0.2, 0.5, D),
}
TARGET = 2.0


def hellinger(p, q):
    """Hellinger distance between two products of Bernoullis."""
    affinity = np.sqrt(p * q) + np.sqrt((1.0 - p) * (1.0 - q))
    return math.sqrt(max(0.0, 1.0 - float(np.exp(np.sum(np.log(affinity))))))


def plain_gaussian(X, rng):
    n, d = X.shape
    counts = X.sum(axis=0, dtype=np.int64).astype(np.float64)
    noisy = (counts + rng.normal(0.0, math.sqrt(d) / math.sqrt(2.0 * RHO), d)) / n
    return np.clip(noisy, 0.5 / n, 1.0 - 0.5 / n)


def disjoint_blocks(X, rng):
    """The paper's form: round r on block r, each at the full rho."""
    names = round_names(X.shape[1])
    blocks = np.array_split(X, len(names))
    estimate, _, _ = product_rounds(
        blocks, names, lambda name, m: counts_mechanism(ZCDP(RHO), m), rng
    )
    m = blocks[-1].shape[0]
    return np.clip(estimate, 0.5 / m, 1.0 - 0.5 / m)


def run(seeds):
    rows = {}
    for setting, draw in SETTINGS.items():
        out = []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            p = draw(rng)
            X = rng.random((N, D)) < p
            ours = PrivateProductDistribution(
                rho=RHO, random_state=seed, on_useless="warn"
            ).fit(X)
            h = {
                "ours": hellinger(p, ours.probabilities_),
                "non-private": hellinger(p, X.mean(axis=0)),
                "plain gaussian": hellinger(p, plain_gaussian(X, rng)),
            }
            h["disjoint blocks"] = hellinger(p, disjoint_blocks(X, rng))
            out.append(h)
        rows[setting] = out
    return rows


def summarise(rows):
    lines = [
        f"d = {D}, n = {N:,}, rho = {RHO}; Hellinger distance to the truth.",
        "",
        "| setting | method | median H | ratio to non-private: median | worst "
        "| gain of ours over it (median) |",
        "|---|---|---|---|---|---|",
    ]
    verdict = True
    for setting, out in rows.items():
        for method in out[0]:
            hs = np.array([h[method] for h in out])
            ratio = hs / np.array([h["non-private"] for h in out])
            gain = hs / np.array([h["ours"] for h in out])
            lines.append(
                f"| {setting} | {method} | {np.median(hs):.4f} | "
                f"{np.median(ratio):.3f} | {ratio.max():.3f} | {np.median(gain):.2f} |"
            )
            if setting.startswith("sparse") and method == "ours":
                verdict = bool(ratio.max() <= TARGET)
    lines += [
        "",
        f"Target (sparse, every seed): ratio <= {TARGET}: "
        + ("met" if verdict else "MISSED"),
    ]
    return "\n".join(lines), verdict


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 3.5))
    for ax, (setting, out) in zip(np.atleast_1d(axes), rows.items(), strict=True):
        methods = list(out[0])
        ax.boxplot([[h[m] for h in out] for m in methods])
        ax.set_xticks(range(1, len(methods) + 1), methods, rotation=20)
        ax.set_title(setting)
        ax.set_ylabel("Hellinger distance")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = 3 if args.quick else args.seeds
    start = time.perf_counter()
    rows = run(seeds)
    text, verdict = summarise(rows)
    command = "benchmarks/bench_product.py " + " ".join(argv or sys.argv[1:])
    text = (
        f"# bench_product\n\n`{command.strip()}`, {seeds} seeds, "
        f"{time.perf_counter() - start:.0f} s\n\n{text}\n"
    )
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_product.md").write_text(text)
        plot(rows, RESULTS / "bench_product.png")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
