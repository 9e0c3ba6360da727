"""PrivateLinearRegression against diffprivlib, SubsampleAggregate and least squares.

Draft for issue 31 (the estimator is not exported yet). Two parts:

* ``synthetic``: d = 5, features uniform in [-1, 1], noise sd 0.5, a random
  direction of norm 2.5, ``target_bounds`` (-8, 8): the median over seeds of
  the coefficients' l2 error. Target: at most half diffprivlib's under pure
  epsilon 1 at n = 1e4 and 1e5.
* ``real``: diabetes (scikit-learn), fair and randhie (statsmodels), codebook
  boxes (``_real_data.codebook_box``), a quarter held out: the median held-out
  R^2 over splits, and how many fits the default refused before the spend.
  Targets: within 0.05 of least squares at rho 0.5; above the zero-coefficient
  model (R^2 = 0) at pure epsilon 0.5, or a refusal.

diffprivlib runs in its own interpreter (``/work/peers/dpl``; see
``_peers.py``), with the features mapped into the unit box first (the same
public map) and its coefficients mapped back; absent, its rows read n/a.

Run: ``cd benchmarks && PYTHONPATH=.. python bench_linear.py [--seeds 10]``.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from _real_data import codebook_box
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from dpgauss import SubsampleAggregate
from dpgauss.exceptions import UselessFitError
from dpgauss.linear_model._linear import PrivateLinearRegression

PEER = "/work/peers/dpl/bin/python"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_peer_script.py")


def _diffprivlib(jobs):
    """diffprivlib's coefficients (and intercepts) for ``jobs``: dicts of X
    (unit box), y, ylo, yhi, eps, seed; None where the peer is absent."""
    if not os.path.exists(PEER) or not jobs:
        return [None] * len(jobs)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        arrays = {}
        for i, job in enumerate(jobs):
            for field, value in {"task": "linreg", **job}.items():
                arrays[f"{i}__{field}"] = np.asarray(value)
        np.savez(src, **arrays)
        done = subprocess.run(
            [PEER, SCRIPT, "diffprivlib", src, dst],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            return [None] * len(jobs)
        data = np.load(dst)
        out = [{} for _ in jobs]
        for key in data.files:
            i, field = key.split("__", 1)
            out[int(i)][field] = data[key]
        return [None if "error" in o else o for o in out]


def synthetic(seeds, ns=(10_000, 100_000), d=5):
    """Median coefficient error of each method at each n."""
    lines = [
        "| n | privacy | PrivateLinearRegression | diffprivlib | "
        "SubsampleAggregate | least squares |",
        "|---|---|---|---|---|---|",
    ]
    for n in ns:
        errs = {}
        jobs, truths = [], []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            beta = rng.standard_normal(d)
            beta *= 2.5 / np.linalg.norm(beta)
            X = rng.uniform(-1.0, 1.0, size=(n, d))
            y = X @ beta + rng.normal(0.0, 0.5, n)
            truths.append(beta)
            fits = {
                "ours pure": {"epsilon": 1.0},
                "ours rho": {"rho": 0.5},
            }
            for name, kw in fits.items():
                model = PrivateLinearRegression(
                    bounds=(-1.0, 1.0),
                    target_bounds=(-8.0, 8.0),
                    random_state=seed,
                    on_useless="warn",
                    **kw,
                ).fit(X, y)
                errs.setdefault(name, []).append(np.linalg.norm(model.coef_ - beta))
            agg = SubsampleAggregate(
                LinearRegression(), epsilon=1.0, delta=1e-6, random_state=seed
            )
            try:
                agg.fit(X, y)
                err = np.linalg.norm(np.ravel(agg.statistic_)[:d] - beta)
            except UselessFitError:  # refused before the spend: reported as nan
                err = np.nan
            errs.setdefault("agg", []).append(err)
            ls = LinearRegression().fit(X, y).coef_
            errs.setdefault("ls", []).append(np.linalg.norm(ls - beta))
            jobs.append(
                {
                    "X": X,
                    "y": y,
                    "lower": -np.ones(d),
                    "upper": np.ones(d),
                    "ylo": -8.0,
                    "yhi": 8.0,
                    "eps": 1.0,
                    "seed": seed,
                }
            )
        peer = _diffprivlib(jobs)
        errs["dpl"] = [
            np.nan if r is None else np.linalg.norm(np.ravel(r["coef"]) - b)
            for r, b in zip(peer, truths, strict=True)
        ]

        def med(key, errs=errs):
            return f"{np.nanmedian(errs[key]):.4f}"

        lines.append(
            f"| {n:,} | pure epsilon 1 | {med('ours pure')} | {med('dpl')} | "
            f"{med('agg')} (epsilon 1, delta 1e-6) | {med('ls')} |"
        )
        lines.append(f"| {n:,} | rho 0.5 | {med('ours rho')} | | | {med('ls')} |")
    return lines


def _tables():
    import statsmodels.api as sm

    X, y = load_diabetes(return_X_y=True)
    yield "diabetes", X, y
    data = sm.datasets.fair.load_pandas().data
    yield "fair", data.drop(columns="affairs").to_numpy(float), data["affairs"]
    data = sm.datasets.randhie.load_pandas().data
    yield "randhie", data.drop(columns="mdvis").to_numpy(float), data["mdvis"]


def _model(boxes, seed, policy, kw):
    return PrivateLinearRegression(
        bounds=boxes[0],
        target_bounds=boxes[1],
        random_state=seed,
        on_useless=policy,
        **kw,
    )


def real(seeds):
    """Median held-out R^2 per table and privacy, refusals counted."""
    lines = [
        "| table | n, d | least squares | privacy | PrivateLinearRegression "
        "(refused) | with on_useless='warn' |",
        "|---|---|---|---|---|---|",
    ]
    for name, X, y in _tables():
        y = np.asarray(y, dtype=float)
        lower, upper = codebook_box(X)
        (ylo,), (yhi,) = codebook_box(y[:, None])
        boxes = ((lower, upper), (ylo, yhi))
        scores = {}
        for seed in range(seeds):
            split = train_test_split(X, y, test_size=0.25, random_state=seed)
            Xtr, Xte, ytr, yte = split
            ls = LinearRegression().fit(Xtr, ytr).score(Xte, yte)
            scores.setdefault("ls", []).append(ls)
            for label, kw in (
                ("rho 0.5", {"rho": 0.5}),
                ("epsilon 0.5", {"epsilon": 0.5}),
            ):
                try:
                    r2 = _model(boxes, seed, "raise", kw).fit(Xtr, ytr).score(Xte, yte)
                    refused = 0
                except UselessFitError:
                    r2, refused = np.nan, 1
                warned = _model(boxes, seed, "warn", kw).fit(Xtr, ytr).score(Xte, yte)
                scores.setdefault(label, []).append(r2)
                scores.setdefault(label + " refused", []).append(refused)
                scores.setdefault(label + " warn", []).append(warned)
        for label in ("rho 0.5", "epsilon 0.5"):
            got = scores[label]
            shown = (
                "all refused" if np.all(np.isnan(got)) else f"{np.nanmedian(got):.3f}"
            )
            lines.append(
                f"| {name} | {X.shape[0]:,}, {X.shape[1]} | "
                f"{np.median(scores['ls']):.3f} | {label} | {shown} "
                f"({sum(scores[label + ' refused'])} of {seeds}) | "
                f"{np.median(scores[label + ' warn']):.3f} |"
            )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    text = "\n".join(
        [
            "## Synthetic (median l2 error of the coefficients)",
            "",
            *synthetic(args.seeds),
            "",
            "## Real tables (median held-out R^2)",
            "",
            *real(max(3, args.seeds // 2)),
        ]
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
