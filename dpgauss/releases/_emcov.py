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

from dpgauss.accounting import PureDP, split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.releases._denoise import monotone_decreasing
from dpgauss.utils._linalg import eigh_descending, project_simplex_capped

__all__ = ["BinghamMechanism", "eigen_entries", "eigen_release", "sample_bingham"]

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


class BinghamMechanism:
    """One EMCov eigenvector step: the exponential mechanism on the unit sphere.

    Utility ``u^T C u`` with ``C = P^T (n M) P``, sensitivity ``r^2`` (module
    docstring); sampling ``p(u) ∝ exp(c u^T C u)`` with ``c = eps / (2 r^2)`` is
    eps-DP. Under zCDP the step counts as ``eps^2 / 2``.

    Parameters
    ----------
    cost : PureDP
        The step's cost.
    radius : float
        The clipping radius r.
    rounding : float, default=0.0
        Relative rounding slack of the utility (``2 n e``, e from
        :func:`dpgauss.utils._sums.summation_error`).

    Attributes
    ----------
    cost : PureDP
        The step's cost.
    draws : int
        Number of samples drawn (a fit draws once per step).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._emcov import BinghamMechanism
    >>> mech = BinghamMechanism(PureDP(1.0), radius=1.0)
    >>> u = mech.select(np.diag([100.0, 0.0]), np.random.default_rng(0))
    >>> round(float(np.linalg.norm(u)), 6)
    1.0
    """

    def __init__(self, cost, radius, rounding=0.0):
        if not isinstance(cost, PureDP):
            raise TypeError(f"an EMCov step has a pure cost, got {cost!r}.")
        self.cost = cost
        # Sensitivity r^2, plus the rounding of the computed n M (rounding r^2,
        # see dpgauss.utils._sums.summation_error, times n). The sampler itself
        # works under idealized real arithmetic (a continuous output).
        self.sensitivity = radius * radius * (1.0 + rounding)
        self.coefficient = cost.epsilon / (2.0 * self.sensitivity)
        if not (math.isfinite(self.coefficient) and self.coefficient > 0):
            raise ValueError(
                f"the EMCov coefficient eps / (2 r^2) = {self.coefficient!r} is not "
                "a positive finite number."
            )
        self.draws = 0

    def select(self, C, rng):
        """Draw a unit vector from ``exp(c u^T C u)`` (C symmetric PSD)."""
        self.draws += 1
        top = np.linalg.eigvalsh(C)[-1]
        return sample_bingham(self.coefficient * (top * np.eye(C.shape[0]) - C), rng)


def eigen_entries(cost, d):
    """The releases of EMCov at ``cost``: the eigenvalues, then d - 1 steps.

    Half the cost releases the eigenvalues as in SeparateCov; the other half is
    split evenly over the d - 1 eigenvector steps, each pure eps_i-DP: eps_i =
    eps / (2 (d - 1)) for a pure cost; for zCDP, eps_i^2 / 2 = rho / (2 (d - 1)).
    The last direction is determined by the others (no cost).

    Parameters
    ----------
    cost : ZCDP or PureDP
        The covariance release's cost.
    d : int
        Number of features.

    Returns
    -------
    tuple of Release
        ``eigenvalues``, ``eigenvector_1``, ..., ``eigenvector_{d-1}``.
    """
    from dpgauss.accounting._plan import Release

    kind = kind_of(cost)
    if d == 1:  # no eigenvector to choose: the whole cost goes to the eigenvalue
        return (Release("eigenvalues", cost, kind),)
    value_cost, vector_cost = split_cost(cost, [0.5, 0.5])
    steps = d - 1
    if isinstance(vector_cost, PureDP):
        step = PureDP(vector_cost.epsilon / steps)
    else:
        step = PureDP(math.sqrt(2.0 * vector_cost.rho / steps))
    steps = [Release(f"eigenvector_{i + 1}", step, "exponential") for i in range(d - 1)]
    return (Release("eigenvalues", value_cost, kind), *steps)


def eigen_release(M, n, plan, case, rng, cap):
    """EMCov: eigenvalues as in SeparateCov, eigenvectors by the exponential mechanism.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        Exact second moment of rows clipped to the radius.
    n : int
        Number of rows.
    plan : ReleasePlan
        The fit's plan (releases ``eigenvalues`` and ``eigenvector_i``).
    case : dict
        The keyword arguments of the releases' factories for this fit.
    rng : numpy.random.Generator
        Source of randomness.
    cap : float
        Upper bound on ``tr M``.

    Returns
    -------
    values, vectors : ndarray
        Eigenvalues (projected, decreasing) and eigenvectors of the estimate.
    floor : float
        The eigenvalue noise's standard deviation.
    """
    d = M.shape[0]
    value_mech = plan.calibrate("eigenvalues", **case)
    noisy_values = value_mech.randomise(eigh_descending(M)[0], rng)
    C = n * M
    P = np.eye(d)
    directions = []
    for i in range(d - 1):
        mech = plan.calibrate(f"eigenvector_{i + 1}", **case)
        u = mech.select(P.T @ C @ P, rng)
        directions.append(P @ u)
        P = _complement_basis(P, u)
    directions.append(P[:, 0])
    vectors = np.column_stack(directions)
    values = project_simplex_capped(monotone_decreasing(noisy_values), cap)
    sd = value_mech.sd()
    return values, vectors, sd
