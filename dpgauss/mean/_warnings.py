"""The unbounded mean's warning about columns its noise swamps.

Without bounds, :class:`~dpgauss.mean.PrivateMean`'s per-coordinate plan
(``method_ == "plan"``) weighs each column's noise by its released scale plus
a floor shared by all columns, so a column far narrower than the others (mixed
units) gets noise of many of its own standard deviations. This warns, from
released values and public noise levels only, naming those columns.
"""

import math
import warnings

import numpy as np

from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._prediction import ASTRAY
from dpgauss.utils._leak import caller_stacklevel
from dpgauss.utils._messages import shown_indices

__all__ = ["warn_swamped_columns"]


def warn_swamped_columns(owner, variance, spectrum, n):
    """Warn for the columns whose mean's noise exceeds :data:`ASTRAY` times
    their sampling error.

    In the plan's diagonal frame the mean's noise has ``variance`` per
    coordinate and column j's rows have variance about ``2 spectrum_j`` (the
    frame maps the pairs' released scale, the pairs' covariance being half
    the rows'), so the noise is ``sqrt(variance / (2 spectrum_j))`` of the
    column's own sd, against the sampling error ``1 / sqrt(n)``. Returns the
    columns named. Post-processing of released values.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dpgauss.mean._warnings import warn_swamped_columns
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_swamped_columns("M", 1e-4, np.array([1.0, 1e-6]), 10_000).tolist()
    [1]
    """
    spectrum = np.asarray(spectrum, dtype=np.float64)
    with np.errstate(all="ignore"):
        relative = np.sqrt(variance / (2.0 * spectrum)) * math.sqrt(n)
    swamped = np.flatnonzero(~(relative <= ASTRAY))
    if swamped.size:
        warnings.warn(
            f"{owner}: the released mean of feature(s) {shown_indices(swamped)} "
            f"carries noise beyond {ASTRAY:g} times their sampling error (up to "
            f"{float(np.nanmax(relative)):.3g} times): without bounds the noise "
            "is shared across columns, and these are far narrower than the "
            "others (columns in very different units). Give bounds=(lower, "
            "upper) (a codebook, or PrivateBounds), which size each column's "
            "noise by its own range; more rows or a larger budget also help.",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )
    return swamped
