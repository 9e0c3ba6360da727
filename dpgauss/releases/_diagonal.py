"""Covariance releases inside a public box: the diagonal release and the map back.

A helper module, not an estimator module. With a public box
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

import numpy as np

from dpgauss.accounting import ZCDP
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.releases._box import box_frame, box_offsets, check_bounds
from dpgauss.releases._covariance import filled_prediction
from dpgauss.utils._linalg import eigh_descending
from dpgauss.utils._sums import summation_error
from dpgauss.utils.validation import check_data_norm

__all__ = [
    "BOX_FILL",
    "BoxMixin",
    "box_plan_entries",
    "box_rows",
    "box_useless_message",
    "diagonal_entries",
    "diagonal_error",
    "diagonal_mechanism",
    "release_diagonal",
    "to_data_units",
]

_U = 2.0**-53

#: The variance of one coordinate, in box units, of the reference data the
#: predictions before the spend take: rows spread uniformly over the box (a
#: uniform variable on [-1, 1] has variance 1/3).
BOX_FILL = 1.0 / 3.0


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


def diagonal_error(mechanism, d, centered=True, fill=BOX_FILL):
    """Predicted Frobenius error (box units) of the diagonal release's variances
    for reference data with variance ``fill`` and mean 0 per coordinate: the noise
    of the d second moments, plus (centered) the extra variance the squared mean's
    noise adds, each entry's error capped by the projection onto [0, 1] at
    ``max(fill, 1 - fill)``. Public values only."""
    size = 2 * d if centered else d
    var = mechanism.variance(size)
    per = var + (2.0 * var * var if centered else 0.0)
    return math.sqrt(d) * min(math.sqrt(per), max(fill, 1.0 - fill))


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
        projected onto [0, 1] where every variance of a box coordinate lies.
    noise_sd : float
        The public standard deviation of one second moment's noise.
    """
    n, d = Z.shape
    squares = np.sum(Z * Z, axis=0) / n
    mech = plan.calibrate("diagonal")
    if centered:
        value = np.concatenate([np.sum(Z, axis=0) / n, squares])
        size = 2 * d
    else:
        value, size = squares, d
    noisy = np.asarray(mech.randomise(value, rng), dtype=np.float64)
    noisy = np.nan_to_num(noisy, nan=0.0, posinf=1.0, neginf=-1.0)
    var = float(mech.variance(size))
    if centered:
        mean = np.clip(noisy[:d], -1.0, 1.0)
        variances = noisy[d:] - mean * mean + min(var, 1.0)
    else:
        mean, variances = np.zeros(d), noisy
    return mean, np.clip(variances, 0.0, 1.0), math.sqrt(var)


def to_data_units(values, vectors, half_width):
    """The spectrum of ``diag(h) V diag(values) V^T diag(h)`` (post-processing).

    The box-unit covariance is first scaled so that no diagonal entry exceeds
    1 (``S C S`` with ``S_jj = min(1, C_jj^(-1/2))``, PSD-preserving): every
    variance of a box coordinate is at most 1, so the variances come back
    capped by ``h_j^2`` and the eigenvalues by ``sum_j h_j^2``.

    Returns
    -------
    values : ndarray of shape (d,)
        Decreasing eigenvalues, finite and >= 0.
    vectors : ndarray of shape (d, d)
        Orthonormal eigenvectors.
    """
    values = np.clip(np.nan_to_num(values, nan=0.0, posinf=0.0), 0.0, None)
    cov = (vectors * values) @ vectors.T
    diag = np.diag(cov)
    scale = np.where(diag > 1.0, 1.0 / np.sqrt(np.maximum(diag, 1.0)), 1.0)
    cov = cov * np.outer(scale * half_width, scale * half_width)
    out_values, out_vectors = eigh_descending(0.5 * (cov + cov.T))
    cap = float(np.sum(half_width * half_width))
    return np.clip(out_values, 0.0, cap), out_vectors


def box_rows(X, box):
    """``X`` in box units (a new array): :func:`~dpgauss.releases._box.box_offsets`."""
    center, half_width = box
    return box_offsets(np.asarray(X), center, half_width)


def entry_mechanisms(entries):
    """Every planned release's mechanism at its worst public case, by name
    (the options of a choice included): what the check before the spend builds."""
    built = {}
    for entry in entries:
        options = getattr(entry, "options", None)
        releases = [r for o in options.values() for r in o] if options else [entry]
        for release in releases:
            built[release.name] = release.build()
    return built


def box_plan_entries(total, d, n, centered, full, full_method):
    """The releases of a fit with a box whose method is ``"auto"``: ``full`` (the
    full covariance release in box units) or the diagonal release, whichever is
    predicted the smaller Frobenius error on the reference data (rows spread
    uniformly over the box, :data:`BOX_FILL`). A decision from public values
    only (n, d, the cost), made before the spend; both plans cost ``total``.
    """
    if n is None:  # priced only: the same total either way
        return full
    radius = math.sqrt(d)
    full_error = filled_prediction(
        entry_mechanisms(full), full_method, d, radius, trace=d * BOX_FILL
    )
    diagonal = diagonal_entries(total, d, centered, n)
    diag_error = diagonal_error(entry_mechanisms(diagonal)["diagonal"], d, centered)
    if full_error is not None and full_error.error <= diag_error:
        return full
    return diagonal


def is_diagonal(plan):
    """Whether ``plan`` is the diagonal release's."""
    return any(r.name == "diagonal" for r in plan.releases())


def box_useless_message(owner, prediction, plan, n, d):
    """Why a fit with a box is predicted no better than the zero matrix (None
    when it is predicted better, or there is no prediction). Public values only."""
    if prediction is None or not prediction.loses:
        return None
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
        if self.bounds is None:
            return None
        lower, upper = check_bounds(self.bounds, d, type(self).__name__)
        return box_frame(lower, upper)

    def _radius(self, d):
        """The clipping radius: ``data_norm``, or ``sqrt(d)`` in box units."""
        if self.bounds is None:
            return float(self.data_norm)
        return float(np.nextafter(math.sqrt(d), math.inf))
