"""Linear regression from the second moment of box rows (AdaSSP in box units).

A helper module of the release layer, for the linear model (issue 31; the
estimator is not written yet). Sufficient statistics perturbation with an
adaptive ridge (Wang 2018, "Revisiting differentially private linear
regression", Algorithm 2, AdaSSP), on the library's box rows and its
second-moment release.

**Rows.** The public box ``bounds`` of the features and ``target_bounds`` of
y map each row to box units, a function of the row and public values alone:

* with an intercept, ``z = clip((x - c) / h, -1, 1)`` and ``t = clip((y -
  c_y) / h_y, -1, 1)`` (:func:`~dpgauss.releases._box.box_offsets`, the
  boxes' centers and half-widths), and the row ``a = (z, s, t)`` carries the
  public constant ``s = INTERCEPT_SCALE`` for the intercept;
* without one, the boxes are first widened to be symmetric about 0
  (``h = max(|lower|, |upper|)``, ``c = 0``), so that a model through the
  origin in box units is one through the origin in the data's units, and
  ``a = (z, t)``.

Write ``f`` for the features' part (``(z, s)`` or ``z``, p entries). Every
entry of z and t lies in [-1, 1], so ``||f||^2 <= R_F^2 = d + s^2`` and
``||a||^2 <= R^2 = R_F^2 + 1``.

**Releases** (each a proven mechanism of :mod:`dpgauss.mechanisms._releases`,
at its share of the fit's cost; neighbouring datasets replace one row, n
public):

1. ``lambda_min``: the smallest eigenvalue of ``G = (1/n) sum f f^T``.
   Replacing a row changes G by ``(f' f'^T - f f^T) / n``, whose eigenvalues
   lie in ``[-||f||^2, ||f'||^2] / n``; by Weyl's inequality every eigenvalue
   of G, the smallest included, moves by at most ``R_F^2 / n``: l2 and l1
   sensitivity ``R_F^2 / n``, plus the floating-point terms of
   :func:`~dpgauss.mechanisms._releases.eigenvalue_mechanism` (the computed
   sums within ``e R^2`` of the exact ones, the computed eigenvalue within
   ``10 p u sqrt(p)`` of the computed matrix's). Gaussian noise under zCDP,
   Laplace under pure DP.
2. ``moments``: ``M = (1/n) sum a a^T`` of the rows clipped to the ball of
   radius R about 0 (:func:`~dpgauss.utils._sums.clip_rows`, summed on the
   canonical chunks; it scales a box row at a corner by at most ``1 - (q + 8)
   u``, so every entry stays within its bound and the constant's square
   moves by about 1e-15 / n, inside the rounding terms, and is not released
   under pure DP),
   released by :func:`~dpgauss.mechanisms._releases.second_moment_mechanism`:
   ``||a a^T - b b^T||_F^2 = ||a||^4 + ||b||^4 - 2 (a.b)^2 <= 2 R^4``, so
   Frobenius sensitivity ``sqrt(2) R^2 / n`` (zCDP, symmetric Gaussian noise),
   the function's own proof. Under pure DP (symmetric Laplace noise) the box
   does better than the ball's upper-triangle l1 ``min(q + 1, sqrt(2) q) R^2
   / n`` (q = p + 1 entries a row), as for the cube rows of
   :mod:`~dpgauss.releases._cube`: with ``w`` the new row and ``A = w w^T -
   a a^T = ((w - a)(w + a)^T + (w + a)(w - a)^T) / 2``, the sum of all
   ``|A_jl|`` is at most ``||w - a||_1 ||w + a||_1``. Per coordinate of z or
   t, ``|w_j - a_j| + |w_j + a_j| = 2 max(|w_j|, |a_j|) <= 2``; the
   constant's adds 0 to the first norm and ``2 s`` to the second. So the
   first norm is at most ``2 (d + 1)`` and the two sum to at most ``2 (d + 1
   + s)``: their product is at most ``(d + 1 + s)^2`` (``s <= d + 1``). The
   diagonal's entries move by at most 1 (z and t, squares in [0, 1]) or 0
   (the constant's), and the upper triangle's l1 is half the sum of all
   ``|A_jl|`` plus half the diagonal's: **at most ((d + 1 + s)^2 + d + 1) /
   2** over n (without an intercept, s = 0: ``((d + 1)^2 + d + 1) / 2``),
   about half the ball's. Better still, each entry moves by at most 2 /
   n (``|w_j w_l - a_j a_l| <= 2`` for entries in [-1, 1], the constant's
   ``s |w_j - a_j| <= 2 s = 2``) or 1 / n (the squares of z and t), and the
   constant's own square not at all: with the squares doubled, the upper
   triangle less that one entry is a vector of k = q (q + 1) / 2 - 1
   entries of l-infinity sensitivity 2 / n, released by the cube's K-norm
   mechanism (:class:`~dpgauss.mechanisms._linf.LInfinityMechanism`,
   per-entry variance ``(k + 1)(k + 2) / 3 (2 / (n epsilon))^2``, 0.72 of the
   Laplace's at d = 5, and a quarter of it on the squares), the constant's
   square set to its public value ``s^2`` (:class:`CubeMomentsMechanism`;
   whichever of the two has the smaller noise, :func:`moments_mechanism`).

The two releases read one pass over the rows (G is the top-left block of the
exact second moment, formed before either noise is drawn); they compose:
total cost the sum of the two shares (:data:`LAMBDA_SHARE` to the first).

**Post-processing** (released values and public ones only, so free):

* a lower confidence bound ``l = max(lambda~ - Z sd, 0)`` on the smallest
  eigenvalue, ``sd`` the release's public noise sd, ``Z = LOWER_Z``;
* a public bound ``B`` on the spectral norm of the moments' noise on G:
  ``(2 sqrt(p) + Z) sd_off`` for entries of sd ``sd_off`` (a symmetric
  random matrix with independent entries: its norm concentrates at ``2
  sqrt(p) sd``);
* AdaSSP's ridge ``lam = max(B - l, 0)`` (plus a floor of ``B / 2^20`` so the
  solve below is defined for every draw), then the released G's spectrum
  raised to ``max(w, 0) + lam`` and ``beta = G~^-1 m~`` with ``m~`` the
  released ``(1/n) sum f t``: positive definite by construction, so every
  noise draw gives finite coefficients;
* coefficients in the data's units: ``t ~ beta_z . z + beta_s s`` is
  ``y ~ c_y + h_y (beta_z . (x - c) / h + beta_s s)``, so ``coef = h_y beta_z
  / h`` and ``intercept = c_y + h_y (beta_s s - sum_j beta_j c_j / h_j)``.

Nothing here draws noise from anything but the fit's generator, and which
rows are read, and in which order, never depends on their values.
"""

