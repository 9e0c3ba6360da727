"""Fixtures shared by the release layer's tests."""

import numpy as np
import pytest


class _Recorder:
    """An AboveThreshold stand-in that records the queries and fires at one."""

    def __init__(self, fire_at=None):
        self.fire_at, self.asked = fire_at, None

    def first_above(self, values, rng):
        self.asked = np.asarray(values)
        if self.fire_at is None or self.fire_at >= values.size:
            return None
        return self.fire_at


@pytest.fixture
def recorder():
    """``recorder(fire_at=None)``: a stand-in AboveThreshold that records the
    queries it is asked and fires at query ``fire_at`` (never with None)."""
    return _Recorder
