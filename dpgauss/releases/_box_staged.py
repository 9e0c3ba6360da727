"""The Gaussian in a box in two stages: the fills first, then full or diagonal.

Not an estimator module; the staged plan of :mod:`dpgauss.releases._box_gaussian`
(zCDP only), in box units ``z = clip((x - c) / h, -1, 1)``:

1. ``box_first``: the joint release ``(m, w s)`` of per-coordinate means and
   centred squares (:mod:`dpgauss.releases._moments`, l2 sensitivity ``2
   sqrt(d) / n`` at ``w = 3/2``, proven there) at a share
   :data:`STAGE_SHARE` of the cost. Its variances say how much of its box
   each column fills.
2. ``box_second``, a :class:`~dpgauss.accounting._plan.Choice` at the rest of
   the cost, made from the first stage's released values and public ones
   only (post-processing of a private release): ``"augmented"`` or
   ``"moments"``, the same joint release as the first stage again
   (``box_rest``). Both options cost the rest, so the charged one dominates
   and the plan costs the whole cost whichever is taken.

**The augmented option.** GaussCov (``second_moment``) of the rows ``(y,
tau)``: ``y`` is the box row less the first stage's means ``m1``, scaled
into the ball of radius ``tau`` (:func:`clipping_tau`), and ``tau`` is a
public constant appended to every row. ``m1`` and ``tau`` are functions of
the first stage's release (post-processing), so each row is a function of
its own row and released or public values, and the rows lie in the ball of
radius ``sqrt(2) tau`` (rounded up, :func:`augmented_radius`; the sums clip
there again, a factor within a few rounding steps of 1 for the rows at
``tau``, and that clip is the one the proof rests on): the release is the
second moment of rows clipped to a public ball, Frobenius sensitivity
``sqrt(2) R^2 / n`` at ``R = sqrt(2) tau``, GaussCov's own proof at that
radius. Its mechanism is checked before the spend at every radius of the
public grid of ``tau`` (:func:`tau_grid`), where the fit may build it.
``tau^2`` is :data:`TRACE_MULTIPLE` times the first stage's trace plus
:data:`TRACE_SDS` of its noise sds, rounded up to the grid: a radius set by
the rows' own spread instead of the box's, which GaussCov's noise scales
with squared (columns filling a tenth of their box: 5 to 11 times less
noise variance than the uncentred rows ``(z, sqrt(d))`` at radius ``sqrt(2
d)``; PrivateGaussianEstimator's covariance error on the real-data
benchmark's zCDP rows, 30 seeds, fell by 8% in geometric mean, 0.48 to
0.06 on columns in units 1e-3 to 1e6 at rho 0.5 and n = 2,000, 0.27 to
0.23 on fair at n = 1,193). :data:`TRACE_MULTIPLE` 2 clipped randhie's
skewed columns and biased their means 2.6 times beyond the baseline's
error at n = 20,190; 5 and 8 lost 4-8% of the gain.

Under zCDP two Gaussian releases of the same vector at ``a rho`` and ``(1 - a)
rho``, averaged with weights inverse to their noise variances, have the noise
of one release at ``rho``: the moments option loses nothing against the
single diagonal release. The augmented option's last column is ``tau``
times the mean of ``y``, the means' offset from ``m1`` (exact for the rows
within ``tau`` of ``m1``), with noise variance ``s^2 / tau^2`` (``s^2`` an
off-diagonal entry's); the means combine it with the first stage's. Its
diagonal gives ``E[y^2]``, hence the second moments about the box centre,
combined with the first stage's squares; its off-diagonal entries less the
offsets' product give the covariances.

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
from dataclasses import dataclass, replace

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Choice, Release
from dpgauss.releases._box import box_offsets
from dpgauss.releases._covariance import covariance_entries
from dpgauss.releases._diagonal import (
    BOX_FILL,
    REFERENCE_CORRELATION,
    cap_box_spectrum,
)
from dpgauss.releases._faint import moments_variances, significance
from dpgauss.releases._moments import (
    box_moments,
    moments_mechanism,
    variance_noise_variance,
    weighted_moments,
)
from dpgauss.utils._linalg import eigh_descending
from dpgauss.utils._mapped import mapped_rows
from dpgauss.utils._sums import clip_rows, clipped_sums, n_partial_sums

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

#: The augmented rows are clipped at ``tau`` about the first stage's means,
#: with ``tau^2`` this many times an upper bound on the rows' trace (the sum
#: of the first stage's variances plus :data:`TRACE_SDS` of its noise sds):
#: Markov's inequality puts at most a third of the rows beyond it, Gaussian
#: rows in five or more dimensions almost none (the threshold search of the
#: tail-sensitive covariance stops at about the same multiple).
TRACE_MULTIPLE = 3.0
#: Noise sds added to the released trace before the multiple.
TRACE_SDS = 2.0
#: The grid of clipping radii ``tau``: ``sqrt(2 d) 2^(-l/4)`` for l = 0 ..
#: TAU_STEPS - 1, the smallest 2^-7 of the largest. At the largest the
#: means' noise variance from the augmented release is twice the uncentred
#: rows' ``(z, sqrt(d))``, and the combined means stay below the baseline's
#: error (0.89 of the per-coordinate means' at half the cost); rows are
#: clipped only beyond ``sqrt(2 d)`` of the mean, where a cap at ``sqrt(d)``
#: clipped the long tails of randhie's zero-inflated columns at n = 20,190
#: and biased the means 2.6 times beyond the baseline's error.
TAU_STEPS = 29


def _moments_release(name, cost, n, d, weight):
    def make(cost, *, n_partials=None):
        return moments_mechanism(cost, n, d, n_partials, weight=weight)

    return Release(name, cost, kind_of(cost), make, size=2 * d)


def tau_grid(d):
    """The public clipping radii of the augmented rows' centred part, largest
    first (:data:`TAU_STEPS`)."""
    top = math.sqrt(2.0 * d)
    return top * 2.0 ** (-np.arange(TAU_STEPS, dtype=float) / 4.0)


def augmented_radius(tau):
    """The radius of the augmented rows ``(y, tau)`` with ``|y| <= tau``:
    ``sqrt(2) tau`` rounded up. The sums' own clip (slightly inside the
    radius, for their rounding) may still scale a row at ``tau`` by a factor
    within a few rounding steps of 1."""
    return float(np.nextafter(math.sqrt(2.0) * tau, math.inf))


def staged_entries(total, n, d, weight):
    """The staged plan (module docstring): ``box_first`` at
    :data:`STAGE_SHARE` of ``total``, then the choice ``box_second`` between
    the augmented GaussCov (``second_moment``, rows ``(y, tau)``, ``y`` the
    box row less the first stage's means clipped at ``tau``, in the ball of
    :func:`augmented_radius`) and ``box_rest`` at the rest. Both options cost
    the rest. The augmented release is checked before the spend at every
    radius of :func:`tau_grid` (the fit builds it at one of them)."""
    first, rest = split_cost(total, [STAGE_SHARE, 1.0 - STAGE_SHARE])
    radii = [augmented_radius(tau) for tau in tau_grid(d)]
    cases = ({}, *({"radius": radius} for radius in radii[1:]))
    augmented = [
        replace(r, cases=cases)
        for r in covariance_entries("gauss", rest, d + 1, n, radii[0])
    ]
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


def staged_errors(mechanisms, d, weight, tau=None):
    """The per-entry noise variances of the staged plan (public): the means'
    after combining, the diagonal's for the moments option and for the
    augmented one, and one off-diagonal entry's of the augmented one, with
    the augmented rows clipped at ``tau`` (default: :func:`reference_tau`).

    ``mechanisms["second_moment"]`` is built at the largest radius; GaussCov's
    noise sd is proportional to the squared radius (its sensitivity ``sqrt(2)
    R^2 / n``), so the variances at ``tau`` are those times ``(R_tau /
    R_top)^4``."""
    tau = reference_tau(d) if tau is None else tau
    first = mechanisms["box_first"].variance(2 * d)
    rest = mechanisms["box_rest"].variance(2 * d)
    diag, off = at_tau(mechanisms["second_moment"], d, tau).entry_variances(d + 1)
    mean = inverse_variance_mean(0.0, first, 0.0, off / (tau * tau))[1]
    moments = inverse_variance_mean(0.0, first, 0.0, rest)[1] / weight**2
    augmented = inverse_variance_mean(0.0, first / weight**2, 0.0, diag)[1]
    return mean, moments, augmented, off


@dataclass(frozen=True)
class ScaledNoise:
    """A GaussCov mechanism's entry variances times ``scale`` (its noise at a
    smaller radius), read where the mechanism's would be."""

    mechanism: object
    scale: float

    def entry_variances(self, size=None):
        return tuple(self.scale * v for v in self.mechanism.entry_variances(size))


