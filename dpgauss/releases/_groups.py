"""Per-group statistics: counts, sums and second moments of clipped rows in K
groups, and the noise that makes them private when a replaced row may change
its group.

**The statistics.** Each row i has K weights ``r_ij >= 0`` with
``sum_j r_ij <= 1`` and K offsets ``y_ij`` with ``||y_ij|| <= C``, each read
off row i and public (or released) values only. For every group j:

* ``count_j = sum_i r_ij``;
* ``sum_j = sum_i r_ij y_ij`` (the K sums released as one K d vector);
* ``moment_j = sum_i r_ij y_ij y_ij^T`` (the K blocks released as one
  block-diagonal K d x K d symmetric matrix: its off-diagonal blocks are 0
  for every dataset).

Two forms are computed here. **Labelled** (:func:`labelled_statistics`, the
classes of the discriminant analyses): ``r_i`` is the indicator of row i's
group (all 0 for a row in none), and every group clips the same offset
``y_i = clip(x_i - c, B)`` around a public center c
(:func:`~dpgauss.utils._sums.clip_rows`), so the counts are exact integers;
a moment pooled over the groups is also available. **Weighted**
(:func:`weighted_statistics`, the EM steps of a mixture): ``r_ij`` are soft
responsibilities and ``y_ij = clip(A_j (x_i - mu_j), C)`` is the row in group
j's own released frame. The labelled form is the special case of the weighted
one with one-hot weights; it is computed apart (selected rows summed, not
weighted ones) because its floating-point sums, and so its releases, are
those the release record holds.

**Sensitivities** (replace-one; n, d, K, C public; the bounds hold for the
values as computed). Row i contributes ``u_i = (r_ij)_j``, ``v_i = (r_ij
y_ij)_j`` and the PSD blocks ``(r_ij y_ij y_ij^T)_j``; replacing it by a row
contributing u', v', B' (it may change group):

* counts: ``||u - u'||^2 <= ||u||^2 + ||u'||^2 <= 2`` (non-negative vectors:
  ``<u, u'> >= 0``; ``||u||^2 <= (sum_j r_ij)^2 <= 1``): l2 ``sqrt(2)``, l1 2.
  Labelled: one count down by 1 and another up by 1 (or none).
* sums over n: ``||v|| <= C sum_j r_ij <= C``, so ``||v - v'|| <= 2C``: l2
  ``2 C / n``; l1 ``2 sqrt(d) C / n`` (``sum_j ||r_ij y_ij||_1 <= sqrt(d) C``).
  Labelled, same group: ``y' - y``; other groups: ``-y`` and ``y'`` jointly
  ``sqrt(2) C``.
* moments over n: the blocks are PSD, so ``<B, B'>_F >= 0`` and ``||B -
  B'||_F^2 <= ||B||_F^2 + ||B'||_F^2 <= 2 C^4`` (``sum_j r_ij^2 ||y_ij||^4 <=
  C^4``): Frobenius ``sqrt(2) C^2 / n``; l1 over the upper triangle ``(d + 1)
  C^2 / n`` (a block's upper l1 is at most ``r_ij (||y||_1^2 + ||y||^2) / 2 <=
  r_ij (d + 1) C^2 / 2``). A moment pooled over the groups
  (:func:`~dpgauss.mechanisms._releases.second_moment_mechanism`) moves by
  ``(y'y'^T - y y^T) / n``, the same bound.
* squares over n (labelled; the diagonals of the moments, ``q_i = y_i o y_i``
  entry by entry, in the row's group or pooled over every group as one group):
  ``q >= 0`` entry by entry and ``||q||_1 = ||y||^2 <= C^2``, so whether or not
  the row changes group, ``||q - q'||_1 <= ||q||_1 + ||q'||_1 <= 2 C^2`` and
  ``||q - q'||^2 <= ||q||^2 + ||q'||^2 <= 2 C^4`` (``<q, q'> >= 0``; ``||q|| <=
  ||q||_1``): l1 ``2 C^2 / n``, l2 ``sqrt(2) C^2 / n``, for the K d vector of
  every group's squares as for the d pooled ones. Against the full moments'
  upper-triangle l1 ``(d + 1) C^2 / n`` spread over ``d (d + 1) / 2`` entries,
  each of the d entries gets ``(d + 1) / 2`` times less Laplace noise.

**Rounding.** Weighted rows are formed in floating point: the weights must
satisfy ``sum_j r_ij <= 1 - WEIGHT_MARGIN`` as computed, which absorbs the
roundings of ``fl(r_ij y_ij)`` and ``fl(sqrt(r_ij) y_ij)``, so the bounds above
hold for the computed contributions. Each group's computed sum over n is within
``e C`` (moments ``e C^2``, counts ``e``; ``e`` from
:func:`~dpgauss.utils._sums.summation_error` for the pass's chunk sums) of its
exact value, for both datasets, so the K groups together within ``2 e sqrt(K)``
times C (C^2, 1) in l2: that is added to each l2 sensitivity, and the l1 ones
add the square root of the release's dimension times it. Labelled counts are
exact integers and need none.

The labelled and the weighted mechanisms compute these bounds with the same
main terms but associate the rounding term's product differently (``2 e C
sqrt(K)`` against ``(2 sqrt(K) e) C``), and the weighted moments' l1 rounding
takes the dimension of the whole K d x K d upper triangle (larger than the
blocks' ``K d (d + 1) / 2``: looser, still valid). Equal or larger in exact
arithmetic, they can differ in the last bit, and the release record holds
both; they are kept apart until a change of outputs is recorded.

Noise is the exact lattice Gaussian (zCDP) or Laplace (pure DP) of
:func:`~dpgauss.mechanisms._factory.additive`; the costs are split once, in
the plan. Everything after the releases is post-processing.
"""

