"""PrivacyBudget: exact accounting, refusal, durability and multi-process spends."""

import base64
import copy
import gc
import math
import os
import pickle
import re
import sqlite3
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from dpgauss import PrivacyBudget
from dpgauss.accounting import (
    ZCDP,
    ApproxDP,
    LedgerEvent,
    PureDP,
    approx_to_zcdp,
    zcdp_to_approx,
)
from dpgauss.accounting._composition import compose, within
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
    # The largest further rho r has eps_CKS(0.125 + r, delta - 1e-7) + 0.2 <= 3.0,
    # i.e. 0.125 + r = approx_to_zcdp(2.8, delta - 1e-7) (the largest rho whose
    # conversion is at most 2.8, within a relative 1e-12 below it).
    rho_left = approx_to_zcdp(total_eps - 0.2, delta - 1e-7) - 0.125
    final = zcdp_to_approx(0.125 + rho_left, delta - 1e-7) + 0.2
    assert final == pytest.approx(total_eps, rel=1e-9)
    budget.check(ZCDP(rho_left))
    with pytest.raises(BudgetExceededError, match="needs epsilon="):
        budget.check(ZCDP(rho_left * (1 + 1e-6)))
    budget.spend(ZCDP(rho_left))
    with pytest.raises(BudgetExceededError, match="needs epsilon="):
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
    # The repr is the constructor call without the path (it does no I/O); the
    # listing shows one line per fit and a line of totals.
    budget = PrivacyBudget(rho=2.0)
    budget.spend(ZCDP(0.5), estimator="PrivateCovariance", mechanism="gaussian:mean")
    assert repr(budget) == "PrivacyBudget(rho=2.0)"
    listing = budget.format_ledger()
    assert "PrivateCovariance" in listing
    assert "gaussian:mean" in budget.format_ledger(per_event=True)
    assert listing.splitlines()[-1] == (
        "total rho=2; spent rho=0.5 in 1 fit (1 event); remaining rho=1.5"
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


def test_temporary_ledger_removed_with_its_last_handle_and_copies_refuse():
    # A copy unpickled in the creating process keeps the temporary ledger alive;
    # the last handle there removes it, and a copy loaded afterwards refuses.
    budget = PrivacyBudget(rho=1.0)
    path = budget.path
    blob = pickle.dumps(budget)
    copy_ = pickle.loads(blob)
    del budget
    gc.collect()
    assert os.path.exists(path)
    copy_.spend(ZCDP(0.1))
    del copy_
    gc.collect()
    assert not os.path.exists(path)
    late = pickle.loads(blob)
    with pytest.raises(LedgerError, match="is gone: it is a temporary ledger"):
        late.spend(ZCDP(0.1))
    assert repr(late) == "PrivacyBudget(rho=1.0)"  # no I/O, so no error


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
    with pytest.raises(
        LedgerError, match=r"made for a total of rho=1; this budget.s total is rho=2"
    ):
        PrivacyBudget(rho=2.0, path=path)


def test_mismatched_total_leaves_the_ledger_intact(tmp_path):
    path = tmp_path / "ledger.sqlite"
    PrivacyBudget(rho=1.0, path=path).spend(ZCDP(0.3))
    for wrong in ({"rho": 2.0}, {"epsilon": 1.0, "delta": 1e-6}, {"epsilon": 1.0}):
        # The message shows the ledger's total as a total, not its storage.
        with pytest.raises(LedgerError, match="was made for a total of rho=1; this"):
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


# -- the running tally -----------------------------------------------------------
@pytest.fixture
def statements(monkeypatch):
    """Record every SQL statement run on the SQLite connections opened from now."""
    log = []
    connect = sqlite3.connect

    def recording_connect(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(log.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", recording_connect)
    return log


def _touching_events(log):
    return [s for s in log if re.search(r"\b(FROM|UPDATE|JOIN)\s+events\b", s)]


def test_spend_check_and_reports_never_read_the_events(statements):
    # A spend's cost must not grow with the ledger: spend, check, spent and
    # remaining read the one-row tally, never the events (the benchmark times it).
    budget = PrivacyBudget(rho=10.0)
    budget.spend_many([(ZCDP(0.01), f"m{i}") for i in range(50)], estimator="fill")
    statements.clear()
    budget.spend(ZCDP(0.1))
    budget.spend_many([(ZCDP(0.1), "a"), (PureDP(0.1), "b")])
    budget.check(ZCDP(0.1))
    budget.spent()
    budget.remaining()
    assert any("INSERT INTO events" in s for s in statements)  # the recorder works
    assert _touching_events(statements) == []
    budget.ledger()
    assert _touching_events(statements)


def test_tally_is_the_exact_sum_compose_uses():
    # Ten spends of 0.1: a plain running float sum gives 0.9999999999999999, the
    # exact (fsum) sum 1.0, which is what compose gives over the whole ledger.
    assert sum([0.1] * 10) != 1.0
    budget = PrivacyBudget(rho=1.0)
    for _ in range(10):
        budget.spend(ZCDP(0.1))
    assert budget.spent() == ZCDP(1.0)
    assert budget.remaining() == ZCDP(0.0)


_COSTS = st.one_of(
    st.builds(ZCDP, st.floats(0.0, 0.05)),
    st.builds(PureDP, st.floats(0.0, 0.3)),
    st.builds(ApproxDP, st.floats(0.0, 0.3), st.sampled_from([0.0, 1e-8, 3e-8])),
)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(_COSTS, min_size=1, max_size=3), min_size=1, max_size=8))
def test_tally_decides_exactly_as_composing_the_whole_ledger(spends):
    # After every attempt, the running tally's report equals compose() over the
    # recorded events bit for bit, and each decision equals within() over the
    # recorded costs plus the new ones.
    budget = PrivacyBudget(epsilon=2.0, delta=1e-7)
    recorded = []
    for costs in spends:
        fits = within(budget.total, recorded + costs)
        if fits:
            budget.spend_many([(c, "m") for c in costs])
            recorded += costs
        else:
            with pytest.raises(BudgetExceededError, match="privacy budget exceeded"):
                budget.spend_many([(c, "m") for c in costs])
        assert [e.cost for e in budget.ledger()] == recorded
        assert budget.spent() == compose(budget.total, recorded)
    assert budget.verify() == len(recorded)


def _tamper(path, statement):
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("statement", "match"),
    [
        (  # an event recorded behind dpgauss's back: the tally misses it
            "INSERT INTO events (time, estimator, mechanism, kind, rho, pid, fit) "
            "VALUES (0, 'x', 'y', 'zcdp', 0.5, 1, 3)",
            r"running tally \(2 events .*\) does not match its events \(3 events",
        ),
        ("DELETE FROM events WHERE id = 2", "does not match its events"),
        ("UPDATE events SET rho = 0.1 WHERE id = 1", "does not match its events"),
        ("UPDATE tally SET rho = '0x0'", "does not match its events"),
        ("UPDATE events SET fit = 7 WHERE id = 2", "event 2 names fit 7"),
        ("UPDATE events SET kind = 'other' WHERE id = 1", "cost is invalid"),
        ("DELETE FROM tally", "tally is missing"),
    ],
)
def test_verify_and_open_refuse_a_tally_that_disagrees(tmp_path, statement, match):
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyBudget(rho=1.0, path=path)
    budget.spend(ZCDP(0.25))
    budget.spend(ZCDP(0.25))
    assert budget.verify() == 2
    _tamper(path, statement)
    with pytest.raises(LedgerError, match=match):
        budget.verify()
    with pytest.raises(LedgerError, match=f"inconsistent: .*{match}.*path="):
        PrivacyBudget(rho=1.0, path=path)