def at_tau(mechanism, d, tau):
    """The augmented release's noise with the rows clipped at ``tau``, from
    its mechanism built at the largest radius (see :func:`staged_errors`)."""
    scale = (augmented_radius(tau) / augmented_radius(tau_grid(d)[0])) ** 4
    return ScaledNoise(mechanism, scale)


def snap_tau(squared, d):
    """The smallest radius of :func:`tau_grid` whose square is at least
    ``squared``: the largest when none is (or ``squared`` is NaN), the
    smallest for ``squared <= 0``."""
    taus = tau_grid(d)
    ok = taus * taus >= squared
    if not np.any(ok):
        return float(taus[0])
    return float(taus[np.flatnonzero(ok)[-1]])


def reference_tau(d, fill=BOX_FILL):
    """The clipping radius the staged plan is predicted at: the one of
    :func:`clipping_tau` for reference data, variance ``fill`` per
    coordinate, without the noise margin (public)."""
    return snap_tau(TRACE_MULTIPLE * d * fill, d)


def clipping_tau(second, mean, var, weight):
    """The augmented rows' clipping radius from the first stage (module
    docstring; post-processing of released values and public ones).

    Parameters
    ----------
    second, mean : ndarray of shape (d,)
        The first stage's second moments about the box centre and means.
    var : float
        The noise variance of one entry of the first stage's release.
    weight : float
        Its weight on the centred squares.

    Returns
    -------
    float
        ``tau`` of :func:`tau_grid`: ``tau^2`` at least :data:`TRACE_MULTIPLE`
        times the released trace plus :data:`TRACE_SDS` of its noise sds.
    """
    raw = np.nan_to_num(second - mean * mean + var, nan=0.0)
    noise = variance_noise_variance(var, weight, mean)
    upper = float(np.sum(np.clip(raw, 0.0, 1.0))) + TRACE_SDS * math.sqrt(
        float(np.sum(noise))
    )
    return snap_tau(TRACE_MULTIPLE * upper, mean.shape[0])


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


