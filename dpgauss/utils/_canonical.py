"""One reduction of per-chunk results whatever the engine (numpy, memmap, Dask).

Every float sum over rows in dpgauss is formed the same way, so that the same
rows give the same bits on a numpy array, a memory-mapped file (shared or
copy-on-write), a Dask array under any scheduler and any chunking, and a
``dask.distributed`` cluster:

1. **Canonical chunks.** Chunk j holds rows ``[j C, min((j + 1) C, n))``,
   ``C`` = :data:`~dpgauss.utils._sums.CHUNK_ROWS`, counted from row 0 of
   the whole input whatever its blocks: a Dask block computes the chunks that
   lie inside it, and a chunk that straddles blocks is assembled from their
   pieces (a copy of at most C rows) before it is computed.
2. **The same numpy code per chunk.** Each chunk's result (its partial sums)
   is computed by one function on a C-contiguous float64 ``(rows, d)`` array
   holding exactly that chunk's rows, in the client for numpy input, in a
   worker for Dask. Its float operations then depend on the chunk's values
   and shape only: element-wise numpy operations and row reductions do not
   depend on the memory's alignment, and OpenBLAS's matrix products split
   their work among threads by output blocks, never along the summed
   dimension, so neither the number of BLAS threads nor the buffer an array
   lives in changes a bit (``tests/utils/test_canonical.py`` checks both on
   this machine's kernels).
3. **One fixed tree.** The m chunk results are combined along the binary tree
   of aligned dyadic ranges of chunk indices: node ``(i, k)`` covers chunks
   ``[i 2^k, (i + 1) 2^k)`` and is ``node(2i, k-1) + node(2i+1, k-1)``
   (entry by entry); the total adds, left to right, the maximal aligned
   ranges that cover ``[0, m)`` (the binary digits of m). A Dask block
   returns the maximal aligned ranges among its own chunks, already added by
   the same rule, and the client adds the rest; a numpy pass computes the nodes
   as its chunks stream by (memory for ``log2 m`` partial results). Every
   addition is therefore the same addition of the same two floats on every
   engine; only where it runs differs.

The tree adds m partial sums in an order fixed by m alone; the floating-point
bound of :func:`~dpgauss.utils._sums.summation_error` (which holds for any
order of the m additions) is unchanged, and ``m = ceil(n / C)``
(:func:`~dpgauss.utils._sums.n_partial_sums`) on every engine.
"""

import itertools

import numpy as np

__all__ = [
    "add_parts",
    "chunk_result",
    "cover_nodes",
    "dask_tree_reduce",
    "dyadic_cover",
    "tree_reduce",
]


def add_parts(a, b):
    """Add two partial results entry by entry (tuples of arrays, ints or None).

    No floating-point warning, in the client or a worker: partial sums of
    rows may overflow (a group's mean of rows near the largest float: inf
    plus -inf), and a warning would depend on the rows.
    """
    if isinstance(a, tuple):
        return tuple(add_parts(x, y) for x, y in zip(a, b, strict=True))
    if a is None:
        return None
    with np.errstate(all="ignore"):
        return a + b


def dyadic_cover(start, stop):
    """The maximal aligned dyadic ranges ``(i, k)`` covering ``[start, stop)``,
    left to right (``[i 2^k, (i + 1) 2^k)`` each).

    Examples
    --------
    >>> from dpgauss.utils._canonical import dyadic_cover
    >>> list(dyadic_cover(0, 13)), list(dyadic_cover(3, 9))
    ([(0, 3), (2, 2), (12, 0)], [(3, 0), (1, 2), (8, 0)])
    """
    while start < stop:
        k = 0
        while start % (2 << k) == 0 and start + (2 << k) <= stop:
            k += 1
        yield start >> k, k
        start += 1 << k


def _node(i, k, known, leaf):
    """Node ``(i, k)`` of the tree: known, a leaf, or its two children added."""
    value = known.get((i, k))
    if value is not None:
        return value
    if k == 0:
        return leaf(i)
    left = _node(2 * i, k - 1, known, leaf)
    return add_parts(left, _node(2 * i + 1, k - 1, known, leaf))


def _missing(index):
    raise RuntimeError(f"chunk {index} was not computed")  # a bug, before any use


