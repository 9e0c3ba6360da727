"""Peak traced allocation of every estimator that reads memory-mapped files.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_memory.py [--dir DIR]
[--gib 4] [--only NAME,...] [--huge] [--mixing]``.

* default: a float64 file of ``--gib`` GiB (4) and a float32 one of half that
  (2 GiB), d = 20 standard normal columns shifted by 3, are written once to
  ``--dir`` (removed after); each estimator is fitted on each file through
  ``np.load(mmap_mode="r")`` in a child process of its own, which reports
  the peak traced allocation (``tracemalloc``: numpy's allocations included),
  its peak resident memory (VmHWM) and the fit's wall time. Target: at most
  64 MiB traced for every fit. A markdown table goes to stdout.
* ``--huge``: one fit of ``PrivateCovariance`` and ``TailSensitiveCovariance``
  on a 1e8 x 20 float32 file (8 GB), with time and memory.
* ``--mixing``: the pairing's mixing on rows sorted by class (relative error of
  the pairs' second moment, sorted against shuffled rows, and the blockwise
  pairing against the uniform one), the measurement behind
  ``dpgauss.releases._pairs.PAIR_BLOCK`` and ``PAIR_GROUP``.

Never writes into ``results/`` (the lead commits the tables).
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

D = 20
TARGET_MIB = 64.0


def _estimators(d):
    """(name, factory source, needs y): fitted in the child, public settings only."""
    box = f"bounds=(-9.0 * np.ones({d}), 9.0 * np.ones({d}))"
    norm = f"data_norm={3.0 * np.sqrt(d) + 30.0}"
    pca, gauss = "n_components=2", "method='gauss'"
    lda, qda = "LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis"
    table = [
        ("PrivateCovariance", "PrivateCovariance", norm, False),
        ("PrivateCovariance(bounds)", "PrivateCovariance", box, False),
        ("TailSensitiveCovariance", "TailSensitiveCovariance", norm, False),
        ("TailSensitiveCovariance(bounds)", "TailSensitiveCovariance", box, False),
        ("PrivateGaussianEstimator", "PrivateGaussianEstimator", "", False),
        ("PrivateGaussianEstimator(bounds)", "PrivateGaussianEstimator", box, False),
        ("PrivateMean", "PrivateMean", "", False),
        ("PrivateMean(bounds)", "PrivateMean", box, False),
        ("PrivatePCA(tail)", "PrivatePCA", f"{pca}, {norm}", False),
        ("PrivatePCA(gauss)", "PrivatePCA", f"{pca}, method='gauss', {norm}", False),
        ("PrivatePCA(bounds)", "PrivatePCA", f"{pca}, {box}", False),
        ("PrivatePCA(bounds; gauss)", "PrivatePCA", f"{pca}, {gauss}, {box}", False),
        ("PrivateStandardScaler", "PrivateStandardScaler", box, False),
        ("PrivateLDA", f"Private{lda}", f"classes=[0, 1], {box}", True),
        ("PrivateQDA", f"Private{qda}", f"classes=[0, 1], {box}", True),
    ]
    kw = "rho=1.0, random_state=0, on_useless='warn'"
    return [
        (name, f"dpgauss.{cls}({args + ', ' if args else ''}{kw})", y)
        for name, cls, args, y in table
    ]


CHILD = """
import json, sys, time, tracemalloc, warnings
import numpy as np
import dpgauss
path, source, needs_y = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
X = np.load(path, mmap_mode="r")
y = None
est = eval(source)
if needs_y:  # labels: an n-length input the caller gives (counted)
    y = (np.arange(X.shape[0]) % 2).astype(np.int8)
warnings.simplefilter("ignore")
tracemalloc.start()
start = time.perf_counter()
error = ""
try:
    est.fit(X, y)
except Exception as exc:
    error = f"{type(exc).__name__}: {str(exc)[:80]}"
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
hwm = 0
with open("/proc/self/status") as fh:
    for line in fh:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
print(json.dumps({"peak": peak, "hwm": hwm, "seconds": seconds, "error": error}))
"""


def _write(path, n, d, dtype):
    """Write n x d rows (standard normal + 3) to a .npy file, in chunks."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(n, d))
    rng = np.random.default_rng(0)
    step = 1 << 20
    for start in range(0, n, step):
        stop = min(n, start + step)
        out[start:stop] = rng.standard_normal((stop - start, d)) + 3.0
    out.flush()
    del out


