"""PrivateLinearRegression against diffprivlib, SubsampleAggregate and least squares.

Three parts (issue 31):

* ``synthetic``: d = 5, features uniform in [-1, 1], noise sd 0.5, in two
  settings: the issue's (every ``beta_j = 2.5``, ``target_bounds`` +-15, where
  diffprivlib's errors are the issue's 0.90 and 0.095) and a random direction
  of norm 2.5 in a box +-8; the median over seeds of the coefficients' l2
  error at n = 1e4 and 1e5. Target: at most half diffprivlib's under pure
  epsilon 1.
* ``real``: diabetes (scikit-learn), fair and randhie (statsmodels), codebook
  boxes (``_real_data.codebook_box``), a quarter held out: the median held-out
  R^2 over splits, how many fits the default refused before the spend, the
  zero-coefficient model (the training mean, non-private) and diffprivlib on
  the same boxes. Targets: within 0.05 of least squares at rho 0.5; above
  the zero-coefficient model at pure epsilon 0.5, or a refusal.
* ``sweep``: n = 1e3 to 1e6, d = 5, 20, 50 (a random direction of norm 2.5,
  noise sd 0.5, box +-8), rho 0.001 to 1 and pure epsilon 0.1 to 10: the
  median coefficient error and population R^2 (exact for uniform features:
  ``1 - (s^2 + ||coef - beta||^2 / 3 + intercept^2) / (||beta||^2 / 3 +
  s^2)``), fitted with ``on_useless="warn"``, and the share the default
  refuses; a table and ``results/bench_linear.png``.

diffprivlib runs in its own interpreter (``/work/peers/dpl``; see
``_peers.py``) on the rows mapped into the box [-1, 1]^d (the same public
map), with the same target box; absent, its cells read n/a.

Run: ``cd benchmarks && PYTHONPATH=.. python bench_linear.py [--seeds 10]
[--parts synthetic,real,sweep] [--out results/bench_linear]`` (about 10
minutes with the defaults).
"""

import argparse
import os
import sys
import warnings

import numpy as np
from _peers import run_script
from _real_data import codebook_box
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from dpgauss import PrivateLinearRegression, SubsampleAggregate
from dpgauss.exceptions import UselessFitError

PEER = "/work/peers/dpl/bin/python"


def _diffprivlib(jobs):
    """diffprivlib's coefficients and intercepts for ``jobs``: dicts of X (in
    [-1, 1]^d), y, ylo, yhi, eps, seed; None where the peer is absent."""
    if not os.path.exists(PEER) or not jobs:
        return [None] * len(jobs)
    fields = []
    for job in jobs:
        d = job["X"].shape[1]
        box = {"task": "linreg", "lower": -np.ones(d), "upper": np.ones(d)}
        fields.append({**box, **job})
    results, failure, _ = run_script(PEER, "diffprivlib", fields, 1800)
    if failure is not None:
        return [None] * len(jobs)
    out = [results.get(i, {}) for i in range(len(jobs))]
    return [None if "error" in o else o for o in out]


def _fit(kw, seed, boxes, X, y):
    """The fit, spent even where the default refuses (``on_useless="warn"``),
    and whether the default refuses it before the spend: a fit with the
    default that raises UselessFitError spends nothing. (A UtilityWarning
    alone does not say so: a fit that falls back to the intercept after its
    release warns too.)"""

    def model(policy):
        return PrivateLinearRegression(
            bounds=boxes[0],
            target_bounds=boxes[1],
            random_state=seed,
            on_useless=policy,
            **kw,
        )

    try:
        return model("raise").fit(X, y), False
    except UselessFitError:
        return model("warn").fit(X, y), True


def _draw(rng, n, d, setting):
    if setting == "issue":
        beta, box = np.full(d, 2.5), 15.0
    else:
        beta = rng.standard_normal(d)
        beta *= 2.5 / np.linalg.norm(beta)
        box = 8.0
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    return X, X @ beta + rng.normal(0.0, 0.5, n), beta, box


