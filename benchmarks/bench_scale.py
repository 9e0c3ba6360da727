"""Speed and scale of the covariance estimators, as ratios measured in one run.

(``exact``: the fit with exact lattice noise against float noise, target <= 1.5x.)

Run: ``.venv/bin/python benchmarks/bench_scale.py
[speed|gaussian|exact|eigen|memmap|dask|aggregate|ratios|all]``.

* speed: fitting n = 1,000,000 x d = 100 against ``numpy.cov`` on the same array
  (target: at most 3x), best of 3 each, for every method;
* eigen: EMCov (``method="eigen"``) at d = 100 (target: under 2 s);
* memmap: a 10,000,000 x 100 float64 file (8 GB) fitted through
  ``np.load(mmap_mode="r")`` in a child process that reports its peak resident
  memory (VmHWM) and its peak anonymous memory (RssAnon, sampled every 20 ms)
  (target: under 2 GB); the file is written once to ``--dir`` and removed after;
* dask: the same estimate from a Dask array as from numpy, same random_state;
* aggregate: ``SubsampleAggregate`` wrapping LinearRegression,
  LogisticRegression and EmpiricalCovariance at n = 1e5 and 1e6, d = 5,
  against one fit of the wrapped estimator on all rows (target: at most 20x);
* ratios: every estimator's CPU time over its scikit-learn counterpart's (one
  BLAS thread) at n = 1e5 and 1e6, d = 10 and 50, with growth exponents; then
  the covariance family (PrivateCovariance, TailSensitiveCovariance, the
  Gaussian) against ``numpy.cov`` at d = 10, 50, 200 and 500 (n chosen per d,
  :data:`COVARIANCE_GRID`), with least-squares growth exponents in n and d.

Writes ``results/bench_scale.md`` (``--out FILE``: that file instead).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dpgauss import (
    PrivateCovariance,
    PrivateGaussianEstimator,
    PrivateMean,
    TailSensitiveCovariance,
)

RESULTS = Path(__file__).resolve().parent / "results"


def _best(func, repeat=3, clock=time.perf_counter):
    """The least time of ``repeat`` calls on ``clock`` (wall time by default)."""
    times = []
    for _ in range(repeat):
        start = clock()
        func()
        times.append(clock() - start)
    return min(times)


def speed(n=1_000_000, d=100):
    X = np.random.default_rng(0).normal(size=(n, d))
    base = _best(lambda: np.cov(X, rowvar=False))
    lines = [
        f"numpy.cov on {n} x {d}: {base:.2f} s",
        "",
        "| estimator | fit (s) | ratio |",
        "|---|---|---|",
    ]
    for name, est in [
        (
            "PrivateCovariance(method='auto')",
            PrivateCovariance(rho=1.0, data_norm=15.0, on_useless="warn"),
        ),
        (
            "PrivateCovariance(method='gauss')",
            PrivateCovariance(
                method="gauss", rho=1.0, data_norm=15.0, on_useless="warn"
            ),
        ),
        (
            "PrivateCovariance(method='separate')",
            PrivateCovariance(
                method="separate", rho=1.0, data_norm=15.0, on_useless="warn"
            ),
        ),
        (
            "TailSensitiveCovariance",
            TailSensitiveCovariance(rho=1.0, data_norm=15.0, on_useless="warn"),
        ),
    ]:
        fit = _best(lambda est=est: est.fit(X))
        lines.append(f"| {name} | {fit:.2f} | {fit / base:.2f} |")
    return lines


def gaussian_speed(n=1_000_000, d=50):
    """The target: no-hint Gaussian fits under 5x numpy.cov, same run."""
    rng = np.random.default_rng(0)
    X = 3.0e4 + rng.normal(size=(n, d)) * np.geomspace(1.0, 30.0, d)
    base = _best(lambda: np.cov(X, rowvar=False))
    lines = [
        f"numpy.cov on {n} x {d} (best of 3): {base:.2f} s; target: ratio below 5",
        "",
        "| estimator (no hints) | fit (s, best of 3) | ratio | target |",
        "|---|---|---|---|",
    ]
    for name, est in [
        (
            "PrivateGaussianEstimator(rho=0.5)",
            PrivateGaussianEstimator(rho=0.5, on_useless="warn"),
        ),
        ("PrivateMean(rho=0.5)", PrivateMean(rho=0.5, on_useless="warn")),
    ]:
        fit = _best(lambda est=est: est.fit(X))
        verdict = "met" if fit / base < 5 else "MISSED"
        lines.append(f"| {name} | {fit:.2f} | {fit / base:.2f} | {verdict} |")
    return lines


def _float_noise():
    """A context in which every mechanism the estimators build draws float noise."""
    import contextlib
    import functools

    import dpgauss.mechanisms._releases as releases
    import dpgauss.releases._radius as radius
    import dpgauss.releases._threshold_search as search

    patches = [
        (releases, name)
        for name in (
            "GaussianMechanism",
            "LaplaceMechanism",
            "SymmetricGaussianMechanism",
            "SymmetricLaplaceMechanism",
        )
    ] + [(radius, "AboveThreshold"), (search, "AboveThreshold")]

    @contextlib.contextmanager
    def context():
        saved = [(m, n, getattr(m, n)) for m, n in patches]
        try:
            for module, name, cls in saved:
                setattr(module, name, functools.partial(cls, exact=False))
            yield
        finally:
            for module, name, cls in saved:
                setattr(module, name, cls)

    return context()


def exact_cost(n=1_000_000, d=100):
    """Fit time with exact lattice noise against float noise, in one run."""
    X = np.random.default_rng(0).normal(size=(n, d))
    lines = [
        f"Exact lattice noise against numpy float noise, fit on {n} x {d}, best of 3:",
        "",
        "| estimator | float noise (s) | exact noise (s) | exact / float |",
        "|---|---|---|---|",
    ]
    for name, est in [
        (
            "PrivateCovariance(method='auto')",
            PrivateCovariance(rho=1.0, data_norm=15.0, on_useless="warn"),
        ),
        (
            "PrivateCovariance(method='gauss')",
            PrivateCovariance(
                method="gauss", rho=1.0, data_norm=15.0, on_useless="warn"
            ),
        ),
        (
            "PrivateCovariance(epsilon=1)",
            PrivateCovariance(epsilon=1.0, data_norm=15.0, on_useless="warn"),
        ),
        (
            "TailSensitiveCovariance",
            TailSensitiveCovariance(rho=1.0, data_norm=15.0, on_useless="warn"),
        ),
    ]:
        with _float_noise():
            slow = _best(lambda est=est: est.fit(X))
        exact = _best(lambda est=est: est.fit(X))
        lines.append(f"| {name} | {slow:.2f} | {exact:.2f} | {exact / slow:.2f} |")
    return lines


def eigen(d=100, n=10_000):
    X = np.random.default_rng(0).normal(size=(n, d))
    est = PrivateCovariance(method="eigen", rho=1.0, data_norm=15.0, on_useless="warn")
    fit = _best(lambda: est.fit(X))
    return [f"EMCov (method='eigen') fit at n={n}, d={d}: {fit:.2f} s (target < 2 s)"]


_CHILD = r"""
import json, sys, threading, time
import numpy as np
from dpgauss import PrivateCovariance

