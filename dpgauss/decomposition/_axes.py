"""PCA's per-coordinate release with a box, and when PCA takes it.

Not an estimator module. With a public box PCA releases either the full
covariance of the box rows or, where that is not predicted to win by
:data:`FULL_MARGIN`, the ``axes``: one release of the joint ``(m, 2 s)`` of
the box rows' means and centred squares (:mod:`dpgauss.releases._moments`,
which holds the sensitivity proof: l2 ``2.2683 sqrt(d) / n``, l1 ``25 d / (8
n)``), whose released variances order the coordinate axes. Decisions read n,
d and the cost only, before the spend.
"""

import math

import numpy as np

from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.releases._center import Spectrum, covariance_plan_entries
from dpgauss.releases._diagonal import (
    PRIOR_MEAN,
    PRIOR_VARIANCE,
    box_rows,
    diagonal_entries,
    diagonal_prediction,
    entry_mechanisms,
    full_prediction,
    to_data_units,
)
from dpgauss.releases._moments import (
    SECOND_WEIGHT,
    box_moments,
    moments_mechanism,
    weighted_moments,
)
from dpgauss.utils._sums import n_partial_sums

__all__ = [
    "FULL_MARGIN",
    "axes_entries",
    "axes_noise",
    "full_wins_for_components",
    "is_axes",
    "release_axes",
]

#: With a box, PCA keeps the full covariance release only where its predicted
#: Frobenius error on the reference data is at most this fraction of the
#: diagonal release's (the covariance estimators' choice takes it at any
#: fraction below 1). The components need less than the covariance does (the
#: axes of the largest private variances lose only the off-diagonal
#: structure), and near the tie the full release lost: on bench_real's
#: far-mean and Student-t tables (n = 2000, d = 5, epsilon = 1, predicted
#: ratio 0.86) it captured 1.5 and 0.58 times the baseline's missed variance
#: where the diagonal release captured 0.63 and 0.23; at ratio 0.66 (fair,
#: n = 4775, d = 8, epsilon = 1) and below the full release won by 10x or more.
FULL_MARGIN = 0.75


def full_wins_for_components(total, n, d, centered):
    """Whether the full release's predicted Frobenius error (GaussCov at the
    box's radius, on the reference data of
    :func:`~dpgauss.releases._diagonal.reference_norm`) is at most
    :data:`FULL_MARGIN` times the diagonal release's. Public values only."""
    entries = covariance_plan_entries(total, d, "gauss", centered, n, math.sqrt(d))
    full = full_prediction(entry_mechanisms(total, entries), "gauss", d)
    built = entry_mechanisms(total, diagonal_entries(total, d, centered, n))
    diagonal = diagonal_prediction(built["diagonal"], d, centered)
    return full is not None and full.error <= FULL_MARGIN * diagonal.error


def axes_entries(total, n, d):
    """The plan of the per-coordinate release PCA takes with a box when the
    full release is not predicted to win: ``axes``, the joint mean and second
    moment ``(m, 2 s)`` of the box rows (:mod:`dpgauss.releases._moments`: l2
    sensitivity ``2.2683 sqrt(d) / n``, l1 ``25 d / (8 n)``), at the whole
    cost."""

    def make(cost, *, n_partials=None):
        return moments_mechanism(cost, n, d, n_partials)

    return [Release("axes", total, kind_of(total), make, size=2 * d)]


def axes_noise(mechanism, d):
    """Variance of one released variance's noise, box units (public): the
    second moment's (the entry's over ``SECOND_WEIGHT^2``) plus ``2 V^2``
    from the squared mean's (``V`` the mean entry's), at a mean of 0."""
    var = float(mechanism.variance(2 * d))
    return var / SECOND_WEIGHT**2 + 2.0 * var * var


def is_axes(plan):
    """Whether ``plan`` is the ``axes`` release's."""
    return plan is not None and any(r.name == "axes" for r in plan.releases())


def release_axes(X, box, plan, rng):
    """Release the ``axes`` of rows ``X`` in the public ``box`` (center,
    half-widths): the released mean (data units) and the spectrum, axes by
    decreasing released variance in data units.

    The noisy ``(m, 2 s)`` is the only release; the variances ``s + 1/2 -
    m^2`` projected onto [0, 1] (where every variance of a box coordinate
    lies), their shrinkage towards the public prior of
    :mod:`dpgauss.releases._diagonal` by the public noise (as the diagonal
    release does; the order is unchanged), the map back and the order are
    post-processing.
    """
    d = X.shape[1]
    center, half = box
    Z = box_rows(X, (center, half))
    first, squares = box_moments(Z, np.zeros(d), np.ones(d))
    mech = plan.calibrate("axes", n_partials=n_partial_sums(Z))
    noisy = mech.randomise(weighted_moments(first, squares, SECOND_WEIGHT), rng)
    # Everything below is post-processing of the release.
    noisy = np.nan_to_num(np.asarray(noisy, dtype=np.float64), nan=0.0)
    mean = np.clip(noisy[:d], -1.0, 1.0)
    second = np.clip(noisy[d:] / SECOND_WEIGHT + 0.5, 0.0, 1.0)
    # Projected onto [0, 1], where every variance of a box coordinate
    # lies, then shrunk towards the prior by the public noise as the
    # diagonal release does (the order of the axes is unchanged).
    noise = axes_noise(mech, d)
    variances = np.clip(second - mean * mean, 0.0, 1.0)
    weight = PRIOR_VARIANCE / (PRIOR_VARIANCE + noise)
    variances = np.clip(PRIOR_MEAN + weight * (variances - PRIOR_MEAN), 0.0, 1.0)
    values, vectors = to_data_units(variances, np.eye(d), half)
    order = np.argsort(-values, kind="stable")
    spectrum = Spectrum(
        values[order],
        vectors[:, order],
        math.sqrt(noise) * float(np.min(half * half)),
        float(np.sum(half * half)),
        "diagonal",
    )
    return center + half * mean, spectrum
