"""PublicPrivateGMM: accounting, the component-rows argument, the model, errors."""

import pickle
import warnings
from collections import Counter

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.mixture import GaussianMixture
from sklearn.pipeline import make_pipeline

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP
from dpgauss.exceptions import UselessFitError, UtilityWarning
from dpgauss.mixture import PublicPrivateGMM, SeparationError, SeparationWarning
from dpgauss.mixture._public import component_rows

CENTERS = np.array([[0.0, 0.0, 0.0], [25.0, 0.0, 0.0], [0.0, 25.0, 0.0]]) + 500.0


def _draw(n, rng, centers=CENTERS):
    labels = rng.integers(0, len(centers), n)
    return centers[labels] + rng.standard_normal((n, centers.shape[1])), labels


REFINE = [f"refine{t}_{p}" for t in (1, 2) for p in ("counts", "sums", "moments")]


@pytest.mark.parametrize(
    ("m", "regime", "names"),
    [
        (90, "public", ["weights", "components", *REFINE]),  # 30 public rows each
        (9, "projected", ["pca", "weights", "components", *REFINE]),
    ],
)
def test_ledger_is_the_plan(m, regime, names):
    rng = np.random.default_rng(0)
    X, _ = _draw(6000, rng)
    public, _ = _draw(m, rng)
    budget = PrivacyBudget(rho=5.0)
    gmm = PublicPrivateGMM(3, rho=0.5, budget=budget, random_state=0, on_useless="warn")
    gmm.fit(X, X_public=public)
    assert gmm.regime_ == regime
    assert gmm.refine_steps_ == 2
    assert [e.mechanism.split(":")[1] for e in budget.ledger()] == names
    costs = [e.cost for e in budget.ledger()]
    assert costs == gmm.planned_costs(3, X_public=public)
    assert budget.spent().rho == pytest.approx(0.5)
    # refinement: 30% of the cost, half to each step, split 10/25/65 within
    refine = [c.rho for c in costs[-6:]]
    np.testing.assert_allclose(refine, 0.5 * 0.3 * 0.5 * np.tile([0.1, 0.25, 0.65], 2))
    # each component estimator is charged half of ``components`` (two of
    # them change when one row is replaced)
    half = costs[names.index("components")].rho / 2
    assert all(c.privacy_spent_.rho == pytest.approx(half) for c in gmm.components_)
    assert "_public" not in vars(gmm)
    assert "_clusters" not in vars(gmm)


def test_replacing_a_row_changes_two_components_by_one_row():
    # The argument of the Notes, checked on every kind of replacement: the
    # far row (1e12) lands in a component of its own choosing.
    rng = np.random.default_rng(1)
    n, k = 400, 3
    X = rng.standard_normal((n, 2))
    labels = rng.integers(0, k, n)
    rank = rng.permutation(n)
    centers = np.zeros((k, 2))
    for target in (50, 130, 200):  # truncated, about even, padded
        for i in rng.choice(n, 20, replace=False):
            Y, other = X.copy(), labels.copy()
            Y[i] = 1e12
            other[i] = (labels[i] + rng.integers(0, k)) % k
            changed = 0
            for j in range(k):
                a = component_rows(
                    X, labels == j, rank, target, centers[j], np.random.default_rng(j)
                )
                b = component_rows(
                    Y, other == j, rank, target, centers[j], np.random.default_rng(j)
                )
                assert a.shape == b.shape == (target, 2)
                before = Counter(map(tuple, a))
                after = Counter(map(tuple, b))
                out, into = before - after, after - before
                # one row (or pad) out, one row (or pad) in: a replacement
                assert sum(out.values()) == sum(into.values()) <= 1
                changed += bool(out)
            assert changed <= 2


