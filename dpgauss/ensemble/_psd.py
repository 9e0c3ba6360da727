"""The populous mean in the PSD space: covariance-like statistics, bound-free.

Candidates are symmetric d x d matrices ``Y_1..Y_k`` (one per group). The
semimetric is Ashtiani and Liaw's (2022, Eq. 5.1):
``dist(A, B) <= tau`` iff ``B / (1 + tau) <= A <= (1 + tau) B`` in the
Loewner order. With ``t = 1 + tau`` the neighbour relation is

    N(i, j)  iff  t Y_j - Y_i >= 0  and  t Y_i - Y_j >= 0,

scale-free and invariant under congruence: no bound on the matrices' size is
needed. Test, weights and ramp are those of the Euclidean populous mean
(:mod:`dpgauss.ensemble._populous`); what changes is the neighbour relation,
the sensitivity argument and the release.

**The relation as computed** (:func:`certified_neighbours`). Privacy needs two
properties only: (i) the computed relation is a fixed function of the pair
(so replacing one candidate changes the pairs it is in and no other), and (ii)
it is *sound*: computed ``N(i, j)`` implies ``t Y_j >= Y_i`` and
``t Y_i >= Y_j`` exactly. It need not be complete (a missed neighbour only
lowers a count). Soundness comes from a certified positive-definiteness test.
For ``A = t Y_j - Y_i`` (exact, real), let ``Ahat`` be its float64 value and
``Atil = Ahat - c I`` (diagonal rounded). If a Cholesky factorisation of
``Atil`` in float64 runs to completion (every pivot > 0, all finite), then
``Lhat Lhat^T = Atil + E`` with ``|E| <= g |Lhat| |Lhat^T|``,
``g = (d + 1) u / (1 - (d + 1) u)``, u = 2^-53, for any order of the inner
products (Demmel 1989; Higham, *Accuracy and Stability of Numerical
Algorithms*, Thm 10.3 and Lemma 8.4: its proof uses only that the algorithm
ran to completion). Since ``||Lhat||_F^2 = tr(Atil + E)``,
``||E||_2 <= g ||Lhat||_F^2 <= g tr(Atil) / (1 - g)``. So ``Atil + E > 0``
gives ``Atil >= -||E|| I``, and with the rounding of ``Ahat`` (each entry
within ``2.01 u (t |y_j| + |y_i|)`` of A's, Frobenius ``2.01 u N``,
``N = ||t |Y_j| + |Y_i| ||_F``) and of the shift (``u (|Ahat_aa| + c)``)

    A >= (c (1 - u) - g (1 + 3u) sqrt(d) N / (1 - g) - 3.02 u N) I >= 0

whenever ``c >= 2 u N ((d + 1) sqrt(d) + 4)``, the shift used (twice the
requirement; ``tr(Atil) <= sqrt(d) N (1 + 3u)`` by Cauchy-Schwarz on the
diagonal). Candidates are sanitised first (a fixed map of each candidate):
symmetrised, and *failed* (nobody's neighbour) unless finite, with entries at
most 2^500 in size (no overflow in ``t |Y|`` or ``N``) and a diagonal that is
non-negative with trace at least 2^-500, so that ``c >= 2^-560`` dwarfs the
absolute errors of underflow (below ``d^2 2^-1070``), which the shift's
factor 2 absorbs. An overflow inside the factorisation gives inf or NaN, a
non-positive pivot and a failed test: no false pass. The factorisation is
written out here (batched over pairs) so that one failed pair does not stop
the others. Passing both tests forces ``(t^2 - 1) Y_j >= 0``: neighbours are
PSD.

**Sensitivity of the weighted mean** (our version of the paper's Lemma 3.6 for
this space; spec Sections 12.1-12.2). Let ``mu = sum_i a_i Y_i`` (D) and
``mu' = sum_i b_i Y'_i`` (D', candidate 1 replaced), ``a_i = w_i / W``,
``b_i = w'_i / W'``, and suppose D passes (``Q >= T``, so ``W >= W_min``).
As in the Euclidean proof, any two candidates of positive weight in D or D'
share a neighbour among the unchanged ones, and an unchanged positively
weighted anchor Z exists. Soundness gives ``Y_i / t^2 <= Z <= t^2 Y_i`` for
every such candidate, so ``-(t^2 - 1) Z <= Y_i - Z <= (t^2 - 1) Z``; and ``mu``,
``mu'`` are convex combinations of such candidates, so ``Z <= t^2 mu'`` and
``Z <= t^2 mu``. With ``S = sum_{i>=2} |a_i - b_i| + a_1 + b_1``, bounded by
``S_max = (2 (k - 1) / B_w + 2) / W_min + 1 / W'_min`` exactly as in the
Euclidean proof, ``mu - mu' = sum_{i>=2} (a_i - b_i)(Y_i - Z) + a_1 (Y_1 - Z)
- b_1 (Y'_1 - Z)`` gives

    -Delta mu' <= mu - mu' <= Delta mu',   Delta = (t^2 - 1) t^2 S_max,

and the same with mu as reference (dist(mu, mu') <= Delta: the paper's
phi = 0 two-hop bound, about 19.5 / k at tau = 0.3 against its 800 / k).

**The release: a Gaussian mask on the trace-normalised mean.** Write
``nu = mu / tr(mu)`` and ``X = mu - mu'``, ``x = tr(X) / tr(mu')`` (so
``|x| <= Delta``). Then ``nu - nu' = (X / tr(mu') - x nu') / (1 + x)``, and
both ``X / tr(mu')`` and ``x nu'`` lie between ``-Delta nu'`` and ``Delta nu'``.
For ``-P <= Y <= P`` (P >= 0), ``||Y||_F <= ||P||_F`` (``Y = P^1/2 C P^1/2``
with ``||C|| <= 1``, and ``tr(PCPC) <= tr(P^2 C^2)`` since their difference is
``||PC - CP||_F^2 / 2``), and ``||nu'||_F <= tr(nu') = 1``. Hence

    ||nu - nu'||_F <= 2 Delta / (1 - Delta),
    |ln tr mu - ln tr mu'| <= -ln(1 - Delta).

The upper triangle of ``nu`` (l2 norm at most the Frobenius norm) is released
by the Gaussian mechanism at the first bound, computed exactly: the weighted
sums are exact rationals (the weights are integers) and ``nu / g`` is rounded
once, exactly, to the mechanism's lattice
(:meth:`~dpgauss.mechanisms.GaussianMechanism.randomise_lattice`). The scale
``ln tr mu`` is released by a second Gaussian mechanism at the second bound
plus ``1e-12``: ``tr mu`` is an exact rational rounded once to float64
(relative error u) and ``math.log`` is within an ulp, and
``|ln tr mu| < 746``, so the float value is within ``6e-13`` of the real one on
each dataset. Both are float-safe lattice releases, zCDP: unlike the paper's
multiplicative mask ``mu^1/2 (I + eta G)(I + eta G)^T mu^1/2``, which is
(epsilon, delta) only (its Renyi divergence is infinite for large orders) and
has no float-safe implementation here, they compose with the library's other
releases. The price: the paper's mask is congruence-equivariant, this one's
error is relative to ``tr(mu)``, so eigenvalues far below the trace carry
relatively more noise. The released matrix is
``exp(scale) * nu_hat`` with ``nu_hat``'s eigenvalues floored at the shape
noise's sd (post-processing).
"""

