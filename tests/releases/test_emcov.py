"""EMCov (``releases._emcov``): the Bingham sampler, the exponential-mechanism
steps, their plan entries and factories, and the release."""

import math

import numpy as np
import pytest
from scipy import integrate

from dpgauss.accounting import ZCDP, PureDP, split_cost
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.mechanisms._checks import check_plan
from dpgauss.releases._covariance import method_entries
from dpgauss.releases._emcov import (
    BinghamMechanism,
    _complement_basis,
    eigen_entries,
    eigen_release,
    sample_bingham,
)
from dpgauss.utils._sums import clipped_sums, summation_error


@pytest.mark.parametrize("a", [0.5, 5.0, 50.0])
def test_bingham_sampler_on_the_circle_is_exact(a):
    # Density exp(-a sin^2 phi) on the circle: E[x_2^2] by quadrature. 8,000
    # draws: x_2^2 in [0, 1] has sd <= 0.5, so the mean's sd <= 0.0056; 5 sd.
    rng = np.random.default_rng(1)
    draws = np.array([sample_bingham(np.diag([0.0, a]), rng) for _ in range(8_000)])
    weight = lambda p: np.exp(-a * np.sin(p) ** 2)  # noqa: E731
    exact = (
        integrate.quad(lambda p: np.sin(p) ** 2 * weight(p), 0, 2 * np.pi)[0]
        / integrate.quad(weight, 0, 2 * np.pi)[0]
    )
    assert np.mean(draws[:, 1] ** 2) == pytest.approx(exact, abs=0.028)
    np.testing.assert_allclose(np.linalg.norm(draws, axis=1), 1.0)


def test_bingham_sampler_in_five_dimensions_matches_importance_sampling():
    a = np.array([0.0, 1.0, 3.0, 10.0, 30.0])
    rng = np.random.default_rng(2)
    # 8,000 draws: each E[x_j^2] to within 5 sd (<= 0.028); the importance-
    # sampling reference (500,000 uniform points) is far more precise.
    draws = np.array([sample_bingham(np.diag(a), rng) for _ in range(8_000)])
    u = rng.standard_normal((500_000, 5))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = np.exp(-(u * u) @ a)
    reference = (u * u * w[:, None]).sum(axis=0) / w.sum()
    np.testing.assert_allclose(np.mean(draws**2, axis=0), reference, atol=0.028)


def test_bingham_sampler_degenerate_cases():
    rng = np.random.default_rng(3)
    # One dimension: a sign, each with probability 1/2 (2,000 draws: sd of the
    # mean 1/sqrt(2000) = 0.022; 5 sd).
    signs = np.array([sample_bingham(np.ones((1, 1)), rng)[0] for _ in range(2000)])
    assert set(signs) == {-1.0, 1.0}
    assert abs(signs.mean()) < 0.11
    # A multiple of the identity is the uniform distribution on the sphere.
    u = sample_bingham(3.0 * np.eye(4), rng)
    assert u.shape == (4,)
    assert np.linalg.norm(u) == pytest.approx(1.0)


# -- plan entries and factories ---------------------------------------------------


@pytest.mark.parametrize("cost", [ZCDP(0.4), PureDP(1.5)])
@pytest.mark.parametrize("d", [1, 2, 5])
def test_entries_compose_to_the_cost(cost, d):
    entries = eigen_entries(cost, d)
    names = [r.name for r in entries]
    assert names == ["eigenvalues"] + [f"eigenvector_{i}" for i in range(1, d)]
    if d == 1:  # no direction to choose: the eigenvalue takes everything
        assert entries[0].cost == cost
    else:
        values, vectors = split_cost(cost, [0.5, 0.5])
        assert entries[0].cost == values
        steps = {r.cost for r in entries[1:]}
        assert len(steps) == 1
        assert all(r.kind == "exponential" for r in entries[1:])
        # Each step is pure: eps / (2 (d - 1)) of a pure cost, eps^2 / 2 =
        # rho / (2 (d - 1)) of a zCDP one.
        (step,) = steps
        assert isinstance(step, PureDP)
        if isinstance(cost, PureDP):
            assert step.epsilon == pytest.approx(vectors.epsilon / (d - 1))
        else:
            assert step.epsilon**2 / 2 == pytest.approx(vectors.rho / (d - 1))
    # The steps, composed in the total's currency, spend at most the cost:
    # to the last bit for pure DP, within rounding of the square root for zCDP.
    spent = ReleasePlan(cost, entries).spent()  # refused if above the cost
    value = spent.epsilon if isinstance(cost, PureDP) else spent.rho
    assert value == pytest.approx(
        cost.epsilon if isinstance(cost, PureDP) else cost.rho
    )


