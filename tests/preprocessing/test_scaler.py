"""PrivateStandardScaler: accounting, sensitivity, accuracy and the sklearn API."""

import math
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import (
    check_global_output_transform_pandas,
    check_pipeline_consistency,
    check_set_output_transform,
    check_set_output_transform_pandas,
    check_transformer_data_not_an_array,
    check_transformer_general,
)

from dpgauss import PrivacyBudget, PrivateStandardScaler
from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp
from dpgauss.exceptions import UtilityWarning
from dpgauss.preprocessing._scaler import (
    MIN_BOX_VARIANCE,
    box_frame,
    check_bounds,
    moment_mechanism,
)
from dpgauss.releases._box import box_offsets
from dpgauss.releases._moments import (
    box_moments,
    moments_mechanism,
    moments_sensitivities,
)
from dpgauss.utils._sums import CHUNK_ROWS, summation_error


def _rows(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal([1.0, -2.0, 5.0][:d], [1.0, 0.5, 2.0][:d], size=(n, d))


BOUNDS = ([-4.0, -5.0, -5.0], [6.0, 1.0, 15.0])


# -- accounting -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("privacy", "total"),
    [
        ({"rho": 0.5}, ZCDP(0.5)),
        ({"epsilon": 1.0}, PureDP(1.0)),
        ({"epsilon": 1.0, "delta": 1e-6}, ZCDP(approx_to_zcdp(1.0, 1e-6))),
    ],
)
@pytest.mark.parametrize(
    ("with_mean", "with_std", "names"),
    [
        (True, True, ["moments"]),
        (False, True, ["moments"]),
        (True, False, ["mean"]),
    ],
)
def test_ledger_matches_the_plan(privacy, total, with_mean, with_std, names):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateStandardScaler(
        BOUNDS,
        with_mean=with_mean,
        with_std=with_std,
        budget=budget,
        random_state=0,
        **privacy,
    )
    planned = est.planned_costs(3)
    est.fit(_rows())
    ledger = budget.ledger()
    assert [e.cost for e in ledger] == planned
    kind = "gaussian" if isinstance(total, ZCDP) else "laplace"
    assert [e.mechanism for e in ledger] == [f"{kind}:{name}" for name in names]
    assert est.privacy_spent_ == total
    if len(names) == 2:  # half each, exactly
        value = total.rho if isinstance(total, ZCDP) else total.epsilon
        assert planned == [type(total)(value / 2), type(total)(value - value / 2)]
    else:
        assert planned == [total]


def test_no_statistic_no_release():
    budget = PrivacyBudget(rho=1.0)
    X = _rows()
    est = PrivateStandardScaler(
        BOUNDS, with_mean=False, with_std=False, rho=0.5, budget=budget
    ).fit(X)
    assert budget.ledger() == []
    assert est.privacy_spent_ == ZCDP(0.0)
    assert est.mean_ is None
    assert est.var_ is None
    assert est.scale_ is None
    np.testing.assert_array_equal(est.transform(X), X)
    np.testing.assert_array_equal(est.inverse_transform(X), X)


def test_transform_is_free_and_leaves_its_input():
    budget = PrivacyBudget(rho=1.0)
    X = _rows()
    est = PrivateStandardScaler(BOUNDS, rho=0.5, budget=budget, random_state=0).fit(X)
    spent = budget.ledger()
    before = X.copy()
    Z = est.transform(X)
    np.testing.assert_allclose(Z, (X - est.mean_) / est.scale_)
    np.testing.assert_allclose(est.inverse_transform(Z), X, rtol=1e-12, atol=1e-12)
    est.fit_transform(X)  # a fit: spends
    assert len(budget.ledger()) == 2 * len(spent)
    est.transform(X), est.inverse_transform(X)
    assert len(budget.ledger()) == 2 * len(spent)
    np.testing.assert_array_equal(X, before)
    only_scale = PrivateStandardScaler(BOUNDS, with_mean=False, rho=0.5).fit(X)
    np.testing.assert_allclose(only_scale.transform(X), X / only_scale.scale_)
    only_mean = PrivateStandardScaler(BOUNDS, with_std=False, rho=0.5).fit(X)
    np.testing.assert_allclose(only_mean.transform(X), X - only_mean.mean_)
    assert only_mean.var_ is None
    assert only_mean.scale_ is None


