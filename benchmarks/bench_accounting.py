"""The cost of a spend does not grow with the ledger: a ratio measured in one run.

Run: ``.venv/bin/python benchmarks/bench_accounting.py [--events 100000]
[--repeat 300]``.

Two durable ledgers are made in a temporary folder, one holding 10 events and one
holding ``--events`` (100,000; filled by ``spend_many`` calls of 1,000 releases
each). ``spend`` (one atomic, durable transaction), ``check``, ``spent`` and
``repr`` are then timed on both, alternating between the two ledgers call by call
so that drift in the machine's speed hits both alike; each is summarised by its
median. The target is a spend at ``--events`` within 1.5x of a spend at 10 events.
Reading the whole ledger (``ledger``, ``verify``, and opening an existing ledger,
which verifies it) is O(events) by nature and is shown for information.

Writes ``results/bench_accounting.md``.
"""

import argparse
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 1.5
SMALL = 10
TOTAL_RHO = 1e6  # large enough that no spend below is ever refused
COST = ZCDP(1e-6)


def _fill(budget, n_events, batch=1_000):
    done = 0
    while done < n_events:
        k = min(batch, n_events - done)
        budget.spend_many([(COST, f"fill:{i}") for i in range(k)], estimator="fill")
        done += k


def _timed(func):
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def _interleaved(small, large, func, repeat):
    """Median seconds of ``func(budget)`` on each budget, calls alternating."""
    times = {"small": [], "large": []}
    for r in range(repeat):
        order = [("small", small), ("large", large)]
        for name, budget in order if r % 2 == 0 else order[::-1]:
            times[name].append(_timed(lambda b=budget: func(b)))
    return statistics.median(times["small"]), statistics.median(times["large"])


def _once(func, repeat=3):
    return min(_timed(func) for _ in range(repeat))


def run(n_events, repeat):
    with tempfile.TemporaryDirectory(prefix="dpgauss-bench-") as folder:
        small = PrivacyBudget(rho=TOTAL_RHO, path=Path(folder) / "small.sqlite")
        large = PrivacyBudget(rho=TOTAL_RHO, path=Path(folder) / "large.sqlite")
        _fill(small, SMALL)
        fill_time = _timed(lambda: _fill(large, n_events))
        rows = []
        for label, func in [
            ("spend (one release, committed)", lambda b: b.spend(COST, mechanism="x")),
            ("check", lambda b: b.check(COST)),
            ("spent", lambda b: b.spent()),
            ("repr", repr),
        ]:
            t_small, t_large = _interleaved(small, large, func, repeat)
            rows.append((label, t_small, t_large))
        n_small, n_large = len(small.ledger()), len(large.ledger())
        reads = [
            ("ledger() (reads every event)", lambda b: b.ledger()),
            ("verify() (reads every event)", lambda b: b.verify()),
            (
                "open an existing ledger (verifies it)",
                lambda b: PrivacyBudget(rho=TOTAL_RHO, path=b.path),
            ),
        ]
        for label, func in reads:
            rows.append(
                (label, _once(lambda f=func: f(small)), _once(lambda f=func: f(large)))
            )
    ratio = rows[0][2] / rows[0][1]
    return rows, ratio, fill_time, n_small, n_large


def _report(rows, ratio, fill_time, n_events, n_small, n_large, repeat):
    verdict = "meets" if ratio <= TARGET else "MISSES"
    lines = [
        "# PrivacyBudget: cost of a spend against the size of the ledger",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_accounting.py --events "
        f"{n_events} --repeat {repeat}`",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}; "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}.",
        "",
        f"Ledgers: {SMALL} events and {n_events} events at the start (filled in "
        f"{fill_time:.1f} s by spend_many calls of 1,000 releases); the timed "
        f"calls add events, so they end at {n_small} and {n_large}. Medians of "
        f"{repeat} calls each, alternating between the two ledgers.",
        "",
        f"| operation | {SMALL} events (ms) | {n_events} events (ms) | ratio |",
        "|---|---|---|---|",
    ]
    for label, t_small, t_large in rows:
        lines.append(
            f"| {label} | {1e3 * t_small:.3f} | {1e3 * t_large:.3f} | "
            f"{t_large / t_small:.2f} |"
        )
    lines += [
        "",
        f"**Spend ratio ({n_events} / {SMALL} events): {ratio:.2f}x**, which "
        f"{verdict} the target (at most {TARGET}x).",
        "",
        "A spend is one `BEGIN IMMEDIATE` transaction that reads the one-row running",
        "tally, inserts the events and updates the tally; its time is dominated by",
        "the durable commit (fsync), not by the ledger's size. Before the tally, a",
        "spend read every event: 1.2 ms at 10 events against 23 ms at 5,000, and",
        "`repr` (which then read the ledger) took 0.7 s at 20,000 events.",
        "The last rows read the whole ledger and grow with it by design.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args(argv)
    rows, ratio, fill_time, n_small, n_large = run(args.events, args.repeat)
    text = _report(rows, ratio, fill_time, args.events, n_small, n_large, args.repeat)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_accounting.md").write_text(text)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
