"""Fit the error-proxy constants of dpgauss.releases._covariance on measured errors.

Run: ``.venv/bin/python benchmarks/calibrate_proxies.py``. For settings of the DLY
benchmark table it measures the mean Frobenius error of gauss_release and
separate_release (second moment, no centering, trace cap data_norm^2) and fits

* KAPPA_GAUSS: median of measured / raw noise norm, and a second term for the
  trace projection (see ``predicted_gauss_error``);
* KAPPA_EIGENVALUES^2, KAPPA_EIGENVECTORS: non-negative least squares of the
  squared separate error on the eigenvalue and eigenvector terms.

The constants only steer which mechanism is chosen; they never affect privacy.
"""

import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import zipf_data

import dpgauss.releases._covariance as K
from dpgauss.accounting import ZCDP, split_cost
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.mechanisms._releases import eigenvalue_mechanism, second_moment_mechanism
from dpgauss.releases._covariance import SEPARATE_MARGIN

SETTINGS = [
    (n, d, N, rho)
    for (n, d, N, rho) in [
        (1000, 10, 1, 0.1),
        (1000, 50, 1, 0.1),
        (1000, 200, 1, 0.1),
        (4000, 50, 1, 0.1),
        (4000, 200, 1, 0.1),
        (16000, 50, 1, 0.1),
        (16000, 200, 1, 0.1),
        (50000, 200, 1, 0.1),
        (50000, 200, 2, 0.1),
        (50000, 200, 4, 0.1),
        (50000, 200, 8, 0.1),
        (50000, 10, 4, 0.1),
        (50000, 50, 4, 0.1),
        (50000, 200, 4, 1e-3),
        (50000, 200, 4, 1.0),
        (50000, 200, 4, 10.0),
        (5000, 200, 4, 0.1),
        (16000, 400, 1, 0.1),
    ]
]


def components(cost, n, d, radius, trace):
    diag, off = K._stds(second_moment_mechanism(cost, n, d, radius).entry_variances())
    raw_gauss = math.sqrt(d * diag**2 + d * (d - 1) * off**2)
    value_cost, vector_cost = split_cost(cost, [0.5, 0.5])
    value_sd = eigenvalue_mechanism(value_cost, n, d, radius).scale
    _, off_copy = K._stds(
        second_moment_mechanism(vector_cost, n, d, radius).entry_variances()
    )
    return raw_gauss, d * value_sd**2, trace * 2 * math.sqrt(d) * off_copy


def _release(method, M, n, cost, seed):
    """The release's estimate of M (no centering, trace cap 1 = data_norm^2)."""
    d = M.shape[0]
    plan = ReleasePlan(cost, K.covariance_entries(method, cost, d, n, 1.0))
    rng = np.random.default_rng(seed)
    case = {"n_partials": 1}
    values, vectors, _ = K.release_covariance(method, M, n, plan, case, rng, 1.0)
    return (vectors * values) @ vectors.T


def main(reps=3):
    rows = []
    for n, d, N, rho in SETTINGS:
        X = zipf_data(n, d, N, seed=0)
        M = X.T @ X / n
        cost = ZCDP(rho * 15 / 16)
        g = np.mean(
            [np.linalg.norm(_release("gauss", M, n, cost, s) - M) for s in range(reps)]
        )
        s_ = np.mean(
            [
                np.linalg.norm(_release("separate", M, n, cost, s) - M)
                for s in range(reps)
            ]
        )
        rows.append(
            (
                n,
                d,
                N,
                rho,
                np.trace(M),
                g,
                s_,
                *components(cost, n, d, 1.0, np.trace(M)),
            )
        )
    rows = np.array(rows)
    g_ratio = rows[:, 5] / rows[:, 7]
    # The constants only steer a choice, so fit them for the choice: minimise the
    # worst ratio (error of the picked method / error of the better one) over the
    # settings, then the mean ratio, then the mean |log(predicted / measured)| of
    # the separate error (so that its scaling in rho and tau is right, which the
    # threshold search relies on).
    weight = 1.0 / rows[:, 6] ** 2
    start, _ = nnls(rows[:, 8:10] * weight[:, None], rows[:, 6] ** 2 * weight)
    # KAPPA_GAUSS is fixed at the median measured / raw ratio: the proxies are
    # also compared with an absolute clipping bias (TailSensitiveCovariance), so
    # their scale must be physical; only the separate constants are searched.
    best = None
    for kg in [round(float(np.median(g_ratio)), 2)]:
        for ke in np.linspace(0.0, 1.5, 16):
            for kv in np.geomspace(0.01, 0.3, 30):
                sep = np.sqrt(ke**2 * rows[:, 8] + kv * rows[:, 9])
                picked = np.where(sep < kg * rows[:, 7], rows[:, 6], rows[:, 5])
                ratio = picked / np.minimum(rows[:, 5], rows[:, 6])
                fit = np.mean(np.abs(np.log(sep / rows[:, 6])))  # magnitude fit
                key = (round(ratio.max(), 3), round(ratio.mean(), 4), fit)
                if best is None or key < best[0]:
                    best = (key, kg, ke, kv)
    (_, K.KAPPA_GAUSS, ke, kv) = best
    coef = (ke**2, kv)
    print("gauss measured / raw noise norm:", np.round(g_ratio, 2))
    print(
        f"least squares start: KAPPA_EIGENVALUES = {math.sqrt(start[0]):.3f}, "
        f"KAPPA_EIGENVECTORS = {start[1]:.4f}"
    )
    print(
        f"chosen: KAPPA_GAUSS = {K.KAPPA_GAUSS:.2f}, KAPPA_EIGENVALUES = {ke:.2f}, "
        f"KAPPA_EIGENVECTORS = {kv:.4f}; worst ratio {best[0][0]:.3f}, "
        f"mean {best[0][1]:.4f}, mean |log(pred/measured)| {best[0][2]:.3f}"
    )
    for row in rows:
        n, d, N, rho, tr, g, s_, raw, e0, v0 = row
        pred = math.sqrt(coef[0] * e0 + coef[1] * v0)
        gpred = K.KAPPA_GAUSS * raw
        pick = "separate" if pred < SEPARATE_MARGIN * gpred else "gauss"
        best = "separate" if s_ < g else "gauss"
        loss = (s_ if pick == "separate" else g) / min(g, s_)
        print(
            f"n={n:>6.0f} d={d:>4.0f} N={N:>2.0f} rho={rho:<6g} tr={tr:.4f} "
            f"gauss={g:.5f} pred={gpred:.5f} sep={s_:.5f} pred={pred:.5f} "
            f"pick={pick:<8} best={best:<8} ratio={loss:.2f}"
        )


if __name__ == "__main__":
    main()
