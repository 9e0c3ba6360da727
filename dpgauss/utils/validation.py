"""Validation of public bounds.

These checks run inside ``fit`` unconditionally: scikit-learn's parameter
validation can be switched off (``skip_parameter_validation=True``), so no
privacy invariant may rest on ``_parameter_constraints`` alone.
"""

import math
import numbers
import sys

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
    check_known_shape(X, owner)
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
    check_cluster_numpy(owner)
    if X.dtype != np.float64:  # cast in the workers, warning-free
        X = X.map_blocks(_as_float64, dtype=np.float64)
    if not bool(np.isfinite(X).all().compute()):
        raise ValueError("Input X contains NaN or infinity.")
    return X


def check_known_shape(X, owner):
    """Refuse a Dask array whose shape is not known (before any spend).

    A boolean mask or a filter leaves the blocks' row counts unknown (NaN).
    The number of rows is public in dpgauss (every plan reads it), so the
    caller makes it known, knowingly, with ``X.compute_chunk_sizes()``.
    """
    shape = getattr(X, "shape", ())
    if any(isinstance(size, float) and math.isnan(size) for size in shape):
        raise ValueError(
            f"{owner}: the dask array's shape {shape} has unknown sizes (its "
            "blocks' row counts are not known, as after boolean indexing); call "
            "X.compute_chunk_sizes() first. The number of rows is treated as "
            "public."
        )


def check_cluster_numpy(owner):
    """Refuse, before any spend, a Dask cluster whose workers run another numpy.

    The releases on pair differences draw each group's permutation of the
    public pairing in the workers, from a seed the client sends
    (:mod:`dpgauss.releases._pairs`); ``Generator.permutation`` is not
    promised stable across numpy versions. On a cluster mixing versions, a
    group recomputed by another worker (after a worker was lost) could then
    be permuted differently within one pass, and a row could land in two
    pairs: the sensitivity of those releases would double. Bit-identical
    releases need the same numpy too. Checked only when ``distributed`` is
    already imported and a client is active (a few milliseconds).
    """
    client = _active_client()
    if client is None:  # the local schedulers share this process's numpy
        return
    versions = client.get_versions()
    mine = np.__version__
    others = {
        str(info.get("packages", {}).get("numpy"))
        for info in versions.get("workers", {}).values()
    }
    if others - {mine}:
        raise ValueError(
            f"{owner}: the Dask workers run numpy {sorted(others)} and this "
            f"client numpy {mine}; dpgauss draws the public pairing's "
            "permutations in the workers and needs one numpy version across the "
            "cluster (for its privacy guarantee and for bit-identical releases)."
        )


def _active_client():
    """The active ``distributed`` client, or None (never imports distributed)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        return distributed.get_client()
    except ValueError:  # no client
        return None


def _as_float64(block):
    """A block as float64 (out-of-range values become inf), with no warning:
    it runs in a Dask worker, outside the caller's errstate."""
    with np.errstate(all="ignore"):
        return np.asarray(block, dtype=np.float64)
