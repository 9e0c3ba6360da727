"""A public box ``bounds = (lower, upper)``: validation and the affine map of
rows into the unit box.

``bounds`` is public (scalars or one value per feature). With the public
``c = fl(lower/2 + upper/2)`` and ``h = fl(upper/2 - lower/2)`` (halves first:
no overflow for any finite bounds), every entry of a row becomes

    z_j = clip(fl(fl(x_j - c_j) / h_j), -1, 1)

(a NaN, possible only when scikit-learn's ``assume_finite`` switches
validation off, becomes 0, the center). The offset is taken before clipping
(the library's floating-point rule, :mod:`dpgauss.utils._sums`): an entry 1e12
box widths away, or one whose offset overflows to infinity, is clipped to -1 or
1 like any other. ``clip`` returns the value or an end point, so ``|z_j| <= 1``
holds exactly, as computed, and each z is a function of its own row and public
values only: the mapped rows lie in the l2 ball of radius ``sqrt(d)``. A
statistic released in box units maps back by the same public ``c`` and ``h``
(post-processing).
"""

import warnings

import numpy as np

from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._checks import MAX_RADIUS, MIN_RADIUS
from dpgauss.utils._leak import caller_stacklevel
from dpgauss.utils._mapped import mapped_rows
from dpgauss.utils._messages import shown_indices
from dpgauss.utils._sums import CHUNK_ROWS

__all__ = [
    "EDGE_REACH",
    "EDGE_SHARE",
    "box_frame",
    "box_location",
    "box_offsets",
    "boxed",
    "check_bounds",
    "inside_bounds",
    "public_box",
    "rows_at_edge",
    "warn_rows_at_edge",
]

#: A released box-unit mean this close to an edge (beyond two noise sds)
#: marks a feature whose rows mostly sit at or near that bound. Proof: the
#: rows' box coordinates ``z`` lie in [-1, 1] (clipped), so ``1 - z >= 0``;
#: if their mean is ``mu >= EDGE_SHARE = 0.9`` then ``E[1 - z] = 1 - mu <=
#: 0.1``, and Markov's inequality gives ``P(1 - z >= EDGE_REACH) <= 0.1 /
#: 0.2 = 1/2``: at least half of the rows have ``z > 0.8``, within a fifth
#: of a half-width (a tenth of the box's width) of the upper bound or beyond
#: it, clipped to it; the lower edge likewise. The released mean exceeds the
#: rows' by two noise sds with probability 2.3% (Gaussian noise; about 3% for
#: Laplace). A mean shrunk or clipped towards the centre (a projection,
#: James-Stein, rows clipped to a ball about the centre) only moves ``|m|``
#: down: the test errs towards silence. At 0.99 (90% of the rows within a
#: tenth of a half-width) and at 0.95 (half of them) the two-sd margin kept
#: it silent at small n: raw breast cancer (n = 569, d = 30) in the box (-3,
#: 3) at rho 0.5 puts every row of 9 features at the upper bound, and the
#: means' noise sds are 0.019 (PrivateMean), 0.027 (the covariance's
#: per-coordinate release, whose means are projected into [-1, 1], so 0.95
#: could never fire) and 0.04-0.06 (a tenth of the budget on the centre).
EDGE_SHARE = 0.9
#: How close to the edge, in half-widths, the test puts at least
#: ``1 - (1 - EDGE_SHARE) / EDGE_REACH`` (half) of the rows.
EDGE_REACH = 0.2


def rows_at_edge(box_mean, noise_sd):
    """Which features' released box-unit means lie within ``1 - EDGE_SHARE``
    of an edge beyond two noise sds (post-processing)."""
    return np.abs(np.asarray(box_mean)) - 2.0 * np.asarray(noise_sd) >= EDGE_SHARE


def warn_rows_at_edge(owner, box_mean, noise_sd, said="the mean"):
    """Warn, naming each feature and side, when most rows sit at the box's
    edge (:func:`rows_at_edge`): clipped there when the bounds are too narrow
    or in other units than the rows. Reads released and public values only
    (post-processing). Returns the mask of features named.

    Examples
    --------
    >>> import warnings
    >>> from dpgauss.releases._box import warn_rows_at_edge
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_rows_at_edge("PrivateMean", [0.2, -0.97], 1e-4).tolist()
    [False, True]
    >>> "feature(s) 1 (lower)" in str(caught[0].message)
    True
    """
    box_mean = np.asarray(box_mean, dtype=np.float64)
    edge = rows_at_edge(box_mean, noise_sd)
    if np.any(edge):
        sides = shown_indices(
            edge, lambda j: f"{j} ({'upper' if box_mean[j] > 0 else 'lower'})"
        )
        share = 1.0 - (1.0 - EDGE_SHARE) / EDGE_REACH
        warnings.warn(
            f"{owner}: the released mean of feature(s) {sides} lies within "
            f"{1 - EDGE_SHARE:.2g} of a half-width of the box's edge, beyond its "
            f"noise: at least {share:.0%} of the rows are within {EDGE_REACH:g} "
            "of a half-width of that bound, or beyond it. If they are beyond it, "
            f"they were clipped to it and {said} says little: the bounds are too "
            "narrow there, or in other units than the rows; widen them. (A "
            "feature that truly piles up at a bound, such as a count that is "
            "mostly 0, is fine.)",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )
    return edge


