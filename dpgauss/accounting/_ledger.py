"""The ledger's storage: one SQLite file, its connections and its lifetime.

The ledger is a SQLite file (Python's own ``sqlite3``) with three tables: ``meta``
(format and total), ``events`` (one row per release) and ``tally`` (one row: the
running total of the events, a :class:`~dpgauss.accounting._composition.Tally`
whose exact sums are stored as hexadecimal integers). A spend is one ``BEGIN
IMMEDIATE`` transaction (:meth:`Ledger.locked`) that reads the tally, lets the
budget check the new costs, and records the events and the new tally; SQLite's
write lock makes that step atomic across threads and processes, and its cost
does not grow with the ledger. :meth:`Ledger.verify` (also run when an existing
ledger is opened) checks the tally against the events.

This module owns everything about the file: its schema and format mark, one
connection per process (a fresh one after a fork), the lifetime of temporary
ledgers, and the translation of every ``sqlite3.Error`` into a
:class:`~dpgauss.exceptions.LedgerError` that names the file and the fix.
"""

import contextlib
import os
import sqlite3
import tempfile
import threading
import uuid
import weakref
from pathlib import Path

from dpgauss.accounting._composition import _COUNTS, _SUMS, Tally, components
from dpgauss.accounting._costs import ZCDP, ApproxDP, PureDP
from dpgauss.exceptions import LedgerError

__all__ = ["Ledger"]

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
    fit INTEGER NOT NULL,
    tag TEXT NOT NULL DEFAULT ''
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
_FORMAT_VERSION = 3  # 3: events carry a tag
_FORMAT = f"{_FORMAT_PREFIX}{_FORMAT_VERSION}"
_TIMEOUT = 60.0  # seconds a transaction waits for another process's lock
_EVENT_COLUMNS = (
    "time, estimator, mechanism, kind, rho, epsilon, delta, pid, id, fit, tag"
)


def _total_from_meta(stored):
    """The total a ledger's ``meta`` describes: the inverse of
    :meth:`Ledger._meta_for` (its kind, then its fields as float reprs)."""
    kind = {"ZCDP": ZCDP, "PureDP": PureDP, "ApproxDP": ApproxDP}[stored["kind"]]
    fields = {k: v for k, v in stored.items() if k not in ("format", "kind")}
    return kind(**{name: float(value) for name, value in fields.items()})


def _row_to_cost(kind, rho, epsilon, delta):
    if kind == "zcdp":
        return ZCDP(rho)
    if kind == "pure":
        return PureDP(epsilon)
    return ApproxDP(epsilon, delta)


def _tally_to_row(tally):
    return (
        *(getattr(tally, k) for k in _COUNTS),
        *(hex(getattr(tally, k)) for k in _SUMS),
    )


def _tally_from_row(row):
    counts, sums = row[: len(_COUNTS)], row[len(_COUNTS) :]
    return Tally(*counts, *(int(s, 16) for s in sums))


def _describe(tally):
    parts = tally.parts()
    return (
        f"{tally.events} events ({tally.n_zcdp} zCDP, {tally.n_pure} pure, "
        f"{tally.n_approx} approximate): rho {parts.rho!r}, pure epsilon "
        f"{parts.pure!r}, approximate epsilon {parts.eps_a!r} and delta "
        f"{parts.delta_a!r}"
    )


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


