"""The ``dpgauss`` command (the README's main job): parsing, dispatch and
what it writes; the sections' own results are checked in ``tests/demo/``."""

import contextlib
import csv
import importlib.util
import io
import subprocess
import sys
from types import SimpleNamespace

import pytest

from dpgauss import __version__, _cli
from dpgauss._cli import main
from dpgauss.demo import report
from dpgauss.demo.report import CSV_FIELDS, DEMO_RHOS


def test_main_version(capsys):
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == __version__


def test_dash_dash_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"dpgauss {__version__}\n"


def test_python_dash_m_runs_the_demo():
    result = subprocess.run(
        [sys.executable, "-m", "dpgauss"], capture_output=True, text=True, check=True
    )
    assert "dpgauss" in result.stdout
    assert "PrivateCovariance" in result.stdout
    # stderr is a pipe, not a terminal: no progress lines
    assert "dpgauss demo [" not in result.stderr
    # Utility warnings come as one note per estimator and section, not a page.
    assert "UtilityWarning" not in result.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One ``dpgauss`` run with every demo option (shared: a demo takes seconds)."""
    folder = tmp_path_factory.mktemp("demo")
    argv = ["--rho", "5", "0.5", "5", "--progress"]
    argv += ["--csv", str(folder / "rows.csv")]
    if importlib.util.find_spec("matplotlib") is not None:  # an optional extra
        argv += ["--plot", str(folder / "sweep.png")]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return SimpleNamespace(
        status=status, out=out.getvalue(), err=err.getvalue(), folder=folder
    )


def test_rho_sets_the_budgets_of_the_covariance_sweep(run):
    assert run.status == 0
    table = run.out.split("\n\n")[0].splitlines()[4:]
    assert len(table) == 6  # 3 estimators at rho = 0.5 and 5 (sorted, no repeat)
    assert [line.split()[1] for line in table if "Tail" in line] == ["0.5", "5"]
    # the later sections keep rho = 0.5; the total is 3 * 5.5 + 9 * 0.5
    assert "PrivateGaussianEstimator() mean          rho=0.5" in run.out
    assert "Shared budget: spent rho=21 over" in run.out
    assert run.out.count("Verdict: ") == 12


def test_progress_lines_go_to_stderr_only(run):
    lines = run.err.splitlines()
    assert [line.split("] ")[1][:3] for line in lines] == [
        "1/6",
        "1/6",
        "2/6",
        "3/6",
        "4/6",  # the regression section's two fits
        "4/6",
        "5/6",
        "6/6",
        "don",
    ]
    assert all(line.startswith("dpgauss demo [") for line in lines)
    assert "dpgauss demo [" not in run.out


def test_csv_has_one_row_per_printed_result(run):
    with open(run.folder / "rows.csv", newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        rows = list(reader)
    assert tuple(reader.fieldnames) == CSV_FIELDS
    # 3 covariance estimators x 2 budgets, then 3 + 2 + 4 + 1 + 3 in later sections
    assert len(rows) == 3 * 2 + 13
    assert f"Wrote {len(rows)} result rows to " in run.out
    first = rows[0]
    assert first["section"] == "covariance"
    assert first["estimator"] == "TailSensitiveCovariance()"
    assert first["metric"] == "rel_frobenius_error"
    assert float(first["rho"]) == 0.5
    assert first["nonprivate"] == ""  # measured against the non-private result
    assert all(float(row["delta"]) == 1e-6 for row in rows)
    for row in rows:
        for key in ("rho", "value", "epsilon", "seconds"):
            float(row[key])
    printed = [line for line in run.out.splitlines() if "private 0." in line]
    gaussian = [row["value"] for row in rows if row["section"] == "gaussian"]
    assert [f"{float(value):.3f}" for value in gaussian] == [
        line.split("private ")[1].split()[0] for line in printed[:3]
    ]


def test_csv_dash_writes_the_rows_to_stdout_and_the_report_to_stderr(fake_demo, capsys):
    assert main(["--csv", "-"]) == 0
    assert fake_demo[0]["out"] is sys.stderr
    lines = capsys.readouterr().out.splitlines()
    assert lines == [",".join(CSV_FIELDS), "covariance,A,1.0,m,0.5,,2.0,1e-06,0.1"]


def test_csv_into_a_missing_folder_is_a_parse_error(fake_demo, capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["--csv", str(tmp_path / "nowhere" / "rows.csv")])
    assert "argument --csv: no such directory: " in capsys.readouterr().err
    assert fake_demo == []


def test_plot_saves_a_png(run):
    pytest.importorskip("matplotlib")
    figure = run.folder / "sweep.png"
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert figure.stat().st_size > 10_000
    assert f"Wrote the utility-versus-budget figure to {figure}." in run.out


def test_plot_without_matplotlib_says_how_to_install_it(
    fake_demo, capsys, monkeypatch, tmp_path
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    with pytest.raises(SystemExit) as exit_info:
        main(["--plot", str(tmp_path / "sweep.png")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --plot: the figure needs matplotlib" in err
    assert "pip install 'dpgauss[plot]'" in err
    assert fake_demo == []  # refused before the demo runs


@pytest.mark.parametrize("name", ["sweep.jpg", "sweep", "-"])
def test_plot_needs_a_known_extension(fake_demo, capsys, name):
    with pytest.raises(SystemExit):
        main(["--plot", name])
    assert "does not end in .png, .pdf, .svg" in capsys.readouterr().err
    assert fake_demo == []


@pytest.fixture
def fake_demo(monkeypatch):
    """Replace the demo by a stub that records its arguments (for parsing tests)."""
    calls = []

    def record(**kwargs):
        calls.append(kwargs)
        return [report.row("covariance", "A", 1.0, "m", 0.5, None, 2.0, 0.1)]

    monkeypatch.setattr(_cli, "demo", record)
    return calls


@pytest.mark.parametrize(
    ("argv", "seed", "rhos"),
    [
        ([], 0, list(DEMO_RHOS)),
        (["demo"], 0, list(DEMO_RHOS)),
        (["--seed", "3"], 3, list(DEMO_RHOS)),  # options alone mean `demo`
        (["--rho", "2", "1e-3"], 0, [2.0, 1e-3]),
        (["demo", "--rho", "1e-12", "1e12"], 0, [1e-12, 1e12]),
    ],
)
def test_demo_options_reach_the_demo(fake_demo, argv, seed, rhos):
    assert main(argv) == 0
    (call,) = fake_demo
    assert call["seed"] == seed
    assert call["rhos"] == rhos
    assert call["progress"] is None  # stderr is not a terminal under pytest


def test_progress_can_be_forced_either_way(fake_demo, monkeypatch):
    main(["--progress"])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main([])
    main(["--no-progress"])
    assert [call["progress"] for call in fake_demo] == [sys.stderr, sys.stderr, None]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "a budget must be positive and finite, got '0'"),
        ("-1", "a budget must be positive and finite, got '-1'"),
        ("nan", "a budget must be positive and finite, got 'nan'"),
        ("inf", "a budget must be positive and finite, got 'inf'"),
        ("abc", "not a number: 'abc'"),
        ("1e13", "1e13 is outside [1e-12, 1e+12]"),
    ],
)
def test_bad_budgets_are_parse_errors(fake_demo, capsys, value, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--rho", "1", value])
    assert exit_info.value.code == 2
    assert f"argument --rho: {message}" in capsys.readouterr().err
    assert fake_demo == []
