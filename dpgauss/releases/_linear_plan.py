"""The linear regression's plan: its releases, their shares, and the
prediction before the spend (public values only).

The releases and the two stages are described in :mod:`dpgauss.releases.
_linear`; their mechanisms and sensitivity proofs in
:mod:`dpgauss.releases._linear_noise`.
"""

import math

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.releases._box import box_frame, check_bounds
from dpgauss.releases._diagonal import BOX_FILL
from dpgauss.releases._linear_noise import (
    lambda_mechanism,
    mean_mechanism,
    moments_mechanism,
)
from dpgauss.releases._prediction import Prediction

__all__ = [
    "EXPLAINED",
    "FIRST_SHARE",
    "LAMBDA_SHARE",
    "LOWER_Z",
    "MEAN_SHARE",
    "RANGE_NOISE",
    "RANGE_Z",
    "RIDGE_FLOOR",
    "SELECT_Z",
    "UPPER_Z",
    "adassp_ridge",
    "combined",
    "linear_entries",
    "linear_prediction",
    "refines",
    "regression_boxes",
]

#: Share of the fit's cost spent on the smallest eigenvalue (AdaSSP spends a
#: third; it only sets the ridge, and the moments carry the model).
LAMBDA_SHARE = 0.1
#: Share of the fit's cost spent on the mean of t, with an intercept (the
#: intercept's cross moment; the zero-coefficient model's only value).
MEAN_SHARE = 0.1
#: Share of the moments' cost spent on the first stage (the rest refines on
#: the residuals; a simulation at n = 30,000, d = 3 under zCDP found 0.3
#: best, with the coefficient error 0.068 / 0.024 / 0.015 at rho 0.001 /
#: 0.01 / 0.1 against 0.166 / 0.048 / 0.018 in one stage).
FIRST_SHARE = 0.3
#: Standard deviations below the released eigenvalue, and above the noise's
#: norm and the residuals' mean square, of the bounds set from them
#: (one-sided, about 0.13%).
LOWER_Z = 3.0
#: The residuals' range in standard deviations (clipping at 3 sd moves a
#: Gaussian residual's cross moments by under 1%).
RANGE_Z = 3.0
#: The share of the residuals' mean square the refinement's noise may cost
#: when the range is widened beyond RANGE_Z sds (the release's
#: ``_first_stage``).
RANGE_NOISE = 0.01
#: Standard deviations of its own noise added to the residuals' estimated
#: mean square before the range is set (the release's ``_first_stage``).
#: Small: an estimate low by one sd clips the residuals at about 2.5 of
#: their sds, while a wider range costs noise at every draw (0.5 against 3
#: on the synthetic settings: 0.12 against 0.29 at pure epsilon 1, n =
#: 1e4, d = 5; 0.059 against 0.088 at rho 0.001, n = 30,000, d = 3; the
#: real tables' R^2 unchanged within 0.01).
UPPER_Z = 0.5
#: The ridge's floor relative to the noise bound (so the solve is defined for
#: every draw; far below any ridge AdaSSP would choose).
RIDGE_FLOOR = 2.0**-20
#: Standard deviations of its own noise by which the slopes' estimated gain
#: over the zero-coefficient model must exceed zero (the release's
#: ``_slopes_pay``).
SELECT_Z = 1.0
#: The share of the reference target's variance its features explain (the
#: reference model of :func:`linear_prediction`).
EXPLAINED = 0.5


def regression_boxes(bounds, target_bounds, d, fit_intercept, owner):
    """The features' and the target's boxes ``(c, h)``, ``(c_y, h_y)``.

    With an intercept, the boxes as given (:func:`~dpgauss.releases._box.
    box_frame`); without one, widened to be symmetric about 0 (center 0,
    half-width ``max(|lower|, |upper|)``), so that a model through the origin
    in box units goes through it in the data's units. Public values only.

    Examples
    --------
    >>> from dpgauss.releases._linear_plan import regression_boxes
    >>> (c, h), (cy, hy) = regression_boxes((0.0, 4.0), (-1.0, 3.0), 1, True, "E")
    >>> float(c[0]), float(h[0]), float(cy), float(hy)
    (2.0, 2.0, 1.0, 2.0)
    >>> (c, h), (cy, hy) = regression_boxes((0.0, 4.0), (-1.0, 3.0), 1, False, "E")
    >>> float(c[0]), float(h[0]), float(cy), float(hy)
    (0.0, 4.0, 0.0, 3.0)
    """
    lower, upper = check_bounds(bounds, d, owner)
    low_y, high_y = check_bounds(target_bounds, 1, owner, "target_bounds")
    if fit_intercept:
        return box_frame(lower, upper), tuple(
            float(v[0]) for v in box_frame(low_y, high_y)
        )
    half = np.maximum(np.abs(lower), np.abs(upper))
    half_y = float(max(abs(low_y[0]), abs(high_y[0])))
    return (np.zeros(d), half), (0.0, half_y)


