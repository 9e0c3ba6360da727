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
from dpgauss.model_selection import PrivateScorer, make_private_scorer
from dpgauss.model_selection import _scorer as scorer_module
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
