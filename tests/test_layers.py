"""The import layers hold: import-linter checks the contracts in pyproject.toml.

utils → accounting → mechanisms → releases → base → the estimator families →
model_selection → the demo and CLI, with ``testing`` on top, and a family never
imports another family's private modules. A broken contract fails the test with
import-linter's report, which names each forbidden import and its line.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpgauss.testing.discovery import all_estimators

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]

# The checked-out dpgauss first, whatever is installed; --no-cache leaves no
# cache directory behind in the checkout.
_LINT = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "lint_imports_command(['--no-cache', sys.argv[1]])"
)


def _contracts():
    with open(ROOT / "pyproject.toml", "rb") as f:
        config = tomllib.load(f)["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def test_import_contracts_are_kept():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )
    done = subprocess.run(
        [sys.executable, "-c", _LINT, str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_family_is_in_the_family_layer_and_keeps_its_privates():
    """A new estimator family is layered and its private modules guarded."""
    contracts = _contracts()
    families = next(
        layer for layer in contracts["layers"]["layers"] if "covariance" in layer
    )
    layered = {name.strip().strip("()") for name in families.split(":")}
    guarded = set(contracts["family-privacy"]["packages_with_private_modules"])
    for name, cls in all_estimators():
        family = cls.__module__.split(".")[1]
        assert family in layered, f"{name}'s package {family} is in no family layer"
        assert f"dpgauss.{family}" in guarded, f"{family}'s privates are unguarded"
