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
    assert "Shared budget: spent rho=37.8" in text
    assert text.count("Verdict: ") == 12
    assert "A further fit is refused before it reads the data" in text
    assert all(row["seconds"] > 0 for row in demo_run.rows)


def test_the_total_is_put_in_context(demo_run):
    # The demo's total (rho 37.8, epsilon 81.7 at delta 1e-6) is a sum over many
    # demonstration fits; the line after it says so, with the number of fits
    # (one per distinct fit id in the ledger), the largest sweep fit on its own
    # and where a real study is shown.
    lines = demo_run.text.splitlines()
    total = next(i for i, line in enumerate(lines) if line.startswith("Shared budget"))
    context = lines[total + 1]
    assert context.startswith("In context: this total adds up 18 independent ")
    assert "(the largest, rho=10, is epsilon=32.2 on its own)" in context
    assert "A real study fixes one total in advance" in context
    assert "docs/tutorial.rst" in context
    assert lines[total + 2] == "Ledger:"


def test_getting_started_quotes_the_demo_fit_count(demo_run):
    # The demo counts its fits from the ledger; Getting started quotes it.
    import re
    from pathlib import Path

    fits = re.search(r"this total adds up (\d+) independent", demo_run.text)[1]
    page = Path(__file__).resolve().parents[2] / "docs" / "getting_started.rst"
    text = " ".join(page.read_text(encoding="utf-8").split())
    assert f"the sum of {fits} demonstration fits" in text
