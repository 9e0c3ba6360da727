"""The Gaussian in a box in two stages: the fills first, then full or diagonal.

Not an estimator module; the staged plan of :mod:`dpgauss.releases._box_gaussian`
(zCDP only), in box units ``z = clip((x - c) / h, -1, 1)``:

1. ``box_first``: the joint release ``(m, w s)`` of per-coordinate means and
   centred squares (:mod:`dpgauss.releases._moments`, l2 sensitivity ``2
   sqrt(d) / n`` at ``w = 3/2``, proven there) at a share
   :data:`STAGE_SHARE` of the cost. Its variances say how much of its box
   each column fills.
2. ``box_second``, a :class:`~dpgauss.accounting._plan.Choice` at the rest of
   the cost, made from the first stage's released variances and public
   values only (post-processing of a private release): ``"augmented"``,
   GaussCov of the rows ``(z, sqrt(d))`` in the ball of radius ``sqrt(2 d)``
   (Frobenius sensitivity ``sqrt(2) 2 d / n``, the release's own proof), or
   ``"moments"``, the same joint release as the first stage again
   (``box_rest``). Both options cost the rest, so the charged one dominates
   and the plan costs the whole cost whichever is taken.

Under zCDP two Gaussian releases of the same vector at ``a rho`` and ``(1 - a)
rho``, averaged with weights inverse to their noise variances, have the noise
of one release at ``rho``: the moments option loses nothing against the
single diagonal release. The augmented option's last column is ``sqrt(d)``
times the means, so the means combine the same way (the moments' noise at
the whole cost, up to the exact samplers' lattice); its diagonal combines with
the first stage's squares, and its off-diagonal entries give the
correlations.

**The choice.** A covariance estimate is judged column by column in each
column's own units (mixed units weigh alike), where a column's noise counts
relative to its variance. Predicted from the released variances ``v``: the
moments option's error is ``sum_i min(t^2 / v_i^2, 1)`` on the diagonal
plus the correlations it leaves out (:data:`~dpgauss.releases._diagonal.
REFERENCE_CORRELATION` for each pair); the augmented option pays more noise
on the diagonal and, per pair, ``min(s^2 / (v_i v_j), r^2)`` (an entry
whose noise is above the reference correlation is dropped, below). The
augmented option is taken where it is predicted smaller. Columns filling a
hundredth of their box (Student t rows in a codebook box, near-constant
pixels) then keep the diagonal, which loses nothing.

**Post-processing of the augmented option.** Off-diagonal entries are kept
only where the released value clears the noise's tail over the ``d (d - 1) /
2`` pairs (:func:`~dpgauss.releases._box_gaussian.significance`) and both
variances are kept; independent columns then come out diagonal instead of
carrying a full matrix of noise. The matrix is projected onto the positive
semi-definite cone.
"""

import math

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Choice, Release
from dpgauss.releases._box import box_offsets
from dpgauss.releases._covariance import covariance_entries
from dpgauss.releases._diagonal import REFERENCE_CORRELATION, cap_box_spectrum
from dpgauss.releases._faint import moments_variances, significance
from dpgauss.releases._moments import box_moments, moments_mechanism, weighted_moments
from dpgauss.utils._linalg import eigh_descending
from dpgauss.utils._sums import clipped_sums, n_partial_sums

__all__ = [
    "STAGED",
    "STAGE_SHARE",
    "inverse_variance_mean",
    "relative_noise",
    "release_staged",
    "staged_entries",
    "staged_errors",
]

#: The candidate plan's name in :mod:`dpgauss.releases._box_gaussian`.
STAGED = "staged"

#: The share of the cost of the first stage. Under zCDP the moments option
#: recovers the whole cost for the diagonal whatever the share; the
#: augmented option's off-diagonal noise grows by ``1 / sqrt(1 - a)`` (15%
#: at a quarter) while the first stage's variances must tell a column that
#: fills a tenth of its box from one that fills a hundredth.
STAGE_SHARE = 0.25


def _moments_release(name, cost, n, d, weight):
    def make(cost, *, n_partials=None):
        return moments_mechanism(cost, n, d, n_partials, weight=weight)

    return Release(name, cost, kind_of(cost), make, size=2 * d)


def staged_entries(total, n, d, weight, radius):
    """The staged plan (module docstring): ``box_first`` at
    :data:`STAGE_SHARE` of ``total``, then the choice ``box_second`` between
    the augmented GaussCov (``second_moment``, rows ``(z, sqrt(d))`` clipped
    at ``radius``) and ``box_rest`` at the rest. Both options cost the rest."""
    first, rest = split_cost(total, [STAGE_SHARE, 1.0 - STAGE_SHARE])
    augmented = covariance_entries("gauss", rest, d + 1, n, radius)
    options = {
        "augmented": tuple(augmented),
        "moments": (_moments_release("box_rest", rest, n, d, weight),),
    }
    return [
        _moments_release("box_first", first, n, d, weight),
        Choice("box_second", options),
    ]


def inverse_variance_mean(a, var_a, b, var_b):
    """Inverse-variance average of two independent estimates, and its variance."""
    weight = var_b / (var_a + var_b)
    return weight * a + (1.0 - weight) * b, var_a * var_b / (var_a + var_b)


