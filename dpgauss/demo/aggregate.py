"""The fourth section: a private linear regression, two ways. Any
scikit-learn estimator made private by subsample and aggregate, here
SubsampleAggregate(LinearRegression()), next to PrivateLinearRegression,
least squares from the second moments' releases within public boxes."""

import numpy as np

from dpgauss import PrivateLinearRegression, SubsampleAggregate
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
FITS = 2
#: The rho the section charges: FITS fits at GAUSSIAN_RHO.
cost = fixed_cost(FITS)


def run(context, note):
    """A private LinearRegression: SubsampleAggregate and PrivateLinearRegression."""
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
    rows = _rows(label, est, private, to_full, exact, seconds)
    # The boxes are the simulation's public design: standard normal columns
    # (clipped at 4 sds, a 6e-5 share of entries) and y's sd of about 3.9
    # (the box is five of them each side).
    note("PrivateLinearRegression")
    model = PrivateLinearRegression(
        bounds=(-4.0, 4.0),
        target_bounds=(-20.0, 20.0),
        rho=GAUSSIAN_RHO,
        budget=budget,
        random_state=seed,
    )
    seconds = timed_fit(model, X, y)
    private = float(np.linalg.norm(model.coef_ - beta))
    to_full = float(np.linalg.norm(model.coef_ - full))
    label = "PrivateLinearRegression()"
    print(
        f"{label:<40} rho={GAUSSIAN_RHO:g}  to the truth {private:.4f}  to the "
        f"non-private fit {to_full:.4f}  (public boxes: x in [-4, 4], y in "
        "[-20, 20])",
        file=out,
    )
    print(
        f"Verdict: {label}: {versus(private, exact, 'error to the truth')}; "
        "least squares from private second moments, refined on the residuals "
        "(needs public boxes on X and y).",
        file=out,
    )
    return rows + _rows(label, model, private, to_full, exact, seconds)


def _rows(label, est, private, to_full, exact, seconds):
    """The section's two result rows for one fit."""
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
