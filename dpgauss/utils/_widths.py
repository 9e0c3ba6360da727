"""How many columns reach each private step of an estimator or pipeline.

A pipeline's private step may sit behind transformers that change the width;
pricing needs the width each private step receives. One-to-one steps keep it;
other steps before a private one are fitted on a public stand-in of at most
``_MAX_STAND_IN`` values (random normal rows, never the data) to read it.
"""

import warnings
from collections import defaultdict

import numpy as np
from sklearn.base import OneToOneFeatureMixin, clone
from sklearn.pipeline import Pipeline

from dpgauss.utils._leak import is_private

__all__ = ["contains_private", "fit_charges", "parameters_of", "private_parts"]

#: Largest public stand-in (rows x columns) fitted to learn a transform's width.
_MAX_STAND_IN = 10**7


def parameters_of(obj):
    if isinstance(obj, type) or not callable(getattr(obj, "get_params", None)):
        return {}
    return obj.get_params(deep=True)


def contains_private(obj):
    return is_private(obj) or any(is_private(v) for v in parameters_of(obj).values())


def _probe_width(step, width):
    """Columns out of ``step`` for ``width`` columns in, from a public stand-in.

    The step is fitted on a fixed standard-normal array, never on the data (so
    the probe reads nothing private). A step with a private part is never fitted
    (it would spend). Returns None when the width cannot be learnt this way.
    """
    if isinstance(step, OneToOneFeatureMixin):
        # One output column per input column, whatever it learns (a private
        # scaler or whitener included): known without fitting anything.
        return width
    rows = max(2 * width, 20)
    if contains_private(step) or rows * width > _MAX_STAND_IN:
        return None
    stand_in = np.random.default_rng(0).standard_normal((rows, width))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = clone(step).fit(stand_in).transform(stand_in)
    except Exception:  # any failure: the caller asks for n_features instead
        return None
    shape = getattr(out, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else None


def _walk_widths(est, width, widths):
    """Record, for every object reachable through Pipelines, the columns it gets."""
    widths.setdefault(id(est), width)
    if width is None or not isinstance(est, Pipeline):
        return
    steps = [step for _, step in est.steps]
    for i, step in enumerate(steps):
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        _walk_widths(step, width, widths)
        if any(contains_private(s) for s in steps[i + 1 :]):
            width = _probe_width(step, width)
            if width is None:
                return


def private_parts(estimator, n_features_X, n_features):
    """The private objects of ``estimator`` and the columns each receives."""
    found = {}
    if is_private(estimator):
        found[id(estimator)] = estimator
    else:
        for value in parameters_of(estimator).values():
            if is_private(value):
                found.setdefault(id(value), value)
    if n_features is not None:
        return [(obj, n_features) for obj in found.values()]
    widths = {}
    _walk_widths(estimator, n_features_X, widths)
    parts = []
    for key, obj in found.items():
        width = widths.get(key)
        if width is None:
            raise ValueError(
                f"cannot tell how many columns reach {type(obj).__name__} inside "
                f"{type(estimator).__name__} without fitting the steps before it; "
                "pass n_features=<the number of columns it receives>."
            )
        parts.append((obj, width))
    return parts


def fit_charges(estimator, n_features_X, n_features, budgets, n_samples):
    """Ledger path (None without a budget) to the costs one fit on ``n_samples``
    rows charges (a plan may depend on the public n): every private part's
    planned costs at the width it receives. ``budgets`` is filled with a
    handle per ledger path."""
    charges = defaultdict(list)
    for obj, width in private_parts(estimator, n_features_X, n_features):
        budget = getattr(obj, "budget", None)
        key = None if budget is None else budget.path
        if budget is not None:
            budgets.setdefault(key, budget)
        charges[key].extend(obj.planned_costs(width, n_samples=n_samples))
    return dict(charges)
