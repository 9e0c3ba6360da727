"""The CoinPress mean steps and the coarse range, shared by the Gaussian estimators.

Everything here works in a frame A (a public d x d matrix, a function of
released values): rows are mapped to ``w = A x`` and clipped there. See
:mod:`dpgauss.covariance._coinpress` for the covariance steps.
"""

import math

import numpy as np
from scipy import stats

from dpgauss.accounting._plan import Release
from dpgauss.covariance._coinpress import frame_inverse, staged_costs, tail_radius
from dpgauss.covariance._methods import kind_of, noise_variance
from dpgauss.mechanisms._releases import mean_mechanism
from dpgauss.utils._sums import clipped_sums

__all__ = [
    "MAX_FRAME_RADIUS",
    "coinpress_mean",
    "mean_entries",
    "pair_scale",
]

#: Per-row tail probability of the mean steps' clipping radius (reference code).
MEAN_BETA = 0.01
#: Largest radius, in a frame, that any step clips at: radii computed from
#: released values are capped here (a public bound, so the noise scales are
#: checked before the spend); a cap that binds only costs accuracy.
MAX_FRAME_RADIUS = 1e6
#: The median of |z| for z = x/2 - x'/2, x and x' i.i.d. N(mu, sigma^2), is
#: HALF_PAIR_MEDIAN * sigma.
HALF_PAIR_MEDIAN = float(stats.norm.ppf(0.75)) / math.sqrt(2.0)


def mean_entries(cost, steps):
    """Plan entries of the mean steps, ``mean_1`` ..., at the costs of
    :func:`~dpgauss.covariance._coinpress.staged_costs` (the last gets 3/4 when
    there are several)."""
    kind = kind_of(cost)
    parts = staged_costs(cost, steps)
    return [Release(f"mean_{k}", c, kind) for k, c in enumerate(parts, 1)]


def coinpress_mean(X, frame, center, radius, plan, steps, rng, n_partials):
    """The CoinPress mean in ``frame``, from the ball B(A center, radius).

    Step k clips ``w = A x`` to the ball of radius ``lambda = r + gamma`` around
    the current center c (``gamma`` the Gaussian tail radius of a whitened row,
    :data:`MEAN_BETA`), releases the clipped mean (sensitivity ``2 lambda / n``,
    :func:`~dpgauss.mechanisms._releases.mean_mechanism`), projects it onto
    that ball (where the exact clipped mean lies) and sets
    ``r = gamma sqrt(1/n + s^2)``, s the noise sd of a coordinate. The radii are
    capped at :data:`MAX_FRAME_RADIUS`. Releases ``mean_1`` ... of ``plan``.

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
    gamma = tail_radius(d, MEAN_BETA)
    inverse, scale = frame_inverse(frame)
    with np.errstate(all="ignore"):
        c = frame @ center
    c = np.where(np.isfinite(c), c, 0.0)
    variance = 0.0
    for k in range(1, steps + 1):
        lam = min(radius + gamma, MAX_FRAME_RADIUS)
        # w - c = A (x - A^-1 c): clip the rows' offsets from A^-1 c in the frame.
        origin = _to_rows(inverse, scale, c)
        total = clipped_sums(X, origin, lam, with_outer=False, transform=frame)[0]
        mech = plan.calibrate(
            f"mean_{k}", lambda cost, r=lam: mean_mechanism(cost, n, d, r, n_partials)
        )
        offset = mech.randomise(total / n, rng)
        norm = float(np.linalg.norm(offset))
        if not norm <= lam:  # also inf: project onto the ball (post-processing)
            offset = offset * (lam / norm) if math.isfinite(norm) else np.zeros(d)
        c = c + offset
        variance = noise_variance(mech, d)
        radius = gamma * math.sqrt(1.0 / n + variance)
    return _to_rows(inverse, scale, c), variance, radius


def _to_rows(inverse, scale, c):
    """``A^-1 c`` from :func:`frame_inverse`'s ``(B, f)``, kept finite."""
    big = float(np.finfo(np.float64).max)
    with np.errstate(all="ignore"):
        point = (inverse @ c) / scale
    return np.clip(np.nan_to_num(point, nan=0.0, posinf=big, neginf=-big), -big, big)


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
