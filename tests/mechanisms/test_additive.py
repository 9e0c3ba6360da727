"""Gaussian and Laplace mechanisms: exact calibration, lattice, noise law, inputs."""

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
    _noise,
)


def _is_power_of_two(x):
    mantissa, _ = math.frexp(x)
    return mantissa == 0.5


def _sqrt(n):
    """sqrt of an integer to 60 digits (an independent check of the exact test)."""
    getcontext().prec = 60
    return Fraction(Decimal(n).sqrt())


# -- ideal scales (unchanged) -------------------------------------------------------
def test_gaussian_calibration_exact():
    # sigma = D / sqrt(2 rho)
    mech = GaussianMechanism(sensitivity=3.0, rho=0.125)
    assert mech.scale == 3.0 / math.sqrt(0.25)
    assert mech.cost == ZCDP(0.125)
    assert mech.exact


def test_laplace_calibration_exact():
    # b = D / epsilon
    mech = LaplaceMechanism(sensitivity=3.0, epsilon=0.5)
    assert mech.scale == 6.0
    assert mech.cost == PureDP(0.5)


def test_symmetric_calibration_exact():
    g = SymmetricGaussianMechanism(sensitivity=2.0, rho=2.0)
    assert g.scale == 1.0
    assert g.cost == ZCDP(2.0)
    lap = SymmetricLaplaceMechanism(sensitivity=2.0, epsilon=4.0)
    assert lap.scale == 0.5
    assert lap.cost == PureDP(4.0)


# -- lattice calibration, against the formulas ---------------------------------------
@pytest.mark.parametrize("x", [1.0, 3.0, 0.1, 1e-200, 7.3e150, 2.0**-900])
@pytest.mark.parametrize("bits", [20, 24, 40])
def test_power_of_two_grid(x, bits):
    g = _noise.power_of_two_grid(x, bits)
    assert _is_power_of_two(g)
    # the largest power of two with x / g >= 2**bits
    assert Fraction(x) / Fraction(g) >= 2**bits
    assert Fraction(x) / (2 * Fraction(g)) < 2**bits


GAUSSIAN_CASES = [
    (1.0, 0.5, 1),
    (3.0, 0.125, 7),
    (1e-3, 2.0, 5050),
    (5e4, 1e-4, 500_500),
]


@pytest.mark.parametrize(("sens", "rho", "k"), GAUSSIAN_CASES)
def test_gaussian_lattice_calibration(sens, rho, k):
    mech = GaussianMechanism(sensitivity=sens, rho=rho)
    g = mech.grid
    # g: the largest power of two with sigma / g >= 2**24.
    assert g == _noise.power_of_two_grid(mech.scale, 24)
    assert 2**24 <= mech.scale / g < 2**25
    t, u = mech.lattice_variance(k)
    assert _is_power_of_two(t)
    assert u % 2 == 0
    # S >= ((D/g + sqrt(k)) / sqrt(2 rho))^2, i.e. the rho' = Delta^2 / (2S) of the
    # integer release is at most rho, with Delta = D/g + sqrt(k) (rounding).
    delta = Fraction(sens) / Fraction(g) + _sqrt(k)
    assert 2 * Fraction(rho) * t * u >= delta * delta
    # ... and the smallest such S with u even: u - 2 does not cover (the 60-digit
    # square root errs by < 1e-50, far below the margin of one step).
    assert 2 * Fraction(rho) * t * (u - 2) < delta * delta
    # t is the power of two nearest sqrt(S) (proposal efficiency).
    assert 2**-0.5 <= t / math.sqrt(t * u) <= 2**0.5 * (1 + 1e-6)
    # effective scale: g sqrt(S) <= sigma (1 + 2**-24 (sqrt(k / (2 rho)) + 1.5)).
    bound = mech.scale * (1 + 2**-24 * (math.sqrt(k / (2 * rho)) + 1.5))
    assert mech.scale < mech.effective_scale(k) <= bound


@pytest.mark.parametrize(("sens", "rho", "d"), [(1.0, 0.5, 2), (0.01, 1.0, 100)])
def test_symmetric_gaussian_lattice_calibration(sens, rho, d):
    mech = SymmetricGaussianMechanism(sensitivity=sens, rho=rho)
    t, u = mech.lattice_variance(d)
    # Frobenius sensitivity after rounding: D/g + d; S = t u with u even.
    delta = Fraction(sens) / Fraction(mech.grid) + d
    assert 2 * Fraction(rho) * t * u >= delta * delta
    assert 2 * Fraction(rho) * t * (u - 2) < delta * delta
    t_off, u_off = _noise.halve_variance(t, u)
    assert 2 * t_off * u_off == t * u
    assert 2**-0.5 <= t_off / math.sqrt(t_off * u_off) <= 2**0.5 * (1 + 1e-6)


