"""The mean of rows in a public box: releases in box units and their plan.

Rows are mapped to the unit box by the public affine map of
:mod:`dpgauss.releases._box` (``z = clip((x - c) / h, -1, 1)``, ``|z_j| <= 1``
exactly). Every release here is a vector of per-coordinate means of values
clipped to a window ``[lo_j, hi_j]`` inside ``[-1, 1]`` (width ``r_j``),
released as ``v = zbar / a`` with public positive weights ``a`` and mapped
back as ``a v`` (post-processing).

Sensitivity (replace one row; n, d, the box, the windows and the weights are
public or released earlier): the values ``clip(z_j, lo_j, hi_j) - lo_j`` lie
in ``[0, r_j]``, so one row moves the exact mean of coordinate j by at most
``r_j / n`` and the computed chunked mean by at most ``r_j (1 / n + 2 e)``
(``e`` from :func:`~dpgauss.utils._sums.summation_error`, for values of norm
at most ``r_j``). Divided by ``a_j`` this gives per-coordinate bounds ``s_j``;
the vector's l1 sensitivity is ``sum_j s_j`` (Laplace, pure DP) and its l2
sensitivity ``||s||`` (Gaussian, zCDP).

The weights minimise the l2 error in box units (each column relative to its
half-width, so columns in different units count alike). Coordinate j is
released as ``zbar_j / a_j`` (sensitivity ``r_j / (n a_j)``) and mapped back by
``a_j``, so its noise is ``a_j`` times the common noise. The Laplace error is
``(sum_j a_j^2)(sum_j r_j / a_j)^2`` (the common scale is the l1 sensitivity
over epsilon), smallest at ``a_j ~ r_j^(1/3)`` (Lagrange: ``a_j^3 ~ r_j``),
where it is ``(sum_j r_j^(2/3))^3``; the Gaussian error ``(sum_j a_j^2)(sum_j
r_j^2 / a_j^2)`` is smallest at ``a_j ~ r_j^(1/2)`` (Cauchy-Schwarz), where it
is ``(sum_j r_j)^2``. A narrow window gets a small weight: its noise shrinks
with its width. Equal widths give equal weights: the baseline's even split.
Weights by the half-widths ``h_j r_j`` would minimise the raw l2 error instead,
but give the widest column the budget: per column in standard deviations that
was 1.5-10 times the even split's error on statsmodels' tables at epsilon 1.

The baseline (the simplest answer with a box): one such release on the whole
box (``r_j = 2``) with equal weights (epsilon / d per coordinate, or the l2
sensitivity ``2 sqrt(d) / n``), projected into the box.
"""

import math

import numpy as np
from scipy.stats import chi2

from dpgauss.accounting import ZCDP, split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._linf import MAX_SIZE as LINF_MAX_SIZE
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.releases._box import boxed, warn_rows_at_edge
from dpgauss.releases._diagonal import sampling_errors
from dpgauss.releases._prediction import ASTRAY, Prediction
from dpgauss.utils._sums import n_partial_sums, over_chunks, summation_error

__all__ = [
    "BoxMeanMechanism",
    "box_mean_plan",
    "box_predict",
    "box_units_mean",
    "boxed_mean",
    "faint_reach",
    "is_adaptive",
    "reach_of_noise",
    "whole_box_warning",
]

#: Shares of the adaptive plan: the center, the spread about it, the mean in
#: the window they give.
ADAPTIVE_SHARES = (0.15, 0.15, 0.7)
#: The window's half-width in upper bounds on the mean absolute deviation: a
#: value beyond ``m + K t`` moves the clipped mean by at most ``t / K`` per
#: unit of tail mass (Markov: ``P(|z - m| > K t) <= 1 / K`` for ``t`` the
#: mean absolute deviation), and Gaussian-like columns lose nothing at K = 8
#: (6.4 sds).
WINDOW_DEVIATIONS = 8.0
#: Noise sds the released center and spread are widened by.
WINDOW_MARGIN = 2.0
#: The adaptive plan is taken when the spread release's noise sd (box units,
#: the widest coordinate, whole box) is below this public limit: the window
#: is then about ``K`` deviations plus ``2 K`` times this, well inside the box
#: for data that do not fill it. Above it the window is predicted no narrower
#: than the box and the baseline release itself is taken, whole budget.
ADAPT_NOISE = 0.02
#: The sd of a column, in its box half-widths, down to which a fit on the
#: whole box is expected within :data:`~dpgauss.releases._prediction.ASTRAY`
#: times the column's sampling error without a warning. The whole-box noise
#: is fixed by the box, not by the data, so a column that fills little of
#: its box gets it at full size: Student t rows in their min/max box have sds
#: of 0.05-0.08 half-widths, breast cancer's and star98's smallest are 0.12;
#: the reference fill of the covariance predictions (sd 0.18) cannot see
#: them.
FAINT_SD = 0.05
#: The share of fits a mean warning covers: a mean vector is said to land
#: beyond ASTRAY times its sampling error when it does so in this share of
#: the fits (:func:`reach_of_noise` with ``d``).
ASTRAY_QUANTILE = 0.9


