"""Accuracy of the covariance mechanisms on the Dong-Liang-Yi 2022 settings.

Run: ``.venv/bin/python benchmarks/bench_dly.py [--reps 20] [--quick]``.

Reproduces the synthetic settings of the paper (spec table S1-S5: the Section 7.1
generator with Zipf norms, second-moment target, rows in the unit ball, zCDP)
and a real-data setting on scikit-learn's digits (d = 64, scaled by 16 sqrt(d)
as the paper scales MNIST). For every setting it averages the Frobenius error of
each method over ``reps`` repetitions (fresh data and noise each time), prints a
markdown table with the spec's reference numbers (its numpy port of the authors'
code, 5 repetitions) next to ours, checks the issue's targets, and writes
``results/bench_dly.md``, ``results/bench_dly.csv`` and ``results/bench_dly.png``.
"""

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import digits_scaled, zipf_data

from dpgauss import PrivateCovariance, TailSensitiveCovariance

RESULTS = Path(__file__).resolve().parent / "results"

# (figure, d, n, N, rho): spec section 7.2 settings; reference values from the
# spec's table 7.3: Gauss (clipped), Sep (eigh), Ada (authors' code).
REFERENCE = {
    ("2", 10, 1000, 1, 0.1): (0.0293, 0.0423, 0.0361),
    ("2", 50, 1000, 1, 0.1): (0.123, 0.0922, 0.141),
    ("2", 200, 1000, 1, 0.1): (0.448, 0.11, 0.14),
    ("2", 800, 1000, 1, 0.1): (1.79, 0.2, 0.235),
    ("2", 10, 4000, 1, 0.1): (0.00847, 0.0103, 0.00947),
    ("2", 50, 4000, 1, 0.1): (0.0362, 0.0444, 0.0409),
    ("2", 200, 4000, 1, 0.1): (0.115, 0.0512, 0.133),
    ("2", 800, 4000, 1, 0.1): (0.448, 0.0571, 0.069),
    ("2", 10, 16000, 1, 0.1): (0.00194, 0.00281, 0.0024),
    ("2", 50, 16000, 1, 0.1): (0.0096, 0.013, 0.011),
    ("2", 200, 16000, 1, 0.1): (0.0329, 0.0325, 0.0376),
    ("2", 800, 16000, 1, 0.1): (0.113, 0.0265, 0.0363),
    ("3a", 200, 50000, 1, 0.1): (0.0118, 0.0153, 0.0135),
    ("3a", 200, 50000, 2, 0.1): (0.0106, 0.0106, 0.012),
    ("3a", 200, 50000, 4, 0.1): (0.00907, 0.00274, 0.0036),
    ("3a", 200, 50000, 8, 0.1): (0.00898, 0.00197, 0.00174),
    ("3a", 200, 50000, 16, 0.1): (0.00892, 0.000966, 0.000409),
    ("3a", 200, 50000, 32, 0.1): (0.0089, 0.000916, 0.000272),
    ("3b", 10, 50000, 4, 0.1): (0.000607, 0.000842, 0.000695),
    ("3b", 50, 50000, 4, 0.1): (0.00263, 0.00273, 0.00304),
    ("3b", 800, 50000, 4, 0.1): (0.0359, 0.00414, 0.00498),
    ("3c", 200, 1000, 4, 0.1): (0.446, 0.0537, 0.024),
    ("3c", 200, 5000, 4, 0.1): (0.0896, 0.0198, 0.0122),
    ("3c", 200, 20000, 4, 0.1): (0.0225, 0.00544, 0.00664),
    ("3c", 200, 200000, 4, 0.1): (0.00246, 0.00171, 0.00279),
    ("3d", 200, 50000, 4, 0.0001): (0.282, 0.0409, 0.0168),
    ("3d", 200, 50000, 4, 0.001): (0.0898, 0.0193, 0.014),
    ("3d", 200, 50000, 4, 0.01): (0.0285, 0.00656, 0.00776),
    ("3d", 200, 50000, 4, 1.0): (0.00302, 0.00182, 0.00345),
    ("3d", 200, 50000, 4, 10.0): (0.00109, 0.00117, 0.00124),
}
DIGITS_RHOS = (0.01, 0.1, 1.0, 10.0)
METHODS = (
    "gauss", "separate", "auto", "coinpress", "tail", "tail_loose", "eigen", "zero"
)  # fmt: skip
EIGEN_MAX_D = 50  # EMCov is O(d^4) (7.5 s per fit at d = 200); the paper drops it too


def _skewed(d, n, N, rho):
    """The issue's "skewed data" settings: N >= 8, rho <= 1e-3 or n <= 5000."""
    return N >= 8 or rho <= 1e-3 or n <= 5000


def _errors(X, rho, seed, with_eigen):
    """Frobenius errors of every method on one dataset (second moment target)."""
    n = X.shape[0]
    M = X.T @ X / n
    out = {"zero": float(np.linalg.norm(M))}
    # Every fit spends: the table measures the releases where the default would
    # refuse as well (bench_real counts refusals).
    common = {"rho": rho, "center": False, "random_state": seed, "on_useless": "warn"}
    methods = ("gauss", "separate", "auto", "coinpress")
    for method in methods + (("eigen",) if with_eigen else ()):
        est = PrivateCovariance(method=method, data_norm=1.0, **common).fit(X)
        out[method] = float(np.linalg.norm(est.covariance_ - M))
    for name, bound in (("tail", 1.0), ("tail_loose", 100.0)):
        est = TailSensitiveCovariance(data_norm=bound, **common).fit(X)
        out[name] = float(np.linalg.norm(est.covariance_ - M))
    return out