@pytest.mark.parametrize("target", [3, 4])  # truncated to 3 of 4, or one pad
def test_component_rows_order_is_uniform_whatever_the_data_order(target):
    # The rows a component receives, as a sequence: the same multiset
    # selected under two different rank orders (a shifted sequence, as a
    # replaced row makes) must have one law, the uniform one over the
    # multiset's arrangements. 3 distinct rows plus (target 4) one pad: 24
    # arrangements of 4 distinct elements, or 6 of 3. Frequencies over N
    # seeds sit within 5 binomial sds sqrt(p (1 - p) / N) of p = 1 / count.
    X = np.array([[1.0], [2.0], [3.0], [4.0]])
    members = np.array([True, True, True, False])
    center = np.array([9.0])
    n_seeds = 6000
    count = 24 if target == 4 else 6
    p = 1.0 / count
    slack = 5 * np.sqrt(p * (1 - p) / n_seeds)
    for rank in (np.array([0, 1, 2, 3]), np.array([2, 0, 1, 3])):
        seen = Counter(
            tuple(
                component_rows(
                    X, members, rank, target, center, np.random.default_rng(s)
                ).ravel()
            )
            for s in range(n_seeds)
        )
        assert len(seen) == count
        assert all(sorted(key) == sorted(seen.most_common(1)[0][0]) for key in seen)
        freq = np.array(list(seen.values())) / n_seeds
        assert np.all(np.abs(freq - p) < slack)


def test_component_rows_permutation_is_drawn_whatever_the_data():
    # The draw is public: its size is the released target, so two datasets
    # leave the fit's stream in the same state.
    X = np.arange(12.0).reshape(6, 2)
    rank = np.arange(6)
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    component_rows(X, X[:, 0] > 4, rank, 4, np.zeros(2), a)
    component_rows(-X, X[:, 0] < 4, rank, 4, np.zeros(2), b)
    assert a.integers(2**62) == b.integers(2**62)


def test_histogram_noise_covers_a_row_moving_between_components():
    from dpgauss.mixture._public import _weights

    mech = _weights(ZCDP(0.05), 3).mechanism
    assert mech.sensitivity == pytest.approx(np.sqrt(2.0))  # -1 and +1


def test_config_a_within_a_tenth_of_a_nat():
    # Spec bks2022.md 8.4 configuration A is benchmarked in bench_gmm.py
    # (0.01 nats below the non-private GaussianMixture, target 0.1); here a
    # smaller, faster version: d = 3, n = 6,000, 90 public rows. The
    # non-private fit's test log-likelihood and ours differ by sampling noise
    # of about 0.02 here, so 0.1 leaves a margin of 5 of those.
    rng = np.random.default_rng(2)
    X, _ = _draw(6000, rng)
    public, _ = _draw(90, rng)
    test, _ = _draw(3000, rng)
    gmm = PublicPrivateGMM(rho=0.5, random_state=0).fit(X, X_public=public)
    assert gmm.n_components_ == 3  # by BIC on the public rows
    reference = GaussianMixture(3, random_state=0).fit(X).score(test)
    assert gmm.score(test) > reference - 0.1
    np.testing.assert_allclose(np.sort(gmm.weights_), [1 / 3] * 3, atol=0.03)


def test_precisions_cholesky_follow_scikit_learn():
    rng = np.random.default_rng(3)
    X, _ = _draw(4000, rng)
    public, _ = _draw(60, rng)
    gmm = PublicPrivateGMM(3, rho=1.0, random_state=0).fit(X, X_public=public)
    ref = GaussianMixture(3, covariance_type="full")
    ref.weights_, ref.means_ = gmm.weights_, gmm.means_
    ref.covariances_ = gmm.covariances_
    ref.precisions_cholesky_ = gmm.precisions_cholesky_
    test, _ = _draw(200, rng)
    np.testing.assert_allclose(gmm.score_samples(test), ref.score_samples(test))
    np.testing.assert_allclose(gmm.predict_proba(test), ref.predict_proba(test))
    for U, P in zip(gmm.precisions_cholesky_, gmm.precisions_, strict=True):
        np.testing.assert_allclose(np.triu(U), U)
        np.testing.assert_allclose(U @ U.T, P, rtol=1e-8, atol=1e-10)
    Xs, ys = gmm.sample(500, random_state=0)
    assert Xs.shape == (500, 3)
    assert ys.shape == (500,)
    assert gmm.bic(test) > gmm.aic(test) - 1e9  # both finite
    assert np.isfinite(gmm.bic(test))


