"""The subsample step's group fits: the direct paths equal the fits, n_jobs too."""

import numpy as np
import pytest
from sklearn.covariance import EmpiricalCovariance, MinCovDet
from sklearn.linear_model import LinearRegression, Ridge

from dpgauss.ensemble import _group_fits
from dpgauss.ensemble._group_fits import direct_fit, fit_group, group_candidates
from dpgauss.ensemble._isolation import start_method


class _MyLinearRegression(LinearRegression):
    pass


def _rows(seed, s, d, k, degenerate=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((k * s, d)) * rng.choice([1e-3, 1.0, 1e3], size=d)
    if degenerate and d > 1:
        X[:, 1] = X[:, 0]  # every group rank-deficient: the minimum-norm fit
    y = X @ rng.standard_normal(d) + rng.standard_normal(k * s)
    return X, y


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("statistic", ["coef_", ("coef_", "intercept_"), "intercept_"])
def test_the_least_squares_path_gives_the_fits_bit_for_bit(
    seed, fit_intercept, statistic
):
    # Groups of 3 to 40 rows on 1 to 7 features (fewer rows than features
    # included), columns in units 1e-3 to 1e3, every other seed with a
    # duplicated column: each candidate equals LinearRegression's own fit.
    rng = np.random.default_rng(100 + seed)
    s, d, k = int(rng.integers(3, 40)), int(rng.integers(1, 8)), 12
    X, y = _rows(seed, s, d, k, degenerate=seed % 2 == 1)
    est = LinearRegression(fit_intercept=fit_intercept)
    fast = direct_fit(est, statistic, X, y, None)
    assert fast is not None
    for g in range(k):
        rows = slice(g * s, (g + 1) * s)
        want = fit_group(est, statistic, X[rows], y[rows], None)
        np.testing.assert_array_equal(fast(X[rows][None], y[rows][None])[0], want)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("assume_centered", [False, True])
@pytest.mark.parametrize("statistic", ["location_", ("location_", "covariance_")])
def test_the_moments_path_gives_the_fits_bit_for_bit(seed, assume_centered, statistic):
    rng = np.random.default_rng(200 + seed)
    s, d, k = int(rng.integers(2, 40)), int(rng.integers(1, 8)), 8
    X, _ = _rows(seed, s, d, k, degenerate=seed % 2 == 1)
    est = EmpiricalCovariance(assume_centered=assume_centered)
    fast = direct_fit(est, statistic, X, None, None)
    assert fast is not None
    for g in range(k):
        rows = slice(g * s, (g + 1) * s)
        want = fit_group(est, statistic, X[rows], None, None)
        np.testing.assert_array_equal(fast(X[rows][None], None)[0], want)
    # The whole stack at once: the same candidates.
    stack = fast(X.reshape(k, s, d), None)
    for g in range(k):
        want = fit_group(est, statistic, X[g * s : (g + 1) * s], None, None)
        np.testing.assert_array_equal(stack[g], want)


@pytest.mark.parametrize(
    ("est", "stat", "shape", "target"),
    [
        (LinearRegression(), ("coef_", "intercept_"), (6,), True),
        (EmpiricalCovariance(), ("location_", "covariance_"), (30,), False),
    ],
)
def test_group_candidates_take_it_and_match_the_generic_loop(
    est, stat, shape, target, monkeypatch
):
    # Blocks of 3 groups (the remainder block too): the same candidates as
    # the estimator's own fits, group by group.
    X, y = _rows(0, 25, 5, 40)
    y = y if target else None
    monkeypatch.setattr(_group_fits, "DIRECT_BLOCK_ROWS", 75)
    fast, s = group_candidates(est, stat, X, y, 40, np.random.default_rng(1), shape)
    monkeypatch.setattr(_group_fits, "direct_fit", lambda *a: None)
    slow, _ = group_candidates(est, stat, X, y, 40, np.random.default_rng(1), shape)
    assert s == 25
    np.testing.assert_array_equal(fast, slow)


def test_a_block_that_raises_is_redone_group_by_group(monkeypatch):
    # A stacked computation that raises on one group's rows fails that
    # group alone.
    X, _ = _rows(2, 10, 3, 6)
    X[0, 0] = 7.0  # the marked row
    calls = []

    def direct(rows, targets):
        calls.append(rows.shape[0])
        if np.any(rows == 7.0):
            return None
        return rows.mean(axis=1)

    order = np.arange(60)
    out = list(_group_fits._direct_candidates(direct, X, None, order, 6, 10))
    assert calls == [6, 1, 1, 1, 1, 1, 1]
    assert out[0] is None
    assert all(o is not None for o in out[1:])


@pytest.mark.parametrize(
    ("estimator", "statistic", "y_shape", "classes"),
    [
        (_MyLinearRegression(), "coef_", (50,), None),  # a subclass may differ
        (LinearRegression(positive=True), "coef_", (50,), None),
        (Ridge(), "coef_", (50,), None),
        (LinearRegression(), "rank_", (50,), None),
        (LinearRegression(), lambda e: e.coef_, (50,), None),
        (LinearRegression(), "coef_", (50, 2), None),
        (LinearRegression(), "coef_", (50,), np.array([0, 1])),
        (EmpiricalCovariance(), "precision_", (50,), None),
        (MinCovDet(), "location_", (50,), None),
    ],
)
def test_other_fits_keep_the_estimators_own_fit(estimator, statistic, y_shape, classes):
    X = np.random.default_rng(0).standard_normal((50, 3))
    y = np.zeros(y_shape)
    assert direct_fit(estimator, statistic, X, y, classes) is None


def test_a_group_with_a_nan_target_fails_alone():
    # A failed candidate is a NaN row, as a raising fit gives; the others
    # stand.
    X, y = _rows(1, 10, 2, 5)
    y[13] = np.nan  # in one group only, whatever the permutation
    Y, _ = group_candidates(
        LinearRegression(), "coef_", X, y, 5, np.random.default_rng(0), (2,)
    )
    assert np.isnan(Y).any(axis=1).sum() == 1


def test_n_jobs_gives_the_same_candidates():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 3))
    y = (X[:, 0] + rng.standard_normal(600) > 0).astype(int)
    args = (LogisticRegression(), "coef_", X, y, 12)
    one, _ = group_candidates(*args, np.random.default_rng(5), (1, 3))
    two, _ = group_candidates(*args, np.random.default_rng(5), (1, 3), n_jobs=2)
    np.testing.assert_array_equal(one, two)
    assert np.isfinite(one).all()


