"""bench_real's tables, verdicts and plot from its per-seed rows."""

import math
from collections import defaultdict

import numpy as np

PEER_PREFIXES = ("diffprivlib.", "opendp.")


#: dpgauss rows whose peers answer a smaller question: PrivateGaussianEstimator
#: releases a mean and a covariance from one budget (its baseline is the box
#: moments, the mean at half the budget), where the peers' means spend the
#: whole budget on the mean. Their medians are shown beside it for reference,
#: not counted as ahead of it.
PEERS_UNMATCHED = {("PrivateGaussianEstimator", "mean")}


def _is_peer(name):
    return name.startswith(PEER_PREFIXES)


def _fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if not math.isfinite(x):
        return "inf"
    if x == 0 or 1e-2 <= abs(x) < 1e4:
        return f"{x:.2f}"
    return f"{x:.1e}"


#: The noise-aware floor: an estimator fails it when its errors are
#: significantly above the baseline's (one-sided permutation test of the ratio
#: of median errors, level ALPHA) or its worst seed is beyond 3 times the
#: baseline's worst seed (each over its own seeds: like order statistics of
#: like samples). Two draws of one mechanism then fail with probability about
#: ALPHA, where the seed-paired ratios fail about half of the time (the median
#: of ten ratios of independent errors is above 1 as often as below, and
#: their maximum is beyond 3 whenever one baseline draw is lucky). The worst
#: seed was held to 3 times the baseline's *median* until 2026-11-29, a bar
#: the baseline itself failed on 171 of 1,962 rows at 30 seeds (heavy-tailed
#: errors: digits' mean, 16.2 against a median of 4.6); that count is still
#: reported (``worst_of_median``). Each seed's baseline error is the median
#: of its :data:`_real_tasks.BASE_DRAWS` draws, and the baseline's worst seed
#: the median over draws of the worst seed (:func:`_baseline_worst`): one
#: lucky draw no longer sets the bar.
ALPHA = 0.05
PERMUTATIONS = 2000


def _worse_p_value(errors, baseline):
    """P(median ratio >= observed) when the labels are exchangeable."""
    a, b = np.log(np.asarray(errors)), np.log(np.asarray(baseline))
    pooled = np.concatenate([a, b])
    observed = np.median(a) - np.median(b)
    rng = np.random.default_rng(0)
    perms = rng.permuted(np.tile(pooled, (PERMUTATIONS, 1)), axis=1)
    diffs = np.median(perms[:, : a.size], axis=1) - np.median(
        perms[:, a.size :], axis=1
    )
    hits = int(np.sum(diffs >= observed - 1e-12))
    return (hits + 1) / (PERMUTATIONS + 1)


def _significantly_below(errors, others):
    """Whether ``errors`` lie significantly below ``others`` (their median
    ratio, one-sided permutation test at :data:`ALPHA`)."""
    if len(errors) == 0 or len(others) == 0:
        return False
    a = np.maximum(others, 1e-300)
    b = np.maximum(errors, 1e-300)
    return _worse_p_value(a, b) < ALPHA


def fdr_significant(p_values, q=ALPHA):
    """How many of ``p_values`` are significant at false discovery rate ``q``
    (Benjamini-Hochberg: the largest k with the k-th smallest p-value at
    most ``q k / m``). The row-wise test at ALPHA flags about ALPHA of the
    rows whose estimator draws from its baseline's distribution (an estimator
    that takes the baseline's own release fails it one row in twenty); the
    rows that stay significant here are losses the seeds show beyond that."""
    p = np.sort(np.asarray([x for x in p_values if np.isfinite(x)], dtype=float))
    m = p.size
    below = np.nonzero(p <= q * np.arange(1, m + 1) / max(m, 1))[0]
    return int(below[-1] + 1) if below.size else 0


def _draws(r):
    """A row's baseline draws (a list, or the csv field's text), or its
    ``base_err`` alone where it has none (a deterministic baseline)."""
    d = r.get("base_draws")
    if isinstance(d, str):
        d = [float(x) for x in d.split()]
    return list(d) if d else [r["base_err"]]


def _baseline_worst(rs):
    """The baseline's worst seed: for each of its draws the worst over the
    seeds, then the median of those (the worst of the seeds' medians where
    the seeds do not all carry the same number of draws)."""
    draws = [_draws(r) for r in rs]
    draws = [d for d in draws if d and np.all(np.isfinite(d))]
    if not draws:
        return np.nan
    if len({len(d) for d in draws}) == 1:
        return float(np.median(np.max(np.asarray(draws, dtype=float), axis=0)))
    return float(max(r["base_err"] for r in rs if np.isfinite(r["base_err"])))


