"""A fit with a budget is one ledger transaction: the early check reads the
tally the handle last saw, the spend checks the ledger inside its write."""

import subprocess
import sys

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateMean
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import BudgetExceededError

BOX = (-np.ones(3), np.ones(3))


def _rows():
    return np.random.default_rng(0).uniform(-1.0, 1.0, size=(100, 3))


def _fit(budget, X=None):
    return PrivateMean(bounds=BOX, rho=0.25, budget=budget, random_state=0).fit(
        _rows() if X is None else X
    )


class _Unreadable:
    """Rows with a shape (public metadata) whose entries must not be read."""

    shape = (100, 3)
    ndim = 2

    def __array__(self, dtype=None, copy=None):
        raise AssertionError("the rows were read")


@pytest.fixture(params=["temporary", "durable"])
def budget(request, tmp_path):
    path = None if request.param == "temporary" else tmp_path / "ledger.sqlite"
    return PrivacyBudget(rho=1.0, path=path)


def test_a_fit_runs_one_transaction(budget):
    _fit(budget)  # the connection is open from now on
    log = []
    budget._ledger._session.conn.set_trace_callback(log.append)
    _fit(budget)
    begins = [s for s in log if s.startswith("BEGIN")]
    assert begins == ["BEGIN IMMEDIATE"]
    # Every statement runs inside it (none in an autocommit transaction of its own).
    assert log[0] == "BEGIN IMMEDIATE"
    assert log[-1] == "COMMIT"
    assert len(budget.ledger()) == 2


def test_the_early_check_refuses_a_spent_budget_before_reading_a_row(budget):
    budget.spend(ZCDP(0.9))
    before = budget.ledger()
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        _fit(budget, _Unreadable())
    assert budget.ledger() == before


def test_a_fresh_handle_reads_the_ledger_for_its_early_check(tmp_path):
    path = tmp_path / "ledger.sqlite"
    PrivacyBudget(rho=1.0, path=path).spend(ZCDP(0.9))
    with pytest.raises(BudgetExceededError):
        _fit(PrivacyBudget.open(path), _Unreadable())


def test_a_spend_by_another_process_is_refused_by_the_spend(tmp_path):
    # The early check passes on the tally this handle saw (0.25 spent); another
    # process then spends 0.7; the fit's spend sees 0.95 inside its write
    # transaction and refuses: nothing recorded, nothing fitted.
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyBudget(rho=1.0, path=path)
    _fit(budget)
    code = (
        "import sys; from dpgauss import PrivacyBudget; "
        "from dpgauss.accounting import ZCDP; "
        "PrivacyBudget.open(sys.argv[1]).spend(ZCDP(0.7))"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120)
    budget.check(ZCDP(0.25), fresh=False)  # the stale tally lets it through
    with pytest.raises(BudgetExceededError, match=r"0\.95"):
        _fit(budget)
    events = budget.ledger()
    assert [e.cost for e in events] == [ZCDP(0.25), ZCDP(0.7)]
    # What the refusal read is the handle's tally now: the next early check
    # refuses before reading a row.
    with pytest.raises(BudgetExceededError):
        _fit(budget, _Unreadable())