def box_weights(cost, widths):
    """The weights ``a_j`` for effective widths ``w_j = h_j r_j`` (see the module
    docstring), scaled so the largest is 1."""
    power = 0.5 if isinstance(cost, ZCDP) else 1.0 / 3.0
    with np.errstate(all="ignore"):
        weights = np.power(np.maximum(widths, 1e-300), power)
    weights = np.where(np.isfinite(weights), weights, 1.0)
    return weights / float(weights.max())


class BoxMeanMechanism:
    """Per-coordinate means of values in windows of widths ``widths`` (box
    units), weighted and released with the better of two noises.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The release's cost.
    n : int
        Rows averaged.
    widths : ndarray of shape (d,)
        The windows' widths ``r_j`` in ``(0, 2]``.
    n_partials : int, default=None
        Chunk sums added (see :func:`~dpgauss.utils._sums.summation_error`).
    noise : {"best", "laplace"}, default="best"
        ``"laplace"``: under a pure cost, the Laplace mechanism (the baseline's
        noise). ``"best"``: under a pure cost, the Laplace mechanism or the
        cube's K-norm mechanism, whichever has the smaller predicted l2 error
        in box units (public: the widths, n and the cost). A zCDP cost always
        takes the Gaussian mechanism.

    Notes
    -----
    With ``s_j = r_j (1/n + 2 e) / a_j`` coordinate j's sensitivity after the
    division by its weight (module docstring):

    * Gaussian (zCDP): l2 sensitivity ``||s||``, weights ``a_j ~ r_j^(1/2)``.
    * Laplace (pure): l1 sensitivity ``sum_j s_j``, weights ``a_j ~
      r_j^(1/3)``.
    * K-norm of the cube (pure, :class:`~dpgauss.mechanisms._linf.
      LInfinityMechanism`): l-infinity sensitivity ``max_j s_j``; with weights
      ``a_j = r_j / max r`` every ``s_j`` equals ``max r (1/n + 2 e)``, so the
      sensitivity polytope is exactly the cube the noise is shaped to and the
      error in box units is ``sqrt((d + 1)(d + 2) / 3 sum_j r_j^2) (1/n + 2e) /
      epsilon``: 0.41-0.48 of the Laplace error at d = 8-30 on equal widths.
      On very unequal windows the Laplace weights can win; the choice is made
      from public values.
    """

    def __init__(self, cost, n, widths, n_partials=None, noise="best"):
        self.cost = cost
        widths = np.asarray(widths, dtype=np.float64)
        rounding = summation_error(n, n_partials)
        self.size = widths.size
        candidates = [self._additive(cost, widths, n, rounding)]
        if (
            not isinstance(cost, ZCDP)
            and noise == "best"
            and 2 <= widths.size <= LINF_MAX_SIZE
        ):
            candidates.append(self._linf(cost, widths, n, rounding))
        errors = [np.linalg.norm(a * m.sd(self.size)) for a, m, _ in candidates]
        self.weights, self.mechanism, self.sensitivity = candidates[
            int(np.argmin(errors))
        ]

    @staticmethod
    def _additive(cost, widths, n, rounding):
        weights = box_weights(cost, widths)
        # s_j: coordinate j's sensitivity after dividing by a_j (class Notes).
        per = widths * (1.0 / n + 2.0 * rounding) / weights
        if isinstance(cost, ZCDP):
            sensitivity = float(np.linalg.norm(per))
            mechanism = GaussianMechanism(sensitivity=sensitivity, rho=cost.rho)
        else:
            sensitivity = float(np.sum(per))
            mechanism = LaplaceMechanism(sensitivity=sensitivity, epsilon=cost.epsilon)
        return weights, mechanism, sensitivity

    @staticmethod
    def _linf(cost, widths, n, rounding):
        top = float(widths.max())
        weights = widths / top
        # s_j = r_j (1/n + 2e) / (r_j / top) = top (1/n + 2e) for every j; the
        # max keeps the bound if a division rounds up (class Notes).
        per = widths * (1.0 / n + 2.0 * rounding) / weights
        sensitivity = float(max(np.max(per), top * (1.0 / n + 2.0 * rounding)))
        mechanism = LInfinityMechanism(
            sensitivity=sensitivity, epsilon=cost.epsilon, size=widths.size
        )
        return weights, mechanism, sensitivity

    @property
    def draws(self):
        """How many times the noise was drawn (the plan checks it is once)."""
        return self.mechanism.draws

    def parts(self):
        """The one additive mechanism, for the plan's checks."""
        yield self.mechanism, self.size, False

    def noise_sd(self):
        """Each coordinate's noise sd in box units (public)."""
        return self.weights * self.mechanism.sd(self.size)

    def release(self, means, rng):
        """``a * (means / a + noise)``: the noisy means in box units."""
        noisy = self.mechanism.randomise(means / self.weights, rng)
        return self.weights * np.asarray(noisy, dtype=np.float64)


