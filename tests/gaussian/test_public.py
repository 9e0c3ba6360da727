"""X_public: public rows replace the private location search."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from dpgauss import PrivacyBudget, PrivateGaussianEstimator, PrivateMean


def test_one_public_row_recenters_a_far_mean():
    # BKS22 Fig. 1 (spec bks2022.md section 8.1): d = 50, n = 1,000,
    # rho = 0.5, covariance I, mu = 1000 * ones, one public row. The empirical
    # mean errs about sqrt(d / n) = 0.22; the spec's target is below 0.30
    # (measured 10%-trimmed mean over 40 trials: 0.261). The median over 7
    # seeds has sd about 0.02 here, so 0.30 is about 2 sd above 0.26.
    d, n = 50, 1000
    errors = []
    for seed in range(7):
        rng = np.random.default_rng(seed)
        mu = np.full(d, 1000.0)
        X = mu + rng.standard_normal((n, d))
        public = mu + rng.standard_normal((1, d))
        est = PrivateMean(rho=0.5, covariance=np.eye(d), random_state=seed)
        est.fit(X, X_public=public)
        errors.append(np.linalg.norm(est.mean_ - mu))
    assert np.median(errors) < 0.30


@pytest.mark.parametrize("cls", [PrivateMean, PrivateGaussianEstimator])
def test_public_rows_replace_the_location_search(cls):
    rng = np.random.default_rng(0)
    X = rng.normal(3e4, 2.0, size=(3000, 4))
    public = rng.normal(3e4, 2.0, size=(3, 4))
    kept = public.copy()
    budget = PrivacyBudget(rho=10.0)
    est = cls(rho=1.0, budget=budget, random_state=0).fit(X, X_public=public)
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert "range_location" not in names
    assert "range_scale" in names
    costs = [e.cost for e in budget.ledger()]
    assert costs == est.planned_costs(4, n_public=3)
    assert costs != est.planned_costs(4)
    assert budget.spent().rho == pytest.approx(1.0)
    np.testing.assert_array_equal(public, kept)
    assert "_public" not in vars(est)
    assert "_public" not in vars(clone(est))
    assert np.abs(est.mean_ - 3e4).max() < 1.0


@pytest.mark.parametrize(
    ("public", "match"),
    [
        (np.full((2, 3), np.nan), "NaN"),
        (np.ones((2, 4)), "X_public has 4 features but X has 3"),
        (np.ones(3), "2D array"),
        (np.ones((0, 3)), "minimum of 1"),
    ],
)
def test_bad_public_rows_are_refused_before_any_spend(public, match):
    X = np.random.default_rng(0).normal(size=(500, 3))
    budget = PrivacyBudget(rho=1.0)
    est = PrivateGaussianEstimator(rho=0.5, budget=budget, random_state=0)
    with pytest.raises(ValueError, match=match):
        est.fit(X, X_public=public)
    assert budget.ledger() == []
    assert not hasattr(est, "privacy_spent_")


def test_tukey_refuses_public_rows_before_any_spend():
    X = np.random.default_rng(0).normal(size=(500, 2))
    budget = PrivacyBudget(epsilon=5.0, delta=1e-3)
    est = PrivateMean(method="tukey", epsilon=1.0, delta=1e-6, budget=budget)
    with pytest.raises(ValueError, match="does not use X_public"):
        est.fit(X, X_public=X[:2])
    assert budget.ledger() == []


def test_public_rows_are_routed_through_a_pipeline():
    rng = np.random.default_rng(1)
    X = rng.normal(-5e3, 1.0, size=(2000, 3))
    public = rng.normal(-5e3, 1.0, size=(2, 3))
    with sklearn.config_context(enable_metadata_routing=True):
        step = PrivateMean(rho=1.0, random_state=0).set_fit_request(X_public=True)
        pipe = make_pipeline(step).fit(X, X_public=public)
    assert np.abs(pipe[-1].mean_ + 5e3).max() < 1.0
    assert "_public" not in vars(pipe[-1])


def _rotated(d, n, m, seed, shift=0.0):
    # Spec bks2022.md section 8.3: Sigma = Q diag(10^U[-2, 2]) Q^T, mu = 1000.
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    values = 10.0 ** rng.uniform(-2.0, 2.0, d)
    root = (Q * np.sqrt(values)) @ Q.T
    mu = np.full(d, 1000.0)
    X = mu + rng.standard_normal((n, d)) @ root
    public = mu + rng.standard_normal((m, d)) @ root
    public += shift * np.sqrt(values.max()) * Q[:, np.argmax(values)]
    return X, public, mu, (Q / np.sqrt(values)) @ Q.T


def _errors(est, mu, inverse_root):
    d = mu.size
    mean = np.linalg.norm(inverse_root @ (est.mean_ - mu))
    cov = np.linalg.norm(inverse_root @ est.covariance_ @ inverse_root - np.eye(d))
    return mean, cov


@pytest.mark.parametrize(
    ("m", "names"),
    [
        (5, ["range_scale"]),  # fewer than d + 1: the center only
        (11, ["range_scale"]),  # d + 1: the top eigenvalue in the public frame
        (80, []),  # the Wishart bound holds: nothing searched
    ],
)
def test_public_rows_start_the_frame(m, names):
    d = 10
    X, public, _, _ = _rotated(d, 2000, m, 0)
    budget = PrivacyBudget(rho=10.0)
    est = PrivateGaussianEstimator(rho=0.5, budget=budget, random_state=0)
    est.fit(X, X_public=public)
    found = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert [n for n in found if n.startswith("range_")] == names
    assert [e.cost for e in budget.ledger()] == est.planned_costs(d, n_public=m)
    assert budget.spent().rho == pytest.approx(0.5)


def test_public_frame_beats_the_private_scale_search():
    # d = 20, n = 2,000, rho = 0.5, condition number up to 10^4: measured
    # (median of 5 seeds) covariance error 23 without public rows, 1.5 with
    # m = 2d (top searched in the public frame), 1.0 with m = 4d (Wishart
    # bound, free); the spec's prototype had 8.6 and 2.8. Three seeds here:
    # the thresholds leave a factor 3 or more on each side.
    results = {0: [], 40: [], 80: []}
    for seed in range(3):
        for m in results:
            X, public, mu, inverse_root = _rotated(20, 2000, m, seed)
            est = PrivateGaussianEstimator(rho=0.5, random_state=seed)
            est.fit(X, X_public=public if m else None)
            results[m].append(_errors(est, mu, inverse_root)[1])
    assert np.median(results[0]) > 10.0
    assert np.median(results[40]) < 4.0
    assert np.median(results[80]) < 3.0


def test_shifted_public_rows_with_a_declared_bound():
    # Public rows shifted by 20 sds along the top eigenvector: with the
    # default public_tv_bound=0 the Wishart-bounded radius misses the mean
    # (benchmarks/bench_public.py part 3: Mahalanobis error 4.05 at n = 5,000,
    # d = 20, m = 80; a 5-sd shift is still covered, 0.056); declared with
    # public_tv_bound=0.99 the radius covers it (0.061, the unshifted 0.056).
    X, public, mu, inverse_root = _rotated(20, 5000, 80, 0, shift=20.0)
    est = PrivateGaussianEstimator(rho=0.5, public_tv_bound=0.99, random_state=0)
    mean, cov = _errors(est.fit(X, X_public=public), mu, inverse_root)
    assert mean < 0.15
    assert cov < 1.0
    blind = PrivateGaussianEstimator(rho=0.5, random_state=0)
    assert _errors(blind.fit(X, X_public=public), mu, inverse_root)[0] > 1.0


def test_public_tv_bound_is_validated():
    X = np.random.default_rng(0).normal(size=(500, 3))
    budget = PrivacyBudget(rho=1.0)
    est = PrivateGaussianEstimator(rho=0.5, budget=budget, public_tv_bound=1.0)
    with pytest.raises(ValueError, match="public_tv_bound"):
        est.fit(X, X_public=X[:4])
    assert budget.ledger() == []


def test_subnormal_public_rows_give_no_public_frame():
    # Deviations near 5e-324 would make the public whitening infinite and the
    # fit fail after the spend; such rows start no frame (decided before the
    # spend, from the public rows alone).
    from dpgauss.releases._hints import public_whitening

    public = np.array([[0, 0], [5e-324, 0], [0, 5e-324], [1e-323, 1e-323], [0, 1e-323]])
    P, _ = public_whitening(public)
    assert not np.all(np.isfinite(P))
    X = np.random.default_rng(0).normal(size=(2000, 2))
    budget = PrivacyBudget(rho=10.0)
    est = PrivateGaussianEstimator(rho=1.0, budget=budget, random_state=3)
    est.fit(X, X_public=public)
    assert np.all(np.isfinite(est.covariance_))
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert "range_scale" in names


def test_a_searched_top_eigenvalue_is_clamped_to_the_loose_public_bounds():
    # 311 rows at rho = 0.166 with 23 public rows (d = 3; a mixture
    # component's share): the one-column search of the top eigenvalue went
    # astray in 5 of these 12 seeds (1e138, 1e-228, ...; covariances as far
    # off); clamped to loose_public_range (free, each side failing w.p. 0.1)
    # every covariance is within a factor 3 of the identity.
    for seed in range(12):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((311, 3)) + 1e3
        public = rng.standard_normal((23, 3)) + 1e3
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = PrivateGaussianEstimator(
                rho=0.166, random_state=seed, on_useless="warn"
            )
            est.fit(X, X_public=public)
        values = np.linalg.eigvalsh(est.covariance_)
        assert values.min() > 1 / 3, (seed, values)
        assert values.max() < 3, (seed, values)
