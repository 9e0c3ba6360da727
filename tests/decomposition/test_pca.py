"""PrivatePCA: accounting, the releases underneath, accuracy, validity, the API.

PrivatePCA introduces no mechanism: its releases are TailSensitiveCovariance's
(``method="tail"``) or PrivateCovariance's (the other methods), same code and
same plan, which ``test_the_releases_are_tail_sensitive_covariances`` and
``test_the_releases_are_private_covariances`` check draw for draw; their audits
are in tests/audit/ (test_svt_search_audit.py, test_covariance_audit.py,
test_far_rows_audit.py), so there is no PCA audit.
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
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivatePCA,
    TailSensitiveCovariance,
)
from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp, split_cost
from dpgauss.decomposition._pca import flip_signs, select_n_components
from dpgauss.exceptions import BudgetExceededError, UtilityWarning
from dpgauss.mechanisms._releases import (
    eigenvalue_mechanism,
    mean_mechanism,
    second_moment_mechanism,
)
from dpgauss.releases._center import MEAN_SHARE

SCALES = np.array([3.0, 2.0, 1.0, 0.5, 0.3, 0.2])


def _rows(n=20_000, seed=0, radius=12.0):
    """Centered Gaussian rows with decreasing variances, inside 0.9 radius."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, SCALES.size)) * SCALES
    X -= X.mean(axis=0)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X * np.minimum(1.0, 0.9 * radius / norms)


def _orthonormal(components):
    k = components.shape[0]
    np.testing.assert_allclose(components @ components.T, np.eye(k), atol=1e-10)


# -- accounting -------------------------------------------------------------------
TOTALS = [
    ({"rho": 0.5}, ZCDP(0.5)),
    ({"epsilon": 1.0}, PureDP(1.0)),
    ({"epsilon": 1.0, "delta": 1e-6}, ZCDP(approx_to_zcdp(1.0, 1e-6))),
]


@pytest.mark.parametrize(("privacy", "total"), TOTALS)
@pytest.mark.parametrize(
    ("method", "center", "names"),
    [
        ("auto", True, ["mean", "second_moment"]),
        ("gauss", False, ["second_moment"]),
        ("separate", True, ["mean", "eigenvalues", "eigenvectors"]),
        ("eigen", False, ["eigenvalues", "eigenvector_1", "eigenvector_2"]),
    ],
)
def test_ledger_matches_the_plan(privacy, total, method, center, names):
    d = 3
    budget = PrivacyBudget(rho=100.0)
    pca = PrivatePCA(
        data_norm=4.0,
        method=method,
        center=center,
        budget=budget,
        random_state=0,
        **privacy,
    )
    planned = pca.planned_costs(d)
    pca.fit(_rows(500, radius=4.0)[:, :d])
    ledger = budget.ledger()
    assert [e.cost for e in ledger] == planned
    assert [e.mechanism.split(":")[1] for e in ledger] == names
    assert pca.privacy_spent_ == total
    # The split, exactly: a tenth to the mean, the rest to the covariance
    # (halved by SeparateCov and EMCov; EMCov's half over d - 1 pure steps).
    rest = total
    if center:
        mean, rest = split_cost(total, [MEAN_SHARE, 1.0 - MEAN_SHARE])
        assert planned[0] == mean
    if method in ("auto", "gauss"):
        assert planned[-1] == rest
    elif method == "separate":
        assert planned[-2:] == split_cost(rest, [0.5, 0.5])
    else:
        values, vectors = split_cost(rest, [0.5, 0.5])
        assert planned[0] == values
        step = (
            PureDP(vectors.epsilon / (d - 1))
            if isinstance(vectors, PureDP)
            else PureDP(math.sqrt(2.0 * vectors.rho / (d - 1)))
        )
        assert planned[1:] == [step, step]
    # The plan does not depend on n_components (it is post-processing).
    assert pca.set_params(n_components=1).planned_costs(d) == planned
    assert pca.set_params(n_components=0.5).planned_costs(d) == planned