def synthetic(seeds, ns=(10_000, 100_000), d=5):
    """Median coefficient error of each method at each n and setting."""
    lines = [
        "| setting | n | privacy | PrivateLinearRegression | diffprivlib | "
        "ratio | SubsampleAggregate | least squares |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for setting, label in (
        ("issue", "beta_j = 2.5, +-15"),
        ("norm", "norm of beta 2.5, +-8"),
    ):
        for n in ns:
            errs, jobs, truths = {}, [], []
            for seed in range(seeds):
                X, y, beta, box = _draw(np.random.default_rng(seed), n, d, setting)
                truths.append(beta)
                boxes = ((-1.0, 1.0), (-box, box))
                for name, kw in (("pure", {"epsilon": 1.0}), ("rho", {"rho": 0.5})):
                    model = _fit(kw, seed, boxes, X, y)[0]
                    errs.setdefault(name, []).append(np.linalg.norm(model.coef_ - beta))
                agg = SubsampleAggregate(
                    LinearRegression(), epsilon=1.0, delta=1e-6, random_state=seed
                )
                try:
                    agg.fit(X, y)
                    err = np.linalg.norm(np.ravel(agg.statistic_)[:d] - beta)
                except UselessFitError:  # refused before the spend
                    err = np.nan
                errs.setdefault("agg", []).append(err)
                ls = LinearRegression().fit(X, y).coef_
                errs.setdefault("ls", []).append(np.linalg.norm(ls - beta))
                jobs.append(
                    {"X": X, "y": y, "ylo": -box, "yhi": box, "eps": 1.0, "seed": seed}
                )
            peer = _diffprivlib(jobs)
            errs["dpl"] = [
                np.nan if r is None else np.linalg.norm(np.ravel(r["coef"]) - b)
                for r, b in zip(peer, truths, strict=True)
            ]
            med = {
                key: np.nanmedian(v) if np.any(np.isfinite(v)) else np.nan
                for key, v in errs.items()
            }
            ratio = med["pure"] / med["dpl"]
            lines.append(
                f"| {label} | {n:,} | pure epsilon 1 | {med['pure']:.4f} | "
                f"{med['dpl']:.4f} | {ratio:.2f} | {med['agg']:.4f} "
                f"(epsilon 1, delta 1e-6) | {med['ls']:.4f} |"
            )
            lines.append(
                f"| {label} | {n:,} | rho 0.5 | {med['rho']:.4f} | | | | "
                f"{med['ls']:.4f} |"
            )
    return lines


def _tables():
    import statsmodels.api as sm

    X, y = load_diabetes(return_X_y=True)
    yield "diabetes", X, y
    data = sm.datasets.fair.load_pandas().data
    yield "fair", data.drop(columns="affairs").to_numpy(float), data["affairs"]
    data = sm.datasets.randhie.load_pandas().data
    yield "randhie", data.drop(columns="mdvis").to_numpy(float), data["mdvis"]


PRIVACY = (
    ("rho 0.5", {"rho": 0.5}, None),
    ("epsilon 0.5", {"epsilon": 0.5}, 0.5),
    ("epsilon 1", {"epsilon": 1.0}, 1.0),
)


