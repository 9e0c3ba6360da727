"""Data for bench_real: real tables, synthetic families and their public boxes.

Every data set is a ``Table``: numeric rows ``X`` (no missing values), optional
class labels ``y_class`` and an optional regression target ``y_reg`` (neither
among the columns of ``X``). The statsmodels sets load offline from the copies
statsmodels ships; scikit-learn's are bundled too.

The public box stands in for a codebook: a user who knows a column's units and
coding knows a range for it, usually a round one wider than the data. We take
the observed minimum and maximum of the whole table and round them outward to
a multiple of the power of ten just below the column's range (``codebook_box``).
The box is computed once from the whole table, never from a sampled subset, so
it is the same public value for every n and seed.
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class Table:
    name: str
    X: np.ndarray
    y_class: np.ndarray | None = None
    y_reg: np.ndarray | None = None
    n_components: int | None = None  # public number of mixture components


def codebook_box(X):
    """Observed min/max per column, rounded outward to a round value.

    The rounding unit of a column is ``10**floor(log10(max - min))`` (1 for a
    constant column): ages 17.5-57 give [10, 60], shares 0.02-0.93 give
    [0, 1]. A stand-in for a codebook's documented range.
    """
    lo = np.min(X, axis=0).astype(float)
    hi = np.max(X, axis=0).astype(float)
    span = hi - lo
    unit = np.where(
        span > 0, 10.0 ** np.floor(np.log10(np.where(span > 0, span, 1))), 1
    )
    lower = np.floor(lo / unit) * unit
    upper = np.ceil(hi / unit) * unit
    flat = upper <= lower
    upper = np.where(flat, lower + unit, upper)
    return lower, upper


def _sm(name):
    import statsmodels.api as sm

    return getattr(sm.datasets, name).load_pandas().data


def _fair():
    df = _sm("fair")
    y = df.pop("affairs").to_numpy(float)
    return Table("fair", df.to_numpy(float), (y > 0).astype(int), y)


def _randhie():
    df = _sm("randhie")
    y = df.pop("mdvis").to_numpy(float)
    return Table("randhie", df.to_numpy(float), None, y)


def _anes96():
    df = _sm("anes96")
    y = df.pop("vote").to_numpy(int)
    return Table("anes96", df.to_numpy(float), y)


def _star98():
    return Table("star98", _sm("star98").to_numpy(float))


def _macrodata():
    df = _sm("macrodata").drop(columns=["year", "quarter"])
    y = df.pop("realgdp").to_numpy(float)
    return Table("macrodata", df.to_numpy(float), None, y)


def _modechoice():
    df = _sm("modechoice").drop(columns=["individual"])
    y = df.pop("choice").to_numpy(int)
    return Table("modechoice", df.to_numpy(float), y)


def _sklearn(name):
    from sklearn import datasets

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    k = len(np.unique(y))
    return Table(name, X.astype(float), y.astype(int), None, k)


def _student_t():
    rng = np.random.default_rng(101)
    X = rng.standard_t(3, size=(2000, 5)) @ np.diag([1.0, 2.0, 0.5, 4.0, 1.0])
    y = X @ np.array([1.0, -0.5, 2.0, 0.25, 0.0]) + rng.standard_t(3, 2000)
    return Table("student_t3", X, None, y)


def _scales():
    rng = np.random.default_rng(102)
    d = 6
    A = rng.standard_normal((d, d)) / np.sqrt(d) + np.eye(d)
    X = (rng.standard_normal((2000, d)) @ A) * np.logspace(-3, 6, d) + 5.0
    return Table("scales_1e-3_1e6", X)


def _mixture():
    rng = np.random.default_rng(103)
    n, d = 1500, 4
    weights = np.array([0.6, 0.3, 0.1])
    labels = rng.choice(3, size=n, p=weights)
    centers = np.array([[0, 0, 0, 0], [4, 0, 2, 0], [0, 5, 0, -3]], float)
    X = centers[labels] + rng.standard_normal((n, d)) * np.array([1.0, 1.5, 0.7, 1.0])
    return Table("mixture_0.6_0.3_0.1", X, labels, None, 3)


def _far_mean():
    rng = np.random.default_rng(104)
    X = rng.standard_normal((2000, 5)) * np.array([1, 2, 3, 1, 0.5]) + 1e4
    return Table("far_mean_1e4", X)


LOADERS = {
    "fair": _fair,
    "randhie": _randhie,
    "anes96": _anes96,
    "star98": _star98,
    "macrodata": _macrodata,
    "modechoice": _modechoice,
    "wine": lambda: _sklearn("wine"),
    "breast_cancer": lambda: _sklearn("breast_cancer"),
    "digits": lambda: _sklearn("digits"),
    "student_t3": _student_t,
    "scales_1e-3_1e6": _scales,
    "mixture_0.6_0.3_0.1": _mixture,
    "far_mean_1e4": _far_mean,
}

_CACHE = {}


def load(name):
    if name not in _CACHE:
        _CACHE[name] = LOADERS[name]()
    return _CACHE[name]


def split_pool(table, holdout):
    """(pool indices, test indices): a fixed 25% held out when ``holdout``."""
    N = table.X.shape[0]
    if not holdout:
        return np.arange(N), None
    perm = np.random.default_rng(7).permutation(N)
    n_test = N // 4
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def n_grid(N, quick):
    """n from the data's own down to 150: N, N/4, N/16, ... then 150."""
    if quick:
        return [N, 150] if N > 150 else [N]
    grid = [N]
    while grid[-1] / 4 > 150:
        grid.append(int(grid[-1] / 4))
    if grid[-1] > 150:
        grid.append(150)
    return grid


def sample_rows(N_pool, n, seed):
    """n of the pool's rows, without replacement, seeded by (n, seed)."""
    if n >= N_pool:
        return np.arange(N_pool)
    rng = np.random.default_rng([seed, n, 11])
    return np.sort(rng.choice(N_pool, size=n, replace=False))