import math
from dataclasses import dataclass

import numpy as np

from dpgauss.accounting import ZCDP, split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._linf import MAX_SIZE, LInfinityMechanism
from dpgauss.mechanisms._releases import second_moment_mechanism
from dpgauss.mechanisms._symmetric import SymmetricLaplaceMechanism
from dpgauss.releases._box import box_frame, box_offsets, check_bounds
from dpgauss.releases._diagonal import BOX_FILL
from dpgauss.releases._prediction import Prediction
from dpgauss.utils._sums import (
    _U,
    clip_rows,
    n_partial_sums,
    over_chunks,
    summation_error,
)

__all__ = [
    "INTERCEPT_SCALE",
    "LAMBDA_SHARE",
    "LOWER_Z",
    "CubeMomentsMechanism",
    "LinearRelease",
    "box_l1",
    "lambda_mechanism",
    "linear_entries",
    "linear_prediction",
    "moments_mechanism",
    "regression_boxes",
    "release_linear",
]

#: The public constant column of the intercept, in box units (a box column's
#: largest value: the intercept's noise is then that of a coefficient).
INTERCEPT_SCALE = 1.0
#: Share of the fit's cost spent on the smallest eigenvalue (AdaSSP spends a
#: third; it only sets the ridge, and the moments carry the model).
LAMBDA_SHARE = 0.1
#: Standard deviations below the released eigenvalue, and above the noise's
#: norm, of the bounds the ridge is set from (one-sided, about 0.13%).
LOWER_Z = 3.0
#: The ridge's floor relative to the noise bound (so the solve is defined for
#: every draw; far below any ridge AdaSSP would choose).
RIDGE_FLOOR = 2.0**-20


