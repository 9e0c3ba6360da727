"""Audits of PrivateProductDistribution's rounds on two neighbours.

The neighbours differ in one row: ones on the first half of the coordinates
against ones on the second half. Both rows have d/2 ones, at most every
round's truncation count here, so the counts move by a {-1, 1} vector with
d = min(2 K, |S|) nonzero entries in every round: the sensitivity of the proof
is reached exactly, in every round. Eight other rows have two ones each, so
that every coordinate's count is 2 or 3 of 40 (its mean below the final
round's clip 1/8, about the lock thresholds of rounds 1 and 2: coordinates
lock at random, by the noise); the rest are zeros. No row ever has more ones
than a round's truncation count (9, 9 and 7 at n = 40, d = 8).
The one-dimensional statistic is the first half's estimates minus the second
half's (post-processing of all the releases, so a lower bound on its epsilon
bounds the whole fit's). The canary runs the same rounds with noise calibrated
to a quarter of the sensitivity, and must be flagged.
"""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP, zcdp_to_approx
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.mechanisms import GaussianMechanism, LaplaceMechanism
from dpgauss.product._product import counts_mechanism, product_rounds, round_names
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

RHO, EPSILON, DELTA, N, D = 0.5, 1.0, 1e-2, 40, 8
CLAIM = zcdp_to_approx(RHO, DELTA)


def _neighbours(d=D):
    X = np.zeros((N, d), bool)
    for i in range(d):  # each coordinate counts 2 ones besides row 0
        X[1 + i, [i, (i + 1) % d]] = True
    Y = X.copy()
    X[0, : d // 2] = True
    Y[0, d // 2 :] = True
    return X, Y


def _canary(cost, l2_squared):
    # Noise for a quarter of the l2 (or l1) sensitivity.
    l2_squared = max(l2_squared, 1)
    if isinstance(cost, ZCDP):
        return GaussianMechanism(sensitivity=math.sqrt(l2_squared) / 4, rho=cost.rho)
    return LaplaceMechanism(sensitivity=l2_squared / 4, epsilon=cost.epsilon)


def _runner(X, total, make=counts_mechanism):
    d = X.shape[1]
    names = round_names(d)
    costs = [total.__class__(v) for v in _equal_values(total, len(names))]

    def once(rng):
        entries = [
            Release(n, c, "audit", make) for n, c in zip(names, costs, strict=True)
        ]
        plan = ReleasePlan(total, entries)

        def release(name, l2_squared):
            return plan.calibrate(name, l2_squared=l2_squared)

        estimate, _, _ = product_rounds([X] * len(names), names, release, rng)
        plan.finish()
        return estimate[: d // 2].sum() - estimate[d // 2 :].sum()

    def run(n, rng):
        return np.array([once(rng) for _ in range(n)])

    return run


def _equal_values(total, k):
    from dpgauss.accounting import split_cost

    value = [
        c.rho if isinstance(c, ZCDP) else c.epsilon
        for c in split_cost(total, [1 / k] * k)
    ]
    return value


def _audit(run_a, run_b, n, delta):
    return audit(
        run_a, run_b, n_samples=n, n_select=n // 2, delta=delta, random_state=7
    )


def test_rounds_keep_their_zcdp_claim():
    X, Y = _neighbours()
    result = _audit(_runner(X, ZCDP(RHO)), _runner(Y, ZCDP(RHO)), 4_000, DELTA)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_a_quarter_of_the_sensitivity_is_caught():
    X, Y = _neighbours()
    runs = [_runner(Z, ZCDP(RHO), _canary) for Z in (X, Y)]
    result = _audit(*runs, 1000, DELTA)
    assert result.epsilon_lower > CLAIM, result


# Pure DP: Laplace noise on l1 sensitivity d spreads the privacy loss over the
# coordinates' tails, which a sum over 8 coordinates dilutes (the canary went
# unflagged at d = 8); at d = 2 (two releases, round_1 and final) it shows.


def test_rounds_keep_their_pure_claim():
    X, Y = _neighbours(2)
    result = _audit(
        _runner(X, PureDP(EPSILON)), _runner(Y, PureDP(EPSILON)), 4_000, 0.0
    )
    assert result.epsilon_lower <= EPSILON, result


def test_pure_canary_is_caught():
    X, Y = _neighbours(2)
    runs = [_runner(Z, PureDP(EPSILON), _canary) for Z in (X, Y)]
    result = _audit(*runs, 1000, 0.0)
    assert result.epsilon_lower > EPSILON, result
