"""The populous aggregator in the PSD space (``space="psd"``): radii, releases and
post-processing.

The k candidates are symmetric q x q matrices (one per group of rows, so
replacing one row changes at most one candidate; k, q and every parameter are
public). The releases are those of the Euclidean populous mean
(:mod:`dpgauss.ensemble._populous_aggregate`), composed sequentially as the
plan charges them, with the relative semimetric in place of the distance:

1. ``radius`` (only with ``radius="auto"``, pure epsilon): sparse vector over
   a public grid of relative radii whose largest is the last one the release
   is calibrated for and still useful at this k (:func:`psd_radii`, from
   public values). Its queries count the pairs whose log-Euclidean distance
   (a fixed function of each pair) is within each radius, so replacing one
   candidate moves each by at most ``2 (k - 1)``.
2. ``test``: the truncated-Laplace test on the counts of the certified
   relation (sound: it never calls a non-neighbour a neighbour, which is all
   the proof needs), exactly as in the Euclidean case.
3. ``mask`` and ``scale``: two zCDP Gaussian releases of the trace-normalised
   weighted mean (Frobenius sensitivity ``2 Delta / (1 - Delta)``, exact
   lattice rounding) and of its log-trace (``-ln(1 - Delta)``), with
   ``Delta`` the relative bound of :func:`~dpgauss.ensemble._psd.mean_sensitivity`.
   The proof is in :mod:`dpgauss.ensemble._psd`.

Both mask factories default to the largest bound the release is calibrated for
(``Delta = MAX_DELTA``), the case the check before the spend builds; the fit
passes the Delta of its radius.

The released matrix (:func:`psd_matrix`) is post-processing of the two
releases. Every refusal here (:func:`check_psd_radius`) reads public values
only and comes before the spend.
"""

import math
import warnings

import numpy as np
from sklearn.base import clone

from dpgauss.accounting import ZCDP, split_cost
from dpgauss.accounting._plan import Release
from dpgauss.ensemble import _populous as populous
from dpgauss.ensemble import _psd as psd
from dpgauss.ensemble._group_fits import read_statistic
from dpgauss.ensemble._populous_aggregate import (
    GRID_OCTAVES,
    RAMP,
    THRESHOLD,
    run_test,
    search_and_test_entries,
    svt_radius,
)
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms import GaussianMechanism

__all__ = [
    "MAX_PSD_GROUPS",
    "PSD_GRID_LOW",
    "PSD_ROWS_PER_DIM",
    "PSD_USEFUL",
    "check_psd_radius",
    "matrix_size",
    "psd_entries",
    "psd_matrix",
    "psd_noise",
    "psd_populous_mean",
    "psd_radii",
    "psd_useless_reason",
    "scale_factory",
    "shape_factory",
]

#: The PSD space: groups at most (O(k^2 q^3) certified tests) and "auto" rows
#: per group per matrix dimension (Thompson distances of ~0.5 between group
#: covariances: the bound's (t^2 - 1) t^2 s / n is flat for s from 50 q to
#: 100 q and grows on either side).
MAX_PSD_GROUPS, PSD_ROWS_PER_DIM = 5_000, 50
#: The PSD space's radius grid starts at 2^-PSD_GRID_LOW (then as the
#: Euclidean grid, up to the largest radius the release is calibrated for at
#: this k).
PSD_GRID_LOW = 10
#: Largest useful shape noise: sd times the matrix size q, in trace units (the
#: average eigenvalue of the trace-normalised matrix is 1 / q).
PSD_USEFUL = 0.5
_MAX_FLOAT = float(np.finfo(np.float64).max)


