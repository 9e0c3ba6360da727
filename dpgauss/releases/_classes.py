"""Per-class statistics and their releases, for the private discriminant analyses.

Both classifiers model each class k as a Gaussian N(mu_k, Sigma_k) (LDA: one
pooled Sigma) with prior pi_k, and classify by the largest posterior. Their
releases are sums over the rows of one class, so they are charged for the
replace-one relation in which **one changed row can change its class as well
as its features** (it leaves one class and joins another).

**Labels.** The classes are a public constructor parameter: ``np.unique(y)``
on private labels would publish which labels occur (in ``classes_``). Labels
outside them are refused before any spend, like NaN in ``X`` (input
validation, seen by the data holder, not released); a class absent from ``y``
is not detected (its released count is noise around 0). The check does not
depend on scikit-learn's configuration (with ``assume_finite`` a NaN or
infinite label is refused as continuous or as outside the classes). Each
row's class index is computed once, before the spend, from its own label only
(:func:`encode_labels`); should a row with another label reach the releases
(``labelled_statistics`` called directly), it counts in no class and its offset
is 0, so the sensitivities below still hold.

**Rows into the ball.** With the public ``location`` c and radius
``B = data_norm``, a row becomes ``y = clip(x - c, B)``
(:func:`~dpgauss.utils._sums.clip_rows`: the offset first, then the scaling,
so ``||y|| <= B`` as computed for every finite input and a row 1e12 radii away
lies on the sphere like any other).

**Sensitivities.** The class statistics are the labelled group statistics
of :mod:`dpgauss.releases._groups` (one-hot weights, the offsets above), whose
docstring proves them for a row that changes its group; n, d, K and the
classes are public, ``e`` is the summation's relative rounding bound
(:func:`~dpgauss.utils._sums.summation_error`):

* ``class_counts``: the K counts ``n_k`` (exact integers): l2 ``sqrt(2)``,
  l1 2 (:func:`~dpgauss.releases._groups.count_mechanism`).
* ``class_sums``: the K x d matrix of ``S_k / n``, ``S_k`` the sum of the
  class's offsets, released as one vector: l2 ``2B / n + 2 e B sqrt(K)``, l1
  ``2 sqrt(d) B / n`` plus ``sqrt(K d)`` times the rounding
  (:func:`~dpgauss.releases._groups.labelled_sum_mechanism`).
* ``second_moment`` (LDA): ``M = (1/n) sum_i y_i y_i^T`` pooled over the
  rows of every class (ignored rows add 0): Frobenius ``sqrt(2) B^2 / n``
  (:func:`~dpgauss.mechanisms._releases.second_moment_mechanism`, with its
  rounding term).
* ``class_second_moments`` (QDA): the K blocks ``M_k = (1/n) sum_{i in k}
  y_i y_i^T`` released as one block-diagonal Kd x Kd symmetric matrix:
  Frobenius ``sqrt(2) B^2 / n + 2 e B^2 sqrt(K)``, upper-triangle l1 ``(d +
  1) B^2 / n`` plus ``sqrt(K d (d + 1) / 2)`` times the rounding
  (:func:`~dpgauss.releases._groups.labelled_moment_mechanism`). Only the
  diagonal blocks' noise is drawn (``randomise_blocks``), the marginal of
  the full release: post-processing.

* ``pooled_squares`` (the diagonal plan of both): the d-vector ``(1/n)
  sum_i y_i o y_i``: l1 ``2 B^2 / n``, l2 ``sqrt(2) B^2 / n`` plus the
  rounding (:func:`~dpgauss.releases._groups.labelled_square_mechanism`,
  one group).

With a public box the rows are first mapped into the unit box
(:func:`~dpgauss.releases._box.box_offsets`, each from its own row), and B is
``sqrt(d)`` (rounded up) around the box's center: the same bounds hold.

Noise is the exact lattice Gaussian (zCDP) or Laplace (pure DP) of
:mod:`dpgauss.mechanisms`; the costs are split once, in the plan. Everything
after the releases (priors, means, covariances, the classifier) is
post-processing.
"""

import math
import warnings

import numpy as np
from scipy.special import ndtr

from dpgauss.accounting._costs import as_pure
from dpgauss.mechanisms import QuantileMechanism
from dpgauss.releases._covariance import gauss_error, gauss_spectrum
from dpgauss.releases._diagonal import BOX_FILL, REFERENCE_CORRELATION
from dpgauss.releases._prediction import Prediction
from dpgauss.utils._sums import CHUNK_ROWS

