"""The private scorer: charge first, clip, map non-finite values, noise, never repeat.

Statistical properties of the release (the privacy claim) are audited in
``tests/audit/test_scorer_audit.py``; here: accounting, the exact clipped mean,
calibration, independence of noise across calls, and scikit-learn integration.
"""

import math
import os
import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold, cross_val_score, cross_validate

from dpgauss import PrivacyBudget, PrivateCovariance
from dpgauss.accounting import ZCDP, PureDP, approx_to_zcdp
from dpgauss.exceptions import BudgetExceededError, PrivacyAccountingError
from dpgauss.mechanisms import GaussianMechanism, LaplaceMechanism
from dpgauss.model_selection import PrivateScorer, make_private_scorer
from dpgauss.model_selection._scorer import _unit_mean
from dpgauss.utils import fit_generator
from dpgauss.utils._leak import warn_if_scored_in_search


class FirstColumn(BaseEstimator):
    """A public stand-in model: the per-sample score of a row is its first entry."""

    def fit(self, X, y=None):
        return self

    def score_samples(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]


class Overflowing(FirstColumn):
    """score_samples overflows on large rows (would warn without np.errstate)."""

    def score_samples(self, X):
        return np.exp(np.asarray(X, dtype=np.float64)[:, 0])


class Spy(FirstColumn):
    """Records what the ledger held when score_samples was called."""

    def __init__(self, budget=None):
        self.budget = budget

    def score_samples(self, X):
        self.seen_events_ = len(self.budget.ledger())
        return super().score_samples(X)


class Untouchable(FirstColumn):
    def score_samples(self, X):
        raise AssertionError("the test fold was read")


class Tattletale(FirstColumn):
    """Calls the leak check from score and score_samples, as estimators will."""

    def score_samples(self, X):
        warn_if_scored_in_search(self)
        return super().score_samples(X)

    def score(self, X, y=None):
        warn_if_scored_in_search(self)
        return float(np.mean(self.score_samples(X)))


@pytest.fixture
def budget():
    return PrivacyBudget(rho=100.0)


# -- construction ----------------------------------------------------------------------
def test_costs_and_mechanisms(budget):
    gauss = make_private_scorer(budget=budget, rho=0.5, bounds=(-1, 1))
    assert gauss.cost == ZCDP(0.5)
    assert isinstance(gauss._mechanism(10), GaussianMechanism)
    laplace = make_private_scorer(budget=budget, epsilon=0.5, bounds=(-1, 1))
    assert laplace.cost == PureDP(0.5)
    assert isinstance(laplace._mechanism(10), LaplaceMechanism)
    approx = make_private_scorer(budget=budget, epsilon=1.0, delta=1e-6, bounds=(0, 1))
    assert approx.cost == ZCDP(approx_to_zcdp(1.0, 1e-6))


def test_noise_scale_is_calibrated_to_the_fold_size(budget):
    # Gaussian: sigma = (high - low) (1/n + 2^-50) / sqrt(2 rho).
    scorer = make_private_scorer(budget=budget, rho=0.02, bounds=(-20.0, 0.0))
    expected = 20.0 * (1 / 1000 + 2.0**-50) / math.sqrt(0.04)
    assert scorer.noise_scale(1000) == pytest.approx(expected, rel=1e-15)
    # Laplace: b = (high - low) (1/n + 2^-50) / epsilon.
    scorer = make_private_scorer(budget=budget, epsilon=0.5, bounds=(0.0, 1.0))
    assert scorer.noise_scale(10) == pytest.approx((0.1 + 2.0**-50) / 0.5, rel=1e-15)
    with pytest.raises(ValueError, match="n_test must be >= 1"):
        scorer.noise_scale(0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bounds": (1.0, 0.0)}, ValueError, "low < high"),
        ({"bounds": (0.0, np.inf)}, ValueError, "finite"),
        ({"bounds": (-1e308, 1e308)}, ValueError, "overflows"),
        ({"bounds": 1.0}, ValueError, "pair"),
        ({"bounds": (0.0, "1")}, TypeError, "real number"),
        ({"score": "f1"}, ValueError, "log_likelihood"),
        ({"bounds": None}, ValueError, "bounds are required"),
        ({"rho": None}, ValueError, "no privacy parameter"),
        ({"epsilon": 1.0}, ValueError, "not a mix"),
    ],
)
def test_bad_parameters_are_refused(budget, kwargs, error, match):
    params = {"budget": budget, "rho": 0.1, "bounds": (0.0, 1.0), **kwargs}
    with pytest.raises(error, match=match):
        make_private_scorer(**params)