peak_anon = 0
done = False

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0

def sample():
    global peak_anon
    while not done:
        peak_anon = max(peak_anon, status("RssAnon"))
        time.sleep(0.02)

thread = threading.Thread(target=sample, daemon=True)
thread.start()
X = np.load(sys.argv[1], mmap_mode="r")
start = time.perf_counter()
est = PrivateCovariance(rho=1.0, data_norm=15.0).fit(X)
seconds = time.perf_counter() - start
done = True
thread.join()
peak_anon = max(peak_anon, status("RssAnon"))
print(json.dumps({"seconds": seconds, "vmhwm": status("VmHWM"),
                  "rss_anon_peak": peak_anon}))
"""


def memmap(directory, n=10_000_000, d=100):
    path = Path(directory) / "dpgauss-bench-10M.npy"
    rng = np.random.default_rng(0)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, d))
    for start in range(0, n, 500_000):
        out[start : start + 500_000] = rng.normal(size=(min(500_000, n - start), d))
    out.flush()
    del out
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        stats = json.loads(child.stdout.strip().splitlines()[-1])
    finally:
        os.remove(path)
    gib = 2**30
    return [
        f"memory-mapped {n} x {d} float64 ({n * d * 8 / 1e9:.0f} GB): "
        f"fit {stats['seconds']:.1f} s, peak anonymous memory "
        f"{stats['rss_anon_peak'] / gib:.2f} GiB, peak resident memory incl. file "
        f"cache pages {stats['vmhwm'] / gib:.2f} GiB (target < 2 GB)"
    ]


def dask_check(n=200_000, d=20):
    import dask.array as da

    X = np.random.default_rng(0).normal(size=(n, d))
    lines = []
    for est in [
        PrivateCovariance(rho=1.0, data_norm=8.0, random_state=0, on_useless="warn"),
        TailSensitiveCovariance(
            rho=1.0, data_norm=80.0, random_state=0, on_useless="warn"
        ),
    ]:
        a = est.fit(X).covariance_
        b = est.fit(da.from_array(X, chunks=(25_000, d))).covariance_
        lines.append(
            f"{type(est).__name__}: max |dask - numpy| = {np.abs(a - b).max():.2e} "
            "(same random_state; sums differ only in floating-point order)"
        )
    return lines


def aggregate(ns=(100_000, 1_000_000), d=5):
    """SubsampleAggregate against one fit of the wrapped estimator on all rows
    (target: at most 20x at n = 1e5 and 1e6). The aggregate timed once, the
    wrapped fit best of 3, in the same run; n_jobs=None and 2 (the machine's
    cores)."""
    import warnings

    from joblib import Parallel, delayed
    from sklearn.covariance import EmpiricalCovariance
    from sklearn.linear_model import LinearRegression, LogisticRegression

    from dpgauss import SubsampleAggregate

    # The worker processes started once first: a process pays their start
    # (about 0.8 s for two loky workers) at its first parallel fit only, which
    # timed the first n_jobs=2 fit at 24x where the same fit took 17x after.
    Parallel(n_jobs=2)(delayed(abs)(i) for i in range(2))
    rng = np.random.default_rng(0)
    lines = [
        f"d = {d}, epsilon 1, delta 1e-6, statistic coef_ (location_ for the "
        "covariance); the aggregate one fit, the wrapped fit best of 3, on "
        "the same arrays, after the two joblib worker processes were started "
        "(once per process).",
        "",
        "| wrapped | n | groups | wrapped fit (s) | n_jobs | aggregate (s) | "
        "ratio | target <= 20 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in ns:
        X = rng.uniform(-1.0, 1.0, size=(n, d))
        y = X @ np.arange(1.0, d + 1.0) + rng.normal(0.0, 0.5, n)
        cases = [
            (LinearRegression(), y, {"epsilon": 1.0, "delta": 1e-6}),
            (
                LogisticRegression(),
                (y > 0).astype(int),
                {"epsilon": 1.0, "delta": 1e-6, "classes": [0, 1]},
            ),
            (
                EmpiricalCovariance(),
                None,
                {"epsilon": 1.0, "delta": 1e-6, "statistic": "location_"},
            ),
        ]
        for inner, target, kw in cases:
            # The wrapped fit best of 3 (one LinearRegression fit at 1e6 took
            # 0.26 s, the next two 0.09 s: its first BLAS call).
            base = _best(lambda i=inner, t=target, X=X: i.fit(X, t))
            for n_jobs in (None, 2):
                est = SubsampleAggregate(inner, random_state=0, n_jobs=n_jobs, **kw)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        est.fit(X, target)
                        groups = est.n_groups_
                    except Exception as exc:  # reported, never fatal
                        groups = type(exc).__name__
                took = time.perf_counter() - start
                ratio = took / base
                ok = "ok" if ratio <= 20 else "**miss**"
                if not isinstance(groups, int):
                    ok = "n/a (did not fit)"
                lines.append(
                    f"| {type(inner).__name__} | {n:,} | {groups} | {base:.3f} | "
                    f"{n_jobs} | {took:.3f} | {ratio:.1f} | {ok} |"
                )
    return lines


def _counterparts(d):
    """(name, dpgauss estimator, scikit-learn counterpart, needs y) at rho 1,
    each with the box [-6, 6]^d (rows are standard normal) where it takes
    one, so that no fit refuses and the work timed is the library's."""
    from sklearn.covariance import EllipticEnvelope, EmpiricalCovariance
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import (
        LinearDiscriminantAnalysis,
        QuadraticDiscriminantAnalysis,
    )
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import StandardScaler

    import dpgauss

    box = (-6.0 * np.ones(d), 6.0 * np.ones(d))
    kw = {"rho": 1.0, "random_state": 0}
    return [
        (
            "PrivateCovariance(bounds)",
            dpgauss.PrivateCovariance(bounds=box, **kw),
            EmpiricalCovariance(),
            False,
        ),
        (
            "TailSensitiveCovariance(bounds)",
            dpgauss.TailSensitiveCovariance(bounds=box, **kw),
            EmpiricalCovariance(),
            False,
        ),
        (
            "PrivateGaussianEstimator()",
            PrivateGaussianEstimator(**kw),
            EmpiricalCovariance(),
            False,
        ),
        ("PrivateMean()", PrivateMean(**kw), StandardScaler(with_std=False), False),
        (
            "PrivateStandardScaler(bounds)",
            dpgauss.PrivateStandardScaler(bounds=box, **kw),
            StandardScaler(),
            False,
        ),
        (
            "PrivatePCA(bounds)",
            dpgauss.PrivatePCA(n_components=2, bounds=box, **kw),
            PCA(n_components=2),
            False,
        ),
        (
            "PrivateEllipticEnvelope(bounds)",
            dpgauss.PrivateEllipticEnvelope(bounds=box, **kw),
            EllipticEnvelope(support_fraction=1.0),
            False,
        ),
        (
            "PrivateLinearDiscriminantAnalysis(bounds)",
            dpgauss.PrivateLinearDiscriminantAnalysis(classes=[0, 1], bounds=box, **kw),
            LinearDiscriminantAnalysis(),
            True,
        ),
        (
            "PrivateQuadraticDiscriminantAnalysis(bounds)",
            dpgauss.PrivateQuadraticDiscriminantAnalysis(
                classes=[0, 1], bounds=box, **kw
            ),
            QuadraticDiscriminantAnalysis(),
            True,
        ),
        (
            "SubsampleAggregate(LinearRegression)",
            dpgauss.SubsampleAggregate(
                LinearRegression(), epsilon=1.0, delta=1e-6, random_state=0
            ),
            LinearRegression(),
            True,
        ),
    ]


