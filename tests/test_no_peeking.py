"""No example computes bounds from the rows it privatises (issue 29, item 1).

The README, the docs, the gallery, the demo and the docstrings' examples take
bounds from a codebook, from the simulation's parameters or from
:class:`~dpgauss.PrivateBounds`; a line that assigns a bound (``bounds``,
``lower``, ``upper``, ``box``, ``data_norm``, ``norm``) from a reduction of
data (``.max(``, ``.min(``, ``np.percentile(`` ...) is the habit a newcomer
would copy, and fails here.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BOUND = r"\b(bounds|lower|upper|low|high|box|data_norm|norm|radius)\w*"
REDUCTION = r"(\.(max|min|ptp)\(|np\.(max|min|amax|amin|ptp|percentile|quantile)\()"
PEEK = re.compile(rf"{BOUND}\s*=[^=].*{REDUCTION}")


def _sources():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.rst"))
    yield from sorted((ROOT / "examples").glob("*.py"))
    yield from sorted((ROOT / "dpgauss" / "demo").glob("*.py"))
    # Docstring examples of the package (doctest lines only).
    for module in sorted((ROOT / "dpgauss").rglob("*.py")):
        if "demo" not in module.parts:
            yield module


def _lines(path):
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if (
            path.suffix == ".py"
            and "demo" not in path.parts
            and "examples" not in (path.parts)
        ):
            stripped = line.lstrip()
            if not stripped.startswith((">>>", "...")):
                continue
        yield number, line


def test_no_example_reads_its_bounds_off_the_rows():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        if "auto_examples" not in path.parts
        for number, line in _lines(path)
        if PEEK.search(line)
    ]
    assert not found, "bounds computed from data:\n" + "\n".join(found)


def test_the_pattern_catches_the_old_habit():
    # The canary: the lines the docs used to have.
    assert PEEK.search("   upper = np.ceil(X.max(axis=0) * 150) / 100")
    assert PEEK.search("   box = (X.min(axis=0), X.max(axis=0))")
    assert PEEK.search("data_norm = np.linalg.norm(X, axis=1).max()")
    assert not PEEK.search("ax.fill_between(rhos, acc.min(axis=1), acc.max(axis=1))")
    assert not PEEK.search("upper = np.array([120.0, 230.0, 300.0, 1.0])")
