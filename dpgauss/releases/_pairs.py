"""Pair differences: rows whose second moment is half the covariance, whatever the mean.

A helper module of the release layer. The rows of X are paired by a public
random pairing (:class:`Pairing`) and each pair gives ``z = x/2 - x'/2``
(:class:`PairDifferences`), so that ``E[z z^T] = C / 2`` for independent rows
of covariance C, with no center to release first. Used by the tail-sensitive
covariance (:mod:`dpgauss.releases._adaptive`, when the mean's noise would
cost more than the pairs') and by the coarse range's scale
(:mod:`dpgauss.releases._range`).

The pairing is blockwise, so that the pairs stream. The rows are cut into
blocks of :data:`PAIR_BLOCK` consecutive rows (the last one possibly
shorter); the fit's generator draws a random order of the blocks, and the
blocks at consecutive places of that order form groups of
:data:`PAIR_GROUP` blocks, whose rows are permuted together (a permutation
per group, seeded from the fit's generator and the group's index). Read in
that order, the rows are paired position ``i`` with position ``i + m``
(m = n // 2; with n odd the last position is in no pair). A chunk of pairs
(:data:`PAIR_CHUNK`) is then a few groups, each a few contiguous block reads
and an in-memory permutation: memory-mapped files are read in runs of
PAIR_BLOCK rows, in memory bounded by four groups, a Dask graph carries
slices of blocks and the groups' permutations of the rows it reads (no
n-length index array), and every engine forms the same rows z in the same
order. With one group (n <= PAIR_BLOCK * PAIR_GROUP) the order is
``rng.permutation(n)``, the uniform pairing used before.

Mixing. Rows sorted by class or value are why the pairing is random: pairs
of neighbours would hide the between-class covariance. A group's rows come
from PAIR_GROUP random blocks and each row's partner from another random
group, so the pairs' second moment on sorted rows is within sampling error
of the uniform pairing's (measured, non-private ``2 Z^T Z / m`` against the
sample covariance, four classes sorted, d = 10, relative Frobenius error,
median / largest of 20 pairings, n = 10^5: 0.61% / 0.89% sorted, 0.59% /
1.15% shuffled; the uniform pairing 0.55% / 0.91% sorted). Plain blocks (a
group of one) mixed badly: blocks of 1,024 rows gave 12% / 21% sorted at n =
10^5 (0.6% shuffled), since each block met a single random partner block;
groups of 128 blocks of 128 rows 0.76% / 3.1%.

Privacy. The pairing is a function of n, the public constants and the fit's
generator only, drawn independently of the data, so it is public. Each row
is at one position of the permuted order, hence in at most one pair: replacing
one row of X changes at most one of the m = n // 2 rows z (the row's own
pair; with n odd one row is in no pair), so a release on the rows z
calibrated to m rows and to replacing one of them is private with respect to
replacing one row of X, with the same parameters. Nothing here draws noise
or releases a value: the rows z are computed exactly as halves (``a/2 -
b/2`` is finite for finite rows, where a difference could overflow), so the
sensitivities of the releases that use them hold in float64. Which rows are
read, and in which order, depends on the pairing alone, never on the values.
"""

import numpy as np

from dpgauss.utils._mapped import MappedRows
from dpgauss.utils._norm_stats import norm_statistics
from dpgauss.utils._sums import (
    _TINY_NORM,
    CHUNK_ROWS,
    Workspace,
    clipped_sums,
    file_backed,
    is_dask_array,
    read_into,
    row_norms,
)

__all__ = [
    "NORM_CACHE_PAIRS",
    "PAIR_BLOCK",
    "PAIR_CHUNK",
    "PAIR_GROUP",
    "PairDifferences",
    "Pairing",
]

#: Rows per block of the pairing (public): the unit of a read.
PAIR_BLOCK = 1 << 6
#: Blocks per group (public): the rows of a group of this many blocks, at
#: consecutive places of the blocks' random order, are permuted together.
PAIR_GROUP = 1 << 8
#: Pairs per chunk: every engine forms the rows z in chunks of this many pairs,
#: in the pairing's order (so that sums over them agree bit for bit).
PAIR_CHUNK = CHUNK_ROWS
#: Up to this many pairs (numpy and memory-mapped rows), the pairs' norms are
#: kept after the first pass that needs them (8 bytes a pair: 32 MiB at most,
#: memory still bounded whatever n), so the later norm statistics (the trace
#: and the threshold search's sums after the radius scan) read them instead
#: of gathering the pairs again (at 10^6 x 50 a gather and its norms cost
#: 0.2-0.3 s a pass). The statistics are exact integer sums of the same
#: per-pair norms, so they are the same integers either way.
NORM_CACHE_PAIRS = 1 << 22


