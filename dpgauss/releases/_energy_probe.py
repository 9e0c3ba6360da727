"""The covariance in a box under pure epsilon, probed by one scalar: full or diagonal.

Not an estimator module; the plan of :class:`~dpgauss.covariance.PrivateCovariance`
with a box where the choice from public values is the full release (pure
epsilon, ``center=True``), the pure-DP counterpart of
:mod:`dpgauss.releases._box_probe`. In box units ``z = clip((x - c) / h, -1,
1)``, rows clipped at ``r = sqrt(d)`` about the released mean:

1. ``mean``: the clipped mean (:func:`~dpgauss.releases._center.mean_entries`,
   its own proof there).
2. ``box_energy``: Laplace noise on one scalar, the off-diagonal energy
   ``E(M) = ||offdiag(M)||_F = sqrt(sum_(i != j) M_ij^2)`` of the second
   moment ``M`` of the clipped rows about the released mean, at a share
   :data:`ENERGY_SHARE` of what the mean leaves (sensitivity below).
3. ``box_second``, a :class:`~dpgauss.accounting._plan.Choice` at the rest,
   made from the released energy and public values only (post-processing of
   the probe): ``"full"``, GaussCov of ``M`` (``second_moment``, Laplace on
   the upper triangle, l1 sensitivity ``min(d + 1, sqrt(2) d) r^2 / n``,
   :mod:`dpgauss.mechanisms._releases`), or ``"moments"``, the per-coordinate
   means and centred squares of :mod:`dpgauss.releases._variances`
   (``box_rest``, sensitivity proven in :mod:`dpgauss.releases._moments`).
   Both options are one release at the same cost, so the plan costs the
   whole cost whichever is taken.

**Sensitivity of the probe** (replace one row). Let ``M`` and ``M'`` be the
exact second moments of the clipped rows of two neighbouring tables (the
same released mean, public to this release): ``M - M' = (y y^T - y' y'^T) /
n`` with ``||y||, ||y'|| <= r``, and ``||y y^T - y' y'^T||_F^2 = ||y||^4 +
||y'||^4 - 2 (y . y')^2 <= 2 r^4``, so ``||M - M'||_F <= sqrt(2) r^2 / n``.
``offdiag`` (zero the diagonal) is the orthogonal projection onto the
off-diagonal entries in the Frobenius inner product, so ``E`` is a seminorm
with ``E(A) <= ||A||_F``; by the triangle inequality ``|E(M) - E(M')| <=
E(M - M') <= ||M - M'||_F``. In floating point, the computed second moments
are within ``e r^2`` (Frobenius) of the exact ones
(:func:`~dpgauss.utils._sums.summation_error`, the term the GaussCov
mechanism adds), which moves ``E`` by as much again (``E`` is 1-Lipschitz in
the Frobenius norm); evaluating ``E`` (``k = d (d - 1)`` squares summed, one
square root) adds a relative error at most ``gamma_(k + 2)`` (Higham), of an
``E`` at most ``||M~||_F <= r^2 (1 + e)``, on each side (the squares
computed with relative error u, their sum of non-negative terms within
``gamma_k``, the correctly rounded root within u: ``(k + 1) u / (1 - k u)``
in all), and squares that underflow add at most ``k 2^-1074`` to the sum,
``sqrt(k) 2^-537`` to ``E``. The released scalar has l1 sensitivity at most

    ``sqrt(2) r^2 / n + 2 e r^2 + 2 gamma_(k + 2) (1 + e) r^2 + 2 sqrt(k) 2^-537``,

and Laplace noise at that scale (the exact lattice sampler of
:class:`~dpgauss.mechanisms.LaplaceMechanism`) makes it
``epsilon_probe``-DP. A scalar costs far less than the matrix: its noise sd
``2 d / (n epsilon_p)`` in box units against ``sqrt(2) d (d + 1) / (n
epsilon_f)`` for each of the full release's ``d (d - 1)`` off-diagonal
entries, so at :data:`ENERGY_SHARE` = 0.1 and d = 5 the probe resolves an
energy half the full release's own noise energy.

**The choice** (:func:`energy_pays`, box units, Frobenius). ``E_hat^2``
less the probe's noise variance ``2 b^2`` and the energy the released
mean's error adds (``d (d - 1) V^2``, V its per-coordinate noise variance)
is about the energy ``Q`` of the off-diagonal entries. The moments option
leaves them out: predicted squared error ``d t_m + Q``; the full option
keeps them at its noise: ``d t_f + min(Q, d (d - 1) s_f^2)`` (the faint
rule zeroes those within its noise), ``t`` and ``s^2`` the options' public
entry noise variances. The full option is taken only where the probe shows
energy above :data:`~dpgauss.releases._box_probe.EVIDENCE_SDS` times its
noise sd and where it is predicted the smaller. The choice from public
values assumed a correlation of 0.3 between any two columns (and lost 1.7
to 3.4 times to the private per-coordinate variances at pure epsilon on
independent columns).

**Cost.** The full option gets ``1 - ENERGY_SHARE`` of what the mean
leaves (0.81 of the whole; the unprobed full plan gave 15/16 of 0.9 =
0.84 to the matrix and the rest to a trace this plan does not release);
the moments option the same 0.81 (its own means included), instead of
the whole cost where the public choice is the per-coordinate release.

**Post-processing.** The full option goes through the full release's own
post-processing (:func:`~dpgauss.releases._center.release_spectrum`), the
moments option through
:func:`~dpgauss.releases._variances.release_variances`. Every function here
reads released values and public ones (n, d, the cost, the mechanisms'
noise variances) only.
"""

