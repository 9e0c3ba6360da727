"""What every demo section shares: the demo's constants, its context, result
rows, timing, verdict wording, and the CSV and figure writers.

Only released values and public facts are read here; the sections decide what
to fit and print.
"""

import contextlib
import csv
import sys
import time
from dataclasses import dataclass

import numpy as np

from dpgauss import PrivacyBudget

__all__ = [
    "CLOSE",
    "CSV_FIELDS",
    "DEMO_DELTA",
    "DEMO_RHOS",
    "GAUSSIAN_RHO",
    "PLOT_EXTRA",
    "PLOT_FORMATS",
    "ROW_FIELDS",
    "Context",
    "epsilon",
    "fixed_cost",
    "load_digits_public_scale",
    "plot_sweep",
    "progress_notes",
    "row",
    "timed_fit",
    "versus",
    "write_csv",
]

DEMO_RHOS = (0.1, 1.0, 10.0)
DEMO_DELTA = 1e-6
#: The budget per fit of every section after the first.
GAUSSIAN_RHO = 0.5
#: A covariance release is "within 10% of the non-private covariance" below this
#: relative Frobenius error; the verdicts use the same 10% for the other ratios.
CLOSE = 0.1
#: The keys of every result row, in the order of the CSV's columns.
ROW_FIELDS = (
    "section",
    "estimator",
    "rho",
    "metric",
    "value",
    "nonprivate",
    "epsilon",
    "seconds",
)
#: The CSV's columns: the rows' keys, and the delta of their epsilon.
CSV_FIELDS = (*ROW_FIELDS[:7], "delta", *ROW_FIELDS[7:])
#: The figure formats of ``--plot``, chosen by the file's extension.
PLOT_FORMATS = (".png", ".pdf", ".svg")
PLOT_EXTRA = "pip install 'dpgauss[plot]' (or pip install matplotlib)"


@dataclass(frozen=True)
class Context:
    """What every section reads: the seed, the stream, the budgets, the shared
    budget every fit charges, and the digits (rows, labels, public row-norm
    bound) that the first and last sections both use."""

    seed: int
    out: object
    rhos: list
    budget: PrivacyBudget
    digits: tuple


def fixed_cost(fits):
    """``cost(rhos)`` of a section that makes ``fits`` fits at ``GAUSSIAN_RHO``,
    whatever the covariance sweep's budgets ``rhos``."""

    def cost(rhos):
        return fits * GAUSSIAN_RHO

    return cost


def load_digits_public_scale():
    """Return sklearn's digits (n=1797, d=64), pixels scaled from [0, 16] to [0, 1],
    their labels and the row-norm bound.

    The scale and the row-norm bound sqrt(64) = 8 come from the pixel range, which
    is public; nothing is read off the data to choose them.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = digits.data / 16.0
    return X, digits.target, float(np.sqrt(X.shape[1]))


def progress_notes(stream):
    """A function that writes one line, with the seconds since this call, to
    ``stream`` for each text it is given (nothing when ``stream`` is None)."""
    started = time.perf_counter()

    def note(text):
        if stream is not None:
            elapsed = time.perf_counter() - started
            print(f"dpgauss demo [{elapsed:5.1f} s] {text}", file=stream, flush=True)

    return note


def row(section, estimator, rho, metric, value, nonprivate, epsilon, seconds):
    """One result row (the keys are ``ROW_FIELDS``)."""
    values = (section, estimator, rho, metric, value, nonprivate, epsilon, seconds)
    return dict(zip(ROW_FIELDS, values, strict=True))


def timed_fit(est, *args, **kwargs):
    """Fit ``est`` and return the wall time in seconds."""
    begin = time.perf_counter()
    est.fit(*args, **kwargs)
    return time.perf_counter() - begin


def epsilon(est):
    """The fit's privacy as epsilon at the demo's delta."""
    return float(est.privacy_spent_.to_approx(DEMO_DELTA).epsilon)


def versus(private, nonprivate, what="error"):
    """'within 10% of the non-private error (1.03x)' or '1.47x the non-private ...'."""
    if not nonprivate > 0:
        return f"{private:.3g} (non-private {nonprivate:.3g})"
    ratio = private / nonprivate
    if ratio <= 1.0 + CLOSE:
        return f"within 10% of the non-private {what} ({ratio:.2f}x)"
    return f"{ratio:.2f}x the non-private {what}"


def write_csv(rows, path):
    """Write the demo's result rows to ``path`` as CSV.

    Parameters
    ----------
    rows : list of dict
        The rows the demo returns.
    path : str or path-like
        The file, or ``-`` for stdout. The columns are ``CSV_FIELDS``; an empty
        ``nonprivate`` means the metric is measured against the non-private
        result itself.
    """
    if path == "-":
        stream = contextlib.nullcontext(sys.stdout)
    else:
        stream = open(path, "w", newline="", encoding="utf-8")
    with stream as file:
        writer = csv.DictWriter(file, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for result in rows:
            writer.writerow({**result, "delta": DEMO_DELTA})


def plot_sweep(rows, path):
    """Save the covariance sweep's error against rho (log-log) to ``path``.

    One line per covariance estimator; the zero matrix, which reads no data,
    scores 1.0 and is drawn as the reference (the non-private covariance scores 0,
    off a log axis). The top axis gives each budget's epsilon at ``DEMO_DELTA``.
    Drawn with matplotlib's Agg canvas, so no display is needed.

    Parameters
    ----------
    rows : list of dict
        The rows the demo returns (only the covariance section's are drawn).
    path : str or path-like
        The file; its extension chooses the format (png, pdf or svg).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    rows = [result for result in rows if result["section"] == "covariance"]
    figure = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for label in dict.fromkeys(result["estimator"] for result in rows):
        mine = [result for result in rows if result["estimator"] == label]
        rhos = [result["rho"] for result in mine]
        ax.plot(rhos, [result["value"] for result in mine], marker="o", label=label)
    ax.axhline(1.0, color="0.4", linestyle="--", label="zero matrix (reads no data)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rho (zCDP budget of each fit)")
    ax.set_ylabel(
        "error relative to the non-private covariance\n"
        "(Frobenius norm; the zero matrix scores 1)"
    )
    ax.set_title("dpgauss demo: covariance of scikit-learn's digits (n=1797, d=64)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    epsilons = {result["rho"]: result["epsilon"] for result in rows}
    top = ax.secondary_xaxis("top")
    top.set_xticks(list(epsilons), [f"{eps:.3g}" for eps in epsilons.values()])
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel(f"epsilon at delta={DEMO_DELTA:g}")
    figure.savefig(path)
