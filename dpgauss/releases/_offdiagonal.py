"""What a full covariance release shows beyond its noise, in a box (post-processing).

Not an estimator module. A full release in box units (GaussCov, or
SeparateCov's noisy copy) adds noise of one size to every entry, whatever
the columns' own variances. Two things it may not show:

* **correlations.** On a table whose columns are uncorrelated the d (d - 1) / 2
  released off-diagonal entries are pure noise, which the diagonal release
  never pays. :func:`noise_only` tests them as a whole: their sum of squares
  over the public noise variance, ``T``, is chi-squared with ``m = d (d -
  1) / 2`` degrees of freedom under pure noise; when ``T <= m + GLOBAL_Z
  sqrt(2 m)``, and the matrix they make shows no direction beyond the
  noise's spectral edge (:func:`no_direction`), they are all set to 0 and
  the estimate is its own diagonal
  (the denoised spectrum's, which pools the trace: on far-mean and Student t
  columns of similar scales it measured closer than the raw released
  diagonal). Otherwise every entry is kept, so correlations the release can
  see keep their full rotation.
* **faint columns.** Where correlations show, the spectrum's rotation gives
  every coordinate a share of the others' scale. A column whose variance is
  far below the noise (digits' faint pixels: 1e-3 box units against a noise
  sd of 0.1-0.3 at n = 1,348 and rho 0.125-0.5) then comes out as noise,
  overstated a hundred times in its own units, where 0 is the zero matrix's
  answer. :func:`sparsify` reads the released diagonal with the
  per-coordinate release's rule (:func:`~dpgauss.releases._measured.kept`, all
  columns at once) and sets the row and column of every coordinate it does
  not keep to 0. Where no correlation shows the rule is not applied: on
  columns of similar scales near the noise (far_mean at rho 0.125, n = 500)
  it zeroed them all, 3 times the per-coordinate baseline's error, where
  the pooled diagonal is at 0.7 of it.

Both read the raw released entries (not the denoised spectrum, whose
shrinkage would hide correlations from the test), each with its public sd.
Everything here reads released values and public ones (d, the noise sds,
whether the noise is Laplace) only: post-processing, with the release's
guarantee and no sensitivity of its own.
"""

import math

import numpy as np

from dpgauss.releases._measured import faint_columns_show, kept, noise_quantile
from dpgauss.utils._linalg import eigh_descending

__all__ = ["GLOBAL_Z", "no_direction", "noise_only", "sparsify"]

#: How far above its pure-noise mean (in its pure-noise standard deviations)
#: the off-diagonal statistic may be before the correlations count. Pure
#: noise exceeds it with probability about 0.003 for large m (more for small
#: m: about 0.02 at m = 6, where the chi-squared is skewed).
GLOBAL_Z = 3.0


def noise_only(offdiagonal, noise_sd):
    """Whether released off-diagonal entries (one per pair, box units) are
    consistent with pure noise of sd ``noise_sd``: ``sum(x^2) / sd^2 <= m +
    GLOBAL_Z sqrt(2 m)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._offdiagonal import noise_only
    >>> noise_only(np.array([0.1, -0.2, 0.05]), 0.1)
    True
    >>> noise_only(np.array([0.9, -0.2, 0.05]), 0.1)
    False
    """
    m = offdiagonal.size
    stat = float(np.sum(np.square(offdiagonal / noise_sd)))
    return stat <= m + GLOBAL_Z * math.sqrt(2.0 * m)


