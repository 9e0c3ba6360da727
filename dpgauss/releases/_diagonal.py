"""Covariance releases inside a public box: the diagonal release and the map back.

Not an estimator module. With a public box
``bounds = (lower, upper)`` (:mod:`dpgauss.releases._box`) every row becomes
``z = clip((x - c) / h, -1, 1)``: a function of its own row and public values,
in ``[-1, 1]^d`` and so in the l2 ball of radius ``sqrt(d)`` about 0. The
covariance estimators release in these box units and map the result back by
``diag(h)`` (post-processing).

**The diagonal release.** The simplest private covariance with a box is the
per-coordinate variance: one release of the 2d-vector ``w = (1/n) sum_i (z_i,
z_i ** 2)`` (the d means and the d second moments about the box centre; only
the second moments when the fit is not centered).

*Sensitivity* (replace one row; n, d and the box public). One coordinate of the
replaced row moves from a to b, both in [-1, 1], and changes its entries of
``n w`` by ``(b - a, b^2 - a^2)``. With ``s = |a + b|`` and ``t = |a - b|``,
``s + t = 2 max(|a|, |b|) <= 2``, so

* l1: ``t + t s = t (1 + s) <= (2 - s)(1 + s) <= 9/4`` (the maximum of the
  parabola, at s = 1/2);
* l2: ``t^2 (1 + s^2) <= f(s) = (2 - s)^2 (1 + s^2)``, and ``f'(s) = 2 (2 - s)
  (2 s - 1 - 2 s^2) < 0`` on [0, 2] (the last factor has no real root), so
  ``f(s) <= f(0) = 4``: at most 2 per coordinate.

Over the d coordinates: l1 ``9 d / (4 n)``, l2 ``2 sqrt(d) / n`` (without the
means: ``d / n`` and ``sqrt(d) / n``, each square moving in [0, 1]). In floating
point the computed square ``fl(z^2)`` is within ``u`` of ``z^2`` (still in
[0, 1]), which adds ``2u`` per coordinate, and each computed mean of n entries
bounded by 1 is within ``e = summation_error(n, n)`` of the exact one (any
summation order, :mod:`dpgauss.utils._sums`), which adds ``2e`` per entry between
two neighbouring datasets. The mechanism is calibrated for those sums
(:func:`diagonal_mechanism`). Everything after it (the variances ``s - m^2``,
their projection onto [0, 1], the public variance correction, the map back) is
post-processing.
"""

import math
from dataclasses import replace

import numpy as np

from dpgauss.accounting import ZCDP
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.releases._box import (
    boxed,
    check_bounds,
    public_box,
    warn_rows_at_edge,
)
from dpgauss.releases._center import covariance_plan_entries
from dpgauss.releases._covariance import filled_prediction
from dpgauss.releases._prediction import Prediction
from dpgauss.utils._linalg import eigh_descending
from dpgauss.utils._sums import over_chunks, summation_error
from dpgauss.utils.validation import check_data_norm

__all__ = [
    "BOX_FILL",
    "PRIOR_MEAN",
    "PRIOR_VARIANCE",
    "REFERENCE_CORRELATION",
    "BoxMixin",
    "axes_prediction",
    "box_plan_entries",
    "box_rows",
    "box_useless_message",
    "cap_box_spectrum",
    "diagonal_entries",
    "diagonal_error",
    "diagonal_mechanism",
    "diagonal_prediction",
    "full_prediction",
    "reference_norm",
    "release_diagonal",
    "sampling_errors",
    "to_data_units",
    "variance_sampling",
    "with_sampling",
]

_U = 2.0**-53

#: The correlation between any two coordinates of the reference data: the
#: off-diagonal mass a diagonal release gives up. It steers the choice between
#: the full and the diagonal release only, never privacy. The root mean
#: square correlation of wine, breast cancer, digits, star98 and modechoice is
#: 0.17-0.47 (``benchmarks/bench_box_covariance.py``): the full release is
#: taken where its noise is predicted below that mass.
REFERENCE_CORRELATION = 0.3

#: The variance of one coordinate, in box units, of the reference data the
#: predictions before the spend take. Rows spread uniformly over the box would
#: have 1/3; real columns in their observed min/max box have about 0.1 (medians
#: 0.04-0.18 on wine, breast cancer, digits, star98 and modechoice), and a
#: codebook box is looser still, so the reference takes 0.1.
BOX_FILL = 0.1

