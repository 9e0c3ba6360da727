"""Permute-and-flip, AboveThreshold, histogram and quantile mechanisms."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms import (
    AboveThreshold,
    ExponentialMechanism,
    HistogramMechanism,
    QuantileMechanism,
    _noise,
)
from dpgauss.mechanisms import _selection as selection
from dpgauss.mechanisms._selection import (
    _exponent_parts,
    exponent_coefficient,
    integer_floor,
    integer_gaps,
    permute_and_flip,
)


def _permute_and_flip_law(probabilities):
    """Exact law of permute-and-flip by enumerating every order (small k)."""
    k = len(probabilities)
    law = np.zeros(k)
    orders = list(itertools.permutations(range(k)))
    for order in orders:
        survive = 1.0
        for i in order:
            law[i] += survive * probabilities[i]
            survive *= 1.0 - probabilities[i]
    return law / len(orders)


# -- exponential mechanism (permute-and-flip) ---------------------------------------
def test_exponential_calibration_against_the_formulas():
    mech = ExponentialMechanism(sensitivity=3.0, epsilon=0.7)
    g = mech.grid
    assert 2**20 <= 3.0 / g < 2**21
    assert mech.integer_sensitivity == math.ceil(Fraction(3.0) / Fraction(g)) + 1
    c, q = mech._coefficient
    exact = Fraction(0.7) / (2 * mech.integer_sensitivity)
    # a dyadic c / 2^q just below epsilon / (2 D'), with 31 significant bits
    assert Fraction(c, 2**q) <= exact < Fraction(c + 1, 2**q)
    assert 2**30 <= c < 2**31


@pytest.mark.parametrize("epsilon", [1e-9, 0.01, 1.0, 3e9])
def test_exponent_coefficient_is_below_the_target(epsilon):
    c, q = exponent_coefficient(epsilon, 7)
    assert 0 < Fraction(c, 2**q) <= min(Fraction(epsilon) / 14, Fraction(2**29))
    assert q <= 62
    assert c < 2**31


@pytest.mark.parametrize(
    ("c", "q"), [(2**30 + 7, 62), (1431655765, 32), (3, 0), (5, 20)]
)
def test_exponent_parts_are_exact(c, q):
    rng = np.random.default_rng(0)
    gaps = np.concatenate(
        [[0, 1, 2**31 - 1, 2**31, 2**53], rng.integers(0, 2**53, size=200)]
    ).astype(np.int64)
    whole, rem, den = _exponent_parts(gaps, c, q)
    cap = 2**53 if q >= 31 else 2**32  # the documented cap for q < 31
    for g, w, r in zip(gaps.tolist(), whole.tolist(), rem.tolist(), strict=True):
        assert (w, r) == divmod(c * min(g, cap), den)
        assert 0 <= r < den <= 2**62


def test_integer_floor_and_gaps_are_exact():
    values = np.array([1.5, -0.25, -1e-320, 1e308, -1e308, 0.0])
    floors = integer_floor(values, 2.0**-20)
    assert floors[0] == 1.5 * 2**20
    assert floors[1] == -(2**18)
    assert floors[2] == -1.0  # underflowed quotient, exact floor -1
    assert floors[3] == 2.0**1020  # overflow clipped (1-Lipschitz)
    gaps = integer_gaps(floors)
    assert gaps[3] == 0
    assert gaps[0] == 2**53  # capped
    np.testing.assert_array_equal(integer_gaps(np.array([3.0, 1.0, 3.0])), [0, 2, 0])


def test_exponential_mechanism_has_the_exact_permute_and_flip_law():
    # Utilities on the grid: U_i = u_i 2^20 (D = 1, g = 2**-20), gaps
    # (max u - u_i) 2^20, coin probability exp(-c gap / 2^q). The enumerated law is
    # compared by a chi-square test at a fixed seed (p > 1e-4).
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=2.0)
    utilities = np.array([0.0, 1.0, 2.0, -1.0])
    c, q = mech._coefficient
    gaps = (2.0 - utilities) * 2**20
    law = _permute_and_flip_law(np.exp(-c * gaps / 2**q))
    rng = np.random.default_rng(0)
    picks = np.array([mech.select(utilities, rng) for _ in range(20_000)])
    observed = np.bincount(picks, minlength=4)
    assert stats.chisquare(observed, law * picks.size).pvalue > 1e-4
    assert mech.cost == PureDP(2.0)
    assert mech.draws == 20_000


@pytest.mark.parametrize("sequential", [0, 32])
def test_permute_and_flip_scalar_and_vector_coins(sequential, monkeypatch):
    # 100 candidates, one with gap 0 and the rest with coin exp(-2). The best one
    # is selected when every coin before it fails: P(best) = mean over its
    # positions j of (1 - e^-2)^j. With no sequential coins every flip goes
    # through the vectorised chunks; with 32 the scalar coins come first.
    monkeypatch.setattr(selection, "_SEQUENTIAL", sequential)
    gaps = np.full(100, 2, dtype=np.int64)
    gaps[37] = 0
    rng = np.random.default_rng(1)
    picks = np.array([permute_and_flip(gaps, 1, 0, rng) for _ in range(20_000)])
    p_best = np.mean((1 - math.exp(-2)) ** np.arange(100))
    sd = math.sqrt(p_best * (1 - p_best) / picks.size)
    assert abs(np.mean(picks == 37) - p_best) <= 5 * sd


def test_float_exponential_mechanism_has_the_exponential_law():
    # exact=False: Gumbel-max, P(i) ∝ exp(eps u_i / (2 D)).
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=2.0, exact=False)
    utilities = np.array([0.0, 1.0, 2.0, -1.0])
    rng = np.random.default_rng(0)
    picks = np.array([mech.select(utilities, rng) for _ in range(20_000)])
    expected = np.exp(utilities)
    expected = expected / expected.sum() * picks.size
    assert stats.chisquare(np.bincount(picks, minlength=4), expected).pvalue > 1e-3


def test_exponential_mechanism_is_reproducible_and_sharp():
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=50.0)
    assert mech.select([0.0, 10.0, 1.0], random_state=0) == 1
    picks = {mech.select(np.arange(5.0), r) for r in range(20)}
    assert picks == {4}  # gap 1 has weight exp(-25)


def test_exponential_mechanism_rejects_bad_utilities():
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        mech.select([])
    with pytest.raises(ValueError, match="finite"):
        mech.select([0.0, np.inf])
    assert mech.draws == 0


# -- AboveThreshold ----------------------------------------------------------------
def test_above_threshold_calibration_against_the_formulas():
    svt = AboveThreshold(threshold=3.0, sensitivity=1.0 + 1e-9, epsilon=0.5)
    g = svt.grid
    d = Fraction(1.0 + 1e-9) / Fraction(g)
    assert 2**20 <= d < 2**21
    assert svt.integer_sensitivity == math.ceil(d) + 1
    d_int = svt.integer_sensitivity
    assert svt.noise_scales == (
        math.ceil(2 * d_int / Fraction(0.5)),
        math.ceil(4 * d_int / Fraction(0.5)),
    )


def test_monotone_above_threshold_halves_the_query_noise():
    svt = AboveThreshold(threshold=3.0, sensitivity=1.0, epsilon=0.5, monotone=True)
    d_int = svt.integer_sensitivity
    assert svt.noise_scales == (math.ceil(4 * d_int), math.ceil(4 * d_int))
    assert "monotone=True" in repr(svt)
    with pytest.raises(TypeError, match="monotone"):
        AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=1.0, monotone="yes")


def _svt_output_law(queries, t1, t2, span=400):
    """Exact P[output = k] of integer AboveThreshold with DLap(t1), DLap(t2) noise."""
    z = np.arange(-span, span + 1)
    weights = np.exp(-np.abs(z) / t1)
    p_rho = weights / weights.sum()
    nu = np.exp(-np.abs(z) / t2)
    nu /= nu.sum()
    below = np.cumsum(nu)  # P[nu <= x] at x = z

    def p_nu_below(c):  # P[nu < c] for integer array c
        return np.where(c - 1 < -span, 0.0, below[np.clip(c - 1 + span, 0, 2 * span)])

    out, alive = [], np.ones_like(p_rho)
    for q in queries:
        fire = 1.0 - p_nu_below(z - q)
        out.append(float(np.sum(p_rho * alive * fire)))
        alive = alive * (1.0 - fire)
    out.append(float(np.sum(p_rho * alive)))
    return np.array(out)


@pytest.mark.parametrize("shift", [1, -1])
def test_monotone_scales_meet_epsilon_on_monotone_neighbours(shift):
    # The proof in AboveThreshold's Notes, checked exactly on small integers:
    # D' = 1, eps = 1, both scales 2 D'/eps = 2. Every output's probability ratio
    # is at most e^eps for all-up and all-down neighbours; for a non-monotone
    # pair (the first queries up, the last down) the same scales exceed it, so
    # the flag is not a free lunch.
    base = np.array([-3, -2, 0, -1, 1, -4])
    a = _svt_output_law(base, 2.0, 2.0)
    b = _svt_output_law(base + shift, 2.0, 2.0)
    ratio = np.max(np.maximum(a / b, b / a))
    assert ratio <= math.e * (1 + 1e-9)
    mixed = base + np.array([1, 1, 1, 1, 1, -1])
    c = _svt_output_law(mixed, 2.0, 2.0)
    assert np.max(np.maximum(a / c, c / a)) > math.e


def test_above_threshold_finds_the_first_large_query():
    for exact in (True, False):
        svt = AboveThreshold(threshold=10.0, sensitivity=1.0, epsilon=10.0, exact=exact)
        values = [0.0, 1.0, 2.0, 30.0, 40.0]
        assert svt.first_above(values, random_state=0) == 3
        assert svt.first_above([0.0, 0.0], random_state=0) is None
        assert svt.first_above([], random_state=0) is None
        assert svt.cost == PureDP(10.0)
        assert svt.draws == 3


def test_above_threshold_queries_are_exact_integers():
    svt = AboveThreshold(threshold=-2.0, sensitivity=1.0, epsilon=1.0)
    scale = 2**20  # 1 / g
    queries = svt._integer_queries(np.array([0.0, -2.0, 1e300, -1e300, 0.5]))
    np.testing.assert_array_equal(
        queries, [2 * scale, 0, 2**50, -(2**50), 2 * scale + scale // 2]
    )


@pytest.mark.parametrize("exact", [True, False])
def test_above_threshold_noise_scales(exact):
    # T' = T + Lap(2D/eps) and each query gets Lap(4D/eps): with one query at the
    # threshold, P(fire) = P(L4 - L2 >= 0) = 1/2 by symmetry (plus half of
    # P(L4 = L2) < 1e-6 on the integers).
    svt = AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=1.0, exact=exact)
    rng = np.random.default_rng(1)
    fired = np.mean([svt.first_above([0.0], rng) == 0 for _ in range(4000)])
    assert fired == pytest.approx(0.5, abs=0.04)  # 5 sd of a binomial mean


@pytest.mark.parametrize(
    ("exact", "sampler"), [(True, "lattice_laplace"), (False, "draw_laplace")]
)
def test_above_threshold_resolves_random_state_once(exact, sampler, monkeypatch):
    # An int seed resolved twice gave the threshold's noise and the queries' noise
    # identical streams (the first query's noise was exactly twice the threshold's).
    seen = []
    original = getattr(_noise, sampler)

    def spy(*args):
        seen.append(args[-1])
        return original(*args)

    monkeypatch.setattr(_noise, sampler, spy)
    svt = AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=1.0, exact=exact)
    svt.first_above([0.0, 1.0], random_state=5)
    assert len(seen) == 2
    assert seen[0] is seen[1]
    assert isinstance(seen[0], np.random.Generator)


def test_above_threshold_rejects_impossible_calibrations():
    with pytest.raises(ValueError, match="threshold must be finite"):
        AboveThreshold(threshold=np.inf, sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="too small for exact AboveThreshold"):
        AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=1e-12)
    with pytest.raises(ValueError, match="too large for the query grid"):
        AboveThreshold(threshold=1e308, sensitivity=1e-10, epsilon=1.0)
    svt = AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="finite 1-D"):
        svt.first_above([[0.0]])


# -- histogram ----------------------------------------------------------------
def test_histogram_counts_and_noise():
    hist = HistogramMechanism([0.0, 1.0, 2.0], rho=0.5)  # sigma = 1/sqrt(rho)
    assert hist.mechanism.scale == pytest.approx(math.sqrt(2.0))
    assert hist.mechanism.sensitivity >= math.sqrt(2)  # rounded up
    assert hist.cost == ZCDP(0.5)
    np.testing.assert_array_equal(hist.counts([-5.0, 0.5, 1.0, 1.5, 7.0]), [2.0, 3.0])
    assert hist.release([0.5] * 10, random_state=0).shape == (2,)
    assert hist.draws == 1
    assert hist.mechanism.draws == 1
    lap = HistogramMechanism([0.0, 1.0], epsilon=1.0)
    assert lap.mechanism.scale == 2.0
    assert lap.mechanism.exact
    assert not HistogramMechanism([0.0, 1.0], epsilon=1.0, exact=False).mechanism.exact


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
        HistogramMechanism(**kwargs, rho=1.0)


def test_histogram_needs_exactly_one_cost():
    with pytest.raises(ValueError, match="exactly one of rho and epsilon"):
        HistogramMechanism([0, 1])
    with pytest.raises(ValueError, match="exactly one of rho and epsilon"):
        HistogramMechanism([0, 1], rho=1.0, epsilon=1.0)


# -- quantile ----------------------------------------------------------------
def test_quantile_utilities_against_the_formula():
    q = QuantileMechanism(0.3, bounds=(0.0, 4.0), epsilon=1.0, n_candidates=5)
    np.testing.assert_array_equal(q.candidates, [0.0, 1.0, 2.0, 3.0, 4.0])
    values = [0.5, 1.0, 1.5, 2.5, 9.0, -3.0, 2.0]
    # n = 7, m = floor(0.3 * 7 + 1/2) = 2; #{x <= c} = 1, 3, 5, 6, 6.
    np.testing.assert_array_equal(q.utilities(values), [-1, -1, -3, -4, -4])


@pytest.mark.parametrize("exact", [True, False])
def test_quantile_is_accurate_with_enough_data(global_random_seed, exact):
    # n = 10,001 evenly spread values in [0, 10] (rank spacing 0.001), eps = 1: a
    # candidate whose count is k off the target has coin (permute-and-flip) or
    # relative weight (exponential mechanism) exp(-k/2). A candidate 0.05 or more
    # from the median is at least 49 ranks off, so weight <= exp(-24.5), and a best
    # candidate (within one grid step 0.0024) has weight 1: the output is within
    # 0.05 except with probability below 4,097 exp(-24.5) ~ 1e-7.
    values = np.linspace(0.0, 10.0, 10_001)
    median = QuantileMechanism(0.5, bounds=(0.0, 10.0), epsilon=1.0, exact=exact)
    estimate = median.release(values, random_state=global_random_seed)
    assert abs(estimate - 5.0) < 0.05
    assert estimate in median.candidates
    assert median.cost == PureDP(1.0)
    assert median.draws == 1


def test_quantile_stays_in_bounds_and_validates():
    q = QuantileMechanism(0.9, bounds=(-1.0, 1.0), epsilon=0.1)
    out = [q.release([100.0, -100.0, 0.0], random_state=r) for r in range(100)]
    assert min(out) >= -1.0
    assert max(out) <= 1.0
    with pytest.raises(ValueError, match=r"quantile must be in \[0, 1\]"):
        QuantileMechanism(1.5, bounds=(0, 1), epsilon=1.0)
    with pytest.raises(ValueError, match="low < high"):
        QuantileMechanism(0.5, bounds=(1, 1), epsilon=1.0)
    with pytest.raises(ValueError, match="n_candidates must be >= 2"):
        QuantileMechanism(0.5, bounds=(0, 1), epsilon=1.0, n_candidates=1)
    with pytest.raises(TypeError, match="n_candidates must be an int"):
        QuantileMechanism(0.5, bounds=(0, 1), epsilon=1.0, n_candidates=10.0)
    with pytest.raises(ValueError, match="NaN"):
        q.release([np.nan])


def test_above_threshold_refuses_a_threshold_beyond_the_query_lattice():
    # Queries are clipped at 2^1020 grid units; a threshold beyond that would
    # make queries far above it never fire. A tiny negative threshold whose
    # quotient underflows floors to -1 grid unit, as exact arithmetic does.
    with pytest.raises(ValueError, match="too large"):
        AboveThreshold(threshold=4e158, sensitivity=1e-143, epsilon=1.0)
    svt = AboveThreshold(threshold=-1e-320, sensitivity=1e300, epsilon=1.0)
    assert svt._threshold_units == -1.0


def test_quantile_counts_of_parts_add_up_to_the_same_release():
    # A chunked pass adds the counts of its chunks (exact integers):
    # release_counts then draws what release draws on all the values.
    values = np.random.default_rng(3).exponential(size=10_001)
    q = QuantileMechanism(0.9, bounds=(0.0, 8.0), epsilon=0.5, n_candidates=257)
    parts = sum(q.counts(part) for part in np.array_split(values, 7))
    np.testing.assert_array_equal(parts, q.counts(values))
    for seed in range(20):
        assert q.release_counts(parts, values.size, seed) == q.release(values, seed)


def test_quantile_counts_with_ties_on_the_candidates_are_the_sorted_ones():
    # Values exactly on candidates, many ties and values beyond both ends:
    # the chunked pass the discriminants run (row norms' counts added over
    # canonical chunks of 64 rows) equals counts of the sorted values, and
    # release_counts draws what release draws.
    from dpgauss.discriminant_analysis._base import _radius_counts
    from dpgauss.utils import _sums

    q = QuantileMechanism(0.9, bounds=(0.0, 2.0), epsilon=0.5, n_candidates=33)
    rng = np.random.default_rng(4)
    pool = np.concatenate([q.candidates, [1e-300, 5.0, np.nextafter(1.0, 2.0)]])
    for seed in range(10):
        norms = rng.choice(pool, int(rng.integers(1, 400)))
        X = np.stack([norms, np.zeros_like(norms)], axis=1)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_sums, "CHUNK_ROWS", 64)
            counts = _sums.over_chunks(X, _radius_counts, np.zeros(2), q.candidates)
        np.testing.assert_array_equal(counts, q.counts(norms))
        assert q.release_counts(counts, norms.size, seed) == q.release(norms, seed)