# -- reports in the budget's currency ---------------------------------------------
def test_approx_budget_reports_epsilon_at_its_delta():
    # spent() is the composition at the budget's delta; remaining() is the total
    # minus it, in epsilon at the same delta: exactly the largest epsilon of a
    # further (epsilon, 0)-DP release that fits (approximate epsilons add).
    delta = 1e-6
    budget = PrivacyBudget(epsilon=3.0, delta=delta)
    budget.spend(ZCDP(0.125))
    spent_eps = zcdp_to_approx(0.125, delta)
    assert budget.spent() == ApproxDP(spent_eps, delta)
    assert budget.remaining() == ApproxDP(3.0 - spent_eps, delta)
    left = budget.remaining().epsilon
    # The sum may exceed 3.0 by the documented relative slack 1e-12 only.
    with pytest.raises(BudgetExceededError, match="needs epsilon="):
        budget.check(ApproxDP(left + 1e-9, 0.0))
    budget.spend(ApproxDP(left, 0.0))
    assert budget.spent().epsilon == pytest.approx(3.0, rel=1e-15)
    assert budget.remaining() == ApproxDP(0.0, delta)


def test_approx_remaining_is_a_report_not_a_rho_allowance():
    # A zCDP release whose own epsilon exceeds what remains can still fit: the
    # conversion of a sum of rho is less than the sum of the conversions
    # (eps_CKS(0.25) < 2 eps_CKS(0.125)); check() composes with the whole ledger.
    delta = 1e-6
    total = zcdp_to_approx(0.25, delta)
    budget = PrivacyBudget(epsilon=total, delta=delta)
    budget.spend(ZCDP(0.125))
    own = zcdp_to_approx(0.125, delta)
    assert own > budget.remaining().epsilon
    budget.check(ZCDP(0.125 * (1 - 1e-9)))


