"""PrivatePCA and PrivateWhitener with a public box."""

import warnings

import numpy as np
import pytest

from dpgauss import PrivateCovariance, PrivatePCA, PrivateWhitener
from dpgauss.accounting import ZCDP, PrivacyBudget
from dpgauss.base import FitData
from dpgauss.exceptions import UselessFitError, UtilityWarning
from dpgauss.releases._box_probe import is_probed


def _data(n, seed=0):
    # Four columns in units 1e-3 .. 1e3; the one in units 1e3 carries almost
    # all the variance, then the one in units 1.
    rng = np.random.default_rng(seed)
    scales = np.array([1e-3, 1.0, 1e3, 1e-2])
    Z = np.clip(rng.normal(size=(n, 4)) / 4.0, -1, 1)
    return Z * scales, (-scales, scales)


def _captured(pca, X):
    C = np.cov(X.T)
    V = pca.components_
    top = np.sort(np.linalg.eigvalsh(C))[::-1][: V.shape[0]].sum()
    return np.trace(V @ C @ V.T) / top


@pytest.mark.parametrize("method", ["auto", "tail", "diagonal"])
def test_pca_finds_the_wide_column_at_pure_epsilon(method):
    X, box = _data(500)
    pca = PrivatePCA(2, bounds=box, method=method, epsilon=1.0, random_state=0)
    pca.fit(X)
    # The top two axes are the columns in units 1e3 and 1: any axis pair the
    # noise could pick instead captures under 1e-3 of the variance.
    assert _captured(pca, X) > 0.99
    np.testing.assert_allclose(pca.components_ @ pca.components_.T, np.eye(2))


def test_pca_takes_the_diagonal_release_where_the_full_one_is_noise():
    X, box = _data(300)
    pca = PrivatePCA(2, bounds=box, epsilon=0.5, random_state=0).fit(X)
    assert pca.method_ == "diagonal"
    pca = PrivatePCA(2, bounds=box, rho=10.0, random_state=0).fit(_data(20000)[0])
    assert pca.method_ in ("gauss", "separate")


def _columns(n, d, seed=0):
    rng = np.random.default_rng(seed)
    ones = np.ones(d)
    return np.clip(rng.normal(size=(n, d)) / 4.0, -1, 1), (-ones, ones)


def test_pca_takes_the_full_release_within_its_margin():
    # The predicted ratios of the full release's Frobenius error to the
    # diagonal release's (public: n, d, the cost; the rows do not matter):
    # n = 1125, d = 4, epsilon 1: 1.18, within PCA's margin 1.2 but above the
    # covariance estimators' 1, so PrivateCovariance takes the diagonal
    # release and PCA the full one; n = 2000, d = 5, epsilon 0.5: 1.66, the
    # axes; n = 2000, d = 5, epsilon 1: 0.86, the full release for both.
    # Under zCDP the margin is 0.75: n = 500, d = 6, rho 0.125 (0.77) gives
    # PCA the axes and PrivateCovariance the full release (which it probes
    # first: dpgauss.releases._box_probe).
    X, box = _columns(1125, 4)
    pca = PrivatePCA(2, bounds=box, epsilon=1.0, random_state=0).fit(X)
    assert pca.method_ != "diagonal"
    cov = PrivateCovariance(bounds=box, epsilon=1.0, random_state=0).fit(X)
    assert cov.method_ == "diagonal"
    X, box = _columns(2000, 5)
    pca = PrivatePCA(2, bounds=box, epsilon=0.5, random_state=0).fit(X)
    assert pca.method_ == "diagonal"
    pca = PrivatePCA(2, bounds=box, epsilon=1.0, random_state=0).fit(X)
    assert pca.method_ != "diagonal"
    X, box = _columns(500, 6)
    pca = PrivatePCA(2, bounds=box, rho=0.125, random_state=0).fit(X)
    assert pca.method_ == "diagonal"
    cov = PrivateCovariance(bounds=box, rho=0.125, random_state=0)
    assert is_probed(cov._build_plan(ZCDP(0.125), FitData(n=500, d=6)))


