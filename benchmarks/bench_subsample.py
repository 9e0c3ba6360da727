"""SubsampleAggregate: accuracy, the populous test's pass rate, group sizes.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_subsample.py
[--full | --quick] [--seeds N] [--big-seeds N] [--log-seeds N] [--log-max-n N]
[--target-seeds N] [--group-seeds N] [--mean-seeds N] [--parts 1234]
[--jobs 1] [--report-only]``. The default run (3 minutes on one core, 179 s)
keeps the issue's target with 5 seeds and trims the rest: the sweep at n = 1e4
and 1e5 with one seed, group sizes at n = 3e4 with one seed, the far mean with
2 seeds; it writes ``results/bench_subsample_default.{md,csv,png}``.
``--full`` runs everything below with the seeds given (about 20 minutes) and
writes ``results/bench_subsample.{md,csv,png}``. An option given on the
command line overrides the profile's value. The k group fits of a
SubsampleAggregate fit are sequential, about 1 ms each for LinearRegression
and EmpiricalCovariance, 4 ms for LogisticRegression.

Data (d = 5 by default, rows standard normal, beta = [1, -2, 0.5, 0, 3]
recycled to d): ``LinearRegression`` on y = X beta + N(0, 1) (statistic
``coef_``); ``LogisticRegression()`` (its default C = 1) on y ~ Bernoulli(
expit(X beta / 2)) (statistic ``coef_``; beta halved so that groups of 25
rows are not separable too often); ``EmpiricalCovariance`` on N(beta, I)
(statistic ``location_``). Each n and seed draws fresh data from a fixed
seed; ``SubsampleAggregate(random_state=1000 + seed)``.

1. **Sweep**: n in 1e4, 3e4, 1e5, 3e5, 1e6, both aggregators at epsilon = 1,
   delta = 1e-6 (the winsorized aggregator converts them to the largest rho
   that implies them; "populous" is (epsilon, delta)-DP), n_groups="auto".
   l2 error of the release against the non-private fit of the same estimator
   on all the rows and against the truth; the populous test's pass rate (and
   its exact pass probability given the candidates, averaged over seeds: the
   library computes it in closed form before drawing the coin; recorded here
   by wrapping ``_PopulousTest.run``, behaviour unchanged). ``--seeds`` seeds
   for n <= 3e5, ``--big-seeds`` at 1e6, ``--log-seeds`` for
   LogisticRegression, which stops at ``--log-max-n`` (``--full``; the default
   run: n = 1e4 and 1e5, one seed).
2. **Target** (the issue's): LinearRegression coefficients, n = 2e5, d = 5,
   epsilon = 1, delta = 1e-6, within 0.05 (l2) of the truth; median and worst
   of ``--target-seeds`` seeds, both aggregators.
3. **Group sizes**: LinearRegression, winsorized, groups of 15, 25 (the
   "auto" rule: max(25, 5 d) rows), 50 and 100 rows at n = 3e4 and 1e5.
4. **Far mean**: N(mu, I), mu = 1e4 * ones, d = 5, rho = 0.5 (zCDP):
   ``SubsampleAggregate(EmpiricalCovariance(), statistic="location_")``
   (winsorized) against ``PrivateMean(rho)`` (bound-free default) and
   ``PrivateGaussianEstimator(rho).mean_`` at equal rho; and, as a
   candidate bound-free initial center, SubsampleAggregate at 0.05 rho (the
   share ``PrivateGaussianEstimator`` gives its ``range_location`` search)
   against that search itself (the coordinate medians of at most 50,000 rows
   by ``QuantileSearch``, as ``dpgauss.releases._range.coarse_range`` runs it).
   The l2 error is the Mahalanobis error here (Sigma = I).

``--quick`` runs a few small cases of every part and writes nothing.
Exits 1 when the target is missed (the populous aggregator misses it).
"""