import math

import numpy as np

from dpgauss.mechanisms._factory import additive
from dpgauss.utils._sums import CHUNK_ROWS, clip_rows, over_chunks, summation_error

__all__ = [
    "WEIGHT_MARGIN",
    "count_mechanism",
    "labelled_moment_mechanism",
    "labelled_square_mechanism",
    "labelled_statistics",
    "labelled_sum_mechanism",
    "weighted_count_mechanism",
    "weighted_moment_mechanism",
    "weighted_statistics",
    "weighted_sum_mechanism",
]

#: Weighted rows' weights sum to at most ``1 - WEIGHT_MARGIN`` (see above).
WEIGHT_MARGIN = 2.0**-30


# -- the statistics ---------------------------------------------------------------
def labelled_statistics(X, codes, n_groups, location, radius, outer):
    """Counts, sums and second moments of the clipped rows of each group.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows (read in chunks, a Dask array block by block in its workers;
        not modified).
    codes : ndarray of int of shape (n_samples,)
        Each row's group, -1 for a row in none (offset 0).
    n_groups : int
        K.
    location : ndarray of shape (n_features,)
        The public center c.
    radius : float
        The public radius B.
    outer : {"pooled", "per_class", "pooled_squares", None}
        Which second moments to sum: over every row, per group, their
        diagonal over every row, or none.

    Returns
    -------
    counts : ndarray of int64 of shape (K,)
    sums : ndarray of shape (K, d)
        Sums of the clipped offsets ``clip(x - c, B)`` of each group.
    moments : ndarray of shape (d, d), (K, d, d), (d,) or None
        Sums of their outer products (pooled or per group), exactly symmetric,
        or of their squares entry by entry (pooled).

    Notes
    -----
    Each canonical chunk's sums (at most CHUNK_ROWS rows) are added along
    the canonical tree (:func:`~dpgauss.utils._sums.over_chunks`, the same
    bits on every engine): ``n_partial_sums(X)`` partial sums in all, the
    count the mechanisms' rounding term is calibrated for.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._groups import labelled_statistics
    >>> X = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 1.0]])
    >>> counts, sums, _ = labelled_statistics(
    ...     X, np.array([0, 1, 1]), 2, np.zeros(2), 1.0, None
    ... )
    >>> counts.tolist(), sums.tolist()
    ([1, 2], [[0.6, 0.8], [1.0, 1.0]])
    """
    codes = np.asarray(codes)
    counts = np.zeros(n_groups, dtype=np.int64)
    for start in range(0, codes.shape[0], CHUNK_ROWS):  # exact integers
        part = codes[start : start + CHUNK_ROWS]
        counts += np.bincount(part[part >= 0], minlength=n_groups)
    args = (n_groups, location, radius, outer)
    sums, moments = over_chunks(X, _chunk_labelled_statistics, *args, labels=codes)
    if outer in ("pooled", "per_class"):
        with np.errstate(all="ignore"):
            moments = 0.5 * (moments + np.swapaxes(moments, -1, -2))
    return counts, sums, moments


