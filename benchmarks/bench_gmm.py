"""PublicPrivateGMM against non-private and public-only mixtures.

Run: ``.venv/bin/python benchmarks/bench_gmm.py [--seeds 5] [--configs A,B]``.

The spec's configurations (``specs/bks2022.md`` section 8.4): k = 4 components
with means ``1000 * 1 + (20 / sqrt(2)) e_i`` (pairwise distance 20) and
covariances ``Q_i diag(U[0.5, 2]) Q_i^T`` (about 14 sds apart), zCDP rho = 0.5.

* A: d = 10, weights (0.4, 0.3, 0.2, 0.1), n = 20,000; public m = 200 and 40.
* B: d = 50, equal weights, n = 50,000; public m = 400 and 40.
* C (ours, no target: where the EM steps matter): d = 5, k = 3 components
  only 3 apart (2 to 4 sds; hard assignment misassigns rows), weights
  (0.5, 0.3, 0.2), n = 20,000; public m = 200 and 40.

``PublicPrivateGMM`` runs with its defaults (two private EM steps at 30% of
the budget) and with ``refine_steps=0`` (the first fit alone, at the whole
budget).

Metric: the test log-likelihood per point on 5,000 fresh rows, median over
seeds. Rows: the true model, scikit-learn's ``GaussianMixture`` on the private
rows (non-private), ``GaussianMixture`` on the public rows alone, and
``PublicPrivateGMM`` (auto regime). Targets: A within 0.1 nats of the
non-private fit with m = 200, B within 1 nat with m = 400, and both far better
than public-only fitting with m = 40.

Writes ``results/bench_gmm.md`` (and ``.png`` when matplotlib is installed).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture

from dpgauss.mixture import PublicPrivateGMM

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = {
    "A": {"d": 10, "weights": [0.4, 0.3, 0.2, 0.1], "n": 20000, "public": [200, 40]},
    "B": {"d": 50, "weights": [0.25] * 4, "n": 50000, "public": [400, 40]},
    "C": {
        "d": 5,
        "weights": [0.5, 0.3, 0.2],
        "n": 20000,
        "public": [200, 40],
        "distance": 3.0,
    },
}
TARGETS = {("A", 200): 0.1, ("B", 400): 1.0}


def mixture(d, weights, seed, distance=20.0):
    """Means, covariances and weights of the spec's mixture (components
    ``distance`` apart)."""
    rng = np.random.default_rng(seed)
    k = len(weights)
    means = np.full((k, d), 1000.0) + distance / np.sqrt(2.0) * np.eye(k, d)
    covs = []
    for _ in range(k):
        Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
        covs.append((Q * rng.uniform(0.5, 2.0, d)) @ Q.T)
    return means, np.array(covs), np.asarray(weights)


def draw(model, n, rng):
    means, covs, weights = model
    labels = rng.choice(len(weights), size=n, p=weights)
    X = np.empty((n, means.shape[1]))
    for j in range(len(weights)):
        mask = labels == j
        L = np.linalg.cholesky(covs[j])
        X[mask] = means[j] + rng.standard_normal((mask.sum(), means.shape[1])) @ L.T
    return X


def true_ll(model, X):
    means, covs, weights = model
    parts = []
    for j in range(len(weights)):
        L = np.linalg.cholesky(covs[j])
        z = np.linalg.solve(L, (X - means[j]).T)
        logdet = 2 * np.log(np.diag(L)).sum()
        d = X.shape[1]
        parts.append(
            np.log(weights[j]) - 0.5 * (d * np.log(2 * np.pi) + logdet + (z * z).sum(0))
        )
    return float(np.mean(logsumexp(np.array(parts), axis=0)))


def run(config, seeds):
    spec = CONFIGS[config]
    rows = {}
    for seed in range(seeds):
        model = mixture(spec["d"], spec["weights"], seed, spec.get("distance", 20.0))
        k = len(spec["weights"])
        rng = np.random.default_rng(1000 + seed)
        X = draw(model, spec["n"], rng)
        test = draw(model, 5000, rng)
        rows.setdefault("true model", []).append(true_ll(model, test))
        gm = GaussianMixture(k, n_init=2, random_state=seed).fit(X)
        rows.setdefault("non-private GMM on X", []).append(gm.score(test))
        for m in spec["public"]:
            public = draw(model, m, rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                only = GaussianMixture(k, n_init=2, reg_covar=1e-3, random_state=seed)
                only.fit(public)
            rows.setdefault(f"public-only GMM, m={m}", []).append(only.score(test))
            for steps in ("auto", 0):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = PublicPrivateGMM(
                        k,
                        rho=0.5,
                        refine_steps=steps,
                        random_state=seed,
                        on_useless="warn",
                    )
                    est.fit(X, X_public=public)
                took = time.perf_counter() - start
                key = f"PublicPrivateGMM, m={m}"
                if steps == 0:
                    key += ", no EM steps"
                rows.setdefault(key, []).append(est.score(test))
                rows.setdefault(f"_regime_{key}", []).append(est.regime_)
                rows.setdefault(f"_time_{key}", []).append(took)
                print(config, seed, key, round(est.score(test), 3), flush=True)
    return rows


def report(results):
    lines = [
        "# PublicPrivateGMM",
        "",
        "Test log-likelihood per point, median over seeds (`benchmarks/bench_gmm.py`);",
        "the gap is the median per-seed difference to the non-private fit on the",
        "same rows (nats; negative: better than it).",
        "",
    ]
    verdicts = []
    for config, rows in results.items():
        spec = CONFIGS[config]
        lines += [
            f"## Configuration {config}: d = {spec['d']}, n = {spec['n']}, "
            f"weights {spec['weights']}, rho = 0.5",
            "",
            "| method | test LL | gap to non-private | fit time (s) |",
            "|---|---|---|---|",
        ]
        for key, values in rows.items():
            if key.startswith("_"):
                continue
            took, label = "", key
            if key.startswith("PublicPrivateGMM"):
                took = f"{np.median(rows[f'_time_{key}']):.1f}"
                regimes = rows[f"_regime_{key}"]
                counts = {r: regimes.count(r) for r in sorted(set(regimes))}
                label += " (" + ", ".join(f"{r} x{c}" for r, c in counts.items()) + ")"
            exact = np.array(rows["non-private GMM on X"])
            gap = float(np.median(exact - np.array(values)))
            lines.append(f"| {label} | {np.median(values):.3f} | {gap:.3f} | {took} |")
        lines.append("")
        for m in spec["public"]:
            mine = np.array(rows[f"PublicPrivateGMM, m={m}"])
            ours = float(np.median(mine))
            only = np.median(rows[f"public-only GMM, m={m}"])
            if (config, m) in TARGETS:
                exact = np.array(rows["non-private GMM on X"])
                gap = float(np.median(exact - mine))  # same-data gaps
                ok = gap <= TARGETS[(config, m)]
                verdicts.append(
                    f"{config}, m = {m}: {gap:.3f} nats below the non-private fit "
                    "(median of the per-seed gaps) "
                    f"(target {TARGETS[(config, m)]}): {'PASS' if ok else 'FAIL'}"
                )
            if m == 40 and config in ("A", "B"):
                ok = ours > only + 1.0
                verdicts.append(
                    f"{config}, m = 40: {ours:.2f} against public-only {only:.2f}: "
                    f"{'PASS' if ok else 'FAIL'}"
                )
    lines += ["## Targets", ""] + [f"- {v}" for v in verdicts] + [""]
    return "\n".join(lines), verdicts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--configs", default="A,B,C")
    args = parser.parse_args(argv)
    results = {c: run(c, args.seeds) for c in args.configs.split(",")}
    text, verdicts = report(results)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_gmm.md").write_text(text)
    print(text)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return 0
    fig, axes = plt.subplots(len(results), 1, figsize=(8, 3.2 * len(results)))
    for ax, (config, rows) in zip(np.atleast_1d(axes), results.items(), strict=True):
        exact = np.array(rows["non-private GMM on X"])
        keys = [
            k for k in rows if not k.startswith("_") and k != "non-private GMM on X"
        ]
        gaps = [float(np.median(exact - np.array(rows[k]))) for k in keys]
        ax.barh(keys, [max(g, 1e-3) for g in gaps])
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_xlabel("nats per point below the non-private fit (floored at 1e-3)")
        ax.set_title(f"configuration {config}")
    fig.tight_layout()
    fig.savefig(RESULTS / "bench_gmm.png", dpi=100)
    return 0 if all("PASS" in v for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