import math

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms._additive import LaplaceMechanism
from dpgauss.mechanisms._checks import check_radius
from dpgauss.releases._box_probe import EVIDENCE_SDS, second_choice
from dpgauss.releases._center import mean_entries, release_center, release_spectrum
from dpgauss.releases._diagonal import diagonal_error, full_prediction
from dpgauss.releases._moments import SECOND_WEIGHT
from dpgauss.releases._variances import release_variances
from dpgauss.utils._sums import _gamma, clipped_sums, n_partial_sums, summation_error

__all__ = [
    "ENERGY_SHARE",
    "MIN_FEATURES",
    "energy_entries",
    "energy_mechanism",
    "energy_pays",
    "energy_prediction",
    "is_energy_probed",
    "off_diagonal_energy",
    "release_energy_probed",
]

#: The fewest features the pure fit probes at. The probe's noise against the
#: full release's off-diagonal noise is ``sqrt(2) (epsilon_f / epsilon_p) /
#: (sqrt(d (d - 1)) min(d + 1, sqrt(2) d))``: 3.2 at d = 2, 1.3 at d = 3,
#: 0.7 at d = 4. At d = 2 the probe misses correlations the full release
#: estimates well (columns correlated 0.2, n = 1,000, epsilon 2: 0.094 ->
#: 0.271 in the columns' own sds), where the full release's diagonal costs
#: least; from d = 3 on it was within 2% or better on correlated columns.
MIN_FEATURES = 3

#: The probe's share of what the mean leaves (module docstring: the full
#: option's Laplace sd grows by ``1 / (1 - ENERGY_SHARE) - 1`` = 11% against
#: a matrix at the whole rest, 4% against the unprobed plan's, which gave a
#: sixteenth to a trace).
ENERGY_SHARE = 0.1


def off_diagonal_energy(M):
    """``||offdiag(M)||_F``: the Frobenius norm of ``M`` with its diagonal
    zeroed (both triangles; a seminorm)."""
    M = np.asarray(M, dtype=np.float64)
    off = M[~np.eye(M.shape[0], dtype=bool)]
    return float(np.sqrt(np.sum(off * off)))


def energy_mechanism(cost, n, d, radius, n_partials=None):
    """The Laplace mechanism of :func:`off_diagonal_energy` of the second
    moment of n rows clipped at ``radius`` (module docstring: l1 sensitivity
    ``sqrt(2) r^2 / n + 2 e r^2 + 2 gamma_(k + 2) (1 + e) r^2 + 2 sqrt(k)
    2^-537``, ``k = d (d - 1)``).

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._energy_probe import energy_mechanism
    >>> mech = energy_mechanism(PureDP(1.0), n=1000, d=2, radius=2 ** 0.5)
    >>> round(mech.sensitivity * 1000, 6)
    2.828427
    """
    r2 = radius * radius
    e = summation_error(n, n_partials)
    k = d * (d - 1)
    evaluation = 2.0 * _gamma(k + 2) * (1.0 + e) * r2 + 2.0 * math.sqrt(k) * 2.0**-537
    sensitivity = math.sqrt(2.0) * r2 / n + 2.0 * e * r2 + evaluation
    return LaplaceMechanism(sensitivity=sensitivity, epsilon=cost.epsilon)


