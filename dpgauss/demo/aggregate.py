"""The fourth section: any scikit-learn estimator made private by subsample
and aggregate, here SubsampleAggregate(LinearRegression())."""

import numpy as np

from dpgauss import SubsampleAggregate
from dpgauss.demo.report import (
    GAUSSIAN_RHO,
    epsilon,
    fixed_cost,
    row,
    timed_fit,
    versus,
)

__all__ = ["FITS", "SECTION", "cost", "run"]

SECTION = "subsample"
FITS = 1
#: The rho the section charges: FITS fits at GAUSSIAN_RHO.
cost = fixed_cost(FITS)


def run(context, note):
    """SubsampleAggregate: a private LinearRegression, by subsample and aggregate."""
    from sklearn.linear_model import LinearRegression

    note("SubsampleAggregate(LinearRegression())")
    budget, seed, out = context.budget, context.seed, context.out
    rng = np.random.default_rng(24680)  # the data (public to the demo)
    d, n = 5, 30_000
    beta = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    X = rng.standard_normal((n, d))
    y = X @ beta + rng.standard_normal(n)
    full = LinearRegression().fit(X, y).coef_
    est = SubsampleAggregate(
        LinearRegression(), rho=GAUSSIAN_RHO, budget=budget, random_state=seed
    )
    seconds = timed_fit(est, X, y)
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
        f"Verdict: {label}: {versus(private, exact, 'error to the truth')}; any "
        "scikit-learn estimator with a vector result can be wrapped (no bounds "
        "on X or y are needed).",
        file=out,
    )
    eps = epsilon(est)
    return [
        row(
            SECTION,
            label,
            GAUSSIAN_RHO,
            "coef_l2_error_to_truth",
            private,
            exact,
            eps,
            seconds,
        ),
        row(
            SECTION,
            label,
            GAUSSIAN_RHO,
            "coef_l2_error_to_nonprivate",
            to_full,
            None,
            eps,
            seconds,
        ),
    ]
