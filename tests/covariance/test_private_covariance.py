"""PrivateCovariance: accuracy against theory, accounting, sensitivity, bad input."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from sklearn.covariance import EmpiricalCovariance

import dpgauss.utils._sums as sums_module
from dpgauss import PrivacyBudget, PrivateCovariance
from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp, split_cost
from dpgauss.covariance._base import MEAN_SHARE
from dpgauss.exceptions import (
    BudgetExceededError,
    PrivacyAccountingError,
    UselessFitError,
    UtilityWarning,
)
from dpgauss.utils._sums import clip_rows, clipped_sums


def _ball_data(n, d, radius, seed):
    """Gaussian rows rescaled to lie strictly inside the ball (no clipping bias)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ np.diag(np.linspace(1.0, 0.3, d))
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X * np.minimum(1.0, 0.99 * radius / norms)


# -- accuracy ------------------------------------------------------------------
def test_second_moment_error_is_bounded_by_the_noise_law(global_random_seed):
    # center=False: the release is M + N with ||N||_F^2 / sigma^2 ~ chi2 with
    # d(d+1)/2 degrees of freedom exactly (diagonal N(0, s^2), each off-diagonal
    # pair 2 N(0, s^2/2)^2), s = sqrt(2) B^2 / (n sqrt(2 rho)). Clipping the
    # eigenvalues to [0, B^2] is a projection onto a convex set holding M, so it
    # can only shrink the error: error^2 <= s^2 chi2_{k}(0.999) w.p. 0.999.
    n, d, B, rho = 2000, 5, 2.0, 0.5
    X = _ball_data(n, d, B, global_random_seed)
    est = PrivateCovariance(
        method="gauss", rho=rho, data_norm=B, center=False, random_state=0
    ).fit(X)
    exact = X.T @ X / n
    sigma = math.sqrt(2) * B**2 / (n * math.sqrt(2 * rho))
    k = d * (d + 1) // 2
    assert np.sum((est.covariance_ - exact) ** 2) <= sigma**2 * stats.chi2.ppf(0.999, k)
    np.testing.assert_array_equal(est.location_, np.zeros(d))


def test_centered_error_is_close_to_the_noise_level():
    # Averaged over 30 fits, the error of the centered estimate stays within 1.5x
    # of the error the second-moment noise alone would give (sqrt(E chi2_k) sigma
    # at rho' = 3/4 rho); the mean costs a quarter of the budget, and its error
    # enters as 2 |mu| |e| with |e| ~ sqrt(d) 2B / (n sqrt(2 rho / 4)).
    n, d, B, rho = 5000, 4, 3.0, 1.0
    X = _ball_data(n, d, B, 0) + 0.5
    X *= np.minimum(1, 0.99 * B / np.linalg.norm(X, axis=1, keepdims=True))
    exact = np.cov(X, rowvar=False, bias=True)
    errors = [
        np.linalg.norm(
            PrivateCovariance(method="gauss", rho=rho, data_norm=B, random_state=s)
            .fit(X)
            .covariance_
            - exact
        )
        for s in range(30)
    ]
    sigma = math.sqrt(2) * B**2 / (n * math.sqrt(2 * rho * (1 - MEAN_SHARE)))
    noise_only = sigma * math.sqrt(d * (d + 1) / 2)
    assert np.mean(errors) < 1.5 * noise_only
    assert np.mean(errors) > 0.3 * noise_only  # and there is noise at all


def test_error_shrinks_like_one_over_n():
    # The noise scale is proportional to 1/n: 4x the rows, ~1/4 of the error.
    d, B, rho = 6, 2.0, 0.2
    means = []
    for n in (1000, 4000):
        X = _ball_data(n, d, B, 1)
        exact = X.T @ X / n
        means.append(
            np.mean(
                [
                    np.linalg.norm(
                        PrivateCovariance(
                            method="gauss",
                            rho=rho,
                            data_norm=B,
                            center=False,
                            random_state=s,
                        )
                        .fit(X)
                        .covariance_
                        - exact
                    )
                    for s in range(20)
                ]
            )
        )
    assert 2.5 < means[0] / means[1] < 6.0


