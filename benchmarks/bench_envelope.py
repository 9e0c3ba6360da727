"""PrivateEllipticEnvelope against scikit-learn's EllipticEnvelope.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_envelope.py
[--seeds 5] [--quick]`` (about 10 seconds on one core).

Outlier detection on the training rows (the unsupervised setting: the rows
are fitted and labelled; the labels are not private, the benchmark only
measures them). For rho in 0.01, 0.1, 1, 10 (and 1000, the large-rho
limit) and each seed:

* **breast cancer**: ``load_breast_cancer``'s 357 benign rows and 40
  malignant ones drawn at random per seed (10.1%; public contamination 0.1).
  The private pipeline is private end to end: ``PrivateStandardScaler``
  (bounds 0 and 1.5 times the column maxima, standing in for published
  bounds as in ``bench_scaler.py``; rho / 4) then ``PrivateEllipticEnvelope``
  (``data_norm = 2 sqrt(d)``, a rule from d alone; 3 rho / 4), on one
  ``PrivacyBudget(rho)``. The references are non-private and
  affine-invariant, so they see the raw rows: scikit-learn's
  ``EllipticEnvelope`` (the robust MCD, offset at the training rows'
  quantile) and ``EmpiricalCovariance``'s Mahalanobis distance with the
  same chi-square threshold as the private envelope.
* **synthetic**: d = 10, n = 1,000 and 10,000, 95% N(0, S) and 5% N(m, S) with m at
  Mahalanobis distance 5 in a random direction (S fixed: eigenvalues
  geometric from 0.25 to 4, a random rotation); public contamination 0.05;
  the envelope alone with ``data_norm = 2 sqrt(tr S)`` (the generator's
  scale, public here).
* **clean Gaussian**: the synthetic law without outliers, n = 1,000 and
  10,000, contamination 0.05 and 0.1: the share of 100,000 fresh rows the
  fitted model flags (the chi-square threshold's calibration), against the
  same rule on the non-private empirical covariance.

Metrics: ROC AUC of ``-decision_function`` for the outlier label; P@k, the
precision of the k = round(contamination n) rows ranked most outlying
(threshold-free); the precision of ``predict``'s outliers and the share
flagged. Medians over seeds (min-max in brackets for the AUC). Writes
``results/bench_envelope.md`` and ``.png`` (not with ``--quick``).
"""

import argparse
import math
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import chi2
from sklearn.covariance import EllipticEnvelope, EmpiricalCovariance
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline

from dpgauss import PrivacyBudget, PrivateEllipticEnvelope, PrivateStandardScaler

RESULTS = Path(__file__).resolve().parent / "results"
#: The issue's budgets, and 1000 to show the large-rho limit.
RHOS = [0.01, 0.1, 1.0, 10.0, 1000.0]


def _law(d=10):
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    values = np.geomspace(0.25, 4.0, d)
    return (q * values) @ q.T, q, values


def cancer(seed):
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    rows = np.concatenate(
        [np.flatnonzero(y == 1), rng.choice(np.flatnonzero(y == 0), 40, False)]
    )
    return X[rows], y[rows] == 0


def synthetic(seed, n=10_000, share=0.05, shift=5.0):
    cov, q, values = _law()
    d = cov.shape[0]
    rng = np.random.default_rng(1000 + seed)
    n_out = round(share * n)
    direction = rng.standard_normal(d)
    # Mahalanobis length `shift` under cov: m = cov^(1/2) u, |u| = shift.
    m = (q * np.sqrt(values)) @ q.T @ (shift * direction / np.linalg.norm(direction))
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    X[:n_out] += m
    outlier = np.zeros(n, dtype=bool)
    outlier[:n_out] = True
    return X, outlier


def private_cancer(rho, seed):
    X = load_breast_cancer().data
    bounds = (0.0, np.ceil(X.max(axis=0) * 150) / 100)
    budget = PrivacyBudget(rho=rho)
    return make_pipeline(
        PrivateStandardScaler(
            bounds, rho=rho / 4, budget=budget, random_state=seed, on_useless="warn"
        ),
        PrivateEllipticEnvelope(
            contamination=0.1,
            rho=3 * rho / 4,
            data_norm=2 * math.sqrt(X.shape[1]),
            budget=budget,
            random_state=seed,
            on_useless="warn",
        ),
    )


def private_synthetic(rho, seed, contamination=0.05):
    cov = _law()[0]
    return PrivateEllipticEnvelope(
        contamination=contamination,
        rho=rho,
        data_norm=2 * math.sqrt(np.trace(cov)),
        random_state=seed,
        on_useless="warn",
    )


def metrics(outlier, decision, flagged, contamination):
    k = round(contamination * outlier.size)
    top = np.argsort(decision, kind="stable")[:k]
    hits = outlier[flagged]
    return (
        roc_auc_score(outlier, -decision),
        float(np.mean(outlier[top])),
        float(np.mean(hits)) if hits.size else math.nan,
        float(np.mean(flagged)),
    )