#: The prior the diagonal release's variances are shrunk towards (box
#: units): mean and standard deviation BOX_FILL. Post-processing; a
#: noise-swamped variance falls back to the prior mean, so the axes order by
#: the box's widths there.
PRIOR_MEAN = BOX_FILL
PRIOR_VARIANCE = BOX_FILL * BOX_FILL


def diagonal_mechanism(cost, n, d, centered=True):
    """The mechanism of the diagonal release (see the module docstring).

    Parameters
    ----------
    cost : ZCDP or PureDP
        Gaussian noise for zCDP (l2), Laplace for pure DP (l1).
    n, d : int
        Rows and features (public).
    centered : bool, default=True
        Whether the d means are released with the d second moments.

    Returns
    -------
    GaussianMechanism or LaplaceMechanism

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._diagonal import diagonal_mechanism
    >>> round(diagonal_mechanism(PureDP(1.0), n=100, d=4).sensitivity, 6)
    0.09
    """
    e = summation_error(n, n)
    if centered:
        l1 = d * (2.25 + 2.0 * _U) / n + 2.0 * d * 2.0 * e
        l2 = math.sqrt(d) * (2.0 + 2.0 * _U) / n + 2.0 * math.sqrt(2.0 * d) * e
    else:
        l1 = d * (1.0 + 2.0 * _U) / n + d * 2.0 * e
        l2 = math.sqrt(d) * ((1.0 + 2.0 * _U) / n + 2.0 * e)
    if isinstance(cost, ZCDP):
        return GaussianMechanism(sensitivity=l2, rho=cost.rho)
    return LaplaceMechanism(sensitivity=l1, epsilon=cost.epsilon)


def diagonal_entries(total, d, centered, n=None):
    """The plan of a diagonal fit: one release ``"diagonal"`` at the whole cost.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._diagonal import diagonal_entries
    >>> [r.name for r in diagonal_entries(PureDP(1.0), 3, True, 50)]
    ['diagonal']
    """

    def make(cost):
        return diagonal_mechanism(cost, n, d, centered)

    size = 2 * d if centered else d
    return [Release("diagonal", total, kind_of(total), make, size=size)]


#: The variance per box coordinate at which a fit's non-private sampling
#: error is predicted, for the warning of a fit far beyond it
#: (:func:`~dpgauss.releases._prediction.report_far`): a third of the
#: reference's, since real columns in a loose codebook box fill less of it
#: (Student t rows in their min/max box have 0.007; star98's and breast
#: cancer's medians are 0.04-0.06) and the private noise does not shrink with
#: the data's spread while the non-private error does.
SAMPLING_FILL = BOX_FILL / 3.0


def sampling_errors(n, d, fill=SAMPLING_FILL):
    """The non-private mean's l2 and covariance's Frobenius sampling errors in
    box units, on Gaussian rows with the reference covariance of
    :func:`reference_norm` at ``fill``: ``sqrt(d fill / n)`` and ``sqrt((tr(C)^2
    + ||C||_F^2) / n)`` (``Var(S_ij) = (C_ij^2 + C_ii C_jj) / n``)."""
    trace = d * fill
    return (
        math.sqrt(trace / n),
        math.hypot(trace, reference_norm(d, fill)) / math.sqrt(n),
    )


def with_sampling(prediction, n, d):
    """A box covariance prediction with its non-private Frobenius sampling
    error (:func:`sampling_errors`), for the far-from-non-private warning;
    unchanged without one or without n (pricing)."""
    if prediction is None or n is None:
        return prediction
    return replace(prediction, sampling=sampling_errors(n, d)[1])


def variance_sampling(n, fill=SAMPLING_FILL):
    """The sampling sd of a non-private variance in box units, on Gaussian rows
    with variance ``fill``: ``fill sqrt(2 / n)``. What an axes release's
    variance noise is set against for the far-from-non-private warning."""
    return fill * math.sqrt(2.0 / n)


def reference_norm(d, fill=BOX_FILL):
    """``||C||_F`` of the reference covariance (box units): variance ``fill``
    per coordinate, correlation :data:`REFERENCE_CORRELATION` between any two.
    The zero matrix's error on the reference data."""
    off = REFERENCE_CORRELATION * fill * math.sqrt(d * (d - 1.0))
    return math.hypot(math.sqrt(d) * fill, off)


