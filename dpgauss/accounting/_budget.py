"""PrivacyBudget: a total and a ledger shared by every fit that draws on it.

The ledger is a SQLite file (Python's own ``sqlite3``) with three tables: ``meta``
(format and total), ``events`` (one row per release) and ``tally`` (one row: the
running total of the events). A spend is one ``BEGIN IMMEDIATE`` transaction that
reads the tally, checks that the new costs still fit in the total, records the
events and the new tally; SQLite's write lock makes that step atomic across
threads and processes, and its cost does not grow with the ledger. The tally
keeps the additive components that :func:`~dpgauss.accounting._composition.compose`
needs as exact sums (integers in units of 2**-1074, the spacing of the smallest
float), so the floats it yields are the correctly rounded sums ``math.fsum``
gives over all the events: a decision from the tally is the decision the whole
list of costs would give, however long the ledger. :meth:`PrivacyBudget.verify`
(also run when a budget opens an existing ledger) checks the tally against the
events.

A budget object is only a handle (the ledger's path and total): a clone, a deep
copy or a pickled copy in a worker process is another handle to the same ledger,
so every spend, wherever it happens, lands in the one ledger or raises.
"""

import contextlib
import os
import sqlite3
import tempfile
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from dpgauss.accounting._composition import (
    Parts,
    compose,
    compose_parts,
    within_parts,
)
from dpgauss.accounting._costs import (
    ZCDP,
    ApproxDP,
    PureDP,
    _check_delta,
    pure_to_zcdp,
)
from dpgauss.exceptions import BudgetExceededError, LedgerError, PrivacyAccountingError

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
    pid INTEGER NOT NULL,
    fit INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tally (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    events INTEGER NOT NULL,
    n_zcdp INTEGER NOT NULL, n_pure INTEGER NOT NULL, n_approx INTEGER NOT NULL,
    rho TEXT NOT NULL, pure TEXT NOT NULL, pure_rho TEXT NOT NULL,
    eps_a TEXT NOT NULL, delta_a TEXT NOT NULL
);
"""
_FORMAT_PREFIX = "dpgauss-ledger-"
_FORMAT_VERSION = 2
_FORMAT = f"{_FORMAT_PREFIX}{_FORMAT_VERSION}"
_TIMEOUT = 60.0  # seconds a transaction waits for another process's lock
_EVENT_COLUMNS = "time, estimator, mechanism, kind, rho, epsilon, delta, pid, id, fit"


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
    fit : int, default=0
        The id of the first event recorded by the same
        :meth:`PrivacyBudget.spend_many` call (one fit charges all its releases
        in one call), so the events of one fit share it (0 for an event not read
        from a ledger).

    Examples
    --------
    >>> from dpgauss import PrivacyBudget
    >>> from dpgauss.accounting import ZCDP
    >>> budget = PrivacyBudget(rho=1.0)
    >>> event = budget.spend(ZCDP(0.1), estimator="me", mechanism="gaussian")
    >>> event.cost, event.mechanism, event.id, event.fit
    (ZCDP(rho=0.1), 'gaussian', 1, 1)
    """

    time: float
    estimator: str
    mechanism: str
    cost: object
    pid: int
    id: int = 0
    fit: int = 0


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


# -- the running tally: exact sums ----------------------------------------------
# Every finite float is an integer multiple of 2**-1074, so a sum of floats is
# kept exactly as an integer count of that unit; ``count / _UNIT`` (int true
# division, correctly rounded in CPython) is then the float math.fsum returns for
# the same terms (both are the exact sum rounded to nearest, ties to even).
_UNIT = 2**1074
_SUMS = ("rho", "pure", "pure_rho", "eps_a", "delta_a")
_COUNTS = ("events", "n_zcdp", "n_pure", "n_approx")


def _units(value):
    """``value`` as an exact integer count of 2**-1074 (ValueError unless finite)."""
    numerator, denominator = float(value).as_integer_ratio()
    return numerator << (1075 - denominator.bit_length())  # denominator: 2**k


