"""The ``dpgauss`` command: ``dpgauss demo`` (the default), ``dpgauss version``.

``dpgauss --version`` prints ``dpgauss <version>``; ``dpgauss demo -h`` lists the
demo's options (``--rho``, ``--csv``, ``--plot``, ``--progress``, ``--seed``).
"""

import argparse
import contextlib
import csv
import os
import sys
import time

import numpy as np

from dpgauss._version import __version__
from dpgauss.accounting import PrivacyBudget
from dpgauss.covariance import PrivateCovariance, TailSensitiveCovariance
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.exceptions import BudgetExceededError
from dpgauss.gaussian import PrivateGaussianEstimator
from dpgauss.mean import PrivateMean
from dpgauss.mixture import PublicPrivateGMM
from dpgauss.product import PrivateProductDistribution

__all__ = ["main"]

DEMO_RHOS = (0.1, 1.0, 10.0)
DEMO_DELTA = 1e-6
#: The budget per fit of every section after the first (eight fits).
GAUSSIAN_RHO = 0.5
SECTION_FITS = 8
N_SECTIONS = 6
#: The budgets ``--rho`` accepts. The demo runs at both ends; TailSensitiveCovariance
#: refuses to calibrate its noise in float64 at rho = 1e-100 and at 1e300.
RHO_RANGE = (1e-12, 1e12)
#: A covariance release is "within 10% of the non-private covariance" below this
#: relative Frobenius error; the verdicts use the same 10% for the other ratios.
CLOSE = 0.1
#: The keys of every result row, in the order of the CSV's columns.
ROW_FIELDS = (
    "section",
    "estimator",
    "rho",
    "metric",
    "value",
    "nonprivate",
    "epsilon",
    "seconds",
)
#: The CSV's columns: the rows' keys, and the delta of their epsilon.
CSV_FIELDS = (*ROW_FIELDS[:7], "delta", *ROW_FIELDS[7:])
#: The figure formats of ``--plot``, chosen by the file's extension.
PLOT_FORMATS = (".png", ".pdf", ".svg")
PLOT_EXTRA = "pip install 'dpgauss[plot]' (or pip install matplotlib)"