def diagonal_error(mechanism, d, centered=True, fill=BOX_FILL):
    """Predicted Frobenius error (box units) of the diagonal release on the
    reference data (:func:`reference_norm`, means 0): the noise of the d second
    moments plus (centered) the extra variance the squared mean's noise adds,
    each entry's error capped by the projection onto [0, 1] at ``max(fill, 1 -
    fill)``, and the off-diagonal entries it leaves at 0. Public values only."""
    size = 2 * d if centered else d
    var = mechanism.variance(size)
    per = var + (2.0 * var * var if centered else 0.0)
    noise = math.sqrt(d) * min(math.sqrt(per), max(fill, 1.0 - fill))
    off = REFERENCE_CORRELATION * fill * math.sqrt(d * (d - 1.0))
    return math.hypot(noise, off)


def full_prediction(mechanisms, method, d):
    """Predicted Frobenius error of the full release in box units on the
    reference data, against the zero matrix's (None without a prediction)."""
    radius = math.sqrt(d)
    filled = filled_prediction(mechanisms, method, d, radius, trace=d * BOX_FILL)
    if filled is None:
        return None
    return Prediction(filled.error, reference_norm(d), "frobenius")


def diagonal_prediction(mechanism, d, centered=True):
    """:func:`diagonal_error` against the zero matrix's error."""
    error = diagonal_error(mechanism, d, centered)
    return Prediction(error, reference_norm(d), "frobenius")


def axes_prediction(mechanism, d, centered=True):
    """Whether the private-variance axes beat a random subspace: the noise sd
    of one released variance (box units) against 1, the largest variance a box
    coordinate can have (at or above it, no data in the box order their axes
    better than the noise does). Public values only."""
    size = 2 * d if centered else d
    var = mechanism.variance(size)
    per = var + (2.0 * var * var if centered else 0.0)
    return Prediction(math.sqrt(per), 1.0, "variance sd")


def release_diagonal(Z, plan, rng, centered=True):
    """Release the per-coordinate means and variances of box rows ``Z``.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Rows in ``[-1, 1]^d`` (:func:`~dpgauss.releases._box.box_offsets`).
    plan : ReleasePlan
        With the release ``"diagonal"``.
    rng : numpy.random.Generator
        The fit's noise stream.
    centered : bool, default=True
        Release the means and return variances about them; otherwise second
        moments about the box centre (means 0).

    Returns
    -------
    mean : ndarray of shape (d,)
        The released means, projected into [-1, 1] (zeros when not centered).
    variances : ndarray of shape (d,)
        ``s - m^2 + var(m noise)`` (unbiased for the noise of the squared mean),
        projected onto [0, 1] where every variance of a box coordinate lies,
        then shrunk towards :data:`PRIOR_MEAN` by the public noise.
    noise_sd : float
        The public standard deviation of one second moment's noise.
    """
    mean, squares, var, _ = _released_moments(Z, plan, rng, centered)
    if centered:
        variances = squares - mean * mean + min(var, 1.0)
        noise = var + 2.0 * var * var
    else:
        variances, noise = squares, var
    # Project onto [0, 1], where every variance of a box coordinate lies (never
    # farther from it), then shrink towards the prior mean by the public noise
    # (post-processing): a variance the noise swamps falls back to PRIOR_MEAN,
    # so the axes order by the box's widths there. Both keep it in [0, 1].
    variances = np.clip(variances, 0.0, 1.0)
    weight = PRIOR_VARIANCE / (PRIOR_VARIANCE + noise)
    variances = PRIOR_MEAN + weight * (variances - PRIOR_MEAN)
    return mean, np.clip(variances, 0.0, 1.0), math.sqrt(var)


def _diagonal_sums(chunk):
    """A chunk's sums of z and of z * z (box rows: entries in [-1, 1])."""
    return np.sum(chunk, axis=0), np.sum(chunk * chunk, axis=0)


