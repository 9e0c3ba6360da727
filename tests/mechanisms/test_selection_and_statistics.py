"""Exponential mechanism, AboveThreshold, private histogram and quantile."""

import math

import numpy as np
import pytest
from scipy import stats

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms import (
    AboveThreshold,
    ExponentialMechanism,
    PrivateHistogram,
    PrivateQuantile,
)


def test_exponential_mechanism_has_the_exact_distribution():
    # P(i) ∝ exp(eps u_i / (2 D)); a chi-square goodness-of-fit test at a fixed
    # seed (p-value > 0.001 holds with probability 0.999 for the right law).
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=2.0)
    utilities = np.array([0.0, 1.0, 2.0, -1.0])
    rng = np.random.default_rng(0)
    picks = np.array([mech.select(utilities, rng) for _ in range(20_000)])
    expected = np.exp(utilities * 2.0 / 2.0)
    expected = expected / expected.sum() * picks.size
    observed = np.bincount(picks, minlength=4)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert mech.cost == PureDP(2.0)


def test_exponential_mechanism_monotonic_and_base_measure():
    mech = ExponentialMechanism(sensitivity=2.0, epsilon=1.0, monotonic=True)
    assert mech.coefficient == 0.5
    # A -inf base weight is never selected.
    picks = {mech.select([5.0, 0.0], r, log_base=[-np.inf, 0.0]) for r in range(50)}
    assert picks == {1}


def test_exponential_mechanism_rejects_bad_utilities():
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        mech.select([])
    with pytest.raises(ValueError, match="finite"):
        mech.select([0.0, np.inf])


def test_above_threshold_finds_the_first_large_query():
    svt = AboveThreshold(threshold=10.0, sensitivity=1.0, epsilon=10.0)
    values = [0.0, 1.0, 2.0, 30.0, 40.0]
    assert svt.first_above(values, random_state=0) == 3
    assert svt.first_above([0.0, 0.0], random_state=0) is None
    assert svt.cost == PureDP(10.0)


def test_above_threshold_noise_scales():
    # T' = T + Lap(2D/eps) and each query gets Lap(4D/eps): with one query at the
    # threshold, P(fire) = P(L4 - L2 >= 0) = 1/2 by symmetry.
    svt = AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=1.0)
    rng = np.random.default_rng(1)
    fired = np.mean([svt.first_above([0.0], rng) == 0 for _ in range(4000)])
    assert fired == pytest.approx(0.5, abs=0.04)  # 5 sd of a binomial mean


def test_histogram_counts_and_noise():
    hist = PrivateHistogram([0.0, 1.0, 2.0], rho=0.5)  # sigma = 1/sqrt(rho)
    assert hist.mechanism.scale == pytest.approx(math.sqrt(2.0))
    assert hist.cost == ZCDP(0.5)
    np.testing.assert_array_equal(hist.counts([-5.0, 0.5, 1.0, 1.5, 7.0]), [2.0, 3.0])
    assert hist.release([0.5] * 10, random_state=0).shape == (2,)
    lap = PrivateHistogram([0.0, 1.0], epsilon=1.0)
    assert lap.mechanism.scale == 2.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bins": [0.0]}, "at least two edges"),
        ({"bins": [0.0, 0.0, 1.0]}, "strictly increasing"),
        ({"bins": [0.0, np.inf]}, "finite"),
    ],
)
def test_histogram_rejects_bad_bins(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivateHistogram(**kwargs, rho=1.0)


def test_histogram_needs_exactly_one_cost():
    with pytest.raises(ValueError, match="exactly one of rho and epsilon"):
        PrivateHistogram([0, 1])
    with pytest.raises(ValueError, match="exactly one of rho and epsilon"):
        PrivateHistogram([0, 1], rho=1.0, epsilon=1.0)


def test_quantile_is_accurate_with_enough_data(global_random_seed):
    # With n = 10,001 evenly spread values and eps = 1, intervals off by k ranks
    # lose exp(-k/2): the output is within 40 ranks (0.04 in value) of the median
    # except with probability about 2 exp(-20) (the interval lengths are equal).
    values = np.linspace(0.0, 10.0, 10_001)
    median = PrivateQuantile(0.5, bounds=(0.0, 10.0), epsilon=1.0)
    estimate = median.release(values, random_state=global_random_seed)
    assert abs(estimate - 5.0) < 0.04
    assert median.cost == PureDP(1.0)


def test_quantile_stays_in_bounds_and_validates():
    q = PrivateQuantile(0.9, bounds=(-1.0, 1.0), epsilon=0.1)
    out = [q.release([100.0, -100.0, 0.0], random_state=r) for r in range(100)]
    assert min(out) >= -1.0
    assert max(out) <= 1.0
    with pytest.raises(ValueError, match=r"quantile must be in \[0, 1\]"):
        PrivateQuantile(1.5, bounds=(0, 1), epsilon=1.0)
    with pytest.raises(ValueError, match="low < high"):
        PrivateQuantile(0.5, bounds=(1, 1), epsilon=1.0)
    with pytest.raises(ValueError, match="NaN"):
        q.release([np.nan])
