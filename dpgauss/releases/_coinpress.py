"""CoinPress covariance: private iterative preconditioning (Biswas et al. 2020).

The practical form of the recursive private preconditioner of Kamath, Li,
Singhal and Ullman (2019); see ``specs/klsu2019.md`` section 4. A frame ``A``
(a d x d matrix) is kept such that the rows' covariance in it, ``A C A^T``, is
at most about the identity. Each step whitens the offsets, ``w = A (x - c)``,
clips them to a radius r, releases their second moment ``Z`` with the Gaussian
(or Laplace) mechanism, denoises its spectrum and updates
``A <- (Z_+ + eta I)^(-1/2) A``; the last
step releases ``Z`` in the learned frame and returns ``A^-1 Z A^-T``.

**Column convention, composition order fixed.** The reference code forms the
whitened rows as ``X A`` (``w = A^T x``) but updates ``A <- U^(-1/2) A``; from
the third step on its frame is applied in the wrong order and its error grows
with the number of steps on anisotropic data (spec section 4.3). Here every
frame acts on column vectors: ``w = A x``, ``A <- U^(-1/2) A`` and the estimate
is ``A^-1 Z A^-T``.

**Privacy.** Each step is one release of the second moment of rows clipped to
the ball of radius r in the frame, whose sensitivity
(:func:`dpgauss.mechanisms._releases.second_moment_mechanism`) depends on n, d
and r only: the frame is public (a function of released values), so the map
``x -> clip(A (x - c))`` is a fixed map of each row, into the ball of radius r
whatever the row is, in floating point (a row whose image overflows is mapped
to 0, see :func:`dpgauss.utils._sums.clip_rows`). The steps compose; the frame
updates, the clipping-shrinkage correction and the change of coordinates back
are post-processing.
"""

import math

import numpy as np
from scipy import stats

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.releases._covariance import (
    covariance_factory,
    gauss_spectrum,
    release_covariance,
)
from dpgauss.utils._linalg import eigh_descending
from dpgauss.utils._sums import clipped_sums, frame_sums

__all__ = [
    "coinpress_entries",
    "frame_units",
    "learn_frame",
    "release_in_frame",
    "shrinkage_factor",
    "staged_costs",
    "tail_radius",
    "units_hold",
]

#: Share of the covariance cost spent on the preconditioning steps (the rest
#: goes to the final release), as in the reference code and the spec.
PRECONDITION_SHARE = 0.25
#: Per-row tail probability of the whitened clipping radius (reference code).
STEP_BETA = 0.1


def tail_radius(d, beta):
    """``sqrt(d + 2 sqrt(d log(1/beta)) + 2 log(1/beta))``.

    For g ~ N(0, I_d), ``P[||g|| > tail_radius(d, beta)] <= beta`` (Laurent and
    Massart 2000); the clipping radius of rows whitened to about the identity.
    """
    t = math.log(1.0 / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * t) + 2.0 * t)


def shrinkage_factor(d, radius):
    """``E[min(||g||^2, r^2)] / d`` for g ~ N(0, I_d).

    Clipping g to the ball of radius r multiplies ``E[g g^T] = I`` by this
    factor (by symmetry the clipped second moment is isotropic), so a second
    moment of whitened Gaussian rows clipped at r is divided by it. With
    ``u = r^2``: ``F_{d+2}(u) + (u / d) (1 - F_d(u))``, F the chi-square cdfs.
    ``radius`` may be an array (then so is the result).
    """
    u = np.square(np.asarray(radius, dtype=np.float64))
    factor = stats.chi2.cdf(u, d + 2) + (u / d) * stats.chi2.sf(u, d)
    return float(factor) if factor.ndim == 0 else factor


def staged_costs(cost, steps):
    """The costs of ``steps`` CoinPress steps (the reference code's split).

    The first ``steps - 1`` share :data:`PRECONDITION_SHARE` of ``cost``
    equally and the last gets the rest; one step gets it all. The covariance
    and the mean steps split the same way.
    """
    if steps == 1:
        return [cost]
    early, final = split_cost(cost, [PRECONDITION_SHARE, 1.0 - PRECONDITION_SHARE])
    return [*split_cost(early, [1.0 / (steps - 1)] * (steps - 1)), final]


def coinpress_entries(cost, steps, d, n=None, bound=None, first=1.0):
    """Plan entries: ``steps - 1`` preconditioning releases, then the final one.

    ``precondition_1`` ... and ``second_moment``, at :func:`staged_costs`,
    each with its factory (:func:`~dpgauss.releases._covariance.covariance_factory`,
    size d): a second moment of n rows (None when only priced) clipped in the
    frame at ``first`` for the first step and at the Gaussian tail radius
    after it, at most ``ceil(n / CHUNK_ROWS)`` chunk sums (the fit passes its
    own). ``bound``, when given, is the public radius the first step clips
    at in the rows' coordinates (its factory checks it).
    """
    kind = kind_of(cost)
    *early, final = staged_costs(cost, steps)
    later = tail_radius(d, STEP_BETA)
    names = [f"precondition_{k}" for k in range(1, steps)] + ["second_moment"]
    return [
        Release(
            name,
            c,
            kind,
            covariance_factory(
                name, n, d, first if k == 0 else later, None, bound if k == 0 else None
            ),
            size=d,
        )
        for k, (name, c) in enumerate(zip(names, [*early, final], strict=True))
    ]