def regression_boxes(bounds, target_bounds, d, fit_intercept, owner):
    """The features' and the target's boxes ``(c, h)``, ``(c_y, h_y)``.

    With an intercept, the boxes as given (:func:`~dpgauss.releases._box.
    box_frame`); without one, widened to be symmetric about 0 (center 0,
    half-width ``max(|lower|, |upper|)``), so that a model through the origin
    in box units goes through it in the data's units. Public values only.

    Examples
    --------
    >>> from dpgauss.releases._linear import regression_boxes
    >>> (c, h), (cy, hy) = regression_boxes((0.0, 4.0), (-1.0, 3.0), 1, True, "E")
    >>> float(c[0]), float(h[0]), float(cy), float(hy)
    (2.0, 2.0, 1.0, 2.0)
    >>> (c, h), (cy, hy) = regression_boxes((0.0, 4.0), (-1.0, 3.0), 1, False, "E")
    >>> float(c[0]), float(h[0]), float(cy), float(hy)
    (0.0, 4.0, 0.0, 3.0)
    """
    lower, upper = check_bounds(bounds, d, owner)
    low_y, high_y = check_bounds(target_bounds, 1, owner)
    if fit_intercept:
        return box_frame(lower, upper), tuple(
            float(v[0]) for v in box_frame(low_y, high_y)
        )
    half = np.maximum(np.abs(lower), np.abs(upper))
    half_y = float(max(abs(low_y[0]), abs(high_y[0])))
    return (np.zeros(d), half), (0.0, half_y)


def _radii(d, fit_intercept):
    """``(R_F^2, R^2)``: the squared norms of a row's features and of the
    whole augmented row (module docstring)."""
    features = d + (INTERCEPT_SCALE * INTERCEPT_SCALE if fit_intercept else 0.0)
    return features, features + 1.0


def lambda_mechanism(cost, n, d, fit_intercept, n_partials=None):
    """The mechanism of the ``lambda_min`` release (module docstring, 1).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._linear import lambda_mechanism
    >>> mech = lambda_mechanism(ZCDP(0.5), n=1000, d=4, fit_intercept=True)
    >>> round(mech.sensitivity * 1000, 6)  # R_F^2 / n = 5 / 1000
    5.0
    """
    features, whole = _radii(d, fit_intercept)
    p = d + (1 if fit_intercept else 0)
    rounding = 2.0 * (summation_error(n, n_partials) + 10.0 * p * _U * math.sqrt(p))
    sensitivity = features / n + rounding * whole
    if isinstance(cost, ZCDP):
        return GaussianMechanism(sensitivity=sensitivity, rho=cost.rho)
    return LaplaceMechanism(sensitivity=sensitivity, epsilon=cost.epsilon)


