"""The third section: a Gaussian mixture far from the origin, fitted by
PublicPrivateGMM with 120 public rows, against the public rows alone."""

import numpy as np

from dpgauss import PublicPrivateGMM
from dpgauss.demo.report import GAUSSIAN_RHO, epsilon, fixed_cost, row, timed_fit

__all__ = ["FITS", "SECTION", "cost", "run"]

SECTION = "mixture"
FITS = 1
#: The rho the section charges: FITS fits at GAUSSIAN_RHO.
cost = fixed_cost(FITS)


def run(context, note):
    """A mixture far from the origin, with 120 public rows."""
    from sklearn.mixture import GaussianMixture

    note("Gaussian mixture with public rows")
    budget, seed, out = context.budget, context.seed, context.out
    rng = np.random.default_rng(54321)  # the data (public to the demo)
    d, n = 8, 20_000
    centers = 1e4 + 12.0 * np.eye(3, d)
    weights = np.array([0.5, 0.3, 0.2])

    def draw(count):
        labels = rng.choice(3, size=count, p=weights)
        return centers[labels] + rng.standard_normal((count, d))

    X, public, test = draw(n), draw(120), draw(5000)
    gmm = PublicPrivateGMM(rho=GAUSSIAN_RHO, budget=budget, random_state=seed)
    gmm_seconds = timed_fit(gmm, X, X_public=public)
    exact = GaussianMixture(3, random_state=seed).fit(X).score(test)
    only = GaussianMixture(3, reg_covar=1e-3, random_state=seed)
    only_seconds = timed_fit(only, public)
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
            epsilon(gmm),
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
            row(
                SECTION,
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
