"""The ``dpgauss`` command: ``dpgauss demo`` (the default), ``dpgauss version``.

``dpgauss --version`` prints ``dpgauss <version>``; ``dpgauss demo -h`` lists the
demo's options (``--rho``, ``--csv``, ``--plot``, ``--progress``, ``--seed``).
The demo's sections live in :mod:`dpgauss.demo`; this module parses the
arguments, runs the sections in order and writes the rows they return.
"""

import argparse
import os
import sys
import warnings

import numpy as np

from dpgauss import __version__
from dpgauss.demo import SECTIONS, finish, start
from dpgauss.demo.report import (
    DEMO_RHOS,
    GAUSSIAN_RHO,
    PLOT_EXTRA,
    PLOT_FORMATS,
    plot_sweep,
    progress_notes,
    write_csv,
)
from dpgauss.exceptions import UtilityWarning

__all__ = ["main"]

#: The rho of the sections after the covariance sweep, which ``--rho`` leaves as is.
LATER_RHO = sum(section.cost(DEMO_RHOS) for section in SECTIONS[1:])
#: The budgets ``--rho`` accepts. The demo runs at both ends; TailSensitiveCovariance
#: refuses to calibrate its noise in float64 at rho = 1e-100 and at 1e300.
RHO_RANGE = (1e-12, 1e12)


