"""The ``dpgauss`` command (the README's main job)."""

import io
import subprocess
import sys

from dpgauss import __version__
from dpgauss._cli import DEMO_RHOS, ROW_FIELDS, _covariance_verdict, demo, main


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
    ]
    covariance = sections["covariance"]
    labels = sorted({row["estimator"] for row in covariance})
    assert len(labels) == 3
    assert sorted({row["rho"] for row in covariance}) == list(DEMO_RHOS)
    assert "epsilon at delta=1e-6" in text
    assert "Shared budget: spent rho=35.8" in text
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
    assert text.count("Verdict: ") == 8
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


def test_python_dash_m_runs_the_demo():
    result = subprocess.run(
        [sys.executable, "-m", "dpgauss"], capture_output=True, text=True, check=True
    )
    assert "dpgauss" in result.stdout
    assert "PrivateCovariance" in result.stdout