class CubeMomentsMechanism:
    """Pure-DP noise for the augmented second moment of box rows: the cube's
    K-norm mechanism on its upper triangle, the squares doubled first and the
    constant's square left out (module docstring, 2).

    Parameters
    ----------
    sensitivity : float
        D: the largest change of any entry of the doubled upper triangle
        (``2 / n`` plus the rounding).
    epsilon : float
        The pure DP cost.
    q : int
        The matrix's dimension.
    constant : int or None
        The index of the intercept's constant column (its square is public).
    value : float, default=1.0
        The constant's square, ``s^2``.
    """

    def __init__(self, *, sensitivity, epsilon, q, constant, value=1.0):
        rows, cols = np.triu_indices(q)
        keep = np.ones(rows.size, dtype=bool)
        if constant is not None:
            keep &= ~((rows == constant) & (cols == constant))
        self.rows, self.cols = rows[keep], cols[keep]
        self.weights = np.where(self.rows == self.cols, 2.0, 1.0)
        self.q, self.constant, self.value = int(q), constant, float(value)
        self.size = int(self.rows.size)
        self.inner = LInfinityMechanism(
            sensitivity=sensitivity, epsilon=epsilon, size=self.size
        )
        self.sensitivity, self.cost = self.inner.sensitivity, self.inner.cost

    @property
    def draws(self):
        """Releases drawn (the inner mechanism's)."""
        return self.inner.draws

    @property
    def scale(self):
        """The inner mechanism's noise scale."""
        return self.inner.scale

    def parts(self):
        """The inner mechanism at its size, for the check before the spend."""
        return [(self.inner, self.size, True)]

    def randomise(self, value, random_state=None):
        """The released symmetric matrix: noise on the doubled upper
        triangle, then halved back, mirrored, and the constant's square set to
        its public value (post-processing)."""
        M = np.asarray(value, dtype=np.float64)
        vector = M[self.rows, self.cols] * self.weights
        noisy = np.asarray(self.inner.randomise(vector, random_state)) / self.weights
        out = np.zeros((self.q, self.q))
        out[self.rows, self.cols] = noisy
        out[self.cols, self.rows] = noisy
        if self.constant is not None:
            out[self.constant, self.constant] = self.value
        return out

    def entry_variances(self, size=None):
        """Variances of one noisy square and one noisy off-diagonal entry."""
        off = float(self.inner.sd(self.size)) ** 2
        return off / 4.0, off


def box_l1(d, fit_intercept):
    """The upper triangle's l1 sensitivity times n for box rows (module
    docstring, 2): ``((d + 1 + s)^2 + d + 1) / 2``, s = 0 without an
    intercept.

    Examples
    --------
    >>> from dpgauss.releases._linear import box_l1
    >>> box_l1(5, True), box_l1(5, False)
    (27.5, 21.0)
    """
    s = INTERCEPT_SCALE if fit_intercept else 0.0
    return ((d + 1.0 + s) ** 2 + d + 1.0) / 2.0


def moments_mechanism(cost, n, d, fit_intercept, n_partials=None):
    """The mechanism of the ``moments`` release (module docstring, 2): the
    ball's under zCDP, the box's tighter upper-triangle l1 under pure DP,
    each with the rounding terms of
    :func:`~dpgauss.mechanisms._releases.second_moment_mechanism`.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.releases._linear import moments_mechanism
    >>> mech = moments_mechanism(PureDP(1.0), 1000, 5, True)
    >>> type(mech).__name__, mech.size, round(mech.sensitivity * 1000, 6)
    ('CubeMomentsMechanism', 27, 2.0)
    """
    q = d + (2 if fit_intercept else 1)
    whole = _radii(d, fit_intercept)[1]
    if isinstance(cost, ZCDP):
        return second_moment_mechanism(cost, n, q, math.sqrt(whole), n_partials)
    s = INTERCEPT_SCALE if fit_intercept else 0.0
    upper = q * (q + 1) / 2.0
    rounding = 2.0 * summation_error(n, n_partials) * whole
    box = box_l1(d, fit_intercept)
    ball = min(q + 1.0, math.sqrt(2.0) * q) * whole
    l1 = min(box, ball) / n + math.sqrt(upper) * rounding
    laplace = SymmetricLaplaceMechanism(sensitivity=l1, epsilon=cost.epsilon)
    constant = d if fit_intercept else None
    # Each computed entry is within e R^2 of its exact value for each data
    # set; the doubled squares' within twice that.
    linf = 2.0 / n + 2.0 * rounding
    if q * (q + 1) // 2 > MAX_SIZE:  # beyond the K-norm sampler's sizes
        return laplace
    cube = CubeMomentsMechanism(
        sensitivity=linf, epsilon=cost.epsilon, q=q, constant=constant, value=s * s
    )
    if cube.entry_variances()[1] < laplace.entry_variances(q)[1]:
        return cube
    return laplace


