"""Every private estimator on real tables, small n and pure DP, against its floor.

Each estimator runs on statsmodels' fair, randhie, anes96, star98, macrodata and
modechoice (numeric columns), scikit-learn's wine, breast cancer and digits,
and four synthetic families (Student t with 3 degrees of freedom, columns in
scales 1e-3..1e6, a mixture with weights 0.6/0.3/0.1, a mean 1e4 from the
origin), at pure epsilon 0.5, 1, 2, (epsilon 1, delta 1e-6) and rho 0.125,
0.5, at n from the table's own down to 150, over seeds. Each fit is scored
against the non-private estimate on the same rows and against the simplest
private answer with the same public knowledge (``_baselines.py``), computed
in the same run with its own noise. Refusals (``UselessFitError``, raised
before any spend) are counted as such; a ``UtilityWarning`` is recorded;
non-finite outputs and outputs beyond a public multiple of the box are
flagged. Peers (diffprivlib, OpenDP) run on the same rows, box and pure
epsilon in their own environments, driven as subprocesses.

Public knowledge. The box is the table's observed min/max rounded outward to
a round value (``_real_data.codebook_box``), a stand-in for a codebook. An
estimator with a ``bounds`` parameter (read from ``get_params()``) gets the
box; one without gets the rows shifted by the box's centre and, as its hint,
the box's circumradius about that centre (``data_norm``, or ``mean_bound``
for the mean estimators). ``PrivateMean(no hints)`` and
``PrivateGaussianEstimator(no hints)`` get the raw rows and nothing else; their
floor is what a user with no public knowledge could do: find a box with
``PrivateBounds`` at half the budget, then the boxed baseline at the other half
(unbounded where the box search refuses). PCA, the classifiers, the mixture and
the aggregates work in box units (the public map to [-1, 1]^d; circumradius
sqrt(d)).

Targets (per row = data x privacy x n): no flagged output in any seed; median
at most the baseline and worst seed at most 3x the baseline's worst (each over
its own seeds), or a refusal; no fit that spends and lands beyond 10x the
non-private error without a warning; at most the best peer's median.

Run: ``python benchmarks/bench_real.py [--quick] [--seeds 10] [--only NAME]
[--jobs 2] [--data fair,wine] [--no-peers]``; peers' interpreters default to
/work/peers/dpl and /work/peers/opendp (``--dpl``, ``--opendp``; a missing
one is reported "n/a"). Writes ``results/bench_real.{md,csv,png}`` (``--quick``:
``bench_real_quick.*``).
"""

import argparse
import csv
import os
import sys
import time
import warnings
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _real_data as D
import _real_report as report
import _real_tasks as T
from _peers import PEER_TASKS, run_peers

PRIVACY = {
    "eps0.5": {"epsilon": 0.5},
    "eps1": {"epsilon": 1.0},
    "eps2": {"epsilon": 2.0},
    "eps1,d1e-6": {"epsilon": 1.0, "delta": 1e-6},
    "rho0.125": {"rho": 0.125},
    "rho0.5": {"rho": 0.5},
}
QUICK_PRIVACY = ["eps1", "eps1,d1e-6", "rho0.5"]
QUICK_DATA = [
    "fair",
    "randhie",
    "anes96",
    "star98",
    "modechoice",
    "wine",
    "breast_cancer",
    "student_t3",
    "scales_1e-3_1e6",
    "mixture_0.6_0.3_0.1",
    "far_mean_1e4",
]

#: The suffix of a contender fitted on the raw rows with no public knowledge.
NO_HINTS = "(no hints)"

# (estimator, task): which tasks an estimator is scored on.
ESTIMATORS = {
    "PrivateMean": ["mean"],
    "PrivateGaussianEstimator": ["mean", "cov"],
    "PrivateMean(no hints)": ["mean"],
    "PrivateGaussianEstimator(no hints)": ["mean", "cov"],
    "PrivateCovariance": ["cov"],
    "TailSensitiveCovariance": ["cov"],
    "PrivatePCA": ["pca"],
    "PrivateStandardScaler": ["scaler"],
    "LDA": ["clf"],
    "QDA": ["clf"],
    "PublicPrivateGMM": ["gmm"],
    "SubsampleAggregate(LinearRegression)": ["agg_lin"],
    "SubsampleAggregate(LogisticRegression)": ["agg_log"],
}