import math
from fractions import Fraction

import numpy as np

from dpgauss.ensemble._populous import (
    exact_weighted_sums,
    lattice_coords,
    weight_sum_bound,
)

__all__ = [
    "certified_neighbours",
    "log_distances",
    "log_vectors",
    "mean_sensitivity",
    "neighbour_counts",
    "pair_counts",
    "release_sensitivities",
    "sanitise",
    "shape_share",
    "trace_normalised_mean",
]

_U = 2.0**-53
#: Sanitised candidates have entries at most this large and a trace at least
#: its inverse.
ENTRY_LIMIT = 2.0**500
#: Extra slack on the scale release's sensitivity (float evaluation of ln tr).
LOG_SLACK = 1e-12


def sanitise(Y, d):
    """Reshape flat candidates to symmetric d x d matrices; failed ones are NaN.

    A fixed map of each candidate alone: the symmetric part ``(Y + Y^T) / 2``,
    kept only when finite, with entries at most ``2^500`` in size, a
    non-negative diagonal and a trace of at least ``2^-500``.

    Parameters
    ----------
    Y : ndarray of shape (k, d * d)
        Flat candidates (NaN rows: failed group fits).
    d : int
        The matrices' size.

    Returns
    -------
    S : ndarray of shape (k, d, d)
        Symmetric candidates, NaN where failed.
    ok : ndarray of shape (k,) of bool
        Which candidates are valid.
    """
    k = Y.shape[0]
    M = np.asarray(Y, dtype=np.float64).reshape(k, d, d)
    with np.errstate(all="ignore"):
        ok = np.all(np.isfinite(M), axis=(1, 2))
        ok &= np.all(np.abs(np.where(ok[:, None, None], M, 0.0)) <= ENTRY_LIMIT, (1, 2))
        S = np.where(ok[:, None, None], M, 0.0)
        S = (S + np.swapaxes(S, 1, 2)) / 2.0
        diag = np.diagonal(S, axis1=1, axis2=2)
        ok &= np.all(diag >= 0.0, axis=1) & (diag.sum(axis=1) >= 1.0 / ENTRY_LIMIT)
    S[~ok] = np.nan
    return S, ok


