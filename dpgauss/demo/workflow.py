"""The sixth section: what users do with a Gaussian model, a classifier and
PCA on digits and an outlier detector on breast cancer, next to scikit-learn's
non-private counterparts."""

import numpy as np

from dpgauss import (
    PrivateEllipticEnvelope,
    PrivateLinearDiscriminantAnalysis,
    PrivatePCA,
)
from dpgauss.demo.report import GAUSSIAN_RHO, epsilon, fixed_cost, row, timed_fit

__all__ = ["FITS", "SECTION", "cost", "published_maxima", "run"]

SECTION = "workflow"
FITS = 3
#: The rho the section charges: FITS fits at GAUSSIAN_RHO.
cost = fixed_cost(FITS)


def run(context, note):
    """PrivateLinearDiscriminantAnalysis and PrivatePCA on the digits of the
    first section (rows, labels and public row-norm bound), PrivateEllipticEnvelope
    on breast cancer: what users do with a Gaussian."""
    from sklearn.covariance import EmpiricalCovariance
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.metrics import roc_auc_score

    note("classifier, PCA and outlier detector")
    budget, seed, out = context.budget, context.seed, context.out
    rows = []
    X, y, data_norm = context.digits
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
    seconds = timed_fit(lda, X[train], y[train])
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
        row(
            SECTION,
            label,
            GAUSSIAN_RHO,
            "test_accuracy",
            private,
            nonprivate,
            epsilon(lda),
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
    seconds = timed_fit(pca, X[train])
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
        row(
            SECTION,
            label,
            GAUSSIAN_RHO,
            "captured_variance",
            captured,
            best,
            epsilon(pca),
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
    malignant = cancer.target[keep] == 0
    # Its box as a data dictionary would give it, never read off the rows:
    # from 0 to 1.5 times the maxima the data set's documentation publishes.
    env = PrivateEllipticEnvelope(
        bounds=(0.0, 1.5 * published_maxima(cancer.DESCR)),
        rho=GAUSSIAN_RHO,
        budget=budget,
        random_state=seed,
    )
    seconds = timed_fit(env, Z)
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
    # The verdict states the gap in words: "ROC AUC -0.091" read as an AUC,
    # which cannot be negative (it was the difference to the non-private one).
    gap = auc - exact_auc
    print(
        f"Verdict: {label}: ROC AUC {auc:.3f}, {abs(gap):.3f} "
        f"{'below' if gap < 0 else 'above'} the {exact_auc:.3f} of scikit-learn's "
        "non-private EmpiricalCovariance distance; its threshold is the public "
        "chi-square quantile of contamination=0.1, never a data quantile.",
        file=out,
    )
    rows.append(
        row(
            SECTION,
            label,
            GAUSSIAN_RHO,
            "roc_auc",
            auc,
            exact_auc,
            epsilon(env),
            seconds,
        )
    )
    return rows


def published_maxima(descr):
    """The "Max" column of a scikit-learn data set's documented "Summary
    Statistics" table (public: the data set's documentation, not its rows).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from dpgauss.demo.workflow import published_maxima
    >>> published_maxima(load_breast_cancer().DESCR)[:3].tolist()
    [28.11, 39.28, 188.5]
    """
    table = descr[descr.index("Summary Statistics") :].split("\n")
    rules = [i for i, line in enumerate(table) if line.startswith("=====")]
    body = table[rules[1] + 1 : rules[2]]
    return np.array([float(line.split()[-1]) for line in body])