import argparse
import csv
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.covariance import EmpiricalCovariance
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpgauss import PrivateGaussianEstimator, PrivateMean
from dpgauss.accounting import ZCDP
from dpgauss.base import FitData
from dpgauss.ensemble import SubsampleAggregate, _populous_aggregate
from dpgauss.ensemble import _populous as populous
from dpgauss.exceptions import PrivateTestFailedError
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.releases._range import range_subset

RESULTS = Path(__file__).resolve().parent / "results"
EPSILON, DELTA = 1.0, 1e-6
BETA = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
NS = (10_000, 30_000, 100_000, 300_000, 1_000_000)
BIG_N = 1_000_000
ESTIMATORS = ("LinearRegression", "LogisticRegression", "EmpiricalCovariance")
AGGREGATORS = ("winsorized", "populous")
TARGET_N, TARGET_ERR = 200_000, 0.05
GROUP_SIZES = (15, 25, 50, 100)
GROUP_NS = (30_000, 100_000)
MEAN_NS = (10_000, 100_000)
MEAN_FAR, MEAN_RHO, RANGE_SHARE = 1e4, 0.5, 0.05
PASS_LEVEL = 0.95
#: Plotted errors are capped here (some fits are 1e100 off, or not finite).
CAP = 10.0

# -- the populous test's exact pass probability (instrumentation only) ----------
_PASS_PROBS = []
_ORIGINAL_RUN = _populous_aggregate._PopulousTest.run


def _recording_run(self, total, rng):
    """Record P[pass] as the library computes it, then run the test unchanged."""
    try:
        _PASS_PROBS.append(
            float(
                populous.pass_probability(
                    total,
                    self.k,
                    _populous_aggregate.THRESHOLD,
                    self.cost.epsilon,
                    self.delta_cal,
                )
            )
        )
    except Exception:  # the internals moved: no probability, same test
        _PASS_PROBS.append(float("nan"))
    return _ORIGINAL_RUN(self, total, rng)


_populous_aggregate._PopulousTest.run = _recording_run


# -- data and fits -------------------------------------------------------------
def beta(d):
    return np.resize(BETA, d).astype(float)


def make_data(name, n, d, seed):
    """Rows, targets, the truth and the non-private fit on all the rows."""
    tag = ESTIMATORS.index(name)
    rng = np.random.default_rng(np.random.SeedSequence([17, tag, n, d, seed]))
    X = rng.standard_normal((n, d))
    b = beta(d)
    if name == "LinearRegression":
        y = X @ b + rng.standard_normal(n)
        full = LinearRegression().fit(X, y).coef_
        return X, y, b, full
    if name == "LogisticRegression":
        b = b / 2.0
        y = (rng.random(n) < expit(X @ b)).astype(np.int64)
        full = LogisticRegression().fit(X, y).coef_.ravel()
        return X, y, b, full
    X += b
    return X, None, b, X.mean(axis=0)


def base_estimator(name):
    return {
        "LinearRegression": LinearRegression,
        "LogisticRegression": LogisticRegression,
        "EmpiricalCovariance": EmpiricalCovariance,
    }[name]()


def statistic(name):
    return "location_" if name == "EmpiricalCovariance" else "coef_"


def fit_sa(name, X, y, aggregator, seed, n_groups="auto", **privacy):
    """One SubsampleAggregate fit: (statistic or None, status, k, size, s, P)."""
    est = SubsampleAggregate(
        base_estimator(name),
        statistic=statistic(name),
        aggregator=aggregator,
        n_groups=n_groups,
        random_state=1000 + seed,
        **privacy,
    )
    before = len(_PASS_PROBS)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, y)
            value, status = np.ravel(est.statistic_), "ok"
            k, size, radius = est.n_groups_, est.group_size_, est.radius_
        except PrivateTestFailedError:
            value, status, radius = None, "failed", float("nan")
            data = est._prepare_fit(FitData(n=X.shape[0], d=X.shape[1], y=y))
            k = est._groups(data, est._privacy_total())
            size = X.shape[0] // k
    took = time.perf_counter() - start
    prob = _PASS_PROBS[before] if len(_PASS_PROBS) > before else float("nan")
    return value, status, k, size, radius, prob, took