_RHO_MSG = (
    r"needs rho=0\.3, but only rho=0\.25 of the total rho=1 remains \(rho=0\.75 "
    r"spent in 1 event\); with it the spent total would be rho=1\.05\. Nothing "
)
_PURE_MSG = (
    r"needs epsilon=0\.3 \(pure\), but only epsilon=0\.25 \(pure\) of the total "
    r"epsilon=1 \(pure\) remains \(epsilon=0\.75 \(pure\) spent in 1 event\); "
    r"with it the spent total would be epsilon=1\.05 \(pure\)\. Nothing "
)
_APPROX_MSG = (
    r"needs epsilon=0\.3, delta=1e-06, but only epsilon=0\.25, delta=1e-06 of the "
    r"total epsilon=1, delta=1e-06 remains \(epsilon=0\.75, delta=1e-06 spent in "
    r"1 event\); with it the spent total would be epsilon=1\.05, delta=1e-06\. "
)


@pytest.mark.parametrize(
    ("total", "spent", "asked", "match"),
    [
        ({"rho": 1.0}, ZCDP(0.75), ZCDP(0.3), _RHO_MSG),
        ({"epsilon": 1.0}, PureDP(0.75), PureDP(0.3), _PURE_MSG),
        ({"epsilon": 1.0, "delta": 1e-6}, ApproxDP(0.75, 0.0), ApproxDP(0.3, 0.0),
         _APPROX_MSG),
    ],
)  # fmt: skip
def test_refusal_speaks_the_budget_currency(total, spent, asked, match):
    budget = PrivacyBudget(**total)
    budget.spend(spent)
    with pytest.raises(BudgetExceededError, match=match) as info:
        budget.spend(asked)
    if "rho" not in total:
        assert "rho" not in str(info.value)
    assert len(budget.ledger()) == 1


def test_refusal_when_approximate_costs_take_all_of_delta():
    budget = PrivacyBudget(epsilon=5.0, delta=1e-6)
    budget.spend(ApproxDP(1.0, 1e-6))
    with pytest.raises(
        BudgetExceededError,
        match=r"needs epsilon=0\.18.*but only epsilon=4, delta=1e-06 .*would use "
        r"delta=1e-06, all of the budget's delta=1e-06",
    ):
        budget.spend(ZCDP(0.001))


def test_approx_listing_speaks_epsilon():
    budget = PrivacyBudget(epsilon=3.0, delta=1e-6)
    budget.spend_many([(ZCDP(0.1), "a"), (ZCDP(0.025), "b")], estimator="E")
    listing = budget.format_ledger()
    spent = zcdp_to_approx(0.125, 1e-6)  # one fit: its own cost is the spend
    assert listing.splitlines()[1].split()[-4:] == [
        "E", "2", f"epsilon={spent:.6g},", "delta=1e-06",
    ]  # fmt: skip
    assert listing.splitlines()[-1] == (
        f"total epsilon=3, delta=1e-06; spent epsilon={spent:.6g}, delta=1e-06 in "
        f"1 fit (2 events); remaining epsilon={3.0 - spent:.6g}, delta=1e-06"
    )
    assert "rho" not in listing
    assert "rho=0.1" in budget.format_ledger(per_event=True)  # as recorded


# -- events grouped by fit -----------------------------------------------------
def test_events_carry_their_fit():
    budget = PrivacyBudget(rho=10.0)
    first = budget.spend_many([(ZCDP(0.1), f"m{i}") for i in range(3)], estimator="A")
    alone = budget.spend(ZCDP(0.1), estimator="B")
    last = budget.spend_many([(ZCDP(0.1), "x"), (PureDP(0.1), "y")], estimator="C")
    events = budget.ledger()
    assert [(e.id, e.fit) for e in events] == [
        (1, 1), (2, 1), (3, 1), (4, 4), (5, 5), (6, 5),
    ]  # fmt: skip
    assert events == [*first, alone, *last]
    # The new fields have defaults: the five-field form still works.
    event = LedgerEvent(0.0, "A", "m", ZCDP(0.1), 1)
    assert (event.id, event.fit) == (0, 0)


