"""The Sphinx site, gallery included, builds offline with warnings as errors.

Needs the docs extra (sphinx, numpydoc, sphinx-gallery, matplotlib). The build
runs on a copy of ``docs/``, ``examples/``, the changelog and the benchmarks'
figures in a temporary directory, so every example is executed afresh
(sphinx-gallery skips examples whose generated copy is up to date) and the
checkout is left untouched.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))


def _environment():
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    # dpgauss from this checkout, whatever is installed.
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return env


def test_sphinx_build(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("sphinx_gallery")
    pytest.importorskip("matplotlib")
    source = tmp_path / "src"
    shutil.copytree(
        ROOT / "docs",
        source / "docs",
        ignore=shutil.ignore_patterns(
            "_build", "generated", "auto_examples", "sg_execution_times.rst"
        ),
    )
    shutil.copytree(ROOT / "examples", source / "examples")
    shutil.copy(ROOT / "CHANGELOG.md", source / "CHANGELOG.md")
    # The benchmarks' figures that user-guide pages show (``.. image::``).
    results = source / "benchmarks" / "results"
    results.mkdir(parents=True)
    for figure in (ROOT / "benchmarks" / "results").glob("*.png"):
        shutil.copy(figure, results / figure.name)
    out = tmp_path / "html"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-q",
            "-W",
            "-b",
            "html",
            source / "docs",
            out,
        ],
        capture_output=True,
        text=True,
        env=_environment(),
    )
    assert result.returncode == 0, result.stderr
    assert (out / "api" / "generated" / "dpgauss.PrivateCovariance.html").exists()

    # The gallery: an index, one page per example, and their figures.
    assert EXAMPLES
    assert (out / "auto_examples" / "index.html").exists()
    for example in EXAMPLES:
        page = out / "auto_examples" / f"{example.stem}.html"
        assert page.exists(), f"no gallery page for {example.name}"
        assert list((out / "_images").glob(f"sphx_glr_{example.stem}_*.png")), (
            f"{example.name} produced no figure"
        )
    # Every example ran in this build (none was skipped as up to date), and each
    # well within the 30 s allowed on one core.
    times = (source / "docs" / "auto_examples" / "sg_execution_times.rst").read_text()
    ran = dict(re.findall(r"``(plot_\w+\.py)``\)\n\s+- (\d\d:\d\d\.\d+)", times))
    assert sorted(ran) == [e.name for e in EXAMPLES]
    for name, clock in ran.items():
        minutes, seconds = clock.split(":")
        assert 60 * int(minutes) + float(seconds) < 30, f"{name} took {clock}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_as_a_plain_script(example, tmp_path):
    """Each example runs with plain Python, sphinx-gallery made unimportable."""
    pytest.importorskip("matplotlib")
    code = (
        "import runpy, sys; sys.modules['sphinx_gallery'] = None; "
        f"runpy.run_path({str(example)!r}, run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_environment(),
    )
    assert result.returncode == 0, result.stderr
