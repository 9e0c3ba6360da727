"""Per-coordinate bounds from a released second moment's diagonal (post-processing).

A helper module of the release layer. A covariance release of rows clipped to
an l2 ball adds noise of the same size to every entry, whatever each column's
own scale, so a column whose variance is below that noise comes out as noise:
with columns in units from 1e-3 to 1e6 the estimate was 1e15 times the zero
matrix's error measured in each column's own standard deviations. The
diagonal of the released noisy matrix measures each coordinate's second
moment ``M_jj`` with noise of public standard deviation s, and
:func:`confine` keeps the estimate within what it shows:

* K is the ``1 - beta / d`` quantile of one noise draw (``beta = 1e-3``),
  so that ``U_j = max(D_j, 0) + K s`` bounds every ``M_jj`` with
  probability at least ``1 - beta``;
* every coordinate's variance is capped at ``U_j`` by ``S C S`` with
  ``S_jj = min(1, sqrt(U_j / C_jj))`` (a congruence: C stays PSD, so
  ``|C_ij| <= sqrt(U_i U_j)``); where ``D_j >= K s``, ``M_jj >= (K - z) s``
  for its noise draw z, so ``U_j`` is within a small factor of ``M_jj``;
* a coordinate is *unmeasured* when :func:`kept` does not keep its released
  diagonal: below ``K s`` where the diagonal shows faint columns (an entry
  below 0, or the median within ``LENIENT_SDS`` = 2 sds), below ``2 s``
  otherwise (a column filling a tenth of its box among wide ones, 3 sds
  above 0, is measured: modechoice at rho 0.125 went from 0.71 to 0.31 of
  the zero matrix's error in the columns' own units; the per-coordinate
  releases estimate the variances they keep by :func:`estimated`, a
  garrote from 1 s). Its second moment may
  be anything from 0 to ``U_j``. When the largest
  released diagonal exceeds its own by at least ``SPREAD K s`` the release
  shows the columns' scales differ, and the spectrum's pooled estimate (the
  denoiser's blend towards ``(tr / d) I``) would give it a share of the
  others' scale: its row and column are set to 0, the zero matrix's answer
  for it (no positive value is within a bounded factor of a second moment
  that may be 0). Otherwise the pooled estimate is kept, capped at ``U_j``:
  it uses the trace, measured more precisely than any one coordinate, and
  for columns of one scale near the noise it does better than 0 (0.40
  against 0.46 of the zero matrix's error at n = 150, d = 4, rho = 0.1);
  the estimators warn that such coordinates may be far off in their own
  units.

The fitted Gaussian needs a positive definite matrix: the result is given in
the frame ``diag(r)``, ``r_j = sqrt(U_j)`` for a kept coordinate and
``2^-26 min_k sqrt(U_k)`` for the others, so that the estimator's eigenvalue
floor, applied in that frame, gives an unmeasured coordinate a variance of at
most ``2^-52`` of the smallest bound rather than the noise's size.

Privacy: every function here reads released values (the noisy matrix's
diagonal, the released spectrum) and public ones (the noise's sd, d, beta)
only; by the post-processing property the result has the release's guarantee.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpgauss.utils._linalg import eigh_descending

__all__ = [
    "GARROTE_SDS",
    "LENIENT_SDS",
    "Confined",
    "confine",
    "estimated",
    "faint_columns_show",
    "kept",
    "noise_quantile",
]

#: The probability that some coordinate whose second moment is 0 is taken as
#: measured (and that some bound ``U_j`` is below ``M_jj``).
BETA = 1e-3
#: An unmeasured coordinate is set to 0 when the largest released diagonal
#: exceeds its own by this many times ``K s`` (see the module docstring): at
#: 2 a mixture's column at the noise (box variance 0.042 against K s = 0.052,
#: the largest 0.17) was set to 0 and the fit's error went from 0.33 to 0.53
#: of the zero matrix's; the columns 1e-3..1e6 apart are far beyond 4.
SPREAD = 4.0
#: The unmeasured coordinates' frame scale, relative to the smallest bound's.
UNMEASURED_SCALE = 2.0**-26

#: Where no released variance is below 0 and the median is this many sds of
#: its noise above 0, a variance is kept from this many sds of its noise.
LENIENT_SDS = 2.0


def noise_quantile(d, pure, beta=BETA):
    """K: one noise draw exceeds ``K`` sds with probability ``beta / d``.

    Gaussian noise (zCDP): the normal ``1 - beta / d`` quantile. Laplace noise
    (pure DP, scale b, sd ``b sqrt(2)``): ``P(X > t) = exp(-t / b) / 2``, so
    ``K = log(d / (2 beta)) / sqrt(2)``.

    Examples
    --------
    >>> from dpgauss.releases._measured import noise_quantile
    >>> round(noise_quantile(10, pure=False), 2)
    3.72
    >>> round(noise_quantile(10, pure=True), 2)
    6.02
    """
    p = beta / max(int(d), 1)
    if pure:
        return math.log(0.5 / p) / math.sqrt(2.0)
    return float(stats.norm.isf(p))


def faint_columns_show(raw, sd):
    """Whether released variances ``raw`` (noise sds ``sd``) show columns
    fainter than the noise: some entry below 0, or the median below
    :data:`LENIENT_SDS` sds (the strict case of :func:`kept`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._measured import faint_columns_show
    >>> faint_columns_show(np.array([0.25, 0.3, 0.5]), 0.1)
    False
    >>> faint_columns_show(np.array([-0.05, 0.3, 0.5]), 0.1)
    True
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        z = np.nan_to_num(raw / sd, nan=0.0)
    return bool(np.min(z) < 0.0) or bool(np.median(z) < LENIENT_SDS)


def kept(raw, sd, quantile):
    """Which released variances ``raw`` to keep (the rule of
    :mod:`dpgauss.releases._faint`).

    Parameters
    ----------
    raw : ndarray of shape (d,)
        The released variances, noise included.
    sd, quantile : ndarray of shape (d,)
        Their noise's sd and quantile
        (:func:`~dpgauss.releases._faint.variance_noise`).

    Returns
    -------
    ndarray of shape (d,), dtype bool

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._measured import kept
    >>> sd, q = np.full(3, 0.1), np.full(3, 0.4)
    >>> kept(np.array([0.25, 0.3, 0.5]), sd, q).tolist()  # none faint: 2 sds
    [True, True, True]
    >>> kept(np.array([-0.05, 0.3, 0.5]), sd, q).tolist()  # one shows: quantile
    [False, False, True]
    """
    if faint_columns_show(raw, sd):
        return raw >= quantile
    return raw >= LENIENT_SDS * sd


#: Where no column shows itself fainter than the noise, a released variance
#: ``r`` of noise sd ``s`` is estimated by the garrote ``r - (g s)^2 / r``
#: from ``g s`` (0 below): continuous where the rule's hard threshold at
#: :data:`LENIENT_SDS` was not, so a column near the threshold is no longer
#: either dropped or kept at its full (most often inflated) value. At
#: ``g = 1`` it is ``c r`` with ``c = 1 - s^2 / r^2``, the plug-in (``v^2``
#: estimated by ``r^2 - s^2``) of the factor ``v^2 / (v^2 + s^2)`` that
#: minimises the expected relative error ``E[(c r - v)^2] / v^2`` of a
#: variance ``v`` released as ``r = v + noise``; 1.25 shrank a column at 1.5
#: noise sds to 0.31 of its release where the factor is 0.69. bench_real (30
#: seeds; the covariance estimators, PCA, the scaler, LDA and QDA): tested
#: fails 103 -> 100, the far-mean, mixture and anes96 rows 5-16% lower, no
#: new clear loss or silent row; randhie at epsilon 1, n = 150, 0.82 -> 0.85
#: (a seed already 5 times the zero matrix's error, warned, 5.8).
GARROTE_SDS = 1.0


def estimated(raw, sd, quantile):
    """The variances the per-coordinate releases return (post-processing):
    where the released values show faint columns (:func:`faint_columns_show`)
    those at or above ``quantile``, unchanged; otherwise the garrote of
    :data:`GARROTE_SDS`; 0 elsewhere. In [0, 1].

    Under each column's own units (relative error) a column whose variance
    ``v`` is ``a`` noise sds keeps an error of about ``1 / a`` kept and 1
    dropped; the hard threshold at 2 sds dropped the columns at 1 to 2 sds
    (where keeping wins) half of the time and kept the others at their
    inflated draws. On the real-data benchmark's 228 rows (the per-coordinate
    release alone, 10 samples x 3 draws, against the better of the zero
    matrix and the private diagonal) the rows above it by 5% or with a draw
    beyond 3 times it fell from 38 to 19, those beyond 1.3 times or 3 times
    from 7 to 4; the faint tables (Student t and digits in their min/max box)
    take the first branch and are unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._measured import estimated
    >>> sd, q = np.full(3, 0.1), np.full(3, 0.4)
    >>> np.round(estimated(np.array([0.1, 0.3, 0.5]), sd, q), 4).tolist()
    [0.0, 0.2667, 0.48]
    >>> estimated(np.array([-0.05, 0.3, 0.5]), sd, q).tolist()
    [0.0, 0.0, 0.5]
    """
    raw = np.asarray(raw, dtype=np.float64)
    if faint_columns_show(raw, sd):
        return np.where(raw >= quantile, np.clip(raw, 0.0, 1.0), 0.0)
    level = GARROTE_SDS * np.asarray(sd, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        shrunk = raw - level * level / raw
    return np.where(raw >= level, np.clip(np.nan_to_num(shrunk), 0.0, 1.0), 0.0)


@dataclass(frozen=True)
class Confined:
    """A spectrum confined by :func:`confine`, in the frame ``diag(scale)``.

    Attributes
    ----------
    values : ndarray of shape (d,)
        Decreasing eigenvalues (>= 0) of ``diag(scale)^-1 C diag(scale)^-1``.
    vectors : ndarray of shape (d, d)
        Their eigenvectors.
    scale : ndarray of shape (d,)
        The frame (positive, finite).
    noise_sd : float
        The release's noise sd in the frame's units at the widest coordinate
        (the smallest: for the eigenvalue floor).
    unmeasured : ndarray of shape (d,), dtype bool
        The coordinates whose row and column were set to 0.
    uncertain : ndarray of shape (d,), dtype bool
        The unmeasured coordinates that were kept (pooled, capped).
    changed : bool
        Whether any row and column was set to 0 or any variance capped (when
        not, the estimate is the given spectrum's, and callers may keep it
        as released).
    """

    values: np.ndarray
    vectors: np.ndarray
    scale: np.ndarray
    noise_sd: float
    unmeasured: np.ndarray
    uncertain: np.ndarray
    changed: bool


def confine(values, vectors, measured, pure, beta=BETA, ceiling=None, drop=None):
    """The estimate ``V diag(values) V^T`` confined by the released diagonal.

    Parameters
    ----------
    values, vectors : ndarray
        The released spectrum (eigenvalues >= 0, eigenvectors by column).
    measured : MeasuredDiagonal
        The released noisy matrix's diagonal (same units) and its noise sd.
    pure : bool
        Laplace noise (pure DP) rather than Gaussian.
    beta : float, default=BETA
        See the module docstring.
    ceiling : float, default=None
        A public bound on every second moment (1 in box units): the bounds
        ``U_j`` are at most it.
    drop : ndarray of shape (d,), dtype bool, default=None
        Coordinates already found within the noise by a rule that reads
        released values only (:func:`~dpgauss.releases._offdiagonal.sparsify`):
        their rows and columns are set to 0 as unmeasured ones are.

    Returns
    -------
    Confined or None
        None when the noise sd is not a positive finite number (nothing to
        measure against).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._covariance import MeasuredDiagonal
    >>> from dpgauss.releases._measured import confine
    >>> C = np.diag([1e6, 50.0, 1.0])  # the estimate; the last column is noise
    >>> values, vectors = np.linalg.eigh(C)
    >>> released = MeasuredDiagonal(np.array([1e6, 1.0, 0.1]), 0.1)
    >>> out = confine(values, vectors, released, pure=False)
    >>> out.unmeasured
    array([False, False,  True])
    >>> frame = (out.vectors * out.values) @ out.vectors.T
    >>> covariance = frame * np.outer(out.scale, out.scale)
    >>> np.round(np.diag(covariance), 2).tolist()  # 50 capped at 1 + 3.4 * 0.1
    [1000000.0, 1.34, 0.0]
    """
    sd = float(measured.sd)
    if not 0.0 < sd < math.inf:
        return None
    d = len(values)
    k = noise_quantile(d, pure, beta)
    released = np.nan_to_num(np.asarray(measured.values, dtype=np.float64))
    values = np.clip(np.nan_to_num(values, nan=0.0, posinf=0.0), 0.0, None)
    sds = np.full(d, sd)
    low_level = ~kept(released, sds, k * sds)
    with np.errstate(over="ignore", invalid="ignore"):
        below_top = float(np.max(released)) - released >= SPREAD * k * sd
    keep = ~(low_level & below_top)
    if drop is not None:
        keep &= ~np.asarray(drop, dtype=bool)
    top = np.finfo(np.float64).max if ceiling is None else float(ceiling)
    with np.errstate(over="ignore"):
        upper = np.minimum(np.maximum(released, 0.0) + k * sd, top)
    root = np.sqrt(upper)
    low = UNMEASURED_SCALE * float(np.min(root))
    scale = np.where(keep, root, low)
    # In the frame first (entries of order 1 there), then the caps: each
    # kept coordinate's variance at most 1 (its bound U_j), the unmeasured
    # ones' rows and columns 0. S F S is a congruence: PSD is kept.
    vectors = np.asarray(vectors, dtype=np.float64)
    with np.errstate(all="ignore"):
        rows = vectors / scale[:, None]
        frame = (rows * values) @ rows.T
    frame = np.nan_to_num(0.5 * (frame + frame.T), nan=0.0, posinf=0.0, neginf=0.0)
    diag = np.diag(frame)
    shrink = np.where(diag > 1.0, 1.0 / np.sqrt(np.maximum(diag, 1.0)), 1.0)
    shrink = np.where(keep, shrink, 0.0)
    frame = frame * np.outer(shrink, shrink)
    out_values, out_vectors = eigh_descending(0.5 * (frame + frame.T))
    out_values = np.clip(out_values, 0.0, float(d))
    noise = max(sd / float(np.max(upper)), np.finfo(np.float64).tiny)
    changed = bool(np.any(~keep) or np.any(shrink < 1.0))
    return Confined(
        out_values, out_vectors, scale, noise, ~keep, low_level & keep, changed
    )
