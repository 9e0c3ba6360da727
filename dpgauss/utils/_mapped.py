"""Rows under a public row-wise map, computed as each pass reads them.

A box route reads its rows in box units (:func:`~dpgauss.releases._box.boxed`),
the augmented releases read ``(z, c)``: rather than an n-long mapped copy, the
passes of :mod:`dpgauss.utils._sums` read the input chunk by chunk and map each
chunk as it is read (a Dask array's blocks in the workers). The map acts on each
row alone, so the mapped chunks are bit for bit the rows of the whole mapped
array, and every sum over them is formed on the canonical chunks
(:mod:`dpgauss.utils._canonical`): the same release whatever the engine.
"""

import numpy as np

__all__ = ["MappedRows", "mapped_rows"]


class MappedRows:
    """An array's rows under a row-wise map, computed as they are read.

    The rows of ``func(X, *args)`` without that (n-long) array: a pass reads
    them chunk by chunk (:func:`~dpgauss.utils._sums.iter_chunks`,
    :func:`~dpgauss.utils._sums.over_chunks`: each
    canonical chunk of ``X`` read, converted and mapped on its own, a
    memory-mapped file by ordinary reads), an index reads and maps the rows
    it selects. ``func`` must act on each row alone (entry by entry, as the
    public box map does), so that a chunk's mapped rows are bit for bit the
    rows of the whole mapped array; it must never write into its input (the
    caller's rows), and it takes a keyword ``out``: None (return a new
    array) or a float64 array of the mapped chunk's shape to write into and
    return (a pass maps every chunk into one buffer). Made by
    :func:`mapped_rows`.

    Parameters
    ----------
    X : ndarray or numpy.memmap of shape (n_samples, n_features)
        The rows (only read).
    func : callable
        ``func(rows, *args)``, the row-wise map.
    args : tuple
        Public values passed on to ``func``.
    width : int, default=None
        The mapped rows' length, when it is not ``X``'s.
    """

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, X, func, args, width=None):
        self.X, self.func, self.args = X, func, tuple(args)
        self.shape = (int(X.shape[0]), int(X.shape[1] if width is None else width))

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        # numpy's semantics on the mapped array: the rows the first index
        # selects are read and mapped (the map needs whole rows), then the
        # whole index is applied to them with its row part replaced by their
        # positions, so that an integer row with a column, or row and column
        # arrays paired point by point, select what they select there.
        index = index if isinstance(index, tuple) else (index,)
        first, rest = (index[0], index[1:]) if index else (slice(None), ())
        if first is None or first is Ellipsis:
            raise IndexError("MappedRows: the first index must select rows.")
        if isinstance(first, slice):
            picked, first = self.X[first], slice(None)
        else:  # an integer, or an integer or boolean array
            first = np.asarray(first)
            if first.dtype == bool:
                first = np.flatnonzero(first)
            picked = self.X[first.reshape(-1)]
            first = np.arange(first.size).reshape(first.shape)
        mapped = self.func(np.asarray(picked), *self.args)
        return mapped[(first, *rest)]

    def __array__(self, dtype=None, copy=None):
        # The whole mapped array (n-long). No fit calls it: every pass streams,
        # and the pairs' reader unwraps the rows and maps each group itself.
        # Kept for callers outside the passes (the audits' canaries).
        from dpgauss.utils._sums import iter_chunks

        out, at = np.empty(self.shape), 0
        for chunk in iter_chunks(self):
            out[at : at + chunk.shape[0]] = chunk
            at += chunk.shape[0]
        return out if dtype is None else out.astype(dtype, copy=False)


def mapped_rows(X, func, *args, width=None):
    """The rows ``func(X, *args)``, mapped as they are read (no n-long copy).

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows (never modified).
    func : callable
        ``func(rows, *args, out=None)``: a module-level function mapping each
        row on its own to a float64 row, into ``out`` when given, a new array
        otherwise (Dask workers receive it).
    *args
        Public values passed on to ``func``.
    width : int, default=None
        The mapped rows' length, when it is not ``X``'s.

    Returns
    -------
    MappedRows or dask array
        For a Dask array, the lazy ``X.map_blocks`` of ``func`` (its blocks
        mapped in the workers); otherwise a :class:`MappedRows` that every
        pass of :mod:`dpgauss.utils._sums` reads chunk by chunk.
    """
    from dpgauss.utils._sums import is_dask_array

    if is_dask_array(X):
        # Whole rows per block (a row's map reads all its entries).
        X = X.rechunk({1: -1})
        width = int(X.shape[1]) if width is None else int(width)
        chunks = (X.chunks[0], (width,))
        return X.map_blocks(_Bound(func, args), dtype=np.float64, chunks=chunks)
    return MappedRows(X, func, args, width)


class _Bound:
    """``func(rows, *args)`` as a picklable callable of the rows alone."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __call__(self, rows):
        return self.func(rows, *self.args)
