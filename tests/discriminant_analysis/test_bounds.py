"""The discriminant analyses with a public box, the diagonal plan and the
refusal before the spend."""

import warnings

import numpy as np
import pytest

from dpgauss.accounting import PrivacyBudget
from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)
from dpgauss.exceptions import UselessFitError, UtilityWarning

MODELS = [PrivateLinearDiscriminantAnalysis, PrivateQuadraticDiscriminantAnalysis]


def _boxed(n=2000, seed=0):
    """Two classes in a box with columns in very different units."""
    rng = np.random.default_rng(seed)
    scales = np.array([1e-3, 1.0, 1e4])
    y = (rng.random(n) < 0.4).astype(int)
    Z = rng.normal(0.0, 0.15, (n, 3)) + np.where(y[:, None] == 1, 0.3, -0.2)
    Z = np.clip(Z, -1.0, 1.0)
    lower, upper = -scales + 5.0, scales + 5.0
    X = 5.0 + Z * scales
    return X, y, (lower, upper)


@pytest.mark.parametrize("cls", MODELS)
def test_bounds_fit_the_box_units_and_map_back(cls):
    # The fit on X with its box and the fit on the box rows with the unit box
    # release the same values (the rows in box units are the same); only the
    # public map back differs.
    X, y, box = _boxed()
    Z = (X - 5.0) / (box[1] - 5.0)
    kw = {"classes": [0, 1], "epsilon": 2.0, "random_state": 3}
    raw = cls(bounds=box, **kw).fit(X, y)
    unit = cls(bounds=(-1.0, 1.0), **kw).fit(Z, y)
    half = box[1] - 5.0
    np.testing.assert_allclose(raw.means_, 5.0 + half * unit.means_, rtol=1e-12)
    np.testing.assert_array_equal(raw.predict(X), unit.predict(Z))
    np.testing.assert_allclose(
        raw.predict_proba(X), unit.predict_proba(Z), rtol=1e-9, atol=1e-12
    )
    covs = raw.covariance_ if raw.covariance_.ndim == 3 else raw.covariance_[None]
    for cov in covs:  # variances capped by the box: at most h^2
        assert np.all(np.diag(cov) <= half**2 * (1 + 1e-12))
    assert np.mean(raw.predict(X) == y) > 0.9


@pytest.mark.parametrize("cls", MODELS)
def test_means_stay_in_the_box_for_every_draw(cls):
    X, y, box = _boxed(300)
    for seed in range(5):
        clf = cls(
            classes=[0, 1],
            bounds=box,
            epsilon=1e-3,
            random_state=seed,
            on_useless="warn",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            clf.fit(X, y)
        assert np.all(clf.means_ >= box[0])
        assert np.all(clf.means_ <= box[1])
        assert np.all(np.isfinite(clf.predict_proba(X)))


@pytest.mark.parametrize("cls", MODELS)
def test_rows_far_outside_the_box_are_clipped_to_it(cls):
    X, y, box = _boxed(500)
    X[0] = 1e12
    X[1] = -np.finfo(float).max
    clf = cls(classes=[0, 1], bounds=box, rho=1.0, random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.means_))
    assert np.all(np.isfinite(clf.predict_proba(X[2:])))


@pytest.mark.parametrize("cls", MODELS)
def test_exactly_one_of_data_norm_and_bounds(cls):
    X, y, box = _boxed(100)
    with pytest.raises(ValueError, match="not both"):
        cls(classes=[0, 1], bounds=box, data_norm=1.0, rho=1.0).fit(X, y)
    with pytest.raises(ValueError, match="not both"):
        cls(classes=[0, 1], bounds=box, location=0.0, rho=1.0).fit(X, y)
    with pytest.raises(ValueError, match="data_norm"):
        cls(classes=[0, 1], rho=1.0).fit(X, y)
    with pytest.raises(ValueError, match="lower < upper"):
        cls(classes=[0, 1], bounds=(1.0, 0.0), rho=1.0).fit(X, y)


