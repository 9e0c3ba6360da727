"""One demo run shared by the section tests (the whole demo takes seconds, and
each fit's noise depends on its place in the shared ledger, so the sections are
checked as the demo runs them)."""

import io
from types import SimpleNamespace

import pytest

from dpgauss._cli import demo


@pytest.fixture(scope="session")
def demo_run():
    """The demo at seed 0 and the default budgets: its printed text, its rows and
    the rows by section, in order."""
    out = io.StringIO()
    rows = demo(seed=0, out=out)
    sections = {}
    for row in rows:
        sections.setdefault(row["section"], []).append(row)
    return SimpleNamespace(text=out.getvalue(), rows=rows, sections=sections)
