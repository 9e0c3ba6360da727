"""The covariance in a box, probed: a full release at a share, then full or diagonal.

Not an estimator module; the plan of :class:`~dpgauss.covariance.PrivateCovariance`
with a box where the choice from public values is the full release (zCDP,
``center=True``), in box units ``z = clip((x - c) / h, -1, 1)``, rows clipped
at ``sqrt(d)`` about the released mean:

1. ``mean``: the clipped mean (:func:`~dpgauss.releases._center.mean_entries`,
   its own proof there).
2. ``box_probe``: GaussCov of the second moment about the released mean, the
   factory and the proof of ``second_moment``
   (:mod:`dpgauss.releases._covariance`: Frobenius sensitivity ``sqrt(2) d /
   n`` for rows in the ball of radius ``sqrt(d)``), at a share
   :data:`PROBE_SHARE` of what the mean leaves. It measures the correlations
   themselves, where the choice from public values had to assume them.
3. ``box_second``, a :class:`~dpgauss.accounting._plan.Choice` at the rest,
   made from the probe's released matrix and public values only
   (post-processing of the probe): ``"full"``, GaussCov of the same second
   moment again (``second_moment``), or ``"moments"``, the per-coordinate
   means and centred squares of :mod:`dpgauss.releases._variances`
   (``box_rest``, sensitivity proven in :mod:`dpgauss.releases._moments`).
   Both options cost the same, so the plan costs the whole cost whichever is
   taken.

**Nothing lost where the full release wins.** Two Gaussian releases of one
matrix at ``a rho`` and ``(1 - a) rho``, averaged with weights inverse to
their noise variances, have the noise of one release at ``rho``: a table
whose correlations the probe sees gets the full release at the whole cost
(of the covariance's share). A table whose columns are independent gets the
per-coordinate release at ``1 - a`` of what the mean leaves, ``(1 - a)(1 -
MEAN_SHARE)`` = 0.675 of the cost (the mean release only centres the probe;
the per-coordinate release has its own means): noise variance about 1.48
times the diagonal plan's, instead of a full release whose diagonal carries
about ``d`` times the per-coordinate noise: the choice from public values
assumed a correlation of 0.3 between any two columns and lost 2-3.5 times to
the private diagonal on independent ones.

**The choice** (:func:`correlations_pay`). The probe's off-diagonal entries
in units of their noise sd ``s``: where the rows' own covariances (their
sampling spread included) are below the noise, their squares less 1 sum to
about 0 (each has sd ``sqrt(2)``), and every covariance the probe sees adds
to the sum. At large ``n rho`` the sampling covariances of independent
columns (about ``1 / sqrt(n)``) rise above the probe's noise and the full
option is taken: it then estimates them, as the non-private estimate does.
The full option is taken only where the sum exceeds :data:`EVIDENCE_SDS`
times its sd under independence, and where it is
predicted the smaller error in each column's own units: the moments option
``sum_i min(t_m / v_i^2, 1) + sum_(i != j) r_ij^2`` (the correlations it
leaves out), the full one ``sum_i min(t_f / v_i^2, 1) + sum_(i != j)
min(s_f^2 / (v_i v_j), r_ij^2)``, with ``r_ij^2 = (C_ij^2 - s^2) / (v_i
v_j)`` (unbiased for the squared covariance), ``v`` the probe's variances
(no lower than their noise sd) and ``t``, ``s_f^2`` the options' public noise
variances (the full one's combined with the probe's).

**Correlations left out.** Where the moments option is taken, the probe
bounds the correlations it leaves out (:func:`unresolved_error`): the
unbiased sum of their squares ``E = sum_(i != j) r_ij^2`` plus two of its
sds, ``2 sqrt(sum_(i<j) (2 s^4 + 4 max(C_ij^2 - s^2, 0) s^2) / (v_i
v_j)^2)`` (the sd of ``C_ij^2`` for a Gaussian entry of mean ``C`` and
noise variance ``s^2``, counted twice for the two ordered pairs), as the
relative Frobenius error ``sqrt(E / (d + E))`` of a diagonal whose variances
are exact. Where that is beyond ASTRAY times the non-private relative
sampling error on the reference data, the estimator warns: columns
correlated about 0.5 in scales 1e-3 to 1e6 (d = 6, n = 2,000, rho 0.125)
took the diagonal in 4 fits of 30, each 13 times the non-private error,
without a word. Where the probe sees no correlation and bounds them within
that, it stays silent.

**Post-processing.** The full option's two releases are averaged and go
through the full release's own post-processing (the spectral denoiser,
:mod:`dpgauss.releases._measured` and :mod:`dpgauss.releases._offdiagonal`
in the estimator); the moments option's through
:func:`~dpgauss.releases._variances.release_variances`. Every function here
reads released values and public ones (n, d, the cost, the mechanisms' noise
variances) only.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._plan import Choice
from dpgauss.releases._box_staged import inverse_variance_mean, relative_noise
from dpgauss.releases._center import Spectrum, mean_entries, release_center
from dpgauss.releases._covariance import (
    MeasuredDiagonal,
    gauss_error,
    gauss_spectrum,
    method_entries,
)
from dpgauss.releases._diagonal import (
    BOX_FILL,
    SAMPLING_FILL,
    diagonal_error,
    reference_norm,
    sampling_errors,
)
from dpgauss.releases._moments import SECOND_WEIGHT
from dpgauss.releases._prediction import ASTRAY
from dpgauss.releases._variances import release_variances, variance_entries
from dpgauss.utils._sums import clipped_sums, n_partial_sums

__all__ = [
    "EVIDENCE_SDS",
    "PROBE_SHARE",
    "correlations_pay",
    "is_probed",
    "probe_entries",
    "probe_prediction",
    "release_probed",
    "second_choice",
    "unresolved_error",
]

#: The probe's share of what the mean leaves. Where the full release is
#: taken nothing is lost (the two combine); where the per-coordinate one is,
#: it gets ``1 - PROBE_SHARE`` of what the mean leaves (module docstring);
#: a smaller probe sees only stronger correlations (its noise sd is ``1 /
#: sqrt(PROBE_SHARE)`` times the full option's).
PROBE_SHARE = 0.25

#: The full option needs the probe's off-diagonal entries this many sds of
#: their sum above what independent columns would show.
EVIDENCE_SDS = 1.5


def probe_entries(total, d, n, radius):
    """The probed plan (module docstring): the mean, ``box_probe`` at
    :data:`PROBE_SHARE` of what the mean leaves, then the choice
    ``box_second`` between ``"full"`` (``second_moment``) and ``"moments"``
    (``box_rest``) at what is left; rows clipped at ``radius``. Both options
    cost the same."""
    mean, rest = mean_entries(total, True, n, d, radius)
    probe, second = split_cost(rest, [PROBE_SHARE, 1.0 - PROBE_SHARE])
    first = replace(method_entries("gauss", probe, d, n, radius)[0], name="box_probe")
    return [*mean, first, second_choice(second, d, n, radius)]


def second_choice(cost, d, n, radius):
    """The choice ``box_second`` a probe decides, at ``cost``: ``"full"``,
    GaussCov of the second moment (``second_moment``, rows clipped at
    ``radius``), or ``"moments"``, the per-coordinate means and centred
    squares (``box_rest``). One release each, at the same cost."""
    per_coordinate = replace(variance_entries(cost, d, True, n)[0], name="box_rest")
    options = {
        "full": method_entries("gauss", cost, d, n, radius),
        "moments": (per_coordinate,),
    }
    return Choice("box_second", options)


def is_probed(plan):
    """Whether ``plan`` is the probed plan."""
    return any(r.name == "box_probe" for r in plan.releases())


@dataclass(frozen=True)
class _Noise:
    """The entry variances ``(diagonal, off-diagonal)`` of two GaussCov
    releases averaged, read where a mechanism's would be."""

    variances: tuple

    def entry_variances(self, size=None):
        return self.variances

    def sd(self, size=None):
        return math.sqrt(self.variances[0])


