#!/usr/bin/env python3
"""The project's two commands, with all set-up done on the way.

    python3 dev.py demo    # the main job: the dpgauss demonstration
    python3 dev.py test    # lint and the default test suite (what CI runs)

Both create ``.venv`` beside this file on first use (standard library ``venv``),
install dpgauss into it from this checkout with pip (``.[tests]`` for the tests),
and reinstall only when ``pyproject.toml`` changes. Extra arguments after ``--``
go to pytest (``python3 dev.py test -- -m slow``) or to ``dpgauss demo``.
Needs only Python >= 3.10 with pip; packages come from PyPI.
"""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTEST_NO_TESTS = 5
# Two pytest-xdist workers (CI has two cores); worksteal rebalances the long
# audits. Arguments after ``--`` come later and win (``-- -n 0`` runs serially,
# as recording the release battery needs: each worker would write its own part).
PYTEST_WORKERS = ["-n", "2", "--dist", "worksteal"]


def _venv_python():
    scripts = "Scripts" if os.name == "nt" else "bin"
    suffix = ".exe" if os.name == "nt" else ""
    return VENV / scripts / f"python{suffix}"


def _ensure_installed(extras):
    """Create the virtual environment and install dpgauss[extras] if needed."""
    spec = f".[{extras}]" if extras else "."
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + spec.encode())
    stamp = VENV / f".installed-{extras or 'base'}"
    python = _venv_python()
    if stamp.exists() and stamp.read_text() == digest.hexdigest() and python.exists():
        return python
    if not python.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=False).create(VENV)
    print(f"dev.py: installing dpgauss{spec[1:]} into {VENV}", flush=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True, cwd=ROOT)
    subprocess.run([*pip, "-e", spec], check=True, cwd=ROOT)
    stamp.write_text(digest.hexdigest())
    return python


def _run(cmd):
    print("dev.py: $ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def demo(args):
    """Run the dpgauss demonstration (with matplotlib when --plot asks for it)."""
    plot = any(arg == "--plot" or arg.startswith("--plot=") for arg in args)
    python = _ensure_installed("plot" if plot else "")
    return _run([python, "-m", "dpgauss", "demo", *args])


def test(args):
    """Lint, then run the default test suite (slow tests deselected)."""
    python = _ensure_installed("tests")
    for lint in (["check", "."], ["format", "--check", "."]):
        status = _run([python, "-m", "ruff", *lint])
        if status:
            return status
    status = _run([python, "-m", "pytest", *PYTEST_WORKERS, *args])
    if status == PYTEST_NO_TESTS:
        print("dev.py: pytest collected no tests; that is a failure.", flush=True)
    return status


def main(argv):
    commands = {"demo": demo, "test": test}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    rest = argv[1:]
    if rest and rest[0] == "--":
        rest = rest[1:]
    return commands[argv[0]](rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
