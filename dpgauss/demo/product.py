"""The fifth section: PrivateProductDistribution on rare binary features,
whose noise follows the rows' few ones rather than their d features."""

import numpy as np

from dpgauss import PrivateProductDistribution
from dpgauss.demo.report import (
    GAUSSIAN_RHO,
    epsilon,
    fixed_cost,
    row,
    timed_fit,
    versus,
)

__all__ = ["FITS", "SECTION", "cost", "run"]

SECTION = "product"
FITS = 1
#: The rho the section charges: FITS fits at GAUSSIAN_RHO.
cost = fixed_cost(FITS)


def run(context, note):
    """PrivateProductDistribution on rare binary features (KLSU 2019)."""
    note("product distribution on rare binary features")
    budget, seed, out = context.budget, context.seed, context.out
    rng = np.random.default_rng(13579)  # the data (public to the demo)
    d, n = 200, 20_000
    p = rng.uniform(0.0, 2.0 / d, d)
    X = (rng.random((n, d)) < p).astype(np.int8)
    est = PrivateProductDistribution(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    seconds = timed_fit(est, X)
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
        f"Verdict: {label}: {versus(private, exact, 'distance')}; the noise is "
        f"that of rows with few ones (about {d * p.mean():.1f} here, found "
        f"privately), not of rows with {d} (the plain Gaussian mechanism's).",
        file=out,
    )
    return [
        row(
            SECTION,
            label,
            GAUSSIAN_RHO,
            "hellinger_to_truth",
            private,
            exact,
            epsilon(est),
            seconds,
        )
    ]


def _hellinger(p, q):
    """Hellinger distance between two products of Bernoullis (as bench_product)."""
    affinity = np.sqrt(p * q) + np.sqrt((1.0 - p) * (1.0 - q))
    return float(np.sqrt(max(0.0, 1.0 - np.exp(np.sum(np.log(affinity))))))