def no_direction(offdiagonal, d, noise_sd):
    """Whether the off-diagonal entries (one per pair, row-major upper
    triangle) show no direction beyond pure noise of sd ``noise_sd``: the
    largest absolute eigenvalue of the symmetric matrix they make (zero
    diagonal) is at most ``(2 sqrt(d) + GLOBAL_Z) noise_sd``.

    Pure noise sits near ``2 sqrt(d)`` sds (Wigner's semicircle edge) and
    exceeded the bound in at most 0.2% of 2,000 draws at d = 5 to 64, Gaussian
    or Laplace. A correlated block of a few coordinates concentrates in one
    direction, which this finds where :func:`noise_only`, spreading it over
    all ``m`` entries, may not (16 of 64 coordinates 1.1 sds apart).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._offdiagonal import no_direction
    >>> no_direction(np.array([0.1, -0.2, 0.05]), 3, 0.1)
    True
    >>> no_direction(np.full(3, 0.5), 3, 0.1)
    False
    """
    A = np.zeros((d, d))
    A[np.triu_indices(d, 1)] = offdiagonal
    top = float(np.max(np.abs(np.linalg.eigvalsh(A + A.T))))
    return top <= (2.0 * math.sqrt(d) + GLOBAL_Z) * noise_sd


def sparsify(values, vectors, measured, pure):
    """The box-unit estimate ``V diag(values) V^T`` with what its release
    does not show set to 0 (see the module docstring; post-processing).

    Parameters
    ----------
    values, vectors : ndarray
        The released spectrum in box units (eigenvalues, eigenvectors by
        column).
    measured : MeasuredDiagonal
        The same release's raw diagonal and off-diagonal entries and their
        public noise sds.
    pure : bool
        Laplace noise (pure DP) rather than Gaussian.

    Returns
    -------
    None or tuple (values, vectors, dropped)
        None when the off-diagonal entries are significant and every
        coordinate is kept (or nothing is released to test, or d = 1): the
        estimate as it is. Otherwise the new spectrum (decreasing values in
        ``[0, d]``) and the mask of the coordinates whose row and column
        were set to 0.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._covariance import MeasuredDiagonal
    >>> from dpgauss.releases._offdiagonal import sparsify
    >>> C = np.array([[0.3, 0.02, 0.0], [0.02, 0.2, 0.01], [0.0, 0.01, 0.25]])
    >>> values, vectors = np.linalg.eigh(C)
    >>> released = MeasuredDiagonal(np.diag(C), 0.02,
    ...                             np.array([0.02, 0.0, 0.01]), 0.02)
    >>> values, vectors, dropped = sparsify(values, vectors, released, False)
    >>> np.round(values, 2).tolist(), dropped.tolist()
    ([0.3, 0.25, 0.2], [False, False, False])
    """
    d = len(values)
    sd = float(measured.sd)
    off, off_sd = measured.offdiagonal, measured.off_sd
    if d < 2 or off is None or not (0.0 < sd < math.inf and 0.0 < off_sd < math.inf):
        return None
    values = np.clip(np.nan_to_num(values, nan=0.0, posinf=0.0), 0.0, None)
    C = (vectors * values) @ vectors.T
    off = np.nan_to_num(np.asarray(off, dtype=np.float64))
    if noise_only(off, off_sd) and no_direction(off, d, off_sd):
        # No correlation shows: the estimate's own diagonal (the denoiser's,
        # which pools the trace, measured more precisely than any one
        # entry), on the coordinate axes.
        C = np.diag(np.diag(C))
        dropped = np.zeros(d, dtype=bool)
    else:
        # Correlations show: the spectrum's rotation spreads the others'
        # scale onto coordinates whose own diagonal does not rise above the
        # noise; their rows and columns are set to 0.
        raw = np.clip(np.nan_to_num(np.asarray(measured.values, float)), -1.0, 1.0)
        # Where no column looks faint every column is kept as the spectrum
        # gives it: a column 1-2 sds above 0 among wide ones (modechoice at
        # epsilon 5) is estimated better through its correlations than by 0.
        if not faint_columns_show(raw, sd):
            return None
        sds = np.full(d, sd)
        dropped = ~kept(raw, sds, noise_quantile(d, pure) * sds)
        if not dropped.any():
            return None
        C = C * np.outer(~dropped, ~dropped)
    out_values, out_vectors = eigh_descending(0.5 * (C + C.T))
    return np.clip(out_values, 0.0, float(d)), out_vectors, dropped