def _noise_floor(spent, rs):
    """(ok, ratio of medians, worst over the baseline's worst, p-value, worst
    over the baseline's median)."""
    base = [r["base_err"] for r in rs if np.isfinite(r["base_err"])]
    errs = [r["err"] for r in spent]
    if not spent or not base:
        return True, np.nan, np.nan, np.nan, np.nan
    base = np.maximum(base, 1e-300)
    errs = np.maximum(errs, 1e-300)
    med_base = float(np.median(base))
    ratio = float(np.median(errs)) / med_base
    worst = float(np.max(errs)) / max(_baseline_worst(rs), 1e-300)
    p = _worse_p_value(errs, base) if ratio > 1.0 else 1.0
    of_median = float(np.max(errs)) / med_base
    return bool(p >= ALPHA and worst <= 3.0), ratio, worst, p, of_median


def _astray(task):
    """How far beyond the non-private error a silent fit counts: 10 times, or
    100 for PCA, whose metric (the variance the subspace misses) grows with
    the square of the subspace's angle, so 100 there is 10 in angle."""
    return 100.0 if task == "pca" else 10.0


def _silent(task, r):
    """Whether a spent seed landed beyond :func:`_astray` times the non-private
    error without a warning. For ``clf`` it must also be worse than the
    baseline (the majority class): a classifier's non-private error rate can
    be a few percent (wine: 2%), so 10 times it lies below the majority
    class's own error, and a fit at the floor the library is held to would
    count as astray. For the other tasks the non-private error is a sampling
    error and the rule stands as the issue wrote it."""
    if int(r["warned"]) or not r["np_err"] or not np.isfinite(r["np_err"]):
        return False
    if task == "clf" and not r["err"] > r["base_err"]:
        return False
    return r["err"] > _astray(task) * r["np_err"]


def _baseline_policy(rs):
    """The rows with ``base_err`` set to the row's baseline policy.

    Where a task has two simple answers (``base_err`` drawn per seed and a
    deterministic ``base_alt``, the covariance's private diagonal and zero
    matrix), the row is held to the one with the smaller median error over
    its seeds, for every seed: a policy chosen for the table, not the
    per-seed minimum, which would pick whichever draw the truth shows better.
    """
    alt = [r.get("base_alt", np.nan) for r in rs]
    alt = [a for a in alt if a is not None and np.isfinite(a)]
    base = [r["base_err"] for r in rs if np.isfinite(r["base_err"])]
    if not alt or not base or float(np.median(base)) <= float(np.median(alt)):
        return rs
    value = float(np.median(alt))
    return [dict(r, base_err=value, base_draws=[value]) for r in rs]


