"""Sums over rows of clipped data, read in chunks (numpy, memory-mapped or Dask).

Every estimator's data pass is here: the heavy work is sums over rows, so the
same code runs on an array, a memory-mapped file or a Dask array.
"""

import mmap

import numpy as np

__all__ = [
    "CHUNK_ROWS",
    "all_finite",
    "clipped_sums",
    "is_dask_array",
    "iter_chunks",
    "row_norms",
]

#: Rows per chunk when summing over rows (bounds temporary memory to about
#: ``CHUNK_ROWS * n_features * 8`` bytes).
CHUNK_ROWS = 1 << 15


def is_dask_array(X):
    """True when ``X`` is a dask array (without importing dask otherwise)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def _file_backed(X):
    """True for a whole, C-ordered memory-mapped file (as ``np.load`` returns).

    Such arrays are read with ordinary file reads: pages touched through the
    mapping would count towards the process's resident memory (8 GB for an 8 GB
    file), while pages read into a buffer stay in the kernel's cache only.
    """
    return (
        isinstance(X, np.memmap)
        and isinstance(getattr(X, "base", None), mmap.mmap)
        and X.filename is not None
        and X.ndim == 2
        and X.flags.c_contiguous
    )


def iter_chunks(X):
    """Yield consecutive row blocks of ``X`` (at most CHUNK_ROWS rows each).

    Parameters
    ----------
    X : ndarray or numpy.memmap of shape (n_samples, n_features)
        The data.

    Yields
    ------
    ndarray
        The next block of rows (a view for arrays, a fresh buffer for files).
    """
    n, d = X.shape
    if not _file_backed(X):
        X = np.asarray(X)
        for start in range(0, n, CHUNK_ROWS):
            yield X[start : start + CHUNK_ROWS]
        return
    with open(X.filename, "rb") as fh:
        fh.seek(X.offset)
        for start in range(0, n, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, n - start)
            block = np.fromfile(fh, dtype=X.dtype, count=rows * d)
            yield block.reshape(rows, d)


def all_finite(X):
    """True when every entry of ``X`` is finite, checked chunk by chunk."""
    return all(bool(np.isfinite(block).all()) for block in iter_chunks(X))


def _block_sums(block, location, radius, with_outer):
    d = block.shape[1]
    sum_y, sum_yy = np.zeros(d), np.zeros((d, d)) if with_outer else None
    for chunk in iter_chunks(block):
        y = _clip_rows(chunk, location, radius)
        sum_y += y.sum(axis=0)
        if with_outer:
            sum_yy += y.T @ y
    return sum_y, sum_yy


def _over_blocks(X, func, *args):
    """Apply ``func`` to row blocks (Dask blocks computed in parallel) and add up."""
    if not is_dask_array(X):
        return [func(X, *args)]
    import dask

    blocks = X.rechunk({1: -1}).to_delayed().ravel()
    return dask.compute(*[dask.delayed(func)(b, *args) for b in blocks])


def clipped_sums(X, location, data_norm, with_outer=True):
    """Return the sums over rows of y and y y^T for rows clipped to ``data_norm``.

    Each row ``x`` becomes ``y = (x - c) * min(1, data_norm / ||x - c||)`` with
    ``c = location``, so ``||y|| <= data_norm`` whatever the data. The input is
    read in chunks and never modified.

    Parameters
    ----------
    X : ndarray or dask array of shape (n_samples, n_features)
        The data (an array, a memory-mapped array or a Dask array).
    location : ndarray of shape (n_features,)
        The public centre of the clipping ball.
    data_norm : float
        The public radius.
    with_outer : bool, default=True
        Also sum the outer products (skip for a mean-only pass).

    Returns
    -------
    sum_y : ndarray of shape (n_features,)
        Sum of the clipped rows.
    sum_yy : ndarray of shape (n_features, n_features) or None
        Sum of their outer products (None if ``with_outer`` is False).
    """
    parts = _over_blocks(X, _block_sums, location, data_norm, with_outer)
    sum_y = np.sum([p[0] for p in parts], axis=0)
    sum_yy = np.sum([p[1] for p in parts], axis=0) if with_outer else None
    return sum_y, sum_yy


def _block_norms(block, location):
    norms = [_offsets_and_norms(chunk, location)[1] for chunk in iter_chunks(block)]
    return np.concatenate(norms) if norms else np.zeros(0)


def row_norms(X, location):
    """Return the l2 norm of every row's offset from ``location`` (non-finite -> 0).

    Parameters
    ----------
    X : ndarray or dask array of shape (n_samples, n_features)
        The data.
    location : ndarray of shape (n_features,)
        The centre.

    Returns
    -------
    ndarray of shape (n_samples,)
        The norms, in row order (rows that are not finite count as the centre).
    """
    return np.concatenate(_over_blocks(X, _block_norms, location))


def _offsets_and_norms(x, location):
    """``y = x - location`` (a new array) and the l2 norm of each row of y.

    Rows that are not finite (or whose offset overflows) are set to 0. Norms are
    computed with one pass; only rows whose squared norm is not finite (rare:
    non-finite input, or entries beyond ~1e154) take the careful path, where the
    norm is ``max|y| * ||y / max|y|||`` (inf if it exceeds float64's range).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.asarray(x, dtype=np.float64) - location
        squared = np.einsum("ij,ij->i", y, y)
    bad = np.flatnonzero(~np.isfinite(squared))
    if bad.size:
        rows = y[bad]
        rows[~np.isfinite(rows).all(axis=1)] = 0.0
        y[bad] = rows
        peak = np.abs(rows).max(axis=1)
        safe = np.where(peak > 0, peak, 1.0)
        with np.errstate(over="ignore"):
            squared[bad] = (peak * np.linalg.norm(rows / safe[:, None], axis=1)) ** 2
    return y, np.sqrt(squared)


def _clip_rows(x, location, radius):
    """Return ``x - location`` with every row scaled into the ball of ``radius``.

    Privacy must not depend on input validation, so every float row is mapped
    into the ball: a row that is not finite (possible when scikit-learn's
    ``assume_finite`` is set) or whose offset overflows float64 is mapped to the
    centre, a fixed public point; a huge finite row is scaled without overflow.
    """
    y, norms = _offsets_and_norms(x, location)
    with np.errstate(divide="ignore"):
        factor = np.minimum(1.0, radius / norms)  # 0 where the norm overflowed
    huge = np.isinf(norms)
    if huge.any():  # scale those rows by their largest entry first
        scaled = y[huge] / np.abs(y[huge]).max(axis=1, keepdims=True)
        factor[huge] = 1.0
        y[huge] = scaled * (radius / np.linalg.norm(scaled, axis=1))[:, None]
    y *= factor[:, None]
    return y


def _in_memory(X):
    return type(X) is np.ndarray


def clipped_mean_sum(X, location, radius, norms):
    """Sum of the rows clipped to ``radius`` around ``location``, given their norms.

    For an in-memory array this is ``X^T f - location sum(f)`` with
    ``f = min(1, radius / norms)``: one matrix-vector product instead of a pass
    that copies the data. If the array is not in memory, or the product is not
    finite (a row that is not finite), the chunked :func:`clipped_sums` is used.
    Both compute the same per-row map (up to floating-point rounding), so the
    sensitivity 2r/n of the mean holds either way.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        The data.
    location : ndarray of shape (n_features,)
        The centre.
    radius : float
        The clipping radius.
    norms : ndarray of shape (n_samples,)
        ``row_norms(X, location)``.

    Returns
    -------
    ndarray of shape (n_features,)
        The sum of the clipped rows.
    """
    if _in_memory(X):
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            f = np.minimum(1.0, radius / norms)
            total = X.T @ f - location * f.sum()
        if np.all(np.isfinite(total)):
            return total
    return clipped_sums(X, location, radius, with_outer=False)[0]


def shifted_norms(X, location, norms, shift):
    """Norms of ``x - (location + shift)`` from the norms of ``x - location``.

    For an in-memory array: ``|x - l - s|^2 = |x - l|^2 - 2 (x - l).s + |s|^2``,
    one matrix-vector product; otherwise (or if not finite) a chunked pass.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        The data.
    location : ndarray of shape (n_features,)
        The old centre.
    norms : ndarray of shape (n_samples,)
        ``row_norms(X, location)``.
    shift : ndarray of shape (n_features,)
        The new centre minus the old.

    Returns
    -------
    ndarray of shape (n_samples,)
        The norms around the new centre.
    """
    if _in_memory(X):
        with np.errstate(over="ignore", invalid="ignore"):
            dots = X @ shift - location @ shift
            squared = norms**2 - 2.0 * dots + shift @ shift
        if np.all(np.isfinite(squared)):
            return np.sqrt(np.maximum(squared, 0.0))
    return row_norms(X, location + shift)
