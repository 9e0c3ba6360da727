"""How many groups SubsampleAggregate splits the rows into, and when it refuses.

Every decision here reads public values only (n, d, the statistic's shape, the
plan's costs, the parameters) and is taken before the spend: none is a release.

Two constraints pull k apart. Each group needs enough rows for its fit to be
defined and not much noisier than its size suggests
(:func:`~dpgauss.ensemble._group_fits.min_group_rows`: ``2 (q + 1)`` rows for q
parameters), which caps k at ``n // floor``. The winsorized aggregator's private
median and radius searches need at least k_min candidates
(:func:`~dpgauss.releases._winsorized.winsorized_min_groups`) or they may go
astray. Within ``[k_min, n // floor]`` the "auto" groups are the library's
default size, moved into the interval; when the interval is empty, no k is
sound and the fit refuses before the spend (``on_useless``).
"""

import numpy as np

from dpgauss.accounting._plan import ReleasePlan
from dpgauss.ensemble._group_fits import MIN_GROUP_ROWS, auto_groups, min_group_rows
from dpgauss.ensemble._populous_aggregate import (
    MAX_POPULOUS_GROUPS,
    populous_min_groups,
)
from dpgauss.ensemble._psd_aggregate import (
    MAX_PSD_GROUPS,
    PSD_ROWS_PER_DIM,
    matrix_size,
)
from dpgauss.releases._winsorized import (
    MIN_GROUPS,
    WINSOR_RISK,
    winsorized_entries,
    winsorized_min_groups,
)

__all__ = ["choose_groups", "group_floor", "useless_reason"]


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


def group_floor(est, data):
    """The fewest rows per group for ``est``'s statistic on ``data`` (public)."""
    if est.space == "psd":
        return max(MIN_GROUP_ROWS, PSD_ROWS_PER_DIM * matrix_size(data.public["shape"]))
    return min_group_rows(_size(data.public["shape"]), data.d)


def choose_groups(est, data, total, classifier):
    """k from public values only; ValueError (nothing spent) when no group
    split is possible at all."""
    n, d = data.n, data.d
    is_populous = est.aggregator == "populous"
    auto = est.radius == "auto"
    need = populous_min_groups(total, auto) if is_populous else MIN_GROUPS
    floor = group_floor(est, data)
    if est.n_groups != "auto":
        k = int(est.n_groups)
    else:
        q = matrix_size(data.public["shape"]) if est.space == "psd" else 0
        k = auto_groups(n, d, classifier, PSD_ROWS_PER_DIM * q, floor)
        if is_populous:
            most = MAX_PSD_GROUPS if est.space == "psd" else MAX_POPULOUS_GROUPS
            k = min(max(k, need), most)
        else:  # enough groups for sane searches, none smaller than the floor
            plan = ReleasePlan(total, winsorized_entries(total, auto))
            fewest = winsorized_min_groups(plan, _size(data.public["shape"]))
            k = max(k, min(fewest, n // floor))
            # Too few rows for the floor: the smallest split that runs, which
            # useless_reason then refuses (or, on request, spends with a
            # warning).
            k = max(k, min(MIN_GROUPS, n // MIN_GROUP_ROWS))
    if is_populous:
        if k < need:
            raise ValueError(
                f"the populous test needs at least {need} groups at this epsilon "
                f"and delta; n_groups={k}. Nothing was spent."
            )
    elif k < MIN_GROUPS:
        raise ValueError(f"n_groups={k} is below {MIN_GROUPS}. Nothing was spent.")
    if n // k < MIN_GROUP_ROWS:
        raise ValueError(
            f"n_samples={n} rows cannot fill {k} groups of at least "
            f"{MIN_GROUP_ROWS} rows. Nothing was spent."
        )
    return k


def useless_reason(est, plan, data, k):
    """Why the fit is predicted useless (a message), or None.

    Groups smaller than :func:`group_floor` give statistics that are undefined
    or shrunk; fewer than k_min groups let the winsorized searches go astray.
    """
    n = data.n
    shape = data.public["shape"]
    p = _size(shape)
    floor = group_floor(est, data)
    if est.aggregator == "populous":
        if est.space == "psd" or n // k >= floor:
            return None
        return (
            f"SubsampleAggregate: {k} groups of {n // k} rows are too small for "
            f"a statistic of {p} values on {data.d} features (at least {floor} "
            "rows per group: twice the group fit's parameters plus one). Use "
            "more rows or fewer groups (n_groups)."
        )
    fewest = winsorized_min_groups(plan, p)
    if k >= fewest and n // k >= floor:
        return None
    what = (
        f"{k} groups are too few"
        if k < fewest
        else f"groups of {n // k} rows are too small"
    )
    return (
        f"SubsampleAggregate: {what} for the winsorized aggregator at "
        f"{plan.total} with a statistic of {p} values. Its private median and "
        f"radius searches need at least {fewest} groups (with fewer they may go "
        f"astray: a union bound gives a chance above {WINSOR_RISK:g}, and then "
        "the release is far off, silently), and each group at least "
        f"{floor} rows (twice the group fit's parameters plus one: smaller "
        "groups give undefined or shrunk statistics), so it needs n >= "
        f"{fewest * floor} rows; it has {n}. Use more rows or a larger "
        "budget; a public radius removes only the radius search, not the "
        "median's."
    )