def summarize(rows):
    """One record per (estimator, task, data, privacy, n) with the verdicts."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["estimator"], r["task"], r["data"], r["privacy"], r["n"])].append(r)
    out = {}
    for key, rs in groups.items():
        rs = _baseline_policy(rs)
        spent = [r for r in rs if r["status"] == "ok"]
        ratios = [r["err"] / max(r["base_err"], 1e-12) for r in spent]
        np_ratios = [
            r["err"] / r["np_err"]
            for r in spent
            if r["np_err"] and np.isfinite(r["np_err"]) and r["np_err"] > 0
        ]
        rec = {
            "seeds": len(rs),
            "spent": len(spent),
            "refused": sum(r["status"] == "refused" for r in rs),
            "errors": sum(r["status"] == "error" for r in rs),
            "na": sum(r["status"] == "n/a" for r in rs),
            "warned": sum(int(r["warned"]) for r in rs),
            "flagged": sum(int(r["flagged"]) for r in rs),
            "med_err": float(np.median([r["err"] for r in spent])) if spent else np.nan,
            "med": float(np.median(ratios)) if ratios else np.nan,
            "worst": float(np.max(ratios)) if ratios else np.nan,
            "med_np": float(np.median(np_ratios)) if np_ratios else np.nan,
            "silent_10x": sum(_silent(key[1], r) for r in spent),
            "message": next((r["message"] for r in rs if r["message"]), ""),
            "hint": ",".join(sorted({r.get("hint", "") for r in rs})),
            "errs": [r["err"] for r in spent],
            "base_errs": [r["base_err"] for r in rs if np.isfinite(r["base_err"])],
        }
        rec["floor_ok"] = rec["spent"] == 0 or (
            rec["med"] <= 1.0 and rec["worst"] <= 3.0
        )
        ok, ratio, worst, p, of_median = _noise_floor(spent, rs)
        rec.update(
            noise_ok=ok, med_of=ratio, worst_of=worst, p_worse=p,
            worst_of_median=of_median,
        )  # fmt: skip
        if rec["errors"]:
            rec["floor_ok"] = rec["noise_ok"] = False
        out[key] = rec
    return out


def _peer_view(summary, task, data, privacy, n):
    peers = {}
    for (est, t, dd, pp, nn), rec in summary.items():
        if _is_peer(est) and t == task and dd == data and pp == privacy and nn == n:
            peers[est] = rec
    return peers


def read_csv(path):
    """The rows of a results csv, typed as bench_real wrote them."""
    import csv

    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("n", "seed", "warned", "flagged"):
            r[k] = int(r[k])
        for k in ("err", "base_err", "base_alt", "np_err", "seconds"):
            v = r.get(k, "")
            r[k] = float(v) if v not in ("", "nan", None) else float("nan")
        r["base_draws"] = _draws(r)
    return rows


def write(rows, path, cmd, seconds):
    summary = summarize(rows)
    estimators = []
    for est, task, *_ in summary:
        if not _is_peer(est) and (est, task) not in estimators:
            estimators.append((est, task))
    lines = [
        "# bench_real: every estimator against its simplest private answer",
        "",
        f"`{cmd}` ({seconds / 60:.1f} min). Generated by `benchmarks/bench_real.py`;",
        "see its docstring for the data, the public box and the metrics, and",
        "`benchmarks/_baselines.py` for the baselines.",
        "",
        "Columns: median and worst seed error as a ratio to the baseline's error on",
        "the same rows (seeds that spent); median ratio to the non-private error;",
        "refused / warned / flagged (non-finite or beyond the box's scale) /",
        "errors (exceptions) counted over seeds; `silent>10x`: seeds that spent",
        "and landed beyond 10x the non-private error without a warning (100x for",
        "PCA, whose missed variance is quadratic in the angle; for classifiers",
        "only seeds also worse than the majority class count, since 10x a",
        "non-private error rate of a few percent is below that floor). `floor`:",
        "median <= 1 and worst <= 3 (or every seed refused). `tested`: the",
        "noise-aware floor: the ratio of median errors (dpgauss over the baseline,",
        "each over its own seeds) is not significantly above 1 (one-sided",
        f"permutation test, level {ALPHA}) and the worst seed is within 3 times the",
        "baseline's worst seed (each over its own seeds); two draws of one",
        "mechanism fail it about 5% of the time, the seed-paired `floor` about",
        "half. `clear losses`: rows that spent with a median error beyond 1.3",
        "times the baseline's median, or a worst seed beyond 3 times the",
        "baseline's worst. Peers: their median",
        "ratio to the same baseline (pure epsilon only; `n/a`: not run).",
        "PrivateGaussianEstimator's mean is released with its covariance from one",
        "budget; the peers spend the whole budget on the mean, so they are shown",
        "beside it for reference and not counted as ahead of it. A covariance",
        "row's baseline is the private diagonal or the zero matrix (error 1),",
        "whichever has the smaller median over the row's seeds (a policy, not",
        "the per-seed minimum, which only the truth could pick).",
        "",
        "## Headline",
        "",
        "| estimator | task | rows | floor fails | tested fails | clear losses |"
        " silent>10x rows | flagged rows | error rows | all-refused rows |"
        " a peer ahead |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    body = []
    for est, task in estimators:
        recs = {k: v for k, v in summary.items() if k[0] == est and k[1] == task}
        peer_ahead = 0
        table = [
            "",
            f"## {est} ({task})",
            "",
            "| data | privacy | n | median | worst | x non-private | refused | warned"
            " | flagged | errors | silent>10x | floor | tested | peers |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (_, _, data, privacy, n), rec in sorted(
            recs.items(), key=lambda kv: kv[0][2:]
        ):
            peers = _peer_view(summary, task, data, privacy, n)
            peer_txt = []
            for name, prec in sorted(peers.items()):
                if prec["na"] == prec["seeds"]:
                    peer_txt.append(f"{name} n/a")
                    continue
                peer_txt.append(f"{name} {_fmt(prec['med'])}")
                mine = rec["med_err"] if rec["spent"] else np.nan
                if (est, task) in PEERS_UNMATCHED:
                    continue
                if np.isfinite(prec["med_err"]) and not (mine <= prec["med_err"]):
                    peer_ahead += 1 if rec["spent"] else 0
            table.append(
                f"| {data} | {privacy} | {n} | {_fmt(rec['med'])}"
                f" | {_fmt(rec['worst'])}"
                f" | {_fmt(rec['med_np'])} | {rec['refused']}/{rec['seeds']}"
                f" | {rec['warned']} | {rec['flagged']} | {rec['errors']}"
                f" | {rec['silent_10x']} | {'ok' if rec['floor_ok'] else '**FAIL**'}"
                f" | {_tested(rec)} | {'; '.join(peer_txt)} |"
            )
        n_rows = len(recs)
        lines.append(
            f"| {est} | {task} | {n_rows}"
            f" | {sum(not r['floor_ok'] for r in recs.values())}"
            f" | {sum(not r['noise_ok'] for r in recs.values())}"
            f" | {sum(_clear_loss(r) for r in recs.values())}"
            f" | {sum(r['silent_10x'] > 0 for r in recs.values())}"
            f" | {sum(r['flagged'] > 0 for r in recs.values())}"
            f" | {sum(r['errors'] > 0 for r in recs.values())}"
            f" | {sum(r['spent'] == 0 for r in recs.values())}"
            f" | {peer_ahead} |"
        )
        msgs = sorted({r["message"] for r in recs.values() if r["message"]})[:4]
        if msgs:
            table += ["", "First messages (refusals, errors):", ""]
            table += [f"- {m}" for m in msgs]
        body += table
    lines += _targets(summary)
    with open(path + ".md", "w") as f:
        f.write("\n".join(lines + body) + "\n")
    _plot(summary, estimators, path + ".png")


def _clear_loss(rec):
    """A row that spent and lost by more than noise can explain at 10 seeds:
    its median error beyond 1.3 times the baseline's median, or its worst seed
    beyond 3 times the baseline's worst. Each side over its own seeds: a seed-paired
    ratio divides one draw by another, and where the baseline's error takes a
    few discrete values (PCA's axes ordered by private variances: 0.0005 or
    0.27 as two close variances swap) one lucky baseline draw made a 532x
    "loss" of an estimator whose median was a twentieth of the baseline's."""
    return bool(rec["spent"]) and (rec["med_of"] > 1.3 or rec["worst_of"] > 3.0)


