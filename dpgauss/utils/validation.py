"""Validation of public bounds.

These checks run inside ``fit`` unconditionally: scikit-learn's parameter
validation can be switched off (``skip_parameter_validation=True``), so no
privacy invariant may rest on ``_parameter_constraints`` alone.
"""

import math
import numbers

import numpy as np

__all__ = ["check_data_norm"]


def _positive_finite(name, value, owner):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {value!r}.")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a finite number > 0, got {value!r}.")
    return value


def check_data_norm(data_norm, *, owner="estimator"):
    """Check the public row-norm bound.

    Parameters
    ----------
    data_norm : float or None
        The public l2 radius rows are clipped to.
    owner : str, default="estimator"
        Name used in error messages.

    Returns
    -------
    float
        The bound.

    Raises
    ------
    ValueError
        If it is missing, not positive or not finite.
    """
    if data_norm is None:
        raise ValueError(
            f"{owner}: data_norm is required: a public bound on the l2 norm of a row "
            "(rows are clipped to it). dpgauss never reads it off the data, which "
            "would leak privacy; choose it from domain knowledge."
        )
    return _positive_finite("data_norm", data_norm, owner)


def validate_dask_rows(X, owner):
    """Check a Dask array of rows lazily and return it as float64 blocks.

    As for numpy input: 2-D, real numbers, at least 2 rows and 1 column (of
    known sizes), every value finite.
    The rows are read as float64 (lazily, in the workers), so a wider dtype's
    value beyond float64's range becomes inf and is refused here, before the
    spend, instead of overflowing in a worker after it; every later pass then
    casts nothing.

    Parameters
    ----------
    X : dask array
        The rows.
    owner : str
        The estimator, for the messages.

    Returns
    -------
    dask array
        ``X`` with float64 blocks.
    """
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array, got a {X.ndim}D dask array.")
    if any(math.isnan(size) for size in X.shape):
        # The passes cut the rows into canonical chunks from the blocks' sizes
        # (public metadata); unknown sizes (after a boolean mask, say) would
        # fail there, or before the spend as an opaque NaN conversion.
        raise ValueError(
            f"{owner}: the dask array's chunk sizes are unknown (shape "
            f"{X.shape}); call X.compute_chunk_sizes() first."
        )
    if X.shape[1] < 1:
        # As scikit-learn refuses numpy input: several plans would otherwise
        # be built for d = 0 and the fit would fail after its spend.
        raise ValueError(
            f"Found array with 0 feature(s) (shape={X.shape}) while a minimum "
            f"of 1 is required by {owner}."
        )
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(
        X.dtype, np.complexfloating
    ):
        raise ValueError(f"{owner}: a dask array of real numbers is required.")
    if X.shape[0] < 2:
        raise ValueError(
            f"Found array with {X.shape[0]} sample(s) while a minimum of 2 is "
            f"required by {owner}."
        )
    if X.dtype != np.float64:  # cast in the workers, warning-free
        X = X.map_blocks(_as_float64, dtype=np.float64)
    if not bool(np.isfinite(X).all().compute()):
        raise ValueError("Input X contains NaN or infinity.")
    return X


def _as_float64(block):
    """A block as float64 (out-of-range values become inf), with no warning:
    it runs in a Dask worker, outside the caller's errstate."""
    with np.errstate(all="ignore"):
        return np.asarray(block, dtype=np.float64)
