"""The bound-free quantile search (noisy binary search over float64)."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms._range import (
    MAX_KEY,
    STEPS,
    QuantileSearch,
    float_keys,
    keys_to_floats,
)


def test_keys_keep_the_order_of_every_finite_float():
    rng = np.random.default_rng(0)
    bits = rng.integers(-(2**63), 2**63 - 1, size=100_000, dtype=np.int64)
    values = bits.view(np.float64)
    values = values[np.isfinite(values)]
    extremes = [-np.finfo(float).max, -1e-300, -5e-324, -0.0, 0.0, 5e-324, 1.0]
    values = np.concatenate([values, extremes, [np.finfo(float).max]])
    keys = float_keys(values)
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(keys[order]) >= 0)
    assert np.all(np.abs(keys) <= MAX_KEY)
    back = keys_to_floats(keys)
    np.testing.assert_array_equal(back, values)  # -0.0 == 0.0 compares equal
    assert float_keys([-0.0])[0] == float_keys([0.0])[0] == 0


def test_steps_compose_to_the_cost_exactly():
    for cost in (ZCDP(0.3), PureDP(0.7)):
        search = QuantileSearch(cost, n_features=3)
        step = search.step.cost
        total = step.rho if isinstance(cost, ZCDP) else step.epsilon
        value = cost.rho if isinstance(cost, ZCDP) else cost.epsilon
        assert total * STEPS == value  # 1/64 is exact in binary
        assert search.step.sensitivity == (math.sqrt(3) if cost == ZCDP(0.3) else 3)


@pytest.mark.parametrize(
    ("loc", "scale"), [(0.0, 1.0), (1e6, 3.0), (-1e-200, 1e-203), (1e300, 1e297)]
)
def test_finds_the_median_at_any_scale(loc, scale):
    # n = 4,000, d = 3, rho = 0.05: count noise sd sqrt(32 * 3 / 0.05) = 44, so
    # every step is right where the count is more than 4.5 sd = 200 from n/2,
    # and the released rank is within about 200 of 2,000: within 0.13 sd of
    # the median for Gaussian data. Allow 0.3.
    X = np.random.default_rng(1).normal(loc, scale, size=(4000, 3))
    search = QuantileSearch(ZCDP(0.05), n_features=3)
    found = search.release(X, random_state=0)
    assert np.all(np.abs(found - np.median(X, axis=0)) < 0.3 * scale)
    assert search.draws == 1


def test_other_quantiles_and_ties():
    # 100 copies of each of 0..9: exactly 900 values are <= any point of [8, 9),
    # the target at q = 0.9, so with noise the search may stop anywhere there.
    X = np.repeat(np.arange(10.0), 100)[:, None]
    search = QuantileSearch(ZCDP(1.0), n_features=1, quantile=0.9)
    assert 8.0 <= search.release(X, random_state=0)[0] <= 9.0
    constant = np.full((50, 2), -7.25)
    assert np.all(QuantileSearch(ZCDP(1.0), 2).release(constant, 0) == -7.25)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="quantile"):
        QuantileSearch(ZCDP(1.0), 1, quantile=1.0)
    with pytest.raises(ValueError, match="n_features"):
        QuantileSearch(ZCDP(1.0), 0)
    with pytest.raises(TypeError, match="ZCDP or PureDP"):
        QuantileSearch(1.0, 1)
    with pytest.raises(ValueError, match="shape"):
        QuantileSearch(ZCDP(1.0), 2).release(np.zeros((5, 3)))


def test_a_search_is_checked_through_its_step_at_its_width():
    # The check before the spend reaches the step mechanism of a composite
    # release: a search whose step noise float64 cannot hold is refused.
    from dpgauss.mechanisms._checks import check_noise_scale

    search = QuantileSearch(ZCDP(0.5), 3)
    assert check_noise_scale(search) is search
    with pytest.raises(ValueError, match="noise scale"):
        check_noise_scale(QuantileSearch(ZCDP(1e-310), 3))


def test_nonzero_search_reads_the_nonzero_values_and_reports_unmeasured_as_zero():
    # 80% zeros: the plain median is 0, the nonzero search's is that of the
    # |normal| values (0.674 at the median; the target sits 4 count sds, 4 *
    # 8 counts at rho 0.5, below q k = 500 of k = 1,000 values: quantile about
    # 0.47, value about 0.63). A column with 5 nonzero values is unmeasured.
    rng = np.random.default_rng(0)
    X = np.zeros((5000, 2))
    X[:1000, 0] = rng.normal(size=1000)  # signed: the search reads |v|
    X[:5, 1] = 1e300
    plain = QuantileSearch(ZCDP(0.5), 2).release(np.abs(X), random_state=1)
    found = QuantileSearch(ZCDP(0.5), 2, nonzero=True).release(X, random_state=1)
    assert plain[0] == 0.0
    assert 0.5 < found[0] < 0.75
    assert found[1] == 0.0
    with pytest.raises(ValueError, match="2\\^-10"):
        QuantileSearch(ZCDP(0.5), 1, quantile=0.3, nonzero=True)
    assert "nonzero=True" in repr(QuantileSearch(ZCDP(0.5), 1, nonzero=True))


def _sorted_search(search, values, seed):
    """The search as it was written first: counts by searchsorted over the
    sorted keys (the reference the narrowing counts must equal exactly)."""
    values = np.abs(values) if search.nonzero else np.asarray(values, dtype=float)
    keys = np.sort(float_keys(values).T, axis=1)
    rng = np.random.default_rng(seed)
    target = search.quantile * keys.shape[1]
    if search.nonzero:
        target -= 4.0 * search.count_sd()
    zeros = (1.0 - search.quantile) * np.count_nonzero(keys == 0, axis=1)
    zeros = zeros if search.nonzero else np.zeros(keys.shape[0])
    lo = np.full(keys.shape[0], -MAX_KEY)
    hi = np.full(keys.shape[0], MAX_KEY)
    first = None
    for _ in range(STEPS):
        mid = lo // 2 + hi // 2 + ((lo % 2) + (hi % 2)) // 2
        counts = [
            np.searchsorted(k, m, side="right") for k, m in zip(keys, mid, strict=True)
        ]
        noisy = search.step.randomise(np.array(counts, dtype=float) - zeros, rng)
        first = noisy if first is None else first
        above = noisy >= target
        hi, lo = np.where(above, mid, hi), np.where(above, lo, mid + 1)
    found = keys_to_floats(np.minimum(lo, hi))
    if search.nonzero:  # too few nonzero values to measure: 0
        measured = search.quantile * keys.shape[1] - first >= 12 * search.count_sd()
        found = np.where(measured, found, 0.0)
    return found


@pytest.mark.parametrize("nonzero", [False, True])
def test_narrowed_counts_equal_the_sorted_keys_counts(nonzero):
    # Ties, zeros of both signs, infinities and NaN (outside the finite keys),
    # 600 decades of scale: the same counts, so the same releases, bit for bit.
    rng = np.random.default_rng(3)
    ties = rng.integers(-2, 3, size=(400, 3)).astype(float)
    wide = rng.standard_normal((400, 3)) * 10.0 ** rng.integers(-300, 300, (400, 3))
    odd = rng.standard_normal((400, 3))
    odd[::3, 0], odd[1::5, 1], odd[2::7, 2], odd[::4, 1] = np.inf, -np.inf, np.nan, -0.0
    for values in (ties, wide, odd, np.zeros((400, 3)), np.full((400, 3), 1e308)):
        for cost in (ZCDP(0.5), ZCDP(1e-4), PureDP(1.0)):
            search = QuantileSearch(cost, 3, quantile=0.75, nonzero=nonzero)
            want = _sorted_search(search, values, 7)
            got = search.release(values, random_state=7)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def _recorded(step, asked):
    """``step.randomise`` recording the counts it is given in ``asked``."""
    randomise = step.randomise

    def record(counts, rng):
        asked.append(np.array(counts))
        return randomise(counts, rng)

    return record


@pytest.mark.parametrize("nonzero", [False, True])
def test_long_columns_count_as_the_sorted_keys_through_the_mask_passes(nonzero):
    # Columns longer than SORTED_BELOW take the mask passes, and outliers at
    # the search's halving points around a cluster of near-ties keep more
    # than SORTED_BELOW keys for PASSES_BEFORE_SORT passes (then the sort).
    # Plus NaN of both signs (a negative NaN is below every finite key),
    # infinities, zeros of both signs and the smallest subnormal.
    from dpgauss.mechanisms._range import PASSES_BEFORE_SORT, SORTED_BELOW, _Interval

    rng = np.random.default_rng(5)
    n = 3 * SORTED_BELOW
    column = 1.0 + rng.integers(0, 3, size=n) * 2.0**-52
    one = float_keys(np.array([1.0]))[0]
    offsets = np.array([2**j for j in range(3, 62)], dtype=np.int64)
    planted = keys_to_floats(np.concatenate([one - offsets, one + offsets]))
    column[: planted.size] = planted
    odd = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324]
    column[planted.size : planted.size + 1400] = np.repeat(odd, 200)
    values = np.stack([rng.permutation(column), -column, column], axis=1)
    passes = []
    keep = _Interval.keep

    def counted(self, at_or_below):
        passes.append(self.mask is not None and self.passes + 1)
        return keep(self, at_or_below)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Interval, "keep", counted)
        for cost in (ZCDP(0.5), PureDP(1.0)):
            search = QuantileSearch(cost, 3, quantile=0.75, nonzero=nonzero)
            asked = []  # every step's counts, not only the release
            patch.setattr(search.step, "randomise", _recorded(search.step, asked))
            want = _sorted_search(search, values, 11)
            got = search.release(values, random_state=11)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
            np.testing.assert_array_equal(asked[STEPS:], asked[:STEPS])
    assert max(passes) >= PASSES_BEFORE_SORT  # the sort after the passes ran