LAPLACE_CASES = [(1.0, 1.0, 1), (2.0, 0.3, 7), (1e-3, 5.0, 5050), (1e4, 1e-3, 500_500)]


@pytest.mark.parametrize(("sens", "eps", "k"), LAPLACE_CASES)
def test_laplace_lattice_calibration(sens, eps, k):
    mech = LaplaceMechanism(sensitivity=sens, epsilon=eps)
    g = mech.grid
    # (D / epsilon) / g in [2**40, 2**41)
    assert 2**40 <= mech.scale / g < 2**41
    t = mech.lattice_scale(k)
    # t = ceil((D/g + k) / epsilon), in exact rational arithmetic
    assert t == math.ceil((Fraction(sens) / Fraction(g) + k) / Fraction(eps))
    assert (Fraction(sens) / Fraction(g) + k) / t <= Fraction(eps)
    # effective scale g t <= b (1 + 2**-40 (k / epsilon + 1))
    assert mech.effective_scale(k) <= mech.scale * (1 + 2**-40 * (k / eps + 1))


def test_symmetric_laplace_counts_the_upper_triangle():
    mech = SymmetricLaplaceMechanism(sensitivity=0.5, epsilon=0.25)
    d = 4
    k = d * (d + 1) // 2  # 10 upper entries are rounded
    expected = math.ceil((Fraction(0.5) / Fraction(mech.grid) + k) / Fraction(0.25))
    assert mech.lattice_scale(d) == expected


def test_float_path_has_no_lattice():
    mech = GaussianMechanism(sensitivity=1.0, rho=0.5, exact=False)
    assert mech.grid is None
    assert mech.effective_scale(10) == mech.scale
    assert "exact=False" in repr(mech)


# -- exact releases -------------------------------------------------------------------
@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(sensitivity=1.0, rho=0.5),
        LaplaceMechanism(sensitivity=1.0, epsilon=1.0),
    ],
    ids=["gaussian", "laplace"],
)
def test_outputs_lie_on_the_lattice_and_shift_with_it(mech):
    value = np.array([0.0, 0.3, -12.25, 1e3])  # R + Z stays below 2**53
    out = mech.randomise(value, random_state=3)
    units = out / mech.grid
    np.testing.assert_array_equal(units, np.rint(units))
    # The output is g (R + Z): moving the value by whole grid steps moves the
    # output by exactly as much, with the same seed (same Z).
    moved = mech.randomise(value + 5 * mech.grid, random_state=3)
    np.testing.assert_array_equal((moved - out) / mech.grid, np.full(4, 5.0))


def test_extreme_values_do_not_overflow_or_warn():
    mech = GaussianMechanism(sensitivity=1e-6, rho=1.0)
    out = mech.randomise(np.array([1e308, -1e308, 5e-324]), random_state=0)
    assert out.shape == (3,)
    assert out[0] > 0 > out[1]


def test_from_lattice_exact_for_huge_noise():
    # |Z| > 2**53: the sum R + Z is formed exactly and rounded once.
    coords = np.array([2.0**60])
    noise = np.array([2**53 + 1])
    expected = float(2**60 + 2**53 + 1)
    assert _noise.from_lattice(coords, noise, 1.0)[0] == expected


def test_zero_output_has_positive_sign():
    # rint(-0.3) = -0.0, and -0.0 + 0.0 = +0.0: the sign of zero carries nothing.
    total = _noise.from_lattice(np.array([-0.0]), np.array([0]), 0.5)
    assert math.copysign(1.0, total[0]) == 1.0


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize(
    ("cls", "dist"),
    [
        (
            lambda exact: GaussianMechanism(sensitivity=1.0, rho=0.5, exact=exact),
            stats.norm(scale=1.0),
        ),
        (
            lambda exact: LaplaceMechanism(sensitivity=1.0, epsilon=0.5, exact=exact),
            stats.laplace(scale=2.0),
        ),
    ],
)
def test_noise_has_the_calibrated_law(cls, dist, exact):
    # KS test at a fixed seed: with 20,000 draws, the KS statistic of the right law
    # is below 0.0096 with probability 0.999 (1.95 / sqrt(n)). The lattice (step
    # 2**-24 sigma or finer) and the scale excess (< 1e-4 relative) are far below
    # what 20,000 draws resolve.
    noise = cls(exact).randomise(np.zeros(20_000), random_state=0)
    assert stats.kstest(noise, dist.cdf).statistic < 1.95 / math.sqrt(20_000)