def _tested(rec):
    if rec["noise_ok"]:
        return "ok"
    return (
        f"**FAIL** ({_fmt(rec['med_of'])}, worst {_fmt(rec['worst_of'])},"
        f" p {rec['p_worse']:.2f})"
    )


def _targets(summary):
    """The issue's specific targets, row by row where they fail."""
    mine = {k: v for k, v in summary.items() if not _is_peer(k[0])}
    out = ["", "## Targets", ""]
    flagged = [k for k, v in mine.items() if v["flagged"]]
    out.append(
        f"- No output non-finite or beyond the public scale: {len(flagged)} rows fail"
    )
    out += [f"  - {k[0]} ({k[1]}) {k[2]} {k[3]} n={k[4]}" for k in sorted(flagged)[:12]]
    floor = sum(not v["floor_ok"] for v in mine.values())
    silent = sum(v["silent_10x"] > 0 for v in mine.values())
    out.append(
        f"- Median <= baseline and worst <= 3x, or refusal: {floor} of {len(mine)}"
        " rows fail"
    )
    tested = sum(not v["noise_ok"] for v in mine.values())
    clear = sum(_clear_loss(v) for v in mine.values())
    out.append(
        f"- The same, noise-aware (`tested`: not significantly above the baseline,"
        f" worst within 3x its worst seed): {tested} of {len(mine)} rows fail"
    )
    spent = [v for v in mine.values() if v["spent"]]
    fdr = fdr_significant([v["p_worse"] for v in spent])
    beyond = sum(v["worst_of_median"] > 3.0 for v in spent)
    own = sum(
        max(v["base_errs"]) > 3.0 * float(np.median(v["base_errs"]))
        for v in spent
        if v["base_errs"]
    )
    out.append(
        f"  - rows significantly above the baseline after Benjamini-Hochberg"
        f" at a false discovery rate of {ALPHA} over the {len(spent)} rows that"
        f" spent: {fdr} (the row-wise test flags about {ALPHA:.0%} of the rows"
        f" whose estimator matches its baseline; the permutation p-values are"
        f" at least 1/{PERMUTATIONS + 1}, so with few seeds few rows can pass);"
        f" with a seed beyond 3x the baseline's median: {beyond} (the old bar;"
        f" the baseline's own worst seed is beyond 3x its median in {own})"
    )
    out.append(
        f"- Clear losses (median beyond 1.3x the baseline's median or the worst"
        " seed beyond 3x the baseline's worst):"
        f" {clear} of {len(mine)} rows"
    )
    out.append(f"- No silent fit beyond 10x the non-private error: {silent} rows fail")
    out.append(
        "- `PrivateMean(bounds=box)` <= 0.7x the baseline on fair and randhie at eps1:"
    )
    for k, v in sorted(mine.items()):
        if k[0] == "PrivateMean" and k[2] in ("fair", "randhie") and k[3] == "eps1":
            verdict = "ok" if v["spent"] and v["med"] <= 0.7 else "FAIL"
            if not v["spent"]:
                verdict = "FAIL (refused)"
            out.append(
                f"  - {k[2]} n={k[4]}: median {_fmt(v['med'])}, hint {v['hint']}:"
                f" {verdict}"
            )
    ahead = []
    for k, v in mine.items():
        if k[:2] in PEERS_UNMATCHED:
            continue
        peers = _peer_view(summary, k[1], k[2], k[3], k[4])
        for name, p in peers.items():
            # A refusal leaves the user the baseline (the simplest private
            # answer): a peer is ahead of it only below the baseline's error.
            if not p["spent"]:
                continue
            if v["spent"] and p["med_err"] < v["med_err"]:
                sig = _significantly_below(p["errs"], v["errs"])
                ahead.append((k, name, p["med_err"], v["med_err"], sig))
            elif not v["spent"] and p["med"] < 1.0:
                sig = _significantly_below(p["errs"], p["base_errs"])
                ahead.append((k, name, p["med_err"], v["med_err"], sig))
    refused = sum(1 for a in ahead if not mine[a[0]]["spent"])
    significant = sum(1 for a in ahead if a[4])
    out.append(
        f"- Ahead of the peers: {len(ahead)} (row, peer) pairs where a peer's median"
        f" error is lower, {significant} of them significantly (one-sided"
        f" permutation test at {ALPHA} on the seeds' errors), {refused} where"
        " dpgauss refused every seed and the peer beat the baseline (a refusal"
        " leaves the baseline)"
        " (PrivateGaussianEstimator's mean not counted: it shares its budget with"
        " the covariance, the peers' means do not)"
    )
    # Rows where dpgauss spent and lost first: the refusals are in the tables.
    ahead.sort(key=lambda a: (not mine[a[0]]["spent"], a[0]))
    for k, name, pm, m, sig in ahead[:40]:
        out.append(
            f"  - {k[0]} ({k[1]}) {k[2]} {k[3]} n={k[4]}: {name} {_fmt(pm)}"
            f" vs {_fmt(m)} (median errors{', significant' if sig else ''})"
        )
    if len(ahead) > 40:
        out.append(f"  - ... {len(ahead) - 40} more in the tables")
    return out


