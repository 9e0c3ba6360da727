"""The ``dpgauss`` command (the README's main job)."""

import io
import subprocess
import sys

from dpgauss import __version__
from dpgauss._cli import DEMO_RHOS, demo, main


def test_demo_prints_error_and_privacy_per_budget():
    out = io.StringIO()
    rows = demo(seed=0, out=out)
    text = out.getvalue()
    mixture = [row for row in rows if "loglik" in row]
    gaussian = [row for row in rows if "exact" in row]
    rows = [row for row in rows if "exact" not in row and "loglik" not in row]
    labels = sorted({row["estimator"] for row in rows})
    assert len(labels) == 3
    assert sorted({row["rho"] for row in rows}) == list(DEMO_RHOS)
    assert "epsilon at delta=1e-6" in text
    assert "Shared budget: spent rho=34.8" in text
    # The no-hint Gaussian section: mean and covariance within 1.5 times the
    # non-private errors (measured 1.00-1.01 at n = 20,000, d = 5, rho = 0.5).
    assert len(gaussian) == 3
    for row in gaussian:
        assert row["error"] < 1.5 * row["exact"]
    # The mixture section: within 0.1 nats of the non-private fit and well
    # above the public rows alone (measured -12.364, -12.363 and -13.44).
    ours, public_only = mixture
    assert ours["loglik"] > ours["exact_loglik"] - 0.1
    assert public_only["loglik"] < ours["loglik"] - 0.5
    assert "A further fit is refused before it reads the data" in text
    for label in labels:  # more budget, less error, larger epsilon
        errors = [row["error"] for row in rows if row["estimator"] == label]
        assert errors[0] > errors[-1]
        epsilons = [row["epsilon"] for row in rows if row["estimator"] == label]
        assert epsilons == sorted(epsilons)


def test_main_version(capsys):
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == __version__


def test_python_dash_m_runs_the_demo():
    result = subprocess.run(
        [sys.executable, "-m", "dpgauss"], capture_output=True, text=True, check=True
    )
    assert "dpgauss" in result.stdout
    assert "PrivateCovariance" in result.stdout
