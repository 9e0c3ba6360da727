"""PrivacyBudget: exact accounting, refusal, durability and multi-process spends."""

import base64
import copy
import gc
import math
import os
import pickle
import sqlite3
import subprocess
import sys

import pytest
from sklearn.base import clone

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP, ApproxDP, PureDP, zcdp_to_approx
from dpgauss.exceptions import BudgetExceededError, LedgerError, PrivacyAccountingError


def test_spend_records_and_composes_exactly():
    budget = PrivacyBudget(rho=1.0)
    budget.spend(ZCDP(0.25), estimator="A", mechanism="m1")
    budget.spend(PureDP(0.5), estimator="B", mechanism="m2")  # counts 0.5^2/2
    assert budget.spent() == ZCDP(0.25 + 0.125)
    assert budget.remaining() == ZCDP(1.0 - 0.375)
    events = budget.ledger()
    assert [(e.estimator, e.mechanism, e.cost) for e in events] == [
        ("A", "m1", ZCDP(0.25)),
        ("B", "m2", PureDP(0.5)),
    ]
    assert all(e.pid == os.getpid() for e in events)


def test_overspend_raises_and_records_nothing():
    budget = PrivacyBudget(rho=1.0)
    budget.spend(ZCDP(0.75))
    with pytest.raises(BudgetExceededError, match=r"needs rho=0\.3.*only rho=0\.25"):
        budget.spend(ZCDP(0.3))
    with pytest.raises(BudgetExceededError):
        budget.spend_many([(ZCDP(0.2), "a"), (ZCDP(0.1), "b")])  # all or none
    assert len(budget.ledger()) == 1
    with pytest.raises(BudgetExceededError):
        budget.check(ZCDP(0.26))
    budget.check(ZCDP(0.25))  # fits exactly; check records nothing
    assert budget.spent() == ZCDP(0.75)


def test_float_shares_fit_the_total():
    # Ten float shares of 0.1 exceed 1.0 by 1 ulp; the documented 1e-12 relative
    # slack accepts them, and an 11th share is refused.
    budget = PrivacyBudget(rho=1.0)
    for _ in range(10):
        budget.spend(ZCDP(0.1))
    assert budget.spent().rho == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(BudgetExceededError):
        budget.spend(ZCDP(1e-9))


def test_pure_budget_accepts_only_pure_costs():
    budget = PrivacyBudget(epsilon=1.0)
    budget.spend(PureDP(0.4))
    budget.spend(PureDP(0.6))
    assert budget.spent() == PureDP(1.0)
    assert budget.remaining() == PureDP(0.0)
    with pytest.raises(PrivacyAccountingError, match="accepts only pure"):
        PrivacyBudget(epsilon=1.0).spend(ZCDP(0.01))


def test_zcdp_budget_refuses_approximate_costs():
    with pytest.raises(PrivacyAccountingError, match="rho-zCDP"):
        PrivacyBudget(rho=1.0).spend(ApproxDP(0.1, 1e-9))


def test_approx_budget_composes_zcdp_and_approx_soundly():
    total_eps, delta = 3.0, 1e-6
    budget = PrivacyBudget(epsilon=total_eps, delta=delta)
    budget.spend(ZCDP(0.125))
    # zCDP part alone is reported by the tight conversion at the budget's delta.
    assert budget.spent() == ApproxDP(zcdp_to_approx(0.125, delta), delta)
    budget.spend(ApproxDP(0.2, 1e-7))
    # Basic composition: eps_CKS(rho, delta - 1e-7) + 0.2.
    expected = zcdp_to_approx(0.125, delta - 1e-7) + 0.2
    assert budget.spent().epsilon == pytest.approx(expected, rel=1e-12)
    # Remaining rho is the largest that keeps the total within 3.0.
    rho_left = budget.remaining().rho
    final = zcdp_to_approx(0.125 + rho_left, delta - 1e-7) + 0.2
    assert final == pytest.approx(total_eps, rel=1e-9)
    budget.spend(ZCDP(rho_left))
    with pytest.raises(BudgetExceededError):
        budget.spend(ZCDP(1e-6))


def test_approx_budget_pure_costs_use_the_better_bound():
    # One pure epsilon=1 cost against an (epsilon, delta) budget costs epsilon=1,
    # not the (much larger) CKS conversion of rho = 0.5.
    budget = PrivacyBudget(epsilon=1.0, delta=1e-6)
    budget.spend(PureDP(1.0))
    assert budget.spent().epsilon == pytest.approx(1.0)


