"""PrivatePCA's per-coordinate (``axes``) release: its post-processing."""

import numpy as np

from dpgauss.decomposition._axes import release_axes
from dpgauss.releases._moments import SECOND_WEIGHT


class _Fixed:
    """A mechanism whose draw is given (post-processing is all that is tested)."""

    def __init__(self, noisy, variance):
        self.noisy, self._variance = np.asarray(noisy, float), variance

    def randomise(self, value, rng):
        return self.noisy

    def variance(self, size=None):
        return self._variance


class _Plan:
    def __init__(self, mech):
        self.mech = mech

    def calibrate(self, name, **case):
        return self.mech


def _axes(second, half=(1.0, 1.0, 1.0, 1.0)):
    # Released means 0 and second moments ``second`` (box units): the entry
    # is (s - 1/2) SECOND_WEIGHT.
    d = len(second)
    noisy = np.concatenate([np.zeros(d), (np.asarray(second) - 0.5) * SECOND_WEIGHT])
    half = np.asarray(half, float)
    box = (np.zeros(d), half)
    X = np.zeros((3, d))
    return release_axes(X, box, _Plan(_Fixed(noisy, 1e-4)), None)[1]


def test_axes_tied_at_zero_are_ordered_by_their_released_variances():
    # Columns 1 to 3 came out negative (the projection onto [0, 1] ties them
    # at 0); their released values still rank them: 3, then 1, then 2.
    spectrum = _axes([0.2, -0.05, -0.3, -0.01])
    order = np.argmax(np.abs(spectrum.vectors), axis=0)
    np.testing.assert_array_equal(order, [0, 3, 1, 2])
    assert np.all(np.diff(spectrum.values) <= 0.0)