#: Quantile of the rows' distances to the released center that the adaptive
#: clipping radius targets.
RADIUS_QUANTILE = 0.9
#: Candidates of the radius release: ``data_norm * j / (RADIUS_GRID - 1)``.
RADIUS_GRID = 4097

#: The reference problem the predictions before the spend take (they steer
#: the plan and the refusal, never privacy). Two classes (the largest and one
#: other) whose means lie REFERENCE_SEPARATION within-class standard
#: deviations apart (Mahalanobis distance; 7% error without noise at equal
#: priors), the separation spread evenly over the d coordinates, each
#: coordinate of within-class variance BOX_FILL in box units (BOX_FILL B^2 / d
#: for a ball of radius B). With two classes the larger holds
#: REFERENCE_MAJORITY of the rows; with K > 2 the pair is two of K equal
#: classes (a K-class table whose rows concentrate in one class is, for its
#: noise, closer to that than to one class of share 0.6 and K - 1 slivers).
#: The refusal is the pre-spend half of a pair: a fit that spends and finds
#: no signal in its released means falls back on the priors and warns
#: (:mod:`dpgauss.releases._class_rule`), so the refusal is kept for rows
#: where even well separated classes would lose to the majority class. At 3
#: sds (not 2) the refusal no longer fires where the noise-corrected rule
#: spends usefully; on the real-data benchmark (10 seeds, pure epsilon) it
#: refuses breast cancer at n = 150, epsilon <= 2, and at n = 427, epsilon
#: <= 1, and the tables at epsilon 0.5 and n = 134-177; where it spends
#: without signal the fallback answers the majority class with a warning
#: (breast cancer at n = 427 and epsilon 2: 6 of 10 fits).
REFERENCE_SEPARATION = 3.0
REFERENCE_MAJORITY = 0.6
#: A fit spends only when its predicted error on the reference problem is at
#: most this share of the majority class's: noise that only ties the
#: majority class is not worth the budget.
USEFUL_SHARE = 0.9
#: The 90% quantile of a standard normal (the reference rows' radius).
_Z90 = 1.2815515655446004
#: The share of the James-Stein shrinkage the class means get
#: (:func:`shrink_means`). Full James-Stein minimises the means' squared
#: error, but a classifier reads the deviations' directions, which keep signal
#: below that threshold: on the real-data benchmark (LDA and QDA, pure epsilon
#: 0.5-2 and rho 0.125 at n = 150-708) a quarter kept every median at or below
#: the majority class's, as full James-Stein did, while keeping the accuracy
#: the unshrunk means had where they beat it (anes96 at n = 708, epsilon 1:
#: 0.11 against 0.12 with full shrinkage and 0.43 for the majority class).
MEAN_SHRINKAGE = 0.25

__all__ = [
    "REFERENCE_MAJORITY",
    "REFERENCE_SEPARATION",
    "USEFUL_SHARE",
    "check_classes",
    "class_covariance",
    "class_variances",
    "covariance_error",
    "encode_labels",
    "pool_spectra",
    "project_ball",
    "reference_error",
    "reference_radius",
    "shrink_means",
    "shrink_spectrum",
]


def check_classes(classes, owner):
    """The public classes as a sorted array of unique labels (at least two).

    Raises
    ------
    ValueError
        If ``classes`` is missing, not 1-D, has repeated labels, fewer than two
        labels or labels that cannot be ordered.
    """
    if classes is None:
        raise ValueError(
            f"{owner}: classes is required: the public list of class labels. "
            "dpgauss never reads them off y (np.unique(y) would publish which "
            "labels occur in the private rows)."
        )
    if isinstance(classes, str | bytes):
        raise ValueError(f"{owner}: classes must be a list of labels, not a string.")
    labels = np.asarray(classes)
    if labels.ndim != 1:
        raise ValueError(f"{owner}: classes must be one-dimensional.")
    try:
        unique = np.unique(labels)
    except TypeError as exc:
        raise ValueError(f"{owner}: classes must be comparable ({exc}).") from exc
    if unique.size != labels.size:
        raise ValueError(f"{owner}: classes has repeated labels.")
    if unique.size < 2:
        raise ValueError(f"{owner}: classes needs at least two labels.")
    return unique