def _chunk_labelled_statistics(chunk, labels, n_groups, location, radius, outer):
    """The group sums (and moments) of one chunk of rows (a Dask worker's
    too, under :func:`~dpgauss.utils._canonical.chunk_result`'s errstate)."""
    d = chunk.shape[1]
    sums = np.zeros((n_groups, d))
    moments = np.zeros((n_groups, d, d)) if outer == "per_class" else None
    y = clip_rows(chunk, location, radius)
    y[labels < 0] = 0.0
    for k in range(n_groups):
        rows = y[labels == k]
        if rows.shape[0]:
            sums[k] += rows.sum(axis=0)
            if outer == "per_class":
                moments[k] += rows.T @ rows
    if outer == "pooled":
        moments = y.T @ y
    elif outer == "pooled_squares":
        moments = (y * y).sum(axis=0)
    return sums, moments


def weighted_statistics(X, weigh, centers, transforms, radius):
    """Weighted counts, sums and second moments of each group's clipped rows.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows (read in chunks; not modified).
    weigh : callable
        ``weigh(block)`` returns the block's weights, shape (rows, K): each
        row's from that row and public values only, ``r >= 0`` and each row's
        sum at most ``1 - WEIGHT_MARGIN`` as computed.
    centers : ndarray of shape (K, n_features)
        Each group's public center ``mu_j``.
    transforms : sequence of K ndarray of shape (n_features, n_features)
        Each group's public linear map ``A_j`` (its offsets are
        ``clip(A_j (x - mu_j), C)``).
    radius : float
        The clipping radius C.

    Returns
    -------
    counts : ndarray of shape (K,)
    sums : ndarray of shape (K, d)
    moments : ndarray of shape (K, d, d)
        The sums over rows of ``r_ij``, ``r_ij y_ij`` and ``r_ij y_ij
        y_ij^T`` (the last as ``z^T z`` with ``z = sqrt(r_ij) y_ij``), each
        chunk's added along the canonical tree (the same bits on every
        engine; a Dask array's chunks are computed in its workers, which
        receive ``weigh``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._groups import weighted_statistics
    >>> X = np.array([[2.0, 0.0], [0.0, 0.5]])
    >>> half = lambda block: np.full((block.shape[0], 2), 0.5)
    >>> counts, sums, _ = weighted_statistics(
    ...     X, half, np.zeros((2, 2)), [np.eye(2)] * 2, 1.0
    ... )
    >>> counts.tolist(), sums[0].tolist()
    ([1.0, 1.0], [0.5, 0.25])
    """
    return over_chunks(
        X, _chunk_weighted_statistics, weigh, centers, transforms, radius
    )


def _chunk_weighted_statistics(chunk, weigh, centers, transforms, radius):
    """One chunk's weighted counts, sums and moments (module docstring)."""
    k, d = centers.shape
    block = np.asarray(chunk, dtype=np.float64)
    r = weigh(block)
    sums = np.zeros((k, d))
    moments = np.zeros((k, d, d))
    for j in range(k):
        y = clip_rows(block, centers[j], radius, transform=transforms[j])
        sums[j] += (r[:, j, None] * y).sum(axis=0)
        z = np.sqrt(r[:, j, None]) * y
        moments[j] += z.T @ z
    return r.sum(axis=0), sums, moments


# -- the labelled releases --------------------------------------------------------
def _sum_bounds(n, d, radius):
    """The sums' replace-one l2 and l1 changes over n, before rounding."""
    return 2.0 * radius / n, 2.0 * math.sqrt(d) * radius / n


def _moment_bounds(n, d, radius):
    """The moments' Frobenius and upper-triangle l1 changes over n, before
    rounding."""
    r2 = radius * radius
    return math.sqrt(2.0) * r2 / n, (d + 1.0) * r2 / n


def count_mechanism(cost):
    """Noise for the K labelled counts (exact integers): l2 sqrt(2), l1 2."""
    return additive(cost, l2=math.sqrt(2.0), l1=2.0)