class Pairing:
    """A public blockwise random pairing of n rows (see the module docstring).

    Parameters
    ----------
    n : int
        Rows.
    rng : numpy.random.Generator
        The fit's generator; the only input besides n (never the data).
    count : int, default=None
        Use only the first ``count`` pairs (all m = n // 2 when None).
    """

    def __init__(self, n, rng, count=None):
        n = int(n)
        self.n, self.m = n, n // 2
        self.count = self.m if count is None else min(int(count), self.m)
        if n <= PAIR_BLOCK * PAIR_GROUP:  # one group: the uniform pairing
            self.whole = rng.permutation(n)
            self.groups = 1
            self.starts = np.array([0, n])
            return
        self.whole = None
        k = -(-n // PAIR_BLOCK)
        self.slots = rng.permutation(k)  # the block at each place of the order
        self.key = int(rng.integers(2**62))  # seeds each group's permutation
        sizes = np.minimum(PAIR_BLOCK, n - self.slots * PAIR_BLOCK)
        self.groups = -(-k // PAIR_GROUP)
        ends = np.cumsum(sizes)[
            np.minimum(np.arange(1, self.groups + 1) * PAIR_GROUP, k) - 1
        ]
        self.starts = np.concatenate([[0], ends])  # of each group in the order

    def group_rows(self, t):
        """The rows of group t (indices into X) in its permuted order."""
        if self.whole is not None:
            return self.whole
        blocks = self.slots[t * PAIR_GROUP : (t + 1) * PAIR_GROUP]
        return _ranges(self.n, blocks)[self.group_order(t)]

    def group_blocks(self, t):
        """The blocks of group t, in the order its rows are concatenated."""
        if self.whole is not None:
            return None
        return self.slots[t * PAIR_GROUP : (t + 1) * PAIR_GROUP]

    def group_order(self, t):
        """The permutation of group t's concatenated rows (from the fit's
        generator through ``key`` and t only)."""
        if self.whole is not None:
            return self.whole
        size = int(self.starts[t + 1] - self.starts[t])
        return np.random.default_rng([self.key, t]).permutation(size)

    def segments(self, start, stop):
        """Positions ``start:stop`` of the order as ``(group, lo, hi)`` runs."""
        out = []
        t = int(np.searchsorted(self.starts, start, side="right")) - 1
        while start < stop:
            a, z = int(self.starts[t]), int(self.starts[t + 1])
            hi = min(stop, z)
            out.append((t, start - a, hi - a))
            start, t = hi, t + 1
        return out

    def rows(self, start, stop):
        """The rows (indices into X) at positions ``start:stop`` of the order."""
        parts = [self.group_rows(t)[lo:hi] for t, lo, hi in self.segments(start, stop)]
        return np.concatenate([np.zeros(0, dtype=np.int64), *parts])

    def indices(self):
        """``(first, second)``: pair i is row ``first[i]`` with row ``second[i]``
        (n-length arrays: for tests; the fit streams instead)."""
        return self.rows(0, self.count), self.rows(self.m, self.m + self.count)

    def chunks(self):
        """The pair ranges ``(start, stop)`` of the chunks, in order."""
        return [
            (s, min(s + PAIR_CHUNK, self.count))
            for s in range(0, self.count, PAIR_CHUNK)
        ]


class PairDifferences:
    """The rows ``z_i = x_first[i] / 2 - x_second[i] / 2`` of a pairing, streamed.

    ``E[z z^T] = C / 2`` for independent rows with covariance C, whatever their
    mean, so the covariance needs no center. Replacing one row of X changes at
    most one z (the pairing is public, drawn independently of the data), so a
    release on the m rows z with sensitivities for m rows is private with
    respect to X. Halves, not a difference then a scaling: every z is finite
    for finite rows (|x/2 - x'/2| <= max float). The rows z are never stored
    whole: :meth:`map` applies a function to each chunk of them.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n, d)
        Validated rows (not modified).
    pairing : Pairing
        The public pairing of the n rows.
    """

    def __init__(self, X, pairing):
        self.X, self.pairing = X, pairing
        self.shape = (pairing.count, X.shape[1])
        self._norms = None  # the pairs' norms per chunk, once computed

    @property
    def n_partials(self):
        """How many chunk sums a pass over the pairs adds (public)."""
        return max(1, len(self.pairing.chunks()))

    def map(self, func, *args, reuse=False):
        """``[func(z, *args) for each chunk z]``, in the pairing's order.

        Numpy and memory-mapped rows are read group by group in this process;
        for a Dask array each chunk is formed and ``func`` applied in the
        workers, from slices of the array's blocks (small results return).
        With ``reuse`` (for a ``func`` that keeps no reference to z), the
        chunks are formed in two buffers used again for every chunk: fresh
        3 MiB arrays per chunk cost page faults (at 10^6 x 50 a pass of the
        pairs' norms spent 0.2 of its 0.45 s in them). The values are the
        same either way.
        """
        chunks = self.pairing.chunks()
        m = self.pairing.m
        if is_dask_array(self.X):
            return self._dask_map(chunks, func, args)
        reader = _Reader(self.X, self.pairing)
        shape = (min(PAIR_CHUNK, self.pairing.count), self.shape[1])
        buffers = (np.empty(shape), np.empty(shape)) if reuse else (None, None)

        def form(s, e):
            a, b = (None if buf is None else buf[: e - s] for buf in buffers)
            return _halves(reader.rows(s, e, a), reader.rows(s + m, e + m, b))

        return [func(form(s, e), *args) for s, e in chunks]

    def norm_statistics(self, stat, *args):
        """:func:`~dpgauss.utils._norm_stats.norm_statistics` of the norms of z
        (about 0), chunk by chunk: the same integers on every engine.

        Up to :data:`NORM_CACHE_PAIRS` pairs of numpy or memory-mapped rows,
        the first call keeps each chunk's norms (as the chunked pass computes
        them, :func:`~dpgauss.utils._sums.row_norms` of the chunk of z about
        0) and later calls sum ``stat`` over the kept chunks: the same
        per-pair norms, hence the same integer sums, with no second gather.
        Dask rows are always reduced in the workers.
        """
        zero = np.zeros(self.shape[1])
        empty = np.asarray(stat(np.zeros(0), *args))
        if (
            self._norms is None
            and not is_dask_array(self.X)
            and self.shape[0] <= NORM_CACHE_PAIRS
        ):
            self._norms = self.map(_chunk_norms, zero, reuse=True)
        if self._norms is None:
            parts = self.map(norm_statistics, zero, stat, *args, reuse=True)
        else:
            with np.errstate(all="ignore"):
                parts = [np.asarray(stat(norms, *args)) for norms in self._norms]
        return np.sum([empty, *parts], axis=0)

    def clipped_sums(self, radius):
        """The sums of z and z z^T for z clipped to ``radius`` about 0.

        :func:`~dpgauss.utils._sums.clipped_sums` of each chunk (exactly
        symmetric), added in the pairing's order: one partial sum per chunk,
        :attr:`n_partials` in all, as for an array of the rows z, and the
        same chunks in the same order on every engine.
        """
        d = self.shape[1]
        parts = self.map(clipped_sums, np.zeros(d), radius, reuse=True)
        sum_y, sum_yy = np.zeros(d), np.zeros((d, d))
        with np.errstate(all="ignore"):
            for y, yy in parts:
                sum_y += y
                sum_yy += yy
        return sum_y, sum_yy

    def rows(self):
        """All the rows z (an array of ``count`` rows: for bounded counts)."""
        parts = self.map(_identity)
        return np.concatenate([np.zeros((0, self.shape[1])), *parts])

    def _dask_map(self, chunks, func, args):
        """:meth:`map` on a Dask array: a task per piece of a group within one
        of the array's blocks, one per group (its rows in its order), one per
        chunk of pairs (the few groups it reads); nothing n-length."""
        import dask

        p, m = self.pairing, self.pairing.m
        X = self.X.rechunk({1: -1})
        blocks = X.to_delayed().ravel()
        bounds = np.cumsum([0, *X.chunks[0]])
        groups = {}

        def group(t):
            if t not in groups:
                whole = p.whole is not None
                ranges = [(0, p.n)] if whole else _block_ranges(p.n, p.group_blocks(t))
                # Per Dask block: rows [a, z) of it go to ``dest`` (int64).
                pieces = [
                    (c, np.array([(a, z, at) for (a, z), at in where]))
                    for c, where in _split(ranges, bounds)
                ]
                order = p.whole if whole else (p.key, t)
                groups[t] = dask.delayed(_assemble)(
                    order,
                    [spans for _, spans in pieces],
                    *[dask.delayed(_take)(blocks[c], spans) for c, spans in pieces],
                )
            return groups[t]

        tasks = []
        for s, e in chunks:
            first = p.segments(s, e)
            runs = first + p.segments(s + m, e + m)
            spans = [(lo, hi) for _, lo, hi in runs]
            needed = [group(t) for t, _, _ in runs]
            tasks.append(dask.delayed(_apply)(len(first), spans, func, args, *needed))
        return list(dask.compute(*tasks))


def _block_ranges(n, blocks):
    """The row ranges of ``blocks`` (of PAIR_BLOCK rows; the last is short)."""
    return [(b * PAIR_BLOCK, min((b + 1) * PAIR_BLOCK, n)) for b in blocks]


def _ranges(n, blocks):
    """The rows of ``blocks``, concatenated in their order (each block's rows
    ascending; rows past n, of the short last block, left out)."""
    blocks = np.asarray(blocks, dtype=np.int64).reshape(-1, 1)
    rows = (blocks * PAIR_BLOCK + np.arange(PAIR_BLOCK, dtype=np.int64)).ravel()
    return rows[rows < n]


def _split(ranges, bounds):
    """Cut the concatenated row ranges at the Dask blocks' ``bounds``:
    ``[(block, [((local_start, local_stop), destination), ...]), ...]``."""
    pieces, at = {}, 0
    for a, z in ranges:
        while a < z:
            c = int(np.searchsorted(bounds, a, side="right")) - 1
            stop = min(z, int(bounds[c + 1]))
            span = (a - int(bounds[c]), stop - int(bounds[c]))
            pieces.setdefault(c, []).append((span, at))
            at, a = at + stop - a, stop
    return [(c, pieces[c]) for c in sorted(pieces)]


def _take(block, spans):
    """In a worker: the rows ``a:z`` (``spans`` rows ``(a, z, destination)``)
    of one Dask block, concatenated."""
    block = np.asarray(block)
    return np.concatenate([block[a:z] for a, z, _ in spans.tolist()])


def _assemble(order, wheres, *pieces):
    """In a worker: a group's rows (float64) in its permuted order."""
    d = pieces[0].shape[1]
    size = sum(piece.shape[0] for piece in pieces)
    rows = np.empty((size, d))
    with np.errstate(all="ignore"):
        for piece, where in zip(pieces, wheres, strict=True):
            at = 0
            for a, z, dest in where.tolist():
                rows[dest : dest + z - a] = piece[at : at + z - a]
                at += z - a
    if isinstance(order, tuple):  # (key, t): Pairing.group_order
        order = np.random.default_rng(list(order)).permutation(size)
    return rows[order]


def _identity(z):
    return z


def _chunk_norms(z, center):
    """The norms of a chunk of z about ``center`` (0), as
    :func:`~dpgauss.utils._norm_stats.norm_statistics` computes them
    (:func:`~dpgauss.utils._sums.row_norms`), without its copy ``z - 0``:
    ``z - 0`` is z bit for bit (``-0 - 0 = -0``, NaN and inf stay), and each
    norm is a function of its row alone, so the rows whose one-pass norm is
    not finite or tiny (row_norms' careful path) are handed to row_norms."""
    with np.errstate(all="ignore"):
        z = np.asarray(z, dtype=np.float64)
        if np.any(center):  # only 0 is copy-free
            return row_norms(z, center)
        norms = np.sqrt(np.einsum("ij,ij->i", z, z))
        bad = np.flatnonzero(~np.isfinite(norms) | (norms < _TINY_NORM))
        if bad.size:
            norms[bad] = row_norms(z[bad], center)
        return norms


def _apply(half, spans, func, args, *groups):
    """In a worker: form one chunk of z from its groups, apply ``func``."""
    d = groups[0].shape[1]
    rows = [group[lo:hi] for group, (lo, hi) in zip(groups, spans, strict=True)]
    first = np.concatenate([np.zeros((0, d)), *rows[:half]])
    second = np.concatenate([np.zeros((0, d)), *rows[half:]])
    return func(_halves(first, second), *args)


class _Reader:
    """Reads the rows of the pairing's groups from an array (one gather) or a
    memory-mapped file (its blocks by ordinary file reads, so that the file's
    pages do not count as resident memory; the last groups kept, since a
    group spans chunk boundaries), converting them to float64."""

    def __init__(self, X, pairing):
        self.pairing, self.cache, self.work = pairing, {}, Workspace()
        # Rows under a row-wise map (a box route's, utils._mapped): the
        # underlying rows are read as below and each group's rows mapped as
        # they are read (the map acts row by row: the same bits).
        self.mapping = (X.func, X.args) if isinstance(X, MappedRows) else None
        self.width = int(X.shape[1])  # of the (mapped) rows
        X = X.X if self.mapping is not None else X
        backed = file_backed(X)
        self.file = open(X.filename, "rb", buffering=0) if backed else None
        self.X = X if self.file is not None else np.asarray(X)

    def rows(self, start, stop, out=None):
        """The rows at positions ``start:stop`` of the order, as float64 (in
        ``out`` when given, of ``stop - start`` rows)."""
        if out is None:
            out = np.empty((stop - start, self.width))
        at = 0
        with np.errstate(all="ignore"):
            for t, lo, hi in self.pairing.segments(start, stop):
                if self.file is None:  # one gather of the rows needed
                    index = self._cached(("rows", t), self.pairing.group_rows)[lo:hi]
                    part = out[at : at + hi - lo]
                    # Mapped rows are gathered into a buffer kept for the
                    # next chunk, then mapped into place: fresh chunk-sized
                    # arrays cost page faults (a box-unit pass at 10^6 x 50
                    # spent 0.4 of its 0.6 s in them).
                    into = part
                    if self.mapping is not None:
                        shape = (hi - lo, self.X.shape[1])
                        into = self.work.get("gathered", shape)
                    if self.X.dtype == np.float64:
                        np.take(self.X, index, axis=0, out=into)
                    else:  # converted to float64 a chunk at a time
                        into[...] = self.X[index]
                    if self.mapping is not None:
                        func, args = self.mapping
                        func(into, *args, out=part)
                else:
                    out[at : at + hi - lo] = self._group(t)[lo:hi]
                at += hi - lo
        return out

    def _cached(self, key, make):
        """``make(key[1])``, kept for the last four keys."""
        if key not in self.cache:
            if len(self.cache) >= 4:
                self.cache.pop(next(iter(self.cache)))
            self.cache[key] = make(key[1])
        return self.cache[key]

    def _group(self, t):
        """Group t's rows in its permuted order (read block by block)."""
        return self._cached(("group", t), self._read)

    def _read(self, t):
        """Read group t's blocks from the file, in its permuted order."""
        p, X, d = self.pairing, self.X, self.X.shape[1]
        ranges = [(0, p.n)] if p.whole is not None else None
        if ranges is None:
            ranges = _block_ranges(p.n, p.group_blocks(t))
        rows = np.empty((sum(z - a for a, z in ranges), d), dtype=X.dtype)
        raw, width, at = (
            memoryview(rows.reshape(-1).view(np.uint8)),
            d * X.dtype.itemsize,
            0,
        )
        for start, stop in ranges:  # straight into place, unbuffered
            self.file.seek(X.offset + start * width)
            want = (stop - start) * width
            read_into(self.file, raw[at : at + want], X.filename)
            at += want
        rows = rows[p.group_order(t)]
        if self.mapping is not None:
            func, args = self.mapping
            rows = func(rows, *args)
        return rows

    def __del__(self):
        if getattr(self, "file", None) is not None:
            self.file.close()


def _halves(a, b):
    """``a/2 - b/2``: finite for finite rows (a difference could overflow)."""
    with np.errstate(all="ignore"):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        # In place on the gathered copies (the same values as 0.5 a - 0.5 b).
        a = np.multiply(a, 0.5, out=a) if a.flags.writeable else 0.5 * a
        b = np.multiply(b, 0.5, out=b) if b.flags.writeable else 0.5 * b
        return np.subtract(a, b, out=a)