@pytest.mark.parametrize(
    ("pca_method", "cov_method", "center"),
    [
        ("auto", "gauss", True),
        ("gauss", "gauss", False),
        ("separate", "separate", True),
        ("eigen", "eigen", True),
    ],
)
def test_the_releases_are_private_covariances(
    pca_method, cov_method, center, monkeypatch
):
    # Same plan (ledger labels and costs) and, from one seed, the same noise:
    # the mean is PrivateCovariance's location_ and the components are the
    # eigenvectors of its release, so PrivatePCA adds no mechanism. The
    # covariance estimator's own post-processing of the spectrum (confined by
    # the released diagonal: dpgauss.releases._measured) is left out.
    monkeypatch.setattr(
        "dpgauss.covariance._base.confine", lambda *args, **kwargs: None
    )
    X = _rows(3000, seed=1, radius=5.0)
    n = X.shape[0]
    ledgers = []
    for est in (
        PrivatePCA(data_norm=5.0, method=pca_method, center=center),
        PrivateCovariance(data_norm=5.0, method=cov_method, center=center),
    ):
        budget = PrivacyBudget(rho=10.0)
        est.set_params(rho=1.0, budget=budget).fit(X)
        ledgers.append([(e.cost, e.mechanism) for e in budget.ledger()])
    assert ledgers[0] == ledgers[1]
    pca = PrivatePCA(
        data_norm=5.0, method=pca_method, center=center, rho=1.0, random_state=7
    ).fit(X)
    cov = PrivateCovariance(
        data_norm=5.0, method=cov_method, center=center, rho=1.0, random_state=7
    ).fit(X)
    np.testing.assert_array_equal(pca.mean_, cov.location_)
    values, vectors = cov._model  # the released spectrum, floored
    order = np.argsort(-values, kind="stable")
    above = values[order] > cov.eigenvalue_floor_  # the floor does not move these
    released = pca.explained_variance_ * (n - 1) / n
    np.testing.assert_allclose(released[above], values[order][above], rtol=1e-12)
    overlap = np.abs(np.sum(pca.components_ * vectors[:, order].T, axis=1))
    np.testing.assert_allclose(overlap[above], 1.0, rtol=1e-12)
    assert pca.method_ == cov.method_ == cov_method


@pytest.mark.parametrize(("privacy", "total"), TOTALS)
@pytest.mark.parametrize("center", [True, False])
def test_tail_ledger_matches_the_plan(privacy, total, center):
    # method="tail" charges TailSensitiveCovariance's plan, release for
    # release (labels and costs), and its composition is the total.
    d = 3
    budget = PrivacyBudget(rho=100.0)
    pca = PrivatePCA(
        data_norm=40.0,
        method="tail",
        center=center,
        budget=budget,
        random_state=0,
        **privacy,
    )
    planned = pca.planned_costs(d)
    pca.fit(_rows(500, radius=4.0)[:, :d])
    events = [(e.cost, e.mechanism) for e in budget.ledger()]
    tail = TailSensitiveCovariance(data_norm=40.0, center=center, **privacy)
    assert events == tail._pricing_plan(d, total=total).charges()
    assert [cost for cost, _ in events] == planned == tail.planned_costs(d)
    assert pca.privacy_spent_.to_zcdp().rho == pytest.approx(total.to_zcdp().rho)
    # The plan does not depend on n_components (it is post-processing).
    assert pca.set_params(n_components=1).planned_costs(d) == planned


# case (the centering TailSensitiveCovariance takes at seed 7) -> (rows, params)
TAIL_CASES = {
    "mean": (_rows(3000, seed=1, radius=5.0), {"rho": 1.0, "data_norm": 50.0}),
    "pairs": (_rows(1000, seed=2, radius=5.0) + 30.0, {"rho": 1.0, "data_norm": 100.0}),
    "none": (
        _rows(3000, seed=1, radius=5.0),
        {"epsilon": 1.0, "data_norm": 50.0, "center": False},
    ),
}


