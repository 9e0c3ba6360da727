"""Statistical privacy audit of the private scorer, with broken-variant canaries.

Neighbouring test folds of n = 10 rows scored by a fixed, public stand-in model
whose per-sample score is the row's first entry: fold A has every score at
``low``; fold B differs in one row, whose score is at ``high`` (or beyond it, or
non-finite). The audit runs the scorer's release (``PrivateScorer._release``,
which a call runs right after paying; ``tests/model_selection/test_scorer.py``
checks that a call is exactly that) and lower-bounds epsilon at delta with
:func:`dpgauss.testing.audit.audit` (95%, Clopper-Pearson, event chosen on
separate runs). The real scorer's bound must not exceed the claim; each broken
variant's must.

Claims: rho = 0.5 zCDP implies (2.753, 1e-2)-DP (Canonne, Kamath and Steinke
2020); the Laplace scorer claims epsilon = 1. Broken variants: half the noise
(rho becomes 2, epsilon 6.92 at 1e-2; Laplace epsilon 2), and bounds not applied
(a row scored 5 with bounds (0, 1) moves the mean 5 times the sensitivity).
The default run takes 5,000 releases per input (about a second per case, enough
for the canaries); ``-m slow`` runs 10 times more.
"""

from dataclasses import dataclass

import numpy as np
import pytest

from dpgauss import PrivacyBudget
from dpgauss.accounting import PureDP, zcdp_to_approx
from dpgauss.mechanisms import GaussianMechanism, LaplaceMechanism
from dpgauss.model_selection import PrivateR2Scorer, PrivateScorer, make_private_scorer
from dpgauss.model_selection import _scorer as scorer_module
from dpgauss.model_selection._r2 import r2_means
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

N_TEST = 10
BOUNDS = (0.0, 1.0)


class FirstColumn:
    """Public stand-in model: deterministic per-sample score = first entry."""

    def score_samples(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]


class HalfNoise(PrivateScorer):
    """Broken: noise calibrated to half the sensitivity."""

    def _mechanism(self, n_test):
        half = (1.0 / n_test + scorer_module._ROUNDING_SLACK) / 2
        if isinstance(self.cost, PureDP):
            return LaplaceMechanism(sensitivity=half, epsilon=self.cost.epsilon)
        return GaussianMechanism(sensitivity=half, rho=self.cost.rho)


def _unclipped_unit_mean(values, low, high):
    """Broken: the per-sample scores are not clipped to the bounds."""
    return float(np.mean((np.asarray(values, dtype=np.float64) - low) / (high - low)))


@dataclass
class Case:
    name: str
    cost: dict
    row_a: float  # the differing row's score in fold A
    row_b: float  # ... in fold B
    broken: str  # "half_noise" or "no_clip"
    claimed: float
    delta: float


RHO_CLAIM = zcdp_to_approx(0.5, 1e-2)
CASES = [
    Case("gaussian_low_high", {"rho": 0.5}, 0.0, 1.0, "half_noise", RHO_CLAIM, 1e-2),
    Case("gaussian_beyond_high", {"rho": 0.5}, 0.0, 5.0, "no_clip", RHO_CLAIM, 1e-2),
    Case(
        "gaussian_non_finite",
        {"rho": 0.5},
        np.nan,
        np.inf,
        "half_noise",
        RHO_CLAIM,
        1e-2,
    ),
    Case("laplace_low_high", {"epsilon": 1.0}, 0.0, 1.0, "half_noise", 1.0, 0.0),
    Case("laplace_below_low", {"epsilon": 1.0}, 1.0, -4.0, "no_clip", 1.0, 0.0),
]


def _folds(case):
    """Folds A and B: the other rows score 0.5 in both, row 0 differs."""
    fold_a = np.full((N_TEST, 1), 0.5)
    fold_b = fold_a.copy()
    fold_a[0, 0], fold_b[0, 0] = case.row_a, case.row_b
    return fold_a, fold_b


def _runs(case, broken, monkeypatch):
    cls = HalfNoise if broken and case.broken == "half_noise" else PrivateScorer
    if broken and case.broken == "no_clip":
        monkeypatch.setattr(scorer_module, "_unit_mean", _unclipped_unit_mean)
    scorer = cls(budget=PrivacyBudget(rho=1.0), bounds=BOUNDS, **case.cost)
    model = FirstColumn()

    def run(fold):
        # One freshly calibrated mechanism per release, as in a call.
        return lambda n, rng: np.array(
            [
                scorer._release(model, fold, None, scorer._mechanism(N_TEST), rng)
                for _ in range(n)
            ]
        )

    fold_a, fold_b = _folds(case)
    return run(fold_a), run(fold_b)


