"""The second section: a Gaussian far from the origin and badly conditioned,
fitted with no range and no hint by PrivateGaussianEstimator and PrivateMean."""

import numpy as np

from dpgauss import PrivateGaussianEstimator, PrivateMean
from dpgauss.demo.report import (
    GAUSSIAN_RHO,
    epsilon,
    fixed_cost,
    row,
    timed_fit,
    versus,
)

__all__ = ["FITS", "SECTION", "cost", "run"]

SECTION = "gaussian"
FITS = 2
#: The rho the section charges: FITS fits at GAUSSIAN_RHO.
cost = fixed_cost(FITS)


def run(context, note):
    """No hints: a far mean and a badly conditioned covariance, found privately."""
    note("Gaussians with no bounds")
    budget, seed, out = context.budget, context.seed, context.out
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
    gauss_seconds = timed_fit(gauss, X)
    cov_error = float(np.linalg.norm(whiten @ gauss.covariance_ @ whiten.T - eye))
    mean = PrivateMean(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    mean_seconds = timed_fit(mean, X)
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
            row(
                SECTION,
                label,
                GAUSSIAN_RHO,
                metric,
                private,
                exact,
                epsilon(est),
                seconds,
            )
        )
    g_mean, g_cov, m_mean = (result["value"] for result in rows)
    print(
        f"Verdict: {gauss_label}: mean {versus(g_mean, exact_mean)}, covariance "
        f"{versus(g_cov, exact_cov_error)}, with no bounds given.\n"
        f"Verdict: {mean_label}: mean {versus(m_mean, exact_mean)}, with no "
        "bounds given.",
        file=out,
    )
    return rows
