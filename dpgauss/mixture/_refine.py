"""Private EM refinement of a released Gaussian mixture.

One step (Park, Foulds, Chaudhuri and Welling 2017, "DP-EM", in each
component's released frame): every private row i gets responsibilities
``r_ij`` under the current released mixture (a rule reading row i and released
values only), its offset ``y_ij = A_j (x_i - mu_j)`` in component j's whitened
frame (``A_j = L_j^-1``, ``Sigma_j = L_j L_j^T``) is clipped to the ball of
radius C, and three statistics are released with Gaussian (zCDP) or Laplace
(pure DP) noise:

* ``counts_j = (1/n) sum_i r_ij``;
* ``sums_j = (1/n) sum_i r_ij y_ij`` (the k blocks as one vector);
* ``moments_j = (1/n) sum_i r_ij y_ij y_ij^T`` (the k blocks as one
  block-diagonal matrix; the off-diagonal blocks, zero, get noise that is
  discarded).

The M step (post-processing) is ``w_j ~ counts_j``, ``mu_j <- mu_j + L_j s``,
``Sigma_j <- L_j (M - s s^T) L_j^T`` with ``s = sums_j / counts_j`` and
``M = moments_j / (counts_j c(d, C))``, c the clipping shrinkage
(:func:`~dpgauss.releases._coinpress.shrinkage_factor`), the whitened
spectrum floored at its noise level.

Sensitivity (replace-one). The three releases are the weighted group
statistics of :mod:`dpgauss.releases._groups` over n, with the
responsibilities as weights and ``y_ij`` as offsets; their proof there needs
``r_ij >= 0`` and ``sum_j r_ij <= 1 - 2^-30`` in floating point, which
:func:`responsibilities` ensures for every row (a row that is not finite, or
whose log-densities are all -inf, gets ``r_i = 0``), and ``||y_ij|| <= C``
exactly (:func:`~dpgauss.utils._sums.clip_rows`). Counts: l2 ``sqrt(2) / n``,
l1 ``2 / n``; sums: l2 ``2 C / n``, l1 ``2 sqrt(d) C / n``; moments:
Frobenius ``sqrt(2) C^2 / n``, upper-triangle l1 ``(d + 1) C^2 / n``; each
plus its rounding slack. Every release is in the step's plan entries; the
steps compose.
"""

import functools
import math

import numpy as np
from scipy import linalg

from dpgauss.accounting import split_cost
from dpgauss.accounting._plan import Release
from dpgauss.releases._center import eigenvalue_floor
from dpgauss.releases._coinpress import shrinkage_factor, tail_radius
from dpgauss.releases._groups import (
    WEIGHT_MARGIN,
    weighted_count_mechanism,
    weighted_moment_mechanism,
    weighted_statistics,
    weighted_sum_mechanism,
)

__all__ = [
    "cholesky_factors",
    "log_densities",
    "refine",
    "refine_entries",
    "step_factories",
    "step_radius",
]

#: Shares of one step's cost: the counts, the first moments, the second
#: moments (the covariance's noise dominates the error: it scales with d C^2).
STEP_SPLIT = (0.10, 0.25, 0.65)
#: Per-row tail probability of the whitened clipping radius (as the
#: covariance steps; the clipping shrinkage is corrected).
BETA = 0.1
#: Responsibilities are scaled by ``1 - MARGIN`` (see the module docstring):
#: the weights' margin of the group statistics.
MARGIN = WEIGHT_MARGIN
#: A component whose released count is below this many noise sds (or below
#: d + 1 rows) keeps its previous parameters.
MIN_COUNT_SDS = 4.0

_PARTS = ("counts", "sums", "moments")