def _combined(mechanisms, d):
    """The full option's noise after averaging with the probe (public)."""
    p_diag, p_off = mechanisms["box_probe"].entry_variances(d)
    a_diag, a_off = mechanisms["second_moment"].entry_variances(d)
    return _Noise(
        (
            inverse_variance_mean(0.0, p_diag, 0.0, a_diag)[1],
            inverse_variance_mean(0.0, p_off, 0.0, a_off)[1],
        )
    )


def probe_prediction(mechanisms, d):
    """The probed plan's predicted Frobenius error on the reference data (box
    units): the better of its options, the full one with the probe averaged
    in. Public values only."""
    full = gauss_error(_combined(mechanisms, d), d, trace=d * BOX_FILL)
    return min(full, diagonal_error(mechanisms["box_rest"], d))


def correlations_pay(covariance, raw, raw_sd, probe_off, moments_diag, full):
    """Whether the full option is taken (module docstring).

    Parameters
    ----------
    covariance : ndarray of shape (d, d)
        The probe's released matrix (symmetric).
    raw : ndarray of shape (d,)
        Its variances, noise included (``raw_sd`` the noise's sd).
    probe_off : float
        The noise variance of one off-diagonal entry of the probe.
    moments_diag : float
        The moments option's noise variance of one released variance.
    full : tuple of float
        The full option's noise variances (diagonal, off-diagonal), the
        probe averaged in.

    Returns
    -------
    bool
        Post-processing: released and public values only.
    """
    d = raw.shape[0]
    upper = np.triu_indices(d, 1)
    chi = float(np.sum(covariance[upper] ** 2 / probe_off - 1.0))
    if not chi > EVIDENCE_SDS * math.sqrt(2.0 * upper[0].size):
        return False
    # Each column's variance, no lower than its noise: a faint column's
    # share of the sums below stays bounded.
    v = np.maximum(raw, raw_sd)
    pairs = np.outer(v, v)
    off = ~np.eye(d, dtype=bool)
    r2 = np.where(off, (covariance**2 - probe_off) / pairs, 0.0)
    f_diag, f_off = full
    moments = float(np.sum(relative_noise(moments_diag, v, 1.0)) + np.sum(r2))
    kept = np.where(off, np.minimum(f_off / pairs, np.maximum(r2, 0.0)), 0.0)
    return float(np.sum(relative_noise(f_diag, v, 1.0)) + np.sum(kept)) < moments


