"""Before/after measurements of the privacy breaks fixed by the privacy-core issue.

Run on this checkout and, for "before", on an older commit through a worktree:

    git worktree add /tmp/dpgauss-old 0ed5ae2
    PYTHONPATH=/tmp/dpgauss-old .venv/bin/python benchmarks/bench_privacy_core.py
    .venv/bin/python benchmarks/bench_privacy_core.py --write

Only public API is used (plus the internal clipped-sum functions, looked up under
either layout), so the same script measures both versions. ``--write`` writes
``results/bench_privacy_core.md`` (the "after" column; the "before" column is
pasted from the run on the old commit).

Measured:

1. crash after charge: fraction of PrivateCovariance(epsilon=1) and
   TailSensitiveCovariance(rho=1) fits that raise after their budget was charged,
   on small data whose private trace bound is often 0;
2. clones in cross_validate with random_state=0: max |noise_fold0 - noise_fold1|
   (0 means the folds drew the same noise, so the exact statistics leak);
3. cancellation: how far one row 1e12 radii away moves the clipped sum of rows
   near a center at 1e14 (the bound is 2r);
4. validation under skip_parameter_validation: ledger events recorded before a
   misspelt method is refused;
5. a pure epsilon=1 fit on a zCDP budget of rho=0.45 (its plan costs 0.41);
6. floating-point warnings raised by a fit on rows of +-1e308;
7. the model's own draws flagged by a 99% chi-square cutoff (expected 1%).
"""

import argparse
import importlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import config_context
from sklearn.model_selection import KFold, cross_validate

import dpgauss
from dpgauss import PrivacyBudget, PrivateCovariance, TailSensitiveCovariance

RESULTS = Path(__file__).resolve().parent / "results"


def _sums_module():
    for name in ("dpgauss.utils._sums", "dpgauss.covariance._sums"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("no clipped-sum module")


def crash_rate(n_fits):
    """Fits that raise after their budget was charged, out of ``n_fits``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * 0.01  # tiny rows: the noisy trace is often <= 0
    out = {}
    for name, make in [
        (
            "PrivateCovariance(epsilon=1)",
            lambda: PrivateCovariance(epsilon=1.0, on_useless="warn"),
        ),
        (
            "TailSensitiveCovariance(rho=1)",
            lambda: TailSensitiveCovariance(rho=1.0, on_useless="warn"),
        ),
    ]:
        crashes = 0
        for seed in range(n_fits):
            budget = PrivacyBudget(rho=1e9)
            est = make().set_params(data_norm=1.0, budget=budget, random_state=seed)
            try:
                est.fit(X)
            except Exception:
                crashes += bool(budget.ledger())
        out[name] = crashes
    return out


def clone_noise():
    """max |noise of fold 0 - noise of fold 1| for clones with random_state=0."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6000, 3)) * np.array([1.0, 0.7, 0.4])
    budget = PrivacyBudget(rho=100.0)
    est = PrivateCovariance(
        method="gauss",
        rho=1.0,
        data_norm=5.0,
        center=False,
        budget=budget,
        random_state=0,
        on_useless="warn",
    )
    folds = list(KFold(2).split(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = cross_validate(
            est, X, cv=folds, return_estimator=True, scoring=lambda *a: 0.0
        )["estimator"]
    sums = _sums_module()
    noises = []
    for model, (train, _) in zip(fitted, folds, strict=True):
        exact = sums.clipped_sums(X[train], np.zeros(3), 5.0)[1] / len(train)
        noises.append(model.covariance_ - exact)
    return float(np.max(np.abs(noises[0] - noises[1])))


def cancellation():
    """Movement of the clipped sum between neighbours with a far row (bound 2r)."""
    rng = np.random.default_rng(0)
    n, d, r = 1000, 3, 1.0
    center = np.full(d, 1e14)
    X = center + rng.normal(size=(n, d)) * 0.3
    Y = X.copy()
    Y[0] = center + 1e12 * r * np.array([1.0, -1.0, 1.0])
    sums = _sums_module()
    if hasattr(sums, "clipped_mean_sum"):  # the old in-memory shortcut

        def mean_sum(Z):
            return sums.clipped_mean_sum(Z, center, r, sums.row_norms(Z, center))
    else:

        def mean_sum(Z):
            return sums.clipped_sums(Z, center, r, with_outer=False)[0]

    return float(np.linalg.norm(mean_sum(X) - mean_sum(Y)))


def events_before_refusal():
    budget = PrivacyBudget(rho=10.0)
    X = np.random.default_rng(0).normal(size=(100, 3))
    est = PrivateCovariance(
        rho=1.0, data_norm=5.0, budget=budget, method="gaus", on_useless="warn"
    )
    with config_context(skip_parameter_validation=True):
        try:
            est.fit(X)
        except Exception:
            pass
    return len(budget.ledger())


def pure_on_zcdp():
    budget = PrivacyBudget(rho=0.45)
    X = np.random.default_rng(0).normal(size=(100, 3))
    est = PrivateCovariance(
        method="gauss", epsilon=1.0, data_norm=5.0, budget=budget, on_useless="warn"
    )
    try:
        est.fit(X)
    except Exception as exc:
        return f"refused ({type(exc).__name__})"
    return f"accepted, charged {budget.spent()}"


def row_warnings():
    X = np.random.default_rng(0).normal(size=(100, 3))
    X[0] = [1e308, -1e308, 1e308]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            PrivateCovariance(
                rho=1.0, data_norm=5.0, random_state=0, on_useless="warn"
            ).fit(X)
        except Exception:
            pass
    return len([w for w in caught if issubclass(w.category, RuntimeWarning)])


def chi2_flagged(rho):
    from scipy import stats

    X = np.random.default_rng(0).normal(size=(400, 3))
    est = PrivateCovariance(
        rho=rho, data_norm=5.0, random_state=0, on_useless="warn"
    ).fit(X)
    draws = est.sample(20_000, random_state=1)
    return float(np.mean(est.mahalanobis(draws) > stats.chi2.ppf(0.99, 3)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=10_000)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [("dpgauss", str(Path(dpgauss.__file__).resolve().parent))]
    for name, crashes in crash_rate(args.fits).items():
        rows.append(
            (f"fits of {name} raising after the charge", f"{crashes} / {args.fits}")
        )
    rows += [
        ("cross_validate clones, max |noise_0 - noise_1|", f"{clone_noise():.3g}"),
        (
            "clipped sum moved by a row 1e12 radii away (bound 2)",
            f"{cancellation():.4g}",
        ),
        (
            "ledger events before a misspelt method is refused",
            str(events_before_refusal()),
        ),
        ("epsilon=1 fit on a rho=0.45 budget (plan costs 0.41)", pure_on_zcdp()),
        ("RuntimeWarnings from a fit on rows of +-1e308", str(row_warnings())),
        (
            "model's own draws beyond the 99% chi2 cutoff, rho=1e-4",
            f"{chi2_flagged(1e-4):.4f}",
        ),
        (
            "model's own draws beyond the 99% chi2 cutoff, rho=1",
            f"{chi2_flagged(1.0):.4f}",
        ),
    ]
    lines = ["| measurement | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    lines.append(f"\n({time.perf_counter() - start:.0f} s)")
    text = "\n".join(lines)
    print(text)
    if args.write:
        (RESULTS / "bench_privacy_core.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