def box_factory(n, d, widths=None):
    """The factory of a box release: ``make(cost, rows=n, widths=2,
    n_partials=None)`` is the :class:`BoxMeanMechanism`; the whole box
    (widths 2) is the worst public case."""

    def make(cost, *, rows=n, widths=widths, n_partials=None):
        if widths is None:
            widths = np.full(d, 2.0)
        return BoxMeanMechanism(cost, rows, widths, n_partials)

    return make


def adapts(total, n, d):
    """Whether the adaptive plan is taken (public: the cost, n, d).

    Two conditions: the spread's noise sd is below :data:`ADAPT_NOISE` (the
    windows can be resolved inside the box), and the whole-box release's
    noise sd is at least ``1 / sqrt(n)`` in some coordinate, the largest
    sampling error of a mean in box units (the noise then dominates; below
    it, a window's clipping bias on skewed columns costs more than the noise
    it saves: randhie at rho 0.5, 5.7 times the baseline's error at K = 8).
    """
    if n is None:
        return False
    spread = split_cost(total, list(ADAPTIVE_SHARES))[1]
    mech = BoxMeanMechanism(spread, n, np.full(d, 2.0))
    whole = BoxMeanMechanism(total, n, np.full(d, 2.0))
    resolved = np.max(mech.noise_sd()) <= ADAPT_NOISE
    return bool(resolved and np.max(whole.noise_sd()) * math.sqrt(n) >= 1.0)


def box_mean_plan(total, n, d):
    """The plan's releases: ``box_center``, ``box_spread``, ``box_mean``
    (adaptive) or ``box_mean`` alone with the whole cost (the baseline
    release)."""
    kind = kind_of(total)
    if not adapts(total, n, d):
        return [Release("box_mean", total, kind, box_factory(n, d), d, bounded=False)]
    costs = split_cost(total, list(ADAPTIVE_SHARES))
    names = ("box_center", "box_spread", "box_mean")
    return [
        Release(name, cost, kind, box_factory(n, d), d, bounded=False)
        for name, cost in zip(names, costs, strict=True)
    ]


def baseline_error(total, n, d):
    """The baseline's predicted l2 error in box units (public): equal weights
    on the whole box, Laplace noise under a pure cost."""
    mech = BoxMeanMechanism(total, n, np.full(d, 2.0), noise="laplace")
    return float(np.linalg.norm(mech.noise_sd()))


def box_predict(total, n, d, mechanisms):
    """The fit's :class:`~dpgauss.releases._prediction.Prediction` against the
    baseline, in box units, for data that fill the box (the worst case): the
    combined center and windowed mean on whole-box windows, or the one
    release."""
    names = [k for k in ("box_center", "box_mean") if k in mechanisms]
    precision = sum(1.0 / mechanisms[k].noise_sd() ** 2 for k in names)
    error = float(np.linalg.norm(1.0 / np.sqrt(precision)))
    sampling = sampling_errors(n, d)[0]
    return Prediction(error, baseline_error(total, n, d), "l2", sampling)