def check_bounds(bounds, n_features=None, owner="PrivateStandardScaler", name="bounds"):
    """Validate public box bounds and return them as two float64 arrays.

    Parameters
    ----------
    bounds : pair of float or array-like
        ``(lower, upper)``: scalars (the same for every feature) or 1-D arrays
        of one value per feature; a 2 x d array is read as its two rows.
    n_features : int, default=None
        The number of features the bounds must fit (per-feature bounds must
        have this length); None checks the bounds alone.
    owner : str, default="PrivateStandardScaler"
        Name used in error messages.
    name : str, default="bounds"
        The parameter's name in error messages (``"target_bounds"``, ...).

    Returns
    -------
    lower, upper : ndarray
        Of shape ``(n_features,)`` when it is given (scalars broadcast),
        else of the shape given (0-D or 1-D).

    Raises
    ------
    ValueError
        If the bounds are missing, not a pair, not finite, of different or
        wrong lengths, not ``lower < upper`` with a half-width in
        ``[1e-140, 1e140]`` for every feature.

    Examples
    --------
    >>> from dpgauss.releases._box import check_bounds
    >>> check_bounds((0, [1.0, 2.0]), n_features=2)
    (array([0., 0.]), array([1., 2.]))
    """
    if bounds is None:
        raise ValueError(
            f"{owner}: {name} is required: a public pair (lower, upper) of scalars "
            "or per-feature arrays, from domain knowledge (rows are clipped to the "
            "box). dpgauss never reads it off the data, which would leak privacy."
        )
    if isinstance(bounds, str | bytes | dict) or not hasattr(bounds, "__len__"):
        raise ValueError(f"{owner}: {name} must be a pair (lower, upper).")
    if len(bounds) != 2:
        raise ValueError(
            f"{owner}: {name} must be a pair (lower, upper), got {len(bounds)} items."
        )
    try:
        lower = np.array(bounds[0], dtype=np.float64)
        upper = np.array(bounds[1], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{owner}: {name} must be numbers ({exc}).") from exc
    if lower.ndim > 1 or upper.ndim > 1:
        raise ValueError(
            f"{owner}: each bound must be a scalar or a 1-D array, got shapes "
            f"{lower.shape} and {upper.shape}."
        )
    if lower.ndim == upper.ndim == 1 and lower.shape != upper.shape:
        raise ValueError(
            f"{owner}: lower and upper bounds have different lengths "
            f"({lower.size} and {upper.size})."
        )
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"{owner}: {name} must be finite.")
    if not np.all(lower < upper):
        raise ValueError(f"{owner}: {name} must have lower < upper for every feature.")
    _, half = box_frame(lower, upper)
    if not np.all((half >= MIN_RADIUS) & (half <= MAX_RADIUS)):
        raise ValueError(
            f"{owner}: every half-width (upper - lower) / 2 must lie in "
            f"[{MIN_RADIUS:g}, {MAX_RADIUS:g}], where squares stay in float64's "
            "range."
        )
    if n_features is not None:
        for bound in (lower, upper):
            if bound.ndim == 1 and bound.size != n_features:
                raise ValueError(
                    f"{owner}: {name} have {bound.size} values per side but X has "
                    f"{n_features} features."
                )
        lower = np.broadcast_to(lower, (n_features,)).copy()
        upper = np.broadcast_to(upper, (n_features,)).copy()
    return lower, upper


def box_frame(lower, upper):
    """The box's center ``c = lower/2 + upper/2`` and half-width ``upper/2 -
    lower/2`` (halves first, so neither overflows for finite bounds)."""
    return lower / 2.0 + upper / 2.0, upper / 2.0 - lower / 2.0


def public_box(bounds, n_features, owner):
    """An estimator's ``bounds`` as the box's ``(c, h)`` for ``n_features``
    (:func:`check_bounds`, then :func:`box_frame`), or None without bounds.

    Examples
    --------
    >>> from dpgauss.releases._box import public_box
    >>> public_box((0.0, [2.0, 4.0]), 2, "Example")
    (array([1., 2.]), array([1., 2.]))
    """
    if bounds is None:
        return None
    return box_frame(*check_bounds(bounds, n_features, owner))