def _fit_time(est, X, target=None):
    """CPU time of one fit, or (nan, the exception's name) when it raises."""
    start = time.process_time()
    try:
        est.fit(X, target)
    except Exception as exc:  # reported, never fatal
        return float("nan"), type(exc).__name__
    return time.process_time() - start, None


def _best_cpu(func, repeat=3):
    """The least CPU time of ``repeat`` calls."""
    return _best(func, repeat, clock=time.process_time)


def _exponents(cells):
    """Least-squares growth exponents (in n, in d) of ``{(n, d): seconds}``:
    ``log t = a + b log n + c log d`` over the cells that ran; nan where the
    cells do not vary in n or d."""
    rows = [(n, d, t) for (n, d), t in cells.items() if np.isfinite(t) and t > 0]
    if len(rows) < 2:
        return float("nan"), float("nan")
    logs = np.log(np.array(rows, dtype=float))
    design = np.column_stack([np.ones(len(rows)), logs[:, 0], logs[:, 1]])
    keep = [0] + [k for k in (1, 2) if np.ptp(logs[:, k - 1]) > 0]
    coef = np.linalg.lstsq(design[:, keep], logs[:, 2], rcond=None)[0]
    found = dict(zip(keep, coef, strict=True))
    return found.get(1, float("nan")), found.get(2, float("nan"))


