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
    subsample = [row for row in rows if "error_truth" in row]
    product = [row for row in rows if "hellinger" in row]
    sections = ("exact", "loglik", "error_truth", "hellinger")
    rows = [row for row in rows if not any(key in row for key in sections)]
    labels = sorted({row["estimator"] for row in rows})
    assert len(labels) == 3
    assert sorted({row["rho"] for row in rows}) == list(DEMO_RHOS)
    assert "epsilon at delta=1e-6" in text
    assert "Shared budget: spent rho=35.8" in text
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
    # SubsampleAggregate(LinearRegression()): n = 30,000, d = 5, 1200 groups of
    # 25 rows at rho = 0.5 (measured 0.0228 to the truth, 0.0070 to the
    # non-private fit, which is 0.0179 from the truth). The aggregate's own
    # noise and the candidates' spread add about 1/sqrt(k) relative error.
    (sa,) = subsample
    assert sa["error_truth"] < 2.0 * sa["nonprivate_truth"]
    assert sa["error_full"] < 0.05
    assert "1200 groups of 25 rows" in text
    # PrivateProductDistribution: Hellinger distance within twice the
    # non-private one (measured 0.0512 against 0.0350; bench_product's target).
    (pp,) = product
    assert pp["hellinger"] < 2.0 * pp["exact_hellinger"]
    assert text.count("Verdict:") == 2
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
