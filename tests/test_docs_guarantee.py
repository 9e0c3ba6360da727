"""The numbers on docs/user_guide/guarantee.rst are the library's own.

The rho-against-epsilon table is parsed from the page and every cell is
recomputed with :func:`dpgauss.accounting.zcdp_to_approx`; the demo's total
and the US Census Bureau's certified figures quoted there are recomputed too.
A change of the conversion, of the demo's budgets or of the page fails here.
"""

import math
import re
from fractions import Fraction
from pathlib import Path

import pytest

from dpgauss.accounting import approx_to_zcdp, zcdp_to_approx

PAGE = Path(__file__).resolve().parent.parent / "docs" / "user_guide" / "guarantee.rst"


def _table(text, label):
    """The rows of the ``list-table`` after ``.. _label:``, as lists of cells."""
    start = text.index(f".. _{label}:")
    body = text[text.index(".. list-table::", start) :]
    rows = []
    for line in body.splitlines()[1:]:
        if line and not line.startswith(" "):
            break  # the table's indented block has ended
        cell = re.match(r"\s+(\*)?\s+- (.*)$", line)
        if cell is None:
            continue
        if cell.group(1):
            rows.append([])
        rows[-1].append(cell.group(2).strip())
    return rows


@pytest.fixture(scope="module")
def page():
    return PAGE.read_text(encoding="utf-8")


def test_rho_epsilon_table_is_the_library_conversion(page):
    header, *rows = _table(page, "rho-epsilon-table")
    assert header[0] == "rho"
    deltas = [float(cell.removeprefix("delta = ")) for cell in header[1:]]
    assert deltas == [1e-5, 1e-6, 1e-8, 1e-10]
    rhos = [float(row[0]) for row in rows]
    assert rhos == [0.005, 0.01, 0.05, 0.1, 0.125, 0.25, 0.5, 1, 2, 5]
    for row in rows:
        rho = float(row[0])
        assert len(row) == 1 + len(deltas)
        for delta, cell in zip(deltas, row[1:], strict=True):
            # Printed to 3 decimals: the cell is the rounded conversion.
            assert cell == f"{zcdp_to_approx(rho, delta):.3f}", (rho, delta)


def test_quoted_conversions(page):
    # Worked examples and inverse conversions quoted in the text.
    assert "rho = 0.0244" in page
    assert f"{approx_to_zcdp(1.0, 1e-6):.4f}" == "0.0244"
    assert "rho = 1.54" in page
    assert f"{approx_to_zcdp(10.0, 1e-6):.2f}" == "1.54"
    assert "epsilon 5.22" in page
    assert f"{zcdp_to_approx(0.5, 1e-6):.2f}" == "5.22"
    assert "epsilon 2.14 to 7.77" in page
    assert f"{zcdp_to_approx(0.1, 1e-6):.2f}" == "2.14"
    assert f"{zcdp_to_approx(1.0, 1e-6):.2f}" == "7.77"
    assert "epsilon 4.2 to\n    14.9 at delta = 1e-10" in page
    assert f"{zcdp_to_approx(0.2, 1e-10):.1f}" == "4.2"
    assert f"{zcdp_to_approx(2.0, 1e-10):.1f}" == "14.9"
    # The odds table: e^epsilon and the bound on a 1% prior.
    for epsilon, factor, posterior in [
        (0.1, "1.11", "1.1%"),
        (1, "2.72", "2.7%"),
        (2, "7.39", "6.9%"),
        (5, "148", "60%"),
        (10, "22,026", "99.6%"),
    ]:
        odds = math.exp(epsilon) / 99
        value = odds / (1 + odds) * 100
        digits = len(posterior.rstrip("%").partition(".")[2])
        assert f"{value:.{digits}f}%" == posterior
        assert factor in page
        assert posterior in page


def test_demo_total_in_context(page):
    # The demo charges every section to one budget of this total; the page
    # quotes it as rho and as epsilon at the demo's delta.
    from dpgauss.demo import SECTIONS
    from dpgauss.demo.report import DEMO_DELTA, DEMO_RHOS, GAUSSIAN_RHO

    total = sum(section.cost(DEMO_RHOS) for section in SECTIONS)
    assert DEMO_DELTA == 1e-6
    assert GAUSSIAN_RHO == 0.5
    assert sorted(DEMO_RHOS) == [0.1, 1.0, 10.0]
    assert f"rho = {total:.1f} in total" in page
    assert f"epsilon = {zcdp_to_approx(total, DEMO_DELTA):.2f} at" in page
    # Getting started quotes it too, with the number of fits.
    started = (PAGE.parents[1] / "getting_started.rst").read_text(encoding="utf-8")
    started = " ".join(started.split())
    epsilon = zcdp_to_approx(total, DEMO_DELTA)
    assert f"(rho {total:.1f}, epsilon {epsilon:.1f} at delta 1e-6)" in started


def test_census_certificates_reproduced():
    # The Census Bureau's certificates state rho exactly and the epsilon it
    # implies at delta = 1e-10 as a fraction, computed to a tolerance of 1e-7
    # (programs/engine/budget.py of their production code).
    cases = [
        (Fraction(293764, 114921), Fraction(17849145, 1041158)),  # US persons
        (Fraction(11417641, 152349649), Fraction(1455307, 588081)),  # US units
    ]
    for rho, epsilon in cases:
        assert zcdp_to_approx(float(rho), 1e-10) == pytest.approx(
            float(epsilon), abs=1e-7
        )