def test_bad_input_spends_nothing():
    budget = PrivacyBudget(rho=1.0)
    good = _rows(50)
    for value, match in ((np.nan, "NaN"), (np.inf, "infinity"), (-np.inf, "inf")):
        X = good.copy()
        X[3, 1] = value
        before = X.copy()
        with pytest.raises(ValueError, match=match):
            PrivateStandardScaler(BOUNDS, rho=0.5, budget=budget).fit(X)
        np.testing.assert_array_equal(X, before)
    with pytest.raises(ValueError, match="2D"):
        PrivateStandardScaler(BOUNDS, rho=0.5, budget=budget).fit(good[:, 0])
    with pytest.raises(ValueError, match="minimum of 2"):
        PrivateStandardScaler(BOUNDS, rho=0.5, budget=budget).fit(good[:1])
    bad_bounds = {
        "bounds is required": None,
        "pair": (0.0, 1.0, 2.0),
        "lower < upper": (1.0, 1.0),
        "lower < upper ": ([0.0, 2.0, 0.0], [1.0, 1.0, 1.0]),
        "finite": (-np.inf, 1.0),
        "different lengths": ([0.0, 0.0], [1.0, 1.0, 1.0]),
        "X has 3 features": ([0.0, 0.0], [1.0, 1.0]),
        "scalar or a 1-D": (np.zeros((3, 1)), 1.0),
        "half-width": (0.0, 1e-300),
        "numbers": ("a", "b"),
    }
    for match, bounds in bad_bounds.items():
        with pytest.raises(ValueError, match=match.strip()):
            PrivateStandardScaler(bounds, rho=0.5, budget=budget).fit(good)
    with pytest.raises(ValueError, match="no privacy parameter"):
        PrivateStandardScaler(BOUNDS, budget=budget).fit(good)
    with pytest.raises(ValueError, match="cannot be calibrated"):
        PrivateStandardScaler(BOUNDS, rho=1e-300, budget=budget).fit(good)
    assert budget.ledger() == []
    est = PrivateStandardScaler(BOUNDS, rho=0.5, random_state=0).fit(good)
    with pytest.raises(ValueError, match="features"):
        est.transform(good[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        est.transform(np.full((2, 3), np.nan))


def test_bounds_broadcast_and_accept_arrays():
    lower, upper = check_bounds((0, [1.0, 2.0]), n_features=2)
    np.testing.assert_array_equal(lower, [0.0, 0.0])
    np.testing.assert_array_equal(upper, [1.0, 2.0])
    lower, upper = check_bounds(np.array([[0.0, 1.0], [2.0, 3.0]]), n_features=2)
    np.testing.assert_array_equal(lower, [0.0, 1.0])
    np.testing.assert_array_equal(upper, [2.0, 3.0])
    # Halves first: the widest finite box neither overflows nor loses its center.
    center, half = box_frame(np.array([-1.7e308]), np.array([1.7e308]))
    assert center[0] == 0.0
    assert half[0] == 1.7e308


# -- sensitivity ------------------------------------------------------------------
def _sensitivities(n, d, pure=False):
    cost = PureDP(1.0) if pure else ZCDP(1.0)
    return [
        moment_mechanism(cost, n, d, name, n_partials=None).sensitivity
        for name in ("mean", "second_moment")
    ]


#: Where the replacing row's entries go, in box half-widths from the center
#: (1e300 overflows to the largest float's side; 0.5: inside the box).
_far = st.sampled_from([1e12, -1e12, 1e300, -1e300, 0.0, 1e-300, 0.5])


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    d=st.integers(1, 6),
    far=st.lists(_far, min_size=6, max_size=6),
)
def test_a_replaced_row_moves_the_statistics_by_at_most_the_sensitivity(
    seed, n, d, far
):
    # The module's proof, in exact rationals and as computed: every z and v
    # lies in [-1, 1] and [-1/2, 1/2] exactly, so neighbours' exact means
    # differ by at most 2/n and 1/n per coordinate (l2: 2 sqrt(d)/n and
    # sqrt(d)/n), and the computed means by at most the mechanisms'
    # sensitivities (the exact bound plus the summation's rounding).
    rng = np.random.default_rng(seed)
    lower = rng.uniform(-1e3, 1e3, size=d)
    upper = lower + rng.uniform(1e-3, 1e3, size=d)
    center, half = box_frame(lower, upper)
    X = rng.uniform(lower - 1, upper + 1, size=(n, d))
    Y = X.copy()
    i = int(rng.integers(n))
    offsets = np.asarray(far[:d])
    with np.errstate(over="ignore"):
        row = center + offsets * half
    Y[i] = np.where(np.isfinite(row), row, np.sign(offsets) * 1.7e308)
    zx, zy = box_offsets(X, center, half), box_offsets(Y, center, half)
    assert np.all(np.abs(zx) <= 1.0)
    assert np.all(np.abs(zy) <= 1.0)

    def exact(z):
        means = [sum(Fraction(v) for v in z[:, j]) / n for j in range(d)]
        squares = [
            sum(Fraction(float(fl)) for fl in (z[:, j] * z[:, j] - 0.5)) / n
            for j in range(d)
        ]
        return means, squares

    ex, ey = exact(zx), exact(zy)
    assert sum((a - b) ** 2 for a, b in zip(ex[0], ey[0], strict=True)) <= Fraction(
        4 * d, n * n
    )
    assert sum((a - b) ** 2 for a, b in zip(ex[1], ey[1], strict=True)) <= Fraction(
        d, n * n
    )
    cx, cy = box_moments(X, center, half), box_moments(Y, center, half)
    # The computed means are within e r of the exact ones (r = sqrt(d), and
    # sqrt(d)/2 for the squares); checked exactly.
    e = Fraction(summation_error(n))
    for computed, exact_values, r2 in ((cx[0], ex[0], d), (cx[1], ex[1], d / 4)):
        gap = sum(
            (Fraction(float(c)) - v) ** 2
            for c, v in zip(computed, exact_values, strict=True)
        )
        assert gap <= e * e * Fraction(r2)
    for pure in (False, True):
        for a, b, sens in zip(cx, cy, _sensitivities(n, d, pure), strict=True):
            diff = a - b
            moved = np.sum(np.abs(diff)) if pure else math.sqrt(np.sum(diff * diff))
            assert moved <= sens
        # The joint release (m, 2 s) and its own sensitivity.
        diff = np.concatenate([cx[0] - cy[0], 2.0 * (cx[1] - cy[1])])
        moved = np.sum(np.abs(diff)) if pure else math.sqrt(np.sum(diff * diff))
        bounds = moments_sensitivities(n, d)
        assert moved <= bounds["l1" if pure else "l2"]
        assert np.max(np.abs(diff)) <= bounds["linf"]


def test_the_worst_pair_reaches_the_bound():
    # A row 1e12 box widths below replaced by one 1e12 above moves every
    # coordinate of the mean by exactly 2/n: the sensitivity is tight (a bound
    # 20 times too small fails here, and the audit catches it).
    n, d = 100, 4
    center, half = np.zeros(d), np.ones(d)
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(n, d))
    X[0], X[1] = -1e12, 0.0
    Y = X.copy()
    Y[0] = 1e12  # z: -1 -> 1
    W = X.copy()
    W[1] = 1e12  # v: -1/2 -> 1/2
    sens_mean, sens_square = _sensitivities(n, d)
    mx, sx = box_moments(X, center, half)
    ratio_mean = np.linalg.norm(box_moments(Y, center, half)[0] - mx) / sens_mean
    ratio_square = np.linalg.norm(box_moments(W, center, half)[1] - sx) / sens_square
    assert 0.999 < ratio_mean <= 1.0
    assert 0.999 < ratio_square <= 1.0