def demo(seed=0, out=None, *, rhos=DEMO_RHOS, progress=None):
    """Fit the library's estimators at a few budgets and print error and privacy.

    Parameters
    ----------
    seed : int, default=0
        Seed for the noise, so that the printed numbers are reproducible (a real
        release uses ``random_state=None``).
    out : file-like, default=None
        Where to print (``sys.stdout`` when None).
    rhos : sequence of float, default=DEMO_RHOS
        The budgets of the covariance sweep on digits: every covariance estimator
        is fitted once at each, in increasing order. The later sections fit once
        each at ``GAUSSIAN_RHO`` whatever ``rhos`` is.
    progress : file-like, default=None
        Where to write one short line as each section (and each budget of the
        sweep) starts, and the total time at the end; nothing when None.

    Returns
    -------
    list of dict
        One row per printed result, with the keys ``ROW_FIELDS``: the section,
        the estimator, its rho (0 for a fit on public rows only), the metric's
        name and value, the same metric for the non-private counterpart
        (``None`` where the metric is measured against that counterpart), the
        fit's epsilon at ``DEMO_DELTA`` and its wall time in seconds.
    """
    total = len(SECTIONS)
    notes = progress_notes(progress)
    context = start(seed, sys.stdout if out is None else out, rhos)
    rows = []
    for index, section in enumerate(SECTIONS, 1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows += section.run(
                context, lambda text, index=index: notes(f"{index}/{total} {text}")
            )
        _report_warnings(caught, context.out)
    finish(context)
    notes("done")
    return rows


def _report_warnings(caught, out):
    """One line per estimator for a section's utility warnings (the first
    sentence of the first, and how many), instead of a page of repeats; any
    other warning is shown as Python would."""
    seen = {}
    for item in caught:
        if not issubclass(item.category, UtilityWarning):
            warnings.showwarning(
                item.message, item.category, item.filename, item.lineno
            )
            continue
        owner, _, text = str(item.message).partition(": ")
        first, count = seen.get(owner, (text.split(": ")[0].split(". ")[0], 0))
        seen[owner] = (first, count + 1)
    for owner, (first, count) in seen.items():
        times = "" if count == 1 else f" ({count} fits)"
        print(f"  note from {owner}{times}: {first}.", file=out)


def _budget(text):
    """argparse type of ``--rho``: a float within ``RHO_RANGE``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"a budget must be positive and finite, got {text!r}"
        )
    if not RHO_RANGE[0] <= value <= RHO_RANGE[1]:
        raise argparse.ArgumentTypeError(
            f"{text} is outside [{RHO_RANGE[0]:g}, {RHO_RANGE[1]:g}]: beyond, the "
            "estimators cannot calibrate their noise in float64 (and at the ends "
            "the releases are already the zero matrix, or not private at all)"
        )
    return value


def _output_file(text):
    """argparse type of ``--csv``: ``-`` (stdout) or a file in an existing folder."""
    if text != "-":
        folder = os.path.dirname(os.path.abspath(text))
        if not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(f"no such directory: {folder}")
    return text


def _figure_file(text):
    """argparse type of ``--plot``: a .png, .pdf or .svg file; needs matplotlib."""
    if os.path.splitext(text)[1].lower() not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{text!r} does not end in {', '.join(PLOT_FORMATS)} (the format is "
            "chosen by the extension)"
        )
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise argparse.ArgumentTypeError(
            f"the figure needs matplotlib, which is not installed: {PLOT_EXTRA}"
        ) from None
    return _output_file(text)


def _parser():
    """The ``dpgauss`` argument parser (subcommands ``demo`` and ``version``)."""
    parser = argparse.ArgumentParser(
        prog="dpgauss",
        description="Differentially private Gaussian estimators. With no command "
        "(or only demo options) runs the demo; see `dpgauss demo -h`.",
    )
    parser.add_argument("--version", action="version", version=f"dpgauss {__version__}")
    sub = parser.add_subparsers(dest="command")
    demo_parser = sub.add_parser(
        "demo",
        help="run the demonstration (default)",
        description="Fit dpgauss's estimators at a few budgets, drawn from one "
        "shared PrivacyBudget, and print each fit's error next to the non-private "
        "one, its privacy as rho and as epsilon at delta=1e-6, a one-line verdict "
        "per estimator and the budget's ledger.",
    )
    demo_parser.add_argument("--seed", type=int, default=0, help="noise seed")
    demo_parser.add_argument(
        "--rho",
        type=_budget,
        nargs="+",
        default=list(DEMO_RHOS),
        metavar="R",
        help="zCDP budgets of the covariance sweep on digits, each in "
        f"[{RHO_RANGE[0]:g}, {RHO_RANGE[1]:g}]: every covariance estimator is "
        "fitted once at each (sorted, repeats dropped; default: "
        f"{' '.join(f'{r:g}' for r in DEMO_RHOS)}). The later sections (Gaussians, "
        "mixture, linear regression (subsample and aggregate, and "
        "PrivateLinearRegression), product; LDA, PCA and an outlier "
        f"detector) fit once each (the regression twice) at rho={GAUSSIAN_RHO:g} "
        "whatever R is (their "
        "noise still differs: each fit's stream depends on its place in the "
        "shared ledger); the shared budget is 3 x sum(R) + "
        f"{LATER_RHO:g}.",
    )
    demo_parser.add_argument(
        "--csv",
        type=_output_file,
        metavar="FILE",
        help="also write every result row to FILE as CSV (section, estimator, rho, "
        "metric, value, the non-private value, epsilon, delta, seconds); with "
        "'-' the CSV goes to stdout and the report to stderr",
    )
    demo_parser.add_argument(
        "--plot",
        type=_figure_file,
        metavar="FILE",
        help="also save a utility-versus-budget figure of the covariance sweep "
        "(error against rho, log axes, one line per estimator) to FILE, as png, "
        f"pdf or svg by its extension; needs matplotlib: {PLOT_EXTRA}",
    )
    demo_parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one line on stderr as each section starts, and the total time "
        "(default: only when stderr is a terminal)",
    )
    sub.add_parser("version", help="print the version")
    return parser


def main(argv=None):
    """Entry point of the ``dpgauss`` command.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments (``sys.argv[1:]`` when None). With no command, or when the first
        argument is an option other than ``-h`` or ``--version``, they go to
        ``dpgauss demo``.

    Returns
    -------
    int
        Exit status.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (
        argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")
    ):
        argv = ["demo", *argv]
    args = _parser().parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    progress = args.progress
    if progress is None:
        progress = sys.stderr.isatty()
    out = sys.stderr if args.csv == "-" else sys.stdout
    rows = demo(
        seed=args.seed,
        out=out,
        rhos=args.rho,
        progress=sys.stderr if progress else None,
    )
    wrote = []
    if args.csv is not None:
        write_csv(rows, args.csv)
        if args.csv != "-":
            wrote.append(f"Wrote {len(rows)} result rows to {args.csv}.")
    if args.plot is not None:
        plot_sweep(rows, args.plot)
        wrote.append(f"Wrote the utility-versus-budget figure to {args.plot}.")
    if wrote:
        print("\n" + "\n".join(wrote), file=out)
    return 0
