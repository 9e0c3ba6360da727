"""Drive the peer libraries for bench_real, each in its own interpreter.

diffprivlib needs scikit-learn < 1.6 and OpenDP is not a dependency of
dpgauss, so each peer runs in a venv of its own (``python3 -m venv
/work/peers/dpl; pip install diffprivlib "scikit-learn<1.6" numpy scipy``;
``/work/peers/opendp`` with ``opendp[numpy,scikit-learn]``). The jobs go to
``_peer_script.py`` in batches through an .npz file; a peer whose interpreter
is absent, or whose batch fails or outruns its time limit (``JOB_SECONDS``
per job: a peer that hangs on one large table must not hold up the run), is
reported "n/a" row by row.
"""

import os
import subprocess
import sys
import tempfile
import time

import _real_tasks as T
import numpy as np

# (peer, label in the tables, bench task); the script's own task name below.
PEER_TASKS = [
    ("diffprivlib", "diffprivlib.mean", "mean"),
    ("opendp", "opendp.mean", "mean"),
    ("diffprivlib", "diffprivlib.StandardScaler", "scaler"),
    ("diffprivlib", "diffprivlib.PCA", "pca"),
    ("opendp", "opendp.PCA", "pca"),
    ("diffprivlib", "diffprivlib.GaussianNB", "clf"),
    ("diffprivlib", "diffprivlib.LogisticRegression", "clf"),
    ("diffprivlib", "diffprivlib.LinearRegression", "agg_lin"),
    ("diffprivlib", "diffprivlib.LogisticRegression", "agg_log"),
]
_SCRIPT_TASK = {
    "diffprivlib.GaussianNB": "gnb",
    "diffprivlib.LogisticRegression": "logreg",
    "diffprivlib.LinearRegression": "linreg",
    "diffprivlib.StandardScaler": "scaler",
    "diffprivlib.PCA": "pca",
    "opendp.PCA": "pca",
}
_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_peer_script.py")
BATCH = 25
JOB_SECONDS = 30


def _inputs(label, task, ctx, eps, seed):
    arrays = {"task": _SCRIPT_TASK.get(label, task), "eps": eps, "seed": seed}
    if task in ("mean", "scaler"):
        arrays.update(X=ctx["X"], lower=ctx["lower"], upper=ctx["upper"])
        return arrays
    d = ctx["Z"].shape[1]
    arrays.update(X=ctx["Z"], lower=-np.ones(d), upper=np.ones(d), k=T.K_PCA)
    for field in ("y", "Ztest", "classes", "ylo", "yhi"):
        if field in ctx:
            arrays["Xtest" if field == "Ztest" else field] = ctx[field]
    return arrays


def _outputs(label, task, result):
    if task == "agg_log" or task == "agg_lin":
        return {"coef": result["coef"]}
    if task == "clf":
        return {"pred": result["pred"]}
    return {k: v for k, v in result.items() if k != "error"}


def run_script(python, peer, jobs, limit):
    """Run ``_peer_script.py`` for ``peer`` on ``jobs`` (dicts of fields) in
    the interpreter ``python``: ``(results, failure, seconds per job)``, with
    ``results`` a dict of each job's output fields by index (None, with the
    failure's last line, when the script fails or outruns ``limit``)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        arrays = {}
        for i, fields in enumerate(jobs):
            for field, value in fields.items():
                arrays[f"{i}__{field}"] = np.asarray(value)
        np.savez(src, **arrays)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [python, _SCRIPT, peer, src, dst],
                capture_output=True,
                text=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            return None, [f"timeout: batch over {limit} s"], float("nan")
        secs = (time.perf_counter() - t0) / max(len(jobs), 1)
        if proc.returncode != 0:
            return None, proc.stderr.strip().splitlines()[-1:] or ["failed"], secs
        data = np.load(dst)
        results = {}
        for k in data.files:
            i, field = k.split("__", 1)
            results.setdefault(int(i), {})[field] = data[k]
        return results, None, secs


def _run_batch(python, peer, batch):
    jobs = [
        _inputs(label, task, ctx, eps, seed)
        for _, label, task, _key, ctx, eps, seed in batch
    ]
    return run_script(python, peer, jobs, max(120, JOB_SECONDS * len(batch)))


def run_peers(peer_jobs, interpreters):
    """Result rows (as bench_real's) for every peer job; "n/a" when absent."""
    rows = []
    by_peer = {}
    for job in peer_jobs:
        by_peer.setdefault(job[0], []).append(job)
    for peer, jobs in by_peer.items():
        python = interpreters.get(peer)
        present = python and os.path.exists(python)
        print(f"peer {peer}: {len(jobs)} jobs" + ("" if present else " (absent: n/a)"))
        for start in range(0, len(jobs), BATCH):
            batch = jobs[start : start + BATCH]
            results, failure, secs = (None, ["interpreter absent"], 0.0)
            if present:
                results, failure, secs = _run_batch(python, peer, batch)
            for i, (_, label, task, key, ctx, _eps, _seed) in enumerate(batch):
                ref = ctx["ref"]
                row = dict(key, estimator=label, task=task, hint="box", status="")
                row.update(warned=0, flagged=0, err=np.nan)
                row.update(base_err=ref["base_err"], base_alt=ref.get("base_alt"))
                row.update(base_draws=T.format_draws(ref))
                row.update(np_err=ref["np_err"], seconds=secs)
                result = (results or {}).get(i, {})
                if results is None or "error" in result:
                    msg = failure[0] if results is None else str(result["error"])
                    row.update(status="n/a", err=np.nan, message=msg[:160])
                else:
                    err, flagged = T.SCORERS[task](_outputs(label, task, result), ref)
                    row.update(status="ok", err=err, flagged=int(flagged), message="")
                rows.append(row)
    return rows


if __name__ == "__main__":
    sys.exit("run bench_real.py")