def _load_digits_public_scale():
    """Return sklearn's digits (n=1797, d=64), pixels scaled from [0, 16] to [0, 1],
    their labels and the row-norm bound.

    The scale and the row-norm bound sqrt(64) = 8 come from the pixel range, which
    is public; nothing is read off the data to choose them.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = digits.data / 16.0
    return X, digits.target, float(np.sqrt(X.shape[1]))


def demo(seed=0, out=None, *, rhos=DEMO_RHOS, progress=None):
    """Fit the library's estimators at a few budgets and print error and privacy.

    Parameters
    ----------
    seed : int, default=0
        Seed for the noise, so that the printed numbers are reproducible (a real
        release uses ``random_state=None``).
    out : file-like, default=None
        Where to print (``sys.stdout`` when None).
    rhos : sequence of float, default=DEMO_RHOS
        The budgets of the covariance sweep on digits: every covariance estimator
        is fitted once at each, in increasing order. The later sections fit once
        each at ``GAUSSIAN_RHO`` whatever ``rhos`` is.
    progress : file-like, default=None
        Where to write one short line as each section (and each budget of the
        sweep) starts, and the total time at the end; nothing when None.

    Returns
    -------
    list of dict
        One row per printed result, with the keys ``ROW_FIELDS``: the section,
        the estimator, its rho (0 for a fit on public rows only), the metric's
        name and value, the same metric for the non-private counterpart
        (``None`` where the metric is measured against that counterpart), the
        fit's epsilon at ``DEMO_DELTA`` and its wall time in seconds.
    """
    out = sys.stdout if out is None else out
    rhos = sorted(set(rhos))
    started = time.perf_counter()

    def note(text):
        if progress is not None:
            elapsed = time.perf_counter() - started
            print(f"dpgauss demo [{elapsed:5.1f} s] {text}", file=progress, flush=True)

    X, labels, data_norm = _load_digits_public_scale()
    n, d = X.shape
    exact = np.cov(X, rowvar=False, bias=True)
    exact_norm = np.linalg.norm(exact)
    estimators = {
        "TailSensitiveCovariance()": lambda rho: TailSensitiveCovariance(
            rho=rho, data_norm=data_norm
        ),
        "PrivateCovariance() [auto]": lambda rho: PrivateCovariance(
            rho=rho, data_norm=data_norm
        ),
        'PrivateCovariance(method="gauss")': lambda rho: PrivateCovariance(
            method="gauss", rho=rho, data_norm=data_norm
        ),
    }
    budget = PrivacyBudget(
        rho=len(estimators) * sum(rhos) + SECTION_FITS * GAUSSIAN_RHO
    )
    print(
        f"dpgauss {__version__} demo: sklearn digits, n={n} rows, d={d} features,",
        file=out,
    )
    print(
        f"pixels scaled to [0, 1] so every row has l2 norm <= {data_norm:g} (public).",
        file=out,
    )
    print(
        "Error: ||private - non-private||_F / ||non-private||_F (the zero matrix "
        "scores 1.0).",
        file=out,
    )
    print(
        f"{'estimator':<34} {'rho':>6} {'epsilon at delta=1e-6':>22} "
        f"{'rel. error':>11}  chosen",
        file=out,
    )
    rows = []
    for i, rho in enumerate(rhos, 1):
        note(
            f"1/{N_SECTIONS} covariance on digits, rho={rho:g} "
            f"({i} of {len(rhos)} budgets)"
        )
        for label, make in estimators.items():
            est = make(rho).set_params(budget=budget, random_state=seed)
            seconds = _timed_fit(est, X)
            error = float(np.linalg.norm(est.covariance_ - exact) / exact_norm)
            eps = _epsilon(est)
            chosen = _describe(est)
            print(
                f"{label:<34} {rho:>6g} {eps:>22.3f} {error:>11.3f}  {chosen}", file=out
            )
            rows.append(
                _row(
                    "covariance",
                    label,
                    rho,
                    "rel_frobenius_error",
                    error,
                    None,
                    eps,
                    seconds,
                )
            )
    print(file=out)
    for label in estimators:
        print(f"Verdict: {label}: {_covariance_verdict(rows, label)}", file=out)
    tail = [r["value"] for r in rows if r["estimator"].startswith("Tail")]
    fixed = [r["value"] for r in rows if "auto" in r["estimator"]]
    ratio = float(np.mean(np.array(tail) / np.array(fixed)))
    print(
        "Which to use: TailSensitiveCovariance when you do not know the scale of "
        "your data, since it finds its clipping radius privately, so a loose "
        f"data_norm costs little (here {ratio:.2f}x the error of "
        "PrivateCovariance() at the same budget, on average).",
        file=out,
    )
    note(f"2/{N_SECTIONS} Gaussians with no bounds")
    rows += _gaussian_section(budget, seed, out)
    note(f"3/{N_SECTIONS} Gaussian mixture with public rows")
    rows += _mixture_section(budget, seed, out)
    note(f"4/{N_SECTIONS} SubsampleAggregate(LinearRegression())")
    rows += _subsample_section(budget, seed, out)
    note(f"5/{N_SECTIONS} product distribution on rare binary features")
    rows += _product_section(budget, seed, out)
    note(f"6/{N_SECTIONS} classifier, PCA and outlier detector")
    rows += _workflow_section(budget, seed, out, (X, labels, data_norm))
    spent = budget.spent()
    print(
        f"\nShared budget: spent {spent} over {len(budget.ledger())} releases, i.e. "
        f"{spent.to_approx(DEMO_DELTA)}; remaining {budget.remaining()}.",
        file=out,
    )
    print("Ledger:\n" + budget.format_ledger(), file=out)
    try:
        PrivateCovariance(rho=0.01, data_norm=data_norm, budget=budget).fit(X)
    except BudgetExceededError as exc:
        print(
            f"\nA further fit is refused before it reads the data:\n  {exc}", file=out
        )
    note("done")
    return rows


def _row(section, estimator, rho, metric, value, nonprivate, epsilon, seconds):
    """One result row (the keys are ``ROW_FIELDS``)."""
    values = (section, estimator, rho, metric, value, nonprivate, epsilon, seconds)
    return dict(zip(ROW_FIELDS, values, strict=True))


def _timed_fit(est, *args, **kwargs):
    """Fit ``est`` and return the wall time in seconds."""
    begin = time.perf_counter()
    est.fit(*args, **kwargs)
    return time.perf_counter() - begin


def _epsilon(est):
    """The fit's privacy as epsilon at the demo's delta."""
    return float(est.privacy_spent_.to_approx(DEMO_DELTA).epsilon)


def _versus(private, nonprivate, what="error"):
    """'within 10% of the non-private error (1.03x)' or '1.47x the non-private ...'."""
    if not nonprivate > 0:
        return f"{private:.3g} (non-private {nonprivate:.3g})"
    ratio = private / nonprivate
    if ratio <= 1.0 + CLOSE:
        return f"within 10% of the non-private {what} ({ratio:.2f}x)"
    return f"{ratio:.2f}x the non-private {what}"


def _covariance_verdict(rows, label):
    """From which rho ``label`` is within 10%, and how it ranks, from the rows."""
    rows = [row for row in rows if row["section"] == "covariance"]
    mine = [row for row in rows if row["estimator"] == label]
    best = {}
    for row in rows:
        best[row["rho"]] = min(best.get(row["rho"], np.inf), row["value"])
    close_from = None
    for row in reversed(mine):  # the rows are in increasing rho
        if row["value"] >= CLOSE:
            break
        close_from = row["rho"]
    if close_from is None:
        lowest = min(mine, key=lambda row: row["value"])
        reach = (
            "not within 10% of the non-private covariance at any rho tried "
            f"(at best {lowest['value']:.3f}, at rho = {lowest['rho']:g})"
        )
    else:
        reach = f"within 10% of the non-private covariance from rho = {close_from:g}"
    ratios = [row["value"] / best[row["rho"]] for row in mine]
    low, high = f"{min(ratios):.1f}", f"{max(ratios):.1f}"
    if max(ratios) == 1.0:
        rank = "the lowest error at every rho"
    elif low == high:
        rank = f"{high}x the lowest error at the same rho"
    else:
        rank = f"{low}-{high}x the lowest error at the same rho"
    return f"{reach}; {rank}."


def _gaussian_section(budget, seed, out):
    """No hints: a far mean and a badly conditioned covariance, found privately."""
    rng = np.random.default_rng(12345)  # the data (public to the demo)
    d, n = 5, 20_000
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    cov = basis @ np.diag(np.geomspace(1.0, 1e3, d)) @ basis.T
    mu = np.array([2.5e4, -1.2e4, 3.0e3, 7.0e4, -5.0e3])
    X = rng.multivariate_normal(mu, cov, size=n)
    whiten = np.linalg.inv(np.linalg.cholesky(cov))

    def maha(m):
        return float(np.linalg.norm(whiten @ (m - mu)))

    exact_mean = maha(X.mean(axis=0))
    exact_cov = np.cov(X, rowvar=False, bias=True)
    eye = np.eye(d)
    exact_cov_error = float(np.linalg.norm(whiten @ exact_cov @ whiten.T - eye))
    print(
        f"\nGaussians with no bounds: n={n} rows, d={d}, mean about 7e4 from the "
        "origin, covariance condition number 1e3; no range, no hint.\n"
        "Errors in the data's own (Mahalanobis) units, next to the non-private "
        "ones on the same rows.",
        file=out,
    )
    gauss = PrivateGaussianEstimator(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    gauss_seconds = _timed_fit(gauss, X)
    cov_error = float(np.linalg.norm(whiten @ gauss.covariance_ @ whiten.T - eye))
    mean = PrivateMean(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    mean_seconds = _timed_fit(mean, X)
    gauss_label, mean_label = "PrivateGaussianEstimator()", "PrivateMean()"
    lines = [
        (
            f"{gauss_label} mean",
            gauss_label,
            gauss,
            gauss_seconds,
            "mean_mahalanobis_error",
            maha(gauss.mean_),
            exact_mean,
        ),
        (
            f"{gauss_label} covariance",
            gauss_label,
            gauss,
            gauss_seconds,
            "cov_whitened_frobenius_error",
            cov_error,
            exact_cov_error,
        ),
        (
            f"{mean_label}  [{mean.method_}]",
            mean_label,
            mean,
            mean_seconds,
            "mean_mahalanobis_error",
            maha(mean.mean_),
            exact_mean,
        ),
    ]
    rows = []
    for printed, label, est, seconds, metric, private, exact in lines:
        print(
            f"{printed:<40} rho={GAUSSIAN_RHO:g}  private {private:.3f}  "
            f"non-private {exact:.3f}",
            file=out,
        )
        rows.append(
            _row(
                "gaussian",
                label,
                GAUSSIAN_RHO,
                metric,
                private,
                exact,
                _epsilon(est),
                seconds,
            )
        )
    g_mean, g_cov, m_mean = (row["value"] for row in rows)
    print(
        f"Verdict: {gauss_label}: mean {_versus(g_mean, exact_mean)}, covariance "
        f"{_versus(g_cov, exact_cov_error)}, with no bounds given.\n"
        f"Verdict: {mean_label}: mean {_versus(m_mean, exact_mean)}, with no "
        "bounds given.",
        file=out,
    )
    return rows


def _mixture_section(budget, seed, out):
    """A mixture far from the origin, with 120 public rows (issue 9)."""
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(54321)  # the data (public to the demo)
    d, n = 8, 20_000
    centers = 1e4 + 12.0 * np.eye(3, d)
    weights = np.array([0.5, 0.3, 0.2])

    def draw(count):
        labels = rng.choice(3, size=count, p=weights)
        return centers[labels] + rng.standard_normal((count, d))

    X, public, test = draw(n), draw(120), draw(5000)
    gmm = PublicPrivateGMM(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    gmm_seconds = _timed_fit(gmm, X, X_public=public)
    exact = GaussianMixture(3, random_state=seed).fit(X).score(test)
    only = GaussianMixture(3, reg_covar=1e-3, random_state=seed)
    only_seconds = _timed_fit(only, public)
    print(
        f"\nA Gaussian mixture: n={n} private rows, d={d}, 3 components 12 sds "
        "apart, 1e4 from the origin, and 120 public rows (X_public). Test "
        "log-likelihood per point (higher is better):",
        file=out,
    )
    label = "PublicPrivateGMM()"
    lines = [
        (
            f"{label} [{gmm.n_components_} components, {gmm.regime_}]",
            label,
            GAUSSIAN_RHO,
            _epsilon(gmm),
            gmm_seconds,
            gmm,
        ),
        # no private row is read: no budget, no privacy loss
        (
            "GaussianMixture on the 120 public rows",
            "GaussianMixture(public rows)",
            0.0,
            0.0,
            only_seconds,
            only,
        ),
    ]
    rows = []
    for printed, name, rho, eps, seconds, model in lines:
        value = float(model.score(test))
        print(
            f"{printed:<46} {value:9.3f}   non-private on X {exact:9.3f}",
            file=out,
        )
        rows.append(
            _row(
                "mixture",
                name,
                rho,
                "test_loglik_per_point",
                value,
                exact,
                eps,
                seconds,
            )
        )
    ours, public_only = rows[0]["value"], rows[1]["value"]
    gap = exact - ours
    print(
        f"Verdict: {label}: {abs(gap):.3f} nats per point "
        f"{'below' if gap > 0 else 'above'} the non-private fit, "
        f"{ours - public_only:.2f} above the 120 public rows alone.",
        file=out,
    )
    return rows


def _subsample_section(budget, seed, out):
    """SubsampleAggregate: a private LinearRegression, by subsample and aggregate."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(24680)  # the data (public to the demo)
    d, n = 5, 30_000
    beta = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    X = rng.standard_normal((n, d))
    y = X @ beta + rng.standard_normal(n)
    full = LinearRegression().fit(X, y).coef_
    est = SubsampleAggregate(
        LinearRegression(), rho=GAUSSIAN_RHO, budget=budget, random_state=seed
    )
    seconds = _timed_fit(est, X, y)
    private = float(np.linalg.norm(est.statistic_ - beta))
    to_full = float(np.linalg.norm(est.statistic_ - full))
    exact = float(np.linalg.norm(full - beta))
    print(
        f"\nAny estimator, privately: SubsampleAggregate(LinearRegression()) on "
        f"n={n} rows, d={d}, y = X beta + N(0, 1); {est.n_groups_} groups of "
        f'{est.group_size_} rows, aggregator "winsorized". l2 error of the '
        "coefficients:",
        file=out,
    )
    label = "SubsampleAggregate(LinearRegression())"
    print(
        f"{label:<40} rho={GAUSSIAN_RHO:g}  to the truth {private:.4f}  to the "
        f"non-private fit {to_full:.4f}  (non-private to the truth {exact:.4f})",
        file=out,
    )
    print(
        f"Verdict: {label}: {_versus(private, exact, 'error to the truth')}; any "
        "scikit-learn estimator with a vector result can be wrapped (no bounds "
        "on X or y are needed).",
        file=out,
    )
    eps = _epsilon(est)
    return [
        _row(
            "subsample",
            label,
            GAUSSIAN_RHO,
            "coef_l2_error_to_truth",
            private,
            exact,
            eps,
            seconds,
        ),
        _row(
            "subsample",
            label,
            GAUSSIAN_RHO,
            "coef_l2_error_to_nonprivate",
            to_full,
            None,
            eps,
            seconds,
        ),
    ]