def _fit(path, source, needs_y):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), source, "1" if needs_y else "0"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"peak": float("nan"), "hwm": float("nan"), "seconds": float("nan"),
                "error": done.stderr.strip().splitlines()[-1][:80]}  # fmt: skip
    return json.loads(lines[-1])


def _row(name, dtype, gib, result):
    mib = result["peak"] / 2**20
    ok = "yes" if mib <= TARGET_MIB else "**no**"
    return (
        f"| {name} | {dtype} {gib:g} GiB | {mib:.1f} | {result['hwm'] / 2**30:.2f} "
        f"| {result['seconds']:.1f} | {ok} | {result['error']} |"
    )


def run_memory(directory, gib, only):
    rows = []
    files = [("float64", np.float64, gib), ("float32", np.float32, gib / 2)]
    for label, dtype, size in files:
        n = int(size * 2**30) // (D * np.dtype(dtype).itemsize)
        path = Path(directory) / f"bench_memory_{label}.npy"
        print(f"writing {path} ({n} x {D}, {size:g} GiB)", file=sys.stderr)
        _write(path, n, D, dtype)
        try:
            for name, source, needs_y in _estimators(D):
                if only and name not in only:
                    continue
                result = _fit(path, source, needs_y)
                rows.append(_row(name, label, size, result))
                print(rows[-1], file=sys.stderr)
        finally:
            path.unlink()
    print(
        f"Peak traced allocation (tracemalloc, numpy included) of one fit in a "
        f"child process, d = {D}, rows N(3, 1) from np.load(mmap_mode='r'); "
        f"target <= {TARGET_MIB:g} MiB. VmHWM is the child's peak resident "
        "memory (file pages read through the mapping count there).\n"
    )
    print("| estimator | file | peak traced MiB | VmHWM GiB | s | <= 64 MiB | error |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def run_huge(directory):
    n, d = 10**8, 20
    path = Path(directory) / "bench_memory_huge.npy"
    print(f"writing {path} ({n} x {d} float32, 8 GB)", file=sys.stderr)
    _write(path, n, d, np.float32)
    rows = []
    try:
        for name, source, needs_y in _estimators(d):
            if name in ("PrivateCovariance", "TailSensitiveCovariance"):
                rows.append(_row(name, "float32", 7.45, _fit(path, source, needs_y)))
                print(rows[-1], file=sys.stderr)
    finally:
        path.unlink()
    print("| estimator | file | peak traced MiB | VmHWM GiB | s | <= 64 MiB | error |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def run_mixing():
    """The pairs' second moment on sorted and shuffled classes (non-private)."""
    from dpgauss.releases import _pairs

    print("| n | pairing | sorted median / max | shuffled median / max |")
    print("|---|---|---|---|")
    for n in (10**5, 10**6):
        rng = np.random.default_rng(0)
        d = 10
        means = rng.normal(size=(4, d)) * 3
        X = rng.normal(size=(n, d)) + np.repeat(means, n // 4, axis=0)
        C = np.cov(X.T)
        shuffled = X[np.random.default_rng(1).permutation(n)]
        kept = _pairs.PAIR_BLOCK, _pairs.PAIR_GROUP
        for label, block, group in [
            ("blockwise (the library's)", *kept),
            ("plain blocks of 1,024", 1024, 1),
            ("uniform", n, 1),
        ]:
            _pairs.PAIR_BLOCK, _pairs.PAIR_GROUP = block, group
            cells = []
            for rows in (X, shuffled):
                errors = []
                for seed in range(20):
                    pairing = _pairs.Pairing(n, np.random.default_rng(seed))
                    Z = _pairs.PairDifferences(rows, pairing).rows()
                    M = 2 * Z.T @ Z / Z.shape[0]
                    errors.append(np.linalg.norm(M - C) / np.linalg.norm(C))
                cells.append(f"{np.median(errors):.4f} / {np.max(errors):.4f}")
            _pairs.PAIR_BLOCK, _pairs.PAIR_GROUP = kept
            print(f"| {n:,} | {label} | {cells[0]} | {cells[1]} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--gib", type=float, default=4.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--huge", action="store_true")
    parser.add_argument("--mixing", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.mixing:
        run_mixing()
    elif args.huge:
        run_huge(args.dir)
    else:
        only = {s.strip() for s in args.only.split(",") if s.strip()}
        run_memory(args.dir, args.gib, only)
    print(f"\n({time.perf_counter() - start:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