def refine_entries(cost, steps, kind, n=None, d=None, k=None):
    """The release plan's entries for ``steps`` refinement steps at ``cost``.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The refinement's whole cost, split evenly over the steps and, in each,
        by :data:`STEP_SPLIT`.
    steps : int
        Number of EM steps (at least 1).
    kind : str
        The mechanism kind for the ledger.
    n, d, k : int, default=None
        Rows, features and components (public), for each release's factory
        (:func:`step_factories`; n is None when a fit is priced without it).

    Returns
    -------
    list of Release
        ``refine{t}_counts``, ``refine{t}_sums``, ``refine{t}_moments`` for
        t = 1..steps.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.mixture._refine import refine_entries
    >>> [r.name for r in refine_entries(ZCDP(0.2), 1, "gaussian", 100, 2, 3)]
    ['refine1_counts', 'refine1_sums', 'refine1_moments']
    """
    per_step = split_cost(cost, [1.0 / steps] * steps)
    factories = step_factories(n, d, k)
    sizes = (1, 1, 1) if k is None else (k, k * d, k * d)
    entries = []
    for t, step_cost in enumerate(per_step, start=1):
        for part, part_cost, make, size in zip(
            _PARTS, split_cost(step_cost, STEP_SPLIT), factories, sizes, strict=True
        ):
            entries.append(
                Release(f"refine{t}_{part}", part_cost, kind, make, size=size)
            )
    return entries


def step_radius(d):
    """The whitened clipping radius C of every step (public: d)."""
    return tail_radius(d, BETA)


def step_factories(n, d, k):
    """The factories of one step's three releases (every step alike): each
    ``make(cost, *, n_partials=None)`` builds its mechanism at the whitened
    radius :func:`step_radius` of d, for n rows and k components."""

    def counts(cost, *, n_partials=None):
        return weighted_count_mechanism(cost, n, k, n_partials)

    def sums(cost, *, n_partials=None):
        return weighted_sum_mechanism(cost, n, d, k, step_radius(d), n_partials)

    def moments(cost, *, n_partials=None):
        return weighted_moment_mechanism(cost, n, d, k, step_radius(d), n_partials)

    return counts, sums, moments


def cholesky_factors(covariances):
    """``(L, U)`` for each covariance: its lower Cholesky factor L and the
    upper-triangular ``U = L^-T`` with ``U U^T`` the precision
    (scikit-learn's ``precisions_cholesky_``)."""
    lowers = np.array([np.linalg.cholesky(c) for c in covariances])
    d = lowers.shape[1]
    uppers = np.array(
        [linalg.solve_triangular(L, np.eye(d), lower=True).T for L in lowers]
    )
    return lowers, uppers


def log_densities(X, weights, means, uppers):
    """``log w_j + log N(x; mu_j, Sigma_j)`` for every row and component,
    ``uppers`` the precisions' Cholesky factors (:func:`cholesky_factors`)."""
    k, d = means.shape
    out = np.empty((X.shape[0], k))
    for j in range(k):
        U = uppers[j]
        z = (X - means[j]) @ U
        logdet = float(np.sum(np.log(np.diag(U))))
        out[:, j] = (
            -0.5 * (d * math.log(2 * math.pi) + np.einsum("ij,ij->i", z, z))
            + logdet
            + math.log(max(float(weights[j]), 1e-300))
        )
    return out


