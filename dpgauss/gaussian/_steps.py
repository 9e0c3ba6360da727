"""The CoinPress mean steps and the coarse range, shared by the Gaussian estimators.

Everything here works in a frame A (a public d x d matrix, a function of
released values): rows are mapped to ``w = A x`` and clipped there. See
:mod:`dpgauss.covariance._coinpress` for the covariance steps.
"""

import math
from typing import NamedTuple

import numpy as np
from scipy import optimize, stats

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.covariance._adaptive import PairDifferences, pair_indices
from dpgauss.covariance._coinpress import (
    STEP_BETA,
    frame_inverse,
    learn_frame,
    shrinkage_factor,
    staged_costs,
    tail_radius,
)
from dpgauss.covariance._methods import noise_variance
from dpgauss.mechanisms._range import QuantileSearch, range_failure
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.utils._sums import frame_sums, n_partial_sums

__all__ = [
    "MAX_FRAME_RADIUS",
    "MAX_MEAN_RADIUS",
    "CoarseRange",
    "Stages",
    "coarse_range",
    "coinpress_mean",
    "frame_pairs",
    "mean_entries",
    "mean_steps_for",
    "pair_scale",
    "pairs_frame",
    "range_failure",
    "range_searches",
    "range_subset",
    "scale_costs",
]

#: Per-row tail probability of the mean steps' clipping radius (reference code).
MEAN_BETA = 0.01
#: The same for the steps in a frame that does not whiten (the ``plan``
#: method's diagonal frame, a skewed spectrum): clipping a fifth of the rows'
#: tails biases each step by little (the center is already close, the rows
#: clipped are mostly the largest coordinates' extremes) and cuts the radius,
#: hence the noise, by about a quarter. PLAN GaussianC, same-data ratio over
#: 30 datasets at d = 1024 for beta = 0.01, 0.05, 0.2, 0.3, 0.5: 1.16, 1.15,
#: 1.08, 1.11, 1.17; at d = 256, 1.05 (0.01) and 1.04 (0.2).
SPECTRUM_BETA = 0.2
#: Largest radius, in a frame, that any step clips at: radii computed from
#: released values are capped here (a public bound, so the noise scales are
#: checked before the spend); a cap that binds only costs accuracy.
MAX_FRAME_RADIUS = 1e6
#: The same for the mean steps. A mean step's sensitivity is linear in its
#: radius and its noise is added to offsets within the radius (never to the
#: far center), so a large cap costs nothing in floating point; it lets the
#: steps start from a center 10^15 sds away (float64 resolves rows about the
#: mean only to about 10^16 sds). At 10^6 the first step could not reach a
#: mean found by the norm search more than 10^6 sds away, and the fit
#: returned a center farther than the origin.
MAX_MEAN_RADIUS = 1e15
#: The median of |z| for z = x/2 - x'/2, x and x' i.i.d. N(mu, sigma^2), is
#: HALF_PAIR_MEDIAN * sigma.
HALF_PAIR_MEDIAN = float(stats.norm.ppf(0.75)) / math.sqrt(2.0)
#: How many of its scales the coarse center may be from the mean, per
#: coordinate, when the first mean step's radius is set from it: the private
#: median's rank is within a few noise sds of n / 2 (see QuantileSearch).
RANGE_SCALES = 4.0
#: The released median of the rows' norms times NORM_MARGIN bounds ||mu||
#: (:func:`norm_bound`).
NORM_MARGIN = 4.0
#: The median of chi-square with one degree of freedom (:func:`top_eigenvalue`).
CHI2_1_MEDIAN = float(stats.chi2.median(1))
#: Share of ``range_scale`` for :func:`top_eigenvalue` on the rescaled pairs
#: when the scales are searched per coordinate (one column: a fifth of the
#: cost still errs far less often than the d-column search with the rest).
TOP_SHARE = 0.2
#: The coarse-range searches read at most this many rows (a random subset).
RANGE_ROWS = 50_000
#: The median of |x - m| for x ~ N(m, sigma^2) is ABS_MEDIAN * sigma.
ABS_MEDIAN = float(stats.norm.ppf(0.75))
#: The frame and the scales read at most this many pairs of rows (drawn
#: independently of the data): a whitening frame needs no more (its sampling
#: error is about sqrt(d / m), 0.07 at d = 500), and reading all n / 2 pairs
#: three times made the fit about 10x numpy.cov at n = 10^6 (200,000: 6x).
FRAME_PAIRS = 100_000
#: The most mean steps a composite mean release may choose.
MAX_MEAN_STEPS = 20


