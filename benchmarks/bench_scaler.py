"""PrivateStandardScaler against scikit-learn's StandardScaler.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scaler.py
[--seeds 20] [--quick]`` (about 30 seconds on one core).

Data: ``load_breast_cancer`` (569 rows, 30 features; a public data set, so
1.5 times its column maxima stand in for published bounds, with lower bound 0)
and a synthetic set (n = 100,000, d = 10, N(mu, diag(s^2)) with mu and s drawn
once, bounds mu +- 6 s rounded outwards). For rho in 0.01 .. 10, over seeds:

* the error of ``mean_`` in units of the true column sd, median over columns;
* the factor between ``scale_`` and the true sd, ``exp(|ln(ratio)|)``,
  median over columns;
* on breast cancer, the 5-fold cross-validated accuracy of
  ``make_pipeline(scaler, LogisticRegression())`` (the classifier is not
  private; the point is what the scaler costs) against StandardScaler's.

Medians over seeds. Writes ``results/bench_scaler.md`` (not with ``--quick``).
"""

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dpgauss import PrivateStandardScaler

RESULTS = Path(__file__).resolve().parent / "results"
RHOS = [0.01, 0.1, 1.0, 10.0]


def datasets():
    X, y = load_breast_cancer(return_X_y=True)
    cancer = (X, y, (0.0, np.ceil(X.max(axis=0) * 150) / 100))
    rng = np.random.default_rng(0)
    mu = rng.uniform(-100, 100, 10)
    sd = np.exp(rng.uniform(-2, 3, 10))
    Z = mu + sd * rng.standard_normal((100_000, 10))
    synthetic = (Z, None, (np.floor(mu - 6 * sd), np.ceil(mu + 6 * sd)))
    return {"breast cancer": cancer, "synthetic n=1e5, d=10": synthetic}


def errors(X, bounds, rho, seed):
    est = PrivateStandardScaler(
        bounds, rho=rho, random_state=seed, on_useless="warn"
    ).fit(X)
    sd = X.std(axis=0)
    mean_err = np.median(np.abs(est.mean_ - X.mean(axis=0)) / sd)
    factor = np.median(np.exp(np.abs(np.log(est.scale_ / sd))))
    return mean_err, factor


def accuracy(X, y, scaler):
    model = make_pipeline(scaler, LogisticRegression(max_iter=2000))
    return cross_val_score(model, X, y, cv=5).mean()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = 3 if args.quick else args.seeds
    lines = [
        "# PrivateStandardScaler against StandardScaler",
        "",
        f"`python benchmarks/bench_scaler.py --seeds {seeds}`; medians over seeds.",
        "",
        "| data | rho | mean error (sds) | scale factor | CV accuracy | "
        "StandardScaler accuracy |",
        "|---|---|---|---|---|---|",
    ]
    for name, (X, y, bounds) in datasets().items():
        reference = accuracy(X, y, StandardScaler()) if y is not None else None
        for rho in RHOS:
            found = np.array([errors(X, bounds, rho, s) for s in range(seeds)])
            acc = ""
            if y is not None:
                runs = [
                    accuracy(
                        X,
                        y,
                        PrivateStandardScaler(
                            bounds, rho=rho, random_state=s, on_useless="warn"
                        ),
                    )
                    for s in range(min(seeds, 5))
                ]
                acc = f"{np.median(runs):.3f}"
            ref = "" if reference is None else f"{reference:.3f}"
            line = (
                f"| {name} | {rho:g} | {np.median(found[:, 0]):.3g} | "
                f"{np.median(found[:, 1]):.4f} | {acc} | {ref} |"
            )
            print(line, flush=True)
            lines.append(line)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_scaler.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
