"""The ``dpgauss`` command: ``dpgauss demo`` (the default) and ``dpgauss version``."""

import argparse
import sys

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
#: The budget per fit of every section after the first (five fits).
GAUSSIAN_RHO = 0.5
SECTION_FITS = 5


def _load_digits_public_scale():
    """Return sklearn's digits (n=1797, d=64), pixels scaled from [0, 16] to [0, 1].

    The scale and the row-norm bound sqrt(64) = 8 come from the pixel range, which
    is public; nothing is read off the data to choose them.
    """
    from sklearn.datasets import load_digits

    X = load_digits().data / 16.0
    return X, float(np.sqrt(X.shape[1]))


def demo(seed=0, out=sys.stdout):
    """Fit the library's estimators at a few budgets and print error and privacy.

    Parameters
    ----------
    seed : int, default=0
        Seed for the noise, so that the printed numbers are reproducible (a real
        release uses ``random_state=None``).
    out : file-like, default=sys.stdout
        Where to print.

    Returns
    -------
    list of dict
        One row per fit: estimator, rho, relative Frobenius error, epsilon.
    """
    X, data_norm = _load_digits_public_scale()
    n, d = X.shape
    exact = np.cov(X, rowvar=False, bias=True)
    exact_norm = np.linalg.norm(exact)
    estimators = {
        "TailSensitiveCovariance()": lambda rho: TailSensitiveCovariance(
            rho=rho, data_norm=data_norm
        ),
        "PrivateCovariance()  [auto]": lambda rho: PrivateCovariance(
            rho=rho, data_norm=data_norm
        ),
        'PrivateCovariance(method="gauss")': lambda rho: PrivateCovariance(
            method="gauss", rho=rho, data_norm=data_norm
        ),
    }
    budget = PrivacyBudget(
        rho=len(estimators) * sum(DEMO_RHOS) + SECTION_FITS * GAUSSIAN_RHO
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
    for rho in DEMO_RHOS:
        for label, make in estimators.items():
            est = make(rho).set_params(budget=budget, random_state=seed).fit(X)
            error = np.linalg.norm(est.covariance_ - exact) / exact_norm
            eps = est.privacy_spent_.to_approx(DEMO_DELTA).epsilon
            chosen = _describe(est)
            print(
                f"{label:<34} {rho:>6g} {eps:>22.3f} {error:>11.3f}  {chosen}", file=out
            )
            rows.append(
                {"estimator": label, "rho": rho, "epsilon": eps, "error": error}
            )
    tail = [r["error"] for r in rows if r["estimator"].startswith("Tail")]
    fixed = [r["error"] for r in rows if "auto" in r["estimator"]]
    ratio = float(np.mean(np.array(tail) / np.array(fixed)))
    print(
        "\nWhich to use: TailSensitiveCovariance when you do not know the scale of "
        "your data, since it finds its clipping radius privately, so a loose "
        f"data_norm costs little (here {ratio:.2f}x the error of "
        "PrivateCovariance() at the same budget, on average).",
        file=out,
    )
    rows += _gaussian_section(budget, seed, out)
    rows += _mixture_section(budget, seed, out)
    rows += _subsample_section(budget, seed, out)
    rows += _product_section(budget, seed, out)
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
    return rows


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
    gauss.fit(X)
    cov_error = float(np.linalg.norm(whiten @ gauss.covariance_ @ whiten.T - eye))
    mean = PrivateMean(rho=GAUSSIAN_RHO, budget=budget, random_state=seed).fit(X)
    lines = [
        ("PrivateGaussianEstimator() mean", maha(gauss.mean_), exact_mean),
        ("PrivateGaussianEstimator() covariance", cov_error, exact_cov_error),
        (f"PrivateMean()  [{mean.method_}]", maha(mean.mean_), exact_mean),
    ]
    rows = []
    for label, private, exact in lines:
        print(
            f"{label:<40} rho={GAUSSIAN_RHO:g}  private {private:.3f}  "
            f"non-private {exact:.3f}",
            file=out,
        )
        rows.append(
            {"estimator": label, "rho": GAUSSIAN_RHO, "error": private, "exact": exact}
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
    gmm.fit(X, X_public=public)
    exact = GaussianMixture(3, random_state=seed).fit(X).score(test)
    only = GaussianMixture(3, reg_covar=1e-3, random_state=seed).fit(public)
    print(
        f"\nA Gaussian mixture: n={n} private rows, d={d}, 3 components 12 sds "
        "apart, 1e4 from the origin, and 120 public rows (X_public). Test "
        "log-likelihood per point (higher is better):",
        file=out,
    )
    lines = [
        (f"PublicPrivateGMM() [{gmm.n_components_} components, {gmm.regime_}]", gmm),
        ("GaussianMixture on the 120 public rows", only),
    ]
    rows = []
    for label, model in lines:
        value = float(model.score(test))
        print(
            f"{label:<46} {value:9.3f}   non-private on X {exact:9.3f}",
            file=out,
        )
        rows.append({"estimator": label, "loglik": value, "exact_loglik": exact})
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
    ).fit(X, y)
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
        f"Verdict: {private / exact:.2f}x the non-private fit's error to the "
        "truth; any scikit-learn estimator with a vector result can be wrapped "
        "(no bounds on X or y are needed).",
        file=out,
    )
    return [
        {
            "estimator": label,
            "rho": GAUSSIAN_RHO,
            "error_truth": private,
            "error_full": to_full,
            "nonprivate_truth": exact,
        }
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
    est = PrivateProductDistribution(
        rho=GAUSSIAN_RHO, budget=budget, random_state=seed
    ).fit(X)
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
        f"Verdict: {private / exact:.2f}x the non-private distance; the noise is "
        f"that of rows with few ones (about {d * p.mean():.1f} here, found "
        f"privately), not of rows with {d} (the plain Gaussian mechanism's).",
        file=out,
    )
    return [
        {
            "estimator": label,
            "rho": GAUSSIAN_RHO,
            "hellinger": private,
            "exact_hellinger": exact,
        }
    ]


def _describe(est):
    """What a fitted estimator chose privately (method, clipping threshold)."""
    if isinstance(est, TailSensitiveCovariance):
        return (
            f"{est.method_}, clipped at {est.clip_threshold_:.3g}, "
            f"centered by {est.centering_}"
        )
    return est.method_


def main(argv=None):
    """Entry point of the ``dpgauss`` command.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        Exit status.
    """
    parser = argparse.ArgumentParser(
        prog="dpgauss", description="Differentially private Gaussian estimators."
    )
    sub = parser.add_subparsers(dest="command")
    demo_parser = sub.add_parser("demo", help="run the demonstration (default)")
    demo_parser.add_argument("--seed", type=int, default=0, help="noise seed")
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    demo(seed=getattr(args, "seed", 0))
    return 0