def staged_errors(mechanisms, d, weight):
    """The per-entry noise variances of the staged plan (public): the means'
    after combining, the diagonal's for the moments option and for the
    augmented one, and one off-diagonal entry's of the augmented one."""
    first = mechanisms["box_first"].variance(2 * d)
    rest = mechanisms["box_rest"].variance(2 * d)
    diag, off = mechanisms["second_moment"].entry_variances(d + 1)
    mean = inverse_variance_mean(0.0, first, 0.0, off / d)[1]
    moments = inverse_variance_mean(0.0, first, 0.0, rest)[1] / weight**2
    augmented = inverse_variance_mean(0.0, first / weight**2, 0.0, diag)[1]
    return mean, moments, augmented, off


def relative_noise(noise_var, v, cap):
    """``sum min(noise_var / v^2, cap)`` over the entries (v 0: the cap)."""
    v = np.asarray(v, dtype=np.float64)
    safe = np.where(v > 0.0, v, 1.0)
    return np.where(v > 0.0, np.minimum(noise_var / (safe * safe), cap), cap)


def choose_augmented(variances, diag_moments, diag_augmented, off):
    """Whether the augmented option is predicted the smaller error in each
    column's own units, from the first stage's variances (post-processing)
    and public noise variances (module docstring)."""
    d = variances.shape[0]
    r2 = REFERENCE_CORRELATION**2
    moments = float(np.sum(relative_noise(diag_moments, variances, 1.0)))
    moments += r2 * d * (d - 1.0)
    augmented = float(np.sum(relative_noise(diag_augmented, variances, 1.0)))
    pairs = np.outer(variances, variances)
    mask = ~np.eye(d, dtype=bool)
    augmented += float(np.sum(relative_noise(off, np.sqrt(pairs[mask]), r2)))
    return augmented < moments


def _noisy_moments(X, center, half, plan, name, weight, rng):
    first, squares = box_moments(X, center, half)
    mech = plan.calibrate(name, n_partials=n_partial_sums(X))
    noisy = mech.randomise(weighted_moments(first, squares, weight), rng)
    noisy = np.nan_to_num(np.asarray(noisy, dtype=np.float64), nan=0.0)
    return np.clip(noisy, -4.0, 4.0), float(mech.variance(2 * X.shape[1]))


def release_staged(X, center, half, plan, rng, weight, radius):
    """The staged plan's releases and their post-processing.

    ``weight`` is the moments release's weight on the centred squares,
    ``radius`` the augmented release's clipping radius. The variances are
    kept by :func:`~dpgauss.releases._faint.moments_variances`, the
    off-diagonal entries above :func:`~dpgauss.releases._faint.significance`
    sds of their noise. Returns the means, the covariance's spectrum
    (values, vectors) in box units and whether the spectrum is diagonal.
    """
    n, d = X.shape
    first, var1 = _noisy_moments(X, center, half, plan, "box_first", weight, rng)
    # Everything from here to the second release is post-processing of the
    # first: the choice reads its variances and public noise levels only.
    mean1 = np.clip(first[:d], -1.0, 1.0)
    second1 = first[d:] / weight + 0.5
    variances = moments_variances(second1, mean1, var1, var1 / weight**2)
    if not choose_augmented(variances, *_stage_noise(plan, n, d, weight)):
        plan.choose("box_second", "moments")
        rest, var2 = _noisy_moments(X, center, half, plan, "box_rest", weight, rng)
        noisy, var = inverse_variance_mean(first, var1, rest, var2)
        mean = np.clip(noisy[:d], -1.0, 1.0)
        second = noisy[d:] / weight + 0.5
        variances = moments_variances(second, mean, var, var / weight**2)
        values, vectors = cap_box_spectrum(variances, np.eye(d))
        return mean, values, vectors, True
    plan.choose("box_second", "augmented")
    Z = box_offsets(X, center, half)
    c = math.sqrt(d)
    rows = np.hstack([Z, np.full((n, 1), c)])
    _, S = clipped_sums(rows, np.zeros(d + 1), radius)
    case = {"rows": n, "radius": radius, "n_partials": n_partial_sums(rows)}
    mech = plan.calibrate("second_moment", **case)
    released = np.asarray(mech.randomise(S / n, rng), dtype=np.float64)
    # Post-processing of both releases below.
    released = np.clip(np.nan_to_num(released, nan=0.0), -4.0 * d, 4.0 * d)
    released = 0.5 * (released + released.T)
    diag, off = mech.entry_variances(d + 1)
    mean, var_mean = inverse_variance_mean(
        first[:d], var1, released[:d, d] / c, off / d
    )
    mean = np.clip(mean, -1.0, 1.0)
    second, var_second = inverse_variance_mean(
        second1, var1 / weight**2, np.diag(released)[:d], diag
    )
    variances = moments_variances(second, mean, var_mean, var_second)
    C = released[:d, :d] - np.outer(mean, mean)
    keep = np.abs(C) > significance(max(d * (d - 1) // 2, 1), False) * math.sqrt(off)
    keep &= np.outer(variances > 0.0, variances > 0.0)
    bound = np.sqrt(np.outer(variances, variances))
    C = np.where(keep, np.clip(C, -bound, bound), 0.0)
    C[np.diag_indices(d)] = variances
    values, vectors = eigh_descending(0.5 * (C + C.T))
    values, vectors = cap_box_spectrum(np.clip(values, 0.0, None), vectors)
    return mean, values, vectors, False


def _stage_noise(plan, n, d, weight):
    """The public noise variances the choice compares (:func:`staged_errors`
    of the plan's mechanisms at their worst public case)."""
    mechanisms = {r.name: r.build() for r in plan.releases()}
    _, moments, augmented, off = staged_errors(mechanisms, d, weight)
    return moments, augmented, off