def _run_setting(key, reps):
    fig, d, n, N, rho = key
    start = time.perf_counter()
    rows = []
    for rep in range(reps):
        X = digits_scaled() if fig == "digits" else zipf_data(n, d, N, seed=1000 + rep)
        rows.append(_errors(X, rho, seed=rep, with_eigen=d <= EIGEN_MAX_D))
    means = {m: float(np.mean([r[m] for r in rows])) for m in rows[0]}
    means["seconds"] = time.perf_counter() - start
    return key, means


def _check(key, means):
    """The issue's targets for one setting; returns a list of failure strings."""
    _, d, n, N, rho = key
    fails = []
    best_fixed = min(means["gauss"], means["separate"])
    if means["auto"] > 1.15 * best_fixed:
        fails.append(f"auto {means['auto'] / best_fixed:.2f}x best")
    if means["tail_loose"] > 1.5 * means["tail"]:
        fails.append(f"tail 100x-loose {means['tail_loose'] / means['tail']:.2f}x")
    ref = REFERENCE.get(key)
    if ref is not None:
        for i, method in enumerate(("gauss", "separate")):
            if means[method] > 1.10 * ref[i]:
                fails.append(f"{method} {means[method] / ref[i]:.2f}x ref")
        if _skewed(d, n, N, rho):
            if means["tail"] > ref[2]:
                fails.append(f"tail {means['tail'] / ref[2]:.2f}x Ada ref")
        elif means["tail"] > 1.2 * best_fixed:
            fails.append(f"tail {means['tail'] / best_fixed:.2f}x best fixed")
    return fails


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="only d <= 200, n <= 5e4")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--plot-only", action="store_true", help="redraw from results/*.partial.jsonl"
    )
    args = parser.parse_args()
    if args.plot_only:
        lines = (RESULTS / "bench_dly.partial.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        _plot([(tuple(r["key"]), r["means"]) for r in records])
        return
    keys = list(REFERENCE)
    if args.quick:
        keys = [k for k in keys if k[1] <= 200 and k[2] <= 50000]
    keys += [("digits", 64, 1797, 0, rho) for rho in DIGITS_RHOS]
    RESULTS.mkdir(exist_ok=True)
    keys.sort(key=lambda k: -(k[1] ** 2) * k[2])  # heaviest first, for load balance
    results = []
    partial = RESULTS / "bench_dly.partial.jsonl"
    partial.write_text("")
    jobs = Parallel(n_jobs=args.jobs, return_as="generator_unordered")
    for key, means in jobs(delayed(_run_setting)(k, args.reps) for k in keys):
        results.append((key, means))
        with open(partial, "a") as fh:  # progress survives an interrupted run
            fh.write(json.dumps({"key": list(key), "means": means}) + "\n")
    results.sort(key=lambda r: r[0])  # figure, then d, n, N, rho
    lines = [
        f"Mean Frobenius error over {args.reps} repetitions (second moment, rows in "
        "the unit ball, zCDP). ref = the spec's numpy port of the authors' code "
        "(5 repetitions): Gauss, Sep, Ada.",
        "",
        "| fig | d | n | N | rho | gauss | sep | auto | coinpress | tail | tail 100x | "
        "eigen | "
        "zero | ref gauss | ref sep | ref Ada | targets |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    failures = 0
    with open(RESULTS / "bench_dly.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            ["fig", "d", "n", "N", "rho", *METHODS, "ref_gauss", "ref_sep", "ref_ada"]
        )
        for key, means in results:
            ref = REFERENCE.get(key, (np.nan,) * 3)
            fails = _check(key, means)
            failures += bool(fails)
            cells = [f"{means.get(m, np.nan):.3g}" for m in METHODS]
            lines.append(
                "| "
                + " | ".join(str(k) for k in key)
                + " | "
                + " | ".join(cells)
                + " | "
                + " | ".join(f"{r:.3g}" for r in ref)
                + " | "
                + ("ok" if not fails else "; ".join(fails))
                + " |"
            )
            writer.writerow([*key, *(means.get(m, "") for m in METHODS), *ref])
    lines.append("")
    lines.append(f"{failures} of {len(results)} settings miss a target.")
    text = "\n".join(lines)
    print(text)
    (RESULTS / "bench_dly.md").write_text(text + "\n")
    _plot(results)


def _plot(results):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the benchmarks extra installs matplotlib
        print("matplotlib not installed: no plot")
        return
    panels = [("3a", 3, "N"), ("3b", 1, "d"), ("3c", 2, "n"), ("3d", 4, "rho")]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    for ax, (name, index, label) in zip(axes, panels, strict=True):
        chosen = sorted(
            [(k[index], m) for k, m in results if k[0] == name], key=lambda t: t[0]
        )
        xs = [x for x, _ in chosen]
        for method in ("gauss", "separate", "auto", "coinpress", "tail", "zero"):
            ax.plot(xs, [m[method] for _, m in chosen], marker="o", label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_title(f"Fig. {name}")
    axes[0].set_ylabel("Frobenius error")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "bench_dly.png", dpi=100)


if __name__ == "__main__":
    main()
