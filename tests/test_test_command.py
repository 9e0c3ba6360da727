"""The test command itself: no wall-clock deadlines, a short summary, no
skipped plot tests (issue 29: it failed on a loaded machine, listed about
100 xfail reasons and skipped the plot tests)."""

import os

import pytest
from hypothesis import settings

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_property_tests_have_no_deadline():
    # The profile the suite loads (tests/conftest.py), whichever is chosen.
    assert settings().deadline is None
    for name in ("ci", "explore"):
        assert settings.get_profile(name).deadline is None


def test_the_summary_lists_failures_and_errors_only():
    addopts = _pyproject()["tool"]["pytest"]["ini_options"]["addopts"]
    summary = [a for a in addopts if a.startswith("-r")]
    assert summary == ["-rfE"]


def test_the_plot_tests_have_their_dependency():
    extra = _pyproject()["project"]["optional-dependencies"]["tests"]
    assert any(dep.startswith("matplotlib") for dep in extra)