def test_a_covariance_fit_ignores_targets_of_any_shape():
    # EmpiricalCovariance.fit ignores y; the stacked path reshaped it to one
    # target per row and raised (after the spend) on a 2-D y.
    X, _ = _rows(4, 10, 2, 6)
    y = np.random.default_rng(0).standard_normal((60, 2))
    est, stat = EmpiricalCovariance(), ("location_", "covariance_")
    with_y, _ = group_candidates(est, stat, X, y, 6, np.random.default_rng(1), (6,))
    without, _ = group_candidates(est, stat, X, None, 6, np.random.default_rng(1), (6,))
    np.testing.assert_array_equal(with_y, without)
    assert np.isfinite(without).all()


def test_least_squares_path_needs_tol_as_the_dense_cond(monkeypatch):
    # scikit-learn 1.6 has no tol, and 1.7-1.8 ignore it on dense rows (cond
    # max(X.shape) eps): the path reads tol as cond only where fit does
    # (1.9+); elsewhere the estimator's own fit runs, and nothing raises
    # after the spend (a KeyError on 1.6).
    X, y = _rows(0, 10, 2, 4)
    params = LinearRegression.get_params

    def without_tol(self, deep=True):
        out = params(self, deep)
        out.pop("tol")
        return out

    monkeypatch.setattr(LinearRegression, "get_params", without_tol)
    assert direct_fit(LinearRegression(), "coef_", X, y, None) is None
    monkeypatch.setattr(LinearRegression, "get_params", params)
    assert direct_fit(LinearRegression(), "coef_", X, y, None) is not None
    monkeypatch.setattr(_group_fits, "DENSE_TOL_IS_COND", False)
    assert direct_fit(LinearRegression(), "coef_", X, y, None) is None


@pytest.mark.skipif(start_method() != "fork", reason="a local class cannot be spawned")
def test_a_worker_that_dies_fails_its_group_alone():
    # A fit that kills its joblib worker (a crash in compiled code, say)
    # made the fit raise TerminatedWorkerError after the spend: one row
    # decided between a release and an exception. Now the groups still
    # unanswered are fitted each in a process of its own, where the crash
    # fails that group only, as with isolation="process".
    from sklearn.base import BaseEstimator

    class _DiesOnLowRows(BaseEstimator):
        def fit(self, X, y=None):
            if X[0, 0] < -0.8:
                import os

                os._exit(3)
            self.location_ = X.mean(axis=0)
            return self

    X = np.random.default_rng(2).normal(size=(120, 2))
    args = (_DiesOnLowRows(), "location_", X, None, 12)
    isolated, _ = group_candidates(
        *args, np.random.default_rng(5), (2,), None, "process"
    )
    pooled, _ = group_candidates(*args, np.random.default_rng(5), (2,), n_jobs=2)
    failed = np.isnan(isolated).any(axis=1)
    assert failed.sum() == 2  # the groups whose first row is below -0.8
    np.testing.assert_array_equal(pooled, isolated)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_target_fails_its_group_as_the_fit_would(bad):
    # The group fits skip scikit-learn's finiteness checks (assume_finite):
    # SVR and a tree then fit a NaN or infinite target and return a finite
    # statistic, where their own fit raises "Input y contains NaN". The
    # group fails, as it did with the checks.
    from sklearn.svm import SVR
    from sklearn.tree import DecisionTreeRegressor

    X, y = _rows(1, 10, 2, 5)
    y[13] = bad
    for est, stat, shape in [
        (SVR(kernel="linear"), "coef_", (1, 2)),
        (DecisionTreeRegressor(), "feature_importances_", (2,)),
    ]:
        with pytest.raises(ValueError):
            est.fit(X, y)
        Y, _ = group_candidates(est, stat, X, y, 5, np.random.default_rng(0), shape)
        assert np.isnan(Y).any(axis=1).sum() == 1