@dataclass(frozen=True)
class _Tally:
    """Counts and exact sums (in units of 2**-1074) of a list of costs."""

    events: int = 0
    n_zcdp: int = 0
    n_pure: int = 0
    n_approx: int = 0
    rho: int = 0
    pure: int = 0
    pure_rho: int = 0
    eps_a: int = 0
    delta_a: int = 0

    @classmethod
    def of(cls, costs):
        return cls.of_rows(_cost_to_row(cost) for cost in costs)

    @classmethod
    def of_rows(cls, rows):
        """The tally of ledger rows ``(kind, rho, epsilon, delta)``."""
        n = {"zcdp": 0, "pure": 0, "approx": 0}
        rho = pure = pure_rho = eps_a = delta_a = 0
        for kind, r, e, d in rows:
            n[kind] += 1  # KeyError: not a kind of cost
            if kind == "zcdp":
                rho += _units(r)
            elif kind == "pure":
                pure += _units(e)
                pure_rho += _units(pure_to_zcdp(e))
            else:
                eps_a += _units(e)
                delta_a += _units(d)
        return cls(
            sum(n.values()), n["zcdp"], n["pure"], n["approx"],
            rho, pure, pure_rho, eps_a, delta_a,
        )  # fmt: skip

    def describe(self):
        parts = self.parts()
        return (
            f"{self.events} events ({self.n_zcdp} zCDP, {self.n_pure} pure, "
            f"{self.n_approx} approximate): rho {parts.rho!r}, pure epsilon "
            f"{parts.pure!r}, approximate epsilon {parts.eps_a!r} and delta "
            f"{parts.delta_a!r}"
        )

    def __add__(self, other):
        names = _COUNTS + _SUMS
        return _Tally(**{k: getattr(self, k) + getattr(other, k) for k in names})

    def parts(self):
        sums = [getattr(self, k) / _UNIT for k in _SUMS]
        return Parts(*sums, self.n_zcdp, self.n_pure, self.n_approx)

    def to_row(self):
        return (
            *(getattr(self, k) for k in _COUNTS),
            *(hex(getattr(self, k)) for k in _SUMS),
        )

    @classmethod
    def from_row(cls, row):
        counts, sums = row[: len(_COUNTS)], row[len(_COUNTS) :]
        return cls(*counts, *(int(s, 16) for s in sums))


# -- the lifetime of temporary ledgers -------------------------------------------
# A temporary ledger belongs to the process that created it, identified by a
# token that is renewed in a forked child (so a child never counts as the owner).
# The owner keeps a count of its live handles per ledger; when the last one is
# garbage collected, or at interpreter exit, the owner removes the file. Handles
# in other processes (workers, forked children) neither count nor remove.
_token = uuid.uuid4().hex
_live = {}  # path -> number of live handles in this process (owner only)
_live_lock = threading.RLock()  # reentrant: a finalizer may run during a hold


def _after_fork_in_child():
    global _token, _live, _live_lock
    _token, _live, _live_lock = uuid.uuid4().hex, {}, threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _remove_files(path):
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.remove(path + suffix)