def linear_entries(total, n, d, fit_intercept):
    """The plan's releases: ``lambda_min`` at :data:`LAMBDA_SHARE` of
    ``total``, with an intercept ``target_mean`` at :data:`MEAN_SHARE`, and
    ``moments`` and ``refine`` sharing the rest at :data:`FIRST_SHARE`
    (their factories take the pass's chunk count, ``n_partials``, whose
    worst case is n).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._linear_plan import linear_entries
    >>> entries = linear_entries(ZCDP(1.0), 100, 3, True)
    >>> [r.name for r in entries]
    ['lambda_min', 'moments', 'refine', 'target_mean']
    >>> [round(r.cost.rho, 6) for r in entries]
    [0.1, 0.24, 0.56, 0.1]
    """
    mean_share = MEAN_SHARE if fit_intercept else 0.0
    rest = 1.0 - LAMBDA_SHARE - mean_share
    shares = [LAMBDA_SHARE, rest * FIRST_SHARE, rest * (1.0 - FIRST_SHARE)]
    if fit_intercept:
        shares.append(mean_share)
    costs = split_cost(total, shares)
    q = d + (2 if fit_intercept else 1)

    def make_lambda(cost, *, n_partials=n):
        return lambda_mechanism(cost, n, d, fit_intercept, n_partials)

    def make_moments(cost, *, n_partials=n):
        return moments_mechanism(cost, n, d, fit_intercept, n_partials)

    def make_mean(cost, *, n_partials=n):
        return mean_mechanism(cost, n, d, fit_intercept, n_partials)

    kind = kind_of(total)
    entries = [
        Release("lambda_min", costs[0], kind, make_lambda),
        Release("moments", costs[1], kind, make_moments, size=q),
        Release("refine", costs[2], kind, make_moments, size=q),
    ]
    if fit_intercept:
        entries.append(Release("target_mean", costs[3], kind, make_mean))
    return entries


def adassp_ridge(p, lower, var):
    """AdaSSP's ridge ``(ridge, bound)`` for a p x p Gram matrix released with
    entry noise variance ``var`` and a lower confidence bound ``lower`` on
    its smallest eigenvalue: the noise's spectral-norm bound ``B = (2
    sqrt(p) + LOWER_Z) sqrt(var)`` (a symmetric random matrix with
    independent entries concentrates at ``2 sqrt(p) sqrt(var)``) and ``max(B
    - lower, RIDGE_FLOOR B)`` (the floor keeps every solve defined). Public
    and released values only.

    Examples
    --------
    >>> from dpgauss.releases._linear_plan import adassp_ridge
    >>> adassp_ridge(4, 0.0, 1.0)
    (7.0, 7.0)
    """
    bound = (2.0 * math.sqrt(p) + LOWER_Z) * math.sqrt(var)
    return max(bound - lower, RIDGE_FLOOR * bound), bound


def combined(a, b):
    """The variance ``a b / (a + b)`` of the inverse-variance average of two
    estimates of variances ``a, b > 0``, as ``min(a, b) (max(a, b) / (a +
    b))``: the ratio lies in [1/2, 1], so nothing underflows where the
    product would (variances near 1e-200 at the largest budgets the checks
    accept; their product was 0, the ridge and the weights with it).

    Examples
    --------
    >>> from dpgauss.releases._linear_plan import combined
    >>> combined(1.0, 3.0), combined(1e-200, 1e-200)
    (0.75, 5e-201)
    """
    return min(a, b) * (max(a, b) / (a + b))


def refines(width, b2, var, var_next):
    """Whether a refinement at range ``width`` about a centre of squared
    norm ``b2`` has less noise on the normal equations than the two
    releases averaged as one (the release's ``_first_stage``), and its
    averaged cross moment's variance ``v_r``. Public values only."""
    var_g = combined(var, var_next)
    var_r = 1.0 / (1.0 / var_next + width * width / (var + var_g * b2))
    return width * width * var_r < var_g * (1.0 + b2), var_r


def _excess(v, d, fit_intercept, bias, noise, ridge):
    """The ridged solve's excess risk over least squares on reference rows
    (:func:`linear_prediction`): per eigenvalue g of the Gram matrix
    (d at v, the intercept's at s^2 = 1), ``g (ridge^2 b_g^2 + noise) / (g +
    ridge)^2`` for the part ``b_g`` of the solved-for vector along it
    (``bias`` spread evenly over the slopes, 0 on the centred intercept) and
    noise of variance ``noise`` on the normal equations; with no ridge,
    ``noise tr(G^-1)``, with a large one, the explained variance."""
    out = d * v * (ridge * ridge * bias / d + noise) / (v + ridge) ** 2
    if fit_intercept:
        out += noise / (1.0 + ridge) ** 2
    return out


