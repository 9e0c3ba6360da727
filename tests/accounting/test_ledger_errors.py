"""Every failure to use the ledger is a LedgerError naming the file and the fix.

No public method of PrivacyBudget lets a raw ``sqlite3.Error`` escape: a
read-only file or folder, a lock held beyond the timeout, a missing file or
folder, and a file that is not a ledger each have their own message.
"""

import os
import re
import shutil
import sqlite3
import tempfile
import traceback
import warnings
from pathlib import Path

import pytest

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP
from dpgauss.accounting import _ledger as ledger_storage
from dpgauss.exceptions import LedgerError

_NOBODY = 65534

PUBLIC_METHODS = {
    "check": lambda b: b.check(ZCDP(0.1)),
    "spend": lambda b: b.spend(ZCDP(0.1)),
    "spend_many": lambda b: b.spend_many([(ZCDP(0.1), "m")]),
    "ledger": lambda b: b.ledger(),
    "spent": lambda b: b.spent(),
    "remaining": lambda b: b.remaining(),
    "format_ledger": lambda b: b.format_ledger(),
    "verify": lambda b: b.verify(),
}


@pytest.fixture
def folder():
    """A fresh folder any user may enter (permission tests drop root)."""
    path = Path(tempfile.mkdtemp(prefix="dpgauss-ledger-errors-"))
    path.chmod(0o777)
    yield path
    path.chmod(0o755)
    shutil.rmtree(path)


def _unprivileged(scenario):
    """Run ``scenario()`` without root's power to ignore permissions.

    As root, in a forked child that drops to user and group 65534; otherwise in
    this process. Returns what ``scenario`` returns, as text.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return str(scenario())
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
            text = str(scenario())
        except BaseException:
            text = "ERROR " + traceback.format_exc()
        os.write(write, text.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    return text


def _refusal(action):
    """Return ``action()``'s LedgerError message; any other outcome is a failure."""
    try:
        action()
    except LedgerError as exc:
        return f"LedgerError: {exc}"
    except Exception as exc:  # reported to the parent as text
        return f"wrong exception {type(exc).__name__}: {exc}"
    return "no error"


def _ledger(folder, spent=0.25):
    path = folder / "ledger.sqlite"
    PrivacyBudget(rho=1.0, path=path).spend(ZCDP(spent))
    return path


def test_read_only_file(folder):
    path = _ledger(folder)
    path.chmod(0o444)

    def scenario():
        budget = PrivacyBudget(rho=1.0, path=path)  # opening only reads
        return f"{budget.spent()} | {_refusal(lambda: budget.spend(ZCDP(0.1)))}"

    text = _unprivileged(scenario)
    assert text.startswith("rho=0.25 | LedgerError: "), text
    assert re.search(
        rf"{re.escape(repr(str(path)))} is read-only, so no spend can be recorded "
        r".*Make the file writable \(chmod u\+w\), or give PrivacyBudget\(\.\.\., "
        r"path=\.\.\.\)",
        text,
    ), text
    path.chmod(0o644)
    assert len(PrivacyBudget(rho=1.0, path=path).ledger()) == 1


def test_read_only_folder(folder):
    path = _ledger(folder)
    path.chmod(0o666)
    folder.chmod(0o555)

    def scenario():
        budget = PrivacyBudget(rho=1.0, path=path)
        spend = _refusal(lambda: budget.spend(ZCDP(0.1)))
        create = _refusal(lambda: PrivacyBudget(rho=1.0, path=folder / "new.sqlite"))
        return f"{budget.spent()} | {spend} | {create}"

    spent, spend, create = _unprivileged(scenario).split(" | ")
    assert spent == "rho=0.25", spent
    folder_text = re.escape(repr(str(folder)))
    assert re.search(
        rf"cannot be written: its folder {folder_text} is read-only, and SQLite must "
        r"create the ledger's journal \(ledger\.sqlite-journal\) .*Make the folder "
        r"writable, or give PrivacyBudget\(\.\.\., path=\.\.\.\)",
        spend,
    ), spend
    assert re.search(
        rf"new\.sqlite' cannot be created: its folder {folder_text} is read-only",
        create,
    ), create
    folder.chmod(0o777)
    assert not (folder / "new.sqlite").exists()
    assert len(PrivacyBudget(rho=1.0, path=path).ledger()) == 1