def test_pure_epsilon_twin_error(global_random_seed):
    # Laplace(b) on each upper entry, b = min(d + 1, sqrt(2) d) B^2 / (n eps):
    # E ||N||_F^2 = 2 b^2 d^2 (diagonal d entries, off-diagonal d(d-1) entries
    # counted twice). The mean of 40 fits of ||error||^2 has relative sd about
    # 0.15 (per-fit relative sd 0.96 for d = 3); 1.6x is 4 sd.
    n, d, B, eps = 3000, 3, 1.5, 2.0
    X = _ball_data(n, d, B, global_random_seed)
    exact = X.T @ X / n
    sq = [
        np.sum(
            (
                PrivateCovariance(
                    method="gauss",
                    epsilon=eps,
                    data_norm=B,
                    center=False,
                    random_state=s,
                )
                .fit(X)
                .covariance_
                - exact
            )
            ** 2
        )
        for s in range(40)
    ]
    b = min(d + 1, math.sqrt(2) * d) * B**2 / (n * eps)
    assert np.mean(sq) < 1.6 * 2 * b**2 * d**2
    assert np.mean(sq) > 0.1 * 2 * b**2 * d**2


def test_location_given_matches_empirical_covariance():
    # With the true mean as public location and a large budget, the second
    # moment about it is the empirical covariance up to small noise.
    X = _ball_data(20_000, 3, 4.0, 3)
    mean = X.mean(axis=0)
    est = PrivateCovariance(
        method="gauss",
        rho=100.0,
        data_norm=8.0,
        center=False,
        location=mean,
        random_state=0,
    ).fit(X)
    np.testing.assert_allclose(
        est.covariance_, np.cov(X, rowvar=False, bias=True), atol=5e-3
    )
    np.testing.assert_array_equal(est.location_, mean)


# -- outputs ---------------------------------------------------------------------
def test_outputs_are_valid_even_when_noise_dominates():
    X = _ball_data(50, 6, 1.0, 0)
    est = PrivateCovariance(
        rho=1e-4, data_norm=1.0, random_state=0, on_useless="warn"
    ).fit(X)
    cov = est.covariance_
    np.testing.assert_array_equal(cov, cov.T)
    eig = np.linalg.eigvalsh(cov)
    assert eig.min() >= -1e-12
    assert eig.max() <= 1.0 + 1e-9
    assert np.all(np.isfinite(est.precision_))
    assert np.linalg.eigvalsh(est.precision_).min() > 0
    assert np.linalg.norm(est.location_) <= 1.0 + 1e-12  # projected onto the ball
    assert np.isfinite(est.score(X))


def test_methods_mirror_empirical_covariance():
    X = _ball_data(3000, 3, 3.0, 0)
    est = PrivateCovariance(rho=1.0, data_norm=3.0, random_state=0).fit(X)
    ref = EmpiricalCovariance().fit(X)
    ref.covariance_ = est.covariance_  # same matrix: same error_norm semantics
    for norm in ("frobenius", "spectral"):
        for scaling in (True, False):
            for squared in (True, False):
                assert est.error_norm(
                    np.eye(3), norm=norm, scaling=scaling, squared=squared
                ) == pytest.approx(
                    ref.error_norm(
                        np.eye(3), norm=norm, scaling=scaling, squared=squared
                    )
                )
    with pytest.raises(NotImplementedError):
        est.error_norm(np.eye(3), norm="nuclear")
    centered = X - est.location_
    expected = np.sum(centered @ est.precision_ * centered, axis=1)
    np.testing.assert_allclose(est.mahalanobis(X), expected)
    np.testing.assert_array_equal(est.get_precision(), est.precision_)
    logpdf = stats.multivariate_normal(
        est.location_, np.linalg.inv(est.precision_)
    ).logpdf(X)
    np.testing.assert_allclose(est.score_samples(X), logpdf, rtol=1e-8)
    assert est.score(X) == pytest.approx(np.mean(logpdf))


def test_sample_is_post_processing_from_the_fitted_gaussian():
    X = _ball_data(5000, 2, 3.0, 0)
    est = PrivateCovariance(rho=1.0, data_norm=3.0, random_state=0).fit(X)
    draws = est.sample(200_000, random_state=1)
    # Sample moments of 200,000 draws: sd of a covariance entry ~ 0.003 here.
    np.testing.assert_allclose(draws.mean(axis=0), est.location_, atol=0.01)
    np.testing.assert_allclose(np.cov(draws, rowvar=False), est.covariance_, atol=0.015)
    np.testing.assert_array_equal(
        est.sample(3, random_state=5), est.sample(3, random_state=5)
    )
    with pytest.raises(ValueError, match="positive int"):
        est.sample(0)