def test_budget_is_required_and_of_the_right_kind():
    with pytest.raises(TypeError, match="PrivacyBudget"):
        make_private_scorer(budget=None, rho=0.1, bounds=(0, 1))
    with pytest.raises(PrivacyAccountingError, match=r"pure|zCDP|rho"):
        make_private_scorer(budget=PrivacyBudget(epsilon=1.0), rho=0.1, bounds=(0, 1))


# -- the clipped mean ------------------------------------------------------------------
def test_non_finite_values_map_to_the_bounds_without_warnings():
    # NaN and -inf count as low (u = 0), +inf as high (u = 1); others are clipped.
    values = [np.nan, -np.inf, np.inf, 0.5, 7.0, -3.0, 1e308]
    assert _unit_mean(values, 0.0, 1.0) == (0 + 0 + 1 + 0.5 + 1 + 0 + 1) / 7
    # (v - low) overflows for v = 1e308, low = -1e308 / 2: u = inf, clipped to 1.
    assert _unit_mean([1e308, -1e308], -0.5e308, 0.5e308) == 0.5


def test_unit_mean_is_within_its_rounding_bound():
    # |m - S/n| <= 2u + u^2 with u = 2^-53 (see _unit_mean); S computed exactly
    # as a fraction.
    from fractions import Fraction

    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 50))
        values = rng.uniform(-0.2, 1.2, size=n) * rng.choice([1, 1e-300, 1e300])
        m = _unit_mean(values, 0.0, 1.0)
        unit = np.clip(values, 0.0, 1.0)
        exact = sum(Fraction(float(v)) for v in unit) / n
        assert abs(Fraction(m) - exact) <= Fraction(2.0**-52 + 2.0**-106)


def test_overflow_in_score_samples_warns_nothing(budget):
    # pytest turns every warning into an error: an overflow warning would fail here.
    scorer = make_private_scorer(budget=budget, rho=1.0, bounds=(0.0, 10.0))
    X = np.array([[1000.0], [0.0], [-1000.0]])
    assert math.isfinite(scorer(Overflowing(), X))


def test_a_fold_with_nan_or_infinity_is_refused_before_the_charge(budget):
    # It used to be charged, then read: whether a score or an error came back
    # depended on a private row after the spend. Refused first, as the fits
    # refuse such rows; targets of another length too.
    scorer = make_private_scorer("accuracy", budget=budget, rho=1.0)
    for X in (np.array([[1.0], [np.nan]]), np.array([[np.inf], [0.0]])):
        with pytest.raises(ValueError, match="NaN or infinity; nothing was charged"):
            scorer(FirstColumn(), X, np.array([0, 1]))
    with pytest.raises(ValueError, match="2 rows but 3 targets"):
        scorer(FirstColumn(), np.zeros((2, 1)), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="needs the test fold's targets"):
        scorer(FirstColumn(), np.zeros((2, 1)))
    assert budget.ledger() == []


def test_a_malformed_fold_is_refused_before_the_charge(budget):
    # A newcomer's run: a fold of another width, or of strings, was charged,
    # then raised in predict; labels outside the public classes were scored
    # and charged without a word although the fit refuses them.
    from dpgauss import PrivateLinearDiscriminantAnalysis

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 4)), np.arange(200) % 2
    lda = PrivateLinearDiscriminantAnalysis(
        classes=[0, 1], bounds=(-4.0, 4.0), rho=1.0, random_state=0
    ).fit(X, y)
    scorer = make_private_scorer("accuracy", budget=budget, rho=0.1)
    with pytest.raises(ValueError, match="3 features but the model was fitted on 4"):
        scorer(lda, X[:, :3], y)
    with pytest.raises(ValueError, match="not numeric"):
        scorer(lda, np.full((5, 4), "a"), y[:5])
    with pytest.raises(
        ValueError, match=r"outside the model's public classes \[0, 1\]"
    ):
        scorer(lda, X[:5], np.array([0, 1, 7, 0, 1]))
    assert budget.ledger() == []
    assert 0.0 <= scorer(lda, X[:50], y[:50]) <= 1.0  # a well-formed fold pays
    assert len(budget.ledger()) == 1


# -- one call: pay, then read ----------------------------------------------------------
def test_the_budget_is_charged_before_the_fold_is_read(budget):
    scorer = make_private_scorer(budget=budget, rho=0.25, bounds=(0, 1))
    spy = Spy(budget)
    scorer(spy, np.zeros((5, 1)))
    assert spy.seen_events_ == 1
    (event,) = budget.ledger()
    assert event.cost == ZCDP(0.25)
    assert event.mechanism == "gaussian:score"
    assert event.estimator == "PrivateScorer(Spy)"


def test_a_refused_spend_reads_nothing():
    budget = PrivacyBudget(rho=0.1)
    scorer = make_private_scorer(budget=budget, rho=0.2, bounds=(0, 1))
    with pytest.raises(BudgetExceededError, match="budget exceeded"):
        scorer(Untouchable(), np.zeros((5, 1)))
    assert budget.ledger() == []


