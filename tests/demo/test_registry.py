"""The demo's sections, their order, the shared budget and the demo's close."""

from dpgauss.demo import SECTIONS


def test_sections_run_in_registry_order(demo_run):
    assert list(demo_run.sections) == [
        "covariance",
        "gaussian",
        "mixture",
        "subsample",
        "product",
        "workflow",
    ]
    assert [section.SECTION for section in SECTIONS] == list(demo_run.sections)


def test_shared_budget_is_spent_and_a_further_fit_refused(demo_run):
    text = demo_run.text
    assert "Shared budget: spent rho=37.3" in text
    assert text.count("Verdict: ") == 11
    assert "A further fit is refused before it reads the data" in text
    assert all(row["seconds"] > 0 for row in demo_run.rows)