def empirical_chi2(X, contamination):
    """Non-private EmpiricalCovariance with the envelope's chi-square threshold."""
    dist = EmpiricalCovariance().fit(X).mahalanobis(X)
    return chi2.isf(contamination, X.shape[1]) - dist


def run(make_data, make_private, contamination, seeds, rhos):
    rows = {}
    for seed in range(seeds):
        X, outlier = make_data(seed)
        mcd = EllipticEnvelope(contamination=contamination, random_state=seed).fit(X)
        rows.setdefault("EllipticEnvelope (MCD)", []).append(
            metrics(
                outlier, mcd.decision_function(X), mcd.predict(X) == -1, contamination
            )
        )
        emp = empirical_chi2(X, contamination)
        rows.setdefault("EmpiricalCovariance + chi2", []).append(
            metrics(outlier, emp, emp < 0, contamination)
        )
        for rho in rhos:
            model = make_private(rho, seed)
            with warnings.catch_warnings():  # UtilityWarning at small rho
                warnings.simplefilter("ignore")
                model.fit(X)
            decision = model.decision_function(X)
            rows.setdefault(f"private rho={rho:g}", []).append(
                metrics(outlier, decision, model.predict(X) == -1, contamination)
            )
    return {name: np.array(values) for name, values in rows.items()}


def clean_share(n, contamination, rho, seed):
    cov = _law()[0]
    rng = np.random.default_rng(5000 + seed)
    X = rng.multivariate_normal(np.zeros(10), cov, size=n)
    T = rng.multivariate_normal(np.zeros(10), cov, size=100_000)
    if rho is None:
        emp = EmpiricalCovariance().fit(X)
        return float(np.mean(emp.mahalanobis(T) > chi2.isf(contamination, 10)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = private_synthetic(rho, seed, contamination).fit(X)
    return float(np.mean(model.predict(T) == -1))


def table(name, results, lines):
    for label, values in results.items():
        auc = values[:, 0]
        med = np.nanmedian(values, axis=0)
        line = (
            f"| {name} | {label} | {med[0]:.3f} [{auc.min():.3f}, {auc.max():.3f}] "
            f"| {med[1]:.3f} | {med[2]:.3f} | {med[3]:.3f} |"
        )
        print(line, flush=True)
        lines.append(line)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6))
    for ax, (name, rows) in zip(np.atleast_1d(axes), results.items(), strict=True):
        private = [k for k in rows if k.startswith("private")]
        rhos = [float(k.split("=")[1]) for k in private]
        aucs = [rows[k][:, 0] for k in private]
        ax.plot(rhos, [np.median(a) for a in aucs], "o-", label="private envelope")
        ax.fill_between(
            rhos, [a.min() for a in aucs], [a.max() for a in aucs], alpha=0.2
        )
        for ref, style in (
            ("EllipticEnvelope (MCD)", "--"),
            ("EmpiricalCovariance + chi2", ":"),
        ):
            ax.axhline(np.median(rows[ref][:, 0]), ls=style, color="k", label=ref)
        ax.set_xscale("log")
        ax.set_xlabel("rho")
        ax.set_ylabel("ROC AUC (median, min-max)")
        ax.set_title(name)
        ax.set_ylim(0.4, 1.0)
    np.atleast_1d(axes)[0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = 2 if args.quick else args.seeds
    start = time.perf_counter()
    lines = [
        "# PrivateEllipticEnvelope against EllipticEnvelope",
        "",
        f"`python benchmarks/bench_envelope.py --seeds {seeds}`; medians over "
        "seeds (AUC: median [min, max]). Labels of the training rows (not "
        "private; measured only).",
        "",
        "| data | detector | ROC AUC | P@k | precision of predict | flagged |",
        "|---|---|---|---|---|---|",
    ]
    results = {
        "breast cancer (10% malignant)": run(cancer, private_cancer, 0.1, seeds, RHOS),
    }
    table("breast cancer", results["breast cancer (10% malignant)"], lines)
    for n in (1_000, 10_000):
        key = f"synthetic d=10, n={n:,} (5% shifted)"
        results[key] = run(
            lambda seed, n=n: synthetic(seed, n), private_synthetic, 0.05, seeds, RHOS
        )
        table(f"synthetic n={n:,}", results[key], lines)
    lines += [
        "",
        "## Flagged share of clean Gaussian rows (d = 10, 100,000 fresh rows)",
        "",
        "| n | contamination | "
        + " | ".join(f"rho={r:g}" for r in RHOS)
        + " | non-private empirical |",
        "|---|---|" + "---|" * (len(RHOS) + 1),
    ]
    for n in (1_000, 10_000):
        for c in (0.05, 0.1):
            cells = [
                np.median([clean_share(n, c, rho, s) for s in range(seeds)])
                for rho in [*RHOS, None]
            ]
            line = f"| {n:,} | {c:g} | " + " | ".join(f"{v:.3f}" for v in cells) + " |"
            print(line, flush=True)
            lines.append(line)
    lines += ["", f"Total time {time.perf_counter() - start:.0f} s."]
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_envelope.md").write_text("\n".join(lines) + "\n")
        plot(results, RESULTS / "bench_envelope.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
