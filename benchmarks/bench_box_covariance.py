"""Covariance and PCA on real tables with a public box: before/after numbers.

Run with ``PYTHONPATH`` at a checkout; ``--mode before`` gives the estimators
the box as ``data_norm`` (its circumradius, about the box centre for the
covariance, the origin for PCA), ``--mode after`` as ``bounds``. The box is
the observed min/max rounded outward at the leading digit of each column's
range (a constant column gets width 1): a stated stand-in for a codebook
box. Prints one line per data set x budget: medians over the seeds of the
covariance's relative Frobenius error
(zero matrix = 1; ``std`` in standardised units) and of PCA's captured
variance (2 components, as a share of the best 2-dimensional subspace), with
the baselines: the diagonal release (``method="diagonal"``), the
private-variance axes and a uniformly random subspace (k/d of the total).
"""

import argparse
import math
import warnings

import numpy as np

from dpgauss import PrivateCovariance, PrivatePCA
from dpgauss.exceptions import UselessFitError


def tables():
    import statsmodels.api as sm
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine

    out = {
        "wine": load_wine().data,
        "breast_cancer": load_breast_cancer().data,
        "digits": load_digits().data,
    }
    for name in ("star98", "modechoice"):
        df = getattr(sm.datasets, name).load_pandas().data
        out[name] = df.select_dtypes("number").to_numpy(dtype=float)
    return out


def box(X):
    """Observed min/max rounded outward at the range's leading decimal digit
    (a constant column gets a unit box)."""
    lo, hi = X.min(0), X.max(0)
    span = hi - lo
    step = 10.0 ** np.floor(np.log10(np.where(span > 0, span, 1.0)))
    lo, hi = np.floor(lo / step) * step, np.ceil(hi / step) * step
    return lo, np.where(hi > lo, hi, lo + 1.0)


BUDGETS = [
    {"epsilon": 0.5},
    {"epsilon": 1.0},
    {"epsilon": 2.0},
    {"epsilon": 5.0},
    {"rho": 0.125},
    {"rho": 0.5},
]


def fit(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return est.fit(X)
        except UselessFitError:
            return None


def captured(V, C, k):
    top = np.sort(np.linalg.eigvalsh(C))[::-1][:k].sum()
    return float(np.trace(V @ C @ V.T) / top)


def run(mode, seeds, k=2):
    for name, X in tables().items():
        n, d = X.shape
        lo, hi = box(X)
        c, h = (lo + hi) / 2, (hi - lo) / 2
        C = np.cov(X.T)
        # Standardised units; a constant column takes its box half-width.
        sd = np.where(np.diag(C) > 0, np.sqrt(np.diag(C)), h)
        nC, nS = np.linalg.norm(C), np.linalg.norm(C / np.outer(sd, sd))
        random_share = k / d * np.trace(C) / np.sort(np.linalg.eigvalsh(C))[-k:].sum()
        for budget in BUDGETS:
            cov, std, pca, refused_c, refused_p, finite = [], [], [], 0, 0, True
            diag, axes = [], []
            for seed in range(seeds):
                if mode == "before":
                    kw_c = {"data_norm": float(np.linalg.norm(h)), "location": c}
                    bound = np.maximum(np.abs(lo), np.abs(hi))
                    kw_p = {"data_norm": float(np.linalg.norm(bound))}
                    policy = {"on_useless": "warn"}
                else:
                    kw_c = kw_p = {"bounds": (lo, hi)}
                    policy = {}
                e = fit(
                    PrivateCovariance(random_state=seed, **kw_c, **policy, **budget), X
                )
                if e is None:
                    refused_c += 1
                else:
                    E = e.covariance_ - C
                    finite &= bool(np.isfinite(e.covariance_).all())
                    cov.append(np.linalg.norm(E) / nC)
                    std.append(np.linalg.norm(E / np.outer(sd, sd)) / nS)
                p = fit(PrivatePCA(k, random_state=seed, **kw_p, **policy, **budget), X)
                if p is None:
                    refused_p += 1
                else:
                    pca.append(captured(p.components_, C, k))
                if mode == "after":
                    b = fit(
                        PrivateCovariance(
                            bounds=(lo, hi),
                            method="diagonal",
                            on_useless="warn",
                            random_state=seed,
                            **budget,
                        ),
                        X,
                    )
                    E = b.covariance_ - C
                    diag.append(np.linalg.norm(E / np.outer(sd, sd)) / nS)
                    diag[-1] = (np.linalg.norm(E) / nC, diag[-1])
                    V = np.eye(d)[np.argsort(-np.diag(b.covariance_))[:k]]
                    axes.append(captured(V, C, k))

            def med(v):
                return float(np.median(v)) if len(v) else math.nan

            def q(v):
                return float(np.max(v)) if len(v) else math.nan

            label = ",".join(f"{a}={b}" for a, b in budget.items())
            line = (
                f"{name:13s} n={n:4d} d={d:2d} {label:12s} cov {med(cov):8.3g} "
                f"(max {q(cov):8.3g}) std {med(std):8.3g} refused {refused_c:2d} | "
                f"pca {med(pca):.3f} (min {min(pca) if pca else math.nan:.3f}) "
                f"refused {refused_p:2d} random {random_share:.3f}"
            )
            if mode == "after":
                line += (
                    f" | diag cov {med([a for a, _ in diag]):.3g} std "
                    f"{med([b for _, b in diag]):.3g} axes {med(axes):.3f}"
                )
            print(line + ("" if finite else " NONFINITE"), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["before", "after"], default="after")
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    run(args.mode, args.seeds)
