"""A wrapped estimator that breaks SubsampleAggregate's contract on purpose.

:class:`RemembersRows` keeps every row it was fitted on in a class attribute
and returns the mean of all of them: without isolation a later group's
candidate reads earlier groups' rows (the canary of
``SubsampleAggregate(isolation="process")``'s tests and audit).
"""

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["RemembersRows"]


class RemembersRows(BaseEstimator):
    """State shared across clones: ``seen`` (reset it between tests)."""

    seen = []

    def fit(self, X, y=None):
        type(self).seen.extend(np.asarray(X)[:, 0].tolist())
        self.location_ = np.array([np.mean(type(self).seen)])
        return self