@pytest.mark.parametrize(
    ("pure", "low"),
    # The maximisers of the module's bounds: a + b = 3/4 (l1) and
    # (2 + sqrt(2)) / 4 (l2), with b = 1.
    [(True, -0.25), (False, (math.sqrt(2.0) - 2.0) / 4.0)],
)
def test_the_joint_release_s_worst_pair_reaches_its_bound(pure, low):
    # One row moves from z = low to z = 1 in every coordinate: the joint
    # statistic (m, 2 s) moves by the mechanism's sensitivity, up to the
    # rounding allowances (a bound 20 times too small fails here and in the
    # audit).
    n, d = 100, 4
    center, half = np.zeros(d), np.ones(d)
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(n, d))
    X[0] = low
    Y = X.copy()
    Y[0] = 1e12
    (mx, sx), (my, sy) = box_moments(X, center, half), box_moments(Y, center, half)
    diff = np.concatenate([my - mx, 2.0 * (sy - sx)])
    moved = np.sum(np.abs(diff)) if pure else np.linalg.norm(diff)
    bound = moments_sensitivities(n, d)["l1" if pure else "l2"]
    assert 0.9999 < moved / bound <= 1.0


def test_chunked_sums_of_far_rows_match_the_proof():
    # More rows than one chunk, with rows at +-1e300: the statistic stays in
    # range and moves by at most the sensitivity.
    n, d = CHUNK_ROWS + 17, 2
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    X[::97] = 1e300
    Y = X.copy()
    Y[5] = -1e300
    center, half = np.zeros(d), np.full(d, 2.0)
    sens_mean, sens_square = _sensitivities(n, d)
    (mx, sx), (my, sy) = box_moments(X, center, half), box_moments(Y, center, half)
    assert np.linalg.norm(my - mx) <= sens_mean
    assert np.linalg.norm(sy - sx) <= sens_square