def _names(clf, n, d):
    return [r.name for r in clf._pricing_plan(d, n_samples=n).releases()]


@pytest.mark.parametrize("cls", MODELS)
def test_pure_dp_at_small_n_takes_the_diagonal_plan(cls):
    # Under Laplace the squares' d entries carry (d + 1) / 2 times less noise
    # each than the second moment's upper triangle: the diagonal plan is
    # predicted better; with rho and many rows the full one is.
    small = cls(classes=[0, 1], bounds=(-1.0, 1.0), epsilon=1.0)
    assert _names(small, 300, 10)[-1] == "pooled_squares"
    large = cls(classes=[0, 1], bounds=(-1.0, 1.0), rho=0.5)
    assert _names(large, 100_000, 10)[-1] != "pooled_squares"
    forced = cls(classes=[0, 1], bounds=(-1.0, 1.0), rho=0.5, covariance_type="diag")
    assert _names(forced, 100_000, 10)[-1] == "pooled_squares"


@pytest.mark.parametrize("cls", MODELS)
def test_the_diagonal_plan_fits_a_diagonal_covariance(cls):
    X, y, box = _boxed()
    budget = PrivacyBudget(epsilon=1.0)
    clf = cls(
        classes=[0, 1],
        bounds=box,
        epsilon=1.0,
        covariance_type="diag",
        budget=budget,
        random_state=0,
    ).fit(X, y)
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    # With a box under pure DP the box fixes the frame: no center or radius.
    assert names == ["class_counts", "class_sums", "pooled_squares"]
    covs = clf.covariance_ if clf.covariance_.ndim == 3 else clf.covariance_[None]
    for cov in covs:
        np.testing.assert_array_equal(cov, np.diag(np.diag(cov)))
        assert np.all(np.diag(cov) > 0)
    assert np.mean(clf.predict(X) == y) > 0.9


@pytest.mark.parametrize("cls", MODELS)
def test_a_fit_predicted_below_the_majority_class_refuses_before_the_spend(cls):
    X, y, box = _boxed(150)
    X = np.hstack([X] * 10)  # d = 30
    box = (np.tile(box[0], 10), np.tile(box[1], 10))
    budget = PrivacyBudget(epsilon=1.0)
    clf = cls(classes=[0, 1], bounds=box, epsilon=0.5, budget=budget)
    with pytest.raises(UselessFitError, match="majority class"):
        clf.fit(X, y)
    assert budget.ledger() == []
    clf.set_params(on_useless="warn")
    with pytest.warns(UtilityWarning, match="majority class"):
        clf.fit(X, y)
    assert len(budget.ledger()) > 0


@pytest.mark.parametrize("cls", MODELS)
def test_the_refusal_names_the_bound_the_user_gave(cls):
    # With a box the advice is tighter bounds, never data_norm (which a box
    # excludes); with data_norm it is data_norm, never bounds. Reads public
    # values only: the same message for any rows.
    X, y, box = _boxed(150)
    X = np.hstack([X] * 10)  # d = 30
    box = (np.tile(box[0], 10), np.tile(box[1], 10))
    with pytest.raises(UselessFitError) as boxed:
        cls(classes=[0, 1], bounds=box, epsilon=0.5).fit(X, y)
    assert "tighter bounds" in str(boxed.value)
    assert "data_norm" not in str(boxed.value)
    with pytest.raises(UselessFitError) as normed:
        cls(classes=[0, 1], data_norm=1e4, epsilon=0.5).fit(X - 5.0, y)
    assert "tighter data_norm" in str(normed.value)
    assert "bounds" not in str(normed.value)
    full = cls(classes=[0, 1], bounds=box, epsilon=0.5, covariance_type="full")
    with pytest.raises(UselessFitError, match="covariance_type='diag' or 'auto'"):
        full.fit(X, y)


