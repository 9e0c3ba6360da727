"""The subsample step's group fits: direct or generic, n_jobs, failures."""

import numpy as np
import pytest
from sklearn.covariance import EmpiricalCovariance, MinCovDet
from sklearn.linear_model import LinearRegression

from dpgauss.ensemble import _direct_fits, _group_fits
from dpgauss.ensemble._group_fits import group_candidates
from dpgauss.ensemble._isolation import start_method


@pytest.mark.parametrize(
    ("est", "stat", "shape", "target"),
    [
        (LinearRegression(), ("coef_", "intercept_"), (6,), True),
        (EmpiricalCovariance(), ("location_", "covariance_"), (30,), False),
    ],
)
def test_group_candidates_take_it_and_match_the_generic_loop(
    est, stat, shape, target, monkeypatch, group_rows
):
    # Blocks of 3 groups (the remainder block too): the same candidates as
    # the estimator's own fits, group by group.
    X, y = group_rows(0, 25, 5, 40)
    y = y if target else None
    monkeypatch.setattr(_direct_fits, "DIRECT_BLOCK_ROWS", 75)
    fast, s = group_candidates(est, stat, X, y, 40, np.random.default_rng(1), shape)
    monkeypatch.setattr(_group_fits, "direct_fit", lambda *a: None)
    slow, _ = group_candidates(est, stat, X, y, 40, np.random.default_rng(1), shape)
    assert s == 25
    np.testing.assert_array_equal(fast, slow)


def test_a_group_with_a_nan_target_fails_alone(group_rows):
    # A failed candidate is a NaN row, as a raising fit gives; the others
    # stand.
    X, y = group_rows(1, 10, 2, 5)
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


def test_a_covariance_fit_ignores_targets_of_any_shape(group_rows):
    # EmpiricalCovariance.fit ignores y; the stacked path reshaped it to one
    # target per row and raised (after the spend) on a 2-D y.
    X, _ = group_rows(4, 10, 2, 6)
    y = np.random.default_rng(0).standard_normal((60, 2))
    est, stat = EmpiricalCovariance(), ("location_", "covariance_")
    with_y, _ = group_candidates(est, stat, X, y, 6, np.random.default_rng(1), (6,))
    without, _ = group_candidates(est, stat, X, None, 6, np.random.default_rng(1), (6,))
    np.testing.assert_array_equal(with_y, without)
    assert np.isfinite(without).all()


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
def test_a_non_finite_target_fails_its_group_as_the_fit_would(bad, group_rows):
    # The group fits skip scikit-learn's finiteness checks (assume_finite):
    # SVR and a tree then fit a NaN or infinite target and return a finite
    # statistic, where their own fit raises "Input y contains NaN". The
    # group fails, as it did with the checks.
    from sklearn.svm import SVR
    from sklearn.tree import DecisionTreeRegressor

    X, y = group_rows(1, 10, 2, 5)
    y[13] = bad
    for est, stat, shape in [
        (SVR(kernel="linear"), "coef_", (1, 2)),
        (DecisionTreeRegressor(), "feature_importances_", (2,)),
    ]:
        with pytest.raises(ValueError):
            est.fit(X, y)
        Y, _ = group_candidates(est, stat, X, y, 5, np.random.default_rng(0), shape)
        assert np.isnan(Y).any(axis=1).sum() == 1


def test_a_sparse_target_is_split_by_rows(group_rows):
    # A scipy sparse y (shape public) used to raise IndexError after the
    # spend (np.asarray of a sparse matrix is a 0-d object array).
    from scipy import sparse

    X, y = group_rows(4, 20, 2, 5)
    Y, _ = group_candidates(
        MinCovDet(random_state=0),
        "location_",
        X,
        sparse.csr_matrix(y[:, None]),
        5,
        np.random.default_rng(0),
        (2,),
    )
    assert np.isfinite(Y).all()