def _energy_factory(n, d, radius):
    """``make(cost, rows, radius, n_partials)`` for ``box_energy``; the
    defaults are the plan's worst public case (every row its own chunk)."""

    def make(cost, *, rows=n, radius=radius, n_partials=n):
        check_radius(radius, "the radius")
        return energy_mechanism(cost, rows, d, radius, n_partials)

    return make


def energy_entries(total, d, n, radius):
    """The probed plan (module docstring): the mean, ``box_energy`` at
    :data:`ENERGY_SHARE` of what the mean leaves, then the choice
    ``box_second`` between ``"full"`` (``second_moment``) and ``"moments"``
    (``box_rest``) at what is left; rows clipped at ``radius``. Both options
    cost the same."""
    mean, rest = mean_entries(total, True, n, d, radius)
    probe, second = split_cost(rest, [ENERGY_SHARE, 1.0 - ENERGY_SHARE])
    energy = Release("box_energy", probe, kind_of(probe), _energy_factory(n, d, radius))
    return [*mean, energy, second_choice(second, d, n, radius)]


def is_energy_probed(plan):
    """Whether ``plan`` is the probed plan of this module."""
    return any(r.name == "box_energy" for r in plan.releases())


def _moments_variance(mechanisms, d):
    """One released variance's noise variance in the moments option (public)."""
    return float(mechanisms["box_rest"].variance(2 * d)) / SECOND_WEIGHT**2


def energy_prediction(mechanisms, d):
    """The probed plan's predicted Frobenius error on the reference data
    (box units): the better of its options. Public values only."""
    full = full_prediction(mechanisms, "gauss", d)
    return min(full.error, diagonal_error(mechanisms["box_rest"], d))


def energy_pays(energy, energy_variance, mean_variance, d, moments_diag, full):
    """Whether the full option is taken (module docstring).

    Parameters
    ----------
    energy : float
        The released off-diagonal energy.
    energy_variance : float
        Its noise variance (``2 b^2``).
    mean_variance : float
        The released mean's noise variance per coordinate.
    d : int
        Features.
    moments_diag : float
        The moments option's noise variance of one released variance.
    full : tuple of float
        The full option's entry noise variances (diagonal, off-diagonal).

    Returns
    -------
    bool
        Post-processing: released and public values only.
    """
    if not energy > EVIDENCE_SDS * math.sqrt(energy_variance):
        return False
    pairs = d * (d - 1)
    q = energy * energy - energy_variance - pairs * mean_variance**2
    f_diag, f_off = full
    moments = d * moments_diag + q
    return d * f_diag + min(q, pairs * f_off) < moments


def release_energy_probed(X, radius, plan, rng):
    """The probed plan's releases on box rows ``X`` and their post-processing.

    Returns
    -------
    center : ndarray of shape (d,)
        The released mean (box units, in the box).
    center_sd : float
        The public noise sd of one of its coordinates (before its shrinkage
        and projection towards the box's centre).
    result : Spectrum or MeasuredVariances
        The full option's spectrum or the per-coordinate release's variances.
    """
    n, d = X.shape
    center, shift, center_sd = release_center(X, np.zeros(d), radius, True, plan, rng)
    center = np.clip(center, -1.0, 1.0)
    _, S = clipped_sums(X, center, radius)
    probe = plan.calibrate(
        "box_energy", rows=n, radius=radius, n_partials=n_partial_sums(X)
    )
    energy = float(probe.randomise(off_diagonal_energy(S / n), rng)[()])
    # From here to the second release: post-processing of the probe.
    mechanisms = {r.name: r.build() for r in plan.releases()}
    full = mechanisms["second_moment"].entry_variances(d)
    per = _moments_variance(mechanisms, d)
    if not energy_pays(energy, probe.variance(1), shift, d, per, full):
        plan.choose("box_second", "moments")
        result = release_variances(X, plan, rng, True, name="box_rest")
        return center, center_sd, result
    plan.choose("box_second", "full")
    result = release_spectrum(X, center, shift, radius, "gauss", plan, rng)
    return center, center_sd, result
