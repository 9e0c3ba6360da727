"""The ``dpgauss`` command (the README's main job)."""

import contextlib
import csv
import importlib.util
import io
import subprocess
import sys
from types import SimpleNamespace

import pytest

from dpgauss import __version__, _cli
from dpgauss._cli import (
    CSV_FIELDS,
    DEMO_RHOS,
    ROW_FIELDS,
    _covariance_verdict,
    demo,
    main,
)


def test_demo_prints_error_and_privacy_per_budget():
    out = io.StringIO()
    rows = demo(seed=0, out=out)
    text = out.getvalue()
    assert all(tuple(row) == ROW_FIELDS for row in rows)
    sections = {}
    for row in rows:
        sections.setdefault(row["section"], []).append(row)
    assert list(sections) == [
        "covariance",
        "gaussian",
        "mixture",
        "subsample",
        "product",
        "workflow",
    ]
    covariance = sections["covariance"]
    labels = sorted({row["estimator"] for row in covariance})
    assert len(labels) == 3
    assert sorted({row["rho"] for row in covariance}) == list(DEMO_RHOS)
    assert "epsilon at delta=1e-6" in text
    assert "Shared budget: spent rho=37.3" in text
    # The no-hint Gaussian section: mean and covariance within 1.5 times the
    # non-private errors (measured 1.00-1.01 at n = 20,000, d = 5, rho = 0.5).
    gaussian = sections["gaussian"]
    assert len(gaussian) == 3
    for row in gaussian:
        assert row["value"] < 1.5 * row["nonprivate"]
    # The mixture section: within 0.1 nats of the non-private fit and well
    # above the public rows alone (measured -12.364, -12.363 and -13.44).
    ours, public_only = sections["mixture"]
    assert ours["value"] > ours["nonprivate"] - 0.1
    assert public_only["value"] < ours["value"] - 0.5
    assert public_only["rho"] == public_only["epsilon"] == 0.0
    # SubsampleAggregate(LinearRegression()): n = 30,000, d = 5, 1200 groups of
    # 25 rows at rho = 0.5 (measured 0.0228 to the truth, 0.0070 to the
    # non-private fit, which is 0.0179 from the truth). The aggregate's own
    # noise and the candidates' spread add about 1/sqrt(k) relative error.
    truth, to_full = sections["subsample"]
    assert truth["metric"] == "coef_l2_error_to_truth"
    assert truth["value"] < 2.0 * truth["nonprivate"]
    assert to_full["value"] < 0.05
    assert "1200 groups of 25 rows" in text
    # PrivateProductDistribution: Hellinger distance within twice the
    # non-private one (measured 0.0512 against 0.0350; bench_product's target).
    (pp,) = sections["product"]
    assert pp["value"] < 2.0 * pp["nonprivate"]
    # One verdict per estimator, computed from its rows (not the public-only
    # baseline of the mixture section).
    for label in [*labels, "PrivateGaussianEstimator()", "PrivateMean()"]:
        assert text.count(f"Verdict: {label}: ") == 1
    # What users do next: the classifier within 0.06 of scikit-learn's test
    # accuracy (measured 0.917-0.924 against 0.953 over seeds 0-3), the PCA
    # capturing at least 80% (0.981-0.985 over seeds 0-3 with its default,
    # method="tail"; 0.53-0.60 with "gauss") and the envelope's AUC within 0.15 of
    # the non-private Mahalanobis distance's (0.766-0.799 against 0.857).
    lda, pca, env = sections["workflow"]
    assert lda["value"] > lda["nonprivate"] - 0.06
    assert pca["value"] > 0.8
    assert env["value"] > env["nonprivate"] - 0.15
    assert text.count("Verdict: ") == 11
    assert (
        "Verdict: TailSensitiveCovariance(): within 10% of the non-private "
        "covariance from rho = 10; the lowest error at every rho." in text
    )
    assert "A further fit is refused before it reads the data" in text
    for label in labels:  # more budget, less error, larger epsilon
        errors = [row["value"] for row in covariance if row["estimator"] == label]
        assert errors[0] > errors[-1]
        epsilons = [row["epsilon"] for row in covariance if row["estimator"] == label]
        assert epsilons == sorted(epsilons)
    assert all(row["seconds"] > 0 for row in rows)


def test_covariance_verdict_is_computed_from_the_rows():
    def rows(label, errors):
        return [
            {"section": "covariance", "estimator": label, "rho": rho, "value": e}
            for rho, e in zip((0.1, 1.0, 10.0), errors, strict=True)
        ]

    table = rows("A", [0.5, 0.08, 0.04]) + rows("B", [0.09, 0.12, 0.08])
    assert _covariance_verdict(table, "A") == (
        "within 10% of the non-private covariance from rho = 1; "
        "1.0-5.6x the lowest error at the same rho."
    )
    # below 0.1 at rho = 0.1 and 10 but not at 1: "from" means from there on
    assert _covariance_verdict(table, "B").startswith(
        "within 10% of the non-private covariance from rho = 10;"
    )
    table = rows("A", [0.5, 0.3, 0.2]) + rows("B", [1.0, 0.6, 0.4])
    assert _covariance_verdict(table, "A") == (
        "not within 10% of the non-private covariance at any rho tried (at best "
        "0.200, at rho = 10); the lowest error at every rho."
    )
    assert _covariance_verdict(table, "B").endswith(
        "; 2.0x the lowest error at the same rho."
    )


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
    # the later sections keep rho = 0.5; the total is 3 * 5.5 + 8 * 0.5
    assert "PrivateGaussianEstimator() mean          rho=0.5" in run.out
    assert "Shared budget: spent rho=20.5 over" in run.out
    assert run.out.count("Verdict: ") == 11


def test_progress_lines_go_to_stderr_only(run):
    lines = run.err.splitlines()
    assert [line.split("] ")[1][:3] for line in lines] == [
        "1/6",
        "1/6",
        *(f"{i}/6" for i in range(2, 7)),
        "don",
    ]
    assert all(line.startswith("dpgauss demo [") for line in lines)
    assert "dpgauss demo [" not in run.out


def test_csv_has_one_row_per_printed_result(run):
    with open(run.folder / "rows.csv", newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        rows = list(reader)
    assert tuple(reader.fieldnames) == CSV_FIELDS
    # 3 covariance estimators x 2 budgets, then 3 + 2 + 2 + 1 + 3 in later sections
    assert len(rows) == 3 * 2 + 11
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


@pytest.mark.parametrize(("name", "magic"), [("f.svg", b"<?xml"), ("f.PDF", b"%PDF")])
def test_plot_format_follows_the_extension(tmp_path, name, magic):
    pytest.importorskip("matplotlib")
    rows = [
        _cli._row("covariance", label, rho, "m", error, None, 2 * rho, 0.1)
        for label, errors in (("A", (0.5, 0.2)), ("B", (0.9, 0.4)))
        for rho, error in zip((0.1, 1.0), errors, strict=True)
    ]
    rows.append(_cli._row("gaussian", "C", 0.5, "m", 0.1, 0.1, 1.0, 0.1))
    _cli.plot_sweep(rows, tmp_path / name)
    assert (tmp_path / name).read_bytes().startswith(magic)


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
        return [_cli._row("covariance", "A", 1.0, "m", 0.5, None, 2.0, 0.1)]

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