@pytest.mark.parametrize("case", list(TAIL_CASES))
def test_the_releases_are_tail_sensitive_covariances(case, monkeypatch):
    # Same plan (ledger labels and costs) and, from one seed, the same noise:
    # mean_ is TailSensitiveCovariance's location_, and the components and
    # explained variances are its released spectrum, so method="tail" adds no
    # mechanism. Both with random_state alone and drawn through fresh budgets
    # (the fit's noise then also depends on the ledger's event ids). The
    # covariance estimator's own post-processing of the spectrum (confined by
    # the released diagonal: dpgauss.releases._measured) is left out.
    monkeypatch.setattr(
        "dpgauss.covariance._base.confine", lambda *args, **kwargs: None
    )
    X, params = TAIL_CASES[case]
    n = X.shape[0]
    ledgers = []
    for est in (PrivatePCA(method="tail"), TailSensitiveCovariance()):
        budget = PrivacyBudget(rho=10.0)
        est.set_params(budget=budget, random_state=3, **params).fit(X)
        ledgers.append([(e.cost, e.mechanism) for e in budget.ledger()])
    assert ledgers[0] == ledgers[1]
    pca = PrivatePCA(method="tail", random_state=7, **params).fit(X)
    cov = TailSensitiveCovariance(random_state=7, **params).fit(X)
    assert cov.centering_ == case  # the case covers the path it names
    assert pca.method_ == cov.method_
    np.testing.assert_array_equal(pca.mean_, cov.location_)
    values, vectors = cov._model  # the released spectrum, floored
    order = np.argsort(-values, kind="stable")
    above = values[order] > cov.eigenvalue_floor_  # the floor does not move these
    assert above[:2].all()
    released = pca.explained_variance_ * (n - 1) / n
    np.testing.assert_allclose(released[above], values[order][above], rtol=1e-12)
    # The components are the released eigenvectors themselves (signs flipped).
    np.testing.assert_array_equal(np.abs(pca.components_), np.abs(vectors[:, order].T))
    # And the top eigenvectors of cov.covariance_, recomputed: their
    # eigenvalues are apart by more than a tenth of the largest, so eigh's
    # backward error (~ d eps ||C||) moves them by less than 1e-12 (Davis-Kahan).
    top_values, top_vectors = np.linalg.eigh(cov.covariance_)
    top_vectors = top_vectors[:, ::-1][:, :2]
    assert np.all(np.abs(np.diff(top_values[::-1][:3])) > 0.1 * top_values[-1])
    overlap = np.abs(np.sum(pca.components_[:2] * top_vectors.T, axis=1))
    np.testing.assert_allclose(overlap, 1.0, atol=1e-10)


def test_fit_transform_and_transform_are_free():
    budget = PrivacyBudget(rho=2.0)
    X = _rows(500, radius=12.0)
    pca = PrivatePCA(2, data_norm=12.0, rho=0.5, budget=budget, random_state=0)
    Z = pca.fit_transform(X)
    spent = len(budget.ledger())
    np.testing.assert_allclose(Z, pca.transform(X))
    pca.inverse_transform(Z), pca.get_feature_names_out()
    assert len(budget.ledger()) == spent


