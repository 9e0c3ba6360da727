"""PrivacyBudget: a total and a ledger shared by every fit that draws on it.

A spend reads the ledger's running tally (a
:class:`~dpgauss.accounting._composition.Tally`: counts and exact sums of the
additive components that :func:`~dpgauss.accounting._composition.compose_parts`
needs), checks that the new costs still fit in the total, and records the events
and the new tally, all in one transaction of the ledger (see
:mod:`dpgauss.accounting._ledger` for the storage). The floats the tally yields
are the correctly rounded sums ``math.fsum`` gives over all the events, so a
decision from the tally is the decision the whole list of costs would give,
however long the ledger. :meth:`PrivacyBudget.verify` (also run when a budget
opens an existing ledger) checks the tally against the events.

A budget object is only a handle (the ledger's path and total): a clone, a deep
copy or a pickled copy in a worker process is another handle to the same ledger,
so every spend, wherever it happens, lands in the one ledger or raises.
"""

import os
import time
from dataclasses import dataclass

from dpgauss.accounting._composition import (
    Tally,
    compose,
    compose_parts,
    within_parts,
)
from dpgauss.accounting._costs import ZCDP, ApproxDP, PureDP
from dpgauss.accounting._ledger import Ledger
from dpgauss.accounting._parameters import budget_total
from dpgauss.accounting._report import format_ledger, plural
from dpgauss.exceptions import BudgetExceededError, PrivacyAccountingError