def test_overlapping_components_are_reported():
    rng = np.random.default_rng(4)
    close = np.array([[0.0, 0.0, 0.0], [1.5, 0.0, 0.0]])
    X, _ = _draw(5000, rng, close)
    public, _ = _draw(60, rng, close)
    with pytest.warns(SeparationWarning, match="sds"):
        PublicPrivateGMM(2, rho=0.5, random_state=0).fit(X, X_public=public)
    budget = PrivacyBudget(rho=1.0)
    gmm = PublicPrivateGMM(
        2, rho=0.5, budget=budget, on_separation_failure="raise", random_state=0
    )
    with pytest.raises(SeparationError, match="spent"):
        gmm.fit(X, X_public=public)
    assert budget.spent().rho == pytest.approx(0.5)  # released, then checked
    assert not hasattr(gmm, "means_")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeparationWarning)
        PublicPrivateGMM(
            2, rho=0.5, on_separation_failure="ignore", random_state=0
        ).fit(X, X_public=public)


@pytest.mark.parametrize(
    ("params", "public", "match"),
    [
        ({"n_components": 3}, None, "needs public rows"),
        ({"n_components": 5}, np.ones((4, 3)), "only 4 rows"),
        ({"n_components": 2}, np.full((4, 3), np.nan), "NaN"),
        ({"n_components": 2}, np.ones((4, 2)), "2 features but X has 3"),
    ],
)
def test_bad_requests_are_refused_before_any_spend(params, public, match):
    X = np.random.default_rng(0).normal(size=(500, 3))
    budget = PrivacyBudget(rho=1.0)
    gmm = PublicPrivateGMM(rho=0.5, budget=budget, **params)
    with pytest.raises(ValueError, match=match):
        gmm.fit(X, X_public=public)
    assert budget.ledger() == []


def test_one_component_without_public_rows_is_a_gaussian():
    rng = np.random.default_rng(5)
    X = rng.normal(100.0, 2.0, size=(4000, 2))
    budget = PrivacyBudget(rho=1.0)
    gmm = PublicPrivateGMM(rho=0.5, budget=budget, random_state=0).fit(X)
    assert gmm.regime_ == "single"
    assert gmm.weights_.tolist() == [1.0]
    assert gmm.components_[0].privacy_spent_.rho == pytest.approx(0.5)
    np.testing.assert_allclose(gmm.means_[0], 100.0, atol=0.2)


def test_routed_through_a_pipeline_cloned_and_pickled():
    rng = np.random.default_rng(6)
    X, _ = _draw(4000, rng)
    public, _ = _draw(60, rng)
    with sklearn.config_context(enable_metadata_routing=True):
        step = PublicPrivateGMM(3, rho=1.0, random_state=0)
        pipe = make_pipeline(step.set_fit_request(X_public=True))
        pipe.fit(X, X_public=public)
    gmm = pipe[-1]
    assert gmm.n_components_ == 3
    again = pickle.loads(pickle.dumps(gmm))
    np.testing.assert_array_equal(again.means_, gmm.means_)
    fresh = clone(gmm)
    assert not hasattr(fresh, "means_")
    assert "_public" not in vars(fresh)