def _record(part, name, n, d, seed, method, **fields):
    row = {
        "part": part,
        "estimator": name,
        "n": n,
        "d": d,
        "seed": seed,
        "method": method,
        "privacy": "",
        "n_groups": "",
        "group_size": "",
        "status": "ok",
        "err_nonprivate": float("nan"),
        "err_truth": float("nan"),
        "nonprivate_err_truth": float("nan"),
        "pass_prob": float("nan"),
        "radius": float("nan"),
        "seconds": float("nan"),
    }
    row.update(fields)
    return row


def task_sa(part, name, n, d, seed, aggregators, sizes=(None,)):
    """Fits of one dataset: every aggregator (and group size) asked for."""
    X, y, truth, full = make_data(name, n, d, seed)
    rows = []
    for aggregator in aggregators:
        for size in sizes:
            n_groups = "auto" if size is None else n // size
            value, status, k, s, radius, prob, took = fit_sa(
                name, X, y, aggregator, seed, n_groups, epsilon=EPSILON, delta=DELTA
            )
            fields = {
                "privacy": f"eps={EPSILON:g},delta={DELTA:g}",
                "n_groups": k,
                "group_size": s,
                "status": status,
                "nonprivate_err_truth": float(np.linalg.norm(full - truth)),
                "pass_prob": prob,
                "radius": radius,
                "seconds": took,
            }
            if value is not None:
                np.seterr(over="ignore")  # errors of 1e200 and more occur
                fields["err_nonprivate"] = float(np.linalg.norm(value - full))
                fields["err_truth"] = float(np.linalg.norm(value - truth))
            method = aggregator if size is None else f"{aggregator}, groups of {size}"
            rows.append(_record(part, name, n, d, seed, method, **fields))
    return rows


def task_mean(n, d, seed):
    """Part 4: one far Gaussian, every method on the same rows."""
    rng = np.random.default_rng(np.random.SeedSequence([17, 4, n, d, seed]))
    mu = np.full(d, MEAN_FAR)
    X = mu + rng.standard_normal((n, d))
    full = X.mean(axis=0)
    rows = []

    def add(method, value, took, rho, **extra):
        rows.append(
            _record(
                "mean",
                "Gaussian mean",
                n,
                d,
                seed,
                method,
                privacy=f"rho={rho:g}",
                err_nonprivate=float(np.linalg.norm(value - full)),
                err_truth=float(np.linalg.norm(value - mu)),
                nonprivate_err_truth=float(np.linalg.norm(full - mu)),
                seconds=took,
                **extra,
            )
        )

    add("empirical mean (non-private)", full, 0.0, float("inf"))
    for rho, tag in ((MEAN_RHO, "full"), (RANGE_SHARE * MEAN_RHO, "range share")):
        est = SubsampleAggregate(
            EmpiricalCovariance(), statistic="location_", rho=rho, random_state=seed
        )
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
        add(
            f"SubsampleAggregate(winsorized), {tag}",
            est.statistic_,
            time.perf_counter() - start,
            rho,
            n_groups=est.n_groups_,
            group_size=est.group_size_,
            radius=est.radius_,
        )
    for cls in (PrivateMean, PrivateGaussianEstimator):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(rho=MEAN_RHO, random_state=seed).fit(X)
        add(f"{cls.__name__}, full", est.mean_, time.perf_counter() - start, MEAN_RHO)
    # The range step of PrivateGaussianEstimator (range_location): the private
    # coordinate medians of at most RANGE_ROWS rows at range_share of the cost.
    rho = RANGE_SHARE * MEAN_RHO
    gen = np.random.default_rng(np.random.SeedSequence([17, 5, n, seed]))
    start = time.perf_counter()
    some = X[range_subset(n, gen)]
    center = QuantileSearch(ZCDP(rho), d).release(some, gen)
    add("range step (coordinate medians), range share", center, 0.0, rho)
    rows[-1]["seconds"] = time.perf_counter() - start
    return rows