def frame_count(n):
    """How many pairs :func:`frame_pairs` reads from n rows (public)."""
    return min(int(n) // 2, FRAME_PAIRS)


def frame_pairs(X, rng):
    """``x/2 - x'/2`` over at most :data:`FRAME_PAIRS` disjoint random pairs.

    The pairing is drawn from the fit's generator, independently of the data,
    and each row is in at most one pair: replacing one row changes at most one
    pair, so a release on the m pairs with sensitivities for m rows is private
    with respect to X. Their covariance is C / 2 whatever the mean.
    """
    first, second = pair_indices(X.shape[0], rng)
    count = frame_count(X.shape[0])
    first, second = first[:count], second[:count]
    return PairDifferences(X, first, second).rows()


def range_subset(count, rng):
    """The rows a coarse-range search reads: at most RANGE_ROWS of ``count``.

    Drawn independently of the data, so replacing one row changes at most one
    of them and the searches' sensitivities hold; their count noise is the
    same, and a coarse range needs no more rows (reading all of them made the
    fit 29x numpy.cov at n = 10^6, d = 50, the sorts dominating).
    """
    return np.sort(rng.choice(count, size=min(count, RANGE_ROWS), replace=False))


def scale_costs(cost):
    """The costs of the two searches of a per-coordinate ``range_scale``:
    the d coordinate scales (``scales``) and the rescaled pairs' norms
    (``top``), :data:`TOP_SHARE` of it; they compose to at most ``cost``."""
    return split_cost(cost, [1.0 - TOP_SHARE, TOP_SHARE])


def _scale_entries(cost):
    coordinates, top = scale_costs(cost)
    kind = kind_of(cost)
    return [Release("scales", coordinates, kind), Release("top", top, kind)]


def range_searches(name, cost, d):
    """Every :class:`~dpgauss.mechanisms._range.QuantileSearch` a coarse-range
    release ``name`` at ``cost`` may run (to check their noise before the
    spend): d columns, and for ``range_scale`` also the split of
    :func:`scale_costs` and one column (:func:`top_eigenvalue`), whichever
    runs."""
    searches = [QuantileSearch(cost, d)]
    if name == "range_scale":
        coordinates, top = scale_costs(cost)
        searches += [QuantileSearch(coordinates, d), QuantileSearch(top, 1)]
        searches.append(QuantileSearch(cost, 1))
    return searches


class CoarseRange(NamedTuple):
    """What :func:`coarse_range` released (None where not searched)."""

    #: ndarray of shape (d,): the private coordinate-wise median (zeros when
    #: not searched or searched by norm).
    center: np.ndarray
    #: ndarray of shape (d,) or None: estimates of the coordinates' sds.
    scales: np.ndarray | None
    #: float or None: a bound on ``||mu||`` (the norm search).
    bound: float | None
    #: float: a bound on the largest eigenvalue of ``S^-1 C S^-1``, S =
    #: diag(scales) (S = I when scales is None), from :func:`top_eigenvalue`;
    #: None when the scale was not searched.
    top: float | None
    #: ndarray of shape (d, d) or None: the public rows' whitening P
    #: (``top`` then bounds the largest eigenvalue of ``P C P``).
    frame: np.ndarray | None = None


def coarse_range(X, pairs, plan, rng, location, scale, by_norm=False, one_scale=False):
    """The private coarse center and scale of the rows.

    Parameters
    ----------
    X : ndarray or dask array of shape (n, d)
        The rows.
    pairs : ndarray of shape (m, d)
        ``x/2 - x'/2`` over pairs of rows drawn independently of the data.
    plan : ReleasePlan
        Holds ``range_location`` (when ``location``) and ``range_scale``
        (when ``scale``).
    rng : numpy.random.Generator
        The fit's noise stream.
    location, scale : bool
        Which searches to run.
    by_norm : bool, default=False
        Search ``range_location`` as one column, the rows' norms
        (:func:`norm_bound`), instead of d coordinate medians: the center is
        then 0 and ``bound`` bounds ``||mu||``; the scales are searched on the
        pairs.
    one_scale : bool, default=False
        Search ``range_scale`` as one column, the pairs' norms
        (:func:`top_eigenvalue`), giving ``top`` alone (whether or not the
        location is searched per coordinate). Otherwise, for d > 1, it is a
        nested release (:class:`Stages`): the d coordinate scales S, then
        ``top`` from the norms of the pairs rescaled by S^-1
        (:func:`scale_costs`); at d = 1 the one scale takes the whole cost.

    Returns
    -------
    CoarseRange
        The released center, scales, bound and top (None where not searched).
    """
    n, d = X.shape

    def search(name, values, plan=plan):
        found = plan.calibrate(name, lambda c: QuantileSearch(c, d))
        return found.release(values, rng)

    def rescaled_top(medians):
        # The scales and the top of the rescaled pairs, one nested release.
        if d == 1:  # one column already: the whole cost; S^-1 C S^-1 is about
            # 1, and top = 4 d gives the worst-case start 1 / (2 s) as before.
            return pair_scale(medians(plan, "range_scale")), 4.0
        stages = plan.calibrate("range_scale", lambda c: Stages(c, _scale_entries(c)))
        scales = pair_scale(medians(stages.plan, "scales"))
        top = top_eigenvalue(pairs, stages.plan, rng, "top", scales)
        stages.finish()
        return scales, top

    center, scales, bound, top = np.zeros(d), None, None, None
    if location and by_norm:
        bound = norm_bound(X, plan, rng)
        location = False  # the scales are then searched on the pairs
    if location:
        some = np.asarray(X[range_subset(n, rng)])
        center = search("range_location", some)
    if scale and one_scale:
        # The d-column scale search is predicted to go astray (whichever rows
        # it would read): the one-column search on the pairs, the whole cost.
        top = top_eigenvalue(pairs, plan, rng)
    elif scale and location:
        # Around the private median: median |x - m| = 0.674 sigma (an off
        # center only makes the scale larger, the safe side).
        ratio = HALF_PAIR_MEDIAN / ABS_MEDIAN
        scales, top = rescaled_top(
            lambda sub, name: search(name, np.abs(some - center), sub) * ratio
        )
    elif scale:
        some = pairs[range_subset(pairs.shape[0], rng)]
        scales, top = rescaled_top(lambda sub, name: search(name, np.abs(some), sub))
    return CoarseRange(center, scales, bound, top)


def top_eigenvalue(pairs, plan, rng, name="range_scale", scales=None, frame=None):
    """A private bound on the largest eigenvalue of ``S^-1 C S^-1`` from the
    norms of the pairs ``S^-1 z`` (S = diag(scales), the identity by default;
    with ``frame``, a public or released matrix P, of ``P C P^T`` from the
    norms of ``P z``: the same argument).

    Releases ``name``: the median M of ``||S^-1 z||`` over at most RANGE_ROWS
    pairs ``z = x/2 - x'/2`` drawn independently of the data, by
    :func:`one_column_median` (replacing one row changes one pair, hence one
    norm: each count moves by at most 1 whatever d is; S is released). For
    Gaussian rows ``S^-1 z ~ N(0, B / 2)``, ``B = S^-1 C S^-1``, and
    ``||S^-1 z||^2 >= lambda_1 g^2 / 2`` (g the coordinate along B's top
    eigenvector), so ``1/2 = P(||S^-1 z||^2 <= M^2) <= P(g^2 <= 2 M^2 /
    lambda_1)``, hence ``lambda_1 <= 2 M^2 / median(chi2_1)`` (4.4 M^2) for
    every spectrum; for a flat one it is about 2.2 d lambda_1. The frame then
    starts at ``S^-1 / sqrt(top)`` (:func:`pairs_frame`). Before, the start
    bounded lambda_1 by its worst case, 4 d times the largest scale squared
    (the one-scale fallback took the coordinates' maximum as that scale, 60 d
    lambda_1 at d = 50, and the covariance steps did not recover at n =
    1,000: covariance error 4.5 times the sample covariance's, 0.6 now). A
    utility argument: the privacy of the fit does not depend on it. Zero (all
    pairs tied) gives 1; the bound is kept within float64.
    """
    some = pairs[range_subset(pairs.shape[0], rng)]
    with np.errstate(all="ignore"):
        if scales is not None:
            some = some / scales
        if frame is not None:
            some = some @ frame.T
    found = one_column_median(name, row_norms(some), plan, rng)
    with np.errstate(over="ignore"):
        top = 2.0 * found * found / CHI2_1_MEDIAN
    if not top > 0.0:
        return 1.0
    return min(top, float(np.finfo(np.float64).max))


def largest_scale(pairs, plan, rng):
    """A private typical size of the pairs' largest coordinate (``range_scale``).

    The median over pairs of ``max_j |z_j|`` (z = x/2 - x'/2), by a
    one-column :class:`~dpgauss.mechanisms._range.QuantileSearch` on at most
    50,000 pairs drawn independently of the data: one count per step, so
    its noise does not grow with d (a search per coordinate has sensitivity
    sqrt(d) and goes astray at d = 1,024, n = 10^4). It tops the window of
    :func:`~dpgauss.mean._mean.log_scales` of the ``plan`` method
    (``max_j |z_j|`` is at least every ``|z_j|``, the safe side). Zero (all
    pairs tied) gives 1.
    """
    some = pairs[range_subset(pairs.shape[0], rng)]
    found = one_column_median("range_scale", np.max(np.abs(some), axis=1), plan, rng)
    return found if 0.0 < found < math.inf else 1.0


def one_column_median(name, values, plan, rng):
    """Release ``name`` of ``plan``: the private median of one value per row.

    A one-column :class:`~dpgauss.mechanisms._range.QuantileSearch`: replacing
    one row changes one value, so each count moves by at most 1 whatever d is.
    """
    search = plan.calibrate(name, lambda c: QuantileSearch(c, 1))
    return float(search.release(np.asarray(values)[:, None], rng)[0])


def row_norms(X):
    """The rows' l2 norms, computed scaled (no overflow or underflow on the
    way) and clipped to the largest finite float."""
    # C order: each norm reads its own row, in one order, whatever the input's.
    X = np.ascontiguousarray(X, dtype=np.float64)
    top = np.max(np.abs(X), axis=1)
    safe = np.where(top > 0.0, top, 1.0)
    with np.errstate(all="ignore"):
        norms = top * np.linalg.norm(X / safe[:, None], axis=1)
    big = float(np.finfo(np.float64).max)
    return np.clip(np.nan_to_num(norms, nan=big, posinf=big), 0.0, big)


def norm_bound(X, plan, rng):
    """A private bound on ``||mu||`` from the median of the rows' norms.

    One column, the norms ``||x_i||`` of at most RANGE_ROWS rows drawn
    independently of the data, searched by
    :class:`~dpgauss.mechanisms._range.QuantileSearch` as ``range_location``:
    replacing one row changes one norm, so each count moves by at most 1
    whatever d is (the d coordinate medians have sensitivity sqrt(d) and go
    astray first when n is small). Each norm is a function of its row alone,
    so rounding cannot break this. The released median R bounds the mean
    loosely: if ``||mu|| > 2 R``, at least a third of the rows lie within
    ``||mu|| / 2`` of 0, hence at least ``||mu|| / 2`` from mu, which for a
    Gaussian means ``||mu||`` is at most about twice the rows' typical
    deviation, itself at most about R; NORM_MARGIN R covers both cases
    (a loose bound only adds mean steps, whose radii shrink geometrically).
    This is a utility argument: the privacy of the fit does not depend on it.
    """
    some = np.asarray(X[range_subset(X.shape[0], rng)])
    found = one_column_median("range_location", row_norms(some), plan, rng)
    with np.errstate(over="ignore"):
        bound = NORM_MARGIN * found
    return bound if bound > 0.0 else 1.0


class Stages:
    """One planned release made of sub-releases: a nested plan.

    The outer plan charges ``cost`` once; the sub-releases (``entries``, whose
    costs compose to at most ``cost``) are calibrated from :attr:`plan` and
    :meth:`finish` checks that each drew its noise exactly once. A fit may
    choose the entries from public values and earlier releases (the number of
    mean steps from n and a released radius): their costs always compose to
    at most ``cost``, so by adaptive composition with a fixed total (a privacy
    filter: Rogers et al. 2016 for pure DP, Feldman and Zrnic 2021 for Renyi
    DP at every order, hence zCDP) the whole costs ``cost`` whatever was
    chosen.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The planned cost.
    entries : list of Release
        The sub-releases.

    Attributes
    ----------
    cost : ZCDP or PureDP
        As given.
    plan : ReleasePlan
        The sub-releases' plan.
    draws : int
        1 once :meth:`finish` has run.
    """

    def __init__(self, cost, entries):
        self.cost = cost
        self.plan = ReleasePlan(cost, entries)
        self.draws = 0

    def finish(self):
        """Check the sub-releases and count the release as drawn."""
        self.plan.finish()
        self.draws += 1


def mean_entries(cost, steps):
    """Plan entries of the mean steps, ``mean_1`` ..., at the costs of
    :func:`~dpgauss.covariance._coinpress.staged_costs` (the last gets 3/4 when
    there are several)."""
    kind = kind_of(cost)
    parts = staged_costs(cost, steps)
    return [Release(f"mean_{k}", c, kind) for k, c in enumerate(parts, 1)]


def weighted_tail_radius(spectrum, beta):
    """The radius that ``sqrt(sum_j l_j g_j^2)`` (g standard normal) exceeds
    with probability about beta.

    The Lugannani-Rice saddlepoint approximation to the tail of the weighted
    chi-square ``Q = sum_j l_j g_j^2`` (cumulant generating function
    ``K(s) = -1/2 sum_j log(1 - 2 s l_j)``): at the saddlepoint s,
    ``q = K'(s)``, ``w = sqrt(2 (s q - K(s)))``, ``u = s sqrt(K''(s))`` and
    ``P(Q > q) ~ 1 - Phi(w) + phi(w) (1/u - 1/w)``, accurate to a few percent
    of beta for every spectrum (exact in the limit of many equal l_j). The
    Laurent-Massart bound ``sum l + 2 sqrt(t sum l^2) + 2 t max l``
    (``t = log(1/beta)``) overstates the radius by about 28% for a Zipf
    spectrum ``l_j = 1/j``, and a larger radius adds noise in every step; it
    remains the fallback if the root search fails. Public: a function of
    released or public values; a radius that is slightly small only clips a
    few more rows (bias), the sensitivity follows the radius whatever it is.
    """
    spectrum = np.asarray(spectrum, dtype=np.float64)
    t = math.log(1.0 / beta)
    top = float(spectrum.max())
    if not (top > 0.0 and math.isfinite(top)):
        return 0.0 if top == 0.0 else math.inf
    lam = spectrum[spectrum > 0.0] / top
    bound = math.sqrt(
        float(lam.sum()) + 2.0 * math.sqrt(float(np.square(lam).sum()) * t) + 2.0 * t
    )

    def excess(s):  # log P(Q > K'(s)) - log beta, decreasing in s
        one = 1.0 - 2.0 * s * lam
        k = -0.5 * float(np.log(one).sum())
        q = float((lam / one).sum())
        w = math.sqrt(max(2.0 * (s * q - k), 0.0))
        u = s * math.sqrt(float((2.0 * np.square(lam / one)).sum()))
        tail = stats.norm.sf(w) + stats.norm.pdf(w) * (1.0 / u - 1.0 / w)
        return math.log(max(tail, 1e-300)) - math.log(beta)

    # s in (0, 1/2): the left end is the mean (tail about 1/2 > beta), the
    # right end the pole of K; s = 1/2 (1 - 1e-12) is far in the tail.
    low, high = 1e-4, 0.5 * (1.0 - 1e-12)
    try:
        if not excess(low) > 0.0 > excess(high):
            return top**0.5 * bound
        s = optimize.brentq(excess, low, high, xtol=1e-12, rtol=1e-10)
    except (ValueError, ZeroDivisionError, OverflowError):
        return top**0.5 * bound
    q = float((lam / (1.0 - 2.0 * s * lam)).sum())
    q = q if q <= bound * bound else bound * bound  # also NaN -> the bound
    return math.sqrt(top) * math.sqrt(q)


def step_radius(radius, gamma, spread=1.0):
    """A mean step's clipping radius around a center within ``radius`` of the mean.

    A row ``x = mu + g`` with ``||g|| <= gamma`` lies within ``sqrt(r^2 +
    2 <g, mu - c> + gamma^2)`` of the center c, and ``<g, mu - c>`` is normal
    with sd at most ``spread r`` (``spread^2`` the largest eigenvalue of the
    rows' covariance in the frame), so it is below ``z spread r`` but for a
    MEAN_BETA fraction of rows (``z`` the normal quantile). The radius is the
    smaller of ``sqrt(r^2 + 2 z spread r + gamma^2)`` and the triangle
    inequality's ``r + gamma`` (CoinPress's reference code uses the same bound
    with z = 3), capped at MAX_MEAN_RADIUS. Clipping a few rows more only
    biases the step; the sensitivity is computed from the radius whatever the
    rows (public: released radii and public constants).
    """
    z = float(stats.norm.isf(MEAN_BETA))
    r = float(radius)
    with np.errstate(all="ignore"):
        tight = math.sqrt(r * r + 2.0 * z * spread * r + gamma * gamma)
    lam = min(tight, r + gamma, MAX_MEAN_RADIUS)
    # Defensive: a radius or spread that is not finite gives the public cap
    # (never NaN, which would fail after the spend).
    return lam if math.isfinite(lam) and lam > 0.0 else MAX_MEAN_RADIUS


def clip_gain(d, radius):
    """``J``: ``E[clip(g + delta, r)] = J delta + O(|delta|^2)``, g ~ N(0, I_d).

    Clipping to the ball of radius r shrinks a small offset delta of
    isotropic Gaussian rows by ``J = P[R <= r] + (1 - 1/d) r E[1/R; R > r]``
    (R = ||g||, chi with d degrees of freedom; the Jacobian of the radial clip
    averaged over g), and ``E[1/R; R > r] = Gamma((d-1)/2) / (sqrt(2)
    Gamma(d/2)) P[chi_(d-1) > r]``. ``radius`` may be an array (then so is
    the result).
    """
    radius = np.asarray(radius, dtype=np.float64)
    u = radius * radius
    gain = stats.chi2.cdf(u, d)
    if d > 1:
        ratio = math.exp(math.lgamma(0.5 * (d - 1)) - math.lgamma(0.5 * d))
        tail = radius * (ratio / math.sqrt(2)) * stats.chi2.sf(u, d - 1)
        gain = gain + (1.0 - 1.0 / d) * tail
    return float(gain) if gain.ndim == 0 else gain


def final_radius(cost, n, d, radius, gamma, n_partials):
    """The last mean step's clipping radius lambda and its gain J.

    The last step's center is already within ``radius`` of the mean, so it
    may clip far inside the rows' tail radius ``gamma`` and divide the
    released offset by :func:`clip_gain`: the noise scales with lambda, the
    shrinkage only with J (for whitened Gaussian rows; about sqrt(d) instead
    of gamma + radius as the effective radius). Chooses lambda on a grid from
    ``max(sqrt(chi2_d(0.05)), 4 radius)`` (the offset stays small next to the
    radius, so J holds) to ``gamma + radius`` (plain CoinPress) to minimise
    the predicted squared error ``(E||clip(g)||^2 / n + d s(lambda)^2) /
    J^2``. Public: cost, n, d and released radii only.
    """
    top = step_radius(radius, gamma)
    low = min(max(math.sqrt(stats.chi2.ppf(0.05, d)), 4.0 * radius), top)
    lams = np.linspace(low, top, 33)
    lams[-1] = top
    gains = np.where(lams < top, clip_gain(d, lams), 1.0)
    spread = d * shrinkage_factor(d, lams) / n
    # The noise variance is proportional to lambda^2 (sensitivity 2 lambda / n):
    # one mechanism, at the top, gives it for the whole grid (a prediction).
    at_top = d * noise_variance(mean_mechanism(cost, n, d, top, n_partials), d)
    noise = at_top * (lams / top) ** 2
    errors = (spread + noise) / (gains * gains)
    best = int(np.argmin(errors))
    return float(lams[best]), float(gains[best])


def next_radius(gamma, noise_gamma, n, variance):
    """The next mean step's radius: a high-probability bound on the released
    center's error, ``sqrt(gamma^2 / n + noise_gamma^2 s^2)``: the sampling
    error of rows with tail radius gamma, and isotropic noise of variance
    ``s^2`` per coordinate (``noise_gamma`` the tail radius of N(0, I_d)).
    With whitened rows (gamma = noise_gamma) this is CoinPress's
    ``gamma sqrt(1/n + s^2)``."""
    return math.sqrt(gamma * gamma / n + noise_gamma * noise_gamma * variance)


def mean_steps_for(cost, n, d, radius, n_partials, gamma=None):
    """How many CoinPress mean steps ``cost`` should be split into.

    Simulates the steps' radii (:func:`coinpress_mean`: lambda from
    :func:`step_radius`, then ``r = gamma sqrt(1/n + s^2)``) for 1 to
    :data:`MAX_MEAN_STEPS` steps at :func:`staged_costs` and returns the
    fewest whose last noise variance is within 2% of the smallest. A function
    of the cost, n, d, the starting radius (public or released) and the
    summation bound only (and ``gamma``, the rows' tail radius in the frame:
    :func:`tail_radius` by default).
    """
    isotropic = gamma is None
    noise_gamma = tail_radius(d, MEAN_BETA)
    gamma = noise_gamma if gamma is None else gamma
    finals = []
    for steps in range(1, MAX_MEAN_STEPS + 1):
        r, variance = float(radius), math.inf
        for k, part in enumerate(staged_costs(cost, steps), 1):
            lam, gain = step_radius(r, gamma), 1.0
            if k == steps > 1 and isotropic:
                lam, gain = final_radius(part, n, d, r, gamma, n_partials)
            mech = mean_mechanism(part, n, d, lam, n_partials)
            variance = noise_variance(mech, d) / (gain * gain)
            r = next_radius(gamma, noise_gamma, n, variance)
        finals.append(variance)
    best = min(finals)
    return next(k for k, v in enumerate(finals, 1) if v <= 1.02 * best)


def coinpress_mean(
    X, frame, center, radius, plan, steps, rng, n_partials, spectrum=None
):
    """The CoinPress mean in ``frame``, from the ball B(A center, radius).

    Step k clips ``w = A x`` to the ball of radius lambda (:func:`step_radius`
    of r and gamma, at most ``r + gamma``) around
    the current center c (``gamma`` the Gaussian tail radius of a whitened row,
    :data:`MEAN_BETA`), releases the clipped mean (sensitivity ``2 lambda / n``,
    :func:`~dpgauss.mechanisms._releases.mean_mechanism`), projects it onto
    that ball (where the exact clipped mean lies) and sets
    ``r = gamma sqrt(1/n + s^2)``, s the noise sd of a coordinate. The radii are
    capped at :data:`MAX_MEAN_RADIUS`. Releases ``mean_1`` ... of ``plan``.

    Parameters
    ----------
    X : ndarray or dask array of shape (n, d)
        The rows.
    frame : ndarray of shape (d, d)
        A, with ``A C A^T`` about the identity.
    center : ndarray of shape (d,)
        A public or released starting center, in the rows' coordinates.
    radius : float
        A public or released bound on ``||A (mu - center)||``.
    plan : ReleasePlan
        Holds ``mean_1`` ... ``mean_steps``.
    steps : int
        Number of steps.
    rng : numpy.random.Generator
        The fit's noise stream.
    n_partials : int
        Chunk sums a pass adds.
    spectrum : ndarray of shape (d,), default=None
        The eigenvalues of ``A C A^T`` when the frame does not whiten (None:
        about the identity); they set the rows' tail radius
        (:func:`weighted_tail_radius` at SPECTRUM_BETA).

    Returns
    -------
    mean : ndarray of shape (d,)
        The released mean, in the rows' coordinates.
    variance : float
        The noise variance of a coordinate of the last step, in the frame.
    radius : float
        The last step's radius r (a high-probability bound on the error in the
        frame).
    """
    n, d = X.shape[0], frame.shape[0]
    noise_gamma = tail_radius(d, MEAN_BETA)
    if spectrum is None:
        gamma = noise_gamma
    else:
        gamma = weighted_tail_radius(spectrum, SPECTRUM_BETA)
    spread = 1.0 if spectrum is None else math.sqrt(float(np.max(spectrum)))
    inverse, scale = frame_inverse(frame)
    with np.errstate(all="ignore"):
        c = frame @ center
    c = np.where(np.isfinite(c), c, 0.0)
    variance = 0.0
    for k in range(1, steps + 1):
        lam, gain = step_radius(radius, gamma, spread), 1.0
        if k == steps > 1 and spectrum is None:
            cost = plan.cost(f"mean_{k}")
            lam, gain = final_radius(cost, n, d, radius, gamma, n_partials)
        # w - c = A (x - A^-1 c): clip the rows' offsets from A^-1 c in the frame.
        origin = frame_point(inverse, scale, c)
        total = frame_sums(X, origin, lam, frame, with_outer=False)[0]
        mech = plan.calibrate(
            f"mean_{k}", lambda cost, r=lam: mean_mechanism(cost, n, d, r, n_partials)
        )
        offset = mech.randomise(total / n, rng)
        norm = float(np.linalg.norm(offset))
        if not norm <= lam:  # also inf: project onto the ball (post-processing)
            offset = offset * (lam / norm) if math.isfinite(norm) else np.zeros(d)
        c = c + offset / gain
        variance = noise_variance(mech, d) / (gain * gain)
        radius = next_radius(gamma, noise_gamma, n, variance)
    return frame_point(inverse, scale, c), variance, radius


def frame_point(inverse, scale, c):
    """``A^-1 c`` from :func:`~dpgauss.covariance._coinpress.frame_inverse`'s
    ``(B, f)``, kept finite (post-processing of a point in the frame)."""
    big = float(np.finfo(np.float64).max)
    with np.errstate(all="ignore"):
        point = (inverse @ c) / scale
    return np.clip(np.nan_to_num(point, nan=0.0, posinf=big, neginf=-big), -big, big)


def pairs_frame(pairs, scales, top, plan, steps, rng, base=None):
    """A CoinPress frame A learned on the pairs ``x/2 - x'/2``.

    Runs the ``steps - 1`` releases ``precondition_k`` of ``plan``
    (:func:`~dpgauss.covariance._coinpress.learn_frame`) from
    ``S^-1 / sqrt(top)``, S = diag(scales) (the identity when None) and
    ``top`` a bound on the largest eigenvalue of ``S^-1 C S^-1`` (the upper
    ``cov_bounds``, or :func:`top_eigenvalue`), or from ``base / sqrt(top)``
    when a public whitening ``base`` is given (``top`` bounding the largest
    eigenvalue of ``base C base``), and returns the frame of the rows (the
    pairs' covariance is C / 2, so theirs is ``sqrt(2) A``).
    """
    d = pairs.shape[1]
    inverse = np.ones(d) if scales is None else 1.0 / np.asarray(scales)
    with np.errstate(all="ignore"):
        if base is not None:
            start = base / math.sqrt(top)
            if not (np.all(np.isfinite(start)) and np.any(start)):
                start = base  # a released top at float64's edges
        else:
            start = np.diag(inverse / math.sqrt(top))
            if not np.all(np.isfinite(start)) or not np.all(np.diag(start) > 0.0):
                # Released values at float64's edges: the worst-case start,
                # which pair_scale keeps finite (post-processing either way).
                start = np.diag(inverse) / (2.0 * math.sqrt(d))
    gamma = tail_radius(d, STEP_BETA)
    # The pairs' covariance is C / 2: their frame is sqrt(2) A.
    frame, _ = learn_frame(
        pairs,
        np.zeros(d),
        math.sqrt(2.0) * start,
        gamma,
        plan,
        steps,
        rng,
        n_partial_sums(pairs),
    )
    return frame / math.sqrt(2.0)


def pair_scale(medians):
    """Per-coordinate scales from the private medians of ``|x/2 - x'/2|``.

    ``median / HALF_PAIR_MEDIAN`` estimates sigma for Gaussian data. Zero
    medians (a coordinate whose pairs mostly agree, e.g. discrete values) take
    ``2^-20`` times the smallest positive scale (1 when none is positive), and
    every scale is kept in ``[2^-1000, 2^1000]`` and within ``2^200`` of the
    largest, so that the frame and its inverse stay finite (post-processing of
    released values).
    """
    scale = np.abs(np.asarray(medians, dtype=np.float64)) / HALF_PAIR_MEDIAN
    positive = scale[(scale > 0) & np.isfinite(scale)]
    fallback = float(positive.min()) * 2.0**-20 if positive.size else 1.0
    scale = np.where(scale > 0, scale, fallback)
    scale = np.clip(scale, 2.0**-1000, 2.0**1000)
    # At most 2^200 between the largest and the smallest scale: the frame's
    # entries then stay within float64's range of each other (its inverse is
    # computed from the frame divided by its largest entry).
    return np.maximum(scale, float(scale.max()) * 2.0**-200)