def responsibilities(block, weights, means, uppers):
    """Each row's responsibilities under the released mixture, made safe.

    ``r_ij >= 0`` and ``sum_j r_ij <= 1 - MARGIN`` for every row, whatever its
    values (rows that are not finite, or too far for any density, get 0).
    Reads each row alone.
    """
    rows, k = block.shape[0], weights.shape[0]
    with np.errstate(all="ignore"):
        log = log_densities(block, weights, means, uppers)
        log[np.isnan(log)] = -np.inf
        top = log.max(axis=1, keepdims=True)
        ok = np.isfinite(top[:, 0])
        r = np.zeros((rows, k))
        e = np.exp(log[ok] - top[ok])
        r[ok] = e / e.sum(axis=1, keepdims=True)
        r = np.clip(np.nan_to_num(r, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)
    return r * (1.0 - MARGIN)


def step_statistics(X, weights, means, uppers, radius):
    """The exact (unreleased) statistics of one step, as means over rows: the
    weighted group statistics (:func:`~dpgauss.releases._groups.weighted_statistics`)
    with the responsibilities as weights and each component's whitened frame.

    Returns
    -------
    counts : ndarray of shape (k,)
    sums : ndarray of shape (k, d)
    moments : ndarray of shape (k, d, d)
    """
    n = X.shape[0]
    counts, sums, moments = weighted_statistics(
        X,
        # A partial of a module function, not a lambda: it is sent to the
        # Dask workers that compute the chunks (plain pickle suffices).
        functools.partial(
            responsibilities, weights=weights, means=means, uppers=uppers
        ),
        means,
        [U.T for U in uppers],  # the whitening A_j = L_j^-1 = U_j^T
        radius,
    )
    return counts / n, sums / n, moments / n


def _block_diagonal(moments):
    k, d, _ = moments.shape
    out = np.zeros((k * d, k * d))
    for j in range(k):
        out[j * d : (j + 1) * d, j * d : (j + 1) * d] = moments[j]
    return out


def m_step(weights, means, covariances, lowers, released, sds, n, radius):
    """The new mixture from one step's released statistics (post-processing).

    Parameters
    ----------
    weights, means, covariances, lowers : ndarray
        The current mixture and its covariances' lower Cholesky factors.
    released : tuple
        The noisy counts (k,), sums (k, d) and moments (k, d, d).
    sds : tuple of float
        The noise sds of one count, one sum entry and one diagonal moment.
    n : int
        Rows.
    radius : float
        The whitened clipping radius.

    Returns
    -------
    tuple
        (weights, means, covariances).
    """
    counts, sums, moments = released
    d = means.shape[1]
    shrink = float(shrinkage_factor(d, radius))
    new_means, new_covs = means.copy(), covariances.copy()
    positive = np.maximum(counts, 0.0)
    reliable = counts * n >= np.maximum(d + 1.0, MIN_COUNT_SDS * sds[0] * n)
    if not np.any(reliable):  # noise only: keep the mixture as it was
        return weights.copy(), new_means, new_covs
    for j in np.flatnonzero(reliable):
        s = sums[j] / counts[j]
        M = moments[j] / (counts[j] * shrink) - np.outer(s, s)
        M = 0.5 * (M + M.T)
        values, vectors = np.linalg.eigh(M)
        floor = eigenvalue_floor(values, sds[2] / (counts[j] * shrink), radius**2)
        M = (vectors * np.maximum(values, floor)) @ vectors.T
        L = lowers[j]
        with np.errstate(all="ignore"):
            cov = L @ M @ L.T
            mean = means[j] + L @ s
        if not (np.all(np.isfinite(cov)) and np.all(np.isfinite(mean))):
            continue  # overflowed (covariances near 1e307): keep the component
        cov = _positive(0.5 * (cov + cov.T))
        if np.all(np.isfinite(cov)):
            new_covs[j], new_means[j] = cov, mean
    total = positive.sum()
    new_weights = positive / total if total > 0 else weights.copy()
    return new_weights, new_means, new_covs


def _positive(cov):
    """The covariance with its spectrum floored so that it stays positive
    definite (and Cholesky-factorable) in floating point."""
    values, vectors = np.linalg.eigh(cov)
    d = values.shape[0]
    top = float(values.max())
    floor = max(d * 2.0**-50 * top, 4.0 / np.finfo(np.float64).max)
    return (vectors * np.maximum(values, floor)) @ vectors.T


def refine(X, model, plan, rng, steps, n_partials):
    """Run ``steps`` private EM steps from ``model``; return the last model.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The private rows.
    model : tuple
        (weights, means, covariances), released.
    plan : ReleasePlan
        The fit's plan, with :func:`refine_entries`.
    rng : numpy.random.Generator
        The fit's noise stream.
    steps : int
        Number of steps.
    n_partials : int
        Chunk sums added per pass.

    Returns
    -------
    tuple
        (weights, means, covariances) after the last step.
    """
    n, d = X.shape
    k = model[0].shape[0]
    radius = step_radius(d)
    weights, means, covariances = model
    for t in range(1, steps + 1):
        mechs = [
            plan.calibrate(f"refine{t}_{part}", n_partials=n_partials)
            for part in _PARTS
        ]
        lowers, uppers = cholesky_factors(covariances)
        counts, sums, moments = step_statistics(X, weights, means, uppers, radius)
        released = (
            mechs[0].randomise(counts, rng),
            mechs[1].randomise(sums.ravel(), rng).reshape(k, d),
            _blocks(mechs[2].randomise(_block_diagonal(moments), rng), k, d),
        )
        sds = [
            math.sqrt(mech.variance(size))
            for mech, size in zip(mechs, (k, k * d, k * d), strict=True)
        ]
        weights, means, covariances = m_step(
            weights, means, covariances, lowers, released, sds, n, radius
        )
    return weights, means, covariances


def _blocks(matrix, k, d):
    return np.array(
        [matrix[j * d : (j + 1) * d, j * d : (j + 1) * d] for j in range(k)]
    )