def test_every_noise_draw_gives_a_positive_scale():
    # At a tiny budget most released variances are negative before the floor.
    X = _rows(50)
    for seed in range(50):
        est = PrivateStandardScaler(BOUNDS, rho=1e-4, random_state=seed).fit(X)
        lower, upper = check_bounds(BOUNDS, 3)
        assert np.all(est.scale_ > 0)
        assert np.all(np.isfinite(est.scale_))
        assert np.all(est.var_ > 0)
        assert np.all((est.mean_ >= lower) & (est.mean_ <= upper))
    # Extreme (finite) rows and bounds: the fit completes with finite outputs.
    X = np.array([[1.7e308, -1.7e308], [-1.7e308, 5e-324], [0.0, 1.0]])
    est = PrivateStandardScaler(
        ([-1e140, 1e-100], [1e140, 3e-100]), epsilon=1.0, random_state=0
    ).fit(X)
    assert np.all(est.scale_ > 0)
    assert np.all(np.isfinite(est.var_))
    assert est.var_[1] >= (1e-100) ** 2 * MIN_BOX_VARIANCE
    # The smallest and largest half-widths accepted keep var_ normal and finite.
    est = PrivateStandardScaler(
        ([0.0, 0.0], [2e-140, 2e140]), rho=1e6, random_state=0
    ).fit(np.zeros((2, 2)))
    assert np.all(est.var_ >= np.finfo(np.float64).tiny)
    assert np.all(np.isfinite(est.var_))


# -- accuracy ---------------------------------------------------------------------
def _check_accuracy(est, X, k=5.0):
    n, d = X.shape
    lower, upper = check_bounds(est.bounds, d)
    center, half = box_frame(lower, upper)
    reference = StandardScaler().fit(X)
    (release,) = est._pricing_plan(d).releases()
    # The joint release's noise: s1 on the mean, half that on the squares.
    s1 = moments_mechanism(release.cost, n, d).effective_scale(2 * d)
    s2 = s1 / 2.0
    true_m1 = (reference.mean_ - center) / half
    mean_error = np.abs(est.mean_ - reference.mean_) / half
    assert np.all(mean_error <= k * s1), (mean_error / s1).max()
    var_tol = k * s2 + 2 * np.abs(true_m1) * k * s1 + (k * s1) ** 2 + s2
    var_error = np.abs(est.var_ - reference.var_) / half**2
    assert np.all(var_error <= var_tol), (var_error / var_tol).max()