# -- accuracy -----------------------------------------------------------------------
def _noise_bounds(n, d, radius, rho, method):
    """High-probability (0.999 each) bounds on the perturbation of the second
    moment about the released mean, from public noise parameters.

    W (GaussCov's noise): ||W||_F^2 / s^2 ~ chi2 with d(d+1)/2 degrees of
    freedom (diagonal variance s^2, off-diagonal s^2/2, counted twice). The
    mean's error delta adds delta delta^T (||.||_2 = |delta|^2 <= v chi2_d,
    v the per-coordinate noise variance; the shrinkage towards the origin, the
    data's mean, only shortens it). Returns (||W||_F bound, |delta|^2 bound).
    """
    mean_cost, rest = split_cost(ZCDP(rho), [MEAN_SHARE, 1 - MEAN_SHARE])
    cost = rest if method == "gauss" else split_cost(rest, [0.5, 0.5])[1]
    diagonal, _ = second_moment_mechanism(cost, n, d, radius).entry_variances(d)
    frobenius = math.sqrt(diagonal * stats.chi2.ppf(0.999, d * (d + 1) // 2))
    v = mean_mechanism(mean_cost, n, d, radius).effective_scale(d) ** 2
    return frobenius, v * stats.chi2.ppf(0.999, d)


@pytest.mark.parametrize("method", ["gauss", "separate"])
def test_subspace_matches_sklearn_within_davis_kahan(method, global_random_seed):
    # Davis-Kahan (Yu, Wang and Samworth 2015): the top-k eigenspaces of C and
    # C + E differ by ||P - P_hat||_F = sqrt(2) ||sin Theta||_F <= 2 sqrt(2)
    # ||E||_F / (lambda_k - lambda_{k+1}), here with E = W + delta delta^T
    # bounded by _noise_bounds (SeparateCov's components are those of a
    # GaussCov copy at half the cost). The rows lie in 0.9 B of their mean, so
    # nothing is clipped about a released mean within 0.1 B.
    n, radius, rho, k = 20_000, 12.0, 1.0, 3
    X = _rows(n, seed=global_random_seed, radius=radius)
    d = X.shape[1]
    pca = PrivatePCA(
        k, data_norm=radius, method=method, rho=rho, random_state=global_random_seed
    ).fit(X)
    ref = PCA(k).fit(X)
    C = np.cov(X, rowvar=False, bias=True)
    eig = np.sort(np.linalg.eigvalsh(C))[::-1]
    frobenius, mean_term = _noise_bounds(n, d, radius, rho, method)
    bound = 2 * math.sqrt(2) * (frobenius + mean_term) / (eig[k - 1] - eig[k])
    P_hat = pca.components_.T @ pca.components_
    P = ref.components_.T @ ref.components_
    assert np.linalg.norm(P_hat - P) <= bound
    # The test has power: one wrong direction puts ||P_hat - P||_F >= sqrt(2).
    assert bound < 0.5
    # Signs follow scikit-learn's convention, so the components themselves agree.
    np.testing.assert_allclose(pca.components_, ref.components_, atol=bound)


def test_separate_explained_variance_within_the_eigenvalue_noise(global_random_seed):
    # SeparateCov releases the sorted eigenvalues of the second moment M about
    # the released mean with l2 noise of sd s_v per entry; the isotonic and
    # simplex projections are onto convex sets holding eig(M), so they never
    # move the result away from it: ||values - eig(M)||_2 <= s_v sqrt(chi2_d)
    # + sqrt(d) |shift| (the mean's bias correction, at most |delta|^2 / d per
    # entry... bounded here by |delta|^2), and eig(M) is within |delta|^2 of
    # eig(C) (Weyl). explained_variance_ and scikit-learn's are both n/(n-1)
    # times their covariance eigenvalues.
    n, radius, rho = 20_000, 12.0, 1.0
    X = _rows(n, seed=global_random_seed, radius=radius)
    d = X.shape[1]
    pca = PrivatePCA(
        data_norm=radius, method="separate", rho=rho, random_state=global_random_seed
    ).fit(X)
    ref = PCA().fit(X)
    _, rest = split_cost(ZCDP(rho), [MEAN_SHARE, 1 - MEAN_SHARE])
    s_v = eigenvalue_mechanism(split_cost(rest, [0.5, 0.5])[0], n, d, radius).scale
    _, mean_term = _noise_bounds(n, d, radius, rho, "separate")
    bound = (
        n
        / (n - 1)
        * (s_v * math.sqrt(stats.chi2.ppf(0.999, d)) + 2 * math.sqrt(d) * mean_term)
    )
    error = np.linalg.norm(pca.explained_variance_ - ref.explained_variance_)
    assert error <= bound
    assert bound < 0.05 * ref.explained_variance_[0]


def test_gauss_explained_variance_close_to_sklearn(global_random_seed):
    # GaussCov's eigenvalues are the denoised eigenvalues of C + E. Before
    # denoising, Weyl bounds each error by ||E||_2 <= ||E||_F (bounded as
    # above); the denoiser removes the noise bulk's upward bias and shrinks
    # towards the released trace, and for spikes far above the noise (the
    # case here: the smallest variance, 0.04, is 400 times ||E||_F) it moves
    # each by about sigma^2 / theta, far less. Asserted: the Weyl bound.
    n, radius, rho = 20_000, 12.0, 1.0
    X = _rows(n, seed=global_random_seed, radius=radius)
    d = X.shape[1]
    pca = PrivatePCA(
        data_norm=radius, method="gauss", rho=rho, random_state=global_random_seed
    ).fit(X)
    ref = PCA().fit(X)
    frobenius, mean_term = _noise_bounds(n, d, radius, rho, "gauss")
    bound = n / (n - 1) * (frobenius + mean_term)
    np.testing.assert_allclose(
        pca.explained_variance_, ref.explained_variance_, rtol=0, atol=bound
    )
    np.testing.assert_allclose(
        pca.explained_variance_ratio_, ref.explained_variance_ratio_, atol=0.01
    )
    np.testing.assert_allclose(
        pca.singular_values_, np.sqrt((n - 1) * pca.explained_variance_)
    )
    assert pca.noise_variance_ == 0.0  # every component kept
    # The mean: within its noise (chi2 bound on |mu_hat - mu|^2).
    assert np.sum((pca.mean_ - X.mean(axis=0)) ** 2) <= mean_term


def test_float_n_components_selects_by_released_ratio():
    X = _rows(5000, seed=3)
    full = PrivatePCA(data_norm=12.0, rho=1.0, random_state=4).fit(X)
    cumulative = np.cumsum(full.explained_variance_ratio_)
    for threshold in (0.5, 0.8, 0.95, 0.999):
        pca = PrivatePCA(threshold, data_norm=12.0, rho=1.0, random_state=4).fit(X)
        k = int(np.flatnonzero(cumulative >= threshold)[0]) + 1
        assert pca.n_components_ == k
        np.testing.assert_array_equal(pca.components_, full.components_[:k])
        expected_noise = np.mean(full.explained_variance_[k:]) if k < 6 else 0.0
        assert pca.noise_variance_ == pytest.approx(expected_noise, rel=1e-12)


def test_whiten_and_inverse_transform():
    n, radius, rho = 20_000, 12.0, 1.0
    X = _rows(n, seed=5, radius=radius)
    pca = PrivatePCA(
        data_norm=radius, method="gauss", whiten=True, rho=rho, random_state=0
    ).fit(X)
    Z = pca.transform(X)
    variances = np.var(Z, axis=0, ddof=1)
    # Exactly: the data's variance along each component over the floored
    # explained variance (both with ddof=1).
    C = np.cov(X, rowvar=False)
    along = np.einsum("ij,jk,ik->i", pca.components_, C, pca.components_)
    floored = np.maximum(pca.explained_variance_, pca.eigenvalue_floor_)
    np.testing.assert_allclose(variances, along / floored, rtol=1e-9)
    # About 1: u_i is an eigenvector of C + E with eigenvalue l_i, so
    # |u_i^T C u_i - l_i| <= ||E||_2, and the denoised value is within another
    # ||E||_2 of l_i (as in test_gauss_explained_variance_close_to_sklearn):
    # |variance - 1| <= 2 ||E|| / explained variance (1% for the first).
    frobenius, mean_term = _noise_bounds(n, 6, radius, rho, "gauss")
    tolerance = 2 * n / (n - 1) * (frobenius + mean_term) / floored
    assert np.all(np.abs(variances - 1.0) <= tolerance)
    np.testing.assert_allclose(pca.inverse_transform(Z), X, atol=1e-10)
    plain = clone(pca).set_params(whiten=False).fit(X)
    np.testing.assert_allclose(
        plain.inverse_transform(plain.transform(X)), X, atol=1e-10
    )
    two = PrivatePCA(2, data_norm=12.0, rho=1.0, random_state=0).fit(X)
    back = two.inverse_transform(two.transform(X))
    # The projection onto the top-2 plane: what remains is the other variances.
    residual = np.mean(np.sum((X - back) ** 2, axis=1))
    assert residual == pytest.approx(np.sum(SCALES[2:] ** 2), rel=0.05)


# -- valid for every draw -----------------------------------------------------------
def _extreme_rows(kind, radius=1.0):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    if kind == "far":  # 1e12 radii away
        X[::3] *= 1e12 * radius
    elif kind == "max":  # the largest floats, both signs
        X[0] = np.finfo(np.float64).max
        X[1] = -np.finfo(np.float64).max
        X[2, :2] = [np.finfo(np.float64).max, -np.finfo(np.float64).max]
    elif kind == "constant":  # constant columns, and all rows equal
        X[:, 1] = 7.0
        X[:, 3] = 0.0
    elif kind == "identical":
        X[:] = X[0]
    return X


@pytest.mark.parametrize("kind", ["far", "max", "constant", "identical"])
@pytest.mark.parametrize("method", ["tail", "auto", "separate", "eigen"])
@pytest.mark.parametrize("rho", [1e-12, 1.0, 1e8])
def test_components_orthonormal_and_variances_valid_for_every_draw(kind, method, rho):
    X = _extreme_rows(kind)
    before = X.copy()
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)  # predicted useless
            pca = PrivatePCA(
                data_norm=1.0,
                method=method,
                whiten=True,
                rho=rho,
                random_state=seed,
                on_useless="warn",
            ).fit(X)
        _orthonormal(pca.components_)
        ev = pca.explained_variance_
        assert np.all(np.isfinite(ev))
        assert np.all(ev >= 0)
        assert np.all(np.diff(ev) <= 0)
        assert np.all(np.isfinite(pca.explained_variance_ratio_))
        assert 0 <= np.sum(pca.explained_variance_ratio_) <= 1 + 1e-12
        assert np.all(np.isfinite(pca.singular_values_))
        assert np.isfinite(pca.noise_variance_)
        assert np.all(np.isfinite(pca.mean_))
        assert np.linalg.norm(pca.mean_) <= 1.0 * (1 + 1e-12)  # in the ball
        assert 0 < pca.eigenvalue_floor_ < np.inf
        assert np.all(np.isfinite(pca.transform(np.ones((2, 4)))))
    np.testing.assert_array_equal(X, before)


def test_n_components_rule_and_sign_convention():
    # A float keeps the fewest components reaching it, all of them when the
    # released ratios never do (every released eigenvalue 0: ratios all 0).
    ratio = np.array([0.5, 0.3, 0.2])
    assert select_n_components(None, ratio, 3) == 3
    assert select_n_components(2, ratio, 3) == 2
    assert select_n_components(0.5, ratio, 3) == 1
    assert select_n_components(0.8, ratio, 3) == 2
    assert select_n_components(0.81, ratio, 3) == 3
    assert select_n_components(0.9, np.zeros(3), 3) == 3
    flipped = flip_signs(np.array([[0.6, -0.8], [0.0, 0.0], [-0.5, 0.5]]))
    np.testing.assert_array_equal(flipped, [[-0.6, 0.8], [0.0, 0.0], [0.5, -0.5]])


# -- the scikit-learn API -----------------------------------------------------------
def test_pandas_output_and_feature_names():
    X = pd.DataFrame(_rows(400), columns=[f"f{i}" for i in range(6)])
    pca = PrivatePCA(3, data_norm=12.0, rho=1.0, random_state=0)
    Z = pca.set_output(transform="pandas").fit_transform(X)
    assert isinstance(Z, pd.DataFrame)
    assert list(Z.columns) == ["privatepca0", "privatepca1", "privatepca2"]
    np.testing.assert_array_equal(pca.feature_names_in_, X.columns)
    assert list(pca.get_feature_names_out()) == list(Z.columns)


def test_pipeline_with_logistic_regression_and_shared_budget():
    # Standardised breast cancer (data preparation, not private, for the
    # test), data_norm 2 sqrt(30); at rho = 1 the benchmark captures 95% of the
    # top-5 variance, and the classifier loses little (non-private: about 0.97).
    # The ledger holds the default "tail" plan's releases, all PrivatePCA's.
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    budget = PrivacyBudget(rho=1.0)
    model = make_pipeline(
        PrivatePCA(
            5, data_norm=2 * math.sqrt(30), rho=1.0, budget=budget, random_state=0
        ),
        LogisticRegression(max_iter=1000),
    ).fit(X, y)
    planned = PrivatePCA(data_norm=1.0, rho=1.0).planned_costs(X.shape[1])
    assert [e.estimator for e in budget.ledger()] == ["PrivatePCA"] * len(planned)
    assert model.score(X, y) >= 0.9
    with pytest.raises(BudgetExceededError):
        clone(model).fit(X, y)  # the budget is spent: refused before reading X


def test_clone_and_pickle():
    X = _rows(400)
    pca = PrivatePCA(2, data_norm=12.0, rho=1.0, random_state=0).fit(X)
    again = pickle.loads(pickle.dumps(pca))
    np.testing.assert_array_equal(again.transform(X), pca.transform(X))
    twin = clone(pca)
    assert twin.get_params() == pca.get_params()
    assert not hasattr(twin, "components_")
    np.testing.assert_array_equal(twin.fit(X).components_, pca.components_)


# -- bad input: refused before any spend ----------------------------------------------
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_components": 7}, "n_components=7 must be between 1 and n_features=6"),
        ({"n_components": 0}, "n_components"),
        ({"n_components": 1.5}, "n_components"),
        ({"n_components": -0.5}, "n_components"),
        ({"n_components": "mle"}, "n_components"),
        ({"data_norm": None}, "data_norm is required"),
        ({"data_norm": -1.0}, "data_norm"),
        ({"data_norm": 1e300}, "cannot be calibrated"),
        ({"method": "coinpress"}, "method"),
        ({"rho": 1e-300}, "cannot be calibrated"),
        ({"whiten": "yes"}, "whiten"),
    ],
)
@pytest.mark.parametrize("method", ["tail", "gauss"])
def test_bad_parameters_spend_nothing(params, match, method):
    budget = PrivacyBudget(rho=10.0)
    X = _rows(100)
    before = X.copy()
    pca = PrivatePCA(data_norm=12.0, method=method, rho=1.0, budget=budget)
    pca.set_params(**params)
    for skip in (False, True):
        with config_context(skip_parameter_validation=skip):
            with pytest.raises(ValueError, match=match):
                pca.fit(X)
    assert budget.ledger() == []
    np.testing.assert_array_equal(X, before)


