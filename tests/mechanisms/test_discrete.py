"""Exact samplers: Bernoulli(exp(-x)), discrete Laplace, discrete Gaussian.

Each sampler is compared with its exact law at a fixed seed. Frequencies are
checked to 5 binomial standard deviations (a false alarm has probability below
6e-7 per check for a correct sampler) and histograms with a chi-square test at
p > 1e-4. Both implementations (vectorised, and scalar for small requests) are
forced in turn, and the int64 / Python-integer split of the Gaussian acceptance
is forced to its rare branch with tiny parameters.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpgauss.mechanisms import _discrete
from dpgauss.mechanisms._discrete import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
)

# Rationals x = num/den in [0, 5], including both sides of integers and a
# denominator at the limit 2**62.
RATIONALS = [
    (0, 1),
    (1, 3),
    (1, 1),
    (7, 4),
    (2, 1),
    (5, 2),
    (3, 1),
    (10, 3),
    (9, 2),
    (5, 1),
    (2**62 - 1, 2**62),
    (3 * 2**61 + 5, 2**62),
]
N_BERNOULLI = 200_000


@pytest.fixture(params=["vector", "scalar"])
def path(request, monkeypatch):
    """Force the vectorised samplers (limit 0) or the scalar ones (no limit)."""
    monkeypatch.setattr(
        _discrete, "_SCALAR_MAX", 0 if request.param == "vector" else 10**9
    )
    return request.param


def test_bernoulli_exp_frequencies_match_exp_minus_x():
    num = np.repeat([n for n, _ in RATIONALS], N_BERNOULLI)
    den = np.repeat([d for _, d in RATIONALS], N_BERNOULLI)
    draws = bernoulli_exp(num, den, np.random.default_rng(0)).reshape(
        len(RATIONALS), -1
    )
    for (n, d), row in zip(RATIONALS, draws, strict=True):
        p = math.exp(-n / d)
        sd = math.sqrt(p * (1 - p) / N_BERNOULLI)
        assert abs(row.mean() - p) <= 5 * sd + 1e-12, (n, d, row.mean(), p)


def test_bernoulli_exp_scalar_denominator_and_shape():
    draws = bernoulli_exp(np.full((400, 500), 3), 2, np.random.default_rng(1))
    assert draws.shape == (400, 500)
    assert draws.dtype == bool
    p = math.exp(-1.5)  # 200,000 draws, 5 sd
    assert abs(draws.mean() - p) <= 5 * math.sqrt(p * (1 - p) / draws.size)


def test_bernoulli_exp_extremes_are_exact():
    rng = np.random.default_rng(2)
    # exp(0) = 1 exactly; exp(-2**62) is 0 for all practical purposes.
    assert bernoulli_exp(np.zeros(1000, dtype=np.int64), 7, rng).all()
    assert not bernoulli_exp(np.full(1000, 2**62), 1, rng).any()


@pytest.mark.parametrize(
    ("num", "den", "error", "match"),
    [
        ([1.5], 2, TypeError, "num must be an integer array"),
        ([-1], 2, ValueError, "num must be >= 0"),
        ([1], 0, ValueError, r"den must be in \[1, 2\*\*62\]"),
        ([1], 2**62 + 1, ValueError, r"den must be in \[1, 2\*\*62\]"),
    ],
)
def test_bernoulli_exp_rejects_bad_input(num, den, error, match):
    with pytest.raises(error, match=match):
        bernoulli_exp(num, den, 0)


def _chi_square_pvalue(samples, pmf, support):
    """Chi-square of samples against pmf on ``support``, tails lumped (>= 5 each)."""
    probs = pmf(support)
    observed = np.array([(samples == k).sum() for k in support], dtype=float)
    lower = (samples < support[0]).sum()
    upper = (samples > support[-1]).sum()
    tail_mass = 1.0 - probs.sum()
    observed = np.append(observed, lower + upper)
    expected = np.append(probs, tail_mass) * samples.size
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] < 5:  # fold a tiny remainder into the last kept cell
        observed[-2] += observed[-1]
        expected[-2] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("t", [1, 3, 12])
def test_discrete_laplace_has_the_exact_law(t, path):
    # P(k) = tanh(1/(2t)) exp(-|k|/t): scipy's dlaplace with a = 1/t.
    n = 60_000 if path == "vector" else 20_000
    z = discrete_laplace(t, n, np.random.default_rng(3))
    assert z.dtype == np.int64
    support = np.arange(-8 * t, 8 * t + 1)
    assert _chi_square_pvalue(z, stats.dlaplace(1.0 / t).pmf, support) > 1e-4


def _gaussian_pmf(variance):
    radius = int(40 * math.sqrt(variance)) + 40
    ks = np.arange(-radius, radius + 1)
    weights = np.exp(-(ks.astype(float) ** 2) / (2.0 * variance))
    total = weights.sum()
    return lambda k: np.exp(-(np.asarray(k, dtype=float) ** 2) / (2 * variance)) / total


@pytest.mark.parametrize(("t", "u"), [(1, 1), (2, 3), (4, 4), (1, 9)])
def test_discrete_gaussian_has_the_exact_law(t, u, path):
    # The acceptance identity holds for any t > 0 (docstring proof), including a
    # proposal far from sqrt(S) as in (1, 9).
    n = 60_000 if path == "vector" else 20_000
    z = discrete_gaussian(t, u, n, np.random.default_rng(4))
    s = t * u
    support = np.arange(-int(6 * math.sqrt(s)) - 1, int(6 * math.sqrt(s)) + 2)
    assert _chi_square_pvalue(z, _gaussian_pmf(s), support) > 1e-4


@pytest.mark.parametrize("limit", [0, 2])
def test_discrete_gaussian_large_numerator_branch_is_exact(limit, monkeypatch):
    # With the int64 limit at 0 (or 2) every (or almost every) acceptance goes
    # through the Python-integer branch; the law must not change.
    monkeypatch.setattr(_discrete, "_SCALAR_MAX", 0)
    monkeypatch.setattr(_discrete, "_SQUARE_LIMIT", limit)
    z = discrete_gaussian(2, 3, 40_000, np.random.default_rng(5))
    support = np.arange(-15, 16)
    assert _chi_square_pvalue(z, _gaussian_pmf(6), support) > 1e-4


def test_discrete_gaussian_variance_at_mechanism_scale():
    # S = 2**24 (2**24 + 2), the mechanisms' regime: sample variance of 100,000
    # draws is within 5 sd (sd = S sqrt(2 / n)) of the exact variance (< S, by less
    # than 1e-40 relative at this scale).
    t, u = 2**24, 2**24 + 2
    z = discrete_gaussian(t, u, 100_000, np.random.default_rng(6)).astype(float)
    s = float(t * u)
    assert abs(z.var() - s) <= 5 * s * math.sqrt(2 / z.size)
    assert abs(z.mean()) <= 5 * math.sqrt(s / z.size)


def test_discrete_laplace_mean_absolute_value_at_large_scale():
    # For t = 2**41, E|Z| = 2 e^{-1/t} / (1 - e^{-2/t}) ~ t, sd of |Z| ~ t.
    t = 2**41
    z = discrete_laplace(t, 100_000, np.random.default_rng(7)).astype(float)
    assert abs(np.abs(z).mean() - t) <= 5 * t / math.sqrt(z.size)


def test_sizes_and_shapes():
    rng = np.random.default_rng(8)
    assert discrete_laplace(5, None, rng).shape == ()
    assert discrete_gaussian(2, 2, (3, 4), rng).shape == (3, 4)
    assert discrete_gaussian(2, 2, 0, rng).shape == (0,)
    assert discrete_laplace(5, 1000, rng).shape == (1000,)


def test_same_seed_same_draws_per_path(path):
    a = discrete_gaussian(8, 8, 50, 11)
    b = discrete_gaussian(8, 8, 50, 11)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: discrete_laplace(0, 3, 0), ValueError, r"t must be in \[1, "),
        (lambda: discrete_laplace(2**53, 3, 0), ValueError, r"t must be in \[1, "),
        (lambda: discrete_laplace(1.5, 3, 0), TypeError, "t must be an integer"),
        (lambda: discrete_gaussian(2, 0, 3, 0), ValueError, r"u must be in \[1, "),
        (lambda: discrete_gaussian(2**31, 2**31, 3, 0), ValueError, "t \\* u must"),
    ],
)
def test_samplers_reject_bad_parameters(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_law_checks_have_power():
    # The same checks reject a law 10% off: a discrete Laplace of scale 3 against
    # scale 3.3, and N_Z(0, 6) against N_Z(0, 6.6).
    rng = np.random.default_rng(9)
    z = discrete_laplace(3, 60_000, rng)
    assert _chi_square_pvalue(z, stats.dlaplace(1 / 3.3).pmf, np.arange(-24, 25)) < 1e-4
    z = discrete_gaussian(2, 3, 60_000, rng)
    assert _chi_square_pvalue(z, _gaussian_pmf(6.6), np.arange(-15, 16)) < 1e-4