def test_breast_cancer_within_the_noise_of_standard_scaler(global_random_seed):
    # Generous public bounds: [0, 1.5 x the largest value] rounded up, as a
    # domain expert would give them (every feature is nonnegative).
    X, _ = load_breast_cancer(return_X_y=True)
    upper = np.ceil(X.max(axis=0) * 150) / 100
    est = PrivateStandardScaler(
        (0.0, upper), rho=1.0, random_state=global_random_seed
    ).fit(X)
    _check_accuracy(est, X)


def test_large_n_is_close_to_standard_scaler(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal([3.0, -1.0, 100.0], [0.5, 2.0, 10.0], size=(200_000, 3))
    X = np.clip(X, [0.0, -11.0, 50.0], [6.0, 9.0, 150.0])
    est = PrivateStandardScaler(
        ([0.0, -11.0, 50.0], [6.0, 9.0, 150.0]), rho=0.5, random_state=0
    ).fit(X)
    _check_accuracy(est, X)
    reference = StandardScaler().fit(X)
    np.testing.assert_allclose(est.scale_, reference.scale_, rtol=0.01)
    assert np.all(np.abs(est.mean_ - reference.mean_) <= 0.01 * reference.scale_)


def test_pipeline_with_logistic_regression():
    X, y = load_breast_cancer(return_X_y=True)
    upper = np.ceil(X.max(axis=0) * 150) / 100
    budget = PrivacyBudget(rho=10.0)
    private = make_pipeline(
        PrivateStandardScaler((0.0, upper), rho=1.0, budget=budget, random_state=0),
        LogisticRegression(max_iter=1000),
    ).fit(X, y)
    exact = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    exact.fit(X, y)
    assert [e.mechanism for e in budget.ledger()] == ["gaussian:moments"]
    # Training accuracy (the classifier is not private; the pipeline runs).
    assert private.score(X, y) >= exact.score(X, y) - 0.05


# -- scikit-learn API -------------------------------------------------------------
def test_pandas_output_and_feature_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_rows(), columns=["a", "b", "c"])
    est = PrivateStandardScaler(BOUNDS, rho=0.5, random_state=0)
    est.set_output(transform="pandas")
    out = est.fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["a", "b", "c"]
    np.testing.assert_array_equal(est.get_feature_names_out(), ["a", "b", "c"])
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b", "c"])
    np.testing.assert_allclose(out.to_numpy(), (X.to_numpy() - est.mean_) / est.scale_)


def test_clone_and_pickle():
    X = _rows()
    est = PrivateStandardScaler(BOUNDS, epsilon=1.0, random_state=0).fit(X)
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.transform(X), est.transform(X))
    assert copy.privacy_spent_ == est.privacy_spent_
    fresh = clone(est)
    assert not hasattr(fresh, "mean_")
    np.testing.assert_array_equal(fresh.fit(X).mean_, est.mean_)  # same seed


def test_memmap_and_dask_give_the_same_release(tmp_path):
    X = _rows(3000)
    reference = PrivateStandardScaler(BOUNDS, rho=0.5, random_state=0).fit(X)
    path = tmp_path / "rows.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    est = PrivateStandardScaler(BOUNDS, rho=0.5, random_state=0).fit(mapped)
    np.testing.assert_array_equal(est.mean_, reference.mean_)
    np.testing.assert_array_equal(est.scale_, reference.scale_)
    da = pytest.importorskip("dask.array")
    lazy = da.from_array(X, chunks=(1000, 3))
    est = PrivateStandardScaler(BOUNDS, rho=0.5, random_state=0).fit(lazy)
    np.testing.assert_allclose(est.mean_, reference.mean_, rtol=1e-12)