def _released_moments(Z, plan, rng, centered):
    """The diagonal release itself: the noisy means (projected into [-1, 1];
    zeros when not centered), the noisy second moments, the public variance
    of one entry's noise and the mechanism. Everything after the noise is
    post-processing."""
    n, d = Z.shape
    # One chunked pass (the canonical sums: the same bits on every engine).
    sums, square_sums = over_chunks(Z, _diagonal_sums)
    squares = square_sums / n
    mech = plan.calibrate("diagonal")
    if centered:
        value = np.concatenate([sums / n, squares])
        size = 2 * d
    else:
        value, size = squares, d
    noisy = np.asarray(mech.randomise(value, rng), dtype=np.float64)
    noisy = np.nan_to_num(noisy, nan=0.0, posinf=1.0, neginf=-1.0)
    var = float(mech.variance(size))
    if centered:
        return np.clip(noisy[:d], -1.0, 1.0), noisy[d:], var, mech
    return np.zeros(d), noisy, var, mech


def cap_box_spectrum(values, vectors):
    """A box-unit spectrum whose covariance has no diagonal entry above 1.

    ``S C S`` with ``S_jj = min(1, C_jj^(-1/2))`` (PSD-preserving,
    post-processing): every variance of a box coordinate is at most 1, so the
    variances map back capped by ``h_j^2`` and the eigenvalues by the trace
    bound ``sum_j h_j^2``.

    Returns
    -------
    values : ndarray of shape (d,)
        Decreasing eigenvalues in ``[0, d]``.
    vectors : ndarray of shape (d, d)
        Orthonormal eigenvectors.
    """
    values = np.clip(np.nan_to_num(values, nan=0.0, posinf=0.0), 0.0, None)
    cov = (vectors * values) @ vectors.T
    diag = np.diag(cov)
    scale = np.where(diag > 1.0, 1.0 / np.sqrt(np.maximum(diag, 1.0)), 1.0)
    cov = cov * np.outer(scale, scale)
    out_values, out_vectors = eigh_descending(0.5 * (cov + cov.T))
    return np.clip(out_values, 0.0, float(len(values))), out_vectors


def to_data_units(values, vectors, half_width):
    """The spectrum of ``diag(h) V diag(values) V^T diag(h)`` (post-processing).

    The box-unit covariance is first capped (:func:`cap_box_spectrum`), so the
    variances come back at most ``h_j^2`` and the eigenvalues at most
    ``sum_j h_j^2``. Ties (a release with nothing above the noise is the zero
    matrix) are broken towards the widest coordinates: the eigenvectors are
    those of the matrix plus ``2^-30`` of its mean eigenvalue (or 1) times
    ``diag(h^2)``, and the values are the matrix's own Rayleigh quotients on
    them.

    Returns
    -------
    values : ndarray of shape (d,)
        Eigenvalues (Rayleigh quotients), finite and in ``[0, sum h^2]``.
    vectors : ndarray of shape (d, d)
        Orthonormal eigenvectors.
    """
    values, vectors = cap_box_spectrum(values, vectors)
    cov = (vectors * values) @ vectors.T
    cov = cov * np.outer(half_width, half_width)
    cov = 0.5 * (cov + cov.T)
    h2 = half_width * half_width
    cap = float(np.sum(h2))
    level = float(np.trace(cov)) / cap
    tie = 2.0**-30 * (level if level > 0 else 1.0)
    _, out_vectors = eigh_descending(cov + np.diag(tie * h2))
    rayleigh = np.einsum("ij,ij->j", out_vectors, cov @ out_vectors)
    return np.clip(rayleigh, 0.0, cap), out_vectors


def box_rows(X, box):
    """``X`` in box units, mapped chunk by chunk as the passes read it
    (:func:`~dpgauss.releases._box.boxed`: no n-long copy)."""
    center, half_width = box
    return boxed(X, center, half_width)


def entry_mechanisms(total, entries):
    """Every release of the plan ``entries`` make (the options of a choice
    included, :meth:`~dpgauss.accounting._plan.ReleasePlan.releases`) built at
    its worst public case, by name: what the check before the spend builds."""
    return {r.name: r.build() for r in ReleasePlan(total, entries).releases()}