def _step_margin(n, d):
    """The reference code's eta: ``(2 sqrt(d/n) + d/n) / 2``, the sampling
    fluctuation of a whitened second moment, added before inverting."""
    return 0.5 * (2.0 * math.sqrt(d / n) + d / n)


def learn_frame(X, center, frame, radius, plan, steps, rng, n_partials):
    """Run the ``steps - 1`` preconditioning releases; return the frame.

    Parameters
    ----------
    X : ndarray or dask array of shape (n, d)
        The rows.
    center : ndarray of shape (d,)
        Public or released center of the rows.
    frame : ndarray of shape (d, d)
        The initial frame A, public, with ``A C A^T`` at most about the identity
        (``I / B`` for rows in the ball of radius B).
    radius : float
        The clipping radius of the first step, in the frame.
    plan : ReleasePlan
        Holds ``precondition_1`` ... (see :func:`coinpress_entries`).
    steps : int
        The number of CoinPress steps (the final release included).
    rng : numpy.random.Generator
        The fit's noise stream.
    n_partials : int
        Chunk sums a pass adds (for the rounding term of the sensitivity).

    Returns
    -------
    frame : ndarray of shape (d, d)
        The learned frame.
    radius : float
        The clipping radius for the final release in it.
    """
    n, d = X.shape[0], frame.shape[0]
    eta = _step_margin(n, d)
    for k in range(1, steps):
        S = clipped_sums(X, center, radius, transform=frame)[1] / n
        mech = plan.calibrate(
            f"precondition_{k}", rows=n, radius=radius, n_partials=n_partials
        )
        Z = mech.randomise(S, rng)
        with np.errstate(all="ignore"):
            # Denoised (post-processing): where the noise dwarfs the small
            # directions, plain eigenvalues made the frame amplify noise (d =
            # 50, n = 8,000: 14 times the non-private error; denoised, 2.1).
            values, vectors, _ = gauss_spectrum(mech, Z, radius * radius)
            values = np.maximum(values, 0.0) + eta
            step = (vectors / np.sqrt(values)) @ vectors.T
            new = step @ frame
        # Post-processing of released values; a release so noisy that the frame
        # is not finite (never for a calibrated, finite noise) keeps the old one.
        if np.all(np.isfinite(new)):
            frame = new
        radius = tail_radius(d, STEP_BETA)
    return frame, radius


def release_in_frame(
    X, center, frame, radius, plan, rng, n_partials, correct, shift=0.0, units=None
):
    """The final release in the learned frame, back in the rows' coordinates
    (or in ``units``).

    The second moment of ``clip(A (x - c), r)`` is released by GaussCov (the
    spectral denoiser included, :func:`release_covariance`), divided by
    :func:`shrinkage_factor` when ``correct`` (rows whitened to about the
    identity, clipped at a Gaussian tail radius), and mapped back as
    ``A^-1 Z A^-T`` (post-processing). ``shift`` (a released center's expected
    squared error per coordinate, in the frame) is subtracted along the
    identity first.

    With ``units`` (public, e.g. :func:`frame_units`: a released value), the
    estimate is returned in the per-column units ``S = diag(units)``: the
    spectrum of ``S^-1 A^-1 Z A^-T S^-1``, mapped by the frame ``A S``.
    Columns whose scales are 1e9 apart then keep their own precision (in the
    rows' units an eigendecomposition rounds the narrow column's variance
    away: its eigenvalue sits below ``2^-52`` times the largest).

    Returns
    -------
    values, vectors : ndarray
        Eigenvalues (descending, >= 0) and eigenvectors of the estimate (in
        ``units`` when given).
    noise_sd : float
        The noise sd of one entry of the release, in the same units along the
        frame's least amplified direction (for the eigenvalue floor).
    cap : float
        A bound on the estimate's trace (``r^2 ||(A S)^-1||_2^2``).
    units : ndarray or None
        ``units``, or None where the estimate in them would not map back to
        finite matrices (:func:`units_hold`): it is then in the rows' units.
    """
    n, d = X.shape[0], frame.shape[0]
    S = frame_sums(X, center, radius, frame)[1] / n
    case = {"rows": n, "radius": radius, "n_partials": n_partials}
    values, vectors, sd = release_covariance(
        "gauss", S, n, plan, case, rng, radius * radius, shift=shift
    )
    if correct:
        values = values / shrinkage_factor(d, radius)
    spectrum = None
    if units is not None:
        units = np.asarray(units, dtype=np.float64)
        with np.errstate(all="ignore"):
            spectrum = to_rows(frame * units[None, :], values, vectors)
        if not units_hold(spectrum[0], units):
            spectrum, units = None, None
    if spectrum is None:
        spectrum = to_rows(frame, values, vectors)
    values, vectors, gram = spectrum
    big = _largest(d)
    with np.errstate(all="ignore"):
        low = min(sd * gram[0], big)
        cap = min(radius * radius * gram[1], big)
    return values, vectors, low, cap, units