class Ledger:
    """One handle on a ledger file, and its connection in this process.

    Parameters
    ----------
    path : str
        The ledger's file (absolute).
    total : ZCDP, PureDP or ApproxDP
        The total the ledger was made for (checked against its ``meta``).
    owner : tuple or None
        ``(token, pid)`` of the process that created a temporary ledger, else
        ``None`` (a durable ledger).
    """

    def __init__(self, path, total, owner):
        self.path = path
        self.total = total
        self.owner = owner
        self._session = _Session()
        #: The last tally this handle read or committed in this process (None:
        #: none yet). A ledger only grows, so it is a lower bound of what is
        #: spent: a cost it refuses is refused by the ledger too.
        self.seen = None

    @classmethod
    def create(cls, total, path=None):
        """Create or resume a ledger; ``path=None`` makes a temporary one."""
        if path is None:
            name = f"dpgauss-ledger-{uuid.uuid4().hex}.sqlite"
            path = os.path.join(tempfile.gettempdir(), name)
            ledger = cls(path, total, (_token, os.getpid()))
            try:
                ledger._create()
            except BaseException:
                _remove_files(path)
                raise
            ledger._hold()
            return ledger
        # Absolute, so that a copy in a worker with another working directory
        # still reaches this ledger.
        ledger = cls(os.path.abspath(os.fspath(path)), total, None)
        ledger._create()
        return ledger

    @classmethod
    def reopen(cls, path, total, owner):
        """A handle unpickled here: it keeps a temporary ledger alive if one does."""
        ledger = cls(path, total, owner)
        if owner is not None and owner[0] == _token:
            with _live_lock:
                alive = path in _live
                if alive:  # another handle here keeps it: count this one too
                    ledger._hold()
        return ledger

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
                    self.verify(conn)  # reads the tally, kept in ``seen``
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
                        _tally_to_row(Tally()),
                    )
            self._check_meta(conn)  # a concurrent creator may have won
            if self.seen is None:  # nothing spent: a lower bound whoever won
                self.seen = Tally()
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

    @classmethod
    def stored_total(cls, path):
        """The total an existing ledger at ``path`` was made for (read from its
        ``meta``, without a budget); raises LedgerError where there is none."""
        path = os.path.abspath(os.fspath(path))
        if not (os.path.exists(path) and os.path.getsize(path) > 0):
            raise LedgerError(
                f"there is no ledger at {path!r}: PrivacyBudget(rho=..., path=...) "
                "creates one."
            )
        probe = cls(path, None, None)
        conn = None
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=_TIMEOUT)
            stored = dict(conn.execute("SELECT key, value FROM meta"))
        except sqlite3.Error as exc:
            raise probe._ledger_error(exc) from exc
        finally:
            if conn is not None:
                conn.close()
        if stored.get("format", "") != _FORMAT:
            raise LedgerError(probe._format_problem(stored.get("format", "")))
        try:
            return _total_from_meta(stored)
        except (KeyError, TypeError, ValueError) as exc:
            raise probe.damaged(f"its total is unreadable ({exc!r})") from exc

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
            try:
                made = f"a total of {_total_from_meta(stored)}"
            except (KeyError, TypeError, ValueError):
                made = "another total"
            raise LedgerError(
                f"the ledger at {self.path!r} was made for {made}; this budget's "
                f"total is {self.total}. PrivacyBudget.open(path) opens it with "
                "its own total; give another path=... for a new ledger."
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
    def locked(self, write):
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
        if self.owner is None:
            return LedgerError(
                f"{where} is missing: it was moved or deleted after this budget "
                f"opened it. {refuse} Put the file back, or give "
                "PrivacyBudget(..., path=...) a new path for a new ledger."
            )
        _, pid = self.owner
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
    def damaged(self, detail):
        return LedgerError(
            f"the ledger at {self.path!r} is inconsistent: {detail}. It was changed "
            "outside dpgauss or is damaged, and dpgauss will not use it: restore it "
            "from a copy, or give PrivacyBudget(..., path=...) a new file."
        )

    def read_events(self, conn):
        """The events, oldest first, as ``(time, estimator, mechanism, cost, pid,
        id, fit, tag)`` tuples."""
        rows = conn.execute(f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY id")
        try:
            return [
                (t, est, mech, _row_to_cost(kind, r, e, d), pid, i, fit, tag)
                for t, est, mech, kind, r, e, d, pid, i, fit, tag in rows
            ]
        except (TypeError, ValueError) as exc:
            raise self.damaged(f"an event's cost is invalid ({exc})") from exc

    def read_tally(self, conn):
        row = conn.execute(
            f"SELECT {', '.join(_COUNTS + _SUMS)} FROM tally WHERE id = 1"
        ).fetchone()
        try:
            tally = _tally_from_row(row)
        except (TypeError, ValueError) as exc:
            raise self.damaged(
                f"its running tally is missing or invalid ({exc})"
            ) from exc
        self.seen = tally  # read inside a transaction: spent at that moment
        return tally

    def verify(self, conn):
        """Check the tally and the fit ids against the events; return their number."""
        rows = conn.execute(
            "SELECT id, fit, kind, rho, epsilon, delta FROM events ORDER BY id"
        ).fetchall()
        try:
            counted = Tally.of_components(row[2:] for row in rows)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise self.damaged(f"an event's cost is invalid ({exc!r})") from exc
        stored = self.read_tally(conn)
        if stored != counted:
            raise self.damaged(
                f"its running tally ({_describe(stored)}) does not match its events "
                f"({_describe(counted)})"
            )
        fit = None
        for event_id, event_fit, *_ in rows:
            if event_fit not in (event_id, fit):
                raise self.damaged(
                    f"event {event_id} names fit {event_fit}, which is not the first "
                    "event of its spend"
                )
            fit = event_fit
        return len(rows)

    def append(self, conn, items, *, estimator, now, pid, tally, tag=""):
        """Record ``(cost, mechanism)`` items as one fit (tagged ``tag``) and
        store ``tally``.

        Run inside :meth:`locked` with ``write=True``; returns the fit's id and
        the events' ids.
        """
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
                "epsilon, delta, pid, fit, tag) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (now, estimator, mech, *components(cost), pid, fit, tag),
            ).lastrowid
            for cost, mech in items
        ]
        if ids and ids[0] != fit:
            raise self.damaged(
                f"its id sequence is at {fit - 1} but the next event got id {ids[0]}"
            )
        conn.execute(
            f"UPDATE tally SET {', '.join(f'{k} = ?' for k in _COUNTS + _SUMS)} "
            "WHERE id = 1",
            _tally_to_row(tally),
        )
        return fit, ids


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