def test_a_call_is_a_spend_then_the_audited_release(budget):
    # The audit (tests/audit/test_scorer_audit.py) runs ``_release``; a call is
    # exactly one spend and then ``_release`` with the call's own generator.
    scorer = make_private_scorer(budget=budget, rho=0.5, bounds=(0, 1), random_state=7)
    X = np.array([[0.2], [0.9], [5.0]])
    value = scorer(FirstColumn(), X)
    (event,) = budget.ledger()
    again = scorer._release(
        FirstColumn(), X, None, scorer._mechanism(3), fit_generator(7, [event.id])
    )
    assert value == again


def test_two_calls_never_share_noise_even_from_copies(budget):
    # Scores of 0 in bounds (-10, 10): the mean sits mid-range, where the
    # clipping of the released value (noise sd 5) rarely binds.
    scorer = make_private_scorer(
        budget=budget, rho=0.5, bounds=(-10, 10), random_state=0
    )
    twin = pickle.loads(pickle.dumps(scorer))  # as a worker process receives it
    X = np.zeros((4, 1))
    values = [
        scorer(FirstColumn(), X),
        twin(FirstColumn(), X),
        scorer(FirstColumn(), X),
    ]
    assert len(set(values)) == 3
    assert len(budget.ledger()) == 3


def test_an_int_seed_on_a_fresh_ledger_reproduces():
    def run():
        budget = PrivacyBudget(rho=1.0)
        scorer = make_private_scorer(
            budget=budget, rho=0.1, bounds=(0, 1), random_state=3
        )
        return [scorer(FirstColumn(), np.zeros((4, 1))) for _ in range(2)]

    assert run() == run()


def test_released_scores_are_centered_on_the_clipped_mean(budget):
    # 4000 releases of the mean of (0.25, 0.75, 2.0 -> 1.0) x 34 = 2/3 with
    # bounds (0, 1), n = 102, rho = 0.5: sigma = 1/102 + 2^-50, so the release
    # is never clipped (2/3 is 34 sigmas from either bound). The sample mean
    # has sd sigma / sqrt(4000) = 1.6e-4; 5 sd = 7.8e-4. The sample sd has
    # relative sd about 1 / sqrt(2 * 4000) = 0.011; 5 sd = 0.056.
    scorer = make_private_scorer(budget=budget, rho=0.5, bounds=(0.0, 1.0))
    X = np.tile([[0.25], [0.75], [2.0]], (34, 1))
    rng = np.random.default_rng(0)
    out = np.array(
        [
            scorer._release(FirstColumn(), X, None, scorer._mechanism(102), rng)
            for _ in range(4000)
        ]
    )
    assert abs(out.mean() - 2 / 3) < 7.8e-4
    assert out.std() == pytest.approx(1 / 102, rel=0.056)
    assert scorer.noise_scale(3) == pytest.approx(1 / 3, rel=1e-12)


def test_released_scores_stay_within_the_bounds(budget):
    # A fold of 3 perfect rows (mean 1) with noise sd 1/3: about half the raw
    # releases are above 1. Every release is clipped to the public bounds,
    # free: an accuracy is never above 1 (it was 1.017 in a user's run).
    scorer = make_private_scorer(budget=budget, rho=0.5, bounds=(0.0, 1.0))
    rng = np.random.default_rng(0)
    out = np.array(
        [
            scorer._release(
                FirstColumn(), np.ones((3, 1)), None, scorer._mechanism(3), rng
            )
            for _ in range(400)
        ]
    )
    assert out.max() == 1.0
    assert out.min() >= 0.0
    assert np.mean(out == 1.0) > 0.4


def test_callable_score_for_a_classifier(budget):
    # Per-sample accuracy, in [0, 1]: each value depends on its own row only.
    class Sign(BaseEstimator):
        def predict(self, X):
            return (np.asarray(X)[:, 0] > 0).astype(int)

    def accuracy(estimator, X, y):
        return estimator.predict(X) == y

    scorer = make_private_scorer(
        budget=budget, rho=50.0, bounds=(0.0, 1.0), score=accuracy, random_state=0
    )
    X = np.array([[1.0], [-1.0], [2.0], [-2.0]] * 250)
    y = np.array([1, 0, 1, 1] * 250)  # 75% right
    # sigma = (1/1000 + 2^-50) / sqrt(100) = 1e-4: 0.75 within 1e-3 (10 sd).
    assert scorer(Sign(), X, y) == pytest.approx(0.75, abs=1e-3)
    assert "accuracy" in repr(scorer)


