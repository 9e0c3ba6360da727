"""Gaussian and Laplace mechanisms: exact calibration, noise law, input checks."""

import math

import numpy as np
import pytest
from scipy import stats

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)


def test_gaussian_calibration_exact():
    # sigma = D / sqrt(2 rho)
    mech = GaussianMechanism(sensitivity=3.0, rho=0.125)
    assert mech.scale == 3.0 / math.sqrt(0.25)
    assert mech.cost == ZCDP(0.125)


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


@pytest.mark.parametrize(
    ("mech", "dist"),
    [
        (GaussianMechanism(sensitivity=1.0, rho=0.5), stats.norm(scale=1.0)),
        (LaplaceMechanism(sensitivity=1.0, epsilon=0.5), stats.laplace(scale=2.0)),
    ],
)
def test_noise_has_the_calibrated_law(mech, dist):
    # KS test at a fixed seed: with 20,000 draws, the KS statistic of the right law
    # is below 0.0096 with probability 0.999 (1.95 / sqrt(n)).
    noise = mech.randomise(np.zeros(20_000), random_state=0)
    assert stats.kstest(noise, dist.cdf).statistic < 1.95 / math.sqrt(20_000)


def test_symmetric_gaussian_noise_structure():
    # Diagonal ~ N(0, sigma^2), off-diagonal ~ N(0, sigma^2 / 2), mirrored.
    mech = SymmetricGaussianMechanism(sensitivity=1.0, rho=0.5)  # sigma = 1
    draws = np.stack([mech.randomise(np.zeros((4, 4)), rng) for rng in range(3000)])
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


def test_symmetric_laplace_noise_is_mirrored_with_equal_scales():
    mech = SymmetricLaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    draws = np.stack([mech.randomise(np.zeros((3, 3)), rng) for rng in range(3000)])
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    # Laplace(b=1) has variance 2; 9,000 draws each, 6% tolerance (~4 sd).
    diag = draws[:, np.arange(3), np.arange(3)].ravel()
    rows, cols = np.triu_indices(3, k=1)
    upper = draws[:, rows, cols].ravel()
    assert np.var(diag) == pytest.approx(2.0, rel=0.1)
    assert np.var(upper) == pytest.approx(2.0, rel=0.1)


def test_large_matrix_noise_is_vectorised():
    mech = SymmetricGaussianMechanism(sensitivity=1.0, rho=1.0)
    noisy = mech.randomise(np.zeros((500, 500)), random_state=0)
    assert noisy.shape == (500, 500)


def test_random_state_int_reproducible_none_fresh():
    mech = GaussianMechanism(sensitivity=1.0, rho=1.0)
    a = mech.randomise(np.zeros(5), random_state=7)
    b = mech.randomise(np.zeros(5), random_state=7)
    np.testing.assert_array_equal(a, b)
    c = mech.randomise(np.zeros(5))
    d = mech.randomise(np.zeros(5))
    assert not np.array_equal(c, d)


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (
            lambda: GaussianMechanism(sensitivity=0.0, rho=1.0),
            "sensitivity must be > 0",
        ),
        (lambda: GaussianMechanism(sensitivity=1.0, rho=0.0), "rho must be > 0"),
        (
            lambda: GaussianMechanism(sensitivity=1.0, rho=math.inf),
            "rho must be finite",
        ),
        (
            lambda: LaplaceMechanism(sensitivity=-1.0, epsilon=1.0),
            "sensitivity must be",
        ),
        (lambda: LaplaceMechanism(sensitivity=1.0, epsilon=math.nan), "finite"),
    ],
)
def test_invalid_calibration(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


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