def box_plan_entries(
    total,
    d,
    n,
    centered,
    full,
    predict_method="gauss",
    per_coordinate=None,
    per_coordinate_prediction=None,
):
    """The releases of a fit with a box that may adapt: ``full`` (the full
    covariance release in box units) or the diagonal release, whichever is
    predicted the smaller Frobenius error on the reference data
    (:func:`reference_norm`); the diagonal one also when the full release is
    predicted no better than the zero matrix. The full release is predicted by
    the plan of ``predict_method`` (``"auto"`` or ``"gauss"``; a ``"tail"``
    release is predicted as GaussCov at the box's radius, the worst radius its
    search can end at). A decision from public values only (n, d, the cost),
    made before the spend; both plans cost ``total``. ``per_coordinate`` and
    ``per_coordinate_prediction`` replace the diagonal release and its
    prediction by another per-coordinate option with the same signatures.
    """
    if n is None:  # priced only: the same total either way
        return full
    entries_of = per_coordinate or diagonal_entries
    predict_of = per_coordinate_prediction or diagonal_prediction
    radius = math.sqrt(d)
    predict = covariance_plan_entries(total, d, predict_method, centered, n, radius)
    full_error = full_prediction(entry_mechanisms(total, predict), predict_method, d)
    diagonal = entries_of(total, d, centered, n)
    built = entry_mechanisms(total, diagonal)
    diag = predict_of(built["diagonal"], d, centered)
    if full_error is not None and not full_error.loses:
        if full_error.error <= diag.error:
            return full
    return diagonal


def is_diagonal(plan):
    """Whether ``plan`` is the diagonal release's."""
    return plan is not None and any(r.name == "diagonal" for r in plan.releases())


def box_useless_message(owner, prediction, plan, n, d):
    """Why a fit with a box is predicted no better than its baseline (None
    when it is predicted better, or there is no prediction). Public values only."""
    if prediction is None or not prediction.loses:
        return None
    if prediction.metric == "variance sd":
        return (
            f"{owner}: with n={n}, d={d} and {plan.total}, the noise of each "
            f"released variance (sd {prediction.error:.3g} in box units) is at "
            "least the largest variance a coordinate of the box can have: the "
            "axes would be no better than a random subspace. Use a larger "
            "budget, more rows, or tighter bounds."
        )
    return (
        f"{owner}: with n={n}, d={d} and {plan.total}, neither the covariance "
        "release nor the per-coordinate (diagonal) release is predicted better "
        "than the zero matrix for rows spread uniformly over the bounds "
        f"(Frobenius error {prediction.error:.3g} against "
        f"{prediction.baseline:.3g}, in box units). Use a larger budget, more "
        "rows, or tighter bounds."
    )


class BoxMixin:
    """``bounds=(lower, upper)`` as the alternative to ``data_norm``.

    For estimators with the parameters ``data_norm`` and ``bounds``: exactly
    one of them is given. With a box the releases are made in box units, rows
    ``clip((x - c) / h, -1, 1)`` clipped at ``sqrt(d)`` (rounded up, so no row
    of the box is clipped), and mapped back by ``diag(h)`` (post-processing).
    """

    def _check_norm_or_box(self):
        owner = type(self).__name__
        if self.bounds is None:
            check_data_norm(self.data_norm, owner=owner)
            if self.method == "diagonal":
                raise ValueError(
                    f"{owner}: method='diagonal' needs bounds=(lower, upper): the "
                    "per-coordinate release is calibrated for rows in a box."
                )
            return
        if self.data_norm is not None:
            raise ValueError(
                f"{owner}: give either data_norm (a bound on the l2 norm of a "
                "row) or bounds (a box), not both."
            )
        check_bounds(self.bounds, owner=owner)

    def _box(self, d):
        """The public box's ``(c, h)`` for d features, or None."""
        return public_box(self.bounds, d, type(self).__name__)

    def _warn_at_edge(self, center, center_sd):
        """With a box, warn naming the features whose rows sit at its edge
        (:func:`~dpgauss.releases._box.warn_rows_at_edge`), from the released
        centre in box units and ``center_sd``, the public noise sd of one of
        its coordinates: post-processing of released and public values. A
        centre that is public (``center=False``: ``center_sd`` None) was not
        released from the rows and tells nothing about them. One call per
        fit."""
        if self.bounds is None or center_sd is None:
            return
        warn_rows_at_edge(type(self).__name__, center, center_sd, said="the fit")

    def _radius(self, d):
        """The clipping radius: ``data_norm``, or ``sqrt(d)`` in box units."""
        if self.bounds is None:
            return float(self.data_norm)
        return float(np.nextafter(math.sqrt(d), math.inf))