# -- running -------------------------------------------------------------------
def _run(task):
    kind, args = task
    start = time.perf_counter()
    rows = task_mean(*args) if kind == "mean" else task_sa(*args)
    label = " ".join(str(a) for a in args if not isinstance(a, tuple))
    print(f"  {kind} {label}: {time.perf_counter() - start:.1f} s", flush=True)
    return rows


def tasks(args):
    out = []
    d = args.d
    if "1" in args.parts:
        for name in ESTIMATORS:
            for n in args.ns:
                if name == "LogisticRegression":
                    if n > args.log_max_n:
                        continue
                    seeds = args.log_seeds
                else:
                    seeds = args.big_seeds if n >= BIG_N else args.seeds
                for seed in range(seeds):
                    out.append(("sweep", ("sweep", name, n, d, seed, AGGREGATORS)))
    if "2" in args.parts:
        for seed in range(args.target_seeds):
            out.append(
                (
                    "target",
                    ("target", "LinearRegression", args.target_n, d, seed, AGGREGATORS),
                )
            )
    if "3" in args.parts:
        for n in args.group_ns:
            for seed in range(args.group_seeds):
                out.append(
                    (
                        "groups",
                        (
                            "groups",
                            "LinearRegression",
                            n,
                            d,
                            seed,
                            ("winsorized",),
                            tuple(GROUP_SIZES),
                        ),
                    )
                )
    if "4" in args.parts:
        for n in args.mean_ns:
            for seed in range(args.mean_seeds):
                out.append(("mean", (n, d, seed)))
    return out


def run_all(task_list, jobs):
    if jobs <= 1:
        return [row for task in task_list for row in _run(task)]
    with ProcessPoolExecutor(jobs) as pool:
        return [row for rows in pool.map(_run, task_list) for row in rows]


# -- reporting -----------------------------------------------------------------
def _fmt(x):
    if x is None or not np.isfinite(x):
        return "-" if x is None else str(x)
    if abs(x) >= 100:
        return f"{x:.3g}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    if abs(x) >= 0.01:
        return f"{x:.3f}"
    return f"{x:.2e}"


def _select(rows, **keys):
    return [r for r in rows if all(r[k] == v for k, v in keys.items())]


def _errs(rows, key="err_truth"):
    return np.array([r[key] for r in rows if r["status"] == "ok"], dtype=float)


def _med(values):
    return float(np.median(values)) if len(values) else float("nan")


def _max(values):
    return float(np.max(values)) if len(values) else float("nan")


def _pass_stats(rows):
    passed = sum(r["status"] == "ok" for r in rows)
    probs = np.array([r["pass_prob"] for r in rows], dtype=float)
    prob = float(np.mean(probs)) if np.isfinite(probs).all() else float("nan")
    return passed, len(rows), prob


