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
(``class_statistics`` called directly), it counts in no class and its offset
is 0, so the sensitivities below still hold.

**Rows into the ball.** With the public ``location`` c and radius
``B = data_norm``, a row becomes ``y = clip(x - c, B)``
(:func:`~dpgauss.utils._sums.clip_rows`: the offset first, then the scaling,
so ``||y|| <= B`` as computed for every finite input and a row 1e12 radii away
lies on the sphere like any other).

**Sensitivities** (n, d, K and the classes public; ``e`` the summation's
relative rounding bound, :func:`~dpgauss.utils._sums.summation_error`):

* ``class_counts``: the K counts ``n_k`` (exact integers). A replaced row
  lowers one count by 1 and raises another by 1, or changes none: l2 ``sqrt(2)``,
  l1 2.
* ``class_sums``: the K x d matrix of ``S_k / n``, ``S_k`` the sum of the
  class's offsets, released as one vector. Same class: ``S_k`` moves by
  ``y' - y``, of norm at most 2B; different classes: ``S_a`` by ``-y`` and
  ``S_b`` by ``y'``, of joint norm ``sqrt(||y||^2 + ||y'||^2) <= sqrt(2) B``.
  So l2 ``2B / n``; l1 ``2 sqrt(d) B / n`` (same class: ``sqrt(d)`` times the
  l2 change; different classes: ``||y||_1 + ||y'||_1``). Rounding: each
  computed ``S_k / n`` is within ``e B`` of the exact one (l2), for both
  datasets, so the K computed sums differ from the exact difference by at most
  ``2 e B sqrt(K)`` in l2 (``sqrt(K d)`` times that in l1), whatever the
  order of summation.
* ``second_moment`` (LDA): ``M = (1/n) sum_i y_i y_i^T`` pooled over the
  rows of every class (ignored rows add 0): Frobenius ``sqrt(2) B^2 / n``
  (:func:`~dpgauss.mechanisms._releases.second_moment_mechanism`, with its
  rounding term).
* ``class_second_moments`` (QDA): the K blocks ``M_k = (1/n) sum_{i in k}
  y_i y_i^T`` released as one block-diagonal Kd x Kd symmetric matrix (the
  off-diagonal blocks are 0 for every dataset and change by nothing; only the
  diagonal blocks' noise is drawn, ``randomise_blocks``, which is the
  marginal of the full release: post-processing). Same
  class: ``M_k`` moves by ``(y'y'^T - y y^T) / n``, Frobenius at most
  ``sqrt(2) B^2 / n``; different classes: ``M_a`` by ``-y y^T / n`` and
  ``M_b`` by ``y'y'^T / n``, jointly ``sqrt(||y||^4 + ||y'||^4) / n <=
  sqrt(2) B^2 / n``. l1 over the upper triangle: ``||y y^T||`` there is
  ``((sum |y_j|)^2 + ||y||^2) / 2 <= (d + 1) B^2 / 2``, so at most
  ``(d + 1) B^2 / n`` in both cases. Rounding: each block within ``e B^2``
  (Frobenius) for both datasets, ``2 e B^2 sqrt(K)`` jointly
  (``sqrt(K d (d + 1) / 2)`` times that in l1).

Noise is the exact lattice Gaussian (zCDP) or Laplace (pure DP) of
:mod:`dpgauss.mechanisms`; the costs are split once, in the plan. Everything
after the releases (priors, means, covariances, the classifier) is
post-processing.
"""

import math
import warnings

import numpy as np

from dpgauss.accounting._costs import as_pure
from dpgauss.mechanisms import (
    QuantileMechanism,
)
from dpgauss.mechanisms._factory import additive
from dpgauss.releases._covariance import gauss_spectrum
from dpgauss.utils._sums import (
    clip_rows,
    is_dask_array,
    iter_chunks,
    over_labelled_blocks,
    summation_error,
)

#: Quantile of the rows' distances to the released center that the adaptive
#: clipping radius targets.
RADIUS_QUANTILE = 0.9
#: Candidates of the radius release: ``data_norm * j / (RADIUS_GRID - 1)``.
RADIUS_GRID = 4097

__all__ = [
    "block_moment_mechanism",
    "check_classes",
    "class_covariance",
    "class_statistics",
    "class_sum_mechanism",
    "count_mechanism",
    "encode_labels",
    "project_ball",
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
    no class.
    """
    y = np.asarray(y)
    codes = np.full(y.shape[0], -1, dtype=np.intp)
    for k, label in enumerate(classes):
        codes[_matches(y, label)] = k
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


def class_statistics(X, codes, n_classes, location, radius, outer):
    """Counts, sums and second moments of the clipped rows of each class.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask array of shape (n_samples, n_features)
        The rows (read in chunks, a Dask array block by block in its workers;
        not modified).
    codes : ndarray of int of shape (n_samples,)
        Each row's class index, -1 for an ignored row (offset 0).
    n_classes : int
        K.
    location : ndarray of shape (n_features,)
        The public center c.
    radius : float
        The public radius B.
    outer : {"pooled", "per_class", None}
        Which second moments to sum.

    Returns
    -------
    counts : ndarray of int64 of shape (K,)
    sums : ndarray of shape (K, d)
        Sums of the clipped offsets ``clip(x - c, B)`` of each class.
    moments : ndarray of shape (d, d) or (K, d, d) or None
        Sums of their outer products (pooled or per class), exactly symmetric.

    Notes
    -----
    Each block adds its chunk sums (at most CHUNK_ROWS rows each) and the
    blocks' sums are then added: ``n_partial_sums(X)`` partial sums in all,
    the count the mechanisms' rounding term is calibrated for.
    """
    codes = np.asarray(codes)
    counts = np.bincount(codes[codes >= 0], minlength=n_classes).astype(np.int64)
    if is_dask_array(X):
        parts = over_labelled_blocks(
            X, codes, _block_class_statistics, n_classes, location, radius, outer
        )
    else:
        parts = [_block_class_statistics(X, codes, n_classes, location, radius, outer)]
    with np.errstate(all="ignore"):
        sums = np.sum([p[0] for p in parts], axis=0)
        moments = None
        if outer is not None:
            moments = np.sum([p[1] for p in parts], axis=0)
            moments = 0.5 * (moments + np.swapaxes(moments, -1, -2))
    return counts, sums, moments


def _block_class_statistics(X, codes, n_classes, location, radius, outer):
    """The class sums (and moments) of one block of rows, chunk by chunk.

    Everything under errstate, in a Dask worker too (outside the fit's):
    no floating-point warning may depend on the rows.
    """
    d = X.shape[1]
    sums = np.zeros((n_classes, d))
    if outer == "pooled":
        moments = np.zeros((d, d))
    elif outer == "per_class":
        moments = np.zeros((n_classes, d, d))
    else:
        moments = None
    start = 0
    with np.errstate(all="ignore"):
        for chunk in iter_chunks(X):
            stop = start + chunk.shape[0]
            labels = codes[start:stop]
            y = clip_rows(chunk, location, radius)
            y[labels < 0] = 0.0
            for k in range(n_classes):
                rows = y[labels == k]
                if rows.shape[0]:
                    sums[k] += rows.sum(axis=0)
                    if outer == "per_class":
                        moments[k] += rows.T @ rows
            if outer == "pooled":
                moments += y.T @ y
            start = stop
    return sums, moments


def count_mechanism(cost):
    """Noise for the K class counts: l2 sensitivity sqrt(2), l1 2 (module docstring)."""
    return additive(cost, l2=math.sqrt(2.0), l1=2.0)


def class_sum_mechanism(cost, n, d, n_classes, radius, n_partials=None):
    """Noise for the K x d class sums divided by n (module docstring).

    l2 ``2B/n + 2 e B sqrt(K)``; l1 ``2 sqrt(d) B / n + 2 e B K sqrt(d)``.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.releases._classes import class_sum_mechanism
    >>> round(class_sum_mechanism(ZCDP(1.0), 100, 4, 3, 1.0).sensitivity, 9)
    0.02
    """
    rounding = 2.0 * summation_error(n, n_partials) * radius * math.sqrt(n_classes)
    l2 = 2.0 * radius / n + rounding
    l1 = 2.0 * math.sqrt(d) * radius / n + math.sqrt(n_classes * d) * rounding
    return additive(cost, l2=l2, l1=l1)


def block_moment_mechanism(cost, n, d, n_classes, radius, n_partials=None):
    """Noise for the K per-class second moments as one block-diagonal matrix.

    Frobenius ``sqrt(2) B^2 / n + 2 e B^2 sqrt(K)``; l1 over the upper triangle
    ``(d + 1) B^2 / n`` plus ``sqrt(K d (d + 1) / 2)`` times the rounding.
    """
    r2 = radius * radius
    rounding = 2.0 * summation_error(n, n_partials) * r2 * math.sqrt(n_classes)
    l2 = math.sqrt(2.0) * r2 / n + rounding
    upper = n_classes * d * (d + 1) / 2.0
    l1 = (d + 1.0) * r2 / n + math.sqrt(upper) * rounding
    return additive(cost, l2=l2, l1=l1, symmetric=True)


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
