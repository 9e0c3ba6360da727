"""PCA's per-coordinate release with a box, and when PCA takes it.

Not an estimator module. With a public box PCA releases either the full
covariance of the box rows or, where that is not predicted within
:data:`FULL_MARGIN` (:data:`PURE_FULL_MARGIN`) of the diagonal release,
the ``axes``: one release of the joint ``(m, 2 s)`` of
the box rows' means and centred squares (:mod:`dpgauss.releases._moments`,
which holds the sensitivity proof: l2 ``2.2683 sqrt(d) / n``, l1 ``25 d / (8
n)``), whose released variances order the coordinate axes. Decisions read n,
d and the cost only, before the spend.
"""

import math

import numpy as np

from dpgauss.accounting import PureDP
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
    "PURE_FULL_MARGIN",
    "axes_entries",
    "axes_noise",
    "full_wins_for_components",
    "is_axes",
    "release_axes",
]

#: With a box, PCA keeps the full covariance release where its predicted
#: Frobenius error on the reference data is at most this multiple of the
#: diagonal release's (and the full release is not predicted to lose to the
#: zero matrix): :data:`PURE_FULL_MARGIN` under pure epsilon, this under
#: zCDP (the covariance estimators take it only below 1). The components
#: need less than the covariance does: the full release's off-diagonal
#: entries are zeroed when they are consistent with its noise
#: (:func:`~dpgauss.decomposition._components.threshold_spectrum`), and
#: ``"tail"`` clips at a private threshold where rows fill little of their
#: box, which the reference data (filling it) cannot show. Under zCDP,
#: measured on bench_real's tables with each plan forced (10 seeds, rho
#: 0.125 and 0.5), the full release between 0.77 and 1.2 won on some tables
#: (macrodata, modechoice, n = 150-203) and lost 7-13% of the median on
#: others (star98 n = 303, the mixed scales n = 150, rho 0.5), so the margin
#: stays below the tie.
FULL_MARGIN = 0.75

#: :data:`FULL_MARGIN` under pure epsilon. Measured on bench_real's tables
#: with each plan forced (10 seeds, epsilon 0.5, 1 and 2): at every
#: predicted ratio up to 1.18 the full release had the smaller median missed
#: variance and no worse a worst seed (Student t, n = 2000, d = 5, epsilon
#: 1, ratio 0.86: 0.0005 against 0.006 for the axes, worst 0.012 against
#: 0.27; the three-component mixture, n = 1125, epsilon 1, ratio 1.18: 0.007
#: against 0.21; fair, n = 4775, epsilon 0.5, ratio 1.14: 0.085 against
#: 0.27); from 1.21 it tied or lost on some tables (randhie n = 1261,
#: epsilon 2, ratio 1.21; the far mean, n = 2000, epsilon 0.5, ratio 1.66:
#: 0.18 against 0.024).
PURE_FULL_MARGIN = 1.2


def full_wins_for_components(total, n, d, centered):
    """Whether the full release's predicted Frobenius error (GaussCov at the
    box's radius, on the reference data of
    :func:`~dpgauss.releases._diagonal.reference_norm`) is at most
    :data:`FULL_MARGIN` (:data:`PURE_FULL_MARGIN` for a pure ``total``)
    times the diagonal release's and not predicted to lose to the zero
    matrix. Public values only."""
    entries = covariance_plan_entries(total, d, "gauss", centered, n, math.sqrt(d))
    full = full_prediction(entry_mechanisms(total, entries), "gauss", d)
    built = entry_mechanisms(total, diagonal_entries(total, d, centered, n))
    diagonal = diagonal_prediction(built["diagonal"], d, centered)
    if full is None or full.loses:
        return False
    margin = PURE_FULL_MARGIN if isinstance(total, PureDP) else FULL_MARGIN
    return full.error <= margin * diagonal.error


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
    half-widths): the released mean (box units, in [-1, 1]), the spectrum,
    axes by decreasing released variance in data units, and the public
    noise sd of one released mean.

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
    # By decreasing variance; where the projection ties them (at 0 or 1,
    # as for faint columns whose released variance the noise made
    # negative), by the released estimate before it, which still ranks them
    # (an index order would favour the first columns whatever the data).
    # (The axes come back from the map as columns of ``vectors``, in its
    # order: each column's released value is read through it.)
    raw = np.clip(noisy[d:] / SECOND_WEIGHT + 0.5 - mean * mean, -1e6, 1e6)
    raw = raw * half * half
    order = np.lexsort((-(vectors * vectors).T @ raw, -values))
    spectrum = Spectrum(
        values[order],
        vectors[:, order],
        math.sqrt(noise) * float(np.min(half * half)),
        float(np.sum(half * half)),
        "diagonal",
    )
    return mean, spectrum, math.sqrt(float(mech.variance(2 * d)))
