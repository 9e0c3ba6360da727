"""SubsampleAggregate's PSD space against the winsorized aggregator on covariances.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_subsample_psd.py
[--seeds 2] [--quick]`` (about 6 minutes on one core with 2 seeds).

Data: ``N(0, Sigma)`` rows, ``Sigma = A A^T + I`` with A standard normal
(redrawn per seed), times 1000 (no method is told the scale). Wrapped estimator:
``sklearn.covariance.EmpiricalCovariance``, statistic ``covariance_``; budget
epsilon = 1, delta = 1e-6. Methods on the same rows:

* ``aggregator="populous", space="psd"`` (radius and groups "auto");
* ``aggregator="winsorized"`` on the flattened covariance (groups "auto"), at
  ``rho = approx_to_zcdp(1, 1e-6)`` (the largest rho that implies
  (1, 1e-6)-DP);
* the same with the PSD space's groups (``50 d`` rows each; EmpiricalCovariance
  is the maximum-likelihood estimate, biased by ``1 - 1/s`` on s rows, which
  dominates the default's 25-row groups);
* the non-private covariance of all rows.

Metric: the relative (Thompson-type) distance of Ashtiani and Liaw,
``max(lambda_max, 1 / lambda_min) - 1`` for the eigenvalues of
``Sigma^-1/2 Sigma_hat Sigma^-1/2`` (inf when Sigma_hat is not positive
definite): 0.5 means "within a factor 1.5 in every direction". Reported: the
median and worst over seeds, the PSD test's pass rate, the groups and radius,
and the fit times. Writes ``results/bench_subsample_psd.md`` (not with
``--quick``, which runs one seed of the smallest setting).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.covariance import EmpiricalCovariance

from dpgauss.accounting import approx_to_zcdp
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.exceptions import PrivateTestFailedError

RESULTS = Path(__file__).resolve().parent / "results"
EPS, DELTA, SCALE = 1.0, 1e-6, 1000.0
SETTINGS = [(200_000, 2), (1_000_000, 2), (1_000_000, 3)]


def relative_distance(est, truth):
    Li = np.linalg.inv(np.linalg.cholesky(truth))
    lam = np.linalg.eigvalsh(Li @ ((est + est.T) / 2) @ Li.T)
    if not np.all(np.isfinite(lam)) or lam.min() <= 0:
        return float("inf")
    return float(max(lam.max(), 1.0 / lam.min()) - 1.0)


def run(n, d, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T + np.eye(d)
    X = rng.multivariate_normal(np.zeros(d), cov, size=n) * SCALE
    truth = cov * SCALE**2
    row = {"nonprivate": relative_distance(np.cov(X.T), truth)}
    t0 = time.perf_counter()
    est = SubsampleAggregate(
        EmpiricalCovariance(),
        statistic="covariance_",
        aggregator="populous",
        space="psd",
        epsilon=EPS,
        delta=DELTA,
        random_state=seed,
    )
    try:
        est.fit(X)
        row["psd"] = relative_distance(est.statistic_, truth)
        row["passed"] = True
        row["k"], row["tau"] = est.n_groups_, est.radius_
    except PrivateTestFailedError:
        row["psd"], row["passed"] = float("inf"), False
    row["psd_time"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = SubsampleAggregate(
        EmpiricalCovariance(),
        statistic="covariance_",
        rho=approx_to_zcdp(EPS, DELTA),
        random_state=seed,
    ).fit(X)
    row["winsorized"] = relative_distance(est.statistic_.reshape(d, d), truth)
    row["winsorized_k"] = est.n_groups_
    row["winsorized_time"] = time.perf_counter() - t0
    # the same groups as the PSD space's "auto" (50 d rows): EmpiricalCovariance
    # is the MLE, biased by a factor 1 - 1/s on groups of s rows
    est = SubsampleAggregate(
        EmpiricalCovariance(),
        statistic="covariance_",
        n_groups=n // (50 * d),
        rho=approx_to_zcdp(EPS, DELTA),
        random_state=seed,
    ).fit(X)
    row["winsorized_50d"] = relative_distance(est.statistic_.reshape(d, d), truth)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    settings = SETTINGS[:1] if args.quick else SETTINGS
    seeds = 1 if args.quick else args.seeds
    lines = [
        "# SubsampleAggregate: PSD populous against winsorized on covariance_",
        "",
        f"epsilon = {EPS}, delta = {DELTA}; EmpiricalCovariance; {seeds} seeds; "
        "relative distance max(l_max, 1/l_min) - 1 to the truth.",
        "",
        "| n | d | PSD median | PSD worst | passed | k, tau (PSD) | winsorized "
        "median | winsorized worst | k (winsorized) | winsorized, 50 d rows per "
        "group (median) | non-private | time PSD / winsorized (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, d in settings:
        rows = [run(n, d, seed) for seed in range(seeds)]
        psd = [r["psd"] for r in rows]
        win = [r["winsorized"] for r in rows]
        ks = sorted({(r.get("k"), round(r.get("tau") or 0, 3)) for r in rows})
        line = (
            f"| {n:,} | {d} | {np.median(psd):.3g} | {max(psd):.3g} | "
            f"{sum(r['passed'] for r in rows)}/{seeds} | {ks} | "
            f"{np.median(win):.3g} | {max(win):.3g} | {rows[0]['winsorized_k']} | "
            f"{np.median([r['winsorized_50d'] for r in rows]):.3g} | "
            f"{np.median([r['nonprivate'] for r in rows]):.2g} | "
            f"{np.median([r['psd_time'] for r in rows]):.1f} / "
            f"{np.median([r['winsorized_time'] for r in rows]):.1f} |"
        )
        print(line, flush=True)
        lines.append(line)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "bench_subsample_psd.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
