"""The gallery's examples are well formed (fast: nothing is executed).

Each ``examples/plot_*.py`` must compile and open with a sphinx-gallery header:
a docstring whose first line is the title, underlined with ``=`` of the same
length, then a paragraph. Running them is the slow suite's job
(``tests/test_docs_build.py``).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))


def test_the_gallery_exists():
    assert len(EXAMPLES) >= 8
    readme = (ROOT / "examples" / "README.txt").read_text(encoding="utf-8")
    lines = [line for line in readme.splitlines() if line and not line[0] == "."]
    assert lines[1] == "=" * len(lines[0])  # sphinx-gallery needs a title
    assert "auto_examples/index" in (ROOT / "docs" / "index.rst").read_text()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_compiles_and_has_a_title(example):
    source = example.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(example))
    compile(tree, str(example), "exec")
    docstring = ast.get_docstring(tree, clean=False)
    assert docstring is not None, f"{example.name} has no module docstring"
    lines = docstring.strip("\n").splitlines()
    assert len(lines) >= 4, f"{example.name}: a title, its underline, a paragraph"
    title, underline = lines[0], lines[1]
    assert title, f"{example.name}: empty title"
    assert title.strip() == title, f"{example.name}: title with spaces around it"
    assert underline == "=" * len(title), f"{example.name}: underline the title"
    assert lines[2] == "", f"{example.name}: a blank line after the title"
    assert lines[3].strip(), f"{example.name}: no description"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_is_seeded_and_plain(example):
    """No unseeded generator, and no dependence on sphinx-gallery."""
    tree = ast.parse(example.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in {"default_rng", "RandomState"}:
                assert node.args, f"{example.name}: unseeded {name}() at {node.lineno}"
            for keyword in node.keywords:
                if keyword.arg == "random_state":
                    value = keyword.value
                    assert not (
                        isinstance(value, ast.Constant) and value.value is None
                    ), f"{example.name}: random_state=None at line {node.lineno}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            module = getattr(node, "module", None) or ""
            assert not any(n.startswith("sphinx_gallery") for n in [*names, module]), (
                f"{example.name} imports sphinx_gallery"
            )