def real(splits):
    """Median held-out R^2 per table and privacy, refusals counted."""
    lines = [
        "| table | n, d | least squares | zero model | privacy | "
        "PrivateLinearRegression (refused) | with on_useless='warn' | "
        "diffprivlib |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, X, y in _tables():
        y = np.asarray(y, dtype=float)
        lower, upper = codebook_box(X)
        (ylo,), (yhi,) = codebook_box(y[:, None])
        boxes = ((lower, upper), (ylo, yhi))
        center, half = (upper + lower) / 2.0, (upper - lower) / 2.0
        scores, jobs, tests = {}, [], []
        for seed in range(splits):
            split = train_test_split(X, y, test_size=0.25, random_state=seed)
            Xtr, Xte, ytr, yte = split
            scores.setdefault("ls", []).append(
                LinearRegression().fit(Xtr, ytr).score(Xte, yte)
            )
            zero = np.full(len(yte), ytr.mean())
            scores.setdefault("zero", []).append(r2_score(yte, zero))
            for label, kw, eps in PRIVACY:
                model, refused = _fit(kw, seed, boxes, Xtr, ytr)
                r2 = model.score(Xte, yte)
                scores.setdefault(label + " warn", []).append(r2)
                scores.setdefault(label, []).append(np.nan if refused else r2)
                scores.setdefault(label + " refused", []).append(int(refused))
                if eps is not None:
                    z = np.clip((Xtr - center) / half, -1.0, 1.0)
                    jobs.append(
                        {
                            "X": z,
                            "y": ytr,
                            "ylo": ylo,
                            "yhi": yhi,
                            "eps": eps,
                            "seed": seed,
                        }
                    )
                    tests.append((label, np.clip((Xte - center) / half, -1, 1), yte))
        for (label, zte, yte), got in zip(tests, _diffprivlib(jobs), strict=True):
            r2 = np.nan
            if got is not None:
                r2 = r2_score(
                    yte, zte @ np.ravel(got["coef"]) + np.ravel(got["intercept"])[0]
                )
            scores.setdefault(label + " dpl", []).append(r2)
        for label, _, eps in PRIVACY:
            got = scores[label]
            shown = (
                "all refused" if np.all(np.isnan(got)) else f"{np.nanmedian(got):.3f}"
            )
            peer = scores.get(label + " dpl", [np.nan])
            peer = f"{np.nanmedian(peer):.3f}" if np.any(np.isfinite(peer)) else "n/a"
            lines.append(
                f"| {name} | {X.shape[0]:,}, {X.shape[1]} | "
                f"{np.median(scores['ls']):.3f} | {np.median(scores['zero']):.4f} | "
                f"{label} | {shown} ({sum(scores[label + ' refused'])} of {splits}) | "
                f"{np.median(scores[label + ' warn']):.3f} | "
                f"{peer if eps is not None else ''} |"
            )
    return lines


SWEEP_BUDGETS = (
    ("rho", 0.001),
    ("rho", 0.01),
    ("rho", 0.1),
    ("rho", 1.0),
    ("epsilon", 0.1),
    ("epsilon", 1.0),
    ("epsilon", 10.0),
)


def sweep(seeds, ns=(1_000, 10_000, 100_000, 1_000_000), ds=(5, 20, 50)):
    """Coefficient error and population R^2 against the budget: rows of
    (n, d, kind, value, error, r2, refused share, least squares' error)."""
    rows = []
    for d in ds:
        for n in ns:
            results = {}
            for seed in range(seeds):
                X, y, beta, box = _draw(np.random.default_rng(seed), n, d, "norm")
                boxes = ((-1.0, 1.0), (-box, box))
                total = float(beta @ beta) / 3.0 + 0.25
                ls = LinearRegression().fit(X, y).coef_
                results.setdefault("ls", []).append(np.linalg.norm(ls - beta))
                for kind, value in SWEEP_BUDGETS:
                    model, refused = _fit({kind: value}, seed, boxes, X, y)
                    err = np.linalg.norm(model.coef_ - beta)
                    excess = err * err / 3.0 + model.intercept_**2
                    key = (kind, value)
                    results.setdefault(key, []).append(
                        (err, 1.0 - (0.25 + excess) / total, refused)
                    )
                del X, y
            for kind, value in SWEEP_BUDGETS:
                got = np.array(results[(kind, value)])
                rows.append(
                    (
                        n,
                        d,
                        kind,
                        value,
                        float(np.median(got[:, 0])),
                        float(np.median(got[:, 1])),
                        float(np.mean(got[:, 2])),
                        float(np.median(results["ls"])),
                    )
                )
            print(f"sweep: d = {d}, n = {n:,} done", file=sys.stderr, flush=True)
    return rows


def sweep_lines(rows):
    lines = [
        "| d | n | budget | coefficient error | R^2 (population) | "
        "refused by default | least squares' error |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, d, kind, value, err, r2, refused, ls in rows:
        lines.append(
            f"| {d} | {n:,} | {kind} {value:g} | {err:.4f} | {r2:.3f} | "
            f"{refused:.0%} | {ls:.4f} |"
        )
    return lines


def sweep_plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = sorted({r[1] for r in rows})
    ns = sorted({r[0] for r in rows})
    fig, axes = plt.subplots(2, len(ds), figsize=(4.2 * len(ds), 7), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, d in enumerate(ds):
        for i, n in enumerate(ns):
            for kind, style in (("rho", "-"), ("epsilon", "--")):
                got = [r for r in rows if r[0] == n and r[1] == d and r[2] == kind]
                x = [r[3] for r in got]
                label = f"n = {n:,}" if kind == "rho" else None
                axes[0, j].plot(
                    x,
                    [r[4] for r in got],
                    style,
                    marker="o",
                    color=colours[i],
                    label=label,
                )
                axes[1, j].plot(
                    x, [r[5] for r in got], style, marker="o", color=colours[i]
                )
        axes[0, j].set_title(f"d = {d}")
        axes[0, j].set_xscale("log")
        axes[0, j].set_yscale("log")
        axes[1, j].set_xscale("log")
        axes[1, j].set_ylim(-0.1, 1.0)
        axes[1, j].set_xlabel("rho (solid) or pure epsilon (dashed)")
    axes[0, 0].set_ylabel("l2 error of the coefficients")
    axes[1, 0].set_ylabel("population R^2 (least squares: 0.89)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("PrivateLinearRegression: |beta| = 2.5, noise sd 0.5, box +-8")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--parts", default="synthetic,real,sweep")
    parser.add_argument("--out", default=None, help="write OUT.md (and OUT.png)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    parts = args.parts.split(",")
    text = []
    if "synthetic" in parts:
        text += [
            "## Synthetic (median l2 error of the coefficients)",
            "",
            *synthetic(args.seeds),
            "",
        ]
    if "real" in parts:
        text += ["## Real tables (median held-out R^2)", "", *real(args.seeds), ""]
    if "sweep" in parts:
        rows = sweep(max(3, args.seeds // 3))
        text += [
            "## Sweep (median over seeds; fitted with on_useless='warn')",
            "",
            *sweep_lines(rows),
            "",
        ]
        if args.out:
            sweep_plot(rows, args.out + ".png")
    out = "\n".join(text)
    print(out)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write("# bench_linear.py\n\n" + out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
