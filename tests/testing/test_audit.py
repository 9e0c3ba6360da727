"""The audit helper: exact Clopper-Pearson bounds and the audit's behaviour."""

import numpy as np
import pytest
from scipy.stats import binomtest

from dpgauss.testing.audit import audit, clopper_pearson


@pytest.mark.parametrize(
    ("k", "n"), [(0, 50), (1, 50), (17, 50), (50, 50), (300, 10_000)]
)
def test_clopper_pearson_matches_scipy(k, n):
    # A two-sided exact interval at level 1 - 2 alpha has the one-sided bounds.
    lower, upper = clopper_pearson(k, n, 0.025)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert float(lower) == pytest.approx(ci.low, abs=1e-12)
    assert float(upper) == pytest.approx(ci.high, abs=1e-12)


def test_identical_inputs_show_no_privacy_loss():
    def run(n, rng):
        return rng.normal(size=n)

    result = audit(run, run, n_samples=20_000, random_state=0)
    assert result.epsilon_lower < 0.2


def test_deterministic_release_is_flagged():
    # Releasing the value itself: the event {output >= 1} separates the inputs.
    result = audit(
        lambda n, rng: np.zeros(n),
        lambda n, rng: np.ones(n),
        n_samples=1000,
        random_state=0,
    )
    assert result.epsilon_lower > 5
    assert result.counts[1] == 0


def test_delta_lowers_the_bound():
    def run_a(n, rng):
        return rng.laplace(0.0, 1.0, size=n)

    def run_b(n, rng):
        return rng.laplace(1.0, 1.0, size=n)

    strict = audit(run_a, run_b, n_samples=100_000, delta=0.0, random_state=0)
    loose = audit(run_a, run_b, n_samples=100_000, delta=0.05, random_state=0)
    assert loose.epsilon_lower < strict.epsilon_lower <= 1.0