def test_a_per_sample_score_of_the_wrong_shape_is_refused(budget):
    scorer = make_private_scorer(
        budget=budget, rho=0.1, bounds=(0, 1), score=lambda est, X, y: np.zeros(2)
    )
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        scorer(FirstColumn(), np.zeros((3, 1)))


def test_the_private_scorer_does_not_trigger_the_leak_warning(budget):
    # Tattletale calls warn_if_scored_in_search from score_samples; inside the
    # private scorer (which pays for what it reads) nothing warns, and pytest's
    # filterwarnings=error would fail this test otherwise.
    scorer = make_private_scorer(budget=budget, rho=0.1, bounds=(-5, 5))
    X = np.random.default_rng(0).normal(size=(30, 2))
    scores = cross_val_score(Tattletale(), X, cv=3, scoring=scorer)
    assert np.all(np.isfinite(scores))


# -- scikit-learn integration ----------------------------------------------------------
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cross_validate_with_the_scorer(n_jobs):
    budget = PrivacyBudget(rho=10.0)
    X = np.random.default_rng(0).normal(size=(600, 3))
    est = PrivateCovariance(rho=0.2, data_norm=5.0, budget=budget, random_state=0)
    scorer = make_private_scorer(
        budget=budget, rho=0.05, bounds=(-30.0, 0.0), random_state=0
    )
    result = cross_validate(
        est,
        X,
        cv=KFold(4),
        scoring=scorer,
        n_jobs=n_jobs,
        return_train_score=True,
        error_score="raise",
    )
    # sigma = 30 (1/150 + 2^-50) / sqrt(0.1) = 0.63; the log-likelihood of a
    # standard 3-d Gaussian is about -4.26 per row.
    assert np.all(np.abs(result["test_score"] + 4.26) < 5 * 0.64)
    events = budget.ledger()
    scores = [e for e in events if e.mechanism == "gaussian:score"]
    assert len(scores) == 4 * 2  # test and train fold of each split
    assert math.fsum(e.cost.rho for e in events) == pytest.approx(
        4 * 0.2 + 8 * 0.05, rel=1e-12
    )
    if n_jobs == 2:
        assert os.getpid() not in {e.pid for e in scores}


def test_repr_names_cost_bounds_and_budget(budget):
    scorer = make_private_scorer(budget=budget, rho=0.1, bounds=(-2, 0))
    text = repr(scorer)
    assert text.startswith("PrivateScorer(rho=0.1, bounds=(-2.0, 0.0)")
    assert "budget=PrivacyBudget(" in text
    assert budget.path not in text  # no path, no I/O (deterministic reprs)
    assert isinstance(scorer, PrivateScorer)


def test_classifier_and_regressor_scores_by_name(budget):
    # Per-row values, then the scorer's noisy mean: at rho = 1e6 the noise is
    # negligible (sd about 1e-3 of the bounds' width over n = 4).
    class Model(BaseEstimator):
        classes_ = np.array(["a", "b"])

        def predict(self, X):
            return np.asarray(X)[:, 0]

        def predict_proba(self, X):
            p = np.asarray(X)[:, 0]
            return np.column_stack([1 - p, p])

    X = np.array([[0.5], [0.25], [1.0], [0.0]])
    big = PrivacyBudget(rho=1e7)
    loss = make_private_scorer(
        "neg_log_loss", budget=big, rho=1e6, bounds=(-10.0, 0.0), random_state=0
    )
    # True classes a, b, b, c: log 0.5, log 0.25, log 1, and -inf for a label
    # the model does not know (clipped to -10).
    expected = (np.log(0.5) + np.log(0.25) + 0.0 - 10.0) / 4
    value = loss(Model(), X, np.array(["a", "b", "b", "c"]))
    assert value == pytest.approx(expected, abs=0.05)
    squared = make_private_scorer(
        "neg_squared_error", budget=big, rho=1e6, bounds=(-1.0, 0.0)
    )
    value = squared(Model(), X, np.array([0.0, 0.25, 1.0, 1.0]))
    assert value == pytest.approx(-(0.25 + 0 + 0 + 1) / 4, abs=0.01)
    absolute = make_private_scorer(
        "neg_absolute_error", budget=big, rho=1e6, bounds=(-1.0, 0.0)
    )
    value = absolute(Model(), X, np.array([0.0, 0.25, 1.0, 1.0]))
    assert value == pytest.approx(-(0.5 + 0 + 0 + 1) / 4, abs=0.01)
    accuracy = make_private_scorer("accuracy", budget=big, rho=1e6)
    assert accuracy.bounds == (0.0, 1.0)
    value = accuracy(Model(), X, np.array([0.5, 0.0, 1.0, 0.0]))
    assert value == pytest.approx(0.75, abs=0.01)
