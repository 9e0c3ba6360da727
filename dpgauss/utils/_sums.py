"""Sums over rows of clipped data, read in chunks (numpy, memory-mapped or Dask).

Every estimator's data pass is here: the heavy work is sums over rows, so the
same code runs on an array, a memory-mapped file or a Dask array.

Floating point. Every sensitivity in dpgauss must hold for the numbers as they
are computed in float64, for any finite input (rows may lie 1e15 radii away from
the center). Three rules make that true:

1. **Offsets first.** A row is always turned into its offset ``y = x - c`` from
   the center before anything else; nothing is computed as ``X^T f - c sum(f)``
   (which cancels catastrophically when ``|x| >> r``).
2. **Clipping that holds after rounding** (:func:`clip_rows`; radii in
   [1e-140, 1e140], so that underflow adds at most ``sqrt(d) 2^-1074``, far
   below ``r u``): the computed
   clipped offset ``y~`` satisfies ``||y~||_2 <= r`` exactly, as a real number.
   With u = 2^-53 and the computed norm ``n~`` of a d-vector (any summation
   order), ``|n~ - ||y||| <= (d + 3) u ||y||``; scaling by
   ``f = fl(r_safe / n~)`` and rounding each product gives
   ``||y~|| <= r_safe (1 + u)^2 / (1 - (d + 3) u) <= r_safe (1 + (d + 6) u)``, so
   clipping to ``r_safe = r (1 - (d + 8) u)`` keeps ``||y~|| <= r``; a row left
   unscaled has ``||y|| <= n~ / (1 - (d + 3) u) <= r`` likewise.
3. **Summation error is part of the sensitivity** (:func:`summation_error`). A
   sum of N terms in any order (BLAS blocking and FMA included) has error at most
   ``gamma_N sum |terms|`` with ``gamma_N = N u / (1 - N u)`` (Higham 2002,
   Theorem 3.1). Rows are summed in chunks of at most ``CHUNK_ROWS`` and the
   ``m = ceil(n / CHUNK_ROWS)`` chunk sums are then added (along a fixed tree,
   :func:`over_chunks`: ``ceil(log2 m)`` additions deep, which the bound for
   any order covers), so the computed mean of clipped rows is within
   ``(gamma_{C+1} + gamma_m)(1 + gamma_{C+1}) r + 2 u r`` (l2) of the exact mean of
   the same clipped rows, and the computed second moment within the same factor
   times ``r^2`` (Frobenius; ``sum_i ||y_i||^2 <= n r^2``). Two neighbouring
   datasets can therefore differ by the exact sensitivity plus twice that bound,
   and the mechanisms are calibrated for the sum (see
   :mod:`dpgauss.mechanisms._releases`). For n = 10^6 this adds a relative 1e-5
   to the mean's sensitivity; for n = 10^9, 1%.

**One release whatever the engine.** The chunks are canonical (chunk j is
rows ``[j C, (j + 1) C)`` of the whole input, whatever a Dask array's
blocks), each chunk's sums come from the same numpy code on the same
C-contiguous rows, and the chunk sums are added along one tree fixed by
``m`` alone (:mod:`dpgauss.utils._canonical`). A numpy array, a memory-mapped
file, a Dask array under any scheduler or chunking and a ``dask.distributed``
cluster therefore give the same bits for every sum here, and the same
``m`` for the rounding term above: the same seed gives the same release.

Queries whose sensitivity is a count (how many rows lie beyond a radius, how
much clipping at tau would remove) are computed exactly in integer fixed point
(:func:`fixed_point_sums`), so their sensitivity needs no slack at all.
"""

import math
import mmap

import numpy as np

from dpgauss.utils._canonical import chunk_result, dask_tree_reduce, tree_reduce
from dpgauss.utils._mapped import MappedRows

