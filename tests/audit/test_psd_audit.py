"""Audit of the PSD populous mean's scale release (``ln tr mu``).

The pair: 1 x 1 candidates (the PSD space is then the log line, and the
trace-normalised shape is always 1, so the scale carries everything), k = 11,
t = 1.09, the worst Euclidean pattern known (tests/ensemble/test_populous.py)
carried over by the exponential, one candidate moved across the cluster;
counts, weights and the exact trace come from the library's own functions.
This pair moves ``ln tr mu`` by about a twentieth of the calibrated bound
``-ln(1 - Delta)`` (the random pairs of tests/ensemble/test_psd.py move it
less). The release as calibrated must keep its claim; a canary calibrated for
a bound 40 times too small must be caught. The bound itself is property-tested
in tests/ensemble/test_psd.py.
"""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP
from dpgauss.ensemble import _psd as S
from dpgauss.ensemble._populous import weight_params
from dpgauss.mechanisms import GaussianMechanism
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

K, T_FACTOR, THRESHOLD, RAMP = 11, 1.09, 0.9, (0.55, 0.75)
RHO, DELTA = 0.5, 0.01


def _log_trace(Y):
    Sm, ok = S.sanitise(Y, 1)
    counts = S.neighbour_counts(Sm, S.log_vectors(Sm, ok), T_FACTOR)
    assert counts.sum() >= THRESHOLD * K * K  # the test can pass
    A_w, B_w = weight_params(K, *RAMP)
    weights = np.minimum(np.maximum(counts - A_w, 0), B_w)
    _, trace = S.trace_normalised_mean(Sm, weights, 2.0**-30)
    return math.log(trace)


def _pair():
    quarter = math.log(T_FACTOR) / 4.0 * 0.999
    Y = np.exp(np.array([9.0, 5, 5, 5, 1, 1, 5, 5, 9, 9, 5]) * quarter)[:, None]
    Z = Y.copy()
    Z[0] = math.exp(quarter)
    return _log_trace(Y), _log_trace(Z)


def _audit(divisor):
    delta_mean = S.mean_sensitivity(K, T_FACTOR, THRESHOLD, *RAMP)
    _, scale_sens = S.release_sensitivities(delta_mean)
    a, b = _pair()
    assert abs(a - b) > scale_sens / 25  # the pair uses a sizeable part
    mech = GaussianMechanism(sensitivity=scale_sens / divisor, rho=RHO)
    return audit(
        lambda n, rng: mech.randomise(np.full(n, a), rng),
        lambda n, rng: mech.randomise(np.full(n, b), rng),
        n_samples=200_000,
        delta=DELTA,
        random_state=11,
    )


def test_scale_release_keeps_its_claim():
    claim = ZCDP(RHO).to_approx(DELTA).epsilon
    assert _audit(1.0).epsilon_lower <= claim


def test_canary_scale_release_with_a_bound_40_times_too_small_is_caught():
    claim = ZCDP(RHO).to_approx(DELTA).epsilon
    assert _audit(40.0).epsilon_lower > claim
