"""The covariance sweep on digits and its verdicts."""

from dpgauss.demo.covariance import covariance_verdict
from dpgauss.demo.report import DEMO_RHOS


def test_sweep_prints_error_and_privacy_per_budget(demo_run):
    text = demo_run.text
    covariance = demo_run.sections["covariance"]
    labels = sorted({row["estimator"] for row in covariance})
    assert len(labels) == 3
    assert sorted({row["rho"] for row in covariance}) == list(DEMO_RHOS)
    assert "epsilon at delta=1e-6" in text
    # One verdict per estimator, computed from its rows.
    for label in labels:
        assert text.count(f"Verdict: {label}: ") == 1
    assert (
        "Verdict: TailSensitiveCovariance(): within 10% of the non-private "
        "covariance from rho = 10; the lowest error at every rho." in text
    )
    for label in labels:  # more budget, less error, larger epsilon
        errors = [row["value"] for row in covariance if row["estimator"] == label]
        assert errors[0] > errors[-1]
        epsilons = [row["epsilon"] for row in covariance if row["estimator"] == label]
        assert epsilons == sorted(epsilons)


def test_covariance_verdict_is_computed_from_the_rows():
    def rows(label, errors):
        return [
            {"section": "covariance", "estimator": label, "rho": rho, "value": e}
            for rho, e in zip((0.1, 1.0, 10.0), errors, strict=True)
        ]

    table = rows("A", [0.5, 0.08, 0.04]) + rows("B", [0.09, 0.12, 0.08])
    assert covariance_verdict(table, "A") == (
        "within 10% of the non-private covariance from rho = 1; "
        "1.0-5.6x the lowest error at the same rho."
    )
    # below 0.1 at rho = 0.1 and 10 but not at 1: "from" means from there on
    assert covariance_verdict(table, "B").startswith(
        "within 10% of the non-private covariance from rho = 10;"
    )
    table = rows("A", [0.5, 0.3, 0.2]) + rows("B", [1.0, 0.6, 0.4])
    assert covariance_verdict(table, "A") == (
        "not within 10% of the non-private covariance at any rho tried (at best "
        "0.200, at rho = 10); the lowest error at every rho."
    )
    assert covariance_verdict(table, "B").endswith(
        "; 2.0x the lowest error at the same rho."
    )
