"""Linear algebra shared by every family: eigendecompositions and projections.

All of it is post-processing of released (already private) matrices. Each
function returns finite output for every finite input, including degenerate ones
(zero or negative caps, all-zero spectra, empty eigen-spaces), so that a fit that
has been charged always completes.
"""

import numpy as np
from scipy import linalg

__all__ = [
    "eigh_descending",
    "model_parts",
    "project_psd",
    "project_simplex",
    "project_simplex_capped",
    "project_trace",
]


def eigh_descending(matrix):
    """Eigenvalues (decreasing) and eigenvectors of the symmetrised ``matrix``.

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
        A (nearly) symmetric finite matrix.

    Returns
    -------
    values : ndarray of shape (d,)
        Eigenvalues, largest first.
    vectors : ndarray of shape (d, d)
        Orthonormal eigenvectors, one per column.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._linalg import eigh_descending
    >>> eigh_descending(np.diag([1.0, 3.0]))[0]
    array([3., 1.])
    """
    values, vectors = linalg.eigh(0.5 * (matrix + matrix.T))
    return values[::-1], vectors[:, ::-1]


def project_simplex(values, total):
    """Euclidean projection of ``values`` onto {u >= 0, sum u = total}.

    Parameters
    ----------
    values : ndarray of shape (d,)
        The point to project.
    total : float
        The sum; a total <= 0 (or NaN) projects onto {0}.

    Returns
    -------
    ndarray of shape (d,)
        ``max(values - theta, 0)`` with the theta (of either sign) that meets the
        total.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._linalg import project_simplex
    >>> project_simplex(np.array([3.0, 1.0, -1.0]), 6.0)
    array([4., 2., 0.])
    """
    values = np.asarray(values, dtype=np.float64)
    if not total > 0:  # also NaN
        return np.zeros_like(values)
    return _shift_to_total(values, total, lowest=-np.inf)


def project_simplex_capped(values, total):
    """Euclidean projection of ``values`` onto {u >= 0, sum u <= total}.

    Parameters
    ----------
    values : ndarray of shape (d,)
        The point to project.
    total : float
        The cap on the sum; a cap <= 0 (or NaN) projects onto {0}.

    Returns
    -------
    ndarray of shape (d,)
        The projection: ``max(values - theta, 0)`` with the smallest theta >= 0
        that meets the cap.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._linalg import project_simplex_capped
    >>> project_simplex_capped(np.array([3.0, 1.0, -1.0]), 2.0)
    array([2., 0., 0.])
    """
    values = np.asarray(values, dtype=np.float64)
    if not total > 0:  # also NaN
        return np.zeros_like(values)
    clipped = np.maximum(values, 0.0)
    if clipped.sum() <= total:
        return clipped
    return _shift_to_total(values, total, lowest=0.0)


def _shift_to_total(values, total, lowest):
    """``max(values - theta, 0)`` summing to ``total`` (> 0), with theta >= lowest."""
    ordered = np.sort(values)[::-1]
    cumulative = np.cumsum(ordered) - total
    index = np.arange(1, ordered.size + 1)
    # In exact arithmetic the first entry always qualifies (ordered[0] -
    # (ordered[0] - total) = total > 0); in floating point a huge entry can absorb
    # a tiny total, so fall back to it, and rescale whatever rounding leaves over.
    qualifying = np.flatnonzero(ordered - cumulative / index > 0)
    k = qualifying[-1] if qualifying.size else 0
    theta = max(cumulative[k] / (k + 1), lowest)
    projected = np.maximum(values - theta, 0.0)
    excess = projected.sum()
    if not excess <= total:
        projected = projected * (total / excess) if np.isfinite(excess) else 0 * values
    return projected


def project_trace(matrix, total):
    """Frobenius projection of a symmetric matrix onto {PSD, trace <= total}.

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
        A symmetric matrix.
    total : float
        The trace cap.

    Returns
    -------
    ndarray of shape (d, d)
        The projection, symmetric PSD.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._linalg import project_trace
    >>> project_trace(np.diag([2.0, -1.0]), 1.0)
    array([[1., 0.],
           [0., 0.]])
    """
    values, vectors = eigh_descending(matrix)
    return (vectors * project_simplex_capped(values, total)) @ vectors.T


def project_psd(matrix, upper):
    """Eigen-decomposition of ``matrix`` with its eigenvalues clipped to [0, upper].

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
        A (nearly) symmetric matrix.
    upper : float
        The largest eigenvalue kept.

    Returns
    -------
    eigenvalues : ndarray of shape (d,)
        The clipped eigenvalues, largest first.
    eigenvectors : ndarray of shape (d, d)
        Orthonormal eigenvectors, one per column.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._linalg import project_psd
    >>> project_psd(np.diag([5.0, -1.0]), 2.0)[0]
    array([2., 0.])
    """
    values, vectors = eigh_descending(np.asarray(matrix, dtype=np.float64))
    return np.clip(values, 0.0, upper), vectors


def model_parts(model):
    """``(values, vectors, scale)`` of a fitted Gaussian's stored model.

    The model is ``(values, vectors)``, N(location, V diag(values) V^T), or
    ``(values, vectors, scale)``, N(location, S V diag(values) V^T S) with
    ``S = diag(scale)`` a public change of units (a box's half-widths): the
    eigendecomposition stays in the units it was released in, so columns
    1e-3 and 1e6 apart keep their own precision. ``scale`` is all ones for a
    two-part model.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._linalg import model_parts
    >>> model_parts((np.ones(2), np.eye(2)))[2]
    array([1., 1.])
    """
    values, vectors, *rest = model
    scale = rest[0] if rest else np.ones(len(values))
    return values, vectors, scale