def linear_entries(total, n, d, fit_intercept):
    """The plan's two releases: ``lambda_min`` at :data:`LAMBDA_SHARE` of
    ``total``, ``moments`` at the rest (their factories take the pass's chunk
    count, ``n_partials``, whose worst case is n).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._linear import linear_entries
    >>> [(r.name, r.cost) for r in linear_entries(ZCDP(1.0), 100, 3, True)]
    [('lambda_min', ZCDP(rho=0.1)), ('moments', ZCDP(rho=0.9))]
    """
    low, rest = split_cost(total, [LAMBDA_SHARE, 1.0 - LAMBDA_SHARE])
    q = d + (2 if fit_intercept else 1)

    def make_lambda(cost, *, n_partials=n):
        return lambda_mechanism(cost, n, d, fit_intercept, n_partials)

    def make_moments(cost, *, n_partials=n):
        return moments_mechanism(cost, n, d, fit_intercept, n_partials)

    return [
        Release("lambda_min", low, kind_of(total), make_lambda),
        Release("moments", rest, kind_of(total), make_moments, size=q),
    ]


#: Standard deviations of its own noise by which the slopes' estimated gain
#: over the zero-coefficient model must exceed zero (:func:`_slopes_pay`).
SELECT_Z = 1.0

#: The share of the reference target's variance its features explain (the
#: reference model of :func:`linear_prediction`).
EXPLAINED = 0.5


def linear_prediction(moments, d, fit_intercept):
    """The fit's predicted mean squared error against the zero-coefficient
    model's, in box units squared, on reference rows (public values only).

    Reference rows: features in box units with covariance ``BOX_FILL I`` (a
    tenth of the box's largest variance, as real columns in their codebook
    box have, :data:`~dpgauss.releases._diagonal.BOX_FILL`), centred in the
    box, and a target of variance ``v = BOX_FILL`` of which the features
    explain :data:`EXPLAINED` (``||beta||^2 = EXPLAINED``). The baseline is
    the zero-coefficient model at the target's mean: mean squared error v
    (R^2 = 0). The fit's is the least-squares fit's ``(1 - EXPLAINED) v`` plus
    the noise's: to first order the coefficients move by ``G^-1 (e - E
    beta)`` for noise e on the cross moments and E on the Gram matrix G =
    ``diag(v I, s^2)``, each entry of sd ``sd_off``, so the predictions' error
    is ``sd_off^2 (1 + ||beta||^2) (d / v + 1)`` (the last term the
    intercept's, with one). The ridge, where the noise is large, trades this
    variance for bias; the first-order term is the prediction either way.

    Parameters
    ----------
    moments : mechanism
        The ``moments`` release's mechanism at its worst public case.
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
    >>> from dpgauss.releases._linear import linear_entries, linear_prediction
    >>> mech = linear_entries(ZCDP(0.5), 1000, 5, True)[1].build()
    >>> p = linear_prediction(mech, 5, True)
    >>> p.loses, round(p.baseline, 2)
    (False, 0.1)
    """
    v = BOX_FILL
    q = d + (2 if fit_intercept else 1)
    off = float(moments.entry_variances(q)[1])
    noise = off * (1.0 + EXPLAINED) * (d / v + (1.0 if fit_intercept else 0.0))
    return Prediction((1.0 - EXPLAINED) * v + noise, v, "mse")