def _audit(case, broken, monkeypatch, n):
    run_a, run_b = _runs(case, broken, monkeypatch)
    return audit(
        run_a, run_b, n_samples=n, n_select=n // 2, delta=case.delta, random_state=99
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scorer_keeps_its_claim(case, monkeypatch):
    result = _audit(case, False, monkeypatch, 5_000)
    assert result.epsilon_lower <= case.claimed, result


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_broken_scorer_is_caught(case, monkeypatch):
    result = _audit(case, True, monkeypatch, 5_000)
    assert result.epsilon_lower > case.claimed, result


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scorer_keeps_its_claim_large(case, monkeypatch):
    result = _audit(case, False, monkeypatch, 50_000)
    assert result.epsilon_lower <= case.claimed, result


def test_the_neighbouring_folds_are_at_the_sensitivity():
    # The unit-scale means of A and B differ by exactly 1/n for every case: the
    # neighbours are worst-case for the calibrated sensitivity 1/n + 2^-50.
    for case in CASES:
        fold_a, fold_b = _folds(case)
        mean_a = scorer_module._unit_mean(fold_a[:, 0], *BOUNDS)
        mean_b = scorer_module._unit_mean(fold_b[:, 0], *BOUNDS)
        assert abs(mean_a - mean_b) == pytest.approx(1 / N_TEST, rel=1e-12), case


def test_make_private_scorer_builds_the_audited_class():
    scorer = make_private_scorer(budget=PrivacyBudget(rho=1.0), rho=0.5, bounds=BOUNDS)
    assert type(scorer) is PrivateScorer


class FirstColumnRegressor:
    """Public stand-in regressor: its prediction is the row's first entry."""

    def predict(self, X):
        return np.asarray(X, dtype=np.float64)[:, 0]


class HalfNoiseR2(PrivateR2Scorer):
    """Broken: the R^2 scorer's noise calibrated to half its sensitivity."""

    def _mechanism(self, n_test):
        mech = super()._mechanism(n_test)
        if isinstance(self.cost, PureDP):
            half = mech.sensitivity / 2
            return LaplaceMechanism(sensitivity=half, epsilon=self.cost.epsilon)
        return GaussianMechanism(sensitivity=mech.sensitivity / 2, rho=self.cost.rho)


R2_CASES = {
    "gaussian": ({"rho": 0.5}, RHO_CLAIM, 1e-2),
    "laplace": ({"epsilon": 1.0}, 1.0, 0.0),
}


def _r2_runs(cost, broken):
    # Row 0 is predicted at low in both folds; its target moves from low (A)
    # to high (B): its vector (e, t, t^2) moves from (0, 0, 0) to (1, 1, 1),
    # every coordinate by the whole 1/n, the l2 (sqrt 3 / n) and l1 (3 / n)
    # worst case. The audited output is the sum of the three released means
    # (the direction of that move), post-processing of the release.
    cls = HalfNoiseR2 if broken else PrivateR2Scorer
    budget = PrivacyBudget(rho=1.0) if "rho" in cost else PrivacyBudget(epsilon=2.0)
    scorer = cls(budget=budget, bounds=BOUNDS, **cost)
    X = np.full((N_TEST, 1), 0.5)
    X[0, 0] = 0.0
    y_a, y_b = np.full(N_TEST, 0.5), np.full(N_TEST, 0.5)
    y_a[0], y_b[0] = 0.0, 1.0
    model = FirstColumnRegressor()

    def run(y):
        means = r2_means(model.predict(X), y, *BOUNDS)
        return lambda n, rng: np.array(
            [
                float(np.sum(scorer._mechanism(N_TEST).randomise(means, rng)))
                for _ in range(n)
            ]
        )

    return run(y_a), run(y_b)


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("name", sorted(R2_CASES))
def test_the_r2_release_keeps_its_claim_and_its_canary_is_caught(name, broken):
    cost, claimed, delta = R2_CASES[name]
    run_a, run_b = _r2_runs(cost, broken)
    result = audit(
        run_a, run_b, n_samples=5_000, n_select=2_500, delta=delta, random_state=99
    )
    if broken:
        assert result.epsilon_lower > claimed, result
    else:
        assert result.epsilon_lower <= claimed, result


def test_the_r2_scorer_releases_what_the_audit_reads():
    # A call's release is the mechanism on r2_means (the audit reads the same
    # vector): at an enormous rho the score is the exact ratio of the means.
    # Each mean's noise sd is sqrt(3) / 40 / sqrt(2e12) = 3e-8; over the
    # fold's variance of t (0.053) the score moves by about 6e-7 (1 sd):
    # a tolerance of 5e-6, with a fixed seed.
    X = np.linspace(0.0, 1.0, 40)[:, None]
    y = np.linspace(0.1, 0.9, 40)
    scorer = PrivateR2Scorer(
        budget=PrivacyBudget(rho=1e13), rho=1e12, bounds=BOUNDS, random_state=0
    )
    e, t, q = r2_means(X[:, 0], y, *BOUNDS)
    got = scorer(FirstColumnRegressor(), X, y)
    assert got == pytest.approx(1.0 - e / (q - t * t), abs=5e-6)