def _cholesky_completes(A):
    """Whether a float64 Cholesky factorisation of each ``A[m]`` runs to completion.

    Written out (column by column, batched over m) so that each matrix passes or
    fails on its own. Uses the lower triangle; a pivot that is not > 0 (NaN
    included) or a non-finite entry fails.
    """
    m, d, _ = A.shape
    L = np.zeros_like(A)
    ok = np.ones(m, dtype=bool)
    with np.errstate(all="ignore"):
        for j in range(d):
            row = L[:, j, :j]
            pivot = A[:, j, j] - np.einsum("mk,mk->m", row, row)
            ok &= pivot > 0.0
            root = np.sqrt(np.where(pivot > 0.0, pivot, 1.0))
            L[:, j, j] = root
            if j + 1 < d:
                done = np.einsum("mik,mk->mi", L[:, j + 1 :, :j], row)
                below = A[:, j + 1 :, j] - done
                L[:, j + 1 :, j] = below / root[:, None]
        ok &= np.all(np.isfinite(L), axis=(1, 2))
    return ok


def _dominates(t, P, R):
    """Certified ``t P[m] - R[m] >= 0`` for each m (sound, not complete)."""
    d = P.shape[1]
    with np.errstate(all="ignore"):
        A = t * P - R
        B = t * np.abs(P) + np.abs(R)
        # N = ||B||_F, scaled by a power of two (exact) so that no square
        # underflows; an upper bound after the factor for its rounding.
        top = np.max(B, axis=(1, 2))
        _, e = np.frexp(np.where(top > 0, top, 1.0))
        unit = np.ldexp(1.0, e)
        N = unit * np.sqrt(np.sum((B / unit[:, None, None]) ** 2, axis=(1, 2)))
        N = N * (1.0 + 2.0 * (d * d + 2) * _U)
        shift = 2.0 * _U * N * ((d + 1) * math.sqrt(d) + 4.0) + d * d * 2.0**-1000
        A[:, np.arange(d), np.arange(d)] -= shift[:, None]
    return _cholesky_completes(A)


def certified_neighbours(t, P, R):
    """The computed relation ``N`` for the pairs ``(P[m], R[m])``.

    True only when ``t R - P >= 0`` and ``t P - R >= 0`` hold exactly (see the
    module docstring); symmetric in the pair.

    Parameters
    ----------
    t : float
        ``1 + tau`` (a float; the relation is the one of ``t`` exactly).
    P, R : ndarray of shape (m, d, d)
        Sanitised candidates, paired row by row.

    Returns
    -------
    ndarray of shape (m,) of bool
    """
    return _dominates(t, R, P) & _dominates(t, P, R)


def log_vectors(S, ok):
    """Each candidate's matrix logarithm as a vector (Frobenius norm preserved).

    The diagonal of ``log Y_i`` and ``sqrt(2)`` times its upper entries, from
    ``eigh``; NaN for failed candidates and for those not positive definite in
    float. A fixed map of each candidate: used for sparse vector's queries and
    as a pre-filter, never as the relation itself.
    """
    k, d, _ = S.shape
    p = d * (d + 1) // 2
    out = np.full((k, p), np.nan)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return out
    iu = np.triu_indices(d)
    weight = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0))
    with np.errstate(all="ignore"):
        for i in idx:
            # One candidate at a time: LAPACK fails to converge on some finite
            # (even positive definite) matrices, and numpy then raises
            # whatever the errstate. Such a candidate gets NaN (no
            # neighbours): a fixed map of it, after the spend never an
            # exception, and no other candidate's vector changes.
            try:
                vals, vecs = np.linalg.eigh(S[i])
            except np.linalg.LinAlgError:
                continue
            if not (np.all(vals > 0.0) and np.all(np.isfinite(vals))):
                continue
            logs = (vecs * np.log(vals)) @ vecs.T
            out[i] = logs[iu] * weight
    return out