def _hellinger(p, q):
    """Hellinger distance between two products of Bernoullis (as bench_product)."""
    affinity = np.sqrt(p * q) + np.sqrt((1.0 - p) * (1.0 - q))
    return float(np.sqrt(max(0.0, 1.0 - np.exp(np.sum(np.log(affinity))))))


def _product_section(budget, seed, out):
    """PrivateProductDistribution on rare binary features (KLSU 2019)."""
    rng = np.random.default_rng(13579)  # the data (public to the demo)
    d, n = 200, 20_000
    p = rng.uniform(0.0, 2.0 / d, d)
    X = (rng.random((n, d)) < p).astype(np.int8)
    est = PrivateProductDistribution(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    seconds = _timed_fit(est, X)
    private = _hellinger(est.probabilities_, p)
    # the empirical mean, floored as the estimator's output is
    exact = _hellinger(np.clip(X.mean(axis=0), 0.5 / n, 1.0 - 0.5 / n), p)
    label = "PrivateProductDistribution()"
    print(
        f"\nRare binary features: n={n} rows, d={d} independent 0/1 features, "
        f"P[x_j = 1] uniform in [0, 2/{d}]. Hellinger distance to the true "
        "distribution (0 is exact, 1 is disjoint):",
        file=out,
    )
    print(
        f"{label:<40} rho={GAUSSIAN_RHO:g}  private {private:.4f}  non-private "
        f"{exact:.4f}",
        file=out,
    )
    print(
        f"Verdict: {label}: {_versus(private, exact, 'distance')}; the noise is "
        f"that of rows with few ones (about {d * p.mean():.1f} here, found "
        f"privately), not of rows with {d} (the plain Gaussian mechanism's).",
        file=out,
    )
    return [
        _row(
            "product",
            label,
            GAUSSIAN_RHO,
            "hellinger_to_truth",
            private,
            exact,
            _epsilon(est),
            seconds,
        )
    ]


def _workflow_section(budget, seed, out, digits):
    """PrivateLinearDiscriminantAnalysis and PrivatePCA on digits (``digits``:
    the rows, labels and public row-norm bound of the first section),
    PrivateEllipticEnvelope on breast cancer: what users do with a Gaussian."""
    from sklearn.covariance import EmpiricalCovariance
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.metrics import roc_auc_score

    from dpgauss.covariance import PrivateEllipticEnvelope
    from dpgauss.decomposition import PrivatePCA
    from dpgauss.discriminant_analysis import PrivateLinearDiscriminantAnalysis

    rows = []
    X, y, data_norm = digits
    order = np.random.default_rng(2468).permutation(X.shape[0])  # public split
    train, test = order[:1350], order[1350:]
    print(
        f"\nWhat users do with a Gaussian model (rho={GAUSSIAN_RHO:g} each). Digits: "
        f"{train.size} training rows, {test.size} test rows, public classes 0-9:",
        file=out,
    )
    lda = PrivateLinearDiscriminantAnalysis(
        classes=range(10),
        data_norm=data_norm,
        rho=GAUSSIAN_RHO,
        budget=budget,
        random_state=seed,
    )
    seconds = _timed_fit(lda, X[train], y[train])
    private = float(np.mean(lda.predict(X[test]) == y[test]))
    exact = LinearDiscriminantAnalysis().fit(X[train], y[train])
    nonprivate = float(np.mean(exact.predict(X[test]) == y[test]))
    label = "PrivateLinearDiscriminantAnalysis()"
    print(
        f"{label:<40} test accuracy {private:.3f}  non-private {nonprivate:.3f}",
        file=out,
    )
    print(
        f"Verdict: {label}: {nonprivate - private:.3f} below scikit-learn's "
        "LinearDiscriminantAnalysis in accuracy, with private class counts, means "
        "and covariance.",
        file=out,
    )
    rows.append(
        _row(
            "workflow",
            label,
            GAUSSIAN_RHO,
            "test_accuracy",
            private,
            nonprivate,
            _epsilon(lda),
            seconds,
        )
    )
    k = 5
    pca = PrivatePCA(
        n_components=k,
        data_norm=data_norm,
        rho=GAUSSIAN_RHO,
        budget=budget,
        random_state=seed,
    )
    seconds = _timed_fit(pca, X[train])
    cov = np.cov(X[train], rowvar=False, bias=True)
    top = float(np.sum(np.linalg.eigvalsh(cov)[::-1][:k]))
    basis = pca.components_.T
    captured = float(np.trace(basis.T @ cov @ basis)) / top
    reference = PCA(k).fit(X[train]).components_.T
    best = float(np.trace(reference.T @ cov @ reference)) / top
    label = "PrivatePCA(n_components=5)"
    print(
        f"{label:<40} variance captured {captured:.3f} of the top {k} "
        f"(non-private {best:.3f})",
        file=out,
    )
    print(
        f"Verdict: {label}: its {k} components capture {captured / best:.0%} of the "
        f"variance scikit-learn's PCA captures with {k} (clipping radius and "
        "threshold found privately below data_norm, as TailSensitiveCovariance).",
        file=out,
    )
    rows.append(
        _row(
            "workflow",
            label,
            GAUSSIAN_RHO,
            "captured_variance",
            captured,
            best,
            _epsilon(pca),
            seconds,
        )
    )
    cancer = load_breast_cancer()
    # All 357 benign rows and 40 malignant ones (a public choice), so that the
    # outliers are about 10%, the public contamination; standardised with the
    # statistics of this public data set.
    rng = np.random.default_rng(97531)
    keep = np.flatnonzero(cancer.target == 1)
    malignant_rows = np.flatnonzero(cancer.target == 0)
    keep = np.sort(np.concatenate([keep, rng.choice(malignant_rows, 40, False)]))
    Z = cancer.data[keep]
    Z = (Z - Z.mean(0)) / Z.std(0)
    malignant = cancer.target[keep] == 0
    env = PrivateEllipticEnvelope(
        data_norm=2.0 * np.sqrt(Z.shape[1]),
        rho=GAUSSIAN_RHO,
        budget=budget,
        random_state=seed,
    )
    seconds = _timed_fit(env, Z)
    auc = float(roc_auc_score(malignant, -env.decision_function(Z)))
    exact_auc = float(
        roc_auc_score(malignant, EmpiricalCovariance().fit(Z).mahalanobis(Z))
    )
    label = "PrivateEllipticEnvelope()"
    print(
        f"{label:<40} breast cancer, 40 malignant of {keep.size} as outliers: "
        f"ROC AUC {auc:.3f} "
        f"(EmpiricalCovariance {exact_auc:.3f})",
        file=out,
    )
    print(
        f"Verdict: {label}: ROC AUC {auc - exact_auc:+.3f} against scikit-learn's "
        "non-private EmpiricalCovariance distance; its threshold is the public "
        "chi-square quantile of contamination=0.1, never a data quantile.",
        file=out,
    )
    rows.append(
        _row(
            "workflow",
            label,
            GAUSSIAN_RHO,
            "roc_auc",
            auc,
            exact_auc,
            _epsilon(env),
            seconds,
        )
    )
    return rows


def _describe(est):
    """What a fitted estimator chose privately (method, clipping threshold)."""
    if isinstance(est, TailSensitiveCovariance):
        return (
            f"{est.method_}, clipped at {est.clip_threshold_:.3g}, "
            f"centered by {est.centering_}"
        )
    return est.method_


def _budget(text):
    """argparse type of ``--rho``: a float within ``RHO_RANGE``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"a budget must be positive and finite, got {text!r}"
        )
    if not RHO_RANGE[0] <= value <= RHO_RANGE[1]:
        raise argparse.ArgumentTypeError(
            f"{text} is outside [{RHO_RANGE[0]:g}, {RHO_RANGE[1]:g}]: beyond, the "
            "estimators cannot calibrate their noise in float64 (and at the ends "
            "the releases are already the zero matrix, or not private at all)"
        )
    return value


def _output_file(text):
    """argparse type of ``--csv``: ``-`` (stdout) or a file in an existing folder."""
    if text != "-":
        folder = os.path.dirname(os.path.abspath(text))
        if not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(f"no such directory: {folder}")
    return text


def write_csv(rows, path):
    """Write the demo's result rows to ``path`` as CSV.

    Parameters
    ----------
    rows : list of dict
        The rows :func:`demo` returns.
    path : str or path-like
        The file, or ``-`` for stdout. The columns are ``CSV_FIELDS``; an empty
        ``nonprivate`` means the metric is measured against the non-private
        result itself.
    """
    if path == "-":
        stream = contextlib.nullcontext(sys.stdout)
    else:
        stream = open(path, "w", newline="", encoding="utf-8")
    with stream as file:
        writer = csv.DictWriter(file, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "delta": DEMO_DELTA})


def _figure_file(text):
    """argparse type of ``--plot``: a .png, .pdf or .svg file; needs matplotlib."""
    if os.path.splitext(text)[1].lower() not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{text!r} does not end in {', '.join(PLOT_FORMATS)} (the format is "
            "chosen by the extension)"
        )
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise argparse.ArgumentTypeError(
            f"the figure needs matplotlib, which is not installed: {PLOT_EXTRA}"
        ) from None
    return _output_file(text)


def plot_sweep(rows, path):
    """Save the covariance sweep's error against rho (log-log) to ``path``.

    One line per covariance estimator; the zero matrix, which reads no data,
    scores 1.0 and is drawn as the reference (the non-private covariance scores 0,
    off a log axis). The top axis gives each budget's epsilon at ``DEMO_DELTA``.
    Drawn with matplotlib's Agg canvas, so no display is needed.

    Parameters
    ----------
    rows : list of dict
        The rows :func:`demo` returns (only the covariance section's are drawn).
    path : str or path-like
        The file; its extension chooses the format (png, pdf or svg).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    rows = [row for row in rows if row["section"] == "covariance"]
    figure = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for label in dict.fromkeys(row["estimator"] for row in rows):
        mine = [row for row in rows if row["estimator"] == label]
        rhos = [row["rho"] for row in mine]
        ax.plot(rhos, [row["value"] for row in mine], marker="o", label=label)
    ax.axhline(1.0, color="0.4", linestyle="--", label="zero matrix (reads no data)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rho (zCDP budget of each fit)")
    ax.set_ylabel(
        "error relative to the non-private covariance\n"
        "(Frobenius norm; the zero matrix scores 1)"
    )
    ax.set_title("dpgauss demo: covariance of scikit-learn's digits (n=1797, d=64)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    epsilons = {row["rho"]: row["epsilon"] for row in rows}
    top = ax.secondary_xaxis("top")
    top.set_xticks(list(epsilons), [f"{eps:.3g}" for eps in epsilons.values()])
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel(f"epsilon at delta={DEMO_DELTA:g}")
    figure.savefig(path)


def _parser():
    """The ``dpgauss`` argument parser (subcommands ``demo`` and ``version``)."""
    parser = argparse.ArgumentParser(
        prog="dpgauss",
        description="Differentially private Gaussian estimators. With no command "
        "(or only demo options) runs the demo; see `dpgauss demo -h`.",
    )
    parser.add_argument("--version", action="version", version=f"dpgauss {__version__}")
    sub = parser.add_subparsers(dest="command")
    demo_parser = sub.add_parser(
        "demo",
        help="run the demonstration (default)",
        description="Fit dpgauss's estimators at a few budgets, drawn from one "
        "shared PrivacyBudget, and print each fit's error next to the non-private "
        "one, its privacy as rho and as epsilon at delta=1e-6, a one-line verdict "
        "per estimator and the budget's ledger.",
    )
    demo_parser.add_argument("--seed", type=int, default=0, help="noise seed")
    demo_parser.add_argument(
        "--rho",
        type=_budget,
        nargs="+",
        default=list(DEMO_RHOS),
        metavar="R",
        help="zCDP budgets of the covariance sweep on digits, each in "
        f"[{RHO_RANGE[0]:g}, {RHO_RANGE[1]:g}]: every covariance estimator is "
        "fitted once at each (sorted, repeats dropped; default: "
        f"{' '.join(f'{r:g}' for r in DEMO_RHOS)}). The later sections (Gaussians, "
        "mixture, subsample and aggregate, product; LDA, PCA and an outlier "
        f"detector) fit once each at rho={GAUSSIAN_RHO:g} whatever R is (their "
        "noise still differs: each fit's stream depends on its place in the "
        "shared ledger); the shared budget is 3 x sum(R) + "
        f"{SECTION_FITS * GAUSSIAN_RHO:g}.",
    )
    demo_parser.add_argument(
        "--csv",
        type=_output_file,
        metavar="FILE",
        help="also write every result row to FILE as CSV (section, estimator, rho, "
        "metric, value, the non-private value, epsilon, delta, seconds); with "
        "'-' the CSV goes to stdout and the report to stderr",
    )
    demo_parser.add_argument(
        "--plot",
        type=_figure_file,
        metavar="FILE",
        help="also save a utility-versus-budget figure of the covariance sweep "
        "(error against rho, log axes, one line per estimator) to FILE, as png, "
        f"pdf or svg by its extension; needs matplotlib: {PLOT_EXTRA}",
    )
    demo_parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one line on stderr as each section starts, and the total time "
        "(default: only when stderr is a terminal)",
    )
    sub.add_parser("version", help="print the version")
    return parser


def main(argv=None):
    """Entry point of the ``dpgauss`` command.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments (``sys.argv[1:]`` when None). With no command, or when the first
        argument is an option other than ``-h`` or ``--version``, they go to
        ``dpgauss demo``.

    Returns
    -------
    int
        Exit status.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (
        argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")
    ):
        argv = ["demo", *argv]
    args = _parser().parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    progress = args.progress
    if progress is None:
        progress = sys.stderr.isatty()
    out = sys.stderr if args.csv == "-" else sys.stdout
    rows = demo(
        seed=args.seed,
        out=out,
        rhos=args.rho,
        progress=sys.stderr if progress else None,
    )
    wrote = []
    if args.csv is not None:
        write_csv(rows, args.csv)
        if args.csv != "-":
            wrote.append(f"Wrote {len(rows)} result rows to {args.csv}.")
    if args.plot is not None:
        plot_sweep(rows, args.plot)
        wrote.append(f"Wrote the utility-versus-budget figure to {args.plot}.")
    if wrote:
        print("\n" + "\n".join(wrote), file=out)
    return 0