def test_random_state_reproducible_and_fresh():
    X = _ball_data(200, 3, 2.0, 0)
    a = PrivateCovariance(rho=1.0, data_norm=2.0, random_state=3).fit(X).covariance_
    b = PrivateCovariance(rho=1.0, data_norm=2.0, random_state=3).fit(X).covariance_
    c = PrivateCovariance(rho=1.0, data_norm=2.0).fit(X).covariance_
    d = PrivateCovariance(rho=1.0, data_norm=2.0).fit(X).covariance_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(c, d)


def test_outliers_are_clipped_not_trusted():
    # One row a million times outside the ball moves the estimate by at most the
    # sensitivity, never by its own size.
    X = _ball_data(1000, 3, 1.0, 0)
    Y = X.copy()
    Y[0] = 1e6
    a = PrivateCovariance(
        method="gauss", rho=1.0, data_norm=1.0, center=False, random_state=0
    ).fit(X)
    b = PrivateCovariance(
        method="gauss", rho=1.0, data_norm=1.0, center=False, random_state=0
    ).fit(Y)
    assert np.linalg.norm(a.covariance_ - b.covariance_) <= math.sqrt(2) / 1000 + 1e-12


# -- accounting ------------------------------------------------------------------
@pytest.mark.parametrize("method", ["auto", "gauss", "separate", "eigen"])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize(
    ("params", "spent"), [({"rho": 0.8}, ZCDP(0.8)), ({"epsilon": 2.0}, PureDP(2.0))]
)
def test_budget_split_adds_up_exactly_to_the_ledger(method, center, params, spent):
    budget = PrivacyBudget(rho=100.0)
    X = _ball_data(100, 3, 1.0, 0)
    # 100 rows at pure epsilon 2 are predicted no better than the zero
    # matrix; the accounting is what is tested here.
    est = PrivateCovariance(
        method=method,
        **params,
        data_norm=1.0,
        center=center,
        budget=budget,
        on_useless="warn",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(X)
    events = budget.ledger()
    assert [(e.cost, e.mechanism) for e in events] == est._pricing_plan(
        3, total=spent
    ).charges()
    assert est.privacy_spent_ == pytest.approx(spent) or math.isclose(
        _value(est.privacy_spent_), _value(spent), rel_tol=1e-12
    )
    # The parts never exceed the whole (shares are rounded down).
    if isinstance(spent, ZCDP):
        total = math.fsum(
            e.cost.rho if isinstance(e.cost, ZCDP) else e.cost.epsilon**2 / 2
            for e in events
        )
    else:
        total = math.fsum(e.cost.epsilon for e in events)
    assert total <= _value(spent) * (1 + 1e-12)
    assert total == pytest.approx(_value(spent), rel=1e-12)
    if center:
        assert events[0].cost == split_cost(spent, [MEAN_SHARE, 1 - MEAN_SHARE])[0]


def _value(cost):
    return cost.rho if isinstance(cost, ZCDP) else cost.epsilon


def test_epsilon_delta_is_converted_to_the_largest_rho():
    X = _ball_data(100, 2, 1.0, 0)
    est = PrivateCovariance(epsilon=1.0, delta=1e-6, data_norm=1.0).fit(X)
    assert est.privacy_spent_ == ZCDP(approx_to_zcdp(1.0, 1e-6))
    assert est.privacy_spent_.to_approx(1e-6).epsilon <= 1.0


def test_each_fit_spends_again():
    budget = PrivacyBudget(rho=1.0)
    X = _ball_data(100, 2, 1.0, 0)
    est = PrivateCovariance(rho=0.5, data_norm=1.0, budget=budget)
    est.fit(X)
    est.fit(X)
    with pytest.raises(BudgetExceededError):
        est.fit(X)
    assert budget.spent().rho == pytest.approx(1.0)


class _Untouchable:
    """An array-like whose data must not be read (its shape is metadata).

    The refusal needs only the number of features, from ``shape``; inputs without
    a shape (lists) are refused by the atomic spend, still before any noise.
    """

    touched = False
    shape = (10, 3)

    def __array__(self, *args, **kwargs):
        type(self).touched = True
        raise AssertionError("the data were read")

    def __len__(self):
        type(self).touched = True
        raise AssertionError("the data were read")


def test_exhausted_budget_refuses_before_touching_the_data():
    budget = PrivacyBudget(rho=0.1)
    budget.spend(ZCDP(0.1))
    est = PrivateCovariance(rho=0.05, data_norm=1.0, budget=budget)
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        est.fit(_Untouchable())
    assert not _Untouchable.touched
    assert not hasattr(est, "covariance_")


def test_incompatible_budget_refuses_before_touching_the_data():
    est = PrivateCovariance(rho=0.05, data_norm=1.0, budget=PrivacyBudget(epsilon=1.0))
    with pytest.raises(PrivacyAccountingError, match="accepts only pure"):
        est.fit(_Untouchable())
    assert not _Untouchable.touched


# -- sensitivity (property tests on random neighbouring datasets) -----------------
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def neighbouring_data(draw):
    d = draw(st.integers(2, 6))
    n = draw(st.integers(2, 8))
    X = draw(arrays(np.float64, (n, d), elements=finite))
    row = draw(arrays(np.float64, (d,), elements=finite))
    return X, row


@settings(max_examples=150, deadline=None)
@given(
    data=neighbouring_data(), radius=st.floats(0.01, 100.0), index=st.integers(0, 100)
)
def test_statistics_move_by_at_most_the_stated_sensitivity(data, radius, index):
    X, row = data
    n, d = X.shape
    Y = X.copy()
    Y[index % n] = row  # a neighbour: one row replaced by anything
    location = np.zeros(d)
    sy_x, syy_x = clipped_sums(X, location, radius)
    sy_y, syy_y = clipped_sums(Y, location, radius)
    b, b2, tol = radius, radius**2, 1e-9
    mean_diff, second_diff = (sy_x - sy_y) / n, (syy_x - syy_y) / n
    assert np.linalg.norm(mean_diff) <= 2 * b / n * (1 + tol)
    assert np.abs(mean_diff).sum() <= 2 * math.sqrt(d) * b / n * (1 + tol)
    assert np.linalg.norm(second_diff) <= math.sqrt(2) * b2 / n * (1 + tol)
    upper_l1 = np.abs(second_diff[np.triu_indices(d)]).sum()
    assert upper_l1 <= min(d + 1, math.sqrt(2) * d) * b2 / n * (1 + tol)


def test_chunked_sums_equal_one_pass(monkeypatch):
    X = np.random.default_rng(0).normal(size=(1001, 4)) * 3
    one = clipped_sums(X, np.ones(4), 2.0)
    monkeypatch.setattr(sums_module, "CHUNK_ROWS", 7)
    many = clipped_sums(X, np.ones(4), 2.0)
    for a, b in zip(one, many, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_memory_mapped_input(tmp_path):
    path = tmp_path / "X.npy"
    X = _ball_data(500, 3, 1.0, 0)
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    a = PrivateCovariance(rho=1.0, data_norm=1.0, random_state=0).fit(mapped)
    b = PrivateCovariance(rho=1.0, data_norm=1.0, random_state=0).fit(X)
    np.testing.assert_array_equal(a.covariance_, b.covariance_)


# -- bad input -----------------------------------------------------------------------
GOOD = np.random.default_rng(0).normal(size=(20, 3))


@pytest.mark.parametrize(
    ("params", "X", "error", "match"),
    [
        ({}, GOOD, ValueError, "no privacy parameter given"),
        ({"rho": 0.0}, GOOD, ValueError, "rho"),
        ({"rho": -1.0}, GOOD, ValueError, "rho"),
        ({"rho": np.inf}, GOOD, ValueError, "rho"),
        ({"epsilon": 0.0}, GOOD, ValueError, "epsilon"),
        ({"epsilon": np.inf}, GOOD, ValueError, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0}, GOOD, ValueError, "delta"),
        ({"epsilon": 1.0, "delta": 1.5}, GOOD, ValueError, "delta"),
        ({"delta": 1e-6}, GOOD, ValueError, "delta=1e-06 was given without epsilon"),
        ({"rho": 1.0, "epsilon": 1.0}, GOOD, ValueError, "not a mix"),
        ({"rho": 1.0, "data_norm": None}, GOOD, ValueError, "data_norm is required"),
        ({"rho": 1.0, "data_norm": 0.0}, GOOD, ValueError, "data_norm"),
        ({"rho": 1.0, "data_norm": -2.0}, GOOD, ValueError, "data_norm"),
        ({"rho": 1.0, "data_norm": np.inf}, GOOD, ValueError, "data_norm"),
        ({"rho": 1.0}, np.where(GOOD > 1, np.nan, GOOD), ValueError, "NaN"),
        ({"rho": 1.0}, np.where(GOOD > 1, np.inf, GOOD), ValueError, "infinity"),
        ({"rho": 1.0}, np.empty((0, 3)), ValueError, "0 sample"),
        ({"rho": 1.0}, GOOD[:1], ValueError, "1 sample"),
        ({"rho": 1.0}, GOOD[:, 0], ValueError, "Expected 2D array"),
        ({"rho": 1.0}, sp.csr_matrix(GOOD), TypeError, "dense data is required"),
        ({"rho": 1.0}, GOOD.astype(str).astype(object) + "x", ValueError, "convert"),
        ({"rho": 1.0}, GOOD + 1j, ValueError, "Complex data not supported"),
        ({"rho": 1.0, "location": [0.0, 0.0]}, GOOD, ValueError, "location must be"),
        ({"rho": 1.0, "location": [0.0, np.nan, 0]}, GOOD, ValueError, "location must"),
        ({"rho": 1.0, "method": "magic"}, GOOD, ValueError, "method"),
    ],
)
def test_bad_input_is_refused_before_spending_and_untouched(params, X, error, match):
    params = {"data_norm": 1.0, **params}
    budget = PrivacyBudget(rho=10.0)
    original = X.copy()
    with pytest.raises(error, match=match):
        PrivateCovariance(**params, budget=budget).fit(X)
    assert budget.ledger() == []
    if sp.issparse(X):
        assert (X != original).nnz == 0
    else:
        np.testing.assert_array_equal(X, original)


def test_fit_leaves_input_and_parameters_unchanged():
    X = GOOD.copy()
    location = np.zeros(3)
    est = PrivateCovariance(rho=1.0, data_norm=1.0, location=location, random_state=0)
    before = est.get_params()
    est.fit(X)
    np.testing.assert_array_equal(X, GOOD)
    np.testing.assert_array_equal(location, np.zeros(3))
    after = est.get_params()
    assert before.keys() == after.keys()
    assert all(before[k] is after[k] for k in before)


def test_privacy_invariants_hold_with_sklearn_validation_switched_off():
    from sklearn import config_context

    with config_context(skip_parameter_validation=True):
        with pytest.raises(ValueError, match="rho"):
            PrivateCovariance(rho=-1.0, data_norm=1.0).fit(GOOD)
        with pytest.raises(ValueError, match="data_norm"):
            PrivateCovariance(rho=1.0, data_norm=-1.0).fit(GOOD)


def test_feature_names_are_recorded():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(GOOD, columns=["a", "b", "c"])
    est = PrivateCovariance(rho=1.0, data_norm=1.0).fit(frame)
    assert list(est.feature_names_in_) == ["a", "b", "c"]


def test_clipping_maps_every_float_row_into_the_ball():
    # Privacy must not rest on validation: non-finite rows (possible under
    # sklearn's assume_finite) and offsets that overflow go to the center, huge
    # finite rows are scaled without overflow; every sensitivity bound holds.
    X = np.array(
        [[1e308, 1e308], [np.nan, 0.0], [np.inf, 1.0], [3.0, 4.0], [1e200, -1e200]]
    )
    location = np.array([-1e308, 0.0])
    sum_y, sum_yy = clipped_sums(X, location, 2.0)
    assert np.all(np.isfinite(sum_y))
    assert np.all(np.isfinite(sum_yy))
    norms = np.linalg.norm(clip_rows(X, location, 2.0), axis=1)
    assert np.all(norms <= 2.0 * (1 + 1e-12))
    np.testing.assert_allclose(norms, [0.0, 0.0, 0.0, 2.0, 2.0], atol=1e-12)


def test_assume_finite_does_not_break_privacy():
    from sklearn import config_context

    X = GOOD.copy()
    X[0, 0] = np.nan
    budget = PrivacyBudget(rho=1.0)
    with config_context(assume_finite=True):
        est = PrivateCovariance(rho=0.5, data_norm=1.0, budget=budget).fit(X)
    assert np.all(np.isfinite(est.covariance_))
    assert budget.spent() == ZCDP(0.5)


def test_a_fit_predicted_useless_refuses_before_spending():
    # n = 150, d = 64, rho = 0.1, data_norm = 8 (digits of one class): even data
    # filling the ball evenly (||C||_F = 64 / 8 = 8) would be estimated with
    # error about 50 (the mean's noise alone: d v = 36), so the zero matrix is
    # predicted better. The refusal comes before the charge and depends on
    # public values only: the same for any data of that shape.
    budget = PrivacyBudget(rho=1.0)
    est = PrivateCovariance(rho=0.1, data_norm=8.0, budget=budget)
    rng = np.random.default_rng(0)
    for X in (np.zeros((150, 64)), rng.uniform(0, 1, size=(150, 64))):
        with pytest.raises(UselessFitError, match="for data spread evenly") as info:
            est.fit(X)
        assert "Nothing was spent" in str(info.value)
        assert budget.spent().rho == 0.0
        assert not hasattr(est, "covariance_")
    # The opt-in: warn (still before the spend) and spend.
    est.set_params(on_useless="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        with pytest.raises(UtilityWarning, match="for data spread evenly"):
            est.fit(X)
    assert budget.spent().rho == 0.0
    with pytest.warns(UtilityWarning):
        est.fit(rng.uniform(0, 1, size=(150, 64)))
    assert budget.spent().rho == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("n", "rho", "norm", "warns"),
    [(1797, 0.1, 8.0, False), (150, 0.1, 8.0, True), (150, 10.0, 8.0, False)],
)
def test_utility_warning_only_when_predicted_useless(n, rho, norm, warns):
    X = np.random.default_rng(0).uniform(0, 1, size=(n, 64))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivateCovariance(
            rho=rho, data_norm=norm, random_state=0, on_useless="warn"
        ).fit(X)
    # The prediction's warning, before the spend (the fit may also warn after
    # it of features whose released variance is within the noise).
    predicted = [
        w
        for w in caught
        if issubclass(w.category, UtilityWarning) and "predicted" in str(w.message)
    ]
    assert bool(predicted) == warns


@pytest.mark.parametrize(
    ("params", "budget"),
    [
        # Each sits where the worst public case's noise scale is exactly a power
        # of two and the fit's own (a few fewer chunk sums, a sensitivity about
        # 1e-10 smaller) is just below it: the lattice step halves, and the
        # integer variance or scale the fit needs exceeds the sampler's limit.
        (
            {"method": "gauss", "rho": 2.2421044995672935e-19},
            {"rho": 1e9},
        ),
        (
            {"method": "gauss", "epsilon": 2.22125949877379e-16},
            {"epsilon": 1e3},
        ),
    ],
)
def test_the_fits_own_calibration_is_checked_before_the_spend(params, budget):
    X = np.random.default_rng(0).normal(size=(1000, 1))
    norm = 2.1503739197218143e-05 if "rho" in params else 1.175403708959562
    ledger = PrivacyBudget(**budget)
    est = PrivateCovariance(
        **params, data_norm=norm, center=False, budget=ledger, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        with pytest.raises(ValueError, match="cannot be calibrated"):
            est.fit(X)
    assert ledger.ledger() == []


def test_the_smallest_lattice_is_checked_at_the_fits_own_case():
    # EMCov at data_norm 1e-140: the fit's scale is 1.6e-10 relative below the
    # checked one, and below the smallest float64 lattice step.
    X = np.random.default_rng(0).normal(size=(1000, 1))
    ledger = PrivacyBudget(rho=1e60)
    est = PrivateCovariance(
        method="eigen",
        rho=7.175816850002317e34,
        data_norm=1e-140,
        center=False,
        budget=ledger,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        with pytest.raises(ValueError, match="cannot be calibrated"):
            est.fit(X)
    assert ledger.ledger() == []


def test_pure_dp_with_a_norm_bound_refuses_where_real_tables_lose():
    # Real tables scaled to their box fill about a tenth of it per coordinate
    # (variance BOX_FILL r^2 / d): at n = 630, d = 7, epsilon = 1 (modechoice's
    # size) GaussCov's noise exceeds the zero matrix's error on such rows,
    # though not on rows filling the ball, the previous reference. Refused
    # before the spend.
    from dpgauss.covariance._private_covariance import norm_prediction
    from dpgauss.releases._covariance import filled_prediction

    rng = np.random.default_rng(0)
    d, n = 7, 630
    X = rng.uniform(-1, 1, size=(n, d)) * 0.55  # variance ~0.1 per box unit
    radius = math.sqrt(d)
    budget = PrivacyBudget(epsilon=1.0)
    est = PrivateCovariance(epsilon=1.0, data_norm=radius, budget=budget)
    with pytest.raises(UselessFitError, match="Nothing was spent"):
        est.fit(X)
    assert budget.ledger() == []
    plan = est._build_plan(PureDP(1.0), _FakeData(n, d))
    mechanisms = {r.name: r.build() for r in plan.releases()}
    assert norm_prediction(mechanisms, "auto", d, radius).loses
    assert not filled_prediction(mechanisms, "auto", d, radius).loses


class _FakeData:
    def __init__(self, n, d):
        self.n, self.d = n, d
