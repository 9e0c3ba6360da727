"""The shared estimator base: regressions of the privacy-core issue, one per break.

Each test failed on the code before the release plan and the shared base:
noise shared by clones, spends made before a parameter or a noise scale was
refused, row-dependent warnings, pure costs checked at epsilon^2/2, a model whose
methods described different Gaussians, a failed fit left "fitted".
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_validate

from dpgauss import PrivacyBudget, PrivateCovariance, TailSensitiveCovariance
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.exceptions import UselessFitError, UtilityWarning
from dpgauss.testing.discovery import all_estimators
from dpgauss.utils._sums import clipped_sums

X = np.random.default_rng(0).normal(size=(400, 3))


def _noise_of(est, rows):
    """The noise of a center=False GaussCov release: release minus exact moment."""
    exact = clipped_sums(rows, np.zeros(rows.shape[1]), est.data_norm)[1] / len(rows)
    return est.covariance_ - exact


@pytest.mark.parametrize("seed", [0, np.random.default_rng(0)])
def test_clones_in_cross_validation_never_share_noise(seed):
    # Before: every fold's clone drew identical noise, so subtracting two fold
    # releases gave the exact difference of their statistics (error 1e-15). The
    # noise here is huge next to the statistic (rho = 1e-4), so no eigenvalue is
    # clipped and the release minus the exact moment is the noise matrix itself.
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(
        method="gauss",
        rho=1e-4,
        data_norm=1e-3,
        center=False,
        budget=budget,
        random_state=seed,
    )
    rows = X * 1e-4
    folds = list(KFold(3).split(rows))
    result = cross_validate(
        est, rows, cv=folds, return_estimator=True, scoring=lambda *a: 0.0
    )
    noises = [
        _noise_of(fitted, rows[train])
        for fitted, (train, _) in zip(result["estimator"], folds, strict=True)
    ]
    assert not np.allclose(noises[0], noises[1], rtol=0, atol=1e-9)
    assert len({e.id for e in budget.ledger()}) == len(budget.ledger()) == 3


def test_an_int_seed_replayed_on_a_fresh_ledger_reproduces_the_experiment():
    def experiment():
        budget = PrivacyBudget(rho=10.0)
        est = PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget, random_state=7)
        return [clone(est).fit(X).covariance_ for _ in range(3)]

    for a, b in zip(experiment(), experiment(), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"data_norm": 1e150, "rho": 1e-6}, "cannot be calibrated"),
        ({"data_norm": 1e155}, "cannot be calibrated"),
        ({"data_norm": 1e-170}, "cannot be calibrated"),
        ({"rho": 1e-300, "data_norm": 1e140}, "cannot be calibrated"),
    ],
)
@pytest.mark.parametrize("cls", [PrivateCovariance, TailSensitiveCovariance])
def test_impossible_noise_scales_are_refused_before_the_spend(cls, params, match):
    budget = PrivacyBudget(rho=10.0)
    params = {"rho": 1.0, **params}
    with pytest.raises(ValueError, match=match):
        cls(**params, budget=budget).fit(X)
    assert budget.ledger() == []


@pytest.mark.parametrize("cls", [PrivateCovariance, TailSensitiveCovariance])
@pytest.mark.parametrize(
    "params",
    [
        {"rho": 1e-300},
        {"epsilon": 1e-150},
        {"rho": 1e-12},
        {"epsilon": 1e-6},
        {"rho": 1e12},
        {"epsilon": 1e8},
    ],
)
def test_extreme_budgets_complete_or_are_refused_before_the_spend(cls, params):
    # rho=1e-300 and epsilon=1e-150 charged the budget, then crashed. Now a fit
    # either completes with a finite model or is refused before anything is
    # spent (the exact lattice samplers need integer noise scales below 2^61).
    budget = PrivacyBudget(rho=1e20)
    est = cls(**params, data_norm=1.0, budget=budget, random_state=0, on_useless="warn")
    if params in ({"rho": 1e-300}, {"epsilon": 1e-150}):
        with pytest.raises(ValueError, match="cannot be calibrated"):
            est.fit(X)
        assert budget.ledger() == []
        return
    est.fit(X)
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.isfinite(est.precision_))


@pytest.mark.parametrize(
    ("param", "bad"),
    [("method", "gaus"), ("random_state", "seed"), ("center", "yes"), ("rho", -1.0)],
)
def test_bad_parameters_are_refused_before_spending_without_validation(param, bad):
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(rho=1.0, data_norm=5.0, budget=budget)
    est.set_params(**{param: bad})
    with config_context(skip_parameter_validation=True):
        with pytest.raises((ValueError, TypeError)):
            est.fit(X)
    assert budget.ledger() == []


def test_split_refused_before_spending_without_validation():
    budget = PrivacyBudget(rho=10.0)
    est = TailSensitiveCovariance(rho=1.0, data_norm=5.0, split=(1, 0), budget=budget)
    with config_context(skip_parameter_validation=True):
        with pytest.raises(ValueError, match="split"):
            est.fit(X)
    assert budget.ledger() == []


@pytest.mark.parametrize("cls", [PrivateCovariance, TailSensitiveCovariance])
def test_no_warning_depends_on_the_rows(cls):
    # Rows of +-1e308 made the finiteness check overflow with a RuntimeWarning
    # before the spend: a warning whose occurrence depends on private rows.
    rows = X.copy()
    rows[0] = [1e308, -1e308, 1e308]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = cls(rho=1.0, data_norm=5.0, random_state=0).fit(rows)
    assert np.all(np.isfinite(est.covariance_))


def test_a_pure_fit_on_a_zcdp_budget_is_charged_what_its_plan_costs():
    # epsilon = 1 split 0.1 / 0.9 (mean, covariance) composes to
    # (0.1^2 + 0.9^2) / 2 = 0.41 < 0.5 = epsilon^2 / 2 in zCDP; a budget of 0.45
    # was refused before, although the plan fits.
    budget = PrivacyBudget(rho=0.45)
    est = PrivateCovariance(
        method="gauss", epsilon=1.0, data_norm=5.0, budget=budget, on_useless="warn"
    )
    est.fit(X)
    assert budget.spent().rho == pytest.approx((0.1**2 + 0.9**2) / 2)
    assert est.privacy_spent_ == PureDP(1.0)
    assert est.planned_costs(3) == [PureDP(0.1), PureDP(0.9)]


def test_the_model_is_one_gaussian():
    # covariance_, precision_, score_samples, mahalanobis and sample agree; the
    # floor never exceeds the mean eigenvalue, so a chi-square cutoff works even
    # when noise dominates (before: the floor exceeded the whole trace and the
    # Mahalanobis distances were all tiny).
    for rho in (1e-4, 1.0):
        est = PrivateCovariance(
            rho=rho, data_norm=5.0, random_state=0, on_useless="warn"
        ).fit(X)
        np.testing.assert_allclose(
            est.covariance_ @ est.precision_, np.eye(3), atol=1e-8
        )
        logpdf = stats.multivariate_normal(est.location_, est.covariance_).logpdf(X)
        np.testing.assert_allclose(est.score_samples(X), logpdf, rtol=1e-8)
        draws = est.sample(20_000, random_state=1)
        flagged = np.mean(est.mahalanobis(draws) > stats.chi2.ppf(0.99, 3))
        assert 0.005 < flagged < 0.015  # 1% of the model's own draws
        # Equal when every eigenvalue is the floor (rho=1e-4: all released 0).
        assert est.eigenvalue_floor_ <= np.trace(est.covariance_) / 3 * (1 + 1e-12)


def test_a_failed_fit_is_not_fitted_and_leaves_no_stale_names():
    pd = pytest.importorskip("pandas")
    est = PrivateCovariance(rho=1.0, data_norm=5.0)
    est.fit(pd.DataFrame(X, columns=["a", "b", "c"]))
    assert hasattr(est, "feature_names_in_")
    est.fit(X)
    assert not hasattr(est, "feature_names_in_")
    with pytest.raises(ValueError, match="NaN"):
        est.fit(np.where(X > 1, np.nan, X))
    assert not hasattr(est, "covariance_")
    assert not hasattr(est, "n_features_in_")


def test_planned_costs_compose_to_the_total():
    for method in ("auto", "gauss", "separate", "eigen"):
        est = PrivateCovariance(method=method, rho=0.8, data_norm=1.0)
        costs = est.planned_costs(4)
        rho = math.fsum(
            c.rho if isinstance(c, ZCDP) else c.epsilon**2 / 2 for c in costs
        )
        assert rho == pytest.approx(0.8, rel=1e-12)
        assert rho <= 0.8 * (1 + 1e-12)


def test_a_non_private_score_in_cross_validation_warns():
    from sklearn.model_selection import cross_val_score

    from dpgauss.exceptions import PrivacyLeakWarning

    est = PrivateCovariance(rho=1.0, data_norm=3.0, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="read a private test fold"):
        cross_val_score(est, X, cv=3)
    est.fit(X).score(X)  # a direct call (the user's own data) does not warn


def test_a_bool_random_state_is_refused_before_spending():
    # random_state=True passed the Interval(Integral) constraint (bool is an int)
    # and was refused by the generator only after the budget was charged.
    budget = PrivacyBudget(rho=10.0)
    est = PrivateCovariance(rho=0.5, data_norm=5.0, budget=budget, random_state=True)
    with pytest.raises(ValueError, match="random_state"):
        est.fit(X)
    assert budget.ledger() == []


def test_generator_clones_without_a_budget_draw_different_noise():
    # Without a budget there are no event ids to tell two clones apart; a copied
    # Generator must not make them draw the same noise (only an int seed makes a
    # fit without a budget reproducible).
    est = PrivateCovariance(
        method="gauss", rho=0.5, data_norm=1.0, random_state=np.random.default_rng(7)
    )
    a = clone(est).fit(X).location_
    b = clone(est).fit(X).location_
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("cls", [PrivateCovariance, TailSensitiveCovariance])
@pytest.mark.parametrize("data_norm", [3e-162, 1e-141, 1e141])
def test_radii_where_float64_loses_the_clipping_are_refused(cls, data_norm):
    # At data_norm = 3e-162 squared norms underflowed, rows went unclipped, and an
    # audit of the mean bounded epsilon below by 8.1 against a claim of 2.75.
    budget = PrivacyBudget(rho=10.0)
    with pytest.raises(ValueError, match="outside"):
        cls(rho=1.0, data_norm=data_norm, budget=budget).fit(X)
    assert budget.ledger() == []


def test_emcov_with_one_feature_spends_its_whole_budget():
    est = PrivateCovariance(method="eigen", rho=1.0, data_norm=1.0)
    assert est.planned_costs(1) == [ZCDP(0.1), ZCDP(0.9)]
    fitted = est.set_params(random_state=0).fit(X[:, :1])
    assert fitted.privacy_spent_ == ZCDP(1.0)


def test_the_utility_check_reads_the_prediction_built_from_the_checked_mechanisms():
    # The template builds every planned mechanism once (the check before the
    # spend) and predicts from those very objects: the prediction the utility
    # check reads is the covariance's formula applied to the checked
    # mechanisms' own variances, computed before any budget is charged.
    from dpgauss.releases._covariance import filled_prediction

    seen = {}

    class Spy(PrivateCovariance):
        def _predict_error(self, plan, data, mechanisms):
            seen["mechanisms"] = mechanisms
            seen["prediction"] = super()._predict_error(plan, data, mechanisms)
            return seen["prediction"]

        def _check_utility(self, plan, data):
            seen["read"] = data.prediction
            seen["spent"] = budget.spent()
            super()._check_utility(plan, data)

    budget = PrivacyBudget(rho=1.0)
    X = np.random.default_rng(0).normal(size=(200, 3))
    Spy(method="gauss", rho=0.5, data_norm=4.0, budget=budget).fit(X)
    assert seen["read"] is seen["prediction"]
    assert seen["spent"] == ZCDP(0.0)
    again = filled_prediction(seen["mechanisms"], "gauss", 3, 4.0)
    assert again == seen["prediction"]
    assert seen["prediction"].baseline == 16.0 / math.sqrt(3)


def test_a_release_planned_without_a_factory_fails_before_the_spend():
    # The check before the spend builds every planned release with its
    # factory; one without a factory is a bug in the estimator, raised before
    # anything is charged (never a silently unchecked release).
    from dataclasses import replace

    from dpgauss.accounting._plan import PlanError, ReleasePlan

    class Unchecked(PrivateCovariance):
        def _build_plan(self, total, data):
            plan = super()._build_plan(total, data)
            return ReleasePlan(total, [replace(r, make=None) for r in plan.entries])

    budget = PrivacyBudget(rho=1.0)
    X = np.random.default_rng(0).normal(size=(50, 2))
    est = Unchecked(method="gauss", rho=0.5, data_norm=3.0, budget=budget)
    with pytest.raises(PlanError, match="without a factory"):
        est.fit(X)
    assert budget.spent() == ZCDP(0.0)


@pytest.mark.parametrize(
    "cls", [cls for _, cls in all_estimators()], ids=lambda cls: cls.__name__
)
def test_every_estimator_refuses_a_useless_fit_by_default(cls):
    # The refusal is the default everywhere; spending on a fit predicted no
    # better than its baseline is an explicit opt-in.
    assert cls().get_params()["on_useless"] == "raise"
    with pytest.raises(ValueError, match="on_useless"):
        cls(on_useless="ignore")._validate_all_params()


def test_a_refused_fit_spends_nothing_and_is_not_fitted():
    budget = PrivacyBudget(rho=1.0)
    est = PrivateCovariance(rho=1e-6, data_norm=1.0, budget=budget)
    with pytest.raises(UselessFitError, match="Nothing was spent"):
        est.fit(X)
    assert budget.ledger() == []
    assert not hasattr(est, "privacy_spent_")
    # The same refusal for every dataset of that shape: public values only.
    with pytest.raises(UselessFitError):
        est.fit(np.zeros_like(X))


def test_a_refusal_is_predicted_from_the_shape_alone():
    # _predicted_refusal runs the fit's own pre-spend steps on n and d: it
    # names the refusal fit() would raise, and None where fit() would spend.
    est = PrivateCovariance(rho=1e-6, data_norm=1.0)
    why = est._predicted_refusal(*X.shape)
    with pytest.raises(UselessFitError) as raised:
        est.fit(X)
    assert why is not None
    assert str(raised.value).startswith(why)
    assert (
        PrivateCovariance(rho=1.0, data_norm=1.0)._predicted_refusal(10**6, 2) is None
    )


def test_a_fit_predicted_far_beyond_the_non_private_error_warns_and_spends():
    # A box mean at epsilon 0.1, n = 1,000, d = 5: Laplace scale 2d/(n eps) = 0.1
    # per coordinate, l2 error about 0.1 sqrt(2 d) = 0.32, against a sampling
    # error sqrt(d fill / n) = 0.013 at a third of the reference fill (24x):
    # not below its baseline (it is the baseline), so it spends, but it warns
    # first (the whole-box mean's own warning, its noise being set by the box:
    # the cube noise's sd 0.075 per coordinate is 10 sampling errors of a
    # column of sd 0.075 sqrt(1000) / 10 = 0.24 half-widths, above 0.05); at
    # epsilon 10 (0.0032, 0.25x; 0.0024 half-widths) it is silent.
    from dpgauss import PrivateMean

    Z = np.random.default_rng(1).uniform(-1, 1, size=(1000, 5))
    budget = PrivacyBudget(epsilon=20.0)
    with pytest.warns(UtilityWarning, match="times its sampling error"):
        PrivateMean(bounds=(-1, 1), epsilon=0.1, budget=budget).fit(Z)
    assert len(budget.ledger()) > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateMean(bounds=(-1, 1), epsilon=10.0).fit(Z)


def _takes_bounds():
    """Every public estimator with a ``bounds`` box parameter."""
    return [c for _, c in all_estimators() if "bounds" in c().get_params()]


@pytest.mark.parametrize("cls", _takes_bounds(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("width", [2, 4])
def test_bounds_of_another_width_are_refused_before_the_spend(cls, width):
    # A newcomer's run: bounds with 3 values per side on 4-feature rows were
    # charged in full, then raised (every estimator but the scaler).
    rows = np.random.default_rng(1).normal(size=(300, 3))
    y = np.arange(300) % 2
    budget = PrivacyBudget(rho=10.0)
    params = {"bounds": (np.full(width, -5.0), np.full(width, 5.0)), "rho": 1.0}
    if "classes" in cls().get_params():
        params["classes"] = [0, 1]
    if "target_bounds" in cls().get_params():
        params["target_bounds"] = (-5.0, 5.0)
    est = cls(**params, budget=budget)
    with pytest.raises(ValueError, match=f"{width} values per side but X has 3"):
        est.fit(rows, y)
    assert budget.ledger() == []


@pytest.mark.parametrize("shape", [(0, 4), (1, 4), (50, 0)])
def test_too_few_rows_or_no_features_name_the_problem_with_a_budget(shape):
    # With a budget, the early price check built a plan for n = 0 and raised
    # ZeroDivisionError (PrivateMean); the validation's message comes first.
    from dpgauss import PrivateMean

    budget = PrivacyBudget(rho=1.0)
    with pytest.raises(ValueError, match="Found array with"):
        PrivateMean(rho=0.5, budget=budget).fit(np.empty(shape))
    assert budget.ledger() == []


def _chunked_dtype_estimators(d):
    import dpgauss

    box = (-10.0 * np.ones(d), 10.0 * np.ones(d))
    kw = {"rho": 0.5, "random_state": 0, "on_useless": "warn"}
    return [
        dpgauss.PrivateCovariance(data_norm=30.0, **kw),
        # A far location: the pairs path (n beyond one group of the pairing).
        dpgauss.TailSensitiveCovariance(
            data_norm=3e4, location=[-1e4] * d, **{**kw, "rho": 0.01}
        ),
        dpgauss.PrivateGaussianEstimator(**kw),
        dpgauss.PrivateMean(bounds=box, **kw),
        dpgauss.PrivatePCA(n_components=2, method="tail", data_norm=30.0, **kw),
        dpgauss.PrivateStandardScaler(bounds=box, **kw),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.float16, ">f4"])
def test_a_narrow_memmap_is_read_in_chunks_and_released_as_its_float64_copy(
    tmp_path, dtype, assert_same_fit
):
    # A float32, float16, big-endian or integer file is not converted whole: each
    # pass converts the chunks it reads, exactly as a whole conversion would,
    # so the release equals the one on the float64 copy bit for bit.
    from dpgauss.base import CHUNKED_DTYPES

    rng = np.random.default_rng(0)
    n, d = 20_000, 4
    X = rng.standard_normal((n, d)) * [1.0, 2.0, 3.0, 0.5] * 10
    np.save(tmp_path / "narrow.npy", X.astype(dtype))
    np.save(tmp_path / "wide.npy", X.astype(dtype).astype(np.float64))
    narrow = np.load(tmp_path / "narrow.npy", mmap_mode="r")
    wide = np.load(tmp_path / "wide.npy", mmap_mode="r")
    for est in _chunked_dtype_estimators(d):
        assert type(est).__name__ in CHUNKED_DTYPES
        assert est._validate_rows(narrow) is narrow  # kept, not converted
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a, b = clone(est).fit(narrow), clone(est).fit(wide)
        assert_same_fit(a, b)
    assert narrow.dtype == dtype  # the caller's file is untouched
    np.testing.assert_array_equal(narrow, X.astype(dtype))


def test_a_narrow_memmap_with_a_non_finite_value_is_refused_before_the_spend(
    tmp_path,
):
    import dpgauss
    from dpgauss.accounting import PrivacyBudget

    X = np.random.default_rng(0).standard_normal((9_000, 3)).astype(np.float32)
    X[8_500, 1] = np.inf
    np.save(tmp_path / "x.npy", X)
    budget = PrivacyBudget(rho=1.0)
    est = dpgauss.PrivateCovariance(budget=budget, rho=0.5, data_norm=10.0)
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.fit(np.load(tmp_path / "x.npy", mmap_mode="r"))
    assert budget.spent().rho == 0.0
