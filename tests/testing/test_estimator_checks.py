"""The DP estimator checks catch the bugs they are written for."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from dpgauss.testing.estimator_checks import check_clones_draw_independent_noise


class _SharedNoise(BaseEstimator):
    """A broken release: its noise depends on ``random_state`` alone, so
    clones (which deep-copy it) draw the same noise whatever the budget."""

    def __init__(self, budget=None, random_state=None):
        self.budget = budget
        self.random_state = random_state

    def fit(self, X, y=None):
        rng = np.random.default_rng(self.random_state)
        self.stat_ = np.asarray(X).mean(axis=0) + rng.normal(size=X.shape[1])
        return self


def test_clones_sharing_noise_are_caught():
    X = np.zeros((10, 3))
    with pytest.raises(AssertionError, match="drew the same noise"):
        check_clones_draw_independent_noise(_SharedNoise(), X, "stat_")