#: The covariance family's grid: (d, the n fitted at that d), n chosen per d
#: so that the whole ``ratios`` mode stays under 10 minutes on one core.
COVARIANCE_GRID = (
    (10, (100_000, 1_000_000)),
    (50, (100_000, 1_000_000)),
    (200, (100_000, 500_000)),
    (500, (50_000, 200_000)),
)


def _covariance_family(d):
    """(name, estimator, what it is timed against) for the covariance family."""
    box = (-6.0 * np.ones(d), 6.0 * np.ones(d))
    kw = {"rho": 1.0, "random_state": 0}
    return [
        ("PrivateCovariance(bounds)", PrivateCovariance(bounds=box, **kw), "cov"),
        (
            "TailSensitiveCovariance(bounds)",
            TailSensitiveCovariance(bounds=box, **kw),
            "cov",
        ),
        ("PrivateGaussianEstimator()", PrivateGaussianEstimator(**kw), "mean+cov"),
    ]


def covariance_ratios(grid=COVARIANCE_GRID, known=None):
    """The covariance family against ``numpy.cov`` (the Gaussian against the
    mean plus ``numpy.cov``) and scikit-learn's ``EmpiricalCovariance``, one
    BLAS thread, at d = 10 to 500, with growth exponents fitted over the grid.
    ``known``: ``{(name, n, d): seconds}`` already measured (the ratios
    table's cells), not fitted again."""
    import warnings

    from sklearn.covariance import EmpiricalCovariance
    from threadpoolctl import threadpool_limits

    known = known or {}
    rng = np.random.default_rng(1)
    times, bases = {}, {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d, ns in grid:
            for n in ns:
                X = rng.standard_normal((n, d))
                # The baselines best of 3 (a single numpy.cov moved 4x with
                # the machine's load; they are cheap next to the fits).
                cov = _best_cpu(lambda X=X: np.cov(X, rowvar=False))
                mean = _best_cpu(lambda X=X: X.mean(axis=0))
                emp = _best_cpu(lambda X=X: EmpiricalCovariance().fit(X))
                bases[n, d] = {"cov": cov, "mean+cov": mean + cov, "emp": emp}
                for name, est, _ in _covariance_family(d):
                    if (name, n, d) in known:
                        times[name, n, d] = (known[name, n, d], None)
                    else:
                        times[name, n, d] = _fit_time(est, X)
    cells = [(n, d) for d, ns in grid for n in ns]
    lines = [
        "CPU time, one BLAS thread, rho 1, rows standard normal, the box "
        "[-6, 6]^d where the estimator takes one; each fit once, the "
        "baselines best of 3. Each cell: "
        "the fit's time, its ratio to `numpy.cov` (the Gaussian: to the mean "
        "plus `numpy.cov`; targets 1.5x for TailSensitiveCovariance and 2x "
        "for the Gaussian at 1e6 x 50) and to `EmpiricalCovariance`. "
        "Exponents: least squares of log time on log n and log d over the "
        "grid.",
        "",
        "| estimator | "
        + " | ".join(f"n={n:.0e}, d={d}" for n, d in cells)
        + " | exponent in n | exponent in d |",
        "|---|" + "---|" * (len(cells) + 2),
    ]
    base_cells = {cell: bases[cell]["cov"] for cell in cells}
    for name, _, against in _covariance_family(grid[0][0]):
        row = []
        for n, d in cells:
            took, failed = times[name, n, d]
            ours = took / bases[n, d][against]
            emp = took / bases[n, d]["emp"]
            row.append(failed or f"{took:.2f} s, {ours:.1f}x / {emp:.1f}x")
        e_n, e_d = _exponents({cell: times[(name, *cell)][0] for cell in cells})
        lines.append(f"| {name} | " + " | ".join(row) + f" | {e_n:.2f} | {e_d:.2f} |")
    e_n, e_d = _exponents(base_cells)
    row = [f"{base_cells[cell]:.2f} s" for cell in cells]
    lines.append("| numpy.cov | " + " | ".join(row) + f" | {e_n:.2f} | {e_d:.2f} |")
    return lines


def ratios(ns=(100_000, 1_000_000), ds=(10, 50), grid=COVARIANCE_GRID):
    """Every estimator's fit time over its scikit-learn counterpart's, one BLAS
    thread, each fit timed once in the same run, and the growth exponents of
    the library's time in n (between the two n, at the larger d) and in d
    (between the two d, at the larger n); then the covariance family on
    ``grid`` (:func:`covariance_ratios`)."""
    import warnings

    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    times = {}
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in ds:
            for n in ns:
                X = rng.standard_normal((n, d))
                y = (X[:, 0] + rng.standard_normal(n) > 0).astype(int)
                for name, ours, theirs, needs_y in _counterparts(d):
                    target = y if needs_y else None
                    if name.startswith("SubsampleAggregate"):
                        target = X @ np.ones(d) + rng.standard_normal(n)
                    base = _fit_time(theirs, X, target)[0]
                    took, failed = _fit_time(ours, X, target)
                    times[name, n, d] = (took, base, failed)
    lines = [
        "CPU time (`time.process_time`), one BLAS thread (threadpoolctl), rho 1 "
        "(SubsampleAggregate: epsilon 1, delta 1e-6), rows standard normal, "
        "the box [-6, 6]^d where the estimator takes one; each fit once.",
        "",
        "| estimator | counterpart | "
        + " | ".join(f"n={n:.0e}, d={d}" for d in ds for n in ns)
        + " | exponent in n | exponent in d |",
        "|---|---|" + "---|" * (len(ns) * len(ds) + 2),
    ]
    for name, _, theirs, _ in _counterparts(ds[-1]):
        cells = []
        for d in ds:
            for n in ns:
                took, base, failed = times[name, n, d]
                cells.append(failed or f"{took:.2f} s, {took / base:.1f}x")
        big_d, big_n = ds[-1], ns[-1]
        t_n = [times[name, n, big_d][0] for n in ns]
        t_d = [times[name, big_n, d][0] for d in ds]
        e_n = np.log(t_n[-1] / t_n[0]) / np.log(ns[-1] / ns[0])
        e_d = np.log(t_d[-1] / t_d[0]) / np.log(ds[-1] / ds[0])
        lines.append(
            f"| {name} | {type(theirs).__name__} | "
            + " | ".join(cells)
            + f" | {e_n:.2f} | {e_d:.2f} |"
        )
    if not grid:
        return lines
    known = {key: value[0] for key, value in times.items() if value[2] is None}
    return [
        *lines,
        "",
        "### The covariance family, d = 10 to 500",
        "",
        *covariance_ratios(grid, known),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "what",
        nargs="?",
        default="all",
        choices=[
            "speed",
            "gaussian",
            "exact",
            "eigen",
            "memmap",
            "dask",
            "aggregate",
            "ratios",
            "all",
        ],
    )
    parser.add_argument(
        "--dir", default=tempfile.gettempdir(), help="where the 8 GB file goes"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="the table's file (default: results/bench_scale[_MODE].md)",
    )
    args = parser.parse_args()
    lines = []
    if args.what in ("speed", "all"):
        lines += ["## Speed", "", *speed(), ""]
    if args.what in ("gaussian", "all"):
        lines += ["## Gaussians with no bounds", "", *gaussian_speed(), ""]
    if args.what in ("exact", "all"):
        lines += ["## Exact noise", "", *exact_cost(), ""]
    if args.what in ("eigen", "all"):
        lines += ["## EMCov", "", *eigen(), ""]
    if args.what in ("dask", "all"):
        lines += ["## Dask", "", *dask_check(), ""]
    if args.what in ("ratios", "all"):
        lines += ["## Ratios to scikit-learn", "", *ratios(), ""]
    if args.what in ("aggregate", "all"):
        lines += ["## SubsampleAggregate", "", *aggregate(), ""]
    if args.what in ("memmap", "all"):
        lines += ["## Memory-mapped input", "", *memmap(args.dir), ""]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        Path(args.out).write_text(text + "\n")
        return
    RESULTS.mkdir(exist_ok=True)
    name = "bench_scale.md" if args.what == "all" else f"bench_scale_{args.what}.md"
    (RESULTS / name).write_text(text + "\n")


if __name__ == "__main__":
    main()