def _make(name, privacy, seed):
    from sklearn.linear_model import LinearRegression, LogisticRegression

    import dpgauss

    kw = dict(privacy, random_state=seed)
    if name == "LDA":
        return dpgauss.PrivateLinearDiscriminantAnalysis(**kw)
    if name == "QDA":
        return dpgauss.PrivateQuadraticDiscriminantAnalysis(**kw)
    if name.startswith("SubsampleAggregate"):
        logistic = "Logistic" in name
        inner = LogisticRegression() if logistic else LinearRegression()
        extra = {"classes": [0, 1]} if logistic else {}
        return dpgauss.SubsampleAggregate(inner, statistic="coef_", **extra, **kw)
    return getattr(dpgauss, name.removesuffix(NO_HINTS))(**kw)


def _fit(est, fit):
    """Run ``fit(est)``: (status, warned, seconds, message)."""
    from dpgauss.exceptions import UselessFitError, UtilityWarning

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit(est)
            status, msg = "ok", ""
        except UselessFitError as exc:
            status, msg = "refused", str(exc).splitlines()[0][:160]
        except Exception as exc:  # reported in the table, never fatal
            status, msg = "error", f"{type(exc).__name__}: {exc}"[:160]
    warned = any(issubclass(w.category, UtilityWarning) for w in caught)
    return status, warned, time.perf_counter() - t0, msg


def _has_bounds(est):
    return "bounds" in est.get_params()


def _contender(name, task, ctx, privacy, seed):
    """Fit one dpgauss estimator on a task's rows.

    Returns (status, warned, seconds, message, outputs, the hint it got).
    """
    est = _make(name, privacy, seed)
    box = _has_bounds(est)
    out = {}
    hint = "bounds" if box else "none"
    if name.endswith(NO_HINTS):
        st = _fit(est, lambda e: e.fit(ctx["X"]))
        if st[0] == "ok":
            out["mean" if task == "mean" else "covariance"] = (
                est.mean_ if task == "mean" else est.covariance_
            )
        return (*st, out, "none")
    if task in ("mean", "cov", "scaler"):
        X, lower, upper = ctx["X"], ctx["lower"], ctx["upper"]
        c = (lower + upper) / 2
        R = float(np.linalg.norm((upper - lower) / 2))
        if box:
            est.set_params(bounds=(lower, upper))
            rows, shift = X, 0.0
        else:
            hint = "mean_bound" if "mean_bound" in est.get_params() else "data_norm"
            if hint in est.get_params():
                est.set_params(**{hint: R})
            else:
                hint = "none"
            rows, shift = X - c, c
        st = _fit(est, lambda e: e.fit(rows))
        if st[0] == "ok":
            if task == "mean":
                out["mean"] = est.mean_ + shift
            elif task == "cov":
                out["covariance"] = est.covariance_
            else:
                out["mean"], out["scale"] = est.mean_ + shift, est.scale_
        return (*st, out, hint)
    Z, d = ctx["Z"], ctx["Z"].shape[1]
    if box:
        est.set_params(bounds=(-np.ones(d), np.ones(d)))
    elif "data_norm" in est.get_params():
        est.set_params(data_norm=float(np.sqrt(d)))
        hint = "data_norm"
    if task == "pca":
        est.set_params(n_components=T.K_PCA)
        st = _fit(est, lambda e: e.fit(Z))
        if st[0] == "ok":
            out["components"] = est.components_
    elif task == "clf":
        est.set_params(classes=ctx["classes"])
        st = _fit(est, lambda e: e.fit(Z, ctx["y"]))
        if st[0] == "ok":
            out["pred"] = est.predict(ctx["Ztest"])
    elif task == "gmm":
        est.set_params(n_components=ctx["k"])
        st = _fit(est, lambda e: e.fit(Z, X_public=ctx["Z_pub"]))
        if st[0] == "ok":
            out["ll"] = est.score(ctx["Ztest"])
    else:
        st = _fit(est, lambda e: e.fit(Z, ctx["y"]))
        if st[0] == "ok":
            out["coef"] = est.statistic_
    return (*st, out, hint)


