"""SubsampleAggregate: accounting, errors before spending, accuracy, failures."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.covariance import EmpiricalCovariance
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP, ApproxDP, PureDP, approx_to_zcdp
from dpgauss.accounting._composition import compose
from dpgauss.base import FitData
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.ensemble._group_fits import min_group_rows
from dpgauss.exceptions import (
    PrivateTestFailedError,
    UselessFitError,
    UtilityWarning,
)
from dpgauss.releases._winsorized import winsorized_min_groups

BETA = np.array([1.0, -2.0, 0.5])


def _regression(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ BETA + rng.normal(size=n)


class _Raises(BaseEstimator):
    """Fails on groups whose first row is positive (a data-dependent error)."""

    def fit(self, X, y=None):
        if X[0, 0] > 0:
            raise RuntimeError("data-dependent failure")
        warnings.warn("a data-dependent warning", UserWarning, stacklevel=1)
        self.location_ = X.mean(axis=0)
        return self


class _FarthestRow(BaseEstimator):
    """Centers its rows on their non-private mean and returns the farthest one:
    one row moves it arbitrarily far."""

    def fit(self, X, y=None):
        offsets = X - X.mean(axis=0)
        self.location_ = X[np.argmax(np.linalg.norm(offsets, axis=1))]
        return self


@pytest.mark.parametrize(
    ("params", "total"),
    [
        ({"rho": 0.5}, ZCDP(0.5)),
        ({"epsilon": 1.0}, PureDP(1.0)),
        ({"rho": 0.5, "radius": 2.0}, ZCDP(0.5)),
        ({"aggregator": "populous", "epsilon": 4.0, "delta": 1e-3}, None),
        (
            {"aggregator": "populous", "epsilon": 4.0, "delta": 1e-3, "radius": 3.0},
            None,
        ),
    ],
)
def test_the_ledger_records_exactly_the_plan(params, total):
    X, y = _regression(6000)
    if total is None:
        total = ApproxDP(params["epsilon"], params["delta"])
    budget = PrivacyBudget(**_budget_kwargs(total))
    est = SubsampleAggregate(
        LinearRegression(),
        budget=budget,
        random_state=0,
        n_groups=400,
        on_useless="warn",
        **params,
    )
    planned = est.planned_costs(3)
    est.fit(X, y)
    assert [e.cost for e in budget.ledger()] == planned
    assert est.privacy_spent_ == compose(total, planned)
    assert _within(est.privacy_spent_, total)


def _budget_kwargs(total):
    if isinstance(total, ZCDP):
        return {"rho": 10.0}
    if isinstance(total, PureDP):
        return {"epsilon": 10.0}
    return {"epsilon": 10.0, "delta": 1e-2}


def _within(spent, total):
    if isinstance(total, ZCDP):
        return spent.rho <= total.rho * (1 + 1e-12)
    return spent.epsilon <= total.epsilon * (1 + 1e-12)


def test_winsorized_linear_regression_is_accurate():
    # 400 groups of 50 rows: each candidate has sd ~ 1/sqrt(47) ~ 0.15 per
    # coefficient; the clipped mean's noise is 2R/k / sqrt(2 rho') per entry,
    # about 2 * 0.5 / 400 / 0.8 ~ 0.003; sampling error of the full fit ~ 0.007.
    X, y = _regression(20000)
    est = SubsampleAggregate(
        LinearRegression(), statistic=("coef_", "intercept_"), rho=0.5, random_state=0
    ).fit(X, y)
    assert np.linalg.norm(est.estimator_.coef_ - BETA) < 0.05
    assert abs(est.estimator_.intercept_) < 0.05
    assert est.statistic_.shape == (4,)
    np.testing.assert_allclose(est.predict(X[:5]), est.estimator_.predict(X[:5]))
    # the per-group fits are not kept: only released values are
    assert not [k for k in vars(est) if k.startswith("estimators")]
    assert not [k for k in vars(est.estimator_) if k in ("rank_", "singular_")]


def test_populous_linear_regression_passes_and_is_accurate():
    X, y = _regression(60000)
    est = SubsampleAggregate(
        LinearRegression(),
        aggregator="populous",
        epsilon=4.0,
        delta=1e-3,
        random_state=0,
    ).fit(X, y)
    assert est.n_groups_ >= 369  # the fewest groups at this epsilon and delta
    assert np.linalg.norm(est.statistic_ - BETA) < 0.15


def test_populous_fails_honestly_and_charges():
    X = np.random.default_rng(0).standard_cauchy(size=(3000, 2)) * 1e3
    budget = PrivacyBudget(epsilon=10.0, delta=1e-3)
    est = SubsampleAggregate(
        _FarthestRow(),
        statistic="location_",
        aggregator="populous",
        epsilon=4.0,
        delta=1e-3,
        radius=1e-6,
        budget=budget,
        random_state=0,
    )
    with pytest.raises(PrivateTestFailedError, match="spent"):
        est.fit(X)
    assert len(budget.ledger()) == 2  # test and mask, both charged
    assert not hasattr(est, "statistic_")


def test_failing_and_warning_inner_fits_neither_raise_nor_warn():
    X = np.random.default_rng(0).normal(size=(2000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = SubsampleAggregate(
            _Raises(), statistic="location_", rho=1.0, random_state=0
        ).fit(X)
    assert np.all(np.abs(est.statistic_) < 0.5)


def test_a_hugely_sensitive_inner_estimator_is_still_clipped():
    X = np.random.default_rng(0).normal(size=(4000, 2))
    X[0] = 1e12
    est = SubsampleAggregate(
        _FarthestRow(), statistic="location_", rho=1.0, random_state=0
    ).fit(X)
    assert np.all(np.abs(est.statistic_) < 5.0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"estimator": None, "rho": 1.0}, "needs an estimator"),
        ({"estimator": LinearRegression(), "statistic": 3, "rho": 1.0}, "statistic"),
        (
            {"estimator": LinearRegression(), "aggregator": "populous", "rho": 1.0},
            "epsilon and delta",
        ),
        ({"estimator": LinearRegression(), "statistic": "nope_", "rho": 1.0}, "probe"),
        (
            {"estimator": LinearRegression(), "n_groups": 10**6, "rho": 1.0},
            "cannot fill",
        ),
        (
            {
                "estimator": LinearRegression(),
                "aggregator": "populous",
                "epsilon": 1.0,
                "delta": 1e-6,
            },
            "cannot fill",
        ),
    ],
)
def test_bad_input_is_refused_before_any_spend(params, message):
    X, y = _regression(3000)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-3)
    if "rho" in params:
        budget = PrivacyBudget(rho=10.0)
    est = SubsampleAggregate(budget=budget, **params)
    with pytest.raises((ValueError, TypeError), match=message):
        est.fit(X, y)
    assert budget.ledger() == []


def test_nan_rows_are_refused_and_the_data_left_alone():
    X, y = _regression(3000)
    X[5, 1] = np.nan
    copy = X.copy()
    budget = PrivacyBudget(rho=1.0)
    est = SubsampleAggregate(LinearRegression(), rho=0.5, budget=budget)
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X, y)
    assert budget.ledger() == []
    np.testing.assert_array_equal(X, copy)


def test_clones_on_one_budget_draw_independent_splits_and_noise():
    X, y = _regression(4000)
    budget = PrivacyBudget(rho=10.0)
    est = SubsampleAggregate(LinearRegression(), rho=0.5, budget=budget, random_state=0)
    a = clone(est).fit(X, y).statistic_
    b = clone(est).fit(X, y).statistic_
    assert not np.array_equal(a, b)


def test_pickle_and_pipeline():
    X, y = _regression(4000)
    pipe = make_pipeline(
        SubsampleAggregate(
            LinearRegression(),
            statistic=("coef_", "intercept_"),
            rho=0.5,
            random_state=0,
        )
    ).fit(X, y)
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again.predict(X[:3]), pipe.predict(X[:3]))


def test_callable_statistic_and_location():
    X = np.random.default_rng(0).normal(loc=1e6, size=(5000, 2))
    est = SubsampleAggregate(
        EmpiricalCovariance(),
        statistic=lambda e: e.location_,
        rho=1.0,
        random_state=0,
    ).fit(X)
    assert est.estimator_ is None
    assert np.all(np.abs(est.statistic_ - 1e6) < 0.2)


class _Tripwire(BaseException):
    pass


class _Hostile(BaseEstimator):
    """Re-arms floating-point errors for everything after it and raises a
    BaseException on a far row: an inner fit that must not change whether a
    charged fit completes."""

    def fit(self, X, y=None):
        np.seterr(all="raise")
        if np.abs(X).max() > 1e6:
            raise _Tripwire
        self.location_ = X.max(axis=0)
        return self


@pytest.mark.parametrize("aggregator", ["winsorized", "populous"])
def test_hostile_inner_fits_cannot_make_the_outcome_depend_on_a_row(aggregator):
    old = np.geterr()
    try:
        X = np.random.default_rng(0).uniform(size=(3000, 1))
        Y = X.copy()
        Y[0] = 1e300
        params = {"rho": 1.0}
        if aggregator == "populous":
            params = {"epsilon": 4.0, "delta": 1e-3, "radius": 1.0}
        for Z in (X, Y):
            est = SubsampleAggregate(
                _Hostile(),
                statistic="location_",
                aggregator=aggregator,
                n_groups=400,
                random_state=0,
                **params,
            )
            est.fit(Z)
            assert np.isfinite(est.statistic_).all()
    finally:
        np.seterr(**old)


# -- the PSD space ---------------------------------------------------------------


def _gaussian(n, d, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T + np.eye(d)
    return rng.multivariate_normal(np.zeros(d), cov, size=n) * scale, cov * scale**2


def _thompson(A, B):
    Li = np.linalg.inv(np.linalg.cholesky(B))
    lam = np.linalg.eigvalsh(Li @ A @ Li.T)
    return max(lam.max(), 1.0 / lam.min()) - 1.0


def _psd(**params):
    base = {
        "estimator": EmpiricalCovariance(),
        "statistic": "covariance_",
        "aggregator": "populous",
        "space": "psd",
        "epsilon": 2.0,
        "delta": 1e-5,
        "random_state": 0,
    }
    return SubsampleAggregate(**{**base, **params})


@pytest.mark.parametrize("scale", [1e-60, 1.0, 1e70])
def test_psd_covariance_is_scale_free_and_coarsely_accurate(scale):
    """No bound on the covariance's size: the same fit at any scale, a constant
    factor from the truth at n = 1e5 and a large budget (the space is coarse;
    see the user guide)."""
    X, cov = _gaussian(100_000, 2, scale)
    est = _psd(epsilon=8.0, delta=1e-4).fit(X)
    out = est.statistic_
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(out, out.T)
    assert np.linalg.eigvalsh(out).min() > 0
    assert _thompson(out, cov) < 1.5
    assert est.radius_ > 0
    assert est.sensitivity_ > 0
    assert isinstance(est.estimator_, EmpiricalCovariance)
    np.testing.assert_array_equal(est.estimator_.covariance_, out)


@pytest.mark.parametrize("radius", ["auto", 0.7])
def test_psd_ledger_records_exactly_the_plan(radius):
    X, _ = _gaussian(150_000, 2)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
    # Spends even where the test is predicted to fail: the ledger is the point.
    est = _psd(budget=budget, radius=radius, on_useless="warn")
    planned = est.planned_costs(2)
    names = [e.label for e in est._pricing_plan(2).releases()]
    assert [n.split(":")[-1] for n in names][-2:] == ["mask", "scale"]
    try:
        est.fit(X)
    except PrivateTestFailedError:
        pass
    assert [e.cost for e in budget.ledger()] == planned
    assert compose(ApproxDP(2.0, 1e-5), planned).epsilon <= 2.0 * (1 + 1e-12)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"aggregator": "winsorized", "rho": 1.0}, "populous"),
        ({"statistic": "location_"}, "square"),
        ({"radius": 50.0}, "too large"),
        ({"n_groups": 30}, "at least"),
    ],
)
def test_psd_bad_parameters_are_refused_before_any_spend(params, message):
    X, _ = _gaussian(20_000, 2)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
    if "rho" in params:
        params = {**params, "epsilon": None, "delta": None}
    est = _psd(budget=budget, **params)
    with pytest.raises(ValueError, match=message):
        est.fit(X)
    assert budget.ledger() == []


class _HostileMatrix(BaseEstimator):
    """Returns, by its rows, NaN, inf, a negative, a huge, a tiny, a non-symmetric
    or an outer-product matrix of the farthest row from the non-private mean."""

    def fit(self, X, y=None):
        d = X.shape[1]
        kind = int(abs(X[0, 0]) * 1e6) % 8
        far = X[np.argmax(np.linalg.norm(X - X.mean(axis=0), axis=1))]
        self.covariance_ = [
            np.full((d, d), np.nan),
            np.full((d, d), np.inf),
            -np.eye(d),
            np.eye(d) * 2.0**600,
            np.eye(d) * 1e-300,
            np.triu(np.ones((d, d))),
            np.outer(far, far) + np.eye(d) * 1e-3,
            np.cov(X.T),
        ][kind]
        return self


def test_psd_hostile_inner_fits_never_raise_after_the_spend():
    X, _ = _gaussian(60_000, 2)
    Y = X.copy()
    Y[0] = 1e300
    for Z in (X, Y):
        budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
        est = _psd(
            estimator=_HostileMatrix(),
            epsilon=4.0,
            delta=1e-3,
            budget=budget,
            on_useless="warn",  # the paths after the spend are the point
        )
        try:
            est.fit(Z)
            assert np.isfinite(est.statistic_).all()
        except PrivateTestFailedError:
            assert not hasattr(est, "statistic_")
        assert len(budget.ledger()) == 4  # radius, test, mask, scale


def test_psd_public_radius_with_useless_noise_warns_before_the_spend():
    X, _ = _gaussian(20_000, 2)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
    est = _psd(budget=budget, radius=1.0, n_groups=2600, on_useless="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(X)
        except PrivateTestFailedError:
            pass
    assert any(
        issubclass(w.category, UtilityWarning) and "mostly noise" in str(w.message)
        for w in caught
    )


# -- too few groups for the winsorized searches ---------------------------------------
def _k_min(total, p, radius="auto"):
    est = SubsampleAggregate(LinearRegression(), radius=radius)
    return winsorized_min_groups(est._pricing_plan(3, total=total), p)


def test_too_few_groups_refuse_before_the_spend():
    X, y = _regression(6000)
    budget = PrivacyBudget(rho=10.0)
    est = SubsampleAggregate(
        LinearRegression(), epsilon=1.0, delta=1e-6, n_groups=400, budget=budget
    )
    with pytest.raises(UselessFitError, match=r"400 groups are too few.*Nothing"):
        est.fit(X, y)
    assert budget.ledger() == []
    assert not hasattr(est, "statistic_")


def test_too_few_groups_warn_before_the_spend_and_charge_the_plan():
    X, y = _regression(6000)
    budget = PrivacyBudget(rho=10.0)
    est = SubsampleAggregate(
        LinearRegression(),
        epsilon=1.0,
        delta=1e-6,
        n_groups=400,
        budget=budget,
        random_state=0,
        on_useless="warn",
    )
    planned = est.planned_costs(3)
    spends_when_warned = []

    def record(*args, **kwargs):
        spends_when_warned.append(len(budget.ledger()))

    with warnings.catch_warnings():
        warnings.simplefilter("always", UtilityWarning)
        warnings.showwarning = record
        est.fit(X, y)
    assert spends_when_warned == [0]  # one warning, before anything was spent
    with pytest.warns(UtilityWarning, match=r"400 groups are too few.*at least 1\d{3}"):
        est.fit(X, y)
    # the warning changes nothing in what is charged
    assert [e.cost for e in budget.ledger()] == planned + planned
    assert est.privacy_spent_ == compose(ZCDP(approx_to_zcdp(1.0, 1e-6)), planned)


def test_auto_takes_k_min_groups_when_n_allows_and_refuses_when_not():
    X, y = _regression(12000)
    total = ZCDP(approx_to_zcdp(1.0, 1e-6))
    est = SubsampleAggregate(
        LinearRegression(), epsilon=1.0, delta=1e-6, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est.fit(X, y)
    # 12000 // 25 = 480 groups before; the searches need k_min, and groups of
    # 8 rows or more (2 (q + 1), q = 3 parameters) allow it
    assert est.n_groups_ == _k_min(total, 3) > 480
    assert est.group_size_ >= min_group_rows(3, 3) == 8
    assert np.linalg.norm(est.statistic_ - BETA) < 1.0
    # too few rows for k_min groups of 8: the most groups of 8 rows n allows,
    # refused by default, and spent with a warning on request
    small = slice(0, 6000)
    with pytest.raises(UselessFitError, match="too few"):
        est.fit(X[small], y[small])
    with pytest.warns(UtilityWarning, match="too few"):
        est.set_params(on_useless="warn").fit(X[small], y[small])
    assert est.n_groups_ == 6000 // 8


@pytest.mark.parametrize("n", [1000, 10_000, 100_000])
def test_auto_groups_are_never_smaller_than_the_statistic_needs(n):
    # a 6-parameter linear model at pure epsilon 1: k_min is far above
    # n / 14, so no sound split exists and the fit refuses before the spend
    # (groups of 2-3 rows gave the truth shrunk 5x)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 5))
    y = X.sum(axis=1) + rng.normal(size=n)
    budget = PrivacyBudget(epsilon=1.0)
    est = SubsampleAggregate(
        LinearRegression(),
        statistic=("coef_", "intercept_"),
        epsilon=1.0,
        budget=budget,
    )
    with pytest.raises(UselessFitError, match="Nothing was spent"):
        est.fit(X, y)
    assert budget.ledger() == []
    if n == 1000:  # spent on request: groups of 14 rows, not 2
        with pytest.warns(UtilityWarning, match="too few"):
            est.set_params(on_useless="warn", random_state=0).fit(X, y)
        assert est.group_size_ >= min_group_rows(6, 5) == 14


def test_explicit_groups_below_the_floor_are_refused_before_the_spend():
    X, y = _regression(20000)
    budget = PrivacyBudget(rho=10.0)
    est = SubsampleAggregate(LinearRegression(), rho=10.0, n_groups=5000, budget=budget)
    with pytest.raises(UselessFitError, match="groups of 4 rows are too small"):
        est.fit(X, y)
    assert budget.ledger() == []


def test_enough_groups_do_not_warn():
    X, y = _regression(20000)
    est = SubsampleAggregate(LinearRegression(), rho=0.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est.fit(X, y)
    assert est.n_groups_ == 20000 // 25  # above k_min (about 250 at p = 3)


def test_auto_groups_of_a_classifier_are_larger():
    X, _ = _regression(20000)
    y = (X[:, 0] + np.random.default_rng(1).normal(size=20000) > 0).astype(int)
    est = SubsampleAggregate(LogisticRegression(), rho=10.0, random_state=0)
    est.fit(X, y)
    assert (est.n_groups_, est.group_size_) == (200, 100)  # max(100, 10 d) rows


# -- factories: one build of each release serves the check and the fit -------------
@pytest.mark.parametrize(
    "params",
    [
        {"rho": 0.5},
        {"epsilon": 1.0, "radius": 2.0},
        {"aggregator": "populous", "epsilon": 4.0, "delta": 1e-3},
        {"aggregator": "populous", "epsilon": 4.0, "delta": 1e-3, "radius": 3.0},
        {
            "estimator": EmpiricalCovariance(),
            "statistic": "covariance_",
            "aggregator": "populous",
            "space": "psd",
            "epsilon": 4.0,
            "delta": 1e-3,
        },
        {
            "estimator": EmpiricalCovariance(),
            "statistic": "covariance_",
            "aggregator": "populous",
            "space": "psd",
            "epsilon": 4.0,
            "delta": 1e-3,
            "radius": 0.5,
        },
    ],
)
def test_every_planned_release_has_a_factory_that_builds(params):
    params = {"estimator": LinearRegression(), **params}
    est = SubsampleAggregate(**params)
    n, d = 60_000, 3  # the plan of a fit: its rows are validated (X given)
    data = est._prepare_fit(FitData(n=n, d=d, X=np.zeros((n, d)), y=np.zeros(n)))
    plan = est._build_plan(est._privacy_total(), data)
    for release in plan.releases():
        assert release.make is not None
        release.build()
    priced = est._pricing_plan(3)
    assert all(r.make is not None for r in priced.releases())
    assert priced.costs() == plan.costs()


@pytest.mark.parametrize(
    ("params", "release"),
    [({"rho": 1e-30}, "center"), ({"epsilon": 1e-30, "radius": 1.0}, "center")],
)
def test_a_budget_float64_cannot_calibrate_is_refused_before_the_spend(params, release):
    X, y = _regression(4000)
    total = ZCDP(1.0) if "rho" in params else PureDP(1.0)
    budget = PrivacyBudget(**_budget_kwargs(total))
    est = SubsampleAggregate(LinearRegression(), budget=budget, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        message = f"SubsampleAggregate: the release '{release}'"
        with pytest.raises(ValueError, match=message):
            est.fit(X, y)
    assert budget.ledger() == []


def test_n_jobs_releases_the_same_statistic():
    # Group fits in joblib's workers come back in group order: the same
    # candidates, so the same release for the same seed.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 2))
    y = (X @ np.array([1.0, -1.0]) + rng.standard_normal(4000) > 0).astype(int)
    fits = [
        SubsampleAggregate(
            LogisticRegression(),
            classes=[0, 1],
            rho=1.0,
            bound=10.0,
            random_state=0,
            n_jobs=n_jobs,
        ).fit(X, y)
        for n_jobs in (None, 2)
    ]
    np.testing.assert_array_equal(fits[0].statistic_, fits[1].statistic_)
    assert fits[0].privacy_spent_ == fits[1].privacy_spent_