def test_bad_data_and_exhausted_budget_spend_nothing():
    budget = PrivacyBudget(rho=1.0)
    good = _rows(50)
    for value, match in ((np.nan, "NaN"), (np.inf, "infinity")):
        X = good.copy()
        X[3, 1] = value
        before = X.copy()
        with pytest.raises(ValueError, match=match):
            PrivatePCA(data_norm=12.0, rho=0.5, budget=budget).fit(X)
        np.testing.assert_array_equal(X, before)
    with pytest.raises(ValueError, match="minimum of 2"):
        PrivatePCA(data_norm=12.0, rho=0.5, budget=budget).fit(good[:1])
    with pytest.raises(ValueError, match="no privacy parameter"):
        PrivatePCA(data_norm=12.0, budget=budget).fit(good)
    assert budget.ledger() == []
    PrivatePCA(data_norm=12.0, rho=0.75, budget=budget).fit(good)
    spent = budget.ledger()
    with pytest.raises(BudgetExceededError):
        PrivatePCA(data_norm=12.0, rho=0.5, budget=budget).fit(good)
    assert budget.ledger() == spent
    pca = PrivatePCA(2, data_norm=12.0, rho=0.5, random_state=0).fit(good)
    with pytest.raises(ValueError, match="features"):
        pca.transform(good[:, :3])
    with pytest.raises(ValueError, match="n_components_=2"):
        pca.inverse_transform(good[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        pca.transform(np.full((2, 6), np.nan))