def _block(k, p):
    return max(1, int(4_000_000 // max(1, k * p)))


def log_distances(V, rows):
    """``||log Y_i - log Y_j||_F`` for i in ``rows`` and every j (inf if failed).

    Computed from the pair's own two vectors (a row-wise sum of squared
    differences), so a fixed function of the pair wherever it sits. By the
    exponential metric increasing property (Bhatia, *Positive Definite
    Matrices*, Thm 6.1.4) it is at most ``sqrt(d) ln(1 + dist(Y_i, Y_j))``.
    """
    with np.errstate(all="ignore"):
        diff = V[rows][:, None, :] - V[None, :, :]
        dist = np.sqrt(np.einsum("ijl,ijl->ij", diff, diff))
    return np.where(np.isnan(dist), np.inf, dist)


def _upper_blocks(V):
    """Blocks of rows with their log distances to every candidate and the mask
    of the pairs i < j (each unordered pair once)."""
    k, p = V.shape
    step = _block(k, p)
    for start in range(0, k, step):
        rows = np.arange(start, min(k, start + step))
        upper = np.arange(k)[None, :] > rows[:, None]
        yield rows, log_distances(V, rows), upper


def pair_counts(V, grid):
    """Sparse vector's queries for the radii ``grid``.

    For each radius r: self pairs (k of them) plus twice the number of pairs
    i < j with :func:`log_distances` at most ``ln(1 + r)``. Replacing one
    candidate changes the 2 (k - 1) ordered pairs it is in and no other.
    """
    edges = np.log1p(grid)
    hist = np.zeros(grid.size + 1, dtype=np.int64)
    for _, dist, upper in _upper_blocks(V):
        hist += 2 * np.bincount(
            np.searchsorted(edges, dist[upper], side="left"), minlength=grid.size + 1
        )
    return np.cumsum(hist)[: grid.size] + V.shape[0]


def neighbour_counts(S, V, t):
    """``c_i = |{j : N(i, j)}|`` (j = i included) for the computed relation.

    ``N(i, j)`` for i != j: the log distance is at most
    ``sqrt(d) ln(t) (1 + 1e-6) + 1e-9`` (a pre-filter that keeps every true
    neighbour, up to the logarithms' float error) and the certified test passes
    (:func:`certified_neighbours`). A fixed function of the pair, symmetric,
    and sound (the certified test alone is). Failed candidates count only
    themselves.
    """
    k, d, _ = S.shape
    counts = np.ones(k, dtype=np.int64)
    loose = math.sqrt(d) * math.log(t) * (1.0 + 1e-6) + 1e-9
    chunk = max(1, 4_000_000 // (d * d))
    for rows, dist, upper in _upper_blocks(V):
        cand = np.argwhere(upper & (dist <= loose))
        # The certified tests in chunks of a fixed size: the memory used does
        # not depend on how many pairs pass the pre-filter.
        for at in range(0, cand.shape[0], chunk):
            part = cand[at : at + chunk]
            i, j = rows[part[:, 0]], part[:, 1]
            keep = certified_neighbours(t, S[i], S[j])
            np.add.at(counts, i[keep], 1)
            np.add.at(counts, j[keep], 1)
    return counts


def mean_sensitivity(k, t, threshold, a, b):
    """Delta: ``-Delta mu' <= mu - mu' <= Delta mu'`` (module docstring)."""
    S_max = weight_sum_bound(k, threshold, a, b)
    return (t * t - 1.0) * t * t * S_max * (1.0 + 1e-9)


#: The largest Delta the release is calibrated for (larger: the radius is too
#: large for k; the bounds below need Delta < 1).
MAX_DELTA = 0.5


def release_sensitivities(delta_mean):
    """(shape, scale) sensitivities: ``2 Delta / (1 - Delta)`` (Frobenius, of
    the trace-normalised mean) and ``-ln(1 - Delta) + 1e-12`` (of ln tr mu)."""
    if not 0.0 < delta_mean <= MAX_DELTA:
        raise ValueError(
            f"the PSD populous bound Delta={delta_mean:.3g} exceeds {MAX_DELTA}: "
            "too large a radius for this many groups."
        )
    shape = 2.0 * delta_mean / (1.0 - delta_mean) * (1.0 + 1e-9)
    scale = -math.log1p(-delta_mean) * (1.0 + 1e-9) + LOG_SLACK
    return shape, scale


def shape_share(d):
    """The mask's rho share for the shape (the rest goes to the scale).

    Balances the two relative errors: the shape's d (d + 1) / 2 entries against
    one scalar, ``rho_shape / rho_scale = sqrt(d^3 (d + 1) / 2)``.
    """
    r = math.sqrt(d**3 * (d + 1) / 2.0)
    return r / (1.0 + r)


def trace_normalised_mean(S, weights, grid):
    """Exact ``rint(nu_ab / grid)`` for the upper triangle and ``tr mu`` as a float.

    ``nu = sum m_i Y_i / tr(sum m_i Y_i)`` in exact rationals (integer weights,
    float candidates), rounded once to the lattice; ``tr mu`` rounded once to
    float64.

    Returns
    -------
    coords : list of int
        Lattice coordinates of the upper triangle (row by row, diagonal
        included).
    trace : float
        ``tr(mu)``, ``mu = sum m_i Y_i / sum m_i``.
    """
    rows, cols = np.triu_indices(S.shape[1])
    sums = exact_weighted_sums(S[:, rows, cols], weights)
    tr = sum(
        (s for s, a, b in zip(sums, rows, cols, strict=True) if a == b), Fraction(0)
    )
    M = int(np.sum(weights[weights > 0]))
    return lattice_coords(sums, tr * Fraction(grid)), float(tr / M)