def test_approx_costs_cannot_use_all_of_delta():
    budget = PrivacyBudget(epsilon=5.0, delta=1e-6)
    budget.spend(ApproxDP(1.0, 1e-6))
    with pytest.raises(BudgetExceededError):
        budget.spend(ZCDP(0.001))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "needs a total"),
        ({"rho": 1.0, "epsilon": 1.0}, "give the budget as rho"),
        ({"rho": 0.0}, "must be > 0"),
        ({"rho": -1.0}, "rho must be >= 0"),
        ({"rho": math.inf}, "rho must be finite"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta must be < 1"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta must be > 0"),
    ],
)
def test_invalid_totals(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivacyBudget(**kwargs)


def test_repr_and_listing_are_readable():
    budget = PrivacyBudget(rho=2.0)
    budget.spend(ZCDP(0.5), estimator="PrivateCovariance", mechanism="gaussian:mean")
    text = repr(budget)
    assert text.startswith("PrivacyBudget(total rho=2; spent rho=0.5 in 1 events")
    listing = budget.format_ledger()
    assert "PrivateCovariance" in listing
    assert "gaussian:mean" in listing
    assert listing.splitlines()[-1] == (
        "total rho=2; spent rho=0.5 in 1 events; remaining rho=1.5"
    )


def test_clone_copy_and_pickle_share_one_ledger():
    budget = PrivacyBudget(rho=1.0)
    assert clone(budget, safe=False) is budget
    assert copy.deepcopy(budget) is budget
    assert copy.copy(budget) is budget
    other = pickle.loads(pickle.dumps(budget))
    other.spend(ZCDP(0.4))
    assert budget.spent() == ZCDP(0.4)
    with pytest.raises(BudgetExceededError):
        budget.spend(ZCDP(0.7))


def test_temporary_ledger_removed_with_its_budget_and_copies_refuse():
    budget = PrivacyBudget(rho=1.0)
    path = budget.path
    copy_ = pickle.loads(pickle.dumps(budget))
    del budget
    gc.collect()
    assert not os.path.exists(path)
    with pytest.raises(LedgerError, match="is gone"):
        copy_.spend(ZCDP(0.1))
    assert "ledger unreachable" in repr(copy_)


def test_durable_ledger_resumes_and_rejects_another_total(tmp_path):
    path = tmp_path / "ledger.sqlite"
    first = PrivacyBudget(rho=1.0, path=path)
    first.spend(ZCDP(0.6))
    del first
    gc.collect()
    assert path.exists()  # a given path is durable
    resumed = PrivacyBudget(rho=1.0, path=path)
    assert resumed.spent() == ZCDP(0.6)
    with pytest.raises(BudgetExceededError):
        resumed.spend(ZCDP(0.5))
    with pytest.raises(LedgerError, match="belongs to a different budget"):
        PrivacyBudget(rho=2.0, path=path)


def test_mismatched_total_leaves_the_ledger_intact(tmp_path):
    path = tmp_path / "ledger.sqlite"
    PrivacyBudget(rho=1.0, path=path).spend(ZCDP(0.3))
    for wrong in ({"rho": 2.0}, {"epsilon": 1.0, "delta": 1e-6}, {"epsilon": 1.0}):
        with pytest.raises(LedgerError, match="belongs to a different budget"):
            PrivacyBudget(**wrong, path=path)
    resumed = PrivacyBudget(rho=1.0, path=path)  # still a working ledger
    assert resumed.spent() == ZCDP(0.3)
    pickle.loads(pickle.dumps(resumed)).spend(ZCDP(0.1))
    assert resumed.spent().rho == pytest.approx(0.4)


def test_foreign_files_are_refused_and_left_alone(tmp_path):
    other_db = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other_db)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()
    before = other_db.read_bytes()
    with pytest.raises(LedgerError, match="not a dpgauss ledger"):
        PrivacyBudget(rho=1.0, path=other_db)
    assert other_db.read_bytes() == before
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just text " * 100)
    with pytest.raises(LedgerError, match="not a dpgauss ledger"):
        PrivacyBudget(rho=1.0, path=text)
    assert text.read_text().startswith("not a database")


def test_relative_path_is_made_absolute(tmp_path, monkeypatch):
    # A worker whose working directory differs must still reach this ledger.
    monkeypatch.chdir(tmp_path)
    budget = PrivacyBudget(rho=1.0, path="ledger.sqlite")
    assert os.path.isabs(budget.path)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    PrivacyBudget(rho=1.0, path="ledger.sqlite")  # a different ledger here
    pickle.loads(pickle.dumps(budget)).spend(ZCDP(0.9))
    assert budget.spent() == ZCDP(0.9)


_WORKER = """
import base64, os, pickle, sys
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import BudgetExceededError
budget = pickle.loads(base64.b64decode(sys.argv[1]))
accepted = 0
for _ in range(int(sys.argv[2])):
    try:
        budget.spend(ZCDP(float(sys.argv[3])), estimator="worker", mechanism="test")
        accepted += 1
    except BudgetExceededError:
        pass
print(os.getpid(), accepted)
"""


def test_concurrent_processes_never_exceed_the_cap_and_lose_nothing():
    # 4 processes each try 25 spends of 0.05 against a cap of 2.0: exactly 40 can
    # fit. Every accepted spend is in the ledger and the total never exceeds 2.0.
    budget = PrivacyBudget(rho=2.0)
    blob = base64.b64encode(pickle.dumps(budget)).decode()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, blob, "25", "0.05"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [proc.communicate(timeout=120)[0].split() for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    pids = {int(pid) for pid, _ in outputs}
    accepted = sum(int(count) for _, count in outputs)
    events = budget.ledger()
    assert accepted == len(events) == 40
    assert math.fsum(e.cost.rho for e in events) <= 2.0 * (1 + 1e-12)
    assert len(pids) == 4
    assert {e.pid for e in events} <= pids
