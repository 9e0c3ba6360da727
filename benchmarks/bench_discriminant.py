"""Private discriminant analysis against scikit-learn's.

5-fold stratified cross-validated accuracy of PrivateLinearDiscriminantAnalysis
and PrivateQuadraticDiscriminantAnalysis (default parameters) at rho = 0.01 to
10, next to scikit-learn's LinearDiscriminantAnalysis and
QuadraticDiscriminantAnalysis (reg_param=0.1, which its fits on digits need),
on

* load_digits, pixels / 16, data_norm 8 (every row has norm <= 8);
* load_breast_cancer, standardised with the full data's mean and sd (as the
  target states; a fully private pipeline would use PrivateStandardScaler),
  data_norm 2 sqrt(30).

Target: at rho = 1, LDA within 0.03 of scikit-learn's on both.
Mean over ``--seeds`` seeds (each a fresh fold split and fresh noise) and the
standard deviation across seeds. Writes results/bench_discriminant.md and,
with matplotlib, results/bench_discriminant.png.

    OMP_NUM_THREADS=1 python benchmarks/bench_discriminant.py [--seeds 5]
"""

import argparse
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.discriminant_analysis import (
    LinearDiscriminantAnalysis,
    QuadraticDiscriminantAnalysis,
)
from sklearn.model_selection import StratifiedKFold

from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)

RESULTS = Path(__file__).resolve().parent / "results"
RHOS = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]


def datasets():
    digits = load_digits()
    cancer = load_breast_cancer()
    Xc = (cancer.data - cancer.data.mean(0)) / cancer.data.std(0)
    return {
        "digits": (digits.data / 16.0, digits.target, 8.0),
        "breast cancer": (Xc, cancer.target, 2.0 * np.sqrt(30)),
    }


def cv_accuracy(make, X, y, seed):
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    return float(
        np.mean(
            [
                np.mean(make().fit(X[a], y[a]).predict(X[b]) == y[b])
                for a, b in folds.split(X, y)
            ]
        )
    )


def private_cv(cls, X, y, norm, seeds, **params):
    """CV accuracy of ``cls`` for each seed (classes: the public label set of
    these public data sets, 0-9 and 0-1)."""
    make = partial(cls, classes=np.unique(y), data_norm=norm, **params)
    return np.array(
        [cv_accuracy(partial(make, random_state=s), X, y, s) for s in range(seeds)]
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    start = time.perf_counter()
    for name, (X, y, norm) in datasets().items():
        refs = {
            "LDA": np.mean(
                [
                    cv_accuracy(LinearDiscriminantAnalysis, X, y, s)
                    for s in range(args.seeds)
                ]
            ),
            "QDA": np.mean(
                [
                    cv_accuracy(
                        lambda: QuadraticDiscriminantAnalysis(reg_param=0.1), X, y, s
                    )
                    for s in range(args.seeds)
                ]
            ),
        }
        for label, cls in (
            ("LDA", PrivateLinearDiscriminantAnalysis),
            ("QDA", PrivateQuadraticDiscriminantAnalysis),
        ):
            settings = [(label, rho, {"rho": rho}) for rho in RHOS]
            # Fixed clipping to data_norm at rho = 1: what the adaptive ball buys.
            settings.append((label + " fixed", 1.0, {"rho": 1.0, "clipping": "fixed"}))
            for model, rho, params in settings:
                accs = private_cv(cls, X, y, norm, args.seeds, **params)
                ref = float(refs[label])
                rows.append((name, model, rho, accs.mean(), accs.std(), ref))
                print(rows[-1], flush=True)
    lines = [
        "# Private discriminant analysis: 5-fold CV accuracy",
        "",
        "`OMP_NUM_THREADS=1 python benchmarks/bench_discriminant.py "
        f"--seeds {args.seeds}` ({time.perf_counter() - start:.0f} s). Mean (sd) "
        "over seeds; the last column is "
        "scikit-learn's non-private estimator (QDA with reg_param=0.1); 'fixed': "
        "clipping='fixed' (rows clipped to data_norm around the origin) at rho = 1.",
        "",
        "| data | model | rho | private accuracy | sd | scikit-learn | gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, label, rho, acc, sd, ref in rows:
        lines.append(
            f"| {name} | {label} | {rho:g} | {acc:.3f} | {sd:.3f} | {ref:.3f} "
            f"| {ref - acc:+.3f} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_discriminant.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, name in zip(axes, ["digits", "breast cancer"], strict=True):
        for label, colour in (("LDA", "C0"), ("QDA", "C1")):
            pts = [
                (r, a, s, ref)
                for n, m, r, a, s, ref in rows
                if n == name and m == label
            ]
            r, a, s, ref = map(np.array, zip(*pts, strict=True))
            fixed = [
                a for n, m, _, a, _, _ in rows if n == name and m == label + " fixed"
            ]
            ax.plot(
                [1.0],
                fixed,
                color=colour,
                marker="x",
                linestyle="none",
                label=f"{label}, fixed clipping",
            )
            ax.errorbar(
                r, a, yerr=s, color=colour, marker="o", label=f"private {label}"
            )
            ax.axhline(
                ref[0], color=colour, linestyle="--", label=f"scikit-learn {label}"
            )
        ax.set_xscale("log")
        ax.set_xlabel("rho (zCDP)")
        ax.set_title(name)
    axes[0].set_ylabel("5-fold CV accuracy")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "bench_discriminant.png", dpi=120)


if __name__ == "__main__":
    main()