__all__ = ["LedgerEvent", "PrivacyBudget"]


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
    tag : str, default=""
        The tag of the budget handle that recorded it (:meth:`PrivacyBudget.
        tagged`): an experiment's name, say.

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
    tag: str = ""


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
        self.total = budget_total(rho, epsilon, delta)
        self._ledger = Ledger.create(self.total, path)
        self.path = self._ledger.path
        self.tag = ""

    def tagged(self, tag):
        """Return a handle to the same ledger whose spends carry ``tag``.

        Give it to the fits of one experiment (it travels with them through
        clones, searches and worker processes, as any handle does); the
        ledger, :meth:`format_ledger` and :meth:`to_frame` then show which
        experiment spent what. The total and the ledger are shared: tagging
        spends nothing and splits nothing.

        Parameters
        ----------
        tag : str
            The experiment's name.

        Returns
        -------
        PrivacyBudget
            A handle with ``tag``.

        Examples
        --------
        >>> from dpgauss import PrivacyBudget
        >>> from dpgauss.accounting import ZCDP
        >>> budget = PrivacyBudget(rho=1.0)
        >>> sweep = budget.tagged("rho sweep")
        >>> sweep
        PrivacyBudget(rho=1.0, tag='rho sweep')
        >>> _ = sweep.spend(ZCDP(0.25), estimator="me")
        >>> budget.ledger()[0].tag, budget.spent()
        ('rho sweep', ZCDP(rho=0.25))
        """
        handle = object.__new__(type(self))
        handle.__dict__.update(self.__dict__)
        handle.tag = str(tag)
        return handle

    @classmethod
    def open(cls, path):
        """Open an existing ledger with the total it was made for.

        For a study resumed later, or a ledger handed over for review, when
        its total is not at hand: the total is read from the ledger itself,
        which is checked as any existing ledger is.

        Parameters
        ----------
        path : str or path-like
            The ledger's file.

        Returns
        -------
        PrivacyBudget
            A handle to that ledger.

        Raises
        ------
        LedgerError
            If there is no ledger at ``path``, or it cannot be read.

        Examples
        --------
        >>> import os, tempfile
        >>> from dpgauss import PrivacyBudget
        >>> from dpgauss.accounting import ZCDP
        >>> path = os.path.join(tempfile.mkdtemp(), "study.ledger")
        >>> _ = PrivacyBudget(rho=2.0, path=path).spend(ZCDP(0.5))
        >>> budget = PrivacyBudget.open(path)
        >>> budget, budget.spent()
        (PrivacyBudget(rho=2.0), ZCDP(rho=0.5))
        """
        return cls(**_total_parameters(Ledger.stored_total(path)), path=path)

    # -- sharing: a budget is a handle to one ledger --------------------------
    def __sklearn_clone__(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        return {
            "path": self.path,
            "total": self.total,
            "owner": self._ledger.owner,
            "tag": self.tag,
        }

    def __setstate__(self, state):
        self.path = state["path"]
        self.total = state["total"]
        self.tag = state.get("tag", "")
        self._ledger = Ledger.reopen(self.path, self.total, state["owner"])

    # -- public API ---------------------------------------------------------------
    def check(self, costs, *, fresh=True):
        """Raise if ``costs`` would not fit in what remains; record nothing.

        Parameters
        ----------
        costs : cost or sequence of costs
            ZCDP, PureDP or ApproxDP values.
        fresh : bool, default=True
            Read the ledger's tally (one read transaction). False: check
            against the tally this handle last read or committed in this
            process (read when there is none), with no transaction. A ledger
            only grows, so that tally is a lower bound of what is spent: what
            it refuses the ledger refuses, but a spend another handle made
            since is not seen. A fit's early check, before it reads any row,
            uses it; its spend checks the ledger again inside its write
            transaction, so a fit costs one transaction.

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
        added = Tally.of(costs)
        tally = None if fresh else self._ledger.seen
        if tally is None:
            with self._ledger.locked(write=False) as conn:
                tally = self._ledger.read_tally(conn)
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
        costs = [cost for cost, _ in items]
        added = Tally.of(costs)
        now, pid, estimator = time.time(), os.getpid(), str(estimator)
        ledger = self._ledger
        with ledger.locked(write=True) as conn:
            tally = ledger.read_tally(conn)
            self._require_fits(tally, added, costs)
            fit, ids = ledger.append(
                conn,
                items,
                estimator=estimator,
                now=now,
                pid=pid,
                tally=tally + added,
                tag=self.tag,
            )
        ledger.seen = tally + added  # committed
        return [
            LedgerEvent(now, estimator, m, c, pid, i, fit, self.tag)
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
            f"({spent} spent in {plural(tally.events, 'event')}); {would}. "
            f"Nothing was spent and no noise was drawn. {self._where()}"
        )

    def _where(self):
        """Which ledger, for an error message: a durable one keeps every spend
        across runs, which a script run again meets as a spent budget."""
        if self._ledger.owner is not None:
            return f"The ledger is the temporary file {self.path!r}."
        return (
            f"The ledger is {self.path!r}, a durable file that keeps every spend "
            "across runs: PrivacyBudget.open(path).format_ledger() shows them, "
            "and a new study needs a new path=..."
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
        with self._ledger.locked(write=False) as conn:
            return [LedgerEvent(*event) for event in self._ledger.read_events(conn)]

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
        with self._ledger.locked(write=False) as conn:
            return self._ledger.verify(conn)

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
        with self._ledger.locked(write=False) as conn:
            tally = self._ledger.read_tally(conn)
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

    def to_frame(self):
        """Return the ledger as a pandas DataFrame, one row per event.

        Returns
        -------
        pandas.DataFrame
            Columns ``id``, ``fit``, ``time`` (UTC timestamps), ``pid``,
            ``estimator``, ``mechanism``, ``tag`` (:meth:`tagged`), ``kind``
            (``"ZCDP"``, ``"PureDP"``
            or ``"ApproxDP"``), the cost's ``rho``, ``epsilon`` and
            ``delta`` (NaN where the kind has none) and ``as_rho``, the
            zCDP cost it implies (a pure epsilon's ``epsilon^2 / 2``; NaN
            for an (epsilon, delta) cost, which implies none): what a rho
            budget charged for it, so ``as_rho`` sums per tag or
            estimator to their share of ``spent()``.

        Raises
        ------
        ImportError
            If pandas is not installed.
        LedgerError
            If the ledger cannot be read.

        Examples
        --------
        >>> from dpgauss import PrivacyBudget
        >>> from dpgauss.accounting import ZCDP, PureDP
        >>> budget = PrivacyBudget(rho=1.0)
        >>> _ = budget.spend(ZCDP(0.25), estimator="A", mechanism="gaussian:mean")
        >>> _ = budget.spend(PureDP(0.5), estimator="B", mechanism="laplace:count")
        >>> budget.to_frame()[["estimator", "kind", "rho", "epsilon", "as_rho"]]
          estimator    kind   rho  epsilon  as_rho
        0         A    ZCDP  0.25      NaN   0.250
        1         B  PureDP   NaN      0.5   0.125
        >>> float(budget.to_frame()["as_rho"].sum()) == budget.spent().rho
        True
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pandas is optional
            raise ImportError(
                "PrivacyBudget.to_frame needs pandas (pip install pandas); "
                "format_ledger() gives the same table as text."
            ) from exc
        nan = float("nan")
        rows = [
            {
                "id": e.id,
                "fit": e.fit,
                "time": pd.Timestamp(e.time, unit="s", tz="UTC"),
                "pid": e.pid,
                "estimator": e.estimator,
                "mechanism": e.mechanism,
                "tag": e.tag,
                "kind": type(e.cost).__name__,
                "rho": getattr(e.cost, "rho", nan),
                "epsilon": getattr(e.cost, "epsilon", nan),
                "delta": getattr(e.cost, "delta", nan),
                "as_rho": nan if isinstance(e.cost, ApproxDP) else e.cost.to_zcdp().rho,
            }
            for e in self.ledger()
        ]
        columns = ["id", "fit", "time", "pid", "estimator", "mechanism", "tag", "kind"]
        costs = ["rho", "epsilon", "delta", "as_rho"]
        return pd.DataFrame(rows, columns=[*columns, *costs])

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
        with self._ledger.locked(write=False) as conn:
            events = [LedgerEvent(*e) for e in self._ledger.read_events(conn)]
            tally = self._ledger.read_tally(conn)
        spent = self._composed(tally)
        return format_ledger(
            self.total,
            events,
            spent=spent,
            remaining=self._remaining_from(spent),
            n_events=tally.events,
            per_event=per_event,
        )

    def __repr__(self):
        parameters = _total_parameters(self.total)
        args = ", ".join(f"{name}={value!r}" for name, value in parameters.items())
        if self.tag:
            args += f", tag={self.tag!r}"
        return f"PrivacyBudget({args})"


def _total_parameters(total):
    """The keyword arguments of :class:`PrivacyBudget` that give ``total``."""
    if isinstance(total, ZCDP):
        return {"rho": total.rho}
    if isinstance(total, PureDP):
        return {"epsilon": total.epsilon}
    return {"epsilon": total.epsilon, "delta": total.delta}


def _as_list(costs):
    if isinstance(costs, (ZCDP, PureDP, ApproxDP)):
        return [costs]
    return list(costs)