def faint_reach(cost, n, d):
    """The column sd, in box half-widths, below which a whole-box release at
    ``cost`` lands beyond :data:`~dpgauss.releases._prediction.ASTRAY` times
    the column's sampling error (public: the cost, n and d).

    A column of sd ``s`` (box units) has a mean with sampling sd ``s /
    sqrt(n)``; the release adds noise of sd ``sigma_j`` to it, so the ratio is
    above ASTRAY for ``s < sigma_j sqrt(n) / ASTRAY``, and the d-vector's in
    one fit of ten below that times a chi-square factor
    (:func:`reach_of_noise`). The widest noise is taken, computed at the
    whole box, which is where the single release (the baseline plan) clips.
    """
    sd = float(np.max(BoxMeanMechanism(cost, n, np.full(d, 2.0)).noise_sd()))
    return reach_of_noise(sd, n, d)


def reach_of_noise(sd, n, d=None):
    """The column sd (box units) below which a mean released with noise of
    sd ``sd`` lands beyond ASTRAY times the column's sampling error ``s /
    sqrt(n)``: ``sd sqrt(n) / ASTRAY``. Public values only.

    With ``d``, the reach of a d-vector mean in one fit of ten
    (:data:`ASTRAY_QUANTILE`): columns of sd ``s`` with independent noise of
    sd ``sd`` give the vector an error ``sd sqrt(chi2_d / d)`` times
    ``sqrt(n) / s`` its sampling error (``chi2_d`` a chi-square draw with d
    degrees of freedom), beyond ASTRAY in a tenth of the fits for ``s`` up to
    ``sd sqrt(n) / ASTRAY`` times ``sqrt(q_d / d)``, ``q_d`` the chi-square's
    0.9 quantile (1.64 at d = 1, 1.36 at d = 5, 1.13 at d = 100). The sd
    alone marks where the typical fit lands beyond ASTRAY, and about 4 fits
    in 10 of those just under it did so without a warning (Student t rows,
    n = 150, rho 0.125: 16 of 30).
    """
    reach = sd * math.sqrt(n) / ASTRAY
    if d is None:
        return reach
    return reach * math.sqrt(float(chi2.ppf(ASTRAY_QUANTILE, d)) / d)


def whole_box_warning(owner, cost, n, d):
    """The warning of a whole-box release that may land far from the rows'
    mean, or None (public values only: the cost, n, d).

    Issued where the release is the per-coordinate clipped mean on the whole
    box (the adaptive plan is not taken) and columns with sds of
    :data:`FAINT_SD` half-widths would get errors beyond ASTRAY times their
    sampling errors (:func:`faint_reach`). The release is then about the
    simplest private answer with the box, and the box, not the data, sets its
    error; the warning says so.
    """
    reach = faint_reach(cost, n, d)
    if reach < FAINT_SD:
        return None
    return (
        f"{owner}: with n={n}, d={d} and {cost}, the spread of the rows cannot "
        "be resolved inside the box, so the mean is the per-coordinate clipped "
        "mean on the whole box, about the simplest private answer with it. Its "
        f"noise is fixed by the box: a column whose sd is below {reach:.2g} of "
        f"its half-width gets an error beyond {ASTRAY:g} times its sampling "
        "error in one fit of ten or more. A tighter box, more rows or a larger "
        "budget help."
    )


def is_adaptive(plan):
    """Whether a box plan reads the rows' spread first (``box_center``)."""
    return any(r.name == "box_center" for r in plan.releases())


def _window_chunk(chunk, low, high, about):
    """A chunk's sum of ``clip(v, low, high) - low`` (clipped again to
    ``[0, high - low]``), ``v = z`` or ``|z - about|``."""
    if about is not None:
        chunk = np.abs(chunk - about)
    part = np.clip(chunk, low, high) - low
    return np.clip(part, 0.0, high - low).sum(axis=0)


