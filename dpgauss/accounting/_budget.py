"""PrivacyBudget: a total and a ledger shared by every fit that draws on it.

The ledger is a SQLite file (Python's own ``sqlite3``). A spend is one
``BEGIN IMMEDIATE`` transaction that reads every recorded cost, checks that the
new costs still fit in the total, and records them; SQLite's write lock makes
that step atomic across threads and processes. A budget object is only a handle
(the ledger's path and total): a clone, a deep copy or a pickled copy in a
worker process is another handle to the same ledger, so every spend, wherever it
happens, lands in the one ledger or raises.
"""

import contextlib
import math
import os
import sqlite3
import tempfile
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path

from dpgauss.accounting._composition import compose, within
from dpgauss.accounting._costs import ZCDP, ApproxDP, PureDP, _check_delta
from dpgauss.exceptions import BudgetExceededError, LedgerError

__all__ = ["LedgerEvent", "PrivacyBudget"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    estimator TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    kind TEXT NOT NULL,
    rho REAL, epsilon REAL, delta REAL,
    pid INTEGER NOT NULL
);
"""
_FORMAT = "dpgauss-ledger-1"
_TIMEOUT = 60.0  # seconds a spend waits for another process's write lock


@dataclass(frozen=True)
class LedgerEvent:
    """One recorded release.

    Parameters
    ----------
    time : float
        Seconds since the epoch when the spend was recorded.
    estimator : str
        Who spent (an estimator's class name, or what the caller passed).
    mechanism : str
        Which release (for example ``"gaussian:second_moment"``).
    cost : ZCDP, PureDP or ApproxDP
        The privacy cost of the release.
    pid : int
        The process that recorded it.
    id : int, default=0
        The event's id in its ledger: unique, increasing, starting at 1 in a
        fresh ledger (0 for an event not read from a ledger). Fits derive their
        noise from it (see :func:`dpgauss.utils.fit_generator`).

    Examples
    --------
    >>> from dpgauss import PrivacyBudget
    >>> from dpgauss.accounting import ZCDP
    >>> budget = PrivacyBudget(rho=1.0)
    >>> event = budget.spend(ZCDP(0.1), estimator="me", mechanism="gaussian")
    >>> event.cost, event.mechanism
    (ZCDP(rho=0.1), 'gaussian')
    """

    time: float
    estimator: str
    mechanism: str
    cost: object
    pid: int
    id: int = 0


def _total_from(rho, epsilon, delta):
    """Build the budget's total from exactly one form of privacy parameter."""
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError(
                "give the budget as rho, or epsilon, or epsilon and delta; "
                f"got rho={rho!r}, epsilon={epsilon!r}, delta={delta!r}."
            )
        total = ZCDP(rho)
    elif epsilon is not None:
        total = PureDP(epsilon) if delta is None else ApproxDP(epsilon, delta)
        if delta is not None:
            _check_delta(delta)  # delta = 0 is a pure budget: say epsilon alone
    else:
        raise ValueError(
            "a PrivacyBudget needs a total: rho=..., or epsilon=..., or "
            "epsilon=... and delta=...."
        )
    value = total.rho if isinstance(total, ZCDP) else total.epsilon
    if value <= 0:
        raise ValueError(f"a budget's total must be > 0, got {total}.")
    return total


def _cost_to_row(cost):
    if isinstance(cost, ZCDP):
        return "zcdp", cost.rho, None, None
    if isinstance(cost, PureDP):
        return "pure", None, cost.epsilon, None
    if isinstance(cost, ApproxDP):
        return "approx", None, cost.epsilon, cost.delta
    raise TypeError(f"a cost must be ZCDP, PureDP or ApproxDP, got {cost!r}.")


def _row_to_cost(kind, rho, epsilon, delta):
    if kind == "zcdp":
        return ZCDP(rho)
    if kind == "pure":
        return PureDP(epsilon)
    return ApproxDP(epsilon, delta)


def _remove_files(path):
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except OSError:
            pass


class PrivacyBudget:
    """A privacy total with a ledger that every estimator drawing on it charges.

    Pass the same budget to several estimators, a ``Pipeline``,
    ``cross_val_score`` or ``GridSearchCV`` (also with ``n_jobs=2``): every fit,
    in this process or a worker process, records its releases in the one ledger,
    and a fit whose cost would take the ledger over the total raises
    :class:`~dpgauss.exceptions.BudgetExceededError` before it reads the data.

    Parameters
    ----------
    rho : float, default=None
        Total as rho-zCDP. Accepts zCDP and pure costs (epsilon-DP counts as
        ``epsilon**2 / 2``).
    epsilon : float, default=None
        Total as pure epsilon-DP (alone; accepts only pure costs), or with
        ``delta`` as (epsilon, delta)-DP (accepts every kind of cost).
    delta : float, default=None
        With ``epsilon``: the delta the spend is reported and checked at.
    path : str or path-like, default=None
        Where the SQLite ledger lives. ``None`` makes a temporary ledger that is
        removed when this object is garbage collected (copies in worker processes
        do not remove it). A given path is durable: it is created if missing, and
        an existing ledger with the same total is resumed (with a different total
        it raises).

    Attributes
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total.
    path : str
        The ledger's file.

    See Also
    --------
    dpgauss.accounting.ZCDP : A cost in rho-zCDP, the library's currency.
    dpgauss.accounting.PureDP : A cost in pure epsilon-DP.
    dpgauss.accounting.ApproxDP : A cost in (epsilon, delta)-DP.

    Notes
    -----
    Composition rules are in :mod:`dpgauss.accounting._composition`: zCDP costs add;
    pure costs add; approximate costs add in epsilon and delta and compose with
    the zCDP part converted (Canonne, Kamath and Steinke 2020) at the delta left
    over. A sum may exceed the total by a relative 1e-12 so that a total split
    into float shares still fits.

    A budget that cannot reach its ledger (the file was removed, or it is not a
    dpgauss ledger) raises :class:`~dpgauss.exceptions.LedgerError`; it never
    starts a new, empty ledger behind the caller's back.

    Examples
    --------
    >>> from dpgauss import PrivacyBudget
    >>> from dpgauss.accounting import ZCDP
    >>> budget = PrivacyBudget(rho=1.0)
    >>> budget.spend(ZCDP(0.25), estimator="me", mechanism="gaussian")
    LedgerEvent(...)
    >>> budget.spent(), budget.remaining()
    (ZCDP(rho=0.25), ZCDP(rho=0.75))
    >>> budget.spend(ZCDP(0.8))
    Traceback (most recent call last):
    ...
    dpgauss.exceptions.BudgetExceededError: ...
    """

    def __init__(self, *, rho=None, epsilon=None, delta=None, path=None):
        self.total = _total_from(rho, epsilon, delta)
        self._lock = threading.Lock()
        self._conn = None
        self._pid = None
        if path is None:
            name = f"dpgauss-ledger-{uuid.uuid4().hex}.sqlite"
            self.path = os.path.join(tempfile.gettempdir(), name)
            self._create()
            self._finalizer = weakref.finalize(self, _remove_files, self.path)
        else:
            # Absolute, so that a copy in a worker with another working
            # directory still reaches this ledger.
            self.path = os.path.abspath(os.fspath(path))
            self._create()

    # -- sharing: a budget is a handle to one ledger --------------------------
    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        return {"path": self.path, "total": self.total}

    def __setstate__(self, state):
        self.path = state["path"]
        self.total = state["total"]
        self._lock = threading.Lock()
        self._conn = None
        self._pid = None

    # -- the SQLite file -------------------------------------------------------
    def _create(self):
        """Create the ledger, or open an existing one and check it is this budget's.

        An existing file is never altered unless it is an empty dpgauss ledger:
        a file that is not SQLite, a SQLite database without a dpgauss ledger, or
        a ledger with another total raises LedgerError and is left as it was.
        """
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        try:
            conn = sqlite3.connect(self.path, timeout=_TIMEOUT, isolation_level=None)
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot open the ledger at {self.path!r}: {exc}"
            ) from exc
        try:
            if existed:
                self._check_meta(conn)
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0:
                    conn.executemany(
                        "INSERT INTO meta (key, value) VALUES (?, ?)",
                        self._meta_for(self.total).items(),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            self._check_meta(conn)  # a concurrent creator may have won
        finally:
            conn.close()

    @staticmethod
    def _meta_for(total):
        meta = {"format": _FORMAT, "kind": type(total).__name__}
        meta.update({k: repr(v) for k, v in vars(total).items()})
        return meta

    def _check_meta(self, conn):
        try:
            stored = dict(conn.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path!r} is not a dpgauss ledger: {exc}") from exc
        if stored.get("format") != _FORMAT:
            raise LedgerError(f"{self.path!r} is not a dpgauss ledger.")
        wanted = self._meta_for(self.total)
        if stored != wanted:
            raise LedgerError(
                f"the ledger at {self.path!r} belongs to a different budget "
                f"({stored.get('kind')} {stored}); this budget is {self.total}."
            )

    def _connection(self):
        """Return this process's connection, opening it (never creating the file)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if not os.path.exists(self.path):
            raise LedgerError(
                f"the ledger at {self.path!r} is gone (a temporary ledger is removed "
                "when the budget that made it is garbage collected). Spending here "
                "would forget earlier spends, so dpgauss refuses; give "
                "PrivacyBudget(path=...) for a durable ledger."
            )
        uri = Path(self.path).resolve().as_uri() + "?mode=rw"
        try:
            conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=_TIMEOUT,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot open the ledger at {self.path!r}: {exc}"
            ) from exc
        self._check_meta(conn)
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _read_events(self, conn):
        rows = conn.execute(
            "SELECT time, estimator, mechanism, kind, rho, epsilon, delta, pid, id "
            "FROM events ORDER BY id"
        ).fetchall()
        return [
            LedgerEvent(t, est, mech, _row_to_cost(kind, r, e, d), pid, i)
            for t, est, mech, kind, r, e, d, pid, i in rows
        ]

    @contextlib.contextmanager
    def _locked(self, write):
        """One transaction; ``write=True`` takes SQLite's write lock at once."""
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # -- public API ---------------------------------------------------------------
    def check(self, costs):
        """Raise if ``costs`` would not fit in what remains; record nothing.

        Parameters
        ----------
        costs : cost or sequence of costs
            ZCDP, PureDP or ApproxDP values.

        Raises
        ------
        BudgetExceededError
            If they do not fit.
        PrivacyAccountingError
            If a cost cannot be charged to a budget of this kind.
        """
        costs = _as_list(costs)
        with self._locked(write=False) as conn:
            recorded = [e.cost for e in self._read_events(conn)]
        self._require_fits(recorded, costs)

    def spend(self, cost, *, estimator="", mechanism=""):
        """Check and record one cost in one atomic step.

        Parameters
        ----------
        cost : ZCDP, PureDP or ApproxDP
            The cost of one release.
        estimator : str, default=""
            Who spends (shown in the ledger).
        mechanism : str, default=""
            What is released (shown in the ledger).

        Returns
        -------
        LedgerEvent
            The recorded event.

        Raises
        ------
        BudgetExceededError
            If the cost does not fit; nothing is recorded.
        """
        return self.spend_many([(cost, mechanism)], estimator=estimator)[0]

    def spend_many(self, items, *, estimator=""):
        """Check and record several costs together: all are recorded or none.

        Parameters
        ----------
        items : sequence of (cost, mechanism) pairs
            The releases one fit is about to make.
        estimator : str, default=""
            Who spends.

        Returns
        -------
        list of LedgerEvent
            The recorded events, in order.

        Raises
        ------
        BudgetExceededError
            If they do not fit together; nothing is recorded.
        """
        items = [(cost, str(mech)) for cost, mech in items]
        rows = [_cost_to_row(cost) for cost, _ in items]
        now, pid = time.time(), os.getpid()
        with self._locked(write=True) as conn:
            recorded = [e.cost for e in self._read_events(conn)]
            self._require_fits(recorded, [cost for cost, _ in items])
            ids = [
                conn.execute(
                    "INSERT INTO events (time, estimator, mechanism, kind, rho, "
                    "epsilon, delta, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (now, str(estimator), mech, *row, pid),
                ).lastrowid
                for (_, mech), row in zip(items, rows, strict=True)
            ]
        return [
            LedgerEvent(now, str(estimator), m, c, pid, i)
            for (c, m), i in zip(items, ids, strict=True)
        ]

    def _require_fits(self, recorded, costs):
        if not within(self.total, recorded + costs):
            asked = compose(self.total, costs)
            raise BudgetExceededError(
                f"privacy budget exceeded: this spend needs {asked}, but only "
                f"{self._remaining_from(recorded)} of the total {self.total} remains "
                f"({len(recorded)} spends recorded so far). Nothing was spent and no "
                "noise was drawn."
            )

    def ledger(self):
        """Return the recorded events, oldest first (a copy).

        Returns
        -------
        list of LedgerEvent
            Every recorded event.
        """
        with self._locked(write=False) as conn:
            return self._read_events(conn)

    def spent(self):
        """Return the total spent, in the budget's currency.

        Returns
        -------
        ZCDP, PureDP or ApproxDP
            For a budget given as epsilon and delta, the spend as
            (epsilon, delta) at the budget's delta.
        """
        return compose(self.total, [e.cost for e in self.ledger()])

    def remaining(self):
        """Return what can still be spent.

        Returns
        -------
        ZCDP or PureDP
            Pure epsilon for a pure budget; otherwise the largest rho that still
            fits (for an (epsilon, delta) budget, given what is recorded).
        """
        return self._remaining_from([e.cost for e in self.ledger()])

    def _remaining_from(self, recorded):
        spent = compose(self.total, recorded)
        if isinstance(self.total, PureDP):
            return PureDP(max(self.total.epsilon - spent.epsilon, 0.0))
        if isinstance(self.total, ZCDP):
            return ZCDP(max(self.total.rho - spent.rho, 0.0))
        return ZCDP(_largest_rho_that_fits(self.total, recorded))

    def format_ledger(self):
        """Return the ledger as a text table, one line per event, and the totals.

        Returns
        -------
        str
            A human-readable listing.
        """
        events = self.ledger()
        lines = [
            f"{'time (UTC)':<20} {'pid':>7}  {'estimator':<22} {'mechanism':<30} cost"
        ]
        for e in events:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.time))
            lines.append(
                f"{stamp:<20} {e.pid:>7}  {e.estimator[:22]:<22} "
                f"{e.mechanism[:30]:<30} "
                f"{e.cost}"
            )
        recorded = [e.cost for e in events]
        lines.append(
            f"total {self.total}; spent {compose(self.total, recorded)} in "
            f"{len(events)} events; remaining {self._remaining_from(recorded)}"
        )
        return "\n".join(lines)

    def __repr__(self):
        try:
            events = self.ledger()
            recorded = [e.cost for e in events]
            state = (
                f"spent {compose(self.total, recorded)} in {len(events)} events, "
                f"remaining {self._remaining_from(recorded)}"
            )
        except LedgerError:
            state = "ledger unreachable"
        return f"PrivacyBudget(total {self.total}; {state}; path={self.path!r})"


def _as_list(costs):
    if isinstance(costs, (ZCDP, PureDP, ApproxDP)):
        return [costs]
    return list(costs)


def _largest_rho_that_fits(total, recorded):
    """Bisection for the largest extra rho with ``recorded + [ZCDP(rho)]`` in total."""
    if not within(total, [*recorded, ZCDP(0.0)]):
        return 0.0
    lo, hi = 0.0, max(total.epsilon, 1e-12)
    while within(total, [*recorded, ZCDP(hi)]) and hi < 1e12:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-12 * max(hi, 1e-300):
        mid = 0.5 * (lo + hi)
        if within(total, [*recorded, ZCDP(mid)]):
            lo = mid
        else:
            hi = mid
        if math.isclose(lo, hi, rel_tol=1e-12):
            break
    return lo