def report_sweep(rows):
    lines = [
        "## 1. Sweep: epsilon = 1, delta = 1e-6, n_groups='auto'",
        "",
        "l2 errors, median (and max) over the fits that returned; `vs full`: "
        "against the same estimator fitted non-privately on all n rows; `vs "
        "truth`: against beta (LogisticRegression: beta / 2; "
        "EmpiricalCovariance: the mean). `pass`: fits that returned / fits "
        "(the populous test raises PrivateTestFailedError; the winsorized "
        "aggregator never raises); `P[pass]`: the test's exact pass "
        "probability given the candidates, mean over seeds. k: groups, s: rows "
        "per group; `R`: median radius (clipping radius, or the populous "
        "neighbour radius tau); `wild`: returned fits more than 1 from the "
        "truth or not finite; time: median seconds per fit.",
        "",
        "| estimator | n | aggregator | k | s | pass | P[pass] | vs full | "
        "vs full (max) | vs truth | vs truth (max) | non-private vs truth | "
        "wild | R | time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for name in ESTIMATORS:
        ns = sorted({r["n"] for r in _select(rows, part="sweep", estimator=name)})
        for n in ns:
            for agg in AGGREGATORS:
                sel = _select(rows, part="sweep", estimator=name, n=n, method=agg)
                if not sel:
                    continue
                passed, total, prob = _pass_stats(sel)
                full, truth = _errs(sel, "err_nonprivate"), _errs(sel)
                npv = np.array([r["nonprivate_err_truth"] for r in sel])
                radii = [r["radius"] for r in sel if r["status"] == "ok"]
                lines.append(
                    f"| {name} | {n:.0e} | {agg} | {sel[0]['n_groups']} | "
                    f"{sel[0]['group_size']} | {passed}/{total} | "
                    f"{f'{prob:.3f}' if agg == 'populous' else ''} | "
                    f"{_fmt(_med(full))} | "
                    f"{_fmt(_max(full))} | {_fmt(_med(truth))} | {_fmt(_max(truth))} | "
                    f"{_fmt(_med(npv))} | {sum(_wild(r) for r in sel)} | "
                    f"{_fmt(_med(radii))} | "
                    f"{_med([r['seconds'] for r in sel]):.1f} |"
                )
        pops = []
        for n in ns:
            sel = _select(rows, part="sweep", estimator=name, n=n, method="populous")
            if sel:
                pops.append((n, *_pass_stats(sel)))
        if not pops:
            continue
        by_prob = _smallest_passing(pops, lambda p: p[3])
        by_rate = _smallest_passing(pops, lambda p: p[1] / p[2])
        winsor = _select(rows, part="sweep", estimator=name, method="winsorized")
        raised = sum(r["status"] != "ok" for r in winsor)
        wild = sum(_wild(r) for r in winsor)
        verdicts.append(
            f"{name}: populous passes >= {PASS_LEVEL:.0%} from n = {by_prob} on "
            f"(mean exact pass probability), n = {by_rate} by the observed pass "
            "rate (" + ", ".join(f"{n:.0e}: {p}/{t}" for n, p, t, _ in pops) + "); "
            f"winsorized raised {raised} times in {len(winsor)} fits, and was "
            f"more than 1 from the truth (or not finite) {wild} times: INFO"
        )
    return [*lines, ""], verdicts


def _wild(row):
    e = row["err_truth"]
    return row["status"] == "ok" and not (np.isfinite(e) and e <= 1.0)


def _smallest_passing(pops, level):
    """The smallest n from which on every n passes at PASS_LEVEL, or 'none'."""
    found = "none"
    for n, *stats in reversed(pops):
        value = level((n, *stats))
        if not (np.isfinite(value) and value >= PASS_LEVEL):
            break
        found = f"{n:.0e}"
    return found


def report_target(rows):
    lines = [
        f"## 2. Target: LinearRegression coef_, n = {TARGET_N:.0e}, d = 5, "
        f"epsilon = {EPSILON:g}, delta = {DELTA:g}",
        "",
        "| aggregator | fits | passed | median vs truth | worst vs truth | "
        "median vs full | worst vs full | non-private vs truth (median) | per seed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for agg in AGGREGATORS:
        sel = _select(rows, part="target", method=agg)
        if not sel:
            continue
        truth, full = _errs(sel), _errs(sel, "err_nonprivate")
        npv = np.median([r["nonprivate_err_truth"] for r in sel])
        each = ", ".join(
            _fmt(r["err_truth"]) if r["status"] == "ok" else "failed" for r in sel
        )
        passed = len(truth)
        lines.append(
            f"| {agg} | {len(sel)} | {passed} | {_fmt(_med(truth))} | "
            f"{_fmt(_max(truth))} | {_fmt(_med(full))} | {_fmt(_max(full))} | "
            f"{_fmt(npv)} | {each} |"
        )
        ok = passed == len(sel) and _max(truth) <= TARGET_ERR
        verdicts.append(
            f"target, {agg}: median {_fmt(_med(truth))}, worst {_fmt(_max(truth))} "
            f"over {len(sel)} seeds ({len(sel) - passed} test failures) against "
            f"{TARGET_ERR}: {'PASS' if ok else 'FAIL'}"
        )
    return [*lines, ""], verdicts


def report_groups(rows):
    lines = [
        "## 3. Group sizes: LinearRegression, winsorized, epsilon = 1, delta = 1e-6",
        "",
        "l2 error against the truth, median (max) over seeds; 'auto' is 25 rows "
        "at d = 5.",
        "",
        "| n | " + " | ".join(f"groups of {s}" for s in GROUP_SIZES) + " | best |",
        "|---|" + "---|" * (len(GROUP_SIZES) + 1),
    ]
    verdicts, best_sizes = [], []
    for n in sorted({r["n"] for r in _select(rows, part="groups")}):
        cells, meds = [], []
        for s in GROUP_SIZES:
            e = _errs(
                _select(rows, part="groups", n=n, method=f"winsorized, groups of {s}")
            )
            meds.append(_med(e))
            cells.append(f"{_fmt(_med(e))} ({_fmt(_max(e))})")
        finite = np.where(np.isfinite(meds), meds, np.inf)
        best = GROUP_SIZES[int(np.argmin(finite))]
        best_sizes.append((n, best))
        lines.append(f"| {n:.0e} | " + " | ".join(cells) + f" | {best} |")
    if best_sizes:
        verdicts.append(
            "best group size (median error): "
            + ", ".join(f"n = {n:.0e}: {s}" for n, s in best_sizes)
            + f" (auto: {max(25, 5 * 5)}): INFO"
        )
    return [*lines, ""], verdicts


def report_mean(rows):
    lines = [
        f"## 4. Far mean: N(mu, I), mu = {MEAN_FAR:g} * ones, d = 5, rho = {MEAN_RHO}",
        "",
        "l2 (= Mahalanobis) error against mu, median (max) over seeds. 'full': "
        f"rho = {MEAN_RHO}; 'range share': rho = {RANGE_SHARE * MEAN_RHO:g}, what "
        "PrivateGaussianEstimator's range_location search gets.",
        "",
    ]
    sel = _select(rows, part="mean")
    methods = list(dict.fromkeys(r["method"] for r in sel))
    ns = sorted({r["n"] for r in sel})
    lines += [
        "| method | " + " | ".join(f"n = {n:.0e}" for n in ns) + " |",
        "|---|" + "---|" * len(ns),
    ]
    table = {}
    for m in methods:
        cells = []
        for n in ns:
            e = _errs(_select(sel, method=m, n=n))
            table[(m, n)] = _med(e)
            cells.append(f"{_fmt(_med(e))} ({_fmt(_max(e))})")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    verdicts = []
    for n in ns:
        sa = table.get(("SubsampleAggregate(winsorized), range share", n))
        rs = table.get(("range step (coordinate medians), range share", n))
        full_sa = table.get(("SubsampleAggregate(winsorized), full", n))
        pm = table.get(("PrivateMean, full", n))
        if sa is None or rs is None:
            continue
        verdicts.append(
            f"far mean, n = {n:.0e}: as an initial center (rho = "
            f"{RANGE_SHARE * MEAN_RHO:g}) SubsampleAggregate {_fmt(sa)} against the "
            f"range step's {_fmt(rs)} ({'better' if sa < rs else 'not better'}); "
            f"at rho = {MEAN_RHO} {_fmt(full_sa)} against PrivateMean {_fmt(pm)}: INFO"
        )
    return [*lines, ""], verdicts


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    ax = axes[0, 0]
    for name, colour in zip(ESTIMATORS, ("C0", "C1", "C2"), strict=True):
        ns = sorted({r["n"] for r in _select(rows, part="sweep", estimator=name)})
        if not ns:
            continue
        for agg, style in (("winsorized", "-o"), ("populous", "--s")):
            ys = [
                _med(
                    _errs(_select(rows, part="sweep", estimator=name, n=n, method=agg))
                )
                for n in ns
            ]
            ys = np.minimum(np.nan_to_num(ys, nan=CAP, posinf=CAP), CAP)
            ax.plot(ns, ys, style, color=colour, label=f"{name}, {agg}")
        npv = [
            _med(
                [
                    r["nonprivate_err_truth"]
                    for r in _select(rows, part="sweep", estimator=name, n=n)
                ]
            )
            for n in ns
        ]
        ax.plot(ns, npv, ":", color=colour, label=f"{name}, non-private")
    ax.axhline(TARGET_ERR, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(f"l2 error vs truth, median over seeds (capped at {CAP:g})")
    ax.set_title("1. eps = 1, delta = 1e-6, d = 5, auto groups")
    ax.legend(fontsize=6)

    ax = axes[0, 1]
    for name, colour in zip(ESTIMATORS, ("C0", "C1", "C2"), strict=True):
        ns = sorted({r["n"] for r in _select(rows, part="sweep", estimator=name)})
        if not ns:
            continue
        probs, rates = [], []
        for n in ns:
            sel = _select(rows, part="sweep", estimator=name, n=n, method="populous")
            passed, total, prob = _pass_stats(sel)
            probs.append(prob)
            rates.append(passed / total)
        ax.plot(ns, probs, "-o", color=colour, label=f"{name}, exact P[pass]")
        ax.plot(ns, rates, "x", color=colour, ms=9, label=f"{name}, observed")
    ax.axhline(PASS_LEVEL, color="k", lw=0.6)
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("n")
    ax.set_ylabel("populous test pass rate")
    ax.set_title("1. populous test, eps = 1, delta = 1e-6")
    ax.legend(fontsize=6)

    ax = axes[1, 0]
    for n in sorted({r["n"] for r in _select(rows, part="groups")}):
        ys = [
            _med(
                _errs(
                    _select(
                        rows, part="groups", n=n, method=f"winsorized, groups of {s}"
                    )
                )
            )
            for s in GROUP_SIZES
        ]
        ys = np.minimum(np.nan_to_num(ys, nan=CAP, posinf=CAP), CAP)
        ax.plot(GROUP_SIZES, ys, "-o", label=f"n = {n:.0e}")
    ax.axvline(25, color="k", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(GROUP_SIZES, [str(s) for s in GROUP_SIZES])
    ax.set_xticks([], minor=True)
    ax.set_xlabel("rows per group (dotted: auto)")
    ax.set_ylabel(f"l2 error vs truth, median (capped at {CAP:g})")
    ax.set_title("3. LinearRegression, winsorized, group size")
    ax.legend(fontsize=7)

    ax = axes[1, 1]
    sel = _select(rows, part="mean")
    methods = list(dict.fromkeys(r["method"] for r in sel))
    ns = sorted({r["n"] for r in sel})
    width = 0.8 / max(len(ns), 1)
    for j, n in enumerate(ns):
        ys = [_med(_errs(_select(sel, method=m, n=n))) for m in methods]
        ys = np.clip(np.nan_to_num(ys, nan=CAP, posinf=CAP), 1e-4, CAP)
        ax.barh(
            np.arange(len(methods)) + j * width, ys, height=width, label=f"n = {n:.0e}"
        )
    ax.set_yticks(
        np.arange(len(methods)) + width * (len(ns) - 1) / 2, methods, fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"l2 (Mahalanobis) error, median (capped at {CAP:g})")
    ax.set_title(f"4. far mean (1e4), rho = {MEAN_RHO}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def write_csv(rows, path):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow(
                {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}
            )


def read_csv(path):
    ints = ("n", "d", "seed")
    floats = (
        "err_nonprivate",
        "err_truth",
        "nonprivate_err_truth",
        "pass_prob",
        "radius",
        "seconds",
    )
    rows = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            for k in ints:
                r[k] = int(r[k])
            for k in floats:
                r[k] = float(r[k])
            for k in ("n_groups", "group_size"):
                r[k] = int(r[k]) if r[k] else ""
            rows.append(r)
    return rows


#: Run profiles: the default (3 minutes on one core, 179 s: the target with 5
#: seeds, a sweep at n = 1e4 and 1e5 with one seed), --full (the whole sweep,
#: about 20 minutes) and --quick (a few small cases, nothing written). Any
#: option given on the command line overrides its profile.
PROFILES = {
    "default": {
        "ns": (10_000, 100_000),
        "seeds": 1,
        "big_seeds": 0,
        "log_seeds": 1,
        "log_max_n": 1e5,
        "target_seeds": 5,
        "group_ns": GROUP_NS[:1],
        "group_seeds": 1,
        "mean_ns": MEAN_NS,
        "mean_seeds": 2,
    },
    "full": {
        "ns": NS,
        "seeds": 3,
        "big_seeds": 1,
        "log_seeds": 1,
        "log_max_n": 1e5,
        "target_seeds": 10,
        "group_ns": GROUP_NS,
        "group_seeds": 3,
        "mean_ns": MEAN_NS,
        "mean_seeds": 5,
    },
    "quick": {
        "ns": NS[:2],
        "seeds": 1,
        "big_seeds": 1,
        "log_seeds": 1,
        "log_max_n": 1e4,
        "target_seeds": 1,
        "group_ns": GROUP_NS[:1],
        "group_seeds": 1,
        "mean_ns": MEAN_NS[:1],
        "mean_seeds": 2,
    },
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, help="part 1, n < 1e6")
    parser.add_argument("--big-seeds", type=int, help="part 1, n = 1e6")
    parser.add_argument("--log-seeds", type=int, help="part 1, logistic")
    parser.add_argument("--log-max-n", type=float, help="part 1, logistic")
    parser.add_argument("--target-seeds", type=int)
    parser.add_argument("--group-seeds", type=int)
    parser.add_argument("--mean-seeds", type=int)
    parser.add_argument("--d", type=int, default=5)
    parser.add_argument("--parts", default="1234", help="digits 1-4")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--full",
        action="store_true",
        help="the whole sweep (about 20 minutes); writes results/bench_subsample.*",
    )
    mode.add_argument(
        "--quick", action="store_true", help="a few small cases of every part, no files"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="tables and plot from the CSV"
    )
    args = parser.parse_args(argv)
    profile = "full" if args.full else "quick" if args.quick else "default"
    for key, value in PROFILES[profile].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.target_n = TARGET_N
    # The default run writes beside the full sweep's files, not over them.
    stem = "bench_subsample" if args.full else "bench_subsample_default"
    start = time.perf_counter()
    if args.report_only:
        rows = read_csv(RESULTS / f"{stem}.csv")
    else:
        task_list = tasks(args)
        print(f"{len(task_list)} tasks", flush=True)
        rows = run_all(task_list, args.jobs)
        if not args.quick:
            RESULTS.mkdir(exist_ok=True)
            write_csv(rows, RESULTS / f"{stem}.csv")
    elapsed = time.perf_counter() - start
    sections, verdicts = [], []
    for part, fn in (
        ("1", report_sweep),
        ("2", report_target),
        ("3", report_groups),
        ("4", report_mean),
    ):
        if part in args.parts:
            lines, found = fn(rows)
            sections += lines
            verdicts += found
    command = " ".join(["python benchmarks/bench_subsample.py", *sys.argv[1:]])
    run_line = (
        f"`{command}`; OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, {elapsed:.0f} s. "
        "See the script's docstring for the protocol."
    )
    old = RESULTS / f"{stem}.md"
    if args.report_only and old.exists():  # keep the line of the run itself
        run_line = old.read_text().split("\n")[2]
    header = ["# bench_subsample: SubsampleAggregate", "", run_line, ""]
    footer = ["## Verdicts", "", *[f"- {v}" for v in verdicts], ""]
    text = "\n".join(header + sections + footer)
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{stem}.md").write_text(text)
        plot(rows, RESULTS / f"{stem}.png")
    return 1 if any("FAIL" in v for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
