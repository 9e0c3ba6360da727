"""The first section: every covariance estimator on digits at each budget of
the sweep, its error against the non-private covariance, and which to use."""

import numpy as np

from dpgauss import PrivateCovariance, TailSensitiveCovariance, __version__
from dpgauss.demo.report import CLOSE, epsilon, row, timed_fit

__all__ = ["ESTIMATORS", "SECTION", "cost", "covariance_verdict", "run"]

SECTION = "covariance"
#: The estimators of the sweep, by printed label: each is fitted once per budget.
ESTIMATORS = {
    "TailSensitiveCovariance()": lambda rho, data_norm: TailSensitiveCovariance(
        rho=rho, data_norm=data_norm
    ),
    "PrivateCovariance() [auto]": lambda rho, data_norm: PrivateCovariance(
        rho=rho, data_norm=data_norm
    ),
    'PrivateCovariance(method="gauss")': lambda rho, data_norm: PrivateCovariance(
        method="gauss", rho=rho, data_norm=data_norm
    ),
}


def cost(rhos):
    """The section's rho: every estimator once at each budget of ``rhos``."""
    return len(ESTIMATORS) * sum(rhos)


def run(context, note):
    """Print the demo's header and the sweep's table and verdicts; return the rows."""
    out, budget, rhos = context.out, context.budget, context.rhos
    X, _, data_norm = context.digits
    n, d = X.shape
    exact = np.cov(X, rowvar=False, bias=True)
    exact_norm = np.linalg.norm(exact)
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
        "scores 1.0). Each row is one fit, one draw of its noise (--seed); the "
        "README's headlines are means over 20 seeds.",
        file=out,
    )
    print(
        f"{'estimator':<34} {'rho':>6} {'epsilon at delta=1e-6':>22} "
        f"{'rel. error':>11}  chosen",
        file=out,
    )
    rows = []
    for i, rho in enumerate(rhos, 1):
        note(f"covariance on digits, rho={rho:g} ({i} of {len(rhos)} budgets)")
        for label, make in ESTIMATORS.items():
            est = make(rho, data_norm).set_params(
                budget=budget, random_state=context.seed
            )
            seconds = timed_fit(est, X)
            error = float(np.linalg.norm(est.covariance_ - exact) / exact_norm)
            eps = epsilon(est)
            chosen = _describe(est)
            print(
                f"{label:<34} {rho:>6g} {eps:>22.3f} {error:>11.3f}  {chosen}", file=out
            )
            rows.append(
                row(
                    SECTION,
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
    for label in ESTIMATORS:
        print(f"Verdict: {label}: {covariance_verdict(rows, label)}", file=out)
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
    return rows


def covariance_verdict(rows, label):
    """From which rho ``label`` is within 10%, and how it ranks, from the rows."""
    rows = [result for result in rows if result["section"] == SECTION]
    mine = [result for result in rows if result["estimator"] == label]
    best = {}
    for result in rows:
        best[result["rho"]] = min(best.get(result["rho"], np.inf), result["value"])
    close_from = None
    for result in reversed(mine):  # the rows are in increasing rho
        if result["value"] >= CLOSE:
            break
        close_from = result["rho"]
    if close_from is None:
        lowest = min(mine, key=lambda result: result["value"])
        reach = (
            "not within 10% of the non-private covariance at any rho tried "
            f"(at best {lowest['value']:.3f}, at rho = {lowest['rho']:g})"
        )
    else:
        reach = f"within 10% of the non-private covariance from rho = {close_from:g}"
    ratios = [result["value"] / best[result["rho"]] for result in mine]
    low, high = f"{min(ratios):.1f}", f"{max(ratios):.1f}"
    if max(ratios) == 1.0:
        rank = "the lowest error at every rho"
    elif low == high:
        rank = f"{high}x the lowest error at the same rho"
    else:
        rank = f"{low}-{high}x the lowest error at the same rho"
    return f"{reach}; {rank}."


def _describe(est):
    """What a fitted estimator chose privately (method, clipping threshold)."""
    if isinstance(est, TailSensitiveCovariance):
        return (
            f"{est.method_}, clipped at {est.clip_radius_:.3g}, "
            f"centered by {est.centering_}"
        )
    return est.method_