@pytest.mark.parametrize("exact", [True, False])
def test_symmetric_gaussian_noise_structure(exact):
    # Diagonal ~ N(0, sigma^2), off-diagonal ~ N(0, sigma^2 / 2), mirrored.
    mech = SymmetricGaussianMechanism(sensitivity=1.0, rho=0.5, exact=exact)
    draws = np.stack([mech.randomise(np.zeros((4, 4)), rng) for rng in range(3000)])
    assert mech.draws == 3000
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    diag = draws[:, np.arange(4), np.arange(4)].ravel()
    rows, cols = np.triu_indices(4, k=1)
    upper = draws[:, rows, cols].ravel()
    # Sample variances of 12,000 / 18,000 normals: relative sd sqrt(2/n) < 1.3%;
    # 5 sd tolerance.
    assert np.var(diag) == pytest.approx(1.0, rel=0.065)
    assert np.var(upper) == pytest.approx(0.5, rel=0.055)
    # Expected squared Frobenius error d (d + 1) sigma^2 / 2 = 10 (not d^2 = 16).
    assert np.mean(np.sum(draws**2, axis=(1, 2))) == pytest.approx(10.0, rel=0.05)


@pytest.mark.parametrize("exact", [True, False])
def test_symmetric_laplace_noise_is_mirrored_with_equal_scales(exact):
    mech = SymmetricLaplaceMechanism(sensitivity=1.0, epsilon=1.0, exact=exact)
    draws = np.stack([mech.randomise(np.zeros((3, 3)), rng) for rng in range(3000)])
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    # Laplace(b=1) has variance 2; 9,000 draws each, 10% tolerance (~4 sd).
    diag = draws[:, np.arange(3), np.arange(3)].ravel()
    rows, cols = np.triu_indices(3, k=1)
    upper = draws[:, rows, cols].ravel()
    assert np.var(diag) == pytest.approx(2.0, rel=0.1)
    assert np.var(upper) == pytest.approx(2.0, rel=0.1)


def test_symmetric_release_reads_the_upper_triangle():
    # The output is exactly symmetric; its upper triangle is the lattice release
    # of the value's upper triangle.
    mech = SymmetricGaussianMechanism(sensitivity=1e-3, rho=1e4)
    value = np.array([[1.0, 2.0], [2.0, 3.0]])
    out = mech.randomise(value, random_state=0)
    assert out[0, 1] == out[1, 0]
    np.testing.assert_allclose(out, value, atol=1e-4)  # sigma = 7e-6


def test_large_matrix_noise_is_vectorised():
    mech = SymmetricGaussianMechanism(sensitivity=1.0, rho=1.0)
    noisy = mech.randomise(np.zeros((500, 500)), random_state=0)
    assert noisy.shape == (500, 500)
    assert np.array_equal(noisy, noisy.T)


def test_random_state_int_reproducible_none_fresh():
    mech = GaussianMechanism(sensitivity=1.0, rho=1.0)
    a = mech.randomise(np.zeros(5), random_state=7)
    b = mech.randomise(np.zeros(5), random_state=7)
    np.testing.assert_array_equal(a, b)
    c = mech.randomise(np.zeros(5))
    d = mech.randomise(np.zeros(5))
    assert not np.array_equal(c, d)


def test_draws_count_every_release():
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    assert mech.draws == 0
    mech.randomise(0.0, 0)
    mech.randomise(np.zeros(3), 1)
    assert mech.draws == 2
    with pytest.raises(ValueError, match="NaN or infinity"):
        mech.randomise([np.nan])
    assert mech.draws == 2  # nothing was drawn


def test_scalar_value_gives_a_scalar():
    out = GaussianMechanism(sensitivity=1.0, rho=1.0).randomise(2.0, random_state=0)
    assert np.ndim(out) == 0
    assert math.isfinite(float(out))


