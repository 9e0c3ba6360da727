"""Rows at a box's edge, for the tests of the bounds' edge warning.

Raw values in a box meant for standardised ones, ``bounds=(-1, 1)``: column 0
(100 +- 10) is clipped to the upper bound, column 2 (-50 +- 1) to the lower
one; columns 1 and 3 lie inside. At n = 5000 and d = 4 a released centre's
noise sd is at most about 0.003 box units at rho 0.5 (a tenth of it on the
centre), far below the rule's two-sd margin at
:data:`~dpgauss.releases._box.EDGE_SHARE`.
"""

import warnings

import numpy as np

__all__ = ["edge_messages", "edge_rows"]


def edge_rows(n=5000, seed=0):
    """``n`` rows with columns 0 and 2 far outside ``(-1, 1)``."""
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            rng.normal(100, 10, n),
            rng.normal(0, 0.3, n),
            rng.normal(-50, 1, n),
            rng.normal(0.2, 0.3, n),
        ]
    )


def edge_messages(estimator, X):
    """Fit ``estimator`` on ``X`` and return its edge warnings' messages."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X)
    return [str(w.message) for w in caught if "box's edge" in str(w.message)]
