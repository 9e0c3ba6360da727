"""Chunked sums over clipped rows: float-safe clipping, exact fixed-point sums."""

import contextvars
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpgauss.utils._sums import (
    clip_rows,
    clipped_sums,
    fixed_point_bits,
    fixed_point_sums,
    row_norms,
    summation_error,
)

far = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(
    x=arrays(
        np.float64, st.tuples(st.integers(1, 6), st.integers(1, 12)), elements=far
    ),
    radius=st.floats(1e-100, 1e100),
    scale=st.sampled_from([0.0, 1.0, 1e10, 1e15, 1e-300]),
)
def test_clipped_rows_lie_in_the_ball_as_computed(x, radius, scale):
    # Rule 2 of dpgauss.utils._sums: the computed clipped offset has norm <= r,
    # for any finite row, also far from a far center. The norm is evaluated
    # exactly (math.fsum of exact squares via fractions would be slow; scaling
    # by the largest entry and fsum is accurate to a few ulps, far below the
    # (d + 8) u margin the clipping keeps).
    center = np.full(x.shape[1], scale * radius)
    y = clip_rows(x, center, radius)
    for row in y:
        peak = np.max(np.abs(row))
        if peak == 0:
            continue
        exact = peak * math.sqrt(math.fsum((row / peak) ** 2))
        assert exact <= radius * (1 + 2**-52 * 2)


@pytest.mark.parametrize("ratio", [1e10, 1e12, 1e13, 1e14, 1e15])
def test_neighbours_far_outside_move_the_sums_by_the_sensitivity(ratio):
    # One row 1e10..1e15 radii away from a far center: the clipped sum moves by
    # at most 2r (mean) and sqrt(2) r^2 (second moment) plus the rounding term.
    rng = np.random.default_rng(0)
    n, d, r = 2000, 5, 1.0
    center = np.full(d, 3e14)
    X = center + rng.normal(size=(n, d)) * 0.3
    Y = X.copy()
    Y[0] = center + ratio * r * rng.normal(size=d)
    sx, sxx = clipped_sums(X, center, r)
    sy, syy = clipped_sums(Y, center, r)
    slack = 2 * summation_error(n) * n
    assert np.linalg.norm(sx - sy) <= 2 * r + slack * r
    assert np.linalg.norm(sxx - syy) <= math.sqrt(2) * r**2 + slack * r**2


def test_fixed_point_sums_are_exact_integers_with_unit_sensitivity():
    rng = np.random.default_rng(1)
    n = 10_000
    bits = fixed_point_bits(n)
    assert n * 2**bits <= 2**52
    values = rng.random(n)
    levels = np.array([0.0, 0.25, 0.5, 0.99])
    a = fixed_point_sums(values, levels, bits)
    other = values.copy()
    other[3] = 1.0 if values[3] < 0.5 else 0.0  # the largest possible move
    b = fixed_point_sums(other, levels, bits)
    assert a.dtype == np.int64
    assert np.all(np.abs(a - b) <= 2**bits)
    np.testing.assert_allclose(
        a * 2.0**-bits,
        [np.sum(np.maximum(values - lv, 0)) for lv in levels],
        rtol=0,
        atol=n * 2.0**-bits,
    )


def test_summation_error_is_small_for_realistic_n():
    # Relative to the mean's sensitivity 2r/n, the rounding term 2 e r is tiny.
    for n, limit in [(10**3, 1e-9), (10**6, 1e-4), (10**9, 0.05)]:
        assert 2 * summation_error(n) * n / 2 < limit