def labelled_sum_mechanism(cost, n, d, n_groups, radius, n_partials=None):
    """Noise for the K x d labelled sums divided by n.

    l2 ``2B/n + 2 e B sqrt(K)``; l1 ``2 sqrt(d) B / n + 2 e B K sqrt(d)``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._groups import labelled_sum_mechanism
    >>> round(labelled_sum_mechanism(ZCDP(1.0), 100, 4, 3, 1.0).sensitivity, 9)
    0.02
    """
    l2, l1 = _sum_bounds(n, d, radius)
    rounding = 2.0 * summation_error(n, n_partials) * radius * math.sqrt(n_groups)
    l2 = l2 + rounding
    l1 = l1 + math.sqrt(n_groups * d) * rounding
    return additive(cost, l2=l2, l1=l1)


def labelled_moment_mechanism(cost, n, d, n_groups, radius, n_partials=None):
    """Noise for the K labelled second moments divided by n, as one
    block-diagonal matrix.

    Frobenius ``sqrt(2) B^2 / n + 2 e B^2 sqrt(K)``; l1 over the upper triangle
    ``(d + 1) B^2 / n`` plus ``sqrt(K d (d + 1) / 2)`` times the rounding.
    """
    l2, l1 = _moment_bounds(n, d, radius)
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2 * math.sqrt(n_groups)
    upper = n_groups * d * (d + 1) / 2.0
    l2 = l2 + rounding
    l1 = l1 + math.sqrt(upper) * rounding
    return additive(cost, l2=l2, l1=l1, symmetric=True)


def labelled_square_mechanism(cost, n, d, n_groups, radius, n_partials=None):
    """Noise for the labelled squares divided by n: the K d vector of each
    group's sums of ``y o y`` (or, with ``n_groups=1``, the d pooled ones).

    l2 ``sqrt(2) B^2 / n + 2 e B^2 sqrt(K)``; l1 ``2 B^2 / n`` plus ``sqrt(K
    d)`` times the rounding (module docstring). The rounding term is the
    moments' one: each group's squares are the diagonal of its computed second
    moment, whose Frobenius rounding bound ``e B^2`` bounds them in l2.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._groups import labelled_square_mechanism
    >>> mech = labelled_square_mechanism(PureDP(1.0), 100, 4, 1, 1.0)
    >>> round(mech.sensitivity, 9)
    0.02
    """
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2 * math.sqrt(n_groups)
    l2 = math.sqrt(2.0) * r2 / n + rounding
    l1 = 2.0 * r2 / n + math.sqrt(n_groups * d) * rounding
    return additive(cost, l2=l2, l1=l1)


# -- the weighted releases --------------------------------------------------------
def _slack(n, k, n_partials):
    """Twice the rounding of k groups' computed sums over n (two datasets)."""
    return 2.0 * math.sqrt(k) * summation_error(n, n_partials)


def weighted_count_mechanism(cost, n, k, n_partials=None):
    """Noise for the k weighted counts over n: l2 ``sqrt(2) / n``, l1 ``2 /
    n``, plus the rounding slack."""
    slack = _slack(n, k, n_partials)
    return additive(
        cost,
        l2=math.sqrt(2.0) / n + slack,
        l1=2.0 / n + math.sqrt(k) * slack,
    )


def weighted_sum_mechanism(cost, n, d, k, radius, n_partials=None):
    """Noise for the k d weighted sums over n: l2 ``2 C / n``, l1 ``2 sqrt(d)
    C / n``, plus the rounding slack times C."""
    l2, l1 = _sum_bounds(n, d, radius)
    slack = _slack(n, k, n_partials)
    return additive(
        cost,
        l2=l2 + slack * radius,
        l1=l1 + math.sqrt(k * d) * slack * radius,
    )


def weighted_moment_mechanism(cost, n, d, k, radius, n_partials=None):
    """Noise for the k weighted second moments over n as one block-diagonal
    symmetric matrix: Frobenius ``sqrt(2) C^2 / n``, upper-triangle l1 ``(d +
    1) C^2 / n``, plus the rounding slack times C^2 (in l1, times the root of
    the whole matrix's upper-triangle size)."""
    l2, l1 = _moment_bounds(n, d, radius)
    slack = _slack(n, k, n_partials)
    c2 = radius * radius
    upper = k * d * (k * d + 1) / 2.0
    return additive(
        cost,
        l2=l2 + slack * c2,
        l1=l1 + math.sqrt(upper) * slack * c2,
        symmetric=True,
    )
