"""The ledger as text: tables of fits or events, and a line of totals."""

import time
from itertools import groupby

from dpgauss.accounting._composition import compose

__all__ = ["format_ledger", "plural"]


def format_ledger(total, events, *, spent, remaining, n_events, per_event=False):
    """The ledger's table (one line per fit, or per event) and a line of totals.

    Parameters
    ----------
    total : ZCDP, PureDP or ApproxDP
        The budget's total.
    events : list of LedgerEvent
        The recorded events, oldest first.
    spent, remaining : ZCDP, PureDP or ApproxDP
        The ledger's composed total and what remains, in the total's currency.
    n_events : int
        The number of events the ledger's tally counts.
    per_event : bool, default=False
        One line per event instead of one per fit.

    Returns
    -------
    str
        The listing.
    """
    # A tag column where any handle was tagged (PrivacyBudget.tagged).
    tagged = any(getattr(e, "tag", "") for e in events)
    if per_event:
        table = _event_table(events, tagged)
    else:
        table = _fit_table(total, events, tagged)
    totals = (
        f"total {total}; spent {spent} in "
        f"{plural(len({e.fit for e in events}), 'fit')} "
        f"({plural(n_events, 'event')}); remaining {remaining}"
    )
    return "\n".join([*table, totals])


def plural(count, noun):
    """``"1 fit"``, ``"2 fits"``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _stamp(seconds):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def _fit_table(total, events, tagged=False):
    """One line per fit: its first event's time, pid, estimator (and tag),
    its cost."""
    rows = []
    for fit, group in groupby(events, key=lambda e: e.fit):
        group = list(group)
        cost = compose(total, [e.cost for e in group])
        first = group[0]
        tag = (first.tag,) if tagged else ()
        rows.append(
            (
                _stamp(first.time),
                first.pid,
                fit,
                first.estimator,
                *tag,
                len(group),
                cost,
            )
        )
    tag = ("tag",) if tagged else ()
    header = ("time (UTC)", "pid", "fit", "estimator", *tag, "releases", "cost")
    return _table(header, rows)


def _event_table(events, tagged=False):
    """One line per event, with its mechanism (and tag) and its cost as
    recorded."""
    tag = ("tag",) if tagged else ()
    header = ("time (UTC)", "pid", "fit", "id", "estimator", "mechanism", *tag, "cost")
    rows = [
        (_stamp(e.time), e.pid, e.fit, e.id, e.estimator, e.mechanism)
        + ((e.tag,) if tagged else ())
        + (e.cost,)
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