__all__ = [
    "CHUNK_ROWS",
    "Workspace",
    "all_finite",
    "clip_rows",
    "clipped_sums",
    "fixed_point_bits",
    "fixed_point_sums",
    "is_dask_array",
    "iter_chunks",
    "n_partial_sums",
    "over_chunks",
    "read_into",
    "row_norms",
    "summation_error",
]

#: Rows per chunk when summing over rows (bounds temporary memory to about
#: ``CHUNK_ROWS * n_features * 8`` bytes, and the rounding error of a chunk sum).
#: 2^13 rather than 2^15: a chunk's temporaries then stay in cache at d = 50
#: (a clipped pass over 10^6 x 50 rows: 0.13 s -> 0.11 s; a framed one
#: 0.25 s -> 0.19 s).
CHUNK_ROWS = 1 << 13

_U = 2.0**-53  # unit roundoff of float64
#: Norms below this take the scaled path (no subnormal squares).
_TINY_NORM = 2.0**-480
#: The largest float, where a search's norms are capped.
_MAX_FLOAT = float(np.finfo(np.float64).max)


def _gamma(k):
    """Higham's gamma_k = k u / (1 - k u): the relative error bound of k operations."""
    k = float(k)
    if k * _U >= 0.5:
        return math.inf
    return k * _U / (1.0 - k * _U)


