"""Covariance methods: projections, sensitivities, releases, the auto choice."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.releases._covariance import (
    choose_method,
    covariance_entries,
    predicted_gauss_error,
    release_covariance,
)
from dpgauss.releases._threshold_search import tau_grid, threshold_queries
from dpgauss.utils._linalg import (
    eigh_descending,
    project_simplex_capped,
    project_trace,
)
from dpgauss.utils._sums import clipped_sums

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def symmetric(draw, d=None):
    d = d or draw(st.integers(1, 6))
    A = draw(arrays(np.float64, (d, d), elements=finite))
    return (A + A.T) / 2


@st.composite
def psd_with_trace_at_most(draw, d, cap):
    B = draw(arrays(np.float64, (d, d), elements=finite))
    P = B @ B.T
    trace = np.trace(P)
    return (
        P if trace <= cap or trace == 0 else P * (cap / trace) * draw(st.floats(0, 1))
    )


@settings(max_examples=200, deadline=None)
@given(
    v=arrays(np.float64, st.integers(1, 8), elements=finite),
    cap=st.floats(0.01, 20),
    data=st.data(),
)
def test_simplex_projection_is_a_projection(v, cap, data):
    p = project_simplex_capped(v, cap)
    assert np.all(p >= 0)
    assert p.sum() <= cap * (1 + 1e-9)
    # Projection onto a convex set: never farther from any point of the set.
    u = data.draw(arrays(np.float64, v.shape, elements=st.floats(0, 1)))
    u = u * (cap / max(u.sum(), cap))
    assert np.linalg.norm(p - u) <= np.linalg.norm(v - u) + 1e-9


@settings(max_examples=100, deadline=None)
@given(data=st.data(), d=st.integers(1, 5), cap=st.floats(0.1, 10))
def test_trace_projection_never_increases_the_error(data, d, cap):
    # The truth (PSD, trace <= cap) is in the convex set, so projecting a noisy
    # symmetric estimate onto it can only bring it closer (DLY Appendix C).
    noisy = data.draw(symmetric(d))
    truth = data.draw(psd_with_trace_at_most(d, cap))
    projected = project_trace(noisy, cap)
    assert np.linalg.eigvalsh(projected).min() >= -1e-9
    assert np.trace(projected) <= cap * (1 + 1e-9)
    assert np.linalg.norm(projected - truth) <= np.linalg.norm(noisy - truth) + 1e-9


@st.composite
def neighbours(draw):
    d = draw(st.integers(1, 5))
    n = draw(st.integers(2, 7))
    X = draw(arrays(np.float64, (n, d), elements=finite))
    Y = X.copy()
    Y[draw(st.integers(0, n - 1))] = draw(arrays(np.float64, (d,), elements=finite))
    return X, Y


@settings(max_examples=200, deadline=None)
@given(pair=neighbours(), radius=st.floats(0.1, 5))
def test_eigenvalue_trace_and_bias_sensitivities(pair, radius):
    X, Y = pair
    n, d = X.shape
    r2, tol = radius**2, 1 + 1e-9
    Mx = clipped_sums(X, np.zeros(d), radius)[1] / n
    My = clipped_sums(Y, np.zeros(d), radius)[1] / n
    diff = eigh_descending(Mx)[0] - eigh_descending(My)[0]
    assert np.linalg.norm(diff) <= math.sqrt(2) * r2 / n * tol + 1e-12  # Lemma 8
    assert np.abs(diff).sum() <= 2 * r2 / n * tol + 1e-12  # ADK+19 Lemma 12
    assert abs(np.trace(Mx) - np.trace(My)) <= r2 / n * tol + 1e-12
    # The threshold search's queries (with any public noise offsets) move by at
    # most their stated sensitivity, which is 1 up to a rounding term.
    nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
    noise = np.linspace(0.0, 0.1, tau_grid(radius).size) * r2
    qx, sens = threshold_queries(nx, radius, noise, n)
    qy, sens_y = threshold_queries(ny, radius, noise, n)
    assert sens == sens_y
    assert sens <= 1 + 1e-12
    assert np.all(np.abs(qx - qy) <= sens)


def _unit_rows(n, d, seed, decay=0.7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * decay ** np.arange(d)
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def _release(method, M, n, cost, cap=1.0, seed=0):
    """Run one covariance release from a one-method plan; check the plan after."""
    d = M.shape[0]
    plan = ReleasePlan(cost, covariance_entries(method, cost, d, n, 1.0))
    case = {"n_partials": 1}
    values, vectors, sd = release_covariance(
        method, M, n, plan, case, np.random.default_rng(seed), cap
    )
    plan.finish()  # every planned release drew exactly once
    return (vectors * values) @ vectors.T, values, sd


@pytest.mark.parametrize("method", ["gauss", "separate", "eigen"])
@pytest.mark.parametrize("cost", [ZCDP(1e6), PureDP(1e4)])
def test_releases_recover_the_second_moment_with_a_huge_budget(method, cost):
    X = _unit_rows(2000, 5, 0)
    M = X.T @ X / 2000
    estimate, _, _ = _release(method, M, 2000, cost)
    np.testing.assert_allclose(estimate, estimate.T, atol=1e-12)
    assert np.linalg.eigvalsh(estimate).min() >= -1e-12
    assert np.trace(estimate) <= 1.0 + 1e-9
    assert np.linalg.norm(estimate - M) < 0.02 * np.linalg.norm(M)


def test_separate_pairs_eigenvalues_with_their_eigenvectors():
    # Clear spectrum: the release must put the largest eigenvalue on the top
    # eigenvector (the authors' SVD version mis-pairs indefinite directions).
    M = np.diag([0.5, 0.2, 0.05])
    estimate, _, _ = _release("separate", M, 10**6, ZCDP(10.0))
    values, vectors = eigh_descending(estimate)
    np.testing.assert_allclose(values, [0.5, 0.2, 0.05], atol=1e-3)
    np.testing.assert_allclose(np.abs(vectors), np.eye(3), atol=1e-2)


def test_trace_cap_is_applied():
    estimate, _, _ = _release("gauss", np.eye(4) * 0.01, 10, ZCDP(1e-3), cap=0.05)
    assert np.trace(estimate) <= 0.05 + 1e-9


@pytest.mark.parametrize("method", ["gauss", "separate", "eigen"])
@pytest.mark.parametrize("cap", [0.0, -1.0, 1e-300, np.nan, 1.0])
@pytest.mark.parametrize("cost", [ZCDP(1e-12), ZCDP(1e12), PureDP(1e-6)])
def test_releases_complete_for_adversarial_noise_and_caps(method, cap, cost):
    # Once charged, a fit must complete whatever the noise: caps of 0, negative
    # or NaN (a private trace bound of 0), noise 1e150 times the statistic, or
    # almost none (smaller budgets are refused before any spend, see
    # tests/test_base.py). The output is always a finite PSD matrix with
    # trace <= cap.
    M = np.diag([0.5, 0.0, 0.0])
    estimate, values, sd = _release(method, M, 3, cost, cap=cap)
    assert np.all(np.isfinite(estimate))
    assert np.all(values >= 0)
    assert np.sum(values) <= (cap if cap > 0 else 0.0) * (1 + 1e-9) + 1e-300
    assert np.isfinite(sd)


def test_model_floor_keeps_the_model_consistent():
    # All released eigenvalues 0 (noise swamped everything): the floor stays
    # positive, tiny (2^-52 cap / d: the estimate stays the zero matrix's
    # error, where the noise sd 1e6 would make it a million times worse), and
    # the model is a proper Gaussian.
    est = BasePrivateCovariance()
    fitted = est._model_attributes(np.zeros(3), np.zeros(3), np.eye(3), 1e6, 1.0)
    assert fitted["eigenvalue_floor_"] == pytest.approx(2.0**-52 / 3)
    np.testing.assert_allclose(fitted["covariance_"] @ fitted["precision_"], np.eye(3))


def test_choose_method_follows_the_theory():
    # The denoised GaussCov keeps a direction above the noise level with error
    # ~ sqrt(2) sigma and loses one below it, so its error is at most about
    # sqrt(2 t sigma) and at most the trace: it is predicted (and measured, see
    # benchmarks/bench_quality.py) to beat SeparateCov, which pays the same
    # eigenvector error at half the budget plus the eigenvalues' noise.
    def choose(n, d, trace, cost=None):
        cost = cost or ZCDP(0.1)
        plan = ReleasePlan(cost, covariance_entries("auto", cost, d))
        return choose_method(plan, n, d, 1.0, trace)

    assert choose(50_000, 10, trace=1.0) == "gauss"
    assert choose(50_000, 200, trace=0.04) == "gauss"
    assert choose(1000, 800, trace=1.0) == "gauss"
    assert choose(50_000, 800, trace=0.02, cost=PureDP(2.0)) == "gauss"


def test_predicted_gauss_error_uses_the_trace():
    cost, n, d = ZCDP(0.1), 1000, 200
    plain = predicted_gauss_error(cost, n, d, 1.0)
    assert predicted_gauss_error(cost, n, d, 1.0, trace=1e-9) == pytest.approx(1e-9)
    assert predicted_gauss_error(cost, n, d, 1.0, trace=0.5) < plain
    assert predicted_gauss_error(cost, n, d, 1.0, trace=1e9) == plain
