"""The CoinPress mean steps, and the covariance frame learned from pairs of rows.

Everything here works in a frame A (a public d x d matrix, a function of
released values): rows are mapped to ``w = A x`` and clipped there. Each mean
step releases the mean of the rows clipped to a ball around the current
center (sensitivity ``2 lambda / n`` for radius ``lambda``), its radius
computed from released values only; see :mod:`dpgauss.releases._coinpress`
for the covariance steps and :mod:`dpgauss.releases._range` for the coarse
range that starts them.
"""

import functools
import math
from dataclasses import replace

import numpy as np
from scipy import optimize, stats

from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.releases._coinpress import (
    STEP_BETA,
    coinpress_entries,
    frame_inverse,
    learn_frame,
    shrinkage_factor,
    staged_costs,
    tail_radius,
)
from dpgauss.releases._covariance import covariance_factory
from dpgauss.releases._range import Stages, frame_count
from dpgauss.utils._sums import frame_sums, n_partial_sums

__all__ = [
    "MAX_FRAME_RADIUS",
    "MAX_MEAN_RADIUS",
    "coinpress_mean",
    "mean_entries",
    "mean_factory",
    "mean_step_factory",
    "mean_steps_for",
    "pairs_covariance_entries",
    "pairs_frame",
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
#: The last mean step's allowance for rows that are not Gaussian: dividing a
#: mean clipped at lambda by the Gaussian shrinkage J(lambda) is unbiased for
#: whitened Gaussian rows only; on real tables (tied, zero-inflated, skewed
#: columns) the rescaled clipped mean is off by about psi (1 - J) sds per
#: whitened coordinate, psi measured at lambda = sqrt(d) (non-private, exact
#: frame) as 0.19 (fair), 0.46 (randhie), 0.39 (breast cancer), 0.23 (wine),
#: 0.30 (anes96) and 0.40 (star98). :func:`final_radius` adds
#: ``d (psi (1/J - 1))^2`` at psi = 1 (twice the largest) to the error it
#: minimises. Median error of the mean over 10 seeds, in sampling errors per
#: column, rho 0.125 / 0.5, without (psi = 0) and with it: fair 1.39 / 0.50
#: -> 0.31 / 0.19; randhie 4.04 / 3.13 -> 1.84 / 1.97; Gaussian rows (n =
#: 5,000, d = 8) 0.34 / 0.15 -> 0.26 / 0.18.
SKEW_ALLOWANCE = 1.0
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
#: The most mean steps a composite mean release may choose.
MAX_MEAN_STEPS = 20


def mean_step_factory(n, d, n_partials=None):
    """The factory of a CoinPress mean step: ``make(cost, radius=MAX_MEAN_RADIUS,
    rows=n, features=d, n_partials=n_partials)`` is the mean mechanism of
    ``rows`` rows clipped at ``radius`` in d dimensions
    (:func:`~dpgauss.mechanisms._releases.mean_mechanism`). The default
    radius is the public cap every step's radius is kept under, the worst
    case; :func:`coinpress_mean` passes the step's own."""

    def make(
        cost, *, radius=MAX_MEAN_RADIUS, rows=n, features=d, n_partials=n_partials
    ):
        return mean_mechanism(cost, rows, features, radius, n_partials)

    return make


def mean_entries(cost, steps, n=None, d=None, n_partials=None):
    """Plan entries of the mean steps, ``mean_1`` ..., at the costs of
    :func:`~dpgauss.releases._coinpress.staged_costs` (the last gets 3/4 when
    there are several), each with its factory (:func:`mean_step_factory`,
    size d)."""
    kind = kind_of(cost)
    parts = staged_costs(cost, steps)
    make = mean_step_factory(n, d, n_partials)
    size = 1 if d is None else d
    return [
        Release(f"mean_{k}", c, kind, make, size=size) for k, c in enumerate(parts, 1)
    ]


def mean_factory(n, d):
    """The factory of the composite ``mean`` release: ``make(cost,
    steps=MAX_MEAN_STEPS, n_partials=n)`` is the nested release
    (:class:`~dpgauss.releases._range.Stages`) of ``steps`` mean steps
    (:func:`mean_entries`). The defaults are the worst public case: the most
    steps (hence the smallest one's cost), every row its own chunk sum, and
    each step at :data:`MAX_MEAN_RADIUS`; the fit passes the steps it chose
    and its chunk count."""

    def make(cost, *, steps=MAX_MEAN_STEPS, n_partials=n):
        return Stages(cost, mean_entries(cost, steps, n, d, n_partials))

    return make


def pairs_covariance_entries(cost, steps, n, d):
    """Plan entries of the CoinPress covariance of rows whose frame is learned
    on pairs (:func:`pairs_frame`), then released on all n rows in it.

    :func:`~dpgauss.releases._coinpress.coinpress_entries` at ``cost``: the
    ``precondition_k`` second moments of the ``frame_count(n)`` pairs clipped
    at the Gaussian tail radius (the first step too: :func:`pairs_frame`
    starts the frame from a bound on the spectrum), and ``second_moment`` of
    the n rows clipped at a radius computed from released values and capped
    at :data:`MAX_FRAME_RADIUS`, whose factory's worst case is that cap with
    every row its own chunk sum. n is None when the plan is only priced.
    """
    m = None if n is None else frame_count(n)
    gamma = tail_radius(d, STEP_BETA)
    *early, final = coinpress_entries(cost, steps, d, m, first=gamma)
    make = covariance_factory("second_moment", n, d, MAX_FRAME_RADIUS, n)
    return [*early, replace(final, make=make)]


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


@functools.lru_cache(maxsize=8)
def _step_z(beta):
    """The normal quantile ``z`` of :func:`step_radius` (a public constant,
    computed once: the steps' plans call it hundreds of times per fit)."""
    return float(stats.norm.isf(beta))


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
    z = _step_z(MEAN_BETA)
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
    J^2`` plus the allowance ``d (psi (1/J - 1))^2`` for rows that are not
    Gaussian (:data:`SKEW_ALLOWANCE`): the rescaling is then taken only where
    the noise it saves outweighs the bias it risks on real tables. Public:
    cost, n, d and released radii only.
    """
    top = step_radius(radius, gamma)
    low = min(max(math.sqrt(stats.chi2.ppf(0.05, d)), 4.0 * radius), top)
    lams = np.linspace(low, top, 33)
    lams[-1] = top
    gains = np.where(lams < top, clip_gain(d, lams), 1.0)
    spread = d * shrinkage_factor(d, lams) / n
    # The noise variance is proportional to lambda^2 (sensitivity 2 lambda / n):
    # one mechanism, at the top, gives it for the whole grid (a prediction).
    at_top = d * mean_mechanism(cost, n, d, top, n_partials).variance(d)
    noise = at_top * (lams / top) ** 2
    skew = d * (SKEW_ALLOWANCE * (1.0 / gains - 1.0)) ** 2
    errors = (spread + noise) / (gains * gains) + skew
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
            variance = mech.variance(d) / (gain * gain)
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
            f"mean_{k}", radius=lam, rows=n, features=d, n_partials=n_partials
        )
        offset = mech.randomise(total / n, rng)
        norm = float(np.linalg.norm(offset))
        if not norm <= lam:  # also inf: project onto the ball (post-processing)
            offset = offset * (lam / norm) if math.isfinite(norm) else np.zeros(d)
        c = c + offset / gain
        variance = mech.variance(d) / (gain * gain)
        radius = next_radius(gamma, noise_gamma, n, variance)
    return frame_point(inverse, scale, c), variance, radius


def frame_point(inverse, scale, c):
    """``A^-1 c`` from :func:`~dpgauss.releases._coinpress.frame_inverse`'s
    ``(B, f)``, kept finite (post-processing of a point in the frame)."""
    big = float(np.finfo(np.float64).max)
    with np.errstate(all="ignore"):
        point = (inverse @ c) / scale
    return np.clip(np.nan_to_num(point, nan=0.0, posinf=big, neginf=-big), -big, big)


def pairs_frame(pairs, scales, top, plan, steps, rng, base=None):
    """A CoinPress frame A learned on the pairs ``x/2 - x'/2``.

    Runs the ``steps - 1`` releases ``precondition_k`` of ``plan``
    (:func:`~dpgauss.releases._coinpress.learn_frame`) from
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
