"""PrivateWhitener: accounting, the releases underneath, accuracy, validity, the API.

No new mechanism: the releases are PrivateCovariance's, or with
``method="tail"`` TailSensitiveCovariance's (same code and plan, checked draw
for draw below); their audits are in tests/audit/.
"""

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn import config_context
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateWhitener,
    TailSensitiveCovariance,
)
from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp, split_cost
from dpgauss.exceptions import BudgetExceededError, UtilityWarning
from dpgauss.mechanisms._releases import mean_mechanism, second_moment_mechanism
from dpgauss.releases._center import AUTO_TRACE_SHARE, MEAN_SHARE
from dpgauss.testing._box_edge import edge_messages, edge_rows

COV = np.array([[4.0, 1.5, 0.0], [1.5, 1.0, 0.2], [0.0, 0.2, 0.5]])


def _rows(n=20_000, seed=0, radius=10.0):
    """Centered N(0, COV) rows inside 0.9 radius."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(3), COV, size=n)
    X -= X.mean(axis=0)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X * np.minimum(1.0, 0.9 * radius / norms)


# -- accounting -------------------------------------------------------------------
TOTALS = [
    ({"rho": 0.5}, ZCDP(0.5)),
    ({"epsilon": 1.0}, PureDP(1.0)),
    ({"epsilon": 1.0, "delta": 1e-6}, ZCDP(approx_to_zcdp(1.0, 1e-6))),
]


@pytest.mark.parametrize(("privacy", "total"), TOTALS)
@pytest.mark.parametrize("method", ["auto", "gauss", "separate", "eigen"])
def test_ledger_matches_the_plan_and_private_covariances(privacy, total, method):
    # The ledger is the plan, and the plan is PrivateCovariance's: with
    # "auto", a tenth to the mean, a sixteenth of the rest to the trace, then
    # the dearer of GaussCov and SeparateCov (GaussCov here: one release).
    X = _rows(500)
    ledgers = []
    # PrivateCovariance's prediction at pure epsilon takes reference rows
    # filling a tenth of the ball and refuses some of these fits: the ledger
    # is what is compared, so it spends with a warning.
    for est in (
        PrivateWhitener(data_norm=10.0, method=method, **privacy),
        PrivateCovariance(data_norm=10.0, method=method, on_useless="warn", **privacy),
    ):
        budget = PrivacyBudget(rho=100.0)
        planned = est.set_params(budget=budget, random_state=0).planned_costs(3)
        est.fit(X)
        ledgers.append([(e.cost, e.mechanism) for e in budget.ledger()])
        assert [c for c, _ in ledgers[-1]] == planned
        assert est.privacy_spent_ == total
    assert ledgers[0] == ledgers[1]
    if method == "auto":
        mean, rest = split_cost(total, [MEAN_SHARE, 1 - MEAN_SHARE])
        trace, rest = split_cost(rest, [AUTO_TRACE_SHARE, 1 - AUTO_TRACE_SHARE])
        assert [c for c, _ in ledgers[0]] == [mean, trace, rest]


@pytest.mark.parametrize("method", ["auto", "separate", "eigen"])
@pytest.mark.parametrize("center", [True, False])
def test_the_release_is_private_covariances(method, center):
    # From one seed the same noise: PrivateCovariance's eigendecomposition,
    # floored at the whitener's floor (never below PrivateCovariance's own:
    # max(min(sd, mean), ...) <= max(sd, ...)), is the whitener's, exactly.
    X = _rows(2000, seed=1)
    white = PrivateWhitener(
        data_norm=10.0, method=method, center=center, rho=1.0, random_state=3
    ).fit(X)
    cov = PrivateCovariance(
        data_norm=10.0, method=method, center=center, rho=1.0, random_state=3
    ).fit(X)
    assert cov.eigenvalue_floor_ <= white.eigenvalue_floor_
    np.testing.assert_array_equal(white.mean_, cov.location_)
    values, vectors = cov._model
    values = np.maximum(values, white.eigenvalue_floor_)
    expected = (vectors / np.sqrt(values)) @ vectors.T
    np.testing.assert_allclose(white.whitening_, expected, rtol=1e-10, atol=1e-12)
    assert white.method_ == cov.method_


@pytest.mark.parametrize(("privacy", "total"), TOTALS)
@pytest.mark.parametrize("center", [True, False])
def test_tail_ledger_and_release_are_tail_sensitive_covariances(
    privacy, total, center, monkeypatch
):
    # method="tail": the ledger is TailSensitiveCovariance's plan (labels and
    # costs), and from one seed its released spectrum, floored at the
    # whitener's floor (never below its own, as above), is the whitener's.
    # The covariance estimator's own post-processing of the spectrum
    # (confined by the released diagonal: dpgauss.releases._measured) is
    # left out.
    monkeypatch.setattr(
        "dpgauss.covariance._base.confine", lambda *args, **kwargs: None
    )
    X = _rows(2000, seed=1)
    ledgers = []
    for est in (PrivateWhitener(method="tail"), TailSensitiveCovariance()):
        budget = PrivacyBudget(rho=100.0)
        est.set_params(
            data_norm=40.0, center=center, budget=budget, random_state=0, **privacy
        )
        planned = est.planned_costs(3)
        est.fit(X)
        ledgers.append([(e.cost, e.mechanism) for e in budget.ledger()])
        assert [c for c, _ in ledgers[-1]] == planned
        assert est.privacy_spent_.to_zcdp().rho == pytest.approx(total.to_zcdp().rho)
    assert ledgers[0] == ledgers[1]
    white, cov = (
        est.set_params(budget=None, random_state=3).fit(X)
        for est in (
            PrivateWhitener(method="tail", data_norm=40.0, center=center, **privacy),
            TailSensitiveCovariance(data_norm=40.0, center=center, **privacy),
        )
    )
    assert cov.eigenvalue_floor_ <= white.eigenvalue_floor_
    np.testing.assert_array_equal(white.mean_, cov.location_)
    values, vectors = cov._model
    values = np.maximum(values, white.eigenvalue_floor_)
    expected = (vectors / np.sqrt(values)) @ vectors.T
    np.testing.assert_allclose(white.whitening_, expected, rtol=1e-10, atol=1e-12)
    assert white.method_ == cov.method_


# -- accuracy -----------------------------------------------------------------------
def test_whitened_covariance_is_near_identity(global_random_seed):
    # W = C_hat^(-1/2), so W C W - I = W (C - C_hat) W and
    # ||W C W - I||_2 <= ||C - C_hat||_2 / lambda_min(C_hat). For GaussCov,
    # ||C - C_hat|| <= 2 ||E|| (Weyl for the released eigenvalues, and the
    # eigenvectors' error, as in tests/decomposition/test_pca.py), with E the
    # noise W_noise (||.||_F^2 / s^2 ~ chi2_{d(d+1)/2}) plus the mean's rank-one
    # error (|delta|^2 <= v chi2_d), 0.999 each.
    n, d, radius, rho = 20_000, 3, 10.0, 1.0
    X = _rows(n, seed=global_random_seed, radius=radius)
    white = PrivateWhitener(
        data_norm=radius, method="gauss", rho=rho, random_state=global_random_seed
    ).fit(X)
    mean_cost, rest = split_cost(ZCDP(rho), [MEAN_SHARE, 1 - MEAN_SHARE])
    diagonal, _ = second_moment_mechanism(rest, n, d, radius).entry_variances(d)
    noise = math.sqrt(diagonal * stats.chi2.ppf(0.999, d * (d + 1) // 2))
    v = mean_mechanism(mean_cost, n, d, radius).effective_scale(d) ** 2
    error = 2 * (noise + v * stats.chi2.ppf(0.999, d))
    lam_min = np.linalg.eigvalsh(white.covariance_)[0]
    C = np.cov(X, rowvar=False, bias=True)
    Z = white.transform(X)
    gap = np.linalg.norm(np.cov(Z, rowvar=False, bias=True) - np.eye(d), 2)
    assert gap <= error / lam_min
    # The test has power: whitening by the diagonal alone (standardising)
    # leaves a gap of 0.80 (COV's correlations).
    assert error / lam_min < 0.25
    np.testing.assert_allclose(white.covariance_, C, atol=error)
    # ZCA: the whitening matrix is symmetric (no rotation), and the inverse
    # transform undoes the transform.
    np.testing.assert_array_equal(white.whitening_, white.whitening_.T)
    np.testing.assert_allclose(white.inverse_transform(Z), X, atol=1e-10)


# -- valid for every draw -----------------------------------------------------------
def _extreme_rows(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    if kind == "far":
        X[::3] *= 1e12
    elif kind == "max":
        X[0] = np.finfo(np.float64).max
        X[1] = -np.finfo(np.float64).max
    elif kind == "constant":
        X[:, 1] = 7.0
        X[:, 3] = 0.0
    elif kind == "identical":
        X[:] = X[0]
    return X


@pytest.mark.parametrize("kind", ["far", "max", "constant", "identical"])
@pytest.mark.parametrize("method", ["tail", "auto", "separate", "eigen"])
@pytest.mark.parametrize("rho", [1e-12, 1.0, 1e8])
def test_whitening_finite_and_positive_definite_for_every_draw(kind, method, rho):
    X = _extreme_rows(kind)
    before = X.copy()
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            white = PrivateWhitener(
                data_norm=1.0,
                method=method,
                rho=rho,
                random_state=seed,
                on_useless="warn",
            ).fit(X)
        W, C = white.whitening_, white.covariance_
        assert np.all(np.isfinite(W))
        assert np.all(np.isfinite(C))
        assert 0 < white.eigenvalue_floor_ < np.inf
        # Positive definite, and W^2 is C's inverse (to float64 precision
        # relative to the condition number the floor allows).
        assert np.linalg.eigvalsh(W)[0] > 0
        assert np.linalg.eigvalsh(C)[0] > 0
        cond = np.linalg.cond(C)
        np.testing.assert_allclose(W @ C @ W, np.eye(4), atol=1e-12 * cond + 1e-12)
        assert np.all(np.isfinite(white.transform(np.ones((2, 4)))))
        assert np.linalg.norm(white.mean_) <= 1.0 * (1 + 1e-12)
    np.testing.assert_array_equal(X, before)


# -- the scikit-learn API -----------------------------------------------------------
@pytest.mark.parametrize("method", ["auto", "tail"])
def test_pandas_output_keeps_column_names(method):
    X = pd.DataFrame(_rows(400), columns=["a", "b", "c"])
    white = PrivateWhitener(data_norm=10.0, method=method, rho=1.0, random_state=0)
    Z = white.set_output(transform="pandas").fit_transform(X)
    assert isinstance(Z, pd.DataFrame)
    assert list(Z.columns) == ["a", "b", "c"]
    assert list(white.get_feature_names_out()) == ["a", "b", "c"]


def test_pipeline_with_logistic_regression():
    # Standardised breast cancer (data preparation for the test), data_norm
    # 2 sqrt(30); whitening with a private covariance keeps the classes apart.
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    budget = PrivacyBudget(rho=1.0)
    model = make_pipeline(
        PrivateWhitener(
            data_norm=2 * math.sqrt(30), rho=1.0, budget=budget, random_state=0
        ),
        LogisticRegression(max_iter=1000),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        model.fit(X, y)
    assert {e.estimator for e in budget.ledger()} == {"PrivateWhitener"}
    assert model.score(X, y) >= 0.9
    with pytest.raises(BudgetExceededError):
        clone(model).fit(X, y)


def test_clone_pickle_and_free_transform():
    budget = PrivacyBudget(rho=1.0)
    X = _rows(400)
    white = PrivateWhitener(data_norm=10.0, rho=1.0, budget=budget, random_state=0)
    white.fit(X)
    spent = budget.ledger()
    again = pickle.loads(pickle.dumps(white))
    np.testing.assert_array_equal(again.transform(X), white.transform(X))
    white.inverse_transform(white.transform(X))
    assert budget.ledger() == spent
    twin = clone(white)
    assert twin.budget is budget
    assert not hasattr(twin, "whitening_")


# -- bad input: refused before any spend ----------------------------------------------
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"data_norm": None}, "data_norm is required"),
        ({"data_norm": 0.0}, "data_norm"),
        ({"method": "coinpress"}, "method"),
        ({"center": "yes"}, "center"),
        ({"rho": 1e-300}, "cannot be calibrated"),
        ({"data_norm": 1e300}, "cannot be calibrated"),
    ],
)
@pytest.mark.parametrize("method", ["auto", "tail"])
def test_bad_parameters_spend_nothing(params, match, method):
    budget = PrivacyBudget(rho=10.0)
    X = _rows(100)
    white = PrivateWhitener(data_norm=10.0, method=method, rho=1.0, budget=budget)
    white.set_params(**params)
    for skip in (False, True):
        with config_context(skip_parameter_validation=skip):
            with pytest.raises(ValueError, match=match):
                white.fit(X)
    assert budget.ledger() == []


def test_bad_data_and_exhausted_budget_spend_nothing():
    budget = PrivacyBudget(rho=1.0)
    good = _rows(50)
    for value, match in ((np.nan, "NaN"), (-np.inf, "infinity")):
        X = good.copy()
        X[0, 2] = value
        before = X.copy()
        with pytest.raises(ValueError, match=match):
            PrivateWhitener(data_norm=10.0, rho=0.5, budget=budget).fit(X)
        np.testing.assert_array_equal(X, before)
    assert budget.ledger() == []
    PrivateWhitener(data_norm=10.0, rho=0.75, budget=budget).fit(good)
    spent = budget.ledger()
    with pytest.raises(BudgetExceededError):
        PrivateWhitener(data_norm=10.0, rho=0.5, budget=budget).fit(good)
    assert budget.ledger() == spent
    white = PrivateWhitener(data_norm=10.0, rho=0.5, random_state=0).fit(good)
    with pytest.raises(ValueError, match="features"):
        white.transform(good[:, :2])
    with pytest.raises(ValueError, match="features"):
        white.inverse_transform(good[:, :2])


@pytest.mark.parametrize("method", ["auto", "tail", "diagonal"])
def test_rows_at_the_box_edge_are_named_once_with_their_side(method):
    # Column 0 clipped to the upper bound of (-1, 1), column 2 to the lower
    # (raw values in a box meant for standardised ones), from the released
    # centre and its public noise sd; a box that holds the rows, 0/1 columns
    # with half ones, and a public centre (center=False) are silent.
    X = edge_rows()
    est = PrivateWhitener(method=method, rho=0.5, bounds=(-1.0, 1.0), random_state=0)
    (message,) = edge_messages(est, X)
    assert message.startswith("PrivateWhitener: the released mean of")
    assert "feature(s) 0 (upper), 2 (lower) lies" in message
    assert edge_messages(est.set_params(bounds=(-200.0, 200.0)), X) == []
    B = np.random.default_rng(1).integers(0, 2, size=(2000, 3)).astype(float)
    assert edge_messages(est.set_params(bounds=(0.0, 1.0)), B) == []
    est.set_params(bounds=(-1.0, 1.0), center=False)
    assert edge_messages(est, X) == []