def cover_nodes(start, stop, leaf=_missing, known=None):
    """The values of the maximal aligned nodes over chunks ``[start, stop)``.

    Parameters
    ----------
    start, stop : int
        The chunks covered.
    leaf : callable, optional
        ``leaf(j)``, chunk j's result; called in increasing j, each once.
    known : dict, default=None
        Nodes ``(i, k)`` already computed (a Dask block's), used as they are.

    Returns
    -------
    dict
        ``(i, k)`` to the node's value, left to right.
    """
    known = {} if known is None else known
    return {(i, k): _node(i, k, known, leaf) for i, k in dyadic_cover(start, stop)}


def tree_reduce(m, leaf=_missing, known=None):
    """The total of chunks ``[0, m)`` along the canonical tree: the maximal
    aligned nodes (:func:`cover_nodes`) added left to right."""
    values = list(cover_nodes(0, m, leaf, known).values())
    total = values[0]
    for value in values[1:]:
        total = add_parts(total, value)
    return total


def _labels_of(labels, start, stop):
    return () if labels is None else (labels[start:stop],)


def chunk_result(func, chunk, labels, args):
    """``func`` on one chunk as a C-contiguous array (an F-ordered input's
    chunk is copied: its products would otherwise take other BLAS paths),
    with every floating-point warning off: in a Dask worker the caller's
    errstate does not apply, and no warning may depend on the rows."""
    with np.errstate(all="ignore"):
        return func(np.ascontiguousarray(chunk), *labels, *args)


def _block_nodes(block, offset, first, stop, chunk_rows, func, args, labels):
    """In a worker: the nodes over a block's own chunks ``[first, stop)``.

    ``offset`` is the block's first row; ``labels`` (or None) hold one value
    per row from the first chunk's first row on."""
    base = first * chunk_rows

    def leaf(j):
        lo, hi = j * chunk_rows, j * chunk_rows + chunk_rows
        chunk = block[lo - offset : hi - offset]
        return chunk_result(func, chunk, _labels_of(labels, lo - base, hi - base), args)

    return cover_nodes(first, stop, leaf)


def _piece(block, lo, hi):
    return block[lo:hi]


def _straddling_leaf(pieces, j, func, args, labels):
    """In a worker: chunk j's result from its pieces in consecutive blocks."""
    chunk = np.concatenate(pieces, axis=0)
    return {(j, 0): chunk_result(func, chunk, _labels_of(labels, 0, len(chunk)), args)}


def dask_tree_reduce(X, chunk_rows, func, args=(), labels=None):
    """Canonical-tree total of ``func`` over a Dask array's chunks (workers
    compute the chunks and the nodes inside their blocks, the client the rest).

    Parameters
    ----------
    X : dask array of shape (n, d)
        The rows.
    chunk_rows : int
        C.
    func : callable
        ``func(chunk, [labels,] *args)``, a chunk's partial result (a
        module-level function: it is sent to the workers).
    args : tuple
        Passed on to ``func`` (public values).
    labels : ndarray of shape (n,), default=None
        One value per row, sliced with the rows.

    Returns
    -------
    object
        The total, as :func:`tree_reduce` forms it for numpy input.
    """
    import dask

    n = int(X.shape[0])
    m = max(1, -(-n // chunk_rows))
    blocks = X.rechunk({1: -1}).to_delayed().ravel()
    bounds = np.cumsum([0, *X.chunks[0]]).tolist()
    tasks, pieces = [], {}
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        first = -(-lo // chunk_rows)
        stop = hi // chunk_rows + (1 if hi == n and n % chunk_rows else 0)
        if stop > first:
            rows = _labels_of(labels, first * chunk_rows, min(stop * chunk_rows, n))
            tasks.append(
                dask.delayed(_block_nodes)(
                    blocks[b], lo, first, stop, chunk_rows, func, args, *rows or (None,)
                )
            )
        # Pieces of chunks that straddle this block's edges.
        for j in {lo // chunk_rows, (hi - 1) // chunk_rows} if hi > lo else ():
            a, z = j * chunk_rows, min((j + 1) * chunk_rows, n)
            if not (lo <= a and z <= hi):
                cut = dask.delayed(_piece)(blocks[b], max(a, lo) - lo, min(z, hi) - lo)
                pieces.setdefault(j, []).append((lo, cut))
    for j, parts in sorted(pieces.items()):
        a, z = j * chunk_rows, min((j + 1) * chunk_rows, n)
        ordered = [cut for _, cut in sorted(parts, key=lambda p: p[0])]
        rows = _labels_of(labels, a, z)
        tasks.append(
            dask.delayed(_straddling_leaf)(ordered, j, func, args, *rows or (None,))
        )
    known = {}
    for nodes in dask.compute(*tasks):
        known.update(nodes)
    return tree_reduce(m, known=known)