def psd_entries(total, auto_radius, q, *, k=None):
    """The PSD populous mean's plan entries: ``radius`` (with ``auto_radius``),
    ``test``, then the mask's rho split between ``mask`` (the shape) and
    ``scale`` by :func:`~dpgauss.ensemble._psd.shape_share` of the matrix size
    q, for k groups (None when the plan is only priced)."""
    entries, rho = search_and_test_entries(total, auto_radius, k)
    share = psd.shape_share(q)
    shape, scale = split_cost(ZCDP(rho), [share, 1.0 - share])
    entries += [
        Release("mask", shape, "gaussian", shape_factory, size=q * (q + 1) // 2),
        Release("scale", scale, "gaussian", scale_factory),
    ]
    return entries


def shape_factory(cost, *, delta=psd.MAX_DELTA):
    """The ``mask`` release's mechanism: the Gaussian mechanism for the
    trace-normalised mean when the weighted means move by ``Delta = delta``
    (relative; by default the largest the release is calibrated for, the
    largest noise)."""
    sens = psd.release_sensitivities(delta)[0]
    return GaussianMechanism(sensitivity=sens, rho=cost.rho)


def scale_factory(cost, *, delta=psd.MAX_DELTA):
    """The ``scale`` release's mechanism: the Gaussian mechanism for the
    log-trace of the weighted mean at ``Delta = delta`` (as
    :func:`shape_factory`)."""
    sens = psd.release_sensitivities(delta)[1]
    return GaussianMechanism(sensitivity=sens, rho=cost.rho)


def matrix_size(shape):
    """The PSD statistic's size q (its shape must be (q, q)); public."""
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(
            "space='psd' needs a square matrix statistic (such as "
            f"'covariance_'); its shape is {shape}. Nothing was spent."
        )
    return int(shape[0])


def psd_noise(k, radius, rho_shape):
    """The shape noise's sd (trace units) at this radius, or inf beyond
    MAX_DELTA; public."""
    delta = psd.mean_sensitivity(k, 1.0 + radius, THRESHOLD, *RAMP)
    if delta > psd.MAX_DELTA:
        return math.inf
    return psd.release_sensitivities(delta)[0] / math.sqrt(2.0 * rho_shape)


def psd_radii(k, rho_shape, q):
    """The PSD radii sparse vector chooses from: ``2^(j/2)`` from
    ``2^-PSD_GRID_LOW`` up to the largest whose shape noise is useful
    (sd at most ``PSD_USEFUL / q``, q the matrix size: larger radii would
    release noise, and a failed test is the better answer). Public."""
    grid = 2.0 ** (np.arange(-2 * PSD_GRID_LOW, 2 * GRID_OCTAVES + 1) / 2.0)
    keep = [r for r in grid if psd_noise(k, r, rho_shape) * q <= PSD_USEFUL]
    if not keep:
        raise ValueError(
            f"{k} groups are too few for a useful PSD populous mean at this "
            f"budget (even at radius {grid[0]:g} the noise's sd exceeds "
            f"{PSD_USEFUL} / {q}); use more rows or a larger budget. Nothing "
            "was spent."
        )
    return np.array(keep)


def check_psd_radius(radius, k, rho_shape, q):
    """Refuse (ValueError) a radius the PSD release cannot use at k groups, and
    warn (UtilityWarning) when a public one releases mostly noise; public
    values only, before the spend."""
    if radius == "auto":
        psd_radii(k, rho_shape, q)
        return
    if 1.0 + float(radius) == 1.0:
        raise ValueError(
            f"radius={radius!r} is below float64's resolution around 1 "
            "(1 + radius == 1): no two matrices could be neighbours. Nothing "
            "was spent."
        )
    noise = psd_noise(k, float(radius), rho_shape)
    if noise == math.inf:
        raise ValueError(
            f"radius={radius!r} is too large for {k} groups in the PSD "
            f"space (its bound exceeds {psd.MAX_DELTA}); use a smaller radius "
            "or more groups. Nothing was spent."
        )
    if noise * q > PSD_USEFUL:
        # From public values only (k, radius, budget): not a release.
        warnings.warn(
            f"SubsampleAggregate(space='psd'): at radius={radius!r} and "
            f"{k} groups the released matrix's noise sd is {noise:.3g} of its "
            "trace: the result will be mostly noise. Use more rows, a larger "
            "budget or a smaller radius.",
            UtilityWarning,
            stacklevel=4,
        )


def psd_populous_mean(Y, k, plan, rng, q, radius):
    """The populous mean in the PSD space (proof: :mod:`dpgauss.ensemble._psd`).

    Returns
    -------
    value : ndarray of shape (q * q,)
        The released matrix, flat.
    used : float
        The relative radius used (``t - 1`` for the float ``t = 1 + tau``).
    sensitivity : float
        The shape release's (Frobenius) sensitivity.
    """
    a, b = RAMP
    S, ok = psd.sanitise(Y, q)
    V = psd.log_vectors(S, ok)
    if radius == "auto":
        grid = psd_radii(k, plan.cost("mask").rho, q)
        tau = svt_radius(psd.pair_counts(V, grid), grid, k, plan, rng)
    else:
        tau = float(radius)
    t = 1.0 + tau  # the relation is the one of this float t, exactly
    counts = psd.neighbour_counts(S, V, t)
    run_test(counts, k, tau, plan, rng)
    A_w, B_w = populous.weight_params(k, a, b)
    weights = np.minimum(np.maximum(counts - A_w, 0), B_w)
    delta = psd.mean_sensitivity(k, t, THRESHOLD, a, b)
    shape_mech = plan.calibrate("mask", delta=delta)
    scale_mech = plan.calibrate("scale", delta=delta)
    coords, trace = psd.trace_normalised_mean(S, weights, shape_mech.grid)
    upper = shape_mech.randomise_lattice(coords, rng)
    log_trace = float(scale_mech.randomise([math.log(trace)], rng)[0])
    # Post-processing: the symmetric matrix, eigenvalues floored at the
    # shape noise's sd, times the released scale.
    floor = shape_mech.effective_scale(len(coords))
    value = psd_matrix(upper, q, floor, log_trace)
    return value.ravel(), t - 1.0, shape_mech.sensitivity


def psd_matrix(upper, q, floor, log_trace):
    """Post-processing of the PSD release: the symmetric matrix of ``upper``,
    its eigenvalues floored at ``floor`` and times ``exp(log_trace)``, clamped
    (finite, condition number at most 1e12) so that the result is a usable
    positive definite matrix for every noise draw."""
    tiny = float(np.finfo(np.float64).tiny)
    with np.errstate(all="ignore"):
        nu = np.zeros((q, q))
        nu[np.triu_indices(q)] = upper
        nu = nu + np.triu(nu, 1).T
        try:
            vals, vecs = np.linalg.eigh(nu)
        except np.linalg.LinAlgError:  # a fixed fallback on the released values
            vals, vecs = np.diag(nu).copy(), np.eye(q)
        vals = np.where(np.isfinite(vals), vals, floor)
        log_lam = np.log(np.maximum(vals, floor)) + log_trace
        top = math.log(_MAX_FLOAT / (4.0 * q))
        lam = np.exp(np.clip(log_lam, math.log(tiny) + 60.0, top))
        lam = np.maximum(lam, lam.max() * 1e-12)  # condition number <= 1e12
        value = (vecs * lam) @ vecs.T
        return (value + value.T) / 2.0


#: Public probe groups simulated for the PSD prediction, and the largest group
#: the probe fits (larger groups are only tighter, so they are not refused).
PSD_PROBE_GROUPS, PSD_PROBE_MAX_ROWS = 100, 20_000


def psd_probe_fraction(estimator, statistic, q, rows, tau):
    """The fraction of pairs within relative radius ``tau`` among the
    statistics of ``PSD_PROBE_GROUPS`` groups of ``rows`` standard normal rows
    in q dimensions (a fixed seed), or None when the probe cannot fit.

    Clean Gaussian rows are the best case the test meets, and the relation is
    invariant under an invertible linear map of the rows, so this fraction
    does not depend on the data's covariance. Public values only.
    """
    rng = np.random.default_rng(20_261_128)
    Y = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(PSD_PROBE_GROUPS):
                fitted = clone(estimator).fit(rng.standard_normal((rows, q)))
                Y.append(
                    np.concatenate(
                        [p.ravel() for p in read_statistic(statistic, fitted)]
                    )
                )
    except Exception:  # an estimator the public probe cannot fit: no prediction
        return None
    S, ok = psd.sanitise(np.array(Y), q)
    counts = psd.neighbour_counts(S, psd.log_vectors(S, ok), 1.0 + tau)
    return float(counts.sum()) / PSD_PROBE_GROUPS**2


def psd_useless_reason(owner, plan, data, k):
    """Why the PSD populous test is predicted to fail, or None.

    The test passes when about ``THRESHOLD`` of the k^2 pairs are neighbours;
    the largest radius the fit may use (the public one, or the top of
    :func:`psd_radii`) is checked on public probe groups of the fit's size
    ``n // k`` (:func:`psd_probe_fraction`): below ``THRESHOLD`` there, even
    clean data fails the test after the spend. Public values only, before
    the spend: not a release.
    """
    q = matrix_size(data.public["shape"])
    rows = data.n // k
    if rows > PSD_PROBE_MAX_ROWS:
        return None
    if owner.radius == "auto":
        tau = float(psd_radii(k, plan.cost("mask").rho, q).max())
    else:
        tau = float(owner.radius)
    frac = psd_probe_fraction(owner.estimator, owner.statistic, q, rows, tau)
    if frac is None or frac >= THRESHOLD:
        return None
    return (
        f"SubsampleAggregate(space='psd'): with {k} groups of {rows} rows the "
        f"largest usable radius is {tau:.3g}, within which only {frac:.0%} of "
        "pairs of group statistics are neighbours even on clean Gaussian rows "
        f"(the test needs about {THRESHOLD:.0%}); it would fail after the "
        "spend. Use fewer, larger groups (n_groups), more rows or a larger "
        "budget."
    )