@pytest.mark.parametrize("cost", [ZCDP(0.4), PureDP(1.5)])
def test_factories_build_bingham_steps_at_the_planned_cost(cost):
    n, d, r = 500, 4, 2.0
    plan = ReleasePlan(cost, method_entries("eigen", cost, d, n, r))
    built = check_plan(plan, "Test")
    # The utility's sensitivity r^2 plus the rounding of the computed n M
    # (2 n e r^2, every row its own chunk at the worst case).
    rounding = 2.0 * n * summation_error(n, n)
    for i in range(1, d):
        mech = built[f"eigenvector_{i}"]
        assert isinstance(mech, BinghamMechanism)
        assert mech.cost == plan.cost(f"eigenvector_{i}")
        assert mech.sensitivity == r * r * (1.0 + rounding)
        assert mech.coefficient == mech.cost.epsilon / (2.0 * mech.sensitivity)
        assert mech.draws == 0


def test_bingham_mechanism_refusals():
    with pytest.raises(TypeError, match="pure cost"):
        BinghamMechanism(ZCDP(1.0), radius=1.0)
    for radius in (np.inf, np.nan, 1e200):
        with pytest.raises(ValueError, match="not a positive finite number"):
            BinghamMechanism(PureDP(1.0), radius=radius)
    # The plan's factory checks the radius first, so a fit never gets here.
    with pytest.raises(ValueError, match="data_norm=0"):
        method_entries("eigen", PureDP(1.0), 2, 10, 0.0)[1].build()


# -- privacy of one step ----------------------------------------------------------


def _log_density_on_the_circle(C, c, phi):
    """log p(u(phi)) for p(u) ∝ exp(c u^T C u), normalized by quadrature."""
    quad = lambda p: (  # noqa: E731
        C[0, 0] * np.cos(p) ** 2
        + 2 * C[0, 1] * np.cos(p) * np.sin(p)
        + C[1, 1] * np.sin(p) ** 2
    )
    top = np.linalg.eigvalsh(C)[-1]  # shift for a stable normalizer
    z = integrate.quad(lambda p: np.exp(c * (quad(p) - top)), 0, 2 * np.pi)[0]
    return c * (quad(phi) - top) - math.log(z)


def test_one_step_is_epsilon_dp_for_rows_far_outside_the_ball():
    # Neighbours differ in one row, moved 1e12 radii away (clipped to the
    # ball). On the circle the step's density is computed exactly (quadrature
    # to 1e-10 relative), so the log ratio of the two densities must be at
    # most eps everywhere: 2 c D with D the utility's sensitivity.
    n, r, eps = 30, 1.5, 0.8
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 2)) * [1.0, 0.3]
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) / r)
    X[0] = 0.0
    Y = X.copy()
    Y[0] = [1e12 * r, -1e12 * r]
    mech = BinghamMechanism(PureDP(eps), r, rounding=2.0 * n * summation_error(n))
    C = [n * clipped_sums(Z, np.zeros(2), r)[1] / n for Z in (X, Y)]
    # The utility moves by at most the sensitivity (here by r^2 exactly).
    assert np.linalg.norm(C[0] - C[1], 2) <= mech.sensitivity
    phi = np.linspace(0, 2 * np.pi, 721)
    log_ratio = np.abs(
        _log_density_on_the_circle(C[0], mech.coefficient, phi)
        - _log_density_on_the_circle(C[1], mech.coefficient, phi)
    )
    assert log_ratio.max() <= eps * (1 + 1e-9)
    # Tight: the far row's direction gains about eps / 2 on one side.
    assert log_ratio.max() > eps / 4


