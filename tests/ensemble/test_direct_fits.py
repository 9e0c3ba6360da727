"""The direct group fits: candidates equal the estimators' own fits, bit for bit."""

import numpy as np
import pytest
from sklearn.covariance import EmpiricalCovariance, MinCovDet
from sklearn.linear_model import LinearRegression, Ridge

from dpgauss.ensemble import _direct_fits
from dpgauss.ensemble._group_fits import attribute_names, fit_group


def direct_fit(estimator, statistic, X, y, classes):
    names = attribute_names(statistic)
    return _direct_fits.direct_fit(estimator, names, X, y, classes)


class _MyLinearRegression(LinearRegression):
    pass


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("statistic", ["coef_", ("coef_", "intercept_"), "intercept_"])
def test_the_least_squares_path_gives_the_fits_bit_for_bit(
    seed, fit_intercept, statistic, group_rows
):
    # Groups of 3 to 40 rows on 1 to 7 features (fewer rows than features
    # included), columns in units 1e-3 to 1e3, every other seed with a
    # duplicated column: each candidate equals LinearRegression's own fit.
    rng = np.random.default_rng(100 + seed)
    s, d, k = int(rng.integers(3, 40)), int(rng.integers(1, 8)), 12
    X, y = group_rows(seed, s, d, k, degenerate=seed % 2 == 1)
    est = LinearRegression(fit_intercept=fit_intercept)
    fast = direct_fit(est, statistic, X, y, None)
    assert fast is not None
    # The whole stack at once too (its means taken along the stack's rows).
    stacked = fast(X.reshape(k, s, d), y.reshape(k, s))
    for g in range(k):
        rows = slice(g * s, (g + 1) * s)
        want = fit_group(est, statistic, X[rows], y[rows], None)
        np.testing.assert_array_equal(fast(X[rows][None], y[rows][None])[0], want)
        np.testing.assert_array_equal(stacked[g], want)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("assume_centered", [False, True])
@pytest.mark.parametrize("statistic", ["location_", ("location_", "covariance_")])
def test_the_moments_path_gives_the_fits_bit_for_bit(
    seed, assume_centered, statistic, group_rows
):
    rng = np.random.default_rng(200 + seed)
    s, d, k = int(rng.integers(2, 40)), int(rng.integers(1, 8)), 8
    X, _ = group_rows(seed, s, d, k, degenerate=seed % 2 == 1)
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


def test_a_block_that_raises_is_redone_group_by_group(monkeypatch, group_rows):
    # A stacked computation that raises on one group's rows fails that
    # group alone.
    X, _ = group_rows(2, 10, 3, 6)
    X[0, 0] = 7.0  # the marked row
    calls = []

    def direct(rows, targets):
        calls.append(rows.shape[0])
        if np.any(rows == 7.0):
            return None
        return rows.mean(axis=1)

    order = np.arange(60)
    out = list(_direct_fits.direct_candidates(direct, X, None, order, 6, 10))
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


def test_least_squares_path_needs_tol_as_the_dense_cond(monkeypatch, group_rows):
    # scikit-learn 1.6 has no tol, and 1.7-1.8 ignore it on dense rows (cond
    # max(X.shape) eps): the path reads tol as cond only where fit does
    # (1.9+); elsewhere the estimator's own fit runs, and nothing raises
    # after the spend (a KeyError on 1.6).
    X, y = group_rows(0, 10, 2, 4)
    params = LinearRegression.get_params

    def without_tol(self, deep=True):
        out = params(self, deep)
        out.pop("tol")
        return out

    monkeypatch.setattr(LinearRegression, "get_params", without_tol)
    assert direct_fit(LinearRegression(), "coef_", X, y, None) is None
    monkeypatch.setattr(LinearRegression, "get_params", params)
    assert direct_fit(LinearRegression(), "coef_", X, y, None) is not None
    monkeypatch.setattr(_direct_fits, "DENSE_TOL_IS_COND", False)
    assert direct_fit(LinearRegression(), "coef_", X, y, None) is None