def unresolved_error(covariance, raw, raw_sd, probe_off, n):
    """The relative error the correlations the probe cannot rule out would
    leave in a diagonal release, or None where it is within ASTRAY times the
    non-private relative sampling error (module docstring; the arguments
    are :func:`correlations_pay`'s, ``n`` the rows). Post-processing of the
    probe and public values."""
    d = raw.shape[0]
    upper = np.triu_indices(d, 1)
    if not upper[0].size:
        return None
    v = np.maximum(raw, raw_sd)
    pairs = np.outer(v, v)[upper]
    squares = covariance[upper] ** 2
    total = 2.0 * float(np.sum((squares - probe_off) / pairs))
    signal = np.maximum(squares - probe_off, 0.0)
    spread = 2.0 * math.sqrt(
        float(np.sum((2.0 * probe_off**2 + 4.0 * signal * probe_off) / pairs**2))
    )
    bound = max(total, 0.0) + 2.0 * spread
    error = math.sqrt(bound / (d + bound))
    sampling = sampling_errors(n, d)[1] / reference_norm(d, SAMPLING_FILL)
    return error if error > ASTRAY * sampling else None


def _symmetric(released, d):
    """A released matrix, finite, within ``4 d`` and symmetric (post-processing)."""
    released = np.nan_to_num(np.asarray(released, dtype=np.float64), nan=0.0)
    released = np.clip(released, -4.0 * d, 4.0 * d)
    return 0.5 * (released + released.T)


def release_probed(X, radius, plan, rng):
    """The probed plan's releases on box rows ``X`` and their post-processing.

    Returns
    -------
    center : ndarray of shape (d,)
        The released mean (box units, in the box).
    center_sd : float
        The public noise sd of one of its coordinates (before its shrinkage
        and projection towards the box's centre).
    result : Spectrum or MeasuredVariances
        The full option's spectrum (the probe and the second release averaged,
        denoised) or the per-coordinate release's variances.
    """
    n, d = X.shape
    center, shift, center_sd = release_center(X, np.zeros(d), radius, True, plan, rng)
    center = np.clip(center, -1.0, 1.0)
    _, S = clipped_sums(X, center, radius)
    M = S / n
    case = {"rows": n, "radius": radius, "n_partials": n_partial_sums(X)}
    probe = plan.calibrate("box_probe", **case)
    first = _symmetric(probe.randomise(M, rng), d)
    p_diag, p_off = probe.entry_variances(d)
    # From here to the second release: post-processing of the probe.
    mechanisms = {r.name: r.build() for r in plan.releases()}
    noise = _combined(mechanisms, d)
    per = mechanisms["box_rest"].variance(2 * d) / SECOND_WEIGHT**2
    raw = np.diag(first) - shift
    if not correlations_pay(first, raw, math.sqrt(p_diag), p_off, per, noise.variances):
        plan.choose("box_second", "moments")
        left = unresolved_error(first, raw, math.sqrt(p_diag), p_off, n)
        result = release_variances(X, plan, rng, True, name="box_rest")
        return center, center_sd, replace(result, unresolved=left)
    plan.choose("box_second", "full")
    mech = plan.calibrate("second_moment", **case)
    second = _symmetric(mech.randomise(M, rng), d)
    # Both are GaussCov of M: one weight for every entry, inverse to the
    # off-diagonal noise variances (the diagonal's are in the same ratio).
    released, _ = inverse_variance_mean(
        first, p_off, second, mech.entry_variances(d)[1]
    )
    cap = radius * radius
    values, vectors, _ = gauss_spectrum(noise, released, cap, None, shift)
    sd, off_sd = (math.sqrt(v) for v in noise.variances)
    measured = MeasuredDiagonal(
        np.diag(released).copy(), sd, released[np.triu_indices(d, 1)], off_sd
    )
    return center, center_sd, Spectrum(values, vectors, sd, cap, "gauss", measured)