def test_select_concentrates_on_the_top_eigenvector_and_counts_draws():
    # Density ∝ exp(c u^T C u) with gap g between the two top eigenvalues:
    # near the top eigenvector the mass off it is about (m - 1) / (2 c g) =
    # 2 / (2 * 1e6) here; 1e-3 leaves three orders of magnitude.
    mech = BinghamMechanism(PureDP(2e6), radius=1.0)
    C = np.diag([2.0, 1.0, 0.5])
    rng = np.random.default_rng(5)
    for k in range(1, 4):
        u = mech.select(C, rng)
        assert abs(u[0]) > 1 - 1e-3
        assert mech.draws == k


# -- the release ------------------------------------------------------------------


@pytest.mark.parametrize("m", [2, 3, 6])
def test_complement_basis_is_orthonormal_and_orthogonal_to_the_release(m):
    rng = np.random.default_rng(m)
    d = m + 2
    P = np.linalg.qr(rng.normal(size=(d, m)))[0]
    for u in (rng.normal(size=m), np.eye(m)[1]):  # also u[0] == 0
        u /= np.linalg.norm(u)
        Q = _complement_basis(P, u)
        assert Q.shape == (d, m - 1)
        np.testing.assert_allclose(Q.T @ Q, np.eye(m - 1), atol=1e-12)
        np.testing.assert_allclose(Q.T @ (P @ u), 0.0, atol=1e-12)
        # Inside the span of P: the complement of released directions.
        np.testing.assert_allclose(P @ (P.T @ Q), Q, atol=1e-12)


def _release(M, n, cost, cap=1.0, seed=0):
    d = M.shape[0]
    plan = ReleasePlan(cost, method_entries("eigen", cost, d, n, 1.0))
    out = eigen_release(M, n, plan, {"n_partials": 1}, np.random.default_rng(seed), cap)
    plan.finish()  # the eigenvalues and every step drew exactly once
    return out


@pytest.mark.parametrize("cost", [ZCDP(1e6), PureDP(1e4)])
def test_a_huge_budget_recovers_a_clear_spectrum(cost):
    # Eigenvalue noise sd about sqrt(2) r^2 / (n sqrt(rho)) = 1e-9 (1e-7 for
    # the Laplace release); the steps' angular error is about
    # sqrt(d / (c n gap)) <= 1e-2 with c = eps_i / 2 >= 700.
    M = np.diag([0.5, 0.2, 0.05])
    values, vectors, sd = _release(M, 10**5, cost)
    np.testing.assert_allclose(values, [0.5, 0.2, 0.05], atol=1e-4)
    np.testing.assert_allclose(np.abs(vectors), np.eye(3), atol=1e-2)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(3), atol=1e-12)
    assert 0 < sd < 1e-4


@pytest.mark.parametrize("cap", [0.0, 0.1, 1.0])
def test_released_values_are_decreasing_nonnegative_and_capped(cap):
    # A small budget: the projection onto {decreasing, >= 0, sum <= cap} is
    # post-processing and holds for every draw.
    M = np.diag([0.4, 0.3, 0.2, 0.1])
    for seed in range(10):
        values, vectors, sd = _release(M, 50, ZCDP(0.01), cap=cap, seed=seed)
        assert np.all(np.diff(values) <= 0)
        assert np.all(values >= 0)
        assert values.sum() <= cap * (1 + 1e-12)
        np.testing.assert_allclose(vectors.T @ vectors, np.eye(4), atol=1e-10)
        assert math.isfinite(sd)
        assert sd > 0


def test_one_feature_spends_everything_on_the_eigenvalue():
    values, vectors, _ = _release(np.array([[0.3]]), 1000, PureDP(1e4))
    assert values == pytest.approx([0.3], abs=1e-3)
    assert abs(vectors[0, 0]) == 1.0
