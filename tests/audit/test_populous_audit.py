"""Audit of the populous mean's truncated-Laplace test (its pass coin).

Two neighbouring candidate sets whose ordered-pair counts differ by the most
one replaced candidate can move them, 2 (k - 1), placed where the pass
probability is small (the tail, where the (epsilon, delta) bound is tight). The
test as calibrated must keep its claim; a canary whose pass probability is
computed for three times the epsilon (a third of the width) must be caught.
The mask is a library Gaussian mechanism on an exactly computed mean; its
sensitivity bound is property-tested in tests/ensemble/test_populous.py.
"""

import numpy as np
import pytest

from dpgauss.ensemble import _populous as P
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

K, T, EPS, DELTA = 500, 0.9, 1.0, 1e-3


def _counts(eps):
    """N' (higher) with a pass probability near 0.1, and N = N' - 2 (k - 1)."""
    high = int(T * K * K)
    while P.pass_probability(high, K, T, eps, DELTA) < 0.1:
        high += 50
    return high - 2 * (K - 1), high


def _runner(total, eps):
    p = P.pass_probability(total, K, T, eps, P.calibration_delta(EPS, DELTA))

    def run(n, rng):
        return (rng.random(n) < p).astype(np.float64)

    return run


def _audit(eps):
    low, high = _counts(eps)
    return audit(
        _runner(low, eps),
        _runner(high, eps),
        n_samples=200_000,
        delta=DELTA,
        random_state=5,
    )


def test_the_test_keeps_its_claim_in_its_tail():
    assert _audit(EPS).epsilon_lower <= EPS


def test_canary_test_with_a_third_of_the_width_is_caught():
    assert _audit(3 * EPS).epsilon_lower > EPS
