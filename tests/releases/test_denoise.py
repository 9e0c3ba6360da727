"""Tests of the spectral denoiser (post-processing of a released second moment)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpgauss.releases._denoise import (
    _denoise_unit,
    _diagonal_derivative,
    _divergence,
    denoise_spectrum,
    monotone_decreasing,
    rie_jacobian,
    rie_values,
    shrink_mean,
    shrink_trace,
)
from dpgauss.utils._linalg import project_simplex, project_simplex_capped


def _wigner(d, s, rng):
    """Symmetric Gaussian noise: off-diagonal variance s^2, diagonal 2 s^2."""
    G = rng.normal(0.0, s, (d, d))
    return (G + G.T) / np.sqrt(2.0)


def _error(M, vectors, values):
    return np.linalg.norm((vectors * values) @ vectors.T - M)


def test_rie_preserves_the_trace_and_its_jacobian_is_exact():
    rng = np.random.default_rng(0)
    values = np.sort(rng.normal(size=30))
    xi = rie_values(values, 0.01)
    assert xi.sum() == pytest.approx(values.sum(), rel=1e-12, abs=1e-12)
    jac = rie_jacobian(values, 0.01)
    h = 1e-7
    for j in (0, 7, 29):
        step = np.zeros(30)
        step[j] = h
        numeric = (
            rie_values(values + step, 0.01) - rie_values(values - step, 0.01)
        ) / (2 * h)
        np.testing.assert_allclose(jac[:, j], numeric, rtol=1e-5, atol=1e-5)


def test_rie_inverts_the_spike_bias():
    # One spike theta = 3 sigma in d = 400: the released top eigenvalue sits near
    # theta + sigma^2 / theta (BBP); the estimate should be near theta (1 -
    # sigma^2 / theta^2), the spike times its squared overlap. Tolerance: the top
    # eigenvalue fluctuates by O(d^-1/2) sigma, about 5%.
    d, s = 400, 0.05
    sigma = np.sqrt(d) * s
    theta = 3.0 * sigma
    rng = np.random.default_rng(1)
    M = np.zeros((d, d))
    M[0, 0] = theta
    values = np.linalg.eigvalsh(M + _wigner(d, s, rng))
    assert values[-1] == pytest.approx(theta + sigma**2 / theta, rel=0.05)
    xi = rie_values(values, s * s)
    assert xi[-1] == pytest.approx(theta * (1 - sigma**2 / theta**2), rel=0.05)
    # Inside the bulk, pure noise is pulled towards zero (the raw eigenvalues'
    # mean |lambda| is 8 sigma / (3 pi) ~ 0.85 sigma; the finite-d estimate is
    # rough near the edges, which the isotonic step and the blend smooth).
    assert np.mean(np.abs(xi[:-1])) < 0.25 * np.mean(np.abs(values[:-1]))


def test_diagonal_derivative_matches_finite_differences():
    rng = np.random.default_rng(2)
    d, s = 25, 0.05
    M = np.diag(np.linspace(0.0, 1.0, d) ** 3)
    values = np.linalg.eigvalsh(M + _wigner(d, s, rng))
    trace = values.sum()
    from sklearn.isotonic import isotonic_regression

    fitted = isotonic_regression(rie_values(values, s * s))
    shaped = project_simplex(fitted, trace)
    dphi = _diagonal_derivative(values, s * s, fitted, shaped > 0, 1.0)

    def phi(v):
        return project_simplex(isotonic_regression(rie_values(v, s * s)), v.sum())

    h = 1e-8
    for i in range(d):
        step = np.zeros(d)
        step[i] = h
        numeric = (phi(values + step)[i] - phi(values - step)[i]) / (2 * h)
        assert dphi[i] == pytest.approx(numeric, abs=1e-4)


def test_sure_estimates_the_risk():
    # Stein: E ||F(Y) - M||^2 = E[||F(Y) - Y||^2 + 2 tau^2 div F] - tau^2 D with
    # tau^2 the diagonal variance and D = d (d + 1) / 2. Over 200 draws, the mean
    # SURE of the shaped estimate is within 10% of the mean true loss (their sd
    # over draws is about 20% of the mean, so the means' sd is under 2%).
    from sklearn.isotonic import isotonic_regression

    d, s = 40, 0.05
    rng = np.random.default_rng(3)
    M = np.diag(np.r_[[2.0, 1.0], np.full(d - 2, 0.2)])
    tau2 = 2 * s * s
    sures, losses = [], []
    for _ in range(200):
        Y = M + _wigner(d, s, rng)
        values, vectors = np.linalg.eigh(Y)
        trace = values.sum()
        fitted = isotonic_regression(rie_values(values, s * s))
        shaped = project_simplex(fitted, trace)
        dphi = _diagonal_derivative(values, s * s, fitted, shaped > 0, 1.0)
        div = _divergence(values, shaped, dphi)
        sures.append(
            np.sum((shaped - values) ** 2) + 2 * tau2 * div - tau2 * d * (d + 1) / 2
        )
        losses.append(_error(M, vectors, shaped) ** 2)
    assert np.mean(sures) == pytest.approx(np.mean(losses), rel=0.1)


@pytest.mark.parametrize(
    ("spectrum", "s"),
    [
        (np.linspace(1.0, 0.1, 10), 0.002),  # small noise: agrees with plain
        (np.r_[5.0, 2.0, np.full(48, 0.1)], 0.02),
        (np.full(60, 0.5), 0.05),  # isotropic: the identity blend wins
        (1.0 / np.arange(1, 101), 0.01),
    ],
)
def test_denoised_is_never_much_worse_than_plain_clipping(spectrum, s):
    # Mean over 10 draws; "a few percent" = 3% where the noise is small.
    rng = np.random.default_rng(4)
    d = spectrum.size
    M = np.diag(spectrum)
    plain, denoised = [], []
    for _ in range(10):
        values, vectors = np.linalg.eigh(M + _wigner(d, s, rng))
        values, vectors = values[::-1], vectors[:, ::-1]
        plain.append(_error(M, vectors, project_simplex_capped(values, 1e9)))
        new = denoise_spectrum(values, s * s, 2 * s * s, values.sum())
        denoised.append(_error(M, vectors, new))
    assert np.mean(denoised) <= 1.03 * np.mean(plain)


def test_pure_noise_gives_the_scaled_identity():
    rng = np.random.default_rng(5)
    d, s = 100, 0.1
    M = 0.01 * np.eye(d)
    values = np.linalg.eigvalsh(M + _wigner(d, s, rng))[::-1]
    new = denoise_spectrum(values, s * s, 2 * s * s, 1.0)
    np.testing.assert_allclose(new, 0.01, rtol=0.05)


@settings(max_examples=200, deadline=None)
@given(
    values=arrays(
        np.float64,
        st.integers(1, 12),
        elements=st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
    ),
    variance=st.floats(0.0, 1e300),
    trace=st.floats(allow_nan=True, allow_infinity=True),
    cap=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)
def test_denoiser_completes_for_every_release(values, variance, trace, cap):
    # Once charged, a fit completes for every noise draw: finite, non-negative
    # eigenvalues summing to at most the cap, never an exception or warning.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = denoise_spectrum(
            np.sort(values)[::-1], variance, 2 * variance, trace, cap=cap
        )
    assert new.shape == values.shape
    assert np.all(np.isfinite(new))
    assert np.all(new >= 0)
    if cap is not None and not cap > 0:
        assert not new.any()
    elif cap is not None and np.isfinite(cap):
        assert new.sum() <= cap * (1 + 1e-9)


@settings(max_examples=200, deadline=None)
@given(
    truth=arrays(np.float64, st.integers(1, 20), elements=st.floats(-1e6, 1e6)),
    noise=arrays(np.float64, 20, elements=st.floats(-1e6, 1e6)),
)
def test_monotone_projection_never_moves_away_from_a_decreasing_truth(truth, noise):
    truth = np.sort(truth)[::-1]
    noisy = truth + noise[: truth.size]
    projected = monotone_decreasing(noisy)
    assert np.all(np.diff(projected) <= 1e-9 * (1 + np.abs(projected[1:])))
    assert (
        np.linalg.norm(projected - truth)
        <= np.linalg.norm(noisy - truth) * (1 + 1e-9) + 1e-6
    )


def test_unit_blend_is_between_shape_and_identity():
    rng = np.random.default_rng(6)
    values = np.sort(rng.normal(0.5, 0.1, 20))
    out = _denoise_unit(values, 0.01, 0.02, values.sum(), 1.0)
    assert out.sum() == pytest.approx(values.sum())
    assert np.all(out >= 0)


def test_trace_shrinkage_is_james_stein_positive_part():
    # t (1 - v / t^2)_+ with v the combined estimate's variance: no change worth
    # noting when the noise is small, 0 when the trace is within its noise of 0.
    assert shrink_trace(100.0, 1.0, 1.0) == pytest.approx(100.0 * (1 - 1e-4))
    assert shrink_trace(1.0, 1.0, 4.0) == 0.0
    # Combined: v = w^2 v_own + (1 - w)^2 v_released.
    assert shrink_trace(2.0, 0.5, 4.0, 4.0) == pytest.approx(2.0 * (1 - 2.0 / 4.0))
    assert shrink_trace(0.0, 1.0, 1.0) == 0.0
    assert shrink_trace(-1.0, 1.0, 1.0) == -1.0  # clipped to 0 by the denoiser


def test_shrunk_trace_halves_the_error_of_pure_noise():
    # A tiny truth under noise far above it (a radius far above the data): the
    # unshrunk trace makes the estimate about (t / d) I with t of the order of
    # the noise, many times worse than the zero matrix. Shrunk, t is 0 in most
    # draws (median error exactly the zero matrix's) and the mean error halves
    # (measured 16.1 -> 7.9 over these 200 draws).
    rng = np.random.default_rng(0)
    d, s = 20, 1.0
    truth = np.diag(np.full(d, 0.01))
    errors = {False: [], True: []}
    for _ in range(200):
        G = rng.normal(0.0, s, (d, d))
        Y = truth + (G + G.T) / np.sqrt(2)
        values = np.linalg.eigvalsh(Y)[::-1]
        for shrink in (False, True):
            t = float(np.trace(Y))
            t = shrink_trace(t, 1.0, d * 2 * s * s) if shrink else t
            new = denoise_spectrum(values, s * s, 2 * s * s, t, cap=100.0)
            error = np.linalg.norm(np.diag(new) - truth) / np.linalg.norm(truth)
            errors[shrink].append(error)
    assert np.median(errors[True]) == pytest.approx(1.0)
    assert np.mean(errors[True]) < 0.6 * np.mean(errors[False])


def test_zero_trace_gives_zero_eigenvalues():
    values = np.array([3.0, 1.0, -2.0])
    np.testing.assert_array_equal(denoise_spectrum(values, 1.0, 2.0, 0.0), 0.0)


def test_mean_shrinkage_at_the_center_cuts_the_error_fivefold():
    # d = 10, noise variance 1, true offset 0: the unshrunk squared error is
    # d = 10 on average; positive-part James-Stein's is below 2 (the risk of
    # plain James-Stein at 0 is 2v; measured 1.3). Its squared error has sd
    # about 3, so over 4,000 draws the mean is within 0.05 of its expectation:
    # 2.2 is 4 SE above 2.
    rng = np.random.default_rng(0)
    d, v = 10, 1.0
    plain, shrunk, estimates = [], [], []
    for _ in range(4000):
        offset = rng.normal(0.0, np.sqrt(v), d)
        kept = offset.copy()
        new, risk = shrink_mean(offset, v)
        np.testing.assert_array_equal(offset, kept)  # not modified
        plain.append(offset @ offset)
        shrunk.append(new @ new)
        estimates.append(risk)
        assert 0.0 <= risk <= d * v
    assert np.mean(plain) == pytest.approx(d, rel=0.05)
    assert np.mean(shrunk) < 2.2
    # The risk estimate, clipped at 0 where Stein's estimate is negative, errs
    # high here: on average between the realised error and 3 v (measured 2.8).
    assert np.mean(shrunk) < np.mean(estimates) < 3.0


def test_mean_shrinkage_never_costs_far_from_the_center():
    # Offset 10 sqrt(d v) away: the shrinkage is small, and on average it still
    # lowers the squared error (by (d - 2)^2 v^2 E[1 / |o|^2] ~ 0.064 here; the
    # paired differences have sd ~ 0.5, so 4,000 draws resolve it at 8 SE).
    rng = np.random.default_rng(1)
    d, v = 10, 1.0
    truth = np.full(d, 10.0)
    gains = []
    for _ in range(4000):
        offset = truth + rng.normal(0.0, 1.0, d)
        new, risk = shrink_mean(offset, v)
        gains.append(np.sum((offset - truth) ** 2) - np.sum((new - truth) ** 2))
        assert risk == pytest.approx(d * v, rel=0.02)
    assert np.mean(gains) > 0.0


def test_mean_shrinkage_edge_cases():
    # d < 3: James-Stein does not dominate, the offset is returned unchanged.
    offset = np.array([0.1, -0.2])
    new, risk = shrink_mean(offset, 1.0)
    np.testing.assert_array_equal(new, offset)
    assert risk == 2.0
    # Inside the noise: shrunk to exactly 0.
    new, risk = shrink_mean(np.full(5, 0.1), 1.0)
    np.testing.assert_array_equal(new, 0.0)
    assert risk == 0.0
    # Extreme scales neither underflow to a division by zero nor overflow.
    for scale in (1e-200, 1e200):
        new, risk = shrink_mean(np.full(5, scale), scale)
        assert np.all(np.isfinite(new))
        assert math.isfinite(risk)
    new, risk = shrink_mean(np.zeros(5), 1.0)
    np.testing.assert_array_equal(new, 0.0)
    assert risk == 5.0