def _chunk_moments(chunk, targets, center, half, c_y, h_y, scale, radius):
    """A chunk's sums of ``a`` and ``a a^T`` for its augmented rows ``a = (z,
    s, t)`` (``(z, t)`` when ``scale`` is None), each from its own row, its
    target and public values, clipped to ``radius`` about 0 as
    :func:`~dpgauss.utils._sums.clipped_sums` clips (a no-op on box rows, kept
    so the bound holds as computed)."""
    chunk = np.asarray(chunk)
    n, d = chunk.shape
    width = d + (2 if scale is not None else 1)
    rows = np.empty((n, width))
    box_offsets(chunk, center, half, out=rows[:, :d])
    targets = np.asarray(targets, dtype=np.float64).reshape(n, 1)
    box_offsets(targets, np.array([c_y]), np.array([h_y]), out=rows[:, -1:])
    if scale is not None:
        rows[:, d] = scale
    y = clip_rows(rows, np.zeros(width), radius)
    return y.sum(axis=0), y.T @ y


@dataclass(frozen=True)
class LinearRelease:
    """What :func:`release_linear` released and derived (post-processing).

    Attributes
    ----------
    coef : ndarray of shape (d,)
        Coefficients in the data's units.
    intercept : float
        The intercept in the data's units (0.0 without one).
    ridge : float
        The ridge added to the released Gram matrix, in box units.
    noise_bound : float
        The public bound B on the Gram noise's spectral norm.
    lower : float
        The released lower bound on the Gram matrix's smallest eigenvalue.
    """

    coef: np.ndarray
    intercept: float
    ridge: float
    noise_bound: float
    lower: float


def _zero_model(released, p, d, fit_intercept):
    """The zero-coefficient model from the released moments: the intercept
    alone, ``m_s / G_ss`` (0 without an intercept). Post-processing."""
    beta = np.zeros(p)
    if fit_intercept and released[d, d] > 0.0:
        beta[d] = released[d, p] / released[d, d]
    return beta


def _slopes_pay(released, p, d, fit_intercept, beta, values, off_sd):
    """Whether the released slopes are estimated to beat the zero-coefficient
    model (post-processing of the released moments and public noise).

    With ``G~ = G + E`` and ``m~ = m + e`` released and ``beta = A^-1 m~``
    (A the raised, ridged Gram matrix the fit inverts, eigenvalues
    ``values``), the true risk of beta less the zero model's is
    ``beta^T G beta - 2 beta^T m + m_s^2 / G_ss``. Its plug-in value on the
    released moments is optimistic by ``2 beta^T e - beta^T E beta``, whose
    expectation to first order is ``2 sd_off^2 (1 + ||beta||^2) tr(A^-1)``
    (independent entries of variance ``sd_off^2``); the zero model's own
    plug-in is optimistic by its intercept's share, ``2 sd_off^2 (1 +
    beta_0^2) / G_ss``. The slopes are kept when the corrected difference is
    negative by :data:`SELECT_Z` times the estimate's own noise. Measured on
    held-out rows (codebook boxes, 5 splits, median R^2): fair at rho 0.5
    -0.30 -> -0.001 (its noise's error, 0.0015 in box units by simulation,
    five times the explained variance; least squares 0.05), randhie at pure
    epsilon 0.5 -1.0 -> -0.02; kept where they help: randhie at rho 0.5
    0.054 (least squares 0.066), the synthetic benchmark unchanged; diabetes
    at rho 0.5 (n = 331, d = 10) 0.27 -> 0.21."""
    G, m = released[:p, :p], released[:p, p]
    zero = _zero_model(released, p, d, fit_intercept)
    plug = float(beta @ G @ beta - 2.0 * beta @ m)
    plug_zero = float(zero @ G @ zero - 2.0 * zero @ m)
    var = off_sd * off_sd
    optimism = 2.0 * var * (1.0 + float(beta @ beta)) * float(np.sum(1.0 / values))
    optimism_zero = 0.0
    if fit_intercept and G[d, d] > 0.0:
        optimism_zero = 2.0 * var * (1.0 + float(zero @ zero)) / float(G[d, d])
    # The estimate's own noise: the plug-in difference moves with the noise
    # on the slopes' moments by about 2 sd_off ||beta_z|| sqrt(1 + ||beta||^2)
    # (the intercept's noise is the zero model's too); the slopes must win by
    # SELECT_Z of it.
    slopes = float(beta[:d] @ beta[:d])
    spread = 2.0 * off_sd * math.sqrt(slopes * (1.0 + float(beta @ beta)))
    return plug + optimism + SELECT_Z * spread < plug_zero + optimism_zero


