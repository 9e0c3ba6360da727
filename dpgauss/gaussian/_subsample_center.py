"""PrivateGaussianEstimator's ``initial_center="subsample"`` step.

Not an estimator module. The rows are split at random into k groups, and the
winsorized aggregate of :class:`~dpgauss.ensemble.SubsampleAggregate` (a
private median, a private radius R and a clipped mean;
:mod:`dpgauss.releases._winsorized`, whose proofs hold for any k candidates)
of the groups' means mapped into the learned frame is the first mean step's
center. k is the fewest groups that keep its searches on track (public: the
cost and d), so the groups are as large as possible and the radius small.
"""

import math

import numpy as np

from dpgauss.releases._coinpress import frame_inverse, tail_radius
from dpgauss.releases._coinpress_mean import MAX_MEAN_RADIUS, MEAN_BETA, frame_point
from dpgauss.releases._range import Stages
from dpgauss.releases._winsorized import (
    RADIUS_FACTOR,
    winsorized_entries,
    winsorized_mean,
    winsorized_min_groups,
)
from dpgauss.utils._sums import group_means

__all__ = ["center_factory", "center_fewest", "center_groups", "subsample_start"]

#: The extra start radius of ``initial_center="subsample"`` beyond the
#: clipping radius R: the median c is within about 2 R / RADIUS_FACTOR of the
#: mean (half the group means lie within R / RADIUS_FACTOR of c, half within
#: about as much of the mean).
_SUBSAMPLE_SLACK = 2.0 / RADIUS_FACTOR


def subsample_start(X, frame, plan, rng, k):
    """The released center (in X's coordinates) and the first mean step's
    radius in ``frame``, from the winsorized aggregate of the group means
    mapped by the frame (``subsample_center``, ``k`` groups).

    The groups are a random partition drawn from the fit's generator,
    independently of the data, into k groups of ``n // k`` rows (the
    remainder left out): replacing a row changes one group's mean, hence
    one candidate, and the aggregate is private for any candidates. The
    radius ``(1 + 2 / RADIUS_FACTOR) R + ||Z||`` (``||Z||`` the noise's
    tail bound from its public scale) is a function of released values:
    the released value is within R plus the noise of the median, which
    is within about ``2 R / RADIUS_FACTOR`` of ``A mu``.
    """
    n, d = X.shape
    size = n // k
    labels = np.full(n, -1, dtype=np.intp)
    labels[rng.permutation(n)[: k * size]] = np.repeat(np.arange(k), size)
    with np.errstate(all="ignore"):  # an overflow is a failed candidate
        Y = group_means(X, labels, k) @ frame.T
    stages = plan.calibrate("subsample_center", groups=k)
    with np.errstate(all="ignore"):
        value, radius, mech, _ = winsorized_mean(Y, stages.plan, rng)
    stages.finish()
    tail = math.sqrt(mech.variance(d)) * tail_radius(d, MEAN_BETA)
    start = (1.0 + _SUBSAMPLE_SLACK) * radius + tail
    center = frame_point(*frame_inverse(frame), value)  # post-processing
    return center, min(start, MAX_MEAN_RADIUS)


def center_fewest(cost, d):
    """The fewest groups that keep the winsorized aggregate's searches at
    ``cost`` on track (public: the cost and d;
    :func:`~dpgauss.releases._winsorized.winsorized_min_groups`)."""
    return winsorized_min_groups(Stages(cost, winsorized_entries(cost)).plan, d)


def center_groups(cost, n, d):
    """k: the groups of ``subsample_center`` at ``cost``, the fewest that keep
    its searches on track (n is at least k, or the fit falls back to the
    range step). The fewest groups are the largest, hence the tightest group
    means."""
    return max(1, min(center_fewest(cost, d), n))


def center_factory(n, d):
    """The factory of ``subsample_center``: ``make(cost, groups=k)`` is the
    nested release (:class:`~dpgauss.releases._range.Stages`) of the
    winsorized aggregate of k group means in d dimensions
    (:func:`~dpgauss.releases._winsorized.winsorized_entries`, whose mean is
    checked at both ends of the radii its search may release); k is
    :func:`center_groups` by default, the one the fit uses."""

    def make(cost, *, groups=None):
        k = center_groups(cost, n, d) if groups is None else groups
        return Stages(cost, winsorized_entries(cost, k=k, p=d))

    return make