def encode_labels(y, classes):
    """Each label's index in the sorted ``classes``, or -1 for another label.

    Never raises or warns on the values of ``y`` (which are private), and each
    row's code depends on its own label only: where numpy cannot compare the
    whole array with a class (an object array holding an array, say), the
    labels are compared one by one, and one that cannot be compared matches
    no class. The codes are the smallest signed integers that hold them (one
    byte a row up to 127 classes), computed a chunk of rows at a time.
    """
    y = np.asarray(y)
    codes = np.full(y.shape[0], -1, dtype=np.min_scalar_type(-len(classes) - 1))
    for start in range(0, y.shape[0], CHUNK_ROWS):
        part, out = y[start : start + CHUNK_ROWS], codes[start : start + CHUNK_ROWS]
        for k, label in enumerate(classes):
            out[_matches(part, label)] = k
    return codes


def _matches(y, label):
    """Boolean mask of the rows of ``y`` equal to ``label`` (row by row)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            hit = np.asarray(y == label, dtype=bool)
            if hit.shape == (y.shape[0],):
                return hit
        except (TypeError, ValueError):
            pass
        hit = np.zeros(y.shape[0], dtype=bool)
        for i, value in enumerate(y):
            try:
                hit[i] = bool(value == label)
            except (TypeError, ValueError):
                pass
        return hit


def _radius_mechanism(cost, data_norm):
    """The exponential-mechanism quantile of the distances (pure DP)."""
    return QuantileMechanism(
        RADIUS_QUANTILE,
        bounds=(0.0, data_norm),
        epsilon=as_pure(cost).epsilon,
        n_candidates=RADIUS_GRID,
    )


def shrink_spectrum(values, noise_sd, d, shrinkage):
    """Floor and shrink the eigenvalues of a released covariance (free).

    Parameters
    ----------
    values : ndarray of shape (d,)
        Eigenvalues of the within-class covariance (any sign).
    noise_sd : float
        Standard deviation of one entry of the second-moment release (public).
    d : int
        Features.
    shrinkage : None, "auto" or float in [0, 1]
        Weight of the scaled identity ``mean(values) I``; "auto" takes
        ``eta / (eta + mean(values))`` with ``eta = sqrt(d) noise_sd``, the
        typical size of the release's noise eigenvalues (the noise matrix's
        spectrum spreads over about ``[-2 eta, 2 eta]``): about 0 when the
        average variance dominates the noise, about 1 (the nearest-mean
        classifier) when the noise swamps it.

    Returns
    -------
    ndarray of shape (d,)
        Positive eigenvalues.
    """
    floor = max(noise_sd, 1e-300)
    values = np.maximum(values, floor)
    average = float(np.mean(values))
    if shrinkage is None:
        weight = 0.0
    elif isinstance(shrinkage, str):
        eta = np.sqrt(d) * noise_sd
        weight = eta / (eta + average)
    else:
        weight = float(shrinkage)
    return (1.0 - weight) * values + weight * average


def class_covariance(mechanism, released, cap, scale, between, shrinkage):
    """A class (or pooled within-class) covariance from a released second moment.

    Post-processing: the released matrix's spectrum is denoised and projected
    onto {PSD, trace <= cap}
    (:func:`~dpgauss.releases._covariance.gauss_spectrum`), rescaled by
    ``scale`` (``n / n_k`` for one class's share of the rows), the
    between-part ``between`` (released means) is subtracted, and the
    eigenvalues are floored and shrunk (:func:`shrink_spectrum`, with the
    release's noise sd times ``scale``).

    Returns
    -------
    values : ndarray of shape (d,)
        Positive eigenvalues.
    vectors : ndarray of shape (d, d)
        Eigenvectors.
    """
    d = released.shape[0]
    values, vectors, _ = gauss_spectrum(mechanism, released, cap)
    second = (vectors * (values * scale)) @ vectors.T
    cov = second - between
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    sd = mechanism.sd() * scale
    return shrink_spectrum(values, sd, d, shrinkage), vectors


def project_ball(offsets, radius):
    """Rows scaled into the l2 ball of ``radius`` (released values: free)."""
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(offsets, axis=1)
        factor = np.where(norms > radius, radius / np.maximum(norms, 1e-300), 1.0)
    return offsets * factor[:, None]


def class_variances(released, scale, between, noise_sd, cap, shrinkage):
    """Per-coordinate within-class variances from released squares (free).

    Parameters
    ----------
    released : ndarray of shape (d,)
        A released vector of squares over n (a class's, or pooled).
    scale : float
        ``n / n_k`` for one class's squares (released count), 1 when pooled.
    between : ndarray of shape (d,)
        What the released means explain: ``m_k ** 2`` for a class, ``sum_k
        w_k m_k ** 2`` when pooled.
    noise_sd : float
        The public noise sd of one released entry.
    cap : float or ndarray
        The largest second moment a coordinate can have (``B^2`` in a ball of
        radius B): the squares are projected onto ``[0, cap]`` first.
    shrinkage : None, "auto" or float in [0, 1]
        As :func:`shrink_spectrum`, with the noise level of one entry (a
        diagonal release's noise does not spread over a spectrum).

    Returns
    -------
    ndarray of shape (d,)
        Positive variances (floored at the noise sd times ``scale``).
    """
    with np.errstate(all="ignore"):
        squares = np.clip(np.nan_to_num(released, nan=0.0), 0.0, cap) * scale
        values = np.nan_to_num(squares - between, nan=0.0, posinf=0.0, neginf=0.0)
    return shrink_spectrum(values, noise_sd * scale, 1, shrinkage)


def reference_radius(radius, d, adaptive):
    """The clipping radius of the reference rows: ``radius`` when fixed, else
    their 90% distance from the center (rows of variance ``BOX_FILL B^2 / d``
    per coordinate: ``||y||^2`` about ``v (d + z90 sqrt(2 d))``), at most
    ``radius``. Public values only."""
    if not adaptive:
        return float(radius)
    v = BOX_FILL * radius * radius / d
    quantile = math.sqrt(v * (d + _Z90 * math.sqrt(2.0 * d)))
    return float(min(radius, max(quantile, radius / (RADIUS_GRID - 1))))


def covariance_error(mechanism, d, radius, kind, share=1.0):
    """Predicted Frobenius error of a class's (or the pooled) within-class
    covariance on the reference rows, and the reference covariance's norm.

    ``kind`` is ``"full"`` (a released second moment, GaussCov's predicted
    error :func:`~dpgauss.releases._covariance.gauss_error` at the share's
    trace, divided by ``share``) or ``"diag"`` (released squares: each
    variance's noise, capped at the variance's own size by the shrinkage,
    plus the off-diagonal mass it leaves, :data:`REFERENCE_CORRELATION`).
    ``share`` is the class's share of the rows (1 when pooled). Public
    values only.
    """
    v = BOX_FILL * radius * radius / d
    off = REFERENCE_CORRELATION * v * math.sqrt(d * (d - 1.0))
    norm = math.hypot(math.sqrt(d) * v, off)
    if kind == "full":
        error = gauss_error(mechanism, d, share * d * v) / share
        return min(error, norm), norm
    sd = mechanism.sd() / share
    noise = math.sqrt(d) * min(sd, v)
    return math.hypot(noise, off), norm


def reference_error(mean_sd, variance_share, d, n_classes):
    """Predicted error of the private classifier on the reference problem,
    against the majority class's.

    The two classes hold shares ``p`` (REFERENCE_MAJORITY) and ``q = 1 - p``
    of the rows (K = 2), or ``1 / K`` each; their released means carry noise of sd
    ``mean_sd / p`` and ``mean_sd / q`` per coordinate (``mean_sd``: one
    entry of the released class sums over n, in units of the within-class
    sd), and the released covariance a relative error ``variance_share``
    (at most 1, where shrinkage takes over), which moves each weight of the
    discriminant by that share of the signal. The score ``w (x - m) + log
    (p / q)`` with ``w = (m_a - m_b + e) / v`` then has, per class, mean
    ``+-D^2 / 2 + log(p / q)`` and variance ``D^2 + d s^2``, where ``D`` is
    the separation and ``s^2`` the noise variance of ``m_a - m_b`` per
    coordinate (plus the covariance's share of the signal). The noisier
    mean's pull away from every row, ``d (s_b^2 - s_a^2) / 2``, is removed
    by the classifier's noise correction
    (:func:`~dpgauss.releases._class_rule.noise_corrections`). Public
    values only.

    Returns
    -------
    Prediction
        ``error`` and ``baseline`` (the majority class's error, ``q / (p +
        q)``) in the metric ``"error rate"``.
    """
    if n_classes == 2:
        p, q = REFERENCE_MAJORITY, 1.0 - REFERENCE_MAJORITY
    else:
        p = q = 1.0 / n_classes
    sep = REFERENCE_SEPARATION
    signal = sep * sep / d  # per coordinate, in within-class variances
    var_a, var_b = (mean_sd / p) ** 2, (mean_sd / q) ** 2
    noise = var_a + var_b + signal * min(variance_share, 1.0) ** 2
    spread = math.sqrt(sep * sep + d * noise)
    shift = math.log(p / q)
    half = 0.5 * sep * sep
    with np.errstate(all="ignore"):
        miss_a = float(ndtr(-(half + shift) / spread))
        miss_b = float(ndtr((shift - half) / spread))
    error = (p * miss_a + q * miss_b) / (p + q)
    return Prediction(error, q / (p + q), "error rate")


def shrink_means(offsets, sizes, noise_sd):
    """Released class means shrunk towards their weighted average (free).

    Each class's deviation ``u_k = m_k - m`` from the average ``m = sum_k w_k
    m_k`` (weights the released sizes) is multiplied by a positive-part
    James-Stein factor ``max(0, 1 - a (d - 2) s_k^2 / ||u_k||^2)``, ``a`` =
    :data:`MEAN_SHRINKAGE`, ``s_k`` the public noise sd of one coordinate of
    ``m_k`` (for d <= 2 the factor's ``d - 2`` is taken as 1/2, a milder
    shrinkage). A deviation the
    noise explains is pulled to the average, so the classifier falls back on
    the priors (the majority class) where the means carry no signal, and a
    deviation far above the noise is kept (factor near 1). Released and
    public values only: post-processing.

    Parameters
    ----------
    offsets : ndarray of shape (K, d)
        The released class means (offsets from the clipping center).
    sizes : ndarray of shape (K,)
        The released class sizes (positive).
    noise_sd : ndarray of shape (K,)
        Each class mean's noise sd per coordinate.

    Returns
    -------
    ndarray of shape (K, d)
    """
    d = offsets.shape[1]
    weights = sizes / np.sum(sizes)
    average = weights @ offsets
    deviations = offsets - average
    with np.errstate(all="ignore"):
        norms = np.sum(deviations * deviations, axis=1)
        noise = MEAN_SHRINKAGE * max(d - 2.0, 0.5) * noise_sd**2
        factor = 1.0 - noise / np.maximum(norms, 1e-300)
    factor = np.clip(np.nan_to_num(factor, nan=0.0), 0.0, 1.0)
    return average + factor[:, None] * deviations


def pool_spectra(spectra, sizes, noise):
    """Class covariances shrunk towards their pooled covariance (free).

    Each class covariance ``C_k`` (its spectrum) becomes ``(1 - a_k) C_k + a_k
    C``, ``C = sum_k w_k C_k`` with the released sizes as weights, and ``a_k
    = eta_k / (eta_k + mean eigenvalue of C_k)``, ``eta_k`` the public
    spectral noise level of class k's release (``sqrt(d)`` times its entry
    sd, scaled by ``n / n_k``): a class whose covariance the noise swamps
    takes the pooled one (the linear discriminant's), one with a clear
    covariance keeps its own. A class covariance inflated by noise would
    otherwise claim every row far from all means. Released and public values
    only; positive definite in, positive definite out.

    Parameters
    ----------
    spectra : list of (ndarray of shape (d,), ndarray of shape (d, d))
        Each class covariance's positive eigenvalues and eigenvectors.
    sizes : ndarray of shape (K,)
        The released class sizes (positive).
    noise : sequence of float
        Each class's spectral noise level ``eta_k``.

    Returns
    -------
    list of (ndarray, ndarray)
        The shrunk spectra, eigenvalues positive.
    """
    weights = np.asarray(sizes, dtype=np.float64) / float(np.sum(sizes))
    covs = [(vectors * values) @ vectors.T for values, vectors in spectra]
    pooled = sum(w * c for w, c in zip(weights, covs, strict=True))
    out = []
    for (values, _), cov, eta in zip(spectra, covs, noise, strict=True):
        share = eta / (eta + float(np.mean(values)))
        mixed = (1.0 - share) * cov + share * pooled
        new_values, new_vectors = np.linalg.eigh(0.5 * (mixed + mixed.T))
        # A convex mix of positive definite matrices: its smallest eigenvalue
        # is at least the mix of theirs (floored at that, for rounding).
        floor = (1.0 - share) * float(np.min(values)) + share * min(
            float(np.min(v)) for v, _ in spectra
        )
        out.append((np.maximum(new_values, floor), new_vectors))
    return out