def release_linear(X, y, boxes, fit_intercept, plan, rng, alpha=0.0):
    """Release the regression of ``y`` on the rows of ``X``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n, d)
        The rows, read in one pass (never modified).
    y : ndarray of shape (n,)
        The targets (passed with each chunk of rows).
    boxes : tuple
        ``((c, h), (c_y, h_y))`` of :func:`regression_boxes`.
    fit_intercept : bool
        Whether the model has an intercept (the boxes must agree).
    plan : ReleasePlan
        A plan holding :func:`linear_entries`' releases, already charged.
    rng : numpy.random.Generator
        The fit's source of noise.
    alpha : float, default=0.0
        scikit-learn's ``Ridge`` penalty ``alpha ||w||^2`` on the coefficients
        in the data's units (not the intercept), added to the released Gram
        matrix as ``(alpha / n) / h_j^2`` on coordinate j in box units
        (post-processing: ``||y - X w - b||^2 + alpha ||w||^2`` is ``h_y^2``
        times ``||t - Z beta - beta_s s||^2 + alpha sum_j beta_j^2 / h_j^2``
        for ``w_j = h_y beta_j / h_j``).

    Returns
    -------
    LinearRelease
        The coefficients and what they were computed from.
    """
    n, d = X.shape
    (center, half), (c_y, h_y) = boxes
    scale = INTERCEPT_SCALE if fit_intercept else None
    p = d + (1 if fit_intercept else 0)
    radius = math.sqrt(_radii(d, fit_intercept)[1])
    args = (center, half, c_y, h_y, scale, radius)
    _, S = over_chunks(X, _chunk_moments, *args, labels=np.asarray(y))
    partials = n_partial_sums(X)
    with np.errstate(all="ignore"):
        M = 0.5 * (S + S.T) / n
    with np.errstate(all="ignore"):
        smallest = float(np.linalg.eigvalsh(0.5 * (M[:p, :p] + M[:p, :p].T))[0])
    low = plan.calibrate("lambda_min", n_partials=partials)
    moments = plan.calibrate("moments", n_partials=partials)
    noisy_low = float(np.asarray(low.randomise(np.float64(smallest), rng)))
    released = np.asarray(moments.randomise(M, rng), dtype=np.float64)
    # Post-processing of the two releases and public values from here.
    released = np.nan_to_num(0.5 * (released + released.T), nan=0.0)
    lower = max(noisy_low - LOWER_Z * low.sd(), 0.0)
    off_sd = math.sqrt(moments.entry_variances(p + 1)[1])
    bound = (2.0 * math.sqrt(p) + LOWER_Z) * off_sd
    ridge = max(bound - lower, RIDGE_FLOOR * bound)
    values, vectors = np.linalg.eigh(released[:p, :p])
    values = np.maximum(values, 0.0) + ridge
    if alpha > 0.0:  # the user's ridge on the raised Gram matrix
        gram = (vectors * values) @ vectors.T
        penalty = np.zeros(p)
        penalty[:d] = (alpha / n) / (half * half)
        values, vectors = np.linalg.eigh(gram + np.diag(penalty))
        values = np.maximum(values, ridge)
    beta = vectors @ ((vectors.T @ released[:p, p]) / values)
    if not _slopes_pay(released, p, d, fit_intercept, beta, values, off_sd):
        beta = _zero_model(released, p, d, fit_intercept)
    coef = h_y * beta[:d] / half
    intercept = 0.0
    if fit_intercept:
        shift = float(beta[:d] @ (center / half))
        intercept = c_y + h_y * (beta[d] * INTERCEPT_SCALE - shift)
    return LinearRelease(coef, float(intercept), float(ridge), float(bound), lower)