def inside_bounds(point, bounds, n_features, owner):
    """A point mapped back from box units, clipped to the public bounds.

    ``c + h m`` with ``|m| <= 1`` can land one rounding step beyond
    ``lower`` or ``upper``: ``c`` and ``h`` are rounded (``fl(lower/2 +
    upper/2)`` and ``fl(upper/2 - lower/2)``), so ``c + h`` need not equal
    ``upper`` in floating point (about one random box in ten). Clipping to
    the bounds as given is post-processing of a released value and public
    ones, and moves the point by at most that step.

    Parameters
    ----------
    point : ndarray of shape (n_features,)
        A location in the data's units.
    bounds : pair
        The estimator's public ``bounds``.
    n_features : int
        The number of features.
    owner : str
        Name used in error messages.

    Returns
    -------
    ndarray of shape (n_features,)
        A new array inside ``[lower, upper]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._box import box_frame, inside_bounds
    >>> lower, upper = 8.701448475755363, 9.827191161417792
    >>> c, h = box_frame(np.float64(lower), np.float64(upper))
    >>> bool(c + h > upper)
    True
    >>> bool(inside_bounds(np.array([c + h]), (lower, upper), 1, "Example")[0] <= upper)
    True
    """
    lower, upper = check_bounds(bounds, n_features, owner)
    return np.clip(np.asarray(point, dtype=np.float64), lower, upper)


def box_location(m, bounds, n_features, owner):
    """A location released in box units, mapped back: ``c + h clip(m, -1,
    1)``, then :func:`inside_bounds` (post-processing of a released value
    and public ones).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._box import box_location
    >>> box_location(np.array([0.5, 2.0]), (0.0, [2.0, 4.0]), 2, "Example")
    array([1.5, 4. ])
    """
    c, h = public_box(bounds, n_features, owner)
    return inside_bounds(c + h * np.clip(m, -1.0, 1.0), bounds, n_features, owner)


def box_offsets(x, center, half_width, out=None):
    """Rows mapped into the unit box: ``clip((x - c) / h, -1, 1)``.

    The offset comes before the clip; every returned entry satisfies
    ``|z| <= 1`` exactly, whatever the input (an overflowing offset becomes
    -1 or 1, a NaN the center 0). The input is not modified (unless it is
    ``out``).

    Parameters
    ----------
    x : ndarray of shape (n_rows, n_features)
        Rows.
    center, half_width : ndarray of shape (n_features,)
        The public box (see :func:`box_frame`).
    out : ndarray of shape (n_rows, n_features), default=None
        A float64 array to write the result into (it may be ``x`` itself:
        the map is entry by entry). A pass maps every chunk into one buffer,
        as fresh chunk-sized arrays cost page faults.

    Returns
    -------
    ndarray of shape (n_rows, n_features)
        ``out``, or a new array, with entries in [-1, 1].
    """
    x = np.asarray(x)
    z = np.empty(x.shape, dtype=np.float64) if out is None else out
    # A block of rows at a time, in place: the same float operations entry by
    # entry as whole-array ones, with the temporaries in cache (1e6 x 50 rows:
    # 0.33 -> 0.13 s).
    with np.errstate(all="ignore"):
        for start in range(0, x.shape[0], CHUNK_ROWS):
            block = z[start : start + CHUNK_ROWS]
            rows = np.asarray(x[start : start + CHUNK_ROWS], dtype=np.float64)
            np.subtract(rows, center, out=block)
            np.divide(block, half_width, out=block)
            np.clip(block, -1.0, 1.0, out=block)
            np.copyto(block, 0.0, where=np.isnan(block))
    return z


def boxed(X, center, half_width):
    """``X``'s rows in box units, mapped as each pass reads them (no copy).

    :func:`box_offsets` of every row, applied chunk by chunk inside the
    passes (:func:`~dpgauss.utils._sums.mapped_rows`; on a Dask array in the
    workers): no n-long boxed copy, and a memory-mapped or Dask input is never
    read whole. Privacy: each row's boxed offset is a function of that row
    and the public box alone, and every entry lies in [-1, 1] whatever the
    row (clipping after the offset; NaN to 0), so the sensitivities computed
    for box rows hold whatever the values; the map is entry by entry, so a
    chunk's boxed rows are bit for bit those of the whole boxed array, and
    every sum over them is formed on the canonical chunks
    (:mod:`dpgauss.utils._canonical`). The caller's rows are only read.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows.
    center, half_width : ndarray of shape (n_features,)
        The public box (see :func:`box_frame`).

    Returns
    -------
    MappedRows or dask array
        The boxed rows, for the chunked passes of :mod:`dpgauss.utils._sums`.
    """
    center = np.asarray(center, dtype=np.float64)
    half_width = np.asarray(half_width, dtype=np.float64)
    return mapped_rows(X, box_offsets, center, half_width)