def units_hold(values, units):
    """Whether a spectrum in per-column ``units`` maps back to finite matrices.

    ``S V diag(values) V^T S`` has entries at most ``max(values) max(s)^2``,
    and its inverse at most ``1 / (floor min(s)^2)`` with the eigenvalue
    floor at least ``d 2^-52 max(values)`` (:func:`~dpgauss.releases._center.
    eigenvalue_floor`); both must stay below ``max float / (4 d)``. Where they
    would not (rows near the float range's ends), the release stays in the
    rows' units, as before ``units`` existed. Public values only.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._coinpress import units_hold
    >>> units_hold(np.array([1.0, 0.5]), np.array([1e-3, 1e6]))
    True
    >>> units_hold(np.array([1.0, 0.5]), np.array([1.0, 1e160]))
    False
    """
    d = values.shape[0]
    top = float(np.max(values)) if d else 0.0
    big = _largest(d) if d else 0.0
    if not (top > 0.0 and math.isfinite(top)):
        return False
    with np.errstate(all="ignore"):
        high = top * np.square(np.max(units))  # numpy floats: inf, no raise
        low = d * 2.0**-52 * top * np.square(np.min(units))
    return bool(high < big and low > 1.0 / big)


def _largest(d):
    """The largest eigenvalue kept: ``max float / (4 d)`` (the matrix and its
    trace stay finite)."""
    return float(np.finfo(np.float64).max) / (4.0 * d)


def frame_units(frame):
    """Per-column units of a learned frame: ``s_j = ||row j of A^-1||``.

    ``A^-1 A^-T`` is about the covariance the frame whitens, so ``s_j`` is
    about column j's sd, and ``A diag(s)`` about a rotation of unit-variance
    columns. Post-processing of a released frame; a non-finite or zero entry
    (never for a frame of calibrated releases) is 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.releases._coinpress import frame_units
    >>> frame_units(np.diag([1e3, 1e-6]))
    array([1.e-03, 1.e+06])
    """
    inverse, f = frame_inverse(frame)
    with np.errstate(all="ignore"):
        units = np.linalg.norm(inverse, axis=1) / f
    return np.where(np.isfinite(units) & (units > 0.0), units, 1.0)


def frame_inverse(frame):
    """``(B, f)`` with ``A^-1 = B / f``, f the largest entry of A (no overflow).

    The frame of data at scale 1e300 has entries near 1e-300 and its inverse
    would overflow; ``A / f`` has entries at most 1. Post-processing of a
    public matrix; a scaled frame that is numerically singular gives the
    identity (an estimate then stays finite; never for a frame built from
    calibrated releases).
    """
    f = float(np.max(np.abs(frame)))
    if not 0.0 < f < math.inf:
        return np.eye(frame.shape[0]), 1.0
    with np.errstate(all="ignore"):
        try:
            inverse = np.linalg.inv(frame / f)
        except np.linalg.LinAlgError:
            inverse = None
    if inverse is None or not np.all(np.isfinite(inverse)):
        return np.eye(frame.shape[0]), f
    return inverse, f


def to_rows(frame, values, vectors):
    """``A^-1 V diag(values) V^T A^-T`` as an eigendecomposition, without overflow.

    Returns its eigenvalues (descending, in ``[0, max float / (4 d)]``), its
    eigenvectors, and the smallest and largest eigenvalues of ``A^-1 A^-T``
    (clipped the same way), all post-processing.
    """
    d = frame.shape[0]
    inverse, f = frame_inverse(frame)
    big = _largest(d)
    with np.errstate(all="ignore"):
        back = inverse @ vectors
        inner = (back * values) @ back.T
        inner = 0.5 * (inner + inner.T)
        if not np.all(np.isfinite(inner)):
            inner = np.zeros((d, d))
        scaled, vectors = eigh_descending(inner)
        out = np.minimum(np.maximum(scaled, 0.0) / f / f, big)
        out = np.where(np.isfinite(out), out, big)
        # The extreme eigenvalues of A^-1 A^-T from singular values, accurate
        # whatever the frame's conditioning (an eigensolver on the product
        # returned round-off, even negative, for conditions past 1e16):
        # 1 / ||A||_2^2 and ||A^-1||_2^2, with A / f and B = f A^-1.
        top = np.float64(np.linalg.norm(frame / f, ord=2)) * f
        bottom = np.float64(np.linalg.norm(inverse, ord=2)) / f
        gram = np.square(np.array([1.0 / top if top > 0 else 0.0, bottom]))
        gram = np.where(np.isfinite(gram), gram, big)
        gram = np.minimum(np.maximum(gram, 0.0), big)
    return out, vectors, gram