def summation_error(n_rows, n_partials=None):
    """Bound on the rounding error of a chunked mean of clipped rows, relative to r.

    Parameters
    ----------
    n_rows : int
        Rows summed (n).
    n_partials : int, default=None
        Number of chunk sums added at the end (``ceil(n / CHUNK_ROWS)`` when None).

    Returns
    -------
    float
        ``e`` such that the computed mean of rows of norm at most r (l2), and the
        computed second moment of such rows (Frobenius, with r^2), are within
        ``e r`` (``e r^2``) of the exact values for the same clipped rows.

    Examples
    --------
    >>> from dpgauss.utils._sums import summation_error
    >>> summation_error(10**6) < 1e-11
    True
    """
    if n_partials is None:
        n_partials = max(1, -(-int(n_rows) // CHUNK_ROWS))
    chunk = min(int(n_rows), CHUNK_ROWS) + 1  # +1: the product y_a y_b
    inner = _gamma(chunk)
    return (inner + _gamma(n_partials)) * (1.0 + inner) + 3.0 * _U


def is_dask_array(X):
    """True when ``X`` is a dask array (without importing dask otherwise)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def file_backed(X):
    """True for a whole, C-ordered, shared memory-mapped file (as ``np.load`` returns).

    A copy-on-write map (``mmap_mode="c"``) is not: changes made in memory (a row
    redacted, say) are not in the file, so it is read as an array.

    Such arrays are read with ordinary file reads: pages touched through the
    mapping would count towards the process's resident memory (8 GB for an 8 GB
    file), while pages read into a buffer stay in the kernel's cache only.
    """
    return (
        isinstance(X, np.memmap)
        and getattr(X, "mode", "c") != "c"  # copy-on-write: memory != file
        and isinstance(getattr(X, "base", None), mmap.mmap)
        and X.filename is not None
        and X.ndim == 2
        and X.flags.c_contiguous
    )


def n_partial_sums(X):
    """How many chunk sums a pass over ``X`` adds up (public: from the shape only).

    ``ceil(n / CHUNK_ROWS)`` on every engine: the chunks are canonical
    (:func:`over_chunks`), whatever a Dask array's blocks.
    """
    return max(1, -(-int(X.shape[0]) // CHUNK_ROWS))


def iter_chunks(X):
    """Yield consecutive row blocks of ``X`` (at most CHUNK_ROWS rows each).

    Parameters
    ----------
    X : ndarray or numpy.memmap of shape (n_samples, n_features)
        The data.

    Yields
    ------
    ndarray
        The next block of rows: a view for arrays; for files and mapped rows
        a buffer that the next block overwrites (every caller reduces a block
        before asking for the next). One buffer per pass rather than a fresh
        chunk-sized array per block: freeing two such arrays per chunk let
        the allocator hand the memory back to the system and fault it in
        again (a box-unit pass at 10^6 x 50 took 0.5 s, 0.4 s of it in
        193,000 page faults).
    """
    if isinstance(X, MappedRows):  # each chunk read, then mapped
        out = None
        for block in iter_chunks(X.X):
            if out is None:
                out = np.empty((min(CHUNK_ROWS, X.shape[0]), X.shape[1]))
            yield X.func(block, *X.args, out=out[: block.shape[0]])
        return
    n, d = X.shape
    if not file_backed(X):
        X = np.asarray(X)
        for start in range(0, n, CHUNK_ROWS):
            yield X[start : start + CHUNK_ROWS]
        return
    buffer = np.empty((min(CHUNK_ROWS, n), d), dtype=X.dtype)
    raw = memoryview(buffer.reshape(-1).view(np.uint8))
    width = d * X.dtype.itemsize
    with open(X.filename, "rb", buffering=0) as fh:
        fh.seek(X.offset)
        for start in range(0, n, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, n - start)
            read_into(fh, raw[: rows * width], X.filename)
            yield buffer[:rows]


def read_into(fh, raw, name):
    """Fill the bytes ``raw`` from the file ``fh`` (reads until full)."""
    got = 0
    while got < len(raw):
        more = fh.readinto(raw[got:])
        if not more:
            raise OSError(f"{name}: the file ended early")
        got += more


def all_finite(X):
    """True when every entry of ``X`` is finite, checked chunk by chunk.

    No floating-point warning is raised whatever the values (a warning that
    depends on private rows would be a release).
    """
    with np.errstate(all="ignore"):
        return all(bool(np.isfinite(block).all()) for block in iter_chunks(X))


def _over_blocks(X, func, *args):
    """Apply ``func`` to row blocks (Dask blocks computed in parallel)."""
    if not is_dask_array(X):
        return [func(X, *args)]
    import dask

    blocks = X.rechunk({1: -1}).to_delayed().ravel()
    return dask.compute(*[dask.delayed(func)(b, *args) for b in blocks])


def over_chunks(X, func, *args, labels=None):
    """The sum of ``func``'s results over the canonical chunks of ``X``, the
    same bits on every engine (:mod:`dpgauss.utils._canonical`).

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows: chunk j is rows ``[j C, (j + 1) C)``, C = CHUNK_ROWS.
    func : callable
        ``func(chunk, [labels,] *args)``: a chunk's partial result (arrays,
        ints or None, or a tuple of them), from its rows and public values;
        a module-level function (Dask workers receive it). The result must
        be new arrays, never the chunk or a view of it: a file's or mapped
        rows' chunks are read into one buffer that the next chunk
        overwrites (:func:`iter_chunks`), so a result sharing it would count
        one chunk twice and drop another, doubling a sensitivity.
    *args
        Passed on to ``func``.
    labels : ndarray of shape (n_samples,), default=None
        One value per row, passed with each chunk's rows.

    Returns
    -------
    object
        The results added entry by entry along the canonical tree.
    """
    if is_dask_array(X):
        return dask_tree_reduce(X, CHUNK_ROWS, func, args, labels)
    chunks = iter_chunks(X)

    def leaf(j):
        rows = () if labels is None else (labels[j * CHUNK_ROWS :][:CHUNK_ROWS],)
        return chunk_result(func, next(chunks), rows, args)

    return tree_reduce(n_partial_sums(X), leaf)


class Workspace:
    """Chunk-sized float64 buffers reused through one pass, by name.

    A pass over numpy or memory-mapped rows forms its chunk's offsets (and
    their image under a frame) in these rather than in fresh arrays: freeing
    two chunk-sized arrays per chunk let the allocator return the memory to
    the system and fault it in again, chunk after chunk (a frame pass at
    10^6 x 50 took 0.62 s, most of it in 191,000 page faults). The values
    are those of the fresh arrays, bit for bit. Never shared between threads:
    a Dask pass gets none (its chunks are formed in the workers).
    """

    def __init__(self):
        self.buffers = {}

    def get(self, name, shape):
        """An uninitialised float64 array of ``shape`` (rows, columns), a view
        of the buffer ``name`` (grown when too small)."""
        rows, columns = shape
        buffer = self.buffers.get(name)
        if buffer is None or buffer.shape[1] != columns or buffer.shape[0] < rows:
            buffer = self.buffers[name] = np.empty((rows, columns))
        return buffer[:rows]


def _chunk_sums(chunk, center, radius, with_outer, trace_bits, transform, work):
    y = clip_rows(chunk, center, radius, transform, work)
    units = 0
    if trace_bits is not None:
        squared = np.einsum("ij,ij->i", y, y) / (radius * radius)
        units = int(fixed_point_sums(squared, np.zeros(1), trace_bits)[0])
    return y.sum(axis=0), (y.T @ y if with_outer else None), units


def clipped_sums(X, center, radius, with_outer=True, trace_bits=None, transform=None):
    """Return the sums over rows of y and y y^T for rows clipped to ``radius``.

    Each row ``x`` becomes ``y = (x - c) * min(1, r_safe / ||x - c||)`` with
    ``c = center`` (see :func:`clip_rows`), so ``||y|| <= radius`` whatever the
    data, in floating point; with ``transform`` (a public matrix A), the offset
    is ``A (x - c)`` before clipping. The input is read in chunks and never
    modified.

    Parameters
    ----------
    X : ndarray or dask array of shape (n_samples, n_features)
        The data (an array, a memory-mapped array or a Dask array).
    center : ndarray of shape (n_features,)
        The center of the clipping ball (public or already released).
    radius : float
        The clipping radius.
    with_outer : bool, default=True
        Also sum the outer products (skip for a mean-only pass).
    trace_bits : int, default=None
        Also return the exact fixed-point sum of ``||y||^2 / r^2`` on the
        ``2^-trace_bits`` grid (see :func:`fixed_point_sums`).
    transform : ndarray of shape (k, n_features), default=None
        A public (or released) linear map applied to the offsets before
        clipping; the sums are then of k-vectors.

    Returns
    -------
    sum_y : ndarray of shape (n_features,)
        Sum of the clipped rows.
    sum_yy : ndarray of shape (n_features, n_features) or None
        Sum of their outer products, exactly symmetric (None if ``with_outer``
        is False).
    trace_units : int
        Only with ``trace_bits``: the exact integer sum, each row adding an
        integer in ``[0, 2^trace_bits]``.
    """
    work = None if is_dask_array(X) else Workspace()
    sum_y, sum_yy, units = over_chunks(
        X, _chunk_sums, center, radius, with_outer, trace_bits, transform, work
    )
    if with_outer:
        with np.errstate(all="ignore"):
            sum_yy = 0.5 * (sum_yy + sum_yy.T)
    if trace_bits is None:
        return sum_y, sum_yy
    return sum_y, sum_yy, units


def _block_norms(block, center, far):
    # Everything under errstate: in a Dask worker the caller's errstate does
    # not apply, and an offset that overflows (a row at the largest float
    # against a center at its negative) may not warn there.
    norms = []
    with np.errstate(all="ignore"):
        for chunk in iter_chunks(block):
            norm = _offsets_and_norms(chunk, center)[1]
            if far:
                lost = ~np.isfinite(np.asarray(chunk, dtype=np.float64) - center)
                norm[lost.any(axis=1)] = np.inf
                norm = np.minimum(norm, _MAX_FLOAT)
            norms.append(norm)
    return np.concatenate(norms) if norms else np.zeros(0)


def row_norms(X, center, far=False):
    """Return the l2 norm of every row's offset from ``center``.

    Parameters
    ----------
    X : ndarray or dask array of shape (n_samples, n_features)
        The data.
    center : ndarray of shape (n_features,) or float
        The center.
    far : bool, default=False
        What a row that is not finite, or whose offset overflows float64
        (1.7e308 against a center at -1.7e308), counts as. False: the center
        (norm 0), as :func:`clip_rows` maps it there, so clipping and its
        norms agree. True: infinitely far, for a private search that counts
        rows by their norm (a lost row is a far one); every norm is then
        capped at the largest float, so the search's keys stay finite.

    Returns
    -------
    ndarray of shape (n_samples,)
        The computed norms, in row order. Without ``far``, a finite offset
        whose squared norm overflows keeps its (finite or inf) scaled norm.
        Each norm is a function of its row alone.
    """
    with np.errstate(all="ignore"):
        return np.concatenate(_over_blocks(X, _block_norms, center, far))


def _offsets_and_norms(x, center, transform=None, work=None):
    """``y = x - center`` (a new array) and the l2 norm of each row of y.

    With ``transform`` (a matrix A), ``y = (x - center) A^T``; with ``work`` (a
    :class:`Workspace`), y is formed in its buffers (the same values). Rows that are not
    finite (or whose offset, or its image under A, overflows) are set to 0. Norms are
    computed with one pass; rows whose squared norm is not finite (non-finite
    input, or entries beyond ~1e154) or below 2^-960 (where squares of entries
    underflow and the rounding bounds of rule 2 stop holding) take the careful
    path, where the norm is ``max|y| * ||y / max|y|||`` (inf if it exceeds
    float64's range), with relative error at most (d + 5) u.
    """
    with np.errstate(all="ignore"):
        if work is None:
            y = np.asarray(x, dtype=np.float64) - center
            if transform is not None:
                y = y @ transform.T
        else:  # the same operations, into reused buffers
            x = np.asarray(x)
            out = work.get("offsets", x.shape)
            y = np.subtract(x, center, out=out, dtype=np.float64)
            if transform is not None:
                shape = (x.shape[0], transform.shape[0])
                y = np.matmul(y, transform.T, out=work.get("frame", shape))
        norms = np.sqrt(np.einsum("ij,ij->i", y, y))
        bad = np.flatnonzero(~np.isfinite(norms) | (norms < _TINY_NORM))
        if bad.size:
            rows = y[bad]
            rows[~np.isfinite(rows).all(axis=1)] = 0.0
            y[bad] = rows
            peak = np.abs(rows).max(axis=1)
            safe = np.where(peak > 0, peak, 1.0)
            norms[bad] = peak * np.linalg.norm(rows / safe[:, None], axis=1)
        return y, norms


def safe_radius(radius, d):
    """The radius rows are scaled to, so that their computed norm is <= ``radius``.

    ``radius * (1 - (d + 8) u)``: see rule 2 of this module's docstring.
    """
    return radius * (1.0 - (d + 8) * _U)


def clip_rows(x, center, radius, transform=None, work=None):
    """Return ``x - center`` with every row scaled into the ball of ``radius``.

    The result satisfies ``||y|| <= radius`` as computed (module docstring, rule
    2). Privacy must not depend on input validation, so every float row is mapped
    into the ball: a row that is not finite (possible when scikit-learn's
    ``assume_finite`` is set) is mapped to the center, a fixed public point; a
    huge finite row (even one whose norm overflows) is scaled onto the sphere.

    Parameters
    ----------
    x : ndarray of shape (n_rows, n_features)
        Rows.
    center : ndarray of shape (n_features,)
        The center.
    radius : float
        The clipping radius.
    transform : ndarray of shape (k, n_features), default=None
        A public linear map A: the rows clipped are ``A (x - center)`` (a row
        whose image is not finite is mapped to 0, like a non-finite row).
    work : Workspace, default=None
        Buffers to form the offsets in (reused by the next chunk of a pass).

    Returns
    -------
    ndarray of shape (n_rows, n_features) or (n_rows, k)
        The clipped offsets (a new array, or one of ``work``'s buffers).
    """
    with np.errstate(all="ignore"):
        y, norms = _offsets_and_norms(x, center, transform, work)
    d = y.shape[1]
    target = safe_radius(radius, d)
    with np.errstate(all="ignore"):
        factor = np.minimum(1.0, target / norms)  # 0 where the norm overflowed
        factor[norms == 0] = 1.0
        # A factor below 2^-1000 would be (nearly) subnormal and lose its relative
        # precision: scale those rows as unit vectors times the radius instead;
        # rows whose norm overflowed are first scaled by their largest entry.
        far = np.flatnonzero(factor < 2.0**-1000)
        if far.size:
            rows = y[far]
            huge = np.isinf(norms[far])
            rows[huge] /= np.abs(rows[huge]).max(axis=1, keepdims=True)
            lengths = norms[far].copy()
            lengths[huge] = np.linalg.norm(rows[huge], axis=1)
            y[far] = (rows / lengths[:, None]) * target
            factor[far] = 1.0
        y *= factor[:, None]
    return y


def fixed_point_bits(n_rows):
    """Fractional bits k such that n values in [0, 1] on the 2^-k grid sum exactly.

    ``n * 2^k <= 2^52``: the integer sum fits in int64 and converts to float64
    without rounding.
    """
    return max(1, 52 - math.ceil(math.log2(max(int(n_rows), 1) + 1)))


def fixed_point_sums(values, levels, bits):
    """Exact sums of ``(values - level)_+`` for each level, in units of 2^-bits.

    Each term ``floor(min(max(v - level, 0), 1) * 2^bits)`` is an integer in
    ``[0, 2^bits]``; the sums are exact integers, so replacing one value moves
    every sum by at most ``2^bits`` (exactly, with no rounding slack).

    Parameters
    ----------
    values : ndarray of shape (n,)
        Values in [0, 1] (clamped to it).
    levels : ndarray of shape (k,)
        Levels in [0, 1].
    bits : int
        Fractional bits (see :func:`fixed_point_bits`).

    Returns
    -------
    ndarray of shape (k,), int64
        ``sum_i floor((v_i - level)_+ 2^bits)`` for each level.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._sums import fixed_point_sums
    >>> fixed_point_sums(np.array([0.5, 1.0, 0.25]), np.array([0.0, 0.5]), 2)
    array([7, 2])
    """
    # Values and levels are first floored onto the 2^-k grid (scaling by a power
    # of two is exact); each term is then q(v) - q(l) clamped at 0, an integer in
    # [0, 2^k], and the sums are exact integer arithmetic. Which exact
    # arithmetic computes them (below) cannot change an integer: the
    # sensitivity (2^k per sum, one row one term per level) is a property of
    # the terms, not of how they are added.
    qv, ql = _fixed_point_terms(values, levels, bits)
    if ql.size <= _DIRECT_LEVELS:
        # A few levels (the trace's single level 0): an int64 sum per level
        # (at most n 2^k <= 2^52 with k = fixed_point_bits(n): no overflow).
        return np.array(
            [np.maximum(qv - q, 0).sum(dtype=np.int64) for q in ql.tolist()],
            dtype=np.int64,
        ).reshape(ql.shape)
    if qv.size * 2.0**bits > 2.0**53:  # bincount's float64 sums may round
        return _sorted_level_sums(qv, ql)
    # Many levels, no sort of the n values: each value goes to the bucket of
    # the distinct levels below it (a search among the k levels); the count
    # and the sum of the values in each bucket, then suffix sums over the
    # buckets, give count(q(v) > q(l)) and the sum of those q(v) at every
    # level. bincount adds in float64, exactly: every partial sum is an
    # integer of at most n 2^k <= 2^53.
    distinct = np.unique(ql)
    bucket = np.searchsorted(distinct, qv, side="left")  # #{levels < q(v)}
    size = distinct.size + 1
    counts = np.bincount(bucket, minlength=size)
    totals = np.bincount(bucket, weights=qv.astype(np.float64), minlength=size)
    above_count = np.cumsum(counts[::-1])[::-1].astype(np.int64)
    above_total = np.cumsum(totals[::-1])[::-1].astype(np.int64)
    # q(v) > l = distinct[i] iff more than i levels lie below q(v).
    at = np.searchsorted(distinct, ql, side="left") + 1
    return above_total[at] - above_count[at] * ql


#: Up to this many levels, :func:`fixed_point_sums` sums each level directly.
_DIRECT_LEVELS = 4


def _fixed_point_terms(values, levels, bits):
    """The values and levels floored onto the 2^-bits grid (int64), values
    first clamped to [0, 1] (NaN as 0)."""
    scale = float(2**bits)
    v = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)
    levels = np.clip(np.asarray(levels, dtype=np.float64), 0.0, 1.0)
    return np.floor(v * scale).astype(np.int64), np.floor(levels * scale).astype(
        np.int64
    )


def _sorted_level_sums(qv, ql):
    """:func:`fixed_point_sums` of the floored terms by a sort (the reference
    the fast paths are tested against)."""
    qv = np.sort(qv)
    suffix = np.concatenate([np.cumsum(qv[::-1])[::-1], [0]])
    above = np.searchsorted(qv, ql, side="right")
    count = qv.size - above
    return suffix[above] - count * ql


def frame_sums(X, center, radius, frame, with_outer=True):
    """Clipped sums of ``A (x - center)``: :func:`clipped_sums` with ``transform``.

    Every frame pass computes, chunk by chunk, ``(x - c) A^T`` (the offset from
    the pass's center first, rule 1 of this module, then the frame): one
    floating-point expression whatever the input (an array of any size, a
    memory-mapped file or a Dask array), so a release does not depend on how
    the rows are stored, and no transformed copy of the rows is kept (a stored
    ``A (x - origin)`` was 1.1 times the input at 10^6 x 50, and writing it
    cost more than the products it saved). Each row's offset is a function of
    that row and of public or released values only, so clipping it to the
    ball bounds the sensitivity whatever the computed offset
    (:func:`clip_rows`); a row whose image is not finite goes to the center.

    Parameters
    ----------
    X : ndarray or dask array of shape (n, d)
        The rows (not modified).
    center : ndarray of shape (d,)
        The pass's center c (public or released).
    radius : float
        The clipping radius.
    frame : ndarray of shape (k, d)
        A public or released matrix A.
    with_outer : bool, default=True
        Also sum the outer products.

    Returns
    -------
    tuple
        :func:`clipped_sums`'s ``(sum_y, sum_yy)`` of the k-vectors.
    """
    return clipped_sums(X, center, radius, with_outer=with_outer, transform=frame)


def _block_group_sums(block, labels, k):
    # Everything under errstate, the conversion included (it runs in a Dask
    # worker, outside the fit's errstate): a longdouble row beyond float64's
    # range overflows to inf there, a failed candidate, and no warning may
    # depend on the data.
    with np.errstate(all="ignore"):
        block = np.asarray(block, dtype=np.float64)
        sums = np.zeros((k, block.shape[1]))
        keep = labels >= 0
        np.add.at(sums, labels[keep], block[keep])
    return sums


def group_means(X, labels, k):
    """The means of the rows in each of k groups (rows labelled -1 are left out).

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows.
    labels : ndarray of int of shape (n_samples,)
        Each row's group in ``0 .. k - 1``, or -1; every group has the same
        number of rows.
    k : int
        The number of groups.

    Returns
    -------
    ndarray of shape (k, n_features)
        The groups' means. Each depends on its own rows only, so replacing one
        row changes one mean; a mean that overflows is not finite (a failed
        candidate for :func:`~dpgauss.releases._winsorized.winsorized_mean`).
    """
    size = int(np.count_nonzero(labels == 0))
    sums = over_chunks(X, _block_group_sums, k, labels=np.asarray(labels))
    with np.errstate(all="ignore"):
        return sums / max(size, 1)