@pytest.mark.parametrize("cls", MODELS)
def test_rows_beyond_the_box_warn_about_bounds_not_data_norm(cls):
    # Rows 50 box widths out, in one direction (all at one corner in box
    # units: with fixed clipping, the released mean offset lies at the ball's
    # edge) or in random directions (every row at some corner: the released
    # 90% radius is the box's half-diagonal). The warnings name the box.
    rng = np.random.default_rng(0)
    one_way = rng.normal(50.0, 1.0, (3000, 3))
    corners = 50.0 * rng.choice([-1.0, 1.0], (3000, 3))
    y = np.arange(3000) % 2
    cases = [
        (one_way, "fixed", "Check bounds (the box)"),
        (corners, "adaptive", "box's corners, most of them beyond bounds"),
    ]
    for X, clipping, expected in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cls(
                classes=[0, 1],
                bounds=(-1.0, 1.0),
                clipping=clipping,
                rho=1.0,
                random_state=0,
            ).fit(X, y)
        texts = [str(w.message) for w in caught if w.category is UtilityWarning]
        assert all("data_norm" not in t for t in texts)
        assert any(expected in t for t in texts), texts


@pytest.mark.parametrize("cls", MODELS)
def test_means_within_their_noise_warn_that_the_priors_decide(cls):
    # Three classes independent of 13 uniform columns, 134 rows at epsilon 1
    # (wine's shape): the shrinkage pulls every released class mean to their
    # average (in 8 of seeds 0-9) and the classifier predicts the majority
    # class of the released counts, which the fit says (from released
    # values). Well-separated classes at a large budget keep their means and
    # do not warn.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (134, 13))
    y = rng.integers(0, 3, 134)
    clf = cls(classes=[0, 1, 2], bounds=(-1.0, 1.0), epsilon=1.0, on_useless="warn")
    with pytest.warns(UtilityWarning, match="predicts by the priors alone"):
        clf.set_params(random_state=0).fit(X, y)
    assert np.all(clf.predict(X) == clf.classes_[np.argmax(clf.priors_)])
    X, y, box = _boxed(2000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        cls(classes=[0, 1], bounds=box, rho=1.0, random_state=0).fit(X, y)


def _separated(n, d=20, seed=0):
    """Two classes in [-1, 1]^d, 0.2 box units apart per coordinate, each of
    within-class sd 0.15 (Mahalanobis separation 0.2 sqrt(d) / 0.15, 6 at d =
    20), 60% in the larger: a small real table's shape (breast cancer)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    Z = rng.normal(-0.5, 0.15, (n, d)) + 0.2 * y[:, None]
    return np.clip(Z, -1.0, 1.0), y


@pytest.mark.parametrize("cls", MODELS)
def test_pure_dp_with_a_box_spends_nothing_on_the_frame(cls):
    Z, y = _separated(400)
    budget = PrivacyBudget(epsilon=2.0)
    kw = {"classes": [0, 1], "bounds": (-1.0, 1.0), "random_state": 0}
    cls(epsilon=2.0, budget=budget, **kw).fit(Z, y)
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert "center" not in names
    assert "radius" not in names
    # Under zCDP the search stays (its Gaussian noise is l2-calibrated).
    budget = PrivacyBudget(rho=0.5)
    cls(rho=0.5, budget=budget, **kw).fit(Z, y)
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    assert names[:2] == ["center", "radius"]


@pytest.mark.parametrize("cls", MODELS)
def test_pure_dp_with_a_box_beats_the_majority_class_at_small_n(cls):
    # n = 400, d = 20, epsilon 2: each class mean's Laplace noise has sd about
    # 2 sqrt(2) d / (0.54 epsilon n_k) ~ 0.3-0.4 box units per coordinate,
    # above the 0.2 separation per coordinate: the noise correction and the
    # signal test decide. The majority class errs on 40% of the rows; the
    # median over 9 seeds must be well below it.
    Zt, yt = _separated(4000, seed=99)
    errors = []
    for seed in range(9):
        Z, y = _separated(400, seed=seed)
        clf = cls(
            classes=[0, 1],
            bounds=(-1.0, 1.0),
            epsilon=2.0,
            random_state=seed,
            on_useless="warn",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UtilityWarning)
            clf.fit(Z, y)
        errors.append(np.mean(clf.predict(Zt) != yt))
    assert np.median(errors) < 0.25
    assert max(errors) <= 0.61  # at worst the minority class (released counts)


@pytest.mark.parametrize("cls", MODELS)
def test_means_without_signal_fall_back_on_the_priors_with_a_warning(cls):
    rng = np.random.default_rng(5)
    Z = rng.uniform(-1.0, 1.0, (300, 10))
    y = (rng.random(300) < 0.3).astype(int)  # labels independent of the rows
    fell_back = 0
    for seed in range(6):
        clf = cls(
            classes=[0, 1],
            bounds=(-1.0, 1.0),
            epsilon=1.0,
            random_state=seed,
            on_useless="warn",
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.fit(Z, y)
        pred = clf.predict(Z)
        if np.all(pred == pred[0]):
            fell_back += 1
            assert any("priors alone" in str(w.message) for w in caught)
        assert np.all(np.isfinite(clf.predict_proba(Z)))
    # The signal test passes pure noise with probability about 1/2 (a score
    # of mean 0); the James-Stein shrinkage then pulls most of it to the
    # average. At least one of six seeds falls back (all six pass with
    # probability about 1/64).
    assert fell_back >= 1


def _three_class_mixture(n, seed):
    """The benchmark's mixture (priors 0.6/0.3/0.1, d=4, well separated) in
    box units: n training rows and 1,000 test rows."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0], [4, 0, 2, 0], [0, 5, 0, -3]], float)
    y = rng.choice(3, size=n + 1000, p=[0.6, 0.3, 0.1])
    X = centers[y] + rng.standard_normal((n + 1000, 4)) * [1.0, 1.5, 0.7, 1.0]
    lower, upper = np.array([-4.0, -5.0, -3.0, -7.0]), np.array([8.0, 10.0, 5.0, 4.0])
    Z = np.clip((X - (lower + upper) / 2) / ((upper - lower) / 2), -1.0, 1.0)
    return Z[:n], y[:n], Z[n:], y[n:]


@pytest.mark.parametrize("cls", MODELS)
def test_no_silent_fit_below_the_majority_class_on_the_mixture(cls):
    # At n = 150 and epsilon 0.5 the counts' noise sd (57 rows) is above the
    # third class's 15 rows: the released priors and means are mostly noise,
    # and fits land above the majority class's error rate. Each such fit
    # warns, from released values (a count within COUNT_Z noise sds of zero,
    # or the priors-only fallback); before the faint-count warning, seeds
    # 0-11 here gave unwarned fits worse than the majority class.
    Z, y, Zt, yt = _three_class_mixture(150, 0)
    majority = np.mean(yt != np.bincount(y).argmax())
    worse = 0
    for seed in range(12):
        clf = cls(
            classes=[0, 1, 2],
            bounds=(-np.ones(4), np.ones(4)),
            epsilon=0.5,
            random_state=seed,
            on_useless="warn",
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.fit(Z, y)
        texts = [str(w.message) for w in caught if w.category is UtilityWarning]
        if np.mean(clf.predict(Zt) != yt) > majority:
            worse += 1
            assert texts, seed
    assert worse > 0  # the case is a real one at these seeds


@pytest.mark.parametrize("cls", MODELS)
def test_counts_clear_of_their_noise_do_not_warn(cls):
    # n = 3,000 at epsilon 4: the counts' noise sd is about 14 rows (5-10% of
    # the budget) against 300 rows in the smallest class.
    Z, y, Zt, yt = _three_class_mixture(3000, 1)
    clf = cls(
        classes=[0, 1, 2], bounds=(-np.ones(4), np.ones(4)), epsilon=4.0, random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(Z, y)
    assert not [w for w in caught if "noise sds" in str(w.message)]
    assert np.mean(clf.predict(Zt) != yt) < 0.1