def _plot(summary, estimators, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    cols = 4
    nrows = math.ceil(len(estimators) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
    privs = sorted({k[3] for k in summary})
    colors = {p: f"C{i}" for i, p in enumerate(privs)}
    for ax, (est, task) in zip(axes.flat, estimators, strict=False):
        recs = sorted(
            (k, v) for k, v in summary.items() if k[0] == est and k[1] == task
        )
        for i, (k, rec) in enumerate(recs):
            if rec["spent"] == 0:
                ax.plot(i, 1e-2, "x", color=colors[k[3]], ms=4)
                continue
            y = min(max(rec["med"], 1e-2), 1e6)
            ax.plot(i, y, "o", color=colors[k[3]], ms=3)
            ax.plot(
                [i, i],
                [y, min(max(rec["worst"], 1e-2), 1e6)],
                color=colors[k[3]],
                lw=0.5,
            )
        ax.axhline(1, color="k", lw=0.8)
        ax.axhline(3, color="k", lw=0.5, ls="--")
        ax.set_yscale("log")
        ax.set_ylim(5e-3, 2e6)
        ax.set_title(f"{est} ({task})", fontsize=8)
        ax.set_xticks([])
    for ax in list(axes.flat)[len(estimators) :]:
        ax.axis("off")
    handles = [
        plt.Line2D([], [], color=c, marker="o", ls="", label=p)
        for p, c in colors.items()
    ]
    fig.legend(handles=handles, loc="lower right", fontsize=7)
    fig.suptitle(
        "median (dot) and worst seed (bar) error / baseline; x = every seed refused"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
