"""Exact integer statistics of row norms, streamed chunk by chunk.

The radius scan's counts at its public grid, the trace's fixed-point sum and
the threshold search's fixed-point sums at its levels are sums over rows of
per-row integers (:mod:`dpgauss.releases._radius`,
:mod:`dpgauss.releases._threshold_search`). Integer sums do not depend on how
the rows are cut into chunks or in which order the chunks are added, so
:func:`norm_statistics` computes them one chunk at a time, with no n-length
array, and gets exactly the integers the whole norm vector gives, on numpy,
memory-mapped and Dask rows alike (a Dask array's blocks are reduced in the
workers; only the small integer vectors return).
"""

import numpy as np

from dpgauss.utils._sums import is_dask_array, iter_chunks, row_norms

__all__ = ["norm_statistics"]


def _block_statistics(block, center, stat, args):
    # Runs in a Dask worker too: everything under errstate (no warning may
    # depend on the data), each chunk's conversion to float64 included.
    total = np.asarray(stat(np.zeros(0), *args))
    with np.errstate(all="ignore"):
        for chunk in iter_chunks(block):
            norms = row_norms(np.asarray(chunk, dtype=np.float64), center)
            total = total + np.asarray(stat(norms, *args))
    return total


def norm_statistics(X, center, stat, *args):
    """Exact integer statistics of the rows' norms, computed chunk by chunk.

    ``stat(norms, *args)`` maps the norms of some rows (as
    :func:`~dpgauss.utils._sums.row_norms` computes them, without ``far``: a
    function of each row alone) to an integer vector that adds over rows:
    counts above public radii, or fixed-point sums at public levels.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows (not modified; converted to float64 one chunk at a time).
    center : ndarray of shape (n_features,) or float
        The center of the norms.
    stat : callable
        ``stat(norms, *args)``, an integer array of a fixed shape.
    *args
        Passed on to ``stat``.

    Returns
    -------
    ndarray of int64
        The sum over chunks: the statistic of all the rows' norms.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._norm_stats import norm_statistics
    >>> def above(norms, r):
    ...     return np.array([np.count_nonzero(norms > r)])
    >>> norm_statistics(np.eye(3) * [1.0, 2.0, 3.0], 0.0, above, 1.5)
    array([2])
    """
    if not is_dask_array(X):
        return _block_statistics(X, center, stat, args)
    import dask

    blocks = X.rechunk({1: -1}).to_delayed().ravel()
    parts = dask.compute(
        *[dask.delayed(_block_statistics)(b, center, stat, args) for b in blocks]
    )
    return np.sum([np.asarray(stat(np.zeros(0), *args)), *parts], axis=0)