def test_listing_has_one_line_per_fit_and_full_names():
    long_name = "AVeryLongEstimatorNameThatIsNotCutShort" * 2
    budget = PrivacyBudget(rho=10.0)
    budget.spend_many([(ZCDP(0.25), "gaussian:mean"), (ZCDP(0.5), "gaussian:cov")],
                      estimator=long_name)  # fmt: skip
    budget.spend(PureDP(1.0), estimator="B", mechanism="laplace:" + "m" * 40)
    lines = budget.format_ledger().splitlines()
    assert lines[0].split() == [
        "time", "(UTC)", "pid", "fit", "estimator", "releases", "cost",
    ]  # fmt: skip
    assert len(lines) == 4
    assert lines[1].split()[-4:] == ["1", long_name, "2", "rho=0.75"]
    assert lines[2].split()[-4:] == ["3", "B", "1", "rho=0.5"]
    assert lines[3] == "total rho=10; spent rho=1.25 in 2 fits (3 events); " + (
        "remaining rho=8.75"
    )
    per_event = budget.format_ledger(per_event=True).splitlines()
    assert len(per_event) == 5
    assert per_event[3].split()[-6:] == [
        "3", "3", "B", "laplace:" + "m" * 40, "epsilon=1", "(pure)",
    ]  # fmt: skip
    assert per_event[1].split()[-5:] == [
        "1", "1", long_name, "gaussian:mean", "rho=0.25",
    ]  # fmt: skip


# -- repr ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"rho": 1.0}, "PrivacyBudget(rho=1.0)"),
        ({"epsilon": 2}, "PrivacyBudget(epsilon=2.0)"),
        ({"epsilon": 1.5, "delta": 1e-6}, "PrivacyBudget(epsilon=1.5, delta=1e-06)"),
    ],
)
def test_repr_is_the_total_without_path_or_io(tmp_path, monkeypatch, kwargs, text):
    temporary = PrivacyBudget(**kwargs)
    durable = PrivacyBudget(**kwargs, path=tmp_path / "ledger.sqlite")

    def no_io(*args, **kwargs):
        raise AssertionError("repr opened the ledger")

    monkeypatch.setattr(sqlite3, "connect", no_io)
    temporary._ledger._session.close()  # even a handle with no open connection
    assert repr(temporary) == repr(durable) == text
    assert str(durable) == text