def _contexts(table, n, privacy, seed, row_seed):
    """Per task: the rows, public knowledge and reference of one job.

    ``row_seed`` picks the rows (the same rows at every privacy); ``seed`` the
    noise of the baselines and the bootstrap.
    """
    X = table.X
    lower, upper = D.codebook_box(X)
    ctxs = {}
    pool, _ = D.split_pool(table, holdout=False)
    rows = D.sample_rows(len(pool), n, row_seed)
    Xn = X[pool][rows]
    base = {"lower": lower, "upper": upper}
    ctxs["mean"] = dict(base, X=Xn, ref=T.ref_mean(Xn, lower, upper, privacy, seed))
    ctxs["mean:PrivateGaussianEstimator"] = dict(
        base, X=Xn, ref=T.ref_mean(Xn, lower, upper, privacy, seed, gaussian=True)
    )
    ctxs["cov"] = dict(base, X=Xn, ref=T.ref_cov(Xn, lower, upper, privacy, seed))
    # No public knowledge: the same scores, the floor of a box found privately.
    for name, task, source, gaussian in (
        ("PrivateMean", "mean", "mean", False),
        ("PrivateGaussianEstimator", "mean", "mean:PrivateGaussianEstimator", True),
        ("PrivateGaussianEstimator", "cov", "cov", False),
    ):
        ref = ctxs[source]["ref"]
        ref = T.with_private_box_floor(ref, Xn, privacy, seed, task, gaussian)
        ctxs[f"{task}:{name}{NO_HINTS}"] = dict(base, X=Xn, ref=ref)
    ctxs["scaler"] = dict(base, X=Xn, ref=T.ref_scaler(Xn, lower, upper, privacy, seed))
    Zn = T.B.to_box(Xn, lower, upper)
    if X.shape[1] > T.K_PCA:
        ctxs["pca"] = {"Z": Zn, "ref": T.ref_pca(Zn, privacy, seed)}
    if table.y_reg is not None:
        y = table.y_reg[pool][rows]
        ref = T.ref_agg(Zn, y, privacy, seed, logistic=False)
        ylo, yhi = D.codebook_box(table.y_reg[:, None])
        ctxs["agg_lin"] = {"Z": Zn, "y": y, "ref": ref, "ylo": ylo[0], "yhi": yhi[0]}
    if table.y_class is None and table.n_components is None:
        return ctxs
    pool, test = D.split_pool(table, holdout=True)
    rows = D.sample_rows(len(pool), n, row_seed)
    Zp = T.B.to_box(X[pool][rows], lower, upper)
    Zt = T.B.to_box(X[test], lower, upper)
    if table.y_class is not None:
        y, yt = table.y_class[pool][rows], table.y_class[test]
        classes = np.unique(table.y_class)
        clf = {"Z": Zp, "y": y, "Ztest": Zt, "classes": classes}
        for name, quad in (("LDA", False), ("QDA", True)):
            ref = T.ref_clf(Zp, y, Zt, yt, classes, privacy, seed, quadratic=quad)
            ctxs[f"clf:{name}"] = dict(clf, ref=ref)
        if len(classes) == 2:
            ref = T.ref_agg(Zp, y, privacy, seed, logistic=True)
            ctxs["agg_log"] = {"Z": Zp, "y": y, "ref": ref}
    if table.n_components is not None and X.shape[1] <= 20:
        m = max(len(Zp) // 8, 2)
        ref = T.ref_gmm(Zp[:m], Zp[m:], Zt, table.n_components, seed)
        ctxs["gmm"] = {
            "Z": Zp[m:],
            "Z_pub": Zp[:m],
            "Ztest": Zt,
            "k": table.n_components,
        }
        ctxs["gmm"]["ref"] = ref
    return ctxs


def run_job(data, n, pname, seed, only):
    """All contenders on one (data, n, privacy, seed): result rows, peer jobs."""
    warnings.simplefilter("ignore")
    table = D.load(data)
    privacy = PRIVACY[pname]
    key = {"data": data, "privacy": pname, "n": n, "seed": seed}
    # Seed noise by the whole job so rows of the table draw independently.
    seed = (seed * 7919 + zlib.crc32(f"{data}|{n}|{pname}".encode())) % 2**31
    ctxs = _contexts(table, n, privacy, seed, key["seed"])
    rows, peer_jobs = [], []
    for name, tasks in ESTIMATORS.items():
        if only and name not in only:
            continue
        for task in tasks:
            ctx = ctxs.get(f"{task}:{name}", ctxs.get(task))
            if ctx is None:
                continue
            status, warned, secs, msg, out, hint = _contender(
                name, task, ctx, privacy, seed
            )
            err, flagged = (
                T.SCORERS[task](out, ctx["ref"]) if status == "ok" else (np.nan, False)
            )
            rows.append(
                _row(key, name, task, hint, ctx["ref"], status, warned, flagged)
                | {"err": err, "seconds": round(secs, 3), "message": msg}
            )
    if "delta" not in privacy and "epsilon" in privacy:
        for peer, label, task in PEER_TASKS:
            ctx = ctxs.get(task) or ctxs.get(f"{task}:LDA")
            if ctx is not None and (
                not only or any(t == task for o in only for t in ESTIMATORS.get(o, []))
            ):
                peer_jobs.append(
                    (peer, label, task, key, ctx, privacy["epsilon"], seed)
                )
    return rows, peer_jobs


def _row(key, name, task, hint, ref, status, warned, flagged):
    """A result row; every contender's (peers' too) has these keys in this order."""
    return dict(
        key,
        estimator=name,
        task=task,
        hint=hint,
        status=status,
        warned=int(warned),
        flagged=int(flagged),
        err=np.nan,
        base_err=ref["base_err"],
        base_alt=ref.get("base_alt", np.nan),
        base_draws=T.format_draws(ref),
        np_err=ref["np_err"],
        seconds=0.0,
        message="",
    )


def _commit():
    """The checkout's commit, so a table says which code it measured."""
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def _privacy_names(text):
    """The privacy names in a comma-separated list; a ``d...`` item belongs to
    the name before it (``eps1,d1e-6`` is one name)."""
    names = []
    for item in filter(None, text.split(",")):
        if item.startswith("d") and names:
            names[-1] += "," + item
        else:
            names.append(item)
    unknown = [name for name in names if name not in PRIVACY]
    if unknown:
        raise SystemExit(f"unknown privacy {unknown}; choose from {list(PRIVACY)}")
    return names


def _write_csv(path, rows):
    with open(path + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--only", default="", help="comma-separated estimator names")
    p.add_argument("--data", default="", help="comma-separated data sets")
    p.add_argument(
        "--privacy", default="", help="comma-separated: " + ",".join(PRIVACY)
    )
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--dpl", default="/work/peers/dpl/bin/python")
    p.add_argument("--opendp", default="/work/peers/opendp/bin/python")
    p.add_argument("--out", default=None, help="results stem (default by mode)")
    p.add_argument(
        "--report-only", action="store_true", help="rewrite md/png from the csv"
    )
    args = p.parse_args(argv)
    stem = args.out or ("bench_real_quick" if args.quick else "bench_real")
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    path = os.path.join(out_dir, stem)
    if args.report_only:
        report.write(report.read_csv(path + ".csv"), path, "(report of the csv)", 0.0)
        return
    seeds = args.seeds or (3 if args.quick else 10)
    only = [s for s in args.only.split(",") if s]
    datas = [s for s in args.data.split(",") if s] or (
        QUICK_DATA if args.quick else list(D.LOADERS)
    )
    pnames = _privacy_names(args.privacy) or (
        QUICK_PRIVACY if args.quick else list(PRIVACY)
    )
    jobs = []
    for data in datas:
        table = D.load(data)
        holdout = table.y_class is not None or table.n_components is not None
        N = len(D.split_pool(table, holdout)[0])
        for n in D.n_grid(N, args.quick):
            for pname in pnames:
                for seed in range(seeds):
                    jobs.append((data, n, pname, seed))
    print(f"{len(jobs)} jobs, {seeds} seeds", flush=True)
    commit = _commit()  # the code measured, whatever lands during the run
    t0 = time.time()
    if args.jobs > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=args.jobs, verbose=5)(
            delayed(run_job)(*job, only) for job in jobs
        )
    else:
        results = []
        for i, job in enumerate(jobs):
            results.append(run_job(*job, only))
            if i % 25 == 0:
                print(f"  {i}/{len(jobs)} {time.time() - t0:.0f}s", flush=True)
    rows = [r for rs, _ in results for r in rs]
    peer_jobs = [j for _, js in results for j in js]
    _write_csv(path, rows)  # dpgauss's rows are kept if a peer run is cut short
    if not args.no_peers:
        rows += run_peers(peer_jobs, {"diffprivlib": args.dpl, "opendp": args.opendp})
        _write_csv(path, rows)
    cmd = "python benchmarks/bench_real.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    report.write(rows, path, f"{cmd}` at dpgauss `{commit}", time.time() - t0)
    print(f"wrote {path}.{{md,csv,png}} in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