def linear_prediction(mechanisms, d, fit_intercept):
    """The fit's predicted mean squared error against the zero-coefficient
    model's, in box units squared, on reference rows (public values only).

    Reference rows: features in box units with covariance ``v I``, ``v =
    BOX_FILL`` (a tenth of the box's largest variance, as real columns in
    their codebook box have, :data:`~dpgauss.releases._diagonal.BOX_FILL`),
    centred in the box, and a target of variance v of which the features
    explain :data:`EXPLAINED` (``||beta||^2 = EXPLAINED`` in box units). The
    baseline is the zero-coefficient model at the target's mean: mean
    squared error v (R^2 = 0). The fit's is the least-squares fit's ``(1 -
    EXPLAINED) v`` plus the excess of a ridged solve (``_excess``),
    followed through the two stages as the fit follows them on released
    values (module docstring): the ridge from the reference's smallest
    eigenvalue v less :data:`LOWER_Z` of its release's sd and the noise
    bound; the first stage's excess (noise ``sd^2 (1 + ||beta||^2)`` on the
    normal equations for one release of entry sd ``sd``) decides its centre,
    its residuals' bound U the range c, and the refinement's noise is ``c^2
    v_r + v_G ||beta - beta_1||^2`` with ridge bias on ``beta - beta_1`` only.
    The selector's margin is added: slopes that win by less are dropped for
    the intercept alone, which then loses to the baseline (the mean at the
    whole budget). Measured where it decides (sweep of ``bench_linear.py``,
    fitted anyway): n = 1,000, d = 5 at rho 0.01 or pure epsilon 1 and n =
    10,000 at epsilon 0.1 ended at the intercept (R^2 -0.06 to 0, predicted
    gain 0.007 against a margin 0.015: refused); n = 100,000, d = 50 at rho
    0.001 reached R^2 0.80 (gain 0.013, margin 0.006: kept).

    Parameters
    ----------
    mechanisms : dict
        The plan's mechanisms at their worst public case, by release name
        (``lambda_min``, ``moments`` and ``refine`` are read).
    d : int
        Features.
    fit_intercept : bool
        Whether the model has an intercept.

    Returns
    -------
    Prediction
        ``error`` and ``baseline`` in squared box units (metric ``"mse"``).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._linear_plan import linear_entries, linear_prediction
    >>> mechs = {r.name: r.build() for r in linear_entries(ZCDP(0.5), 1000, 5, True)}
    >>> p = linear_prediction(mechs, 5, True)
    >>> p.loses, round(p.baseline, 2)
    (False, 0.1)
    """
    v, explained = BOX_FILL, EXPLAINED
    p = d + (1 if fit_intercept else 0)
    square1, var1 = (float(x) for x in mechanisms["moments"].entry_variances(p + 1))
    var2 = float(mechanisms["refine"].entry_variances(p + 1)[1])
    var_g = combined(var1, var2)
    lower = max(v - LOWER_Z * float(mechanisms["lambda_min"].sd()), 0.0)

    def ridge(var):
        return adassp_ridge(p, lower, var)[0]

    args = (v, d, fit_intercept)
    # The first stage: its fit, or the intercept alone, whichever leaves the
    # smaller residuals; the fit's squared coefficient error is its excess
    # over v.
    noise1 = var1 * (1.0 + explained)
    first = _excess(*args, explained, noise1, ridge(var1))
    upper, delta, b2 = v, explained, 0.0
    if first < explained * v:
        upper, delta, b2 = (1.0 - explained) * v + first, first / v, explained
    upper += UPPER_Z * math.sqrt(square1 + var1 * (4.0 + 2.0 * b2) * b2)
    width = RANGE_Z * math.sqrt(upper)
    pays, var_r = refines(width, b2, var1, var2)
    if pays:
        noise = width * width * var_r + var_g * delta
    else:  # the second stage releases t again: one release at both costs
        delta, noise = explained, var_g * (1.0 + explained)
    lam = ridge(var_g)
    excess = _excess(*args, delta, noise, lam)
    # The fit keeps its slopes only when they are estimated to win by
    # SELECT_Z times the estimate's noise, 2 ||beta_z|| sqrt(noise) for the
    # ridge-shrunk slopes (||beta_z||^2 = EXPLAINED (v / (v + lam))^2);
    # otherwise it ends at the intercept alone, paid with a tenth of the
    # budget, which loses to the baseline's mean at the whole budget. So a
    # predicted win smaller than that margin is a predicted loss.
    slopes = explained * (v / (v + lam)) ** 2
    margin = SELECT_Z * 2.0 * math.sqrt(slopes * noise)
    return Prediction((1.0 - explained) * v + excess + margin, v, "mse")
