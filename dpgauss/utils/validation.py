"""Validation of public bounds.

These checks run inside ``fit`` unconditionally: scikit-learn's parameter
validation can be switched off (``skip_parameter_validation=True``), so no
privacy invariant may rest on ``_parameter_constraints`` alone.
"""

import math
import numbers

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
