"""The temporary ledger (path=None): who keeps it alive and who may remove it.

It belongs to the process that created it: it lives while a handle to it lives
there, only that process removes it, and a handle whose ledger is gone refuses
with a LedgerError that says why and what to do.
"""

import base64
import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateCovariance
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import LedgerError

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _run(script, *args):
    """Run ``script`` in a fresh interpreter; return its stdout lines."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")


def test_copies_in_the_creating_process_keep_it_alive():
    budget = PrivacyBudget(rho=1.0)
    path = budget.path
    copies = [pickle.loads(pickle.dumps(budget)) for _ in range(2)]
    del budget
    gc.collect()
    copies[0].spend(ZCDP(0.25))
    del copies[0]
    gc.collect()
    assert os.path.exists(path)
    assert copies[0].spent() == ZCDP(0.25)
    del copies[0]
    gc.collect()
    assert not os.path.exists(path)  # the last handle here removed it


def test_pickled_estimator_refits_after_its_budget_is_gone():
    # An estimator pickles its budget handle; loaded in the creating process
    # while the ledger lives, it keeps the ledger and can be refitted.
    X = np.random.default_rng(0).normal(size=(200, 3))
    budget = PrivacyBudget(rho=1.0)
    est = PrivateCovariance(rho=0.25, data_norm=5.0, budget=budget, random_state=0)
    est.fit(X)
    loaded = pickle.loads(pickle.dumps(est))
    del est, budget
    gc.collect()
    loaded.fit(X)
    assert loaded.budget.spent() == ZCDP(0.5)
    assert len({e.fit for e in loaded.budget.ledger()}) == 2


def test_pickle_loaded_after_the_ledger_is_gone_says_why_and_what_to_do():
    budget = PrivacyBudget(rho=1.0)
    budget.spend(ZCDP(0.5))
    blob = pickle.dumps(budget)
    del budget
    gc.collect()
    late = pickle.loads(blob)
    message = (
        r"is gone: it is a temporary ledger .* alive in the process that created it "
        rf"\(pid {os.getpid()}\).*PrivacyBudget\(\.\.\., path=\.\.\.\)"
    )
    for method in (late.spent, late.ledger, lambda: late.spend(ZCDP(0.1))):
        with pytest.raises(LedgerError, match=message):
            method()


_WORKER = """
import base64, os, pickle, sys
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import LedgerError
budget = pickle.loads(base64.b64decode(sys.argv[1]))
try:
    budget.spend(ZCDP(0.1), estimator="worker")
    print("spent", os.getpid())
except LedgerError as exc:
    print("LedgerError", exc)
"""


def test_other_processes_use_it_but_never_remove_it():
    budget = PrivacyBudget(rho=1.0)
    blob = base64.b64encode(pickle.dumps(budget)).decode()
    # The worker exits normally (atexit handlers, garbage collection).
    assert _run(_WORKER, blob)[0].startswith("spent")
    assert os.path.exists(budget.path)
    assert budget.spent() == ZCDP(0.1)
    path = budget.path
    del budget
    gc.collect()
    assert not os.path.exists(path)
    out = _run(_WORKER, blob)[0]  # the creating process let go: a worker refuses
    assert out.startswith("LedgerError")
    assert f"(pid {os.getpid()})" in out
    assert "path=" in out


_FORKING = """
import gc, os, sys
from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP
kept = PrivacyBudget(rho=1.0)       # the child leaves this one to exit handlers
dropped = PrivacyBudget(rho=1.0)    # the child garbage-collects this one
kept.spend(ZCDP(0.1), estimator="parent")
pid = os.fork()
if pid == 0:  # the child spends on both, drops one, and exits normally
    kept.spend(ZCDP(0.1), estimator="child")
    dropped.spend(ZCDP(0.1), estimator="child")
    del dropped
    gc.collect()
    sys.exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
for budget in (kept, dropped):  # the parent's ledgers are intact and usable
    assert os.path.exists(budget.path)
    budget.spend(ZCDP(0.1), estimator="parent")
print(kept.path)
print(dropped.path)
print(len(kept.ledger()), len(dropped.ledger()))
print(sorted({e.pid == os.getpid() for e in kept.ledger()}))
"""


@needs_fork
def test_a_forked_child_exiting_normally_leaves_the_parent_ledger():
    kept, dropped, counts, owners = _run(_FORKING)[:4]
    assert counts == "3 2"
    assert owners == "[False, True]"  # spends by the parent and by the child
    # The parent removed both when it exited: it created them.
    assert not os.path.exists(kept)
    assert not os.path.exists(dropped)


@needs_fork
def test_a_forked_child_that_loses_the_ledger_gets_a_ledger_error():
    # Deleting the file is the owner's right; a child that finds it gone refuses
    # with LedgerError, never sqlite3.OperationalError.
    script = """
import os, sys
from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import LedgerError
budget = PrivacyBudget(rho=1.0)
budget.spend(ZCDP(0.1))
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.read(read, 1)  # wait until the parent removed the ledger
    try:
        budget.spend(ZCDP(0.1))
        code = 1
    except LedgerError as exc:
        code = 0 if "is gone" in str(exc) else 2
    os._exit(code)
path = budget.path
del budget  # the parent's last handle: the ledger is removed
os.write(write, b"x")
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), os.path.exists(path))
"""
    assert _run(script)[0] == "0 False"