def test_no_floating_point_warning_depends_on_the_rows():
    import warnings

    X = np.array([[1e308, -1e308], [np.inf, np.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row_norms(X, np.zeros(2))
        clipped_sums(X, np.zeros(2), 1.0)


@pytest.mark.parametrize("radius", [1e-140, 1e-139, 3e-100])
@pytest.mark.parametrize("d", [1, 40, 500])
def test_clipping_holds_for_tiny_radii_where_squares_underflow(radius, d):
    # Entries whose squares underflow: the norm takes the scaled path, and the
    # clipped row's exact norm (rational arithmetic) is at most the radius.
    from fractions import Fraction

    x = np.full((1, d), radius * 2)  # norm 2 sqrt(d) r: clipped
    y = clip_rows(x, np.zeros(d), radius)
    exact = sum(Fraction(float(v)) ** 2 for v in y[0])
    assert exact <= Fraction(radius) ** 2
    assert float(exact / Fraction(radius) ** 2) > 0.999


def _sorted_fixed_point_sums(values, levels, bits):
    # The sorted computation fixed_point_sums used before its sort-free
    # paths, verbatim: the reference they must equal integer for integer.
    scale = float(2**bits)
    v = np.sort(np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0))
    levels = np.clip(np.asarray(levels, dtype=np.float64), 0.0, 1.0)
    qv = np.floor(v * scale).astype(np.int64)
    ql = np.floor(levels * scale).astype(np.int64)
    suffix = np.concatenate([np.cumsum(qv[::-1])[::-1], [0]])
    above = np.searchsorted(qv, ql, side="right")
    count = qv.size - above
    return suffix[above] - count * ql


def _adversarial_values(rng, levels, bits):
    # Ties, the ends 0 and 1, NaN, +-inf, values beyond [0, 1], 1e+-300,
    # subnormals, the levels themselves, a grid step (2^-bits) and an ulp
    # either side of them, and random values.
    step = 2.0**-bits
    special = [0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, -1.0, 2.0, 1e300, -1e300]
    special += [1e-300, -1e-300, 5e-324, 1.0 - 2.0**-53, step, step / 2]
    near = np.concatenate([levels, levels + step, levels - step])
    near = np.concatenate(
        [near, np.nextafter(levels, 2.0), np.nextafter(levels, -1.0), levels]
    )
    pool = np.concatenate([special, near, rng.random(50)])
    return rng.choice(pool, size=int(rng.integers(0, 400)))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_levels", [0, 1, 3, 121])
def test_fixed_point_sums_equal_the_sorted_sums_on_adversarial_values(seed, n_levels):
    # The sort-free paths (a sum per level up to four levels, buckets beyond,
    # the sort when a float64 bincount could round) give the integers of the
    # sorted computation, bit for bit: the release's statistics are exact
    # integers, so no release may change.
    rng = np.random.default_rng(seed)
    for bits in [1, 8, fixed_point_bits(400), fixed_point_bits(8192), 52]:
        grid = 2.0 ** -np.arange(n_levels)  # the search's levels 2^-l
        levels = np.concatenate([grid[: n_levels // 2], rng.random(n_levels)])
        levels = rng.permutation(levels)[:n_levels]
        if n_levels > 2:  # repeated levels, and levels 0, 1 and beyond
            levels[:3] = [levels[-1], 0.0, 1.0 if seed % 2 else 1.5]
        values = _adversarial_values(rng, levels, bits)
        got = fixed_point_sums(values, levels, bits)
        want = _sorted_fixed_point_sums(values, levels, bits)
        assert got.dtype == np.int64
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"bits={bits}")


def test_fixed_point_sums_at_the_largest_exact_totals():
    # n 2^k = 2^52 with every value 1 (the largest total fixed_point_bits
    # allows) and one past bincount's exact range (4 values at k = 52): the
    # bucket path and its fallback to the sort, against the sorted sums.
    levels = 2.0 ** -np.arange(121)
    for n, bits in [(4095, fixed_point_bits(4095)), (4, 52), (2**14, 38)]:
        for values in [np.ones(n), np.full(n, 1.0 - 2.0**-53), np.zeros(n)]:
            got = fixed_point_sums(values, levels, bits)
            want = _sorted_fixed_point_sums(values, levels, bits)
            np.testing.assert_array_equal(got, want)


def _in_a_fresh_context(dsk, keys, **kwargs):
    # A Dask scheduler whose tasks run with numpy's default errstate, as in a
    # distributed worker or a process pool (the threaded scheduler copies the
    # caller's context, its errstate included, and would hide a warning).
    import dask

    return contextvars.Context().run(dask.get, dsk, keys, **kwargs)


def test_row_norms_raise_no_warning_in_a_dask_worker_whatever_the_rows():
    # A row at the largest float against a center at its negative: the far
    # search's offset overflowed outside any errstate, in the worker.
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    big = np.finfo(np.float64).max
    X = np.array([[big, 1.0], [-big, 2.0], [np.nan, 1.0]] * 4)
    center = np.array([-big, 0.0])
    for far in (False, True):
        with dask.config.set(scheduler=_in_a_fresh_context):
            got = row_norms(da.from_array(X, chunks=(5, -1)), center, far=far)
        np.testing.assert_array_equal(got, row_norms(X, center, far=far))
