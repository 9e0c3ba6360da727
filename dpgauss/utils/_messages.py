"""Pieces of the library's messages shared across families."""

import numpy as np

__all__ = ["shown_indices"]


def shown_indices(selected, label=str):
    """The features ``selected`` (a boolean mask, or indices) as text for a
    message: at most ten, each as ``label(j)``, then how many more ("" for
    none).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.utils._messages import shown_indices
    >>> shown_indices(np.array([True, False, True]))
    '0, 2'
    >>> shown_indices(np.arange(12))
    '0, 1, 2, 3, 4, 5, 6, 7, 8, 9 (and 2 more)'
    >>> shown_indices([1], lambda j: f"{j} (upper)")
    '1 (upper)'
    """
    selected = np.asarray(selected)
    index = np.flatnonzero(selected) if selected.dtype == bool else selected
    shown = ", ".join(label(int(j)) for j in index[:10])
    return shown + (f" (and {index.size - 10} more)" if index.size > 10 else "")
