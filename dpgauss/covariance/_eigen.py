"""EMCov (Amin, Dick, Kulesza, Munoz Medina and Vassilvitskii 2019): eigenvectors one at
a time by the exponential mechanism, sampled exactly from a Bingham distribution.

Step i works in an orthonormal basis P_i (m = d - i + 1 columns) of the
complement of the directions already released, with C_i = P_i^T (n M) P_i. It
samples a unit u from ``p(u) ∝ exp(c u^T C_i u)`` and releases ``theta_i = P_i u``.
Utility ``u^T C_i u``: replacing a row changes ``n M`` by ``y' y'^T - y y^T``, so
the utility moves by at most ``max(|P^T y'|^2, |P^T y|^2) <= r^2`` (both terms lie
in [0, r^2]): sensitivity D = r^2, and the exponential mechanism with
``c = eps_i / (2 r^2)`` is eps_i-DP. The last direction is determined by the
others (no cost). Eigenvalues are released as in SeparateCov.

The Bingham sampler is the exact rejection sampler of Kent, Ganeiber and Mardia
(2018) with an angular central Gaussian envelope: it returns exact draws.
"""

import math

import numpy as np
from scipy.optimize import brentq

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.covariance._kernels import (
    assemble,
    eigenvalue_mechanism,
    eigh_descending,
)
from dpgauss.utils.validation import split_cost

__all__ = ["eigen_release", "sample_bingham"]

_MAX_PROPOSALS = 10_000_000


def sample_bingham(A, rng):
    """Draw one unit vector from the Bingham density ``∝ exp(-x^T A x)``.

    Parameters
    ----------
    A : ndarray of shape (m, m)
        Symmetric positive semidefinite.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ndarray of shape (m,)
        A unit vector.

    Notes
    -----
    Kent, Ganeiber and Mardia (2018): with a_j the eigenvalues of A and b the
    root in (0, m] of ``sum_j 1 / (b + 2 a_j) = 1``, propose from the angular
    central Gaussian with ``Omega = I + 2A/b`` and accept with probability
    ``exp(-x^T A x) (x^T Omega x)^{m/2} / M``,
    ``M = exp(-(m - b)/2) (m/b)^{m/2}``. Rejection sampling returns exact draws.
    """
    m = A.shape[0]
    if m == 1:
        return np.array([1.0 if rng.random() < 0.5 else -1.0])
    a, Q = np.linalg.eigh(0.5 * (A + A.T))
    a = np.maximum(a - a.min(), 0.0)  # shifting A by a constant keeps the density
    if a.max() == 0.0:
        x = rng.standard_normal(m)
        return x / np.linalg.norm(x)
    b = brentq(lambda t: np.sum(1.0 / (t + 2.0 * a)) - 1.0, 1e-12, m)
    omega = 1.0 + 2.0 * a / b
    log_m = -(m - b) / 2.0 + (m / 2.0) * math.log(m / b)
    batch = max(8, int(math.sqrt(m)))
    drawn = 0
    while drawn < _MAX_PROPOSALS:
        z = rng.standard_normal((batch, m)) / np.sqrt(omega)
        x = z / np.linalg.norm(z, axis=1, keepdims=True)
        quad_a = (x * x) @ a
        quad_omega = (x * x) @ omega
        log_ratio = -quad_a + (m / 2.0) * np.log(quad_omega) - log_m
        accepted = np.flatnonzero(np.log(rng.random(batch)) < log_ratio)
        if accepted.size:
            return Q @ x[accepted[0]]
        drawn += batch
    raise RuntimeError("Bingham sampler: no proposal accepted (should not happen).")


def _complement_basis(P, u):
    """Orthonormal basis of the columns of P orthogonal to ``P @ u`` (Householder)."""
    m = u.size
    w = u.copy()
    w[0] += math.copysign(1.0, u[0]) if u[0] != 0 else 1.0
    w /= np.linalg.norm(w)
    # H maps u to -+e1, so its other columns are an orthonormal basis of u^perp.
    H = np.eye(m) - 2.0 * np.outer(w, w)
    return P @ H[:, 1:]


def eigen_release(M, n, radius, cost, rng, trace_cap=None):
    """EMCov: eigenvalues as in SeparateCov, eigenvectors by the exponential mechanism.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        Exact second moment of rows clipped to ``radius``.
    n : int
        Number of rows.
    radius : float
        Clipping radius.
    cost : ZCDP or PureDP
        Total cost: half to the eigenvalues, half split evenly over the d - 1
        eigenvector steps (each pure eps_i-DP: eps_i = eps / (2 (d - 1)) for a
        pure cost; for zCDP, eps_i^2 / 2 = rho / (2 (d - 1))).
    rng : numpy.random.Generator
        Source of randomness.
    trace_cap : float, default=None
        Upper bound on ``tr M`` (``radius**2`` if None).

    Returns
    -------
    estimate : ndarray of shape (d, d)
        The release.
    mechanism : object
        The eigenvalue mechanism (for its noise scale).
    """
    d = M.shape[0]
    value_cost, vector_cost = split_cost(cost, [0.5, 0.5])
    mechanism = eigenvalue_mechanism(value_cost, n, radius)
    noisy_values = mechanism.randomise(eigh_descending(M)[0], rng)
    steps = max(d - 1, 1)
    if isinstance(vector_cost, PureDP):
        eps_step = vector_cost.epsilon / steps
    else:
        eps_step = math.sqrt(2.0 * vector_cost.rho / steps)
    coefficient = eps_step / (2.0 * radius * radius)
    C = n * M
    P = np.eye(d)
    directions = []
    for _ in range(d - 1):
        Ci = P.T @ C @ P
        top = np.linalg.eigvalsh(Ci)[-1]
        u = sample_bingham(coefficient * (top * np.eye(P.shape[1]) - Ci), rng)
        directions.append(P @ u)
        P = _complement_basis(P, u)
    directions.append(P[:, 0])
    vectors = np.column_stack(directions)
    return assemble(vectors, noisy_values, radius, trace_cap), mechanism


def eigen_step_costs(cost, d):
    """Per-release costs of :func:`eigen_release`, for the ledger.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The total.
    d : int
        Number of features.

    Returns
    -------
    list of (cost, str)
        The eigenvalue release, then one pure eps_i cost per eigenvector step.
    """
    value_cost, vector_cost = split_cost(cost, [0.5, 0.5])
    steps = max(d - 1, 1)
    if isinstance(vector_cost, PureDP):
        step = PureDP(vector_cost.epsilon / steps)
    else:
        step = PureDP(math.sqrt(2.0 * vector_cost.rho / steps))
    kind = "gaussian" if isinstance(cost, ZCDP) else "laplace"
    return [(value_cost, f"{kind}:eigenvalues")] + [
        (step, f"exponential:eigenvector_{i + 1}") for i in range(d - 1)
    ]