def test_no_post_spend_crash_from_one_far_row_with_huge_public_spread():
    # Public spread near 1e307 must not make the standardising scale inf: a
    # private row at -1.7e308 would then become NaN and GaussianMixture.predict
    # raise after the spend (on one neighbour only: a privacy break).
    public = 3e307 + np.array([[1e300], [-1e300]] * 2)
    X = np.random.default_rng(0).standard_normal((200, 1))
    for far in (0.0, -1.7e308):
        X[0, 0] = far
        budget = PrivacyBudget(rho=10.0)
        gmm = PublicPrivateGMM(
            n_components=2,
            regime="public",
            rho=1.0,
            budget=budget,
            on_separation_failure="ignore",
            random_state=0,
            on_useless="warn",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gmm.fit(X, X_public=public)
        assert gmm.n_components_ == 2


def test_pure_pricing_without_the_rows_covers_the_fit_in_a_zcdp_budget():
    # Pure releases composed in a zCDP budget add epsilon_i^2 / 2 each, so
    # the split matters; without the public rows the regime is unknown and
    # the pricing takes the plan with the fewest, largest releases.
    from dpgauss.accounting._composition import compose

    rng = np.random.default_rng(4)
    X, _ = _draw(3000, rng)
    public, _ = _draw(90, rng)
    for k in (3, "auto"):
        gmm = PublicPrivateGMM(k, epsilon=1.0, random_state=0)
        priced = compose(ZCDP(1.0), gmm.planned_costs(3, n_public=90)).rho
        budget = PrivacyBudget(rho=10.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gmm.set_params(budget=budget).fit(X, X_public=public)
        assert gmm.regime_ == "public"
        assert priced >= budget.spent().rho - 1e-12


def test_a_mixture_whose_components_are_predicted_useless_refuses_before_the_spend():
    # Wine-like sizes: 126 private rows, 13 features, 3 components of about
    # 42 rows each: every component fit is predicted to go astray, and the
    # mixture fitted on the 18 public rows alone (free) is predicted better.
    # Before, the fit spent and returned held-out log-likelihoods near -1e12
    # per row. The refusal reads public values only.
    rng = np.random.default_rng(0)
    X, public = rng.normal(size=(126, 13)), rng.normal(size=(18, 13))
    budget = PrivacyBudget(rho=1.0)
    gmm = PublicPrivateGMM(3, rho=0.5, budget=budget, random_state=0, fallback="refuse")
    with pytest.raises(UselessFitError, match="public rows alone"):
        gmm.fit(X, X_public=public)
    with pytest.raises(UselessFitError, match="public rows alone"):
        gmm.fit(np.zeros_like(X), X_public=public)
    assert budget.ledger() == []
    assert not hasattr(gmm, "weights_")


def test_a_mixture_predicted_useless_returns_the_public_rows_own_fit_for_free():
    # The same wine-like sizes under the default fallback="public": the fit
    # warns, spends nothing and returns the public rows' own mixture, which
    # reads no private row (the same answer for any X, checked with two
    # different X). Held-out rows from the public rows' distribution score
    # finitely: the covariance floor keeps the 6-row components invertible.
    rng = np.random.default_rng(0)
    X, public = rng.normal(size=(126, 13)), rng.normal(size=(18, 13))
    budget = PrivacyBudget(rho=1.0)
    gmm = PublicPrivateGMM(3, rho=0.5, budget=budget, random_state=0)
    with pytest.warns(UtilityWarning, match="nothing was spent"):
        gmm.fit(X, X_public=public)
    assert budget.ledger() == []
    assert gmm.regime_ == "public_only"
    assert gmm.privacy_spent_.rho == 0.0
    assert gmm.n_features_in_ == 13
    first = gmm.means_.copy()
    with pytest.warns(UtilityWarning, match="nothing was spent"):
        gmm.fit(1e12 * np.ones_like(X), X_public=public)
    np.testing.assert_array_equal(gmm.means_, first)
    np.testing.assert_allclose(gmm.weights_.sum(), 1.0)
    score = gmm.score(rng.normal(size=(200, 13)))
    assert np.isfinite(score)
    # on_useless="warn" still opts into the spend.
    gmm.set_params(on_useless="warn")
    with pytest.warns(UtilityWarning):
        gmm.fit(X, X_public=public)
    assert gmm.regime_ == "projected"
    assert budget.ledger() != []