def release_staged(X, center, half, plan, rng, weight):
    """The staged plan's releases and their post-processing.

    ``weight`` is the moments release's weight on the centred squares. The
    augmented rows are ``(y, tau)``, ``y`` the box row less the first
    stage's means clipped at ``tau`` (:func:`clipping_tau`). The variances
    are kept by :func:`~dpgauss.releases._faint.moments_variances`, the
    off-diagonal entries above :func:`~dpgauss.releases._faint.significance`
    sds of their noise. Returns the means, the covariance's spectrum
    (values, vectors) in box units, whether the spectrum is diagonal, and
    the public noise sd of one combined mean (from the two releases' public
    noise variances).
    """
    n, d = X.shape
    first, var1 = _noisy_moments(X, center, half, plan, "box_first", weight, rng)
    # Everything from here to the second release is post-processing of the
    # first: the choice and tau read its values and public noise levels only.
    mean1 = np.clip(first[:d], -1.0, 1.0)
    second1 = first[d:] / weight + 0.5
    variances = moments_variances(second1, mean1, var1, var1 / weight**2)
    tau = clipping_tau(second1, mean1, var1, weight)
    if not choose_augmented(variances, *_stage_noise(plan, n, d, weight, tau)):
        plan.choose("box_second", "moments")
        rest, var2 = _noisy_moments(X, center, half, plan, "box_rest", weight, rng)
        noisy, var = inverse_variance_mean(first, var1, rest, var2)
        mean = np.clip(noisy[:d], -1.0, 1.0)
        second = noisy[d:] / weight + 0.5
        variances = moments_variances(second, mean, var, var / weight**2)
        values, vectors = cap_box_spectrum(variances, np.eye(d))
        return mean, values, vectors, True, math.sqrt(var)
    plan.choose("box_second", "augmented")
    radius = augmented_radius(tau)
    # The rows ``(clip(z - m1, tau), tau)``, formed chunk by chunk as the
    # pass reads them (each from its own row and released or public values).
    rows = mapped_rows(X, _augmented_rows, center, half, mean1, tau, width=d + 1)
    _, S = clipped_sums(rows, np.zeros(d + 1), radius)
    case = {"rows": n, "radius": radius, "n_partials": n_partial_sums(rows)}
    mech = plan.calibrate("second_moment", **case)
    released = np.asarray(mech.randomise(S / n, rng), dtype=np.float64)
    # Post-processing of both releases below. Every entry of the exact
    # second moment lies within radius^2.
    bound = radius * radius
    released = np.clip(np.nan_to_num(released, nan=0.0), -bound, bound)
    released = 0.5 * (released + released.T)
    diag, off = mech.entry_variances(d + 1)
    # The last column is tau times the mean of y: the means' offset from the
    # first stage's.
    shift = released[:d, d] / tau
    mean, var_mean = inverse_variance_mean(
        first[:d], var1, mean1 + shift, off / (tau * tau)
    )
    mean = np.clip(mean, -1.0, 1.0)
    # E[z^2] = E[y^2] + 2 m1 E[y] + m1^2 for the rows within tau of m1.
    second_y = np.diag(released)[:d] + 2.0 * mean1 * shift + mean1 * mean1
    var_y = diag + 4.0 * mean1 * mean1 * off / (tau * tau)
    second, var_second = inverse_variance_mean(
        second1, var1 / weight**2, second_y, var_y
    )
    variances = moments_variances(second, mean, var_mean, var_second)
    C = released[:d, :d] - np.outer(shift, shift)
    keep = np.abs(C) > significance(max(d * (d - 1) // 2, 1), False) * math.sqrt(off)
    keep &= np.outer(variances > 0.0, variances > 0.0)
    limit = np.sqrt(np.outer(variances, variances))
    C = np.where(keep, np.clip(C, -limit, limit), 0.0)
    C[np.diag_indices(d)] = variances
    values, vectors = eigh_descending(0.5 * (C + C.T))
    values, vectors = cap_box_spectrum(np.clip(values, 0.0, None), vectors)
    return mean, values, vectors, False, math.sqrt(var_mean)


def _augmented_rows(chunk, center, half, mean1, tau, out=None):
    """A chunk's clipped box offsets with the column tau appended (in
    ``out`` when given)."""
    Y = clip_rows(box_offsets(chunk, center, half), mean1, tau)
    if out is None:
        out = np.empty((Y.shape[0], Y.shape[1] + 1))
    out[:, :-1] = Y
    out[:, -1] = tau
    return out


def _stage_noise(plan, n, d, weight, tau):
    """The noise variances the choice compares (:func:`staged_errors` of the
    plan's mechanisms, the augmented one's at ``tau``): public, or functions
    of the first stage's release."""
    mechanisms = {r.name: r.build() for r in plan.releases()}
    _, moments, augmented, off = staged_errors(mechanisms, d, weight, tau)
    return moments, augmented, off
