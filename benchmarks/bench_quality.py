"""Covariance quality where users meet it first: small real data, auto, small n.

Run: ``.venv/bin/python benchmarks/bench_quality.py [--reps 20] [--quick]``.

Every number is the mean over ``reps`` fits (fresh noise each) of the relative
Frobenius error ``||estimate - C||_F / ||C||_F`` against the non-private
covariance C (population normalisation), so the zero matrix scores 1.0. Settings
(the issue's targets in brackets):

* standardized ``load_wine``, ``load_breast_cancer``, ``load_diabetes``,
  ``load_iris`` at rho = 0.1, data_norm = 2 sqrt(d) [default < 0.9, tail < 0.8];
* digits (pixels / 16, data_norm = 8) at rho = 0.1 and 1 [default < 0.95, < 0.7];
* isotropic Gaussian rows, d = 400, n = 100,000, rho = 0.1, and one spike 100x
  the rest, d = 50, n = 10,000, rho = 1 (data_norm = 2 sqrt(trace)) [auto within
  1.15x of the better of gauss and separate];
* TailSensitiveCovariance at n = 150 (iris, and the 150 first digits of class 0)
  [within 1.25x of the best fixed method], and with the mean 10 data-scales from
  the origin and ``center=True`` [within 4x of its error with a known center].

Writes ``results/bench_quality.md`` (and ``.png`` when matplotlib is installed).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    load_iris,
    load_wine,
)
from sklearn.preprocessing import StandardScaler

from dpgauss import PrivateCovariance, TailSensitiveCovariance
from dpgauss.exceptions import UtilityWarning

RESULTS = Path(__file__).resolve().parent / "results"


def _standardized(loader):
    return StandardScaler().fit_transform(loader(return_X_y=True)[0])


WARNED = set()  # settings where PrivateCovariance issued a UtilityWarning
NOTES = []  # lines printed under the table


def _error(est, X, C, seed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        fitted = est.set_params(random_state=seed).fit(X)
    if any(issubclass(w.category, UtilityWarning) for w in caught):
        WARNED.add(X.shape)
    return np.linalg.norm(fitted.covariance_ - C) / np.linalg.norm(C)


def _mean_error(make, X, reps):
    C = np.cov(X.T, bias=True)
    return float(np.mean([_error(make(), X, C, seed) for seed in range(reps)]))


def _estimators(rho, norm):
    return {
        "default": lambda: PrivateCovariance(
            rho=rho, data_norm=norm, on_useless="warn"
        ),
        "gauss": lambda: PrivateCovariance(
            method="gauss", rho=rho, data_norm=norm, on_useless="warn"
        ),
        "separate": lambda: PrivateCovariance(
            method="separate", rho=rho, data_norm=norm, on_useless="warn"
        ),
        "tail": lambda: TailSensitiveCovariance(
            rho=rho, data_norm=norm, on_useless="warn"
        ),
    }


def real_data(reps):
    """The small real datasets and digits: every estimator, one row each."""
    rows = []
    sets = [
        (name, _standardized(loader), None, 0.1, target)
        for name, loader, target in [
            ("wine", load_wine, (0.9, 0.8)),
            ("breast_cancer", load_breast_cancer, (0.9, 0.8)),
            ("diabetes", load_diabetes, (0.9, 0.8)),
            ("iris", load_iris, (0.9, 0.8)),
        ]
    ]
    digits = load_digits().data / 16.0
    sets += [
        ("digits", digits, 8.0, 0.1, (0.95, None)),
        ("digits", digits, 8.0, 1.0, (0.7, None)),
    ]
    for name, X, norm, rho, (default_target, tail_target) in sets:
        norm = norm or 2.0 * np.sqrt(X.shape[1])
        errors = {k: _mean_error(m, X, reps) for k, m in _estimators(rho, norm).items()}
        ok = errors["default"] < default_target and (
            tail_target is None or errors["tail"] < tail_target
        )
        rows.append(
            {"setting": f"{name} (n={X.shape[0]}, d={X.shape[1]}) rho={rho}", **errors}
            | {
                "target": f"default<{default_target}"
                + (f", tail<{tail_target}" if tail_target else ""),
                "ok": ok,
            }
        )
    return rows


def _gaussian(n, values, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, values.size)) * np.sqrt(values)


def auto_choice(reps):
    """auto against the better of gauss and separate on isotropic and spiked data."""
    rows = []
    spike = np.ones(50)
    spike[0] = 100.0
    for name, X, rho in [
        ("isotropic d=400 n=100000", _gaussian(100_000, np.ones(400), 0), 0.1),
        ("one spike 100x, d=50 n=10000", _gaussian(10_000, spike, 1), 1.0),
    ]:
        norm = 2.0 * np.sqrt(np.sum(np.var(X, axis=0)))
        errors = {
            k: _mean_error(m, X, reps)
            for k, m in _estimators(rho, norm).items()
            if k != "tail"
        }
        best = min(errors["gauss"], errors["separate"])
        rows.append(
            {"setting": f"{name} rho={rho}", **errors, "tail": float("nan")}
            | {"target": "default<=1.15 best", "ok": errors["default"] <= 1.15 * best}
        )
    return rows


def small_n(reps):
    """TailSensitiveCovariance at n=150 and with a far mean."""
    rows = []
    zeros = load_digits(n_class=1).data[:150] / 16.0
    for name, X, norm in [
        ("iris n=150", _standardized(load_iris), 4.0),
        ("digits class 0, n=150", zeros, 8.0),
    ]:
        errors = {k: _mean_error(m, X, reps) for k, m in _estimators(0.1, norm).items()}
        best = min(errors["gauss"], errors["separate"])
        # At n = 150 one fit in 20 whose scan stops far off moves a 20-fit mean
        # by several percent: the same ratio over 100 fits, for scale.
        many = {
            k: _mean_error(_estimators(0.1, norm)[k], X, 100)
            for k in ("gauss", "separate", "tail")
        }
        ratio = many["tail"] / min(many["gauss"], many["separate"])
        NOTES.append(
            f"{name}, 100 fits: tail {many['tail']:.3f}, best fixed "
            f"{min(many['gauss'], many['separate']):.3f} ({ratio:.2f}x)."
        )
        rows.append(
            {"setting": f"{name} rho=0.1", **errors}
            | {"target": "tail<=1.25 best fixed", "ok": errors["tail"] <= 1.25 * best}
        )
    X = _standardized(load_wine)
    scale = np.sqrt(np.sum(np.var(X, axis=0)))
    far = X + 10.0 * scale / np.sqrt(X.shape[1])
    norm = 2.0 * np.sqrt(X.shape[1])
    known = _mean_error(
        lambda: TailSensitiveCovariance(
            rho=0.1,
            data_norm=norm,
            location=far.mean(axis=0),
            center=False,
            on_useless="warn",
        ),
        far,
        reps,
    )
    private = _mean_error(
        lambda: TailSensitiveCovariance(
            rho=0.1, data_norm=11.0 * norm, on_useless="warn"
        ),
        far,
        reps,
    )
    rows.append(
        {
            "setting": "wine, mean 10 scales away, center=True rho=0.1",
            "default": float("nan"),
            "gauss": float("nan"),
            "separate": float("nan"),
            "tail": private,
            "target": f"tail<=4x known center ({known:.3f})",
            "ok": private <= 4.0 * known,
        }
    )
    return rows


def _table(rows, reps):
    lines = [
        f"Relative Frobenius error (zero matrix = 1), mean of {reps} fits.",
        "",
        "| setting | default | gauss | separate | tail | target | ok |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [f"{r[k]:.3f}" for k in ("default", "gauss", "separate", "tail")]
        lines.append(
            f"| {r['setting']} | "
            + " | ".join(cells)
            + f" | {r['target']} | {'ok' if r['ok'] else 'MISS'} |"
        )
    missed = sum(not r["ok"] for r in rows)
    lines += ["", f"{missed} of {len(rows)} settings miss a target."]
    lines += NOTES
    if WARNED:
        shapes = ", ".join(f"n={n}, d={d}" for n, d in sorted(WARNED))
        lines += [f"PrivateCovariance warned (UtilityWarning) on: {shapes}."]
    return "\n".join(lines) + "\n"


def _plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    keys = ("default", "gauss", "separate", "tail")
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for i, key in enumerate(keys):
        ax.bar(x + (i - 1.5) * 0.2, [r[key] for r in rows], 0.2, label=key)
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="zero matrix")
    ax.set_xticks(
        x,
        [r["setting"] for r in rows],
        rotation=30,
        ha="right",
        fontsize=7,
    )
    ax.set_ylabel("relative Frobenius error")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    args = parser.parse_args(argv)
    reps = 3 if args.quick else args.reps
    start = time.perf_counter()
    rows = real_data(reps) + auto_choice(reps) + small_n(reps)
    text = _table(rows, reps)
    print(text)
    print(f"({time.perf_counter() - start:.0f} s)")
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_quality.md").write_text(text)
        _plot(rows, RESULTS / "bench_quality.png")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