def test_pca_refuses_when_the_variances_are_noise():
    X, box = _data(20)
    budget = PrivacyBudget(epsilon=1.0)
    with pytest.raises(UselessFitError, match="random subspace"):
        PrivatePCA(2, bounds=box, epsilon=0.01, budget=budget).fit(X)
    assert budget.ledger() == []


@pytest.mark.parametrize("seed", [0, 7])
def test_outputs_finite_and_capped_for_any_draw(seed):
    X, (lo, hi) = _data(30, seed)
    X[:3] = 1e12
    pca = PrivatePCA(bounds=(lo, hi), method="gauss", epsilon=1e-5, on_useless="warn")
    with pytest.warns(UtilityWarning):
        pca.set_params(random_state=seed).fit(X)
    h = (hi - lo) / 2
    assert np.all(np.isfinite(pca.components_))
    assert np.all(pca.explained_variance_ <= np.sum(h * h) * 30 / 29 * (1 + 1e-9))
    assert np.all((pca.mean_ >= lo) & (pca.mean_ <= hi))
    white = PrivateWhitener(bounds=(lo, hi), epsilon=1e-5, on_useless="warn")
    with pytest.warns(UtilityWarning):
        white.set_params(random_state=seed).fit(X)
    assert np.all(np.isfinite(white.whitening_))
    assert np.all(np.isfinite(white.transform(X[3:])))


@pytest.mark.parametrize("seed", [0, 7, 123])
@pytest.mark.parametrize("privacy", [{"epsilon": 1e-5}, {"rho": 1e-9}])
def test_axes_outputs_finite_and_in_the_box_for_any_draw(seed, privacy):
    # The axes release at tiny budgets with rows 1e12 box widths away: the
    # mean stays in the box, the variances within h^2 (times n / (n - 1)),
    # the components a permutation of the coordinate axes.
    X, (lo, hi) = _data(30, seed)
    X[:3] = 1e12
    h = (hi - lo) / 2
    pca = PrivatePCA(bounds=(lo, hi), method="diagonal", on_useless="warn", **privacy)
    with pytest.warns(UtilityWarning):
        pca.set_params(random_state=seed).fit(X)
    assert np.all(np.isfinite(pca.explained_variance_))
    assert np.all(pca.explained_variance_ <= np.sum(h * h) * 30 / 29 * (1 + 1e-9))
    assert np.all((pca.mean_ >= lo) & (pca.mean_ <= hi))
    np.testing.assert_array_equal(np.sort(np.abs(pca.components_), axis=1)[:, -1], 1)


def test_whitener_with_a_box_whitens_mixed_units():
    X, box = _data(20000)
    white = PrivateWhitener(bounds=box, rho=2.0, random_state=0).fit(X)
    W = white.transform(X)
    # Whitened columns have unit variance up to the release's noise (about
    # 1e-2 in box units at rho = 2, n = 2e4) and the clipping at 4 sd.
    np.testing.assert_allclose(np.var(W, axis=0), 1.0, atol=0.25)


def test_data_norm_or_bounds_not_both():
    X, box = _data(50)
    with pytest.raises(ValueError, match="not both"):
        PrivatePCA(bounds=box, data_norm=1.0, rho=1.0).fit(X)


def test_axes_far_beyond_the_non_private_error_warn_before_the_spend():
    # n = 2,000, d = 5, epsilon 0.2: a released variance's noise (the cube's
    # K-norm on 10 entries, l-infinity 2 / n: sd sqrt(11 * 12 / 3) 2 / (n
    # epsilon), about 0.033 box units) is about 30 times a non-private
    # variance's sampling sd at the sampling fill (0.033 sqrt(2 / n) = 0.001):
    # below the random-subspace limit (1), so the fit spends, but it warns
    # first; at epsilon 1e4 it is silent.
    Z = np.random.default_rng(3).uniform(-1, 1, size=(2000, 5))
    with pytest.warns(UtilityWarning, match="times the non-private"):
        PrivatePCA(n_components=2, bounds=(-1, 1), epsilon=0.2, random_state=0).fit(Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivatePCA(n_components=2, bounds=(-1, 1), epsilon=1e4, random_state=0).fit(Z)