@pytest.mark.parametrize(
    ("factory", "error", "match"),
    [
        (
            lambda: GaussianMechanism(sensitivity=0.0, rho=1.0),
            ValueError,
            "sensitivity must be > 0",
        ),
        (
            lambda: GaussianMechanism(sensitivity=1.0, rho=0.0),
            ValueError,
            "rho must be",
        ),
        (
            lambda: GaussianMechanism(sensitivity=1.0, rho=math.inf),
            ValueError,
            "rho must be finite",
        ),
        (
            lambda: LaplaceMechanism(sensitivity=-1.0, epsilon=1.0),
            ValueError,
            "sensitivity must be",
        ),
        (
            lambda: LaplaceMechanism(sensitivity=1.0, epsilon=math.nan),
            ValueError,
            "finite",
        ),
        (
            lambda: GaussianMechanism(sensitivity=1.0, rho=1.0, exact="yes"),
            TypeError,
            "exact must be a bool",
        ),
        (
            lambda: GaussianMechanism(sensitivity=1e-305, rho=1.0),
            ValueError,
            "too small for a float64 lattice",
        ),
    ],
)
def test_invalid_calibration(factory, error, match):
    with pytest.raises(error, match=match):
        factory()


def test_calibration_limits_are_clear_errors():
    # Far more entries than a tiny budget can round exactly in int64.
    with pytest.raises(ValueError, match="rho is too small for this many entries"):
        GaussianMechanism(sensitivity=1.0, rho=1e-14).lattice_variance(10**6)
    with pytest.raises(ValueError, match="epsilon is too small for this many entries"):
        LaplaceMechanism(sensitivity=1.0, epsilon=1e-12).lattice_scale(10**6)


def test_invalid_values():
    mech = GaussianMechanism(sensitivity=1.0, rho=1.0)
    with pytest.raises(ValueError, match="NaN or infinity"):
        mech.randomise([0.0, np.nan])
    sym = SymmetricGaussianMechanism(sensitivity=1.0, rho=1.0)
    with pytest.raises(ValueError, match="square matrix"):
        sym.randomise(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        sym.randomise(np.array([[0.0, 1.0], [0.0, 0.0]]))


def test_repr_names_cost():
    assert "rho=0.5" in repr(GaussianMechanism(sensitivity=1.0, rho=0.5))
    assert "epsilon=1 (pure)" in repr(
        SymmetricLaplaceMechanism(sensitivity=1, epsilon=1)
    )


def test_symmetry_check_raises_no_float_error_on_tiny_entries():
    # Under np.seterr(all="raise") the relative check underflowed on entries
    # near 1e-300: an exception that depends on the values.
    from dpgauss.mechanisms import SymmetricGaussianMechanism

    M = np.full((3, 3), 1e-300)
    mech = SymmetricGaussianMechanism(sensitivity=1.0, rho=1.0)
    with np.errstate(all="raise"):
        out = mech.randomise(M, np.random.default_rng(0))
    assert out.shape == (3, 3)


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_randomise_blocks_is_the_block_diagonal_release(kind, exact):
    # The blocks get the noise of the diagonal blocks of randomise() on the
    # block-diagonal matrix: the lattice calibrated for K d (effective_scale(K d)),
    # diagonal variance s^2 (Gaussian) or 2 s^2 (Laplace), off-diagonal s^2 / 2
    # (Gaussian) or 2 s^2, one draw counted per call. 4,000 draws give 48,000
    # diagonal and 72,000 off-diagonal values: the relative standard error of a
    # sample variance is sqrt((kurtosis - 1) / N) <= sqrt(5 / 48,000) = 1%, so
    # rel=0.05 is 5 standard errors.
    from dpgauss.mechanisms import SymmetricGaussianMechanism as SG
    from dpgauss.mechanisms import SymmetricLaplaceMechanism as SL

    K, d = 3, 4
    if kind == "gaussian":
        mech = SG(sensitivity=1.0, rho=1.0, exact=exact)
    else:
        mech = SL(sensitivity=1.0, epsilon=1.0, exact=exact)
    rng = np.random.default_rng(0)
    draws = np.array(
        [mech.randomise_blocks(np.zeros((K, d, d)), rng) for _ in range(4000)]
    )
    assert mech.draws == 4000
    assert draws.shape == (4000, K, d, d)
    assert np.array_equal(draws, np.swapaxes(draws, -1, -2))
    scale = mech.effective_scale(K * d)
    if kind == "gaussian":
        diagonal, off = scale**2, scale**2 / 2
    else:
        diagonal = off = 2 * scale**2
    upper = np.triu_indices(d, 1)
    assert draws[:, :, np.arange(d), np.arange(d)].var() == pytest.approx(
        diagonal, rel=0.05
    )
    assert draws[:, :, upper[0], upper[1]].var() == pytest.approx(off, rel=0.05)
    if exact:
        grid = mech.grid
        assert np.all(np.round(draws / grid) * grid == draws)
    # The full release of the block-diagonal matrix uses the same lattice.
    full = mech.randomise(np.zeros((K * d, K * d)), rng)
    if exact:
        assert np.all(np.round(full / mech.grid) * mech.grid == full)