class _Seeded(PrivateStandardScaler):
    """Deterministic once seeded (no budget): the checks scikit-learn skips for
    the ``non_deterministic`` tag can run."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


@pytest.mark.parametrize(
    "check",
    [
        check_transformer_general,
        check_transformer_data_not_an_array,
        check_pipeline_consistency,
        check_set_output_transform,
        check_set_output_transform_pandas,
        check_global_output_transform_pandas,
    ],
    ids=lambda c: c.__name__,
)
# The set_output checks fit on a DataFrame and transform an array (and the
# reverse) on purpose; scikit-learn's feature-name warning is expected there.
@pytest.mark.filterwarnings("ignore:X (does not have valid|has) feature names")
def test_checks_skipped_for_non_deterministic_run_with_a_seed(check):
    pytest.importorskip("pandas")
    check("PrivateStandardScaler", _Seeded((-10.0, 10.0), rho=1.0, random_state=0))


def test_a_box_too_narrow_says_so_and_which_side():
    # Rows at 100 +- 10 and -50 +- 1 in a box of (-1, 1) (raw values in a box
    # meant for standardised ones): every value is clipped to an edge, the
    # released means are 1 and -1 within noise (sd 8e-4 at n = 5000, rho
    # 0.5) and the variances 0. The warning names each side; it used to say
    # the bounds were much wider than the spread, "narrow the bounds": the
    # opposite. A feature inside the box is not named.
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [rng.normal(100, 10, 5000), rng.normal(0, 0.3, 5000), rng.normal(-50, 1, 5000)]
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        PrivateStandardScaler((-1.0, 1.0), rho=0.5, random_state=0).fit(X)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert (
        "feature(s) 0 (upper), 2 (lower) lies within 0.1 of a half-width"
        in (messages[0])
    )
    assert "at least 50% of the rows" in messages[0]
    assert "too narrow" in messages[0]


def test_the_mean_alone_names_the_side_too():
    # with_std=False releases the mean alone: the same rows, the same warning.
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(100, 10, 2000), rng.normal(0, 0.3, 2000)])
    with pytest.warns(UtilityWarning, match=r"feature\(s\) 0 \(upper\) lies"):
        PrivateStandardScaler((-1.0, 1.0), with_std=False, rho=0.5).fit(X)


def test_a_box_that_swamps_the_variance_warns():
    # Rows of sd 1 in a box of half-width 1000: the variance in box units is
    # 1e-6, far below the second moment's noise scale at n = 1000, rho = 1
    # (about sqrt(3) / (n sqrt(2 rho')) ~ 2e-3): every feature is reported.
    X = np.random.default_rng(0).normal(size=(1000, 3))
    with pytest.warns(UtilityWarning, match="3 of 3 features"):
        PrivateStandardScaler((-1e3, 1e3), rho=1.0, random_state=0).fit(X)
    # A box of half-width 4 sds at n = 1e5: variance 1/16 against noise ~3e-5.
    X = np.random.default_rng(1).normal(size=(100_000, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateStandardScaler((-4.0, 4.0), rho=1.0, random_state=0).fit(X)
    # Nothing to report without a variance release.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateStandardScaler((-1e3, 1e3), with_std=False, rho=1.0).fit(X[:100])


def test_wrong_units_say_which_way_on_both_warnings():
    # A newcomer's run: raw breast cancer in a box meant for standardised rows
    # (-3, 3). Large-valued columns sit at the upper edge; small-valued ones
    # (ratios near 0.1) are swamped by the noise. The second warning said
    # "narrow the bounds" alone; with edge features it now points at the
    # units first.
    from sklearn.datasets import load_breast_cancer

    X = load_breast_cancer().data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UtilityWarning)
        PrivateStandardScaler((-3.0, 3.0), rho=1.0, random_state=0).fit(X)
    messages = [str(w.message) for w in caught]
    edge = [m for m in messages if "box's edge, beyond its noise" in m]
    wide = [m for m in messages if "much wider" in m]
    assert len(edge) == 1
    assert "0 (upper)" in edge[0]
    assert "each of mean_ and scale_ says little" in edge[0]
    assert len(wide) == 1
    assert "in other units than the rows" in wide[0]