def _window_mean(z, low, high, about=None):
    """Chunked mean of ``clip(v, low, high) - low`` (values in ``[0, r_j]``),
    ``v = z`` or, with ``about``, ``|z - about|`` (entry by entry, as each
    chunk is read), and the number of chunk sums.

    The chunk sums are added along the canonical tree
    (:func:`~dpgauss.utils._sums.over_chunks`: the same bits on numpy, a
    memory-mapped file and Dask); the mechanism's rounding slack holds for
    any order of the additions.
    """
    n = z.shape[0]
    sums = over_chunks(z, _window_chunk, low, high, about)
    return sums / n, n_partial_sums(z)


def _release(z, name, plan, rng, low, high):
    """One box release on the window ``[low, high]``: noisy means (box units)
    and their noise sds."""
    means, chunks = _window_mean(z, low, high)
    mech = plan.calibrate(name, rows=z.shape[0], widths=high - low, n_partials=chunks)
    return low + mech.release(means, rng), mech.noise_sd()


def boxed_mean(X, center, half, plan, rng, owner=None):
    """The private mean of X in the box ``(center, half)``, projected into it.

    :func:`box_units_mean` of the rows mapped into the unit box, mapped back
    (post-processing). Returns the mean in the data's units and the windows'
    widths (box units). With ``owner``, warns for the features whose rows sit
    at the box's edge (:func:`~dpgauss.releases._box.warn_rows_at_edge`,
    post-processing).
    """
    mean, sd, widths = box_units_mean(boxed(X, center, half), plan, rng)
    if owner is not None:
        warn_rows_at_edge(owner, mean, sd)
    return np.clip(center + half * mean, center - half, center + half), widths


def box_units_mean(z, plan, rng):
    """The private mean of box rows ``z`` (entries in [-1, 1]), in box units.

    Adaptive plan: ``box_center`` (the whole box) gives m, ``box_spread`` the
    mean absolute deviation t of z about m (values ``|z_j - m_j|`` in
    ``[0, 2]``: the window ``[m - 2, m + 2]`` shifted, width 2), both released
    and widened by :data:`WINDOW_MARGIN` noise sds; ``box_mean`` is the mean
    clipped to ``m +- K t`` within the box, combined with m by inverse noise
    variance (post-processing). Otherwise ``box_mean`` alone on the whole box.

    Returns
    -------
    mean : ndarray of shape (d,)
        Projected into [-1, 1] (post-processing: every mean of box rows lies
        there).
    noise_sd : ndarray of shape (d,)
        Each coordinate's noise sd (public: the mechanisms' scales and the
        released windows), of the combination when there are two releases.
    widths : ndarray of shape (d,)
        The windows' widths.
    """
    d = z.shape[1]
    full_low, full_high = np.full(d, -1.0), np.full(d, 1.0)
    if not is_adaptive(plan):
        mean, sd = _release(z, "box_mean", plan, rng, full_low, full_high)
        widths = full_high - full_low
    else:
        m, m_sd = _release(z, "box_center", plan, rng, full_low, full_high)
        m = np.clip(m, -1.0, 1.0)
        deviation, chunks = _window_mean(z, 0.0, 2.0, about=m)
        mech = plan.calibrate(
            "box_spread", rows=z.shape[0], widths=np.full(d, 2.0), n_partials=chunks
        )
        t = mech.release(deviation, rng) + WINDOW_MARGIN * mech.noise_sd()
        reach = WINDOW_DEVIATIONS * np.maximum(t, 0.0) + WINDOW_MARGIN * m_sd
        low = np.maximum(m - reach, -1.0)
        high = np.minimum(m + reach, 1.0)
        # A window too narrow to hold a value (reach 0): the whole box.
        thin = ~(high - low > 1e-12)
        low, high = np.where(thin, -1.0, low), np.where(thin, 1.0, high)
        windowed, w_sd = _release(z, "box_mean", plan, rng, low, high)
        weight = m_sd**2 / (m_sd**2 + w_sd**2)
        mean = weight * windowed + (1.0 - weight) * m
        # The combination's variance: m_sd^2 w_sd^2 / (m_sd^2 + w_sd^2).
        sd = np.sqrt(weight) * w_sd
        widths = high - low
    # Projection into the box (post-processing): |mean_j| <= 1, so the way
    # back is within the public box whatever the noise.
    mean = np.clip(np.nan_to_num(mean, nan=0.0), -1.0, 1.0)
    return mean, sd, widths