@pytest.fixture
def short_timeout(monkeypatch):
    monkeypatch.setattr(ledger_storage, "_TIMEOUT", 0.05)


@pytest.fixture
def locked(folder, short_timeout):
    """A ledger and a handle to it, while another connection holds it locked."""
    path = _ledger(folder)
    budget = PrivacyBudget(rho=1.0, path=path)
    budget.spent()  # the handle's own connection is open
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    yield budget
    other.execute("ROLLBACK")
    other.close()


def test_locked_beyond_the_timeout(locked):
    message = (
        rf"{re.escape(repr(locked.path))} stayed locked by another connection for "
        r"more than 0\.05 s, so nothing was recorded .*retry when it has finished"
    )
    with pytest.raises(LedgerError, match=message):
        locked.spend(ZCDP(0.1))
    with pytest.raises(LedgerError, match=message):
        PrivacyBudget(rho=1.0, path=locked.path)


def test_lock_released_spends_again(folder, short_timeout):
    path = _ledger(folder)
    budget = PrivacyBudget(rho=1.0, path=path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(LedgerError, match="stayed locked"):
        budget.spend(ZCDP(0.1))
    other.execute("ROLLBACK")
    budget.spend(ZCDP(0.1))
    assert budget.spent().rho == pytest.approx(0.35, rel=1e-15)
    assert budget.verify() == 2


@pytest.fixture
def missing(folder):
    path = _ledger(folder)
    budget = PrivacyBudget(rho=1.0, path=path)
    budget.spent()  # an open connection would still read the removed file
    path.unlink()
    return budget


def test_missing_file(missing):
    message = (
        rf"{re.escape(repr(missing.path))} is missing: it was moved or deleted .*"
        r"Put the file back, or give PrivacyBudget\(\.\.\., path=\.\.\.\)"
    )
    with pytest.raises(LedgerError, match=message):
        missing.spend(ZCDP(0.1))
    assert not os.path.exists(missing.path)  # never silently recreated


def test_missing_folder(folder):
    path = folder / "not-made-yet" / "ledger.sqlite"
    with pytest.raises(
        LedgerError,
        match=r"the folder .*not-made-yet' does not exist\. Create it, or give",
    ):
        PrivacyBudget(rho=1.0, path=path)


def test_a_folder_is_not_a_ledger(folder):
    with pytest.raises(LedgerError, match="is a folder, not a ledger file"):
        PrivacyBudget(rho=1.0, path=folder)


@pytest.fixture
def overwritten(folder):
    path = _ledger(folder)
    budget = PrivacyBudget(rho=1.0, path=path)
    budget.spent()
    path.write_text("not a database, just text " * 200)
    return budget


def test_not_a_database(overwritten):
    with pytest.raises(
        LedgerError,
        match=rf"{re.escape(repr(overwritten.path))} is not a dpgauss ledger, or is "
        r"damaged .*never writes into another file",
    ):
        overwritten.spend(ZCDP(0.1))
    assert Path(overwritten.path).read_text().startswith("not a database")


@pytest.mark.parametrize("state", ["locked", "missing", "overwritten"])
@pytest.mark.parametrize("method", sorted(PUBLIC_METHODS))
def test_no_public_method_lets_a_sqlite_error_escape(request, state, method):
    budget = request.getfixturevalue(state)
    with pytest.raises(LedgerError, match=re.escape(repr(budget.path))):
        PUBLIC_METHODS[method](budget)