class _Session:
    """A handle's connection in one process, and the lock that serialises it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.conn = None
        self.pid = os.getpid()

    def close(self):
        conn, self.conn = self.conn, None
        if conn is None:
            return
        if self.pid != os.getpid():  # inherited through fork: leave it alone
            _inherited_connections.append(conn)
            return
        with contextlib.suppress(sqlite3.Error):
            conn.close()


# Connections inherited through fork are never used nor closed in the child
# (SQLite forbids carrying a connection across fork); keeping them referenced here
# stops their garbage collection from closing the parent's file descriptors.
_inherited_connections = []


def _let_go(path, token, session):
    """Finalizer of a handle to a temporary ledger: the last one removes it."""
    session.close()
    if token != _token:  # a forked child's inherited copy: not the owner
        return
    with _live_lock:
        count = _live.get(path, 0) - 1
        if count > 0:
            _live[path] = count
            return
        _live.pop(path, None)
    _remove_files(path)


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
        With ``epsilon``: the delta the spend is checked and reported at.
    path : str or path-like, default=None
        Where the SQLite ledger lives. ``None`` makes a temporary ledger (see
        Notes for its lifetime). A given path is durable: it is created if
        missing, and an existing ledger with the same total is resumed (with a
        different total it raises).

    Attributes
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total.
    path : str
        The ledger's file (absolute).

    See Also
    --------
    dpgauss.accounting.ZCDP : A cost in rho-zCDP, the library's currency.
    dpgauss.accounting.PureDP : A cost in pure epsilon-DP.
    dpgauss.accounting.ApproxDP : A cost in (epsilon, delta)-DP.

    Notes
    -----
    **Composition.** The rules are in :mod:`dpgauss.accounting._composition`:
    zCDP costs add; pure costs add; approximate costs add in epsilon and delta
    and compose with the zCDP part converted (Canonne, Kamath and Steinke 2020)
    at the delta left over. A sum may exceed the total by a relative 1e-12 so
    that a total split into float shares still fits. A spend reads only the
    ledger's running tally, so it costs the same with 10 or 100,000 events.

    **Reports in the budget's currency.** :meth:`spent`, :meth:`remaining`,
    :meth:`format_ledger` and the message of ``BudgetExceededError`` speak rho
    for a budget given as rho, pure epsilon for one given as epsilon, and
    epsilon at the budget's delta for one given as epsilon and delta. What
    remains is the total minus what is spent. For rho and pure epsilon, costs
    add, so it is the largest further cost of that kind that fits. For
    (epsilon, delta) it is the largest epsilon of a further (epsilon, 0)-DP
    release that fits (approximate epsilons add); a zCDP or pure release is
    composed with the whole ledger instead (the conversion of a sum of rho is
    smaller than the sum of the conversions, and an approximate cost's delta
    is taken from what converts the rest), so whether it fits is decided by
    :meth:`check`, not by comparing its own epsilon with what remains.

    **Lifetime of the temporary ledger** (``path=None``). The file, in the
    system's temporary folder, belongs to the process that created the budget.
    It lives while any handle to it lives in that process (the budget, its
    clones, and copies unpickled there, for example an estimator pickled and
    loaded again), and that process removes it when the last of them is
    garbage collected, or when it exits. No other process ever removes it:
    handles in worker processes and in children made by ``os.fork``
    (multiprocessing's fork start method) use it while it exists, but do not
    keep it alive. A handle whose temporary ledger is gone raises
    :class:`~dpgauss.exceptions.LedgerError`. Give ``path=...`` for any ledger
    that must outlast the creating process or its budget object (a pickle
    stored to disk, a study resumed later).

    **Errors.** A budget that cannot use its ledger raises
    :class:`~dpgauss.exceptions.LedgerError` naming the file and the fix: a
    missing file or folder, a read-only file or folder (a spend needs to write
    the file and create its journal beside it), a ledger locked by another
    process for longer than 60 s, a file that is not a dpgauss ledger (or one
    written by another version of dpgauss), or a running tally that disagrees
    with the events. It never starts a new, empty ledger behind the caller's
    back.

    Examples
    --------
    >>> from dpgauss import PrivacyBudget
    >>> from dpgauss.accounting import ZCDP
    >>> budget = PrivacyBudget(rho=1.0)
    >>> budget
    PrivacyBudget(rho=1.0)
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
        self._session = _Session()
        if path is None:
            name = f"dpgauss-ledger-{uuid.uuid4().hex}.sqlite"
            self.path = os.path.join(tempfile.gettempdir(), name)
            self._owner = (_token, os.getpid())
            try:
                self._create()
            except BaseException:
                _remove_files(self.path)
                raise
            self._hold()
        else:
            # Absolute, so that a copy in a worker with another working
            # directory still reaches this ledger.
            self.path = os.path.abspath(os.fspath(path))
            self._owner = None
            self._create()

    # -- sharing: a budget is a handle to one ledger --------------------------
    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        return {"path": self.path, "total": self.total, "owner": self._owner}

    def __setstate__(self, state):
        self.path = state["path"]
        self.total = state["total"]
        self._owner = state["owner"]
        self._session = _Session()
        if self._owner is not None and self._owner[0] == _token:
            with _live_lock:
                alive = self.path in _live
                if alive:  # another handle here keeps it: count this one too
                    self._hold()

    def _hold(self):
        """Count this handle as keeping its temporary ledger alive in this process."""
        with _live_lock:
            _live[self.path] = _live.get(self.path, 0) + 1
        weakref.finalize(self, _let_go, self.path, _token, self._session)

    # -- the SQLite file -------------------------------------------------------
    def _create(self):
        """Create the ledger, or open an existing one and check it is this budget's.

        An existing file is never altered: a file that is not SQLite, a SQLite
        database without a dpgauss ledger, a ledger of another format or with
        another total, or one whose tally disagrees with its events raises
        LedgerError and is left as it was.
        """
        existed = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        conn = None
        try:
            conn = sqlite3.connect(self.path, timeout=_TIMEOUT, isolation_level=None)
            if existed:
                self._check_meta(conn)
                with _transaction(conn, "BEGIN"):
                    self._verify(conn)
                return
            with _transaction(conn, "BEGIN IMMEDIATE"):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0:
                    conn.executemany(
                        "INSERT INTO meta (key, value) VALUES (?, ?)",
                        self._meta_for(self.total).items(),
                    )
                    conn.execute(
                        "INSERT INTO tally VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        _Tally().to_row(),
                    )
            self._check_meta(conn)  # a concurrent creator may have won
        except sqlite3.Error as exc:
            raise self._ledger_error(exc, creating=not existed) from exc
        finally:
            if conn is not None:
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
            raise self._ledger_error(exc) from exc
        found = stored.get("format", "")
        if found != _FORMAT:
            raise LedgerError(self._format_problem(found))
        wanted = self._meta_for(self.total)
        if stored != wanted:
            raise LedgerError(
                f"the ledger at {self.path!r} belongs to a different budget "
                f"({stored.get('kind')} {stored}); this budget is {self.total}. "
                "Give the total it was made with, or another path=... for a new "
                "ledger."
            )

    def _format_problem(self, found):
        version = found.removeprefix(_FORMAT_PREFIX)
        if found.startswith(_FORMAT_PREFIX) and version.isdigit():
            age = "an older" if int(version) < _FORMAT_VERSION else "a newer"
            return (
                f"the ledger at {self.path!r} was written by {age} dpgauss (format "
                f"{found!r}; this dpgauss reads {_FORMAT!r}). It is left as it is; "
                "read it with the dpgauss that wrote it, and give "
                "PrivacyBudget(..., path=...) a new file for a new ledger."
            )
        return (
            f"{self.path!r} is not a dpgauss ledger (no {_FORMAT!r} format mark). "
            "dpgauss never writes into another file; give PrivacyBudget(..., "
            "path=...) a new file or an existing dpgauss ledger."
        )

    def _connection(self):
        """Return this process's connection, opening it (never creating the file)."""
        session = self._session
        if session.conn is not None:
            return session.conn
        if not os.path.exists(self.path):
            raise self._gone_error()
        uri = Path(self.path).resolve().as_uri() + "?mode=rw"
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=_TIMEOUT,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            self._check_meta(conn)
        except BaseException:
            conn.close()
            raise
        session.conn = conn
        return conn

    def _session_here(self):
        """This handle's session in this process (a fresh one after a fork)."""
        session = self._session
        if session.pid != os.getpid():
            with _live_lock:
                session = self._session
                if session.pid != os.getpid():
                    if session.conn is not None:
                        _inherited_connections.append(session.conn)
                    session = self._session = _Session()
        return session

    @contextlib.contextmanager
    def _locked(self, write):
        """One transaction; ``write=True`` takes SQLite's write lock at once.

        Every ``sqlite3.Error`` becomes a LedgerError that names the file and the
        fix; the connection is then dropped, so the next call opens and checks
        the file again.
        """
        session = self._session_here()
        with session.lock:
            if not os.path.exists(self.path):  # an open connection would not notice
                session.close()
                raise self._gone_error()
            try:
                conn = self._connection()
                with _transaction(conn, "BEGIN IMMEDIATE" if write else "BEGIN"):
                    yield conn
            except sqlite3.Error as exc:
                session.close()
                raise self._ledger_error(exc) from exc

    # -- errors ------------------------------------------------------------------
    def _gone_error(self):
        where = f"the ledger at {self.path!r}"
        refuse = (
            "Spending here would forget the spends recorded in it, so dpgauss "
            "refuses to start an empty one."
        )
        if self._owner is None:
            return LedgerError(
                f"{where} is missing: it was moved or deleted after this budget "
                f"opened it. {refuse} Put the file back, or give "
                "PrivacyBudget(..., path=...) a new path for a new ledger."
            )
        _, pid = self._owner
        return LedgerError(
            f"{where} is gone: it is a temporary ledger (a PrivacyBudget made without "
            f"path=), which lives only while a handle to it is alive in the process "
            f"that created it (pid {pid}), and was removed when the last of them was "
            f"garbage collected or that process exited. {refuse} Give "
            "PrivacyBudget(..., path=...) for a ledger that must last longer (for "
            "example for an estimator pickled and loaded after its budget is gone)."
        )

    def _ledger_error(self, exc, *, creating=False):
        """Explain a ``sqlite3.Error`` on this ledger: what went wrong and the fix."""
        name = getattr(exc, "sqlite_errorname", "") or ""  # Python >= 3.11
        text = str(exc).lower()
        folder = os.path.dirname(self.path)
        where = f"the ledger at {self.path!r}"
        if os.path.isdir(self.path):
            return LedgerError(
                f"{self.path!r} is a folder, not a ledger file; give "
                "PrivacyBudget(..., path=...) a file name."
            )
        if not os.path.isdir(folder):
            return LedgerError(
                f"cannot open {where}: the folder {folder!r} does not exist. Create "
                "it, or give PrivacyBudget(..., path=...) a file in an existing folder."
            )
        if not creating and not os.path.exists(self.path):
            return self._gone_error()
        if "BUSY" in name or "LOCKED" in name or "locked" in text:
            return LedgerError(
                f"{where} stayed locked by another connection for more than "
                f"{_TIMEOUT:g} s, so nothing was recorded ({exc}). Another process "
                "is in a long transaction on it; retry when it has finished, and if "
                "no dpgauss process is running, close whatever holds the file (an "
                "interactive sqlite3 session, for example)."
            )
        if (
            "NOTADB" in name
            or "CORRUPT" in name
            or "not a database" in text
            or "malformed" in text
            or "no such table" in text
            or "no such column" in text
        ):
            return LedgerError(
                f"{self.path!r} is not a dpgauss ledger, or is damaged ({exc}). "
                "dpgauss never writes into another file; give PrivacyBudget(..., "
                "path=...) a new file or an intact dpgauss ledger."
            )
        if "DBMOVED" in name:
            return self._gone_error()
        writable = os.access(self.path, os.W_OK) or not os.path.exists(self.path)
        folder_writable = os.access(folder, os.W_OK | os.X_OK)
        readonly = "READONLY" in name or "readonly" in text
        cantopen = "CANTOPEN" in name or "unable to open" in text
        if (readonly or cantopen) and not writable:
            return LedgerError(
                f"{where} is read-only, so no spend can be recorded ({exc}); "
                "spent(), remaining() and ledger() still read it. Make the file "
                "writable (chmod u+w), or give PrivacyBudget(..., path=...) a "
                "writable file for a new ledger."
            )
        if (readonly or cantopen) and not folder_writable:
            action = "created" if creating else "written"
            return LedgerError(
                f"{where} cannot be {action}: its folder {folder!r} is read-only, "
                "and SQLite must create the ledger's journal "
                f"({os.path.basename(self.path)}-journal) beside it to record a "
                f"spend ({exc}). Make the folder writable, or give "
                "PrivacyBudget(..., path=...) a file in a writable folder."
            )
        return LedgerError(
            f"{where} cannot be used: {exc} ({name or type(exc).__name__}). Check "
            "that the file and its folder are readable and writable by this process "
            "and on a local file system, or give PrivacyBudget(..., path=...) "
            "another file."
        )

    # -- reading -------------------------------------------------------------------
    def _damaged(self, detail):
        return LedgerError(
            f"the ledger at {self.path!r} is inconsistent: {detail}. It was changed "
            "outside dpgauss or is damaged, and dpgauss will not use it: restore it "
            "from a copy, or give PrivacyBudget(..., path=...) a new file."
        )

    def _read_events(self, conn):
        rows = conn.execute(f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY id")
        try:
            return [
                LedgerEvent(t, est, mech, _row_to_cost(kind, r, e, d), pid, i, fit)
                for t, est, mech, kind, r, e, d, pid, i, fit in rows
            ]
        except (TypeError, ValueError) as exc:
            raise self._damaged(f"an event's cost is invalid ({exc})") from exc

    def _read_tally(self, conn):
        row = conn.execute(
            f"SELECT {', '.join(_COUNTS + _SUMS)} FROM tally WHERE id = 1"
        ).fetchone()
        try:
            return _Tally.from_row(row)
        except (TypeError, ValueError) as exc:
            raise self._damaged(
                f"its running tally is missing or invalid ({exc})"
            ) from exc

    def _verify(self, conn):
        """Check the tally and the fit ids against the events; return their number."""
        rows = conn.execute(
            "SELECT id, fit, kind, rho, epsilon, delta FROM events ORDER BY id"
        ).fetchall()
        try:
            counted = _Tally.of_rows(row[2:] for row in rows)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise self._damaged(f"an event's cost is invalid ({exc!r})") from exc
        stored = self._read_tally(conn)
        if stored != counted:
            raise self._damaged(
                f"its running tally ({stored.describe()}) does not match its events "
                f"({counted.describe()})"
            )
        fit = None
        for event_id, event_fit, *_ in rows:
            if event_fit not in (event_id, fit):
                raise self._damaged(
                    f"event {event_id} names fit {event_fit}, which is not the first "
                    "event of its spend"
                )
            fit = event_fit
        return len(rows)

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
        LedgerError
            If the ledger cannot be read.
        """
        costs = _as_list(costs)
        added = _Tally.of(costs)
        with self._locked(write=False) as conn:
            tally = self._read_tally(conn)
        self._require_fits(tally, added, costs)

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
        LedgerError
            If the ledger cannot be used; nothing is recorded.
        """
        return self.spend_many([(cost, mechanism)], estimator=estimator)[0]

    def spend_many(self, items, *, estimator=""):
        """Check and record several costs together: all are recorded or none.

        The events share ``fit``, the id of the first of them: one fit charges
        all its releases in one call.

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
        LedgerError
            If the ledger cannot be used; nothing is recorded.
        """
        items = [(cost, str(mech)) for cost, mech in items]
        rows = [_cost_to_row(cost) for cost, _ in items]
        costs = [cost for cost, _ in items]
        added = _Tally.of(costs)
        now, pid, estimator = time.time(), os.getpid(), str(estimator)
        with self._locked(write=True) as conn:
            tally = self._read_tally(conn)
            self._require_fits(tally, added, costs)
            # The fit's id is its first event's: under the write lock, AUTOINCREMENT
            # gives the next id as the last one recorded (sqlite_sequence) + 1.
            fit = (
                1
                + (
                    conn.execute(
                        "SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence "
                        "WHERE name = 'events'"
                    ).fetchone()[0]
                )
            )
            ids = [
                conn.execute(
                    "INSERT INTO events (time, estimator, mechanism, kind, rho, "
                    "epsilon, delta, pid, fit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (now, estimator, mech, *row, pid, fit),
                ).lastrowid
                for (_, mech), row in zip(items, rows, strict=True)
            ]
            if ids and ids[0] != fit:
                raise self._damaged(
                    f"its id sequence is at {fit - 1} but the next event got id "
                    f"{ids[0]}"
                )
            conn.execute(
                f"UPDATE tally SET {', '.join(f'{k} = ?' for k in _COUNTS + _SUMS)} "
                "WHERE id = 1",
                (tally + added).to_row(),
            )
        return [
            LedgerEvent(now, estimator, m, c, pid, i, fit)
            for (c, m), i in zip(items, ids, strict=True)
        ]

    def _require_fits(self, tally, added, costs):
        after = tally + added
        if within_parts(self.total, after.parts()):
            return
        asked = compose(self.total, costs)
        spent = compose_parts(self.total, tally.parts())
        try:
            would = f"with it the spent total would be {self._composed(after)}"
        except PrivacyAccountingError:
            would = (
                f"with it the (epsilon, delta) costs would use delta="
                f"{after.parts().delta_a:.3g}, all of the budget's delta="
                f"{self.total.delta:.3g}, leaving none for its other costs"
            )
        raise BudgetExceededError(
            f"privacy budget exceeded: this spend needs {asked}, but only "
            f"{self._remaining_from(spent)} of the total {self.total} remains "
            f"({spent} spent in {_plural(tally.events, 'event')}); {would}. "
            "Nothing was spent and no noise was drawn."
        )

    def _composed(self, tally):
        return compose_parts(self.total, tally.parts())

    def ledger(self):
        """Return the recorded events, oldest first (a copy).

        Returns
        -------
        list of LedgerEvent
            Every recorded event.

        Raises
        ------
        LedgerError
            If the ledger cannot be read.
        """
        with self._locked(write=False) as conn:
            return self._read_events(conn)

    def verify(self):
        """Check the ledger's running tally and fit ids against its events.

        Run when a budget opens an existing ledger; call it to audit a ledger
        shared with other processes. It reads every event.

        Returns
        -------
        int
            The number of events checked.

        Raises
        ------
        LedgerError
            If the tally (counts and exact sums of the costs) differs from the
            events, or an event's ``fit`` is not the first event of its spend.
        """
        with self._locked(write=False) as conn:
            return self._verify(conn)

    def spent(self):
        """Return the total spent, in the budget's currency.

        Returns
        -------
        ZCDP, PureDP or ApproxDP
            Rho, pure epsilon, or for a budget given as epsilon and delta,
            (epsilon, delta) at the budget's delta.

        Raises
        ------
        LedgerError
            If the ledger cannot be read.
        """
        with self._locked(write=False) as conn:
            tally = self._read_tally(conn)
        return self._composed(tally)

    def remaining(self):
        """Return what is left: the total minus what is spent, in its currency.

        Returns
        -------
        ZCDP, PureDP or ApproxDP
            ``total - spent()`` (never below 0) as rho, as pure epsilon, or as
            epsilon at the budget's delta. For rho and pure epsilon it is the
            largest further cost of that kind that fits; for (epsilon, delta) it
            is the largest epsilon of a further (epsilon, 0)-DP release that fits,
            while a zCDP or pure release is composed with the whole ledger (see
            the class Notes), so use :meth:`check` to know whether it fits.

        Raises
        ------
        LedgerError
            If the ledger cannot be read.
        """
        return self._remaining_from(self.spent())

    def _remaining_from(self, spent):
        total = self.total
        if isinstance(total, ZCDP):
            return ZCDP(max(total.rho - spent.rho, 0.0))
        left = max(total.epsilon - spent.epsilon, 0.0)
        return (
            PureDP(left) if isinstance(total, PureDP) else ApproxDP(left, total.delta)
        )

    def format_ledger(self, *, per_event=False):
        """Return the ledger as a text table and a line of totals.

        Parameters
        ----------
        per_event : bool, default=False
            ``False``: one line per fit (one :meth:`spend_many` call): time (UTC),
            process id, fit id, estimator, number of releases, and the fit's cost
            on its own in the budget's currency (for an (epsilon, delta) budget
            the fits' epsilons do not add up to the spent total, which composes
            all events together). ``True``: one line per event, with its
            mechanism and its cost as recorded.

        Returns
        -------
        str
            A human-readable listing; names are shown in full.

        Raises
        ------
        LedgerError
            If the ledger cannot be read.
        """
        with self._locked(write=False) as conn:
            events, tally = self._read_events(conn), self._read_tally(conn)
        table = _event_table(events) if per_event else _fit_table(self.total, events)
        spent = self._composed(tally)
        totals = (
            f"total {self.total}; spent {spent} in "
            f"{_plural(len({e.fit for e in events}), 'fit')} "
            f"({_plural(tally.events, 'event')}); remaining "
            f"{self._remaining_from(spent)}"
        )
        return "\n".join([*table, totals])

    def __repr__(self):
        total = self.total
        if isinstance(total, ZCDP):
            args = f"rho={total.rho!r}"
        elif isinstance(total, PureDP):
            args = f"epsilon={total.epsilon!r}"
        else:
            args = f"epsilon={total.epsilon!r}, delta={total.delta!r}"
        return f"PrivacyBudget({args})"


@contextlib.contextmanager
def _transaction(conn, begin):
    """Run the body in one transaction, rolled back on any exception."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def _as_list(costs):
    if isinstance(costs, (ZCDP, PureDP, ApproxDP)):
        return [costs]
    return list(costs)


def _plural(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _stamp(seconds):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def _fit_table(total, events):
    """One line per fit: its first event's time, pid and estimator, its cost."""
    rows = []
    for fit, group in groupby(events, key=lambda e: e.fit):
        group = list(group)
        cost = compose(total, [e.cost for e in group])
        first = group[0]
        rows.append(
            (_stamp(first.time), first.pid, fit, first.estimator, len(group), cost)
        )
    return _table(("time (UTC)", "pid", "fit", "estimator", "releases", "cost"), rows)


def _event_table(events):
    """One line per event, with its mechanism and its cost as recorded."""
    header = ("time (UTC)", "pid", "fit", "id", "estimator", "mechanism", "cost")
    rows = [
        (_stamp(e.time), e.pid, e.fit, e.id, e.estimator, e.mechanism, e.cost)
        for e in events
    ]
    return _table(header, rows)


def _cell(value):
    """A table cell: the value in full, control characters escaped, "-" if empty."""
    text = str(value)
    if not text:
        return "-"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _table(header, rows):
    """Left-aligned text columns (numbers right-aligned), wide enough for all."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[k]) for r in cells)]) for k, h in enumerate(header)]
    numeric = [all(isinstance(row[k], int) for row in rows) for k in range(len(header))]

    def line(values):
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return [line(header), *(line(r) for r in cells)]