# -- format of the file ------------------------------------------------------------
_V1_LEDGER = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,
    estimator TEXT NOT NULL, mechanism TEXT NOT NULL, kind TEXT NOT NULL,
    rho REAL, epsilon REAL, delta REAL, pid INTEGER NOT NULL
);
INSERT INTO meta VALUES ('format', '{fmt}'), ('kind', 'ZCDP'), ('rho', '1.0');
"""


@pytest.mark.parametrize(
    ("fmt", "match"),
    [
        ("dpgauss-ledger-1", "written by an older dpgauss .*'dpgauss-ledger-1'"),
        ("dpgauss-ledger-2", "written by an older dpgauss .*'dpgauss-ledger-2'"),
        ("dpgauss-ledger-4", "written by a newer dpgauss"),
        ("something-else", "is not a dpgauss ledger"),
    ],
)
def test_ledger_of_another_format_is_refused_and_left_alone(tmp_path, fmt, match):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(_V1_LEDGER.format(fmt=fmt))
    conn.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match=match):
        PrivacyBudget(rho=1.0, path=path)
    assert path.read_bytes() == before


def test_concurrent_threads_never_exceed_the_cap():
    # 8 threads, half on the budget itself and half on copies unpickled here (one
    # SQLite connection each), try 10 spends of 0.05 against a cap of 2.0: exactly
    # 40 fit, and the tally still matches the events.
    budget = PrivacyBudget(rho=2.0)
    handles = [budget, *(pickle.loads(pickle.dumps(budget)) for _ in range(3))]
    accepted = []

    def spend(handle):
        for _ in range(10):
            try:
                handle.spend(ZCDP(0.05), estimator="thread")
                accepted.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=spend, args=(h,)) for h in handles * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(accepted) == len(budget.ledger()) == 40
    assert budget.verify() == 40
    assert budget.spent().rho <= 2.0 * (1 + 1e-12)


def test_open_reads_the_total_from_the_ledger(tmp_path):
    # A study resumed later without its total at hand; each kind of total.
    for total, cost in (
        ({"rho": 2.0}, ZCDP(0.5)),
        ({"epsilon": 3.0}, PureDP(1.0)),
        ({"epsilon": 3.0, "delta": 1e-6}, ApproxDP(1.0, 1e-7)),
    ):
        path = tmp_path / f"{len(total)}-{sorted(total)[0]}.ledger"
        PrivacyBudget(**total, path=path).spend(cost)
        opened = PrivacyBudget.open(path)
        assert opened.total == PrivacyBudget(**total, path=path).total
        assert len(opened.ledger()) == 1
    with pytest.raises(LedgerError, match="there is no ledger at"):
        PrivacyBudget.open(tmp_path / "missing.ledger")
    (tmp_path / "other.txt").write_text("not a ledger")
    with pytest.raises(LedgerError, match="not a dpgauss ledger"):
        PrivacyBudget.open(tmp_path / "other.txt")


def test_an_exceeded_budget_names_its_ledger(tmp_path):
    # The README's one-liner run three times: the third fit meets a durable
    # ledger that remembers the first two; the message says so and how to
    # see them. A temporary ledger is named as such.
    path = tmp_path / "my-study.ledger"
    for _ in range(2):
        PrivacyBudget(rho=1.0, path=path).spend(ZCDP(0.5))
    with pytest.raises(BudgetExceededError, match="durable file that keeps every"):
        PrivacyBudget(rho=1.0, path=path).spend(ZCDP(0.5))
    with pytest.raises(BudgetExceededError, match="the temporary file"):
        PrivacyBudget(rho=1.0).spend(ZCDP(2.0))


def test_to_frame_lists_every_event():
    pd = pytest.importorskip("pandas")
    budget = PrivacyBudget(epsilon=2.0, delta=1e-6)
    budget.spend_many(
        [(ZCDP(0.01), "gaussian:a"), (PureDP(0.1), "laplace:b")], estimator="E"
    )
    budget.spend(ApproxDP(0.2, 1e-8), estimator="F", mechanism="approx:c")
    frame = budget.to_frame()
    assert list(frame["estimator"]) == ["E", "E", "F"]
    assert list(frame["fit"]) == [1, 1, 3]
    assert list(frame["kind"]) == ["ZCDP", "PureDP", "ApproxDP"]
    assert frame["rho"].iloc[0] == 0.01
    assert pd.isna(frame["rho"].iloc[1])
    assert frame["delta"].iloc[2] == 1e-8
    # as_rho: the zCDP each cost implies (0.1^2 / 2 for the pure one), none
    # for the (epsilon, delta) cost.
    assert frame["as_rho"].iloc[0] == 0.01
    assert frame["as_rho"].iloc[1] == pytest.approx(0.005, rel=1e-12)
    assert pd.isna(frame["as_rho"].iloc[2])
    assert str(frame["time"].dt.tz) == "UTC"
    assert PrivacyBudget(rho=1.0).to_frame().empty


def test_tagged_handles_record_their_experiment(tmp_path):
    # A tagged handle shares the total and the ledger; its spends carry the
    # tag through clones and pickles (worker processes) and show in the
    # ledger, the text table and the frame.
    import numpy as np

    from dpgauss import PrivateMean

    budget = PrivacyBudget(rho=1.0, path=tmp_path / "study.ledger")
    sweep = budget.tagged("sweep")
    assert sweep.total == budget.total
    assert sweep.path == budget.path
    assert budget.tag == ""
    pickle.loads(pickle.dumps(sweep)).spend(ZCDP(0.1), estimator="worker")
    copy.deepcopy(sweep).spend(ZCDP(0.1), estimator="copy")
    X = np.random.default_rng(0).normal(size=(500, 2))
    est = PrivateMean(bounds=(-4.0, 4.0), rho=0.2, budget=sweep, random_state=0)
    clone(est).fit(X)
    budget.spend(ZCDP(0.1), estimator="untagged")
    tags = [e.tag for e in budget.ledger()]
    assert tags[:2] == ["sweep", "sweep"]
    assert set(tags[2:-1]) == {"sweep"}
    assert tags[-1] == ""
    assert budget.spent().rho == pytest.approx(0.5)
    assert "sweep" in budget.format_ledger()
    frame = pytest.importorskip("pandas") and budget.to_frame()
    assert frame.groupby("tag")["rho"].sum()["sweep"] == pytest.approx(0.4)


def test_as_rho_sums_to_what_a_rho_budget_spent():
    # Pure-DP events have no rho of their own; a rho budget charges them
    # epsilon^2 / 2, and as_rho shows that, so a per-tag sum adds up.
    pytest.importorskip("pandas")
    budget = PrivacyBudget(rho=1.0)
    budget.tagged("a").spend(ZCDP(0.1), estimator="A")
    budget.tagged("b").spend(PureDP(0.4), estimator="B")
    frame = budget.to_frame()
    per_tag = frame.groupby("tag")["as_rho"].sum()
    assert per_tag["b"] == pytest.approx(0.08, rel=1e-12)
    assert per_tag.sum() == pytest.approx(budget.spent().rho, rel=1e-12)
