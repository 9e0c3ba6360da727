"""PrivateLinearDiscriminantAnalysis and PrivateQuadraticDiscriminantAnalysis."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.discriminant_analysis import (
    LinearDiscriminantAnalysis,
    QuadraticDiscriminantAnalysis,
)
from sklearn.model_selection import cross_val_score

from dpgauss.accounting import ZCDP, PrivacyBudget, PureDP
from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)
from dpgauss.exceptions import BudgetExceededError, PrivacyLeakWarning, UtilityWarning
from dpgauss.releases._classes import RADIUS_GRID
from dpgauss.releases._groups import (
    labelled_moment_mechanism,
    labelled_statistics,
    labelled_sum_mechanism,
)

MODELS = [PrivateLinearDiscriminantAnalysis, PrivateQuadraticDiscriminantAnalysis]


def _three_gaussians(n_per_class=2000, d=5, seed=0, scales=(1.0, 1.0, 1.0)):
    rng = np.random.default_rng(seed)
    centers = np.array(
        [
            [-2.0] + [0.0] * (d - 1),
            [2.0] + [0.0] * (d - 1),
            [0.0, 2.0] + [0.0] * (d - 2),
        ]
    )
    X = np.vstack(
        [
            rng.normal(c, s, (n_per_class, d))
            for c, s in zip(centers, scales, strict=True)
        ]
    )
    y = np.repeat([0, 1, 2], n_per_class)
    return X, y


@pytest.mark.parametrize("cls", MODELS)
def test_string_and_multiclass_labels(cls):
    X, y = _three_gaussians(500)
    labels = np.array(["cat", "dog", "emu"])[y]
    clf = cls(classes=["emu", "cat", "dog"], data_norm=10.0, rho=1.0, random_state=0)
    clf.fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, ["cat", "dog", "emu"])
    assert set(clf.predict(X)) <= {"cat", "dog", "emu"}
    assert clf.predict_proba(X).shape == (1500, 3)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    np.testing.assert_allclose(
        np.exp(clf.predict_log_proba(X[:5])), clf.predict_proba(X[:5])
    )
    assert np.mean(clf.predict(X) == labels) > 0.85  # Bayes: about 0.9


@pytest.mark.parametrize(
    ("cls", "ref", "scales"),
    [
        (
            PrivateLinearDiscriminantAnalysis,
            LinearDiscriminantAnalysis,
            (1.0, 1.0, 1.0),
        ),
        (
            PrivateQuadraticDiscriminantAnalysis,
            QuadraticDiscriminantAnalysis,
            (0.5, 1.0, 2.0),
        ),
    ],
)
def test_accuracy_near_sklearn(cls, ref, scales):
    # 6,000 rows, d = 5, rho = 1: the class means' noise is about 2B/(n sqrt(2 rho'))
    # * n/n_k ~ 0.02 per coordinate against class distances of 2.8 to 4, so the
    # private boundary is within a few hundredths of the exact one: accuracy on
    # fresh rows within 0.02 of scikit-learn's (the sd of an accuracy on 6,000
    # test rows is 0.004).
    X, y = _three_gaussians(2000, scales=scales)
    Xt, yt = _three_gaussians(2000, seed=1, scales=scales)
    private = cls(classes=[0, 1, 2], data_norm=20.0, rho=1.0, random_state=0).fit(X, y)
    exact = ref().fit(X, y)
    assert private.score(Xt, yt) >= exact.score(Xt, yt) - 0.02
    np.testing.assert_allclose(private.means_, exact.means_, atol=0.15)
    np.testing.assert_allclose(private.priors_, [1 / 3] * 3, atol=0.01)


@pytest.mark.parametrize("cls", MODELS)
@pytest.mark.parametrize("clipping", ["adaptive", "fixed"])
@pytest.mark.parametrize("privacy", [{"rho": 0.7}, {"epsilon": 1.3}])
def test_ledger_equals_plan(cls, clipping, privacy):
    X, y = _three_gaussians(300)
    budget = PrivacyBudget(rho=100.0)
    clf = cls(
        classes=[0, 1, 2],
        data_norm=10.0,
        clipping=clipping,
        covariance_type="full",
        budget=budget,
        random_state=0,
        **privacy,
    )
    clf.fit(X, y)
    events = budget.ledger()
    names = [e.mechanism.split(":")[1] for e in events]
    moments = (
        "second_moment"
        if cls is PrivateLinearDiscriminantAnalysis
        else "class_second_moments"
    )
    expected = ["class_counts", "class_sums", moments]
    shares = list(cls._SHARES["full"])
    if clipping == "adaptive":
        expected = ["center", "radius", *expected]
        shares = [0.05, 0.05, *(0.9 * s for s in shares)]
    assert names == expected
    assert [e.cost for e in events] == clf.planned_costs(5)
    total = ZCDP(0.7) if "rho" in privacy else PureDP(1.3)
    assert clf.privacy_spent_ == total
    value = 0.7 if "rho" in privacy else 1.3
    for event, share in zip(events, shares, strict=True):
        cost = event.cost
        got = cost.rho if isinstance(cost, ZCDP) else cost.epsilon
        if "rho" in privacy and isinstance(cost, PureDP):  # the radius: eps^2/2
            got = cost.epsilon**2 / 2
        assert math.isclose(got, value * share, rel_tol=1e-9)


@pytest.mark.parametrize("cls", MODELS)
def test_bad_input_is_refused_before_any_spend(cls):
    X, y = _three_gaussians(100)
    budget = PrivacyBudget(rho=10.0)
    good = {"classes": [0, 1, 2], "data_norm": 10.0, "rho": 1.0, "budget": budget}
    cases = [
        (dict(good), X, np.where(y == 2, 7, y), "not in classes"),
        (dict(good), X, y + 0.5, "continuous"),
        (dict(good), X, np.where(y == 2, np.nan, y), "NaN"),
        (dict(good), X, None, "requires y"),
        (dict(good), X, y[:-1], "inconsistent"),
        ({**good, "classes": None}, X, y, "classes is required"),
        ({**good, "classes": [0, 0, 1]}, X, y, "repeated"),
        ({**good, "classes": [0]}, X, y, "at least two"),
        ({**good, "data_norm": None}, X, y, "data_norm is required"),
        ({**good, "priors": [0.5, 0.5]}, X, y, "one value per class"),
        ({**good, "priors": [0.5, 0.5, -1]}, X, y, "positive"),
        ({**good, "location": [0.0, 1.0]}, X, y, "location"),
        (dict(good), np.where(X > 3, np.inf, X), y, "infinity"),
    ]
    for params, data, labels, message in cases:
        before = data.copy()
        with pytest.raises(ValueError, match=message):
            cls(**params).fit(data, labels)
        np.testing.assert_array_equal(data, before)
    assert budget.ledger() == []


@pytest.mark.parametrize("cls", MODELS)
def test_exhausted_budget_is_refused_before_reading(cls):
    X, y = _three_gaussians(100)
    budget = PrivacyBudget(rho=0.5)
    with pytest.raises(BudgetExceededError):
        cls(classes=[0, 1, 2], data_norm=10.0, rho=1.0, budget=budget).fit(X, y)
    assert budget.ledger() == []


@pytest.mark.parametrize("cls", MODELS)
@pytest.mark.parametrize("clipping", ["adaptive", "fixed"])
def test_extreme_rows_and_tiny_budgets_complete(cls, clipping):
    X, y = _three_gaussians(50)
    X[0] = 1e12
    X[1] = -np.finfo(float).max
    X[2, 0] = np.finfo(float).max
    X[:, 3] = 7.0  # a constant column
    for privacy in ({"rho": 1e-8}, {"epsilon": 1e-4}, {"rho": 1e6}):
        clf = cls(
            classes=[0, 1, 2],
            data_norm=3.0,
            clipping=clipping,
            random_state=1,
            on_useless="warn",
            **privacy,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            # (a UtilityWarning reads released values only: allowed)
            warnings.simplefilter("ignore", UtilityWarning)
            clf.fit(X, y)  # no warning may depend on the rows after the charge
        assert np.all(np.isfinite(clf.predict_proba(X[3:])))
        assert np.all(np.isfinite(clf.means_))
        covs = clf.covariance_[None] if clf.covariance_.ndim == 2 else clf.covariance_
        for cov in covs:
            assert np.all(np.linalg.eigvalsh(cov) > 0)
        assert np.all(clf.class_count_ >= 1)


@pytest.mark.parametrize("cls", MODELS)
def test_decision_proba_consistency(cls):
    X, y = _three_gaussians(500)
    keep = y < 2
    clf = cls(classes=[0, 1], data_norm=10.0, rho=1.0, random_state=0).fit(
        X[keep], y[keep]
    )
    decision = clf.decision_function(X)
    assert decision.shape == (1500,)
    p1 = clf.predict_proba(X)[:, 1]
    np.testing.assert_allclose(p1, 1 / (1 + np.exp(-decision)), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), np.where(decision > 0, 1, 0))


@pytest.mark.parametrize("cls", MODELS)
def test_absent_class_is_rarely_predicted(cls):
    # Class 2 has no rows: its released count is noise around 0, floored at
    # max(1, noise sd), so its prior is about 1/n and its mean noise. Rows of
    # the two real classes are assigned to it rarely.
    X, y = _three_gaussians(2000)
    keep = y < 2
    clf = cls(classes=[0, 1, 2], data_norm=10.0, rho=1.0, random_state=0).fit(
        X[keep], y[keep]
    )
    assert clf.priors_[2] < 0.01
    assert np.mean(clf.predict(X[keep]) == 2) < 0.02


@pytest.mark.parametrize("cls", MODELS)
def test_public_priors_are_used(cls):
    X, y = _three_gaussians(300)
    clf = cls(
        classes=[0, 1, 2], data_norm=10.0, priors=[1, 1, 2], rho=1.0, random_state=0
    ).fit(X, y)
    np.testing.assert_allclose(clf.priors_, [0.25, 0.25, 0.5])


@pytest.mark.parametrize("cls", MODELS)
def test_score_warns_inside_a_search(cls):
    X, y = _three_gaussians(100)
    clf = cls(classes=[0, 1, 2], data_norm=10.0, rho=1.0, random_state=0)
    with pytest.warns(PrivacyLeakWarning):
        cross_val_score(clf, X, y, cv=2)


@pytest.mark.parametrize("cls", MODELS)
def test_clones_on_one_budget_draw_new_noise(cls):
    X, y = _three_gaussians(200)
    budget = PrivacyBudget(rho=10.0)
    clf = cls(classes=[0, 1, 2], data_norm=10.0, rho=1.0, budget=budget, random_state=0)
    a = clone(clf).fit(X, y).means_
    b = clone(clf).fit(X, y).means_
    assert not np.array_equal(a, b)


# -- sensitivities -------------------------------------------------------------


def _neighbour_cases(rng, n=12, d=3, K=3, radius=2.0):
    X = rng.normal(size=(n, d))
    codes = rng.integers(0, K, n)
    for scale in (1.0, 1e12, 1e300):
        for same in (True, False):
            Y, other = X.copy(), codes.copy()
            Y[0] = scale * rng.normal(size=d)
            X2 = X.copy()
            X2[0] = -scale * rng.normal(size=d)
            if not same:
                other[0] = (codes[0] + 1) % K
            yield X2, codes, Y, other


def test_class_statistics_move_by_at_most_the_sensitivities():
    # Replacing one row (features and class) moves the counts by <= sqrt(2),
    # the class sums by <= 2B (l2) and 2 sqrt(d) B (l1), the pooled and the
    # per-class second moments by <= sqrt(2) B^2 (Frobenius), unnormalised.
    rng = np.random.default_rng(3)
    B, K, d = 2.0, 3, 3
    for _ in range(20):
        for X, a, Y, b in _neighbour_cases(rng, radius=B):
            c = np.zeros(d)
            n1, s1, m1 = labelled_statistics(X, a, K, c, B, "per_class")
            n2, s2, m2 = labelled_statistics(Y, b, K, c, B, "per_class")
            _, _, p1 = labelled_statistics(X, a, K, c, B, "pooled")
            _, _, p2 = labelled_statistics(Y, b, K, c, B, "pooled")
            slack = 1e-12
            assert np.linalg.norm(n1 - n2) <= math.sqrt(2) + slack
            assert np.linalg.norm(s1 - s2) <= 2 * B * (1 + slack)
            assert np.abs(s1 - s2).sum() <= 2 * math.sqrt(d) * B * (1 + slack)
            assert np.linalg.norm(m1 - m2) <= math.sqrt(2) * B * B * (1 + slack)
            assert np.linalg.norm(p1 - p2) <= math.sqrt(2) * B * B * (1 + slack)
            upper = np.triu_indices(d)
            l1 = sum(np.abs(m1[k][upper] - m2[k][upper]).sum() for k in range(K))
            assert l1 <= (d + 1) * B * B * (1 + slack)


def test_mechanisms_are_calibrated_to_the_formulas():
    n, d, K, B = 1000, 4, 3, 2.0
    gauss = labelled_sum_mechanism(ZCDP(1.0), n, d, K, B)
    assert 2 * B / n <= gauss.sensitivity <= 2 * B / n * (1 + 1e-9)
    lap = labelled_sum_mechanism(PureDP(1.0), n, d, K, B)
    assert (
        2 * math.sqrt(d) * B / n
        <= lap.sensitivity
        <= 2 * math.sqrt(d) * B / n * (1 + 1e-9)
    )
    sym = labelled_moment_mechanism(ZCDP(1.0), n, d, K, B)
    assert (
        math.sqrt(2) * B * B / n
        <= sym.sensitivity
        <= math.sqrt(2) * B * B / n * (1 + 1e-9)
    )
    sym = labelled_moment_mechanism(PureDP(1.0), n, d, K, B)
    assert (d + 1) * B * B / n <= sym.sensitivity <= (d + 1) * B * B / n * (1 + 1e-9)


def test_adaptive_radius_is_a_public_grid_point_at_most_data_norm():
    X, y = _three_gaussians(2000)
    clf = PrivateLinearDiscriminantAnalysis(
        classes=[0, 1, 2], data_norm=100.0, rho=1.0, random_state=0
    ).fit(X, y)
    # The rows' 90% distance to the center is about sqrt(chi2_5(0.9) + spread),
    # near 4, far below the public 100: the class means are then much more
    # precise than with fixed clipping.
    fixed = clone(clf).set_params(clipping="fixed").fit(X, y)
    exact = LinearDiscriminantAnalysis().fit(X, y).means_
    assert np.abs(clf.means_ - exact).max() < np.abs(fixed.means_ - exact).max()
    assert RADIUS_GRID == 4097


@pytest.mark.parametrize("cls", MODELS)
def test_memmap_and_dask_inputs_give_the_same_fit(cls, tmp_path):
    da = pytest.importorskip("dask.array")
    X, y = _three_gaussians(400)
    path = tmp_path / "rows.dat"
    mapped = np.memmap(path, dtype=np.float64, mode="w+", shape=X.shape)
    mapped[:] = X
    mapped.flush()
    mapped = np.memmap(path, dtype=np.float64, mode="r", shape=X.shape)
    params = {"classes": [0, 1, 2], "data_norm": 10.0, "rho": 1.0}
    expected = cls(**params, random_state=0).fit(X, y).means_
    for data in (mapped, da.from_array(X, chunks=300)):
        np.testing.assert_allclose(
            cls(**params, random_state=0).fit(data, y).means_, expected, atol=1e-9
        )


@pytest.mark.parametrize("cls", MODELS)
def test_a_data_norm_far_too_small_warns_from_released_values(cls):
    # Raw breast cancer (row norms around 900) against data_norm 2 sqrt(30):
    # every row is clipped to the sphere in one direction, so the released
    # mean clipped offset lies at the sphere's edge (norm >= 0.9 radius, up to
    # the mean's noise, about 2B/(n sqrt(2 rho')) per coordinate, far smaller).
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    norm = 2 * np.sqrt(30)
    for clipping in ("adaptive", "fixed"):
        clf = cls(classes=[0, 1], data_norm=norm, clipping=clipping, rho=1.0)
        with pytest.warns(UtilityWarning, match="edge of the clipping ball"):
            clf.set_params(random_state=0).fit(X, y)
        assert 0 < clf.clip_radius_ <= norm
    # Standardised, the same bound fits: no warning, and the released radius
    # is near the rows' 90% distance to their mean (7.53).
    Xs = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        clf = cls(classes=[0, 1], data_norm=norm, rho=1.0, random_state=0).fit(Xs, y)
    assert 6.0 < clf.clip_radius_ < 9.0
    assert clf.clip_center_.shape == (30,)


@pytest.mark.parametrize("cls", MODELS)
def test_a_radius_at_data_norm_warns(cls):
    # Distances spread evenly up to twice data_norm, in every direction: the
    # rows' 90% distance is 1.8 data_norm and the count below a candidate grows
    # up to data_norm, so data_norm is the candidate of largest utility, and
    # those within 1/64 of it trail by at most 0.05 * 4000 / 64 ~ 3 rows: the
    # released radius is among them (a candidate 10% lower trails by 200 rows,
    # chosen with probability about exp(-0.32 * 200 / 2) at epsilon' = 0.32).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 2))
    X *= (rng.uniform(0.0, 20.0, 4000) / np.linalg.norm(X, axis=1))[:, None]
    y = np.arange(4000) % 2
    with pytest.warns(UtilityWarning, match="radius of the rows"):
        clf = cls(classes=[0, 1], data_norm=10.0, rho=1.0, random_state=0).fit(X, y)
    assert clf.clip_radius_ >= 10.0 * (1 - 1 / 64)
