"""The Sphinx site builds offline with warnings as errors (needs the docs extra)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_sphinx_build(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    docs = Path(__file__).resolve().parent.parent / "docs"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-q",
            "-W",
            "-b",
            "html",
            str(docs),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "api" / "generated" / "dpgauss.PrivateCovariance.html").exists()
