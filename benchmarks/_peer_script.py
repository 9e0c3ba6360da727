"""Run peer libraries' private estimators on jobs bench_real wrote (no dpgauss).

Run by a peer's own interpreter (its venv has diffprivlib with scikit-learn
< 1.6, or OpenDP): ``python _peer_script.py PEER IN.npz OUT.npz``. Every job
gives the rows, the public box, the pure epsilon and a seed; the peer gets
exactly that public knowledge. Keys are ``"{job}__{field}"``.
"""

import sys
import warnings

import numpy as np


def _jobs(path):
    data = np.load(path, allow_pickle=False)
    jobs = {}
    for key in data.files:
        job, field = key.split("__", 1)
        jobs.setdefault(int(job), {})[field] = data[key]
    return jobs


def _column_means(X, lower, upper, eps, mean_1d):
    d = X.shape[1]
    out = np.array([mean_1d(X[:, j], lower[j], upper[j], eps / d) for j in range(d)])
    return np.clip(out, lower, upper)  # truncated to the box: post-processing


def run_diffprivlib(job):
    import diffprivlib as dpl

    task = str(job["task"])
    eps = float(job["eps"])
    # One generator for the whole job: the columns' noise is independent.
    rs = np.random.RandomState(int(job["seed"]))
    X, lower, upper = job["X"], job["lower"], job["upper"]
    d = X.shape[1]
    unit = (-np.ones(d), np.ones(d))
    if task == "mean":
        return {
            "mean": _column_means(
                X,
                lower,
                upper,
                eps,
                lambda col, lo, hi, e: dpl.tools.mean(
                    col, epsilon=e, bounds=(lo, hi), random_state=rs
                ),
            )
        }
    if task == "scaler":
        s = dpl.models.StandardScaler(
            epsilon=eps, bounds=(lower, upper), random_state=rs
        ).fit(X)
        return {"mean": s.mean_, "scale": s.scale_}
    if task == "pca":
        k = int(job["k"])
        p = dpl.models.PCA(
            n_components=k,
            epsilon=eps,
            bounds=unit,
            data_norm=np.sqrt(d),
            centered=False,
            random_state=rs,
        ).fit(X)
        return {"components": p.components_}
    if task == "gnb":
        m = dpl.models.GaussianNB(epsilon=eps, bounds=unit, random_state=rs)
        return {"pred": m.fit(X, job["y"]).predict(job["Xtest"])}
    if task == "logreg":
        m = dpl.models.LogisticRegression(
            epsilon=eps, data_norm=np.sqrt(d), random_state=rs
        )
        m.fit(X, job["y"])
        out = {"coef": m.coef_.ravel()}
        if "Xtest" in job:
            out["pred"] = m.predict(job["Xtest"])
        return out
    if task == "linreg":
        m = dpl.models.LinearRegression(
            epsilon=eps,
            random_state=rs,
            bounds_X=unit,
            bounds_y=(float(job["ylo"]), float(job["yhi"])),
        ).fit(X, job["y"])
        return {"coef": np.ravel(m.coef_), "intercept": np.ravel(m.intercept_)}
    raise ValueError(task)


def run_opendp(job):
    import opendp.prelude as dp

    dp.enable_features("contrib", "honest-but-curious")
    try:
        dp.enable_features("idealized-numerics")
    except Exception:  # older OpenDP: the same feature's former name
        dp.enable_features("floating-point")
    task = str(job["task"])
    eps = float(job["eps"])
    X, lower, upper = job["X"], job["lower"], job["upper"]
    n, d = X.shape

    def mean_1d(col, lo, hi, e):
        def make(scale):
            domain = dp.vector_domain(
                dp.atom_domain(bounds=(float(lo), float(hi))), size=n
            )
            return dp.t.make_mean(domain, dp.symmetric_distance()) >> dp.m.then_laplace(
                scale=scale
            )

        # Replacing one row is a symmetric distance of 2. OpenDP's own privacy
        # map checks the textbook scale (hi - lo) / (n e); search if it fails.
        scale = (float(hi) - float(lo)) / (n * float(e))
        if make(scale).map(2) > float(e):
            scale = dp.binary_search_param(make, d_in=2, d_out=float(e))
        return make(scale)(np.clip(col, lo, hi).astype(float).tolist())

    if task == "mean":
        return {"mean": _column_means(X, lower, upper, eps, mean_1d)}
    if task == "pca":
        from opendp.extras.sklearn.decomposition import PCA

        def pca(e):
            return PCA(
                epsilon=e,
                row_norm=float(np.sqrt(d)),
                n_samples=n,
                n_features=d,
                n_components=int(job["k"]),
            )

        # OpenDP's PCA(epsilon=e) is e-DP per added or removed row (symmetric
        # distance 1 at n_changes=1); its own map charges 2e at a symmetric
        # distance of 2, one replaced row. At e / 2 its map gives eps there.
        p = pca(eps / 2)
        if p.measurement().map(2) > eps:
            raise ValueError("OpenDP's PCA map exceeds eps for one replaced row")
        p = p.fit(X)
        return {"components": np.asarray(p.components_)}
    raise ValueError(task)


def main():
    peer, src, dst = sys.argv[1:4]
    run = {"diffprivlib": run_diffprivlib, "opendp": run_opendp}[peer]
    out = {}
    for i, job in sorted(_jobs(src).items()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = run(job)
        except Exception as exc:  # a peer that fails is reported, not fatal
            out[f"{i}__error"] = np.array(f"{type(exc).__name__}: {exc}"[:300])
            continue
        for field, value in result.items():
            out[f"{i}__{field}"] = np.asarray(value, float)
    np.savez(dst, **out)


if __name__ == "__main__":
    main()
