"""A Mironov (2012) floating-point attack, run as a privacy audit.

numpy's ``Generator.laplace(0, 1)`` returns ``log(U + U)`` for ``U < 1/2`` and
``-log(2 - U - U)`` otherwise, with U on the 53-bit grid ``j 2^-53``. Only some
floats are reachable that way, and which ones depends on the center: the float
``1 + noise`` is rarely a reachable value of ``noise`` itself. The attack's
summary of an output x is the indicator "x is exactly a value the float sampler
can produce around 0" (decided by inverting the sampler: the U on the grid
nearest to the preimage of x, and its neighbours). On the neighbours v = 0 and
v = 1 of ``LaplaceMechanism(sensitivity=1, epsilon=1)``:

* the float path (``exact=False``, today's bug and the canary) gives indicator 1
  always at v = 0 and rarely at v = 1, a lower bound on epsilon far above 1;
* the exact lattice path releases ``g (R + Z)``, a function of an integer that
  is 1-DP, so no summary of its output, this one included, can show more than 1.

The ``log`` used here is the C library's, as in numpy's sampler (Python's
``math.log``); the first test checks the inversion on direct numpy draws.
"""

import math

import numpy as np
import pytest

from dpgauss.mechanisms import LaplaceMechanism
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit
EPSILON = 1.0


def _reachable_from_zero(x):
    """1.0 if numpy's ``Generator.laplace(0.0, 1.0)`` can return exactly x, else 0.0."""
    if x < 0:  # x = log(U + U), U + U = j 2^-52 with j in [1, 2^52)
        j0 = round(math.exp(x) * 2.0**52)
        candidates = range(max(j0 - 2, 1), min(j0 + 3, 2**52))
        return float(any(math.log(j * 2.0**-52) == x for j in candidates))
    # x = 0 - log(2 - U - U), U = j 2^-53 with j in [2^52, 2^53)
    j0 = round((1.0 - math.exp(-x) / 2.0) * 2.0**53)
    for j in range(max(j0 - 3, 2**52), min(j0 + 4, 2**53)):
        u = j * 2.0**-53
        if 0.0 - math.log(2.0 - u - u) == x:
            return 1.0
    return 0.0


def _runner(mech, center):
    def run(n, rng):
        out = mech.randomise(np.full(n, center), rng)
        return np.array([_reachable_from_zero(float(x)) for x in out])

    return run


def _attack(exact, n):
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=EPSILON, exact=exact)
    return audit(
        _runner(mech, 0.0),
        _runner(mech, 1.0),
        n_samples=n,
        n_select=n // 2,
        random_state=2012,
    )


def test_indicator_recognises_every_direct_draw():
    draws = np.random.default_rng(0).laplace(0.0, 1.0, size=5000)
    assert all(_reachable_from_zero(float(x)) == 1.0 for x in draws)


def test_float_path_is_broken_by_the_attack():
    # The canary: today's float Laplace mechanism (measured bound about 8).
    result = _attack(exact=False, n=20_000)
    assert result.epsilon_lower > EPSILON, result


def test_exact_path_resists_the_attack():
    result = _attack(exact=True, n=20_000)
    assert result.epsilon_lower <= EPSILON, result


@pytest.mark.slow
def test_exact_path_resists_the_attack_large():
    result = _attack(exact=True, n=200_000)
    assert result.epsilon_lower <= EPSILON, result
