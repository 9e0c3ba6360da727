"""A Gaussian's mean and covariance inside a public box, from the box releases.

Not an estimator module. With a public box ``bounds = (lower, upper)`` every
row becomes ``z = clip((x - c) / h, -1, 1)`` (:mod:`dpgauss.releases._box`),
a function of its own row and public values, in ``[-1, 1]^d``. The Gaussian
is released in these box units from releases proven elsewhere, and mapped
back by ``c + h m`` and ``diag(h) C diag(h)`` (post-processing). One of two
plans, chosen before the spend from public values (n, d, the cost):

* **diagonal**: the joint release ``(m, w s)`` of per-coordinate means and
  centred squares of :mod:`dpgauss.releases._moments` (``box_moments``, at
  ``w =`` :data:`SQUARE_WEIGHT` = 3/2: l1 sensitivity ``8 d / (3 n)``, l2
  ``2 sqrt(d) / n``, proven there for every w) at the whole cost. Its means
  are the mean and its variances ``s + 1/2 - m^2`` the diagonal covariance.
  One joint release is cheaper than a mean and second moments released
  apart: in l2 the second moments come free (a coordinate's mean moves by 2
  only when its square does not move), in l1 they add a third; a split of
  the cost between two releases would cost each of them more.
* **full**: the box mean of :mod:`dpgauss.releases._box_mean` (``box_mean``,
  after ``box_center`` and ``box_spread`` when it adapts its windows; proven
  there) at a share ``s`` of the cost, then the covariance release of
  :mod:`dpgauss.releases._center` (``trace``, then GaussCov or SeparateCov,
  ``method="auto"``) at ``1 - s``, of the rows clipped to the ball of radius
  ``sqrt(d)`` about the released mean: the centre is a function of earlier
  releases, so the second moment's sensitivity is that of a public centre
  (``sqrt(2) d / n`` in Frobenius norm, for rows in a ball of radius
  ``sqrt(d)`` about any centre), as for ``PrivateCovariance(bounds=...)``,
  which releases its own centre with a tenth of its cost instead.

* **augmented** (zCDP only): GaussCov (``second_moment``, of
  :mod:`dpgauss.releases._center`) at the whole cost on the rows augmented
  by the public constant ``sqrt(d)``, ``(z, sqrt(d))``, which lie in the
  ball of radius ``sqrt(2 d)`` about 0: a second moment of rows clipped to a
  public ball, Frobenius sensitivity ``sqrt(2) 2 d / n``, the release's own
  proof. Its last column is ``sqrt(d)`` times the mean, with off-diagonal
  noise of variance ``s^2 / 2``: the mean's noise is that of the
  per-coordinate means at the whole cost, ``2 sqrt(d) / (n sqrt(2 rho))``
  (a coordinate's mean moves
  most when its square moves least, so the one matrix carries both); the
  top-left block less the released mean's outer product is the covariance,
  at the noise of GaussCov with twice the squared radius. Under pure DP the
  Laplace release's l1 sensitivity grows with d and the mean would carry
  ``(d + 2) / sqrt(d)`` times the baseline's noise: not offered. Under zCDP
  the fits take it inside the staged plan below, not alone.

* **staged** (zCDP only; :mod:`dpgauss.releases._box_staged`): the moments
  release at a quarter of the cost, then, chosen from its released
  variances (post-processing), the augmented release or the moments release
  again at the rest. It replaces the augmented and full plans under zCDP:
  those choose a full covariance for reference data filling a tenth of the
  box, and lost to the diagonal by 2-10 times on columns filling a
  hundredth (Student t rows, near-constant pixels) or independent ones.

**The choice and the split.** Each plan is predicted against the baseline
with the same public knowledge and the same whole cost: the diagonal
Gaussian, the simplest private answer that releases both a mean and a
covariance from one budget, with its per-coordinate clipped means at half
the cost (:func:`mean_baseline`, data filling the box) and its
per-coordinate second moments at the other half; the covariance baseline is
the better of that diagonal and the zero matrix (:func:`covariance_baseline`,
reference data of :func:`~dpgauss.releases._diagonal.reference_norm`).
The plan taken (the
diagonal one, or the full one at a share in :data:`MEAN_SHARES`) is, among
those within both refusal limits (the mean's baseline, or :data:`MEAN_LOSS`
times it where its prediction is a worst case; the covariance's baseline),
the one with the smallest product of the two ratios of predicted to baseline
error (when none is within them, the smallest product overall, and the fit
refuses). The product weighs relative gains alike: a full covariance 20
times better than the diagonal one is worth a mean 5% worse, which the
worse ratio alone would not see. Every
candidate costs the whole cost.
"""

import math
from dataclasses import dataclass

import numpy as np

from dpgauss.accounting import ZCDP, split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.releases._box import box_offsets, boxed
from dpgauss.releases._box_mean import (
    baseline_error,
    box_mean_plan,
    box_predict,
    box_units_mean,
)
from dpgauss.releases._box_staged import (
    STAGED,
    at_tau,
    reference_tau,
    release_staged,
    staged_entries,
    staged_errors,
)
from dpgauss.releases._center import (
    covariance_plan_entries,
    eigenvalue_floor,
    release_spectrum,
)
from dpgauss.releases._covariance import (
    covariance_entries,
    gauss_error,
    gauss_spectrum,
)
from dpgauss.releases._diagonal import (
    BOX_FILL,
    REFERENCE_CORRELATION,
    SAMPLING_FILL,
    cap_box_spectrum,
    diagonal_error,
    diagonal_mechanism,
    full_prediction,
    reference_norm,
    sampling_errors,
)
from dpgauss.releases._faint import moments_variances, noise_law
from dpgauss.releases._moments import (
    box_moments,
    moments_mechanism,
    variance_noise_variance,
    weighted_moments,
)
from dpgauss.releases._prediction import ASTRAY, Prediction
from dpgauss.utils._mapped import mapped_rows
from dpgauss.utils._sums import clipped_sums, n_partial_sums

__all__ = [
    "MEAN_EXACT",
    "MEAN_LOSS",
    "MEAN_SHARES",
    "SQUARE_WEIGHT",
    "BoxGaussPrediction",
    "box_gaussian_messages",
    "box_gaussian_plan",
    "box_gaussian_predict",
    "covariance_baseline",
    "from_box",
    "mean_baseline",
    "moments_entries",
    "moments_error",
    "release_box_gaussian",
]

#: w, the weight of the centred squares in the ``box_moments`` release ``(m,
#: w s)`` of :mod:`dpgauss.releases._moments`: their noise is ``1 / w`` times
#: the means'. 3/2 is a round value below the largest w (about 1.665) at
#: which the l2 sensitivity stays 2 per coordinate, the means' alone.
SQUARE_WEIGHT = 1.5

#: The candidate plan of the augmented release (see the module docstring).
AUGMENTED = "augmented"

#: The shares of the cost the full plan may give its mean (the rest goes to
#: the covariance). A coarse grid: the predictions it compares are within
#: tens of percent of the measured errors, finer steps would not be resolved.
MEAN_SHARES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

#: The fit refuses (by default) when its mean's error is predicted above
#: this multiple of its baseline's (:func:`mean_baseline`) where the prediction is
#: a worst case: the box mean with adaptive windows, predicted on the whole
#: box (data that do not fill it get narrower windows); the limit of
#: ``PrivateMean(bounds=...)``, whose releases those are.
MEAN_LOSS = 1.5
#: The same limit where the prediction is the mean's actual noise (the
#: moments and augmented releases, the box mean on the whole box): the mean
#: must not lose to the baseline, up to the exact samplers' lattice and the
#: rounding terms (under 1% of the noise in the tests).
MEAN_EXACT = 1.02


#: The warning of a fit far beyond the non-private error uses the shared
#: limit (:data:`~dpgauss.releases._prediction.ASTRAY`) and sampling fill
#: (:data:`~dpgauss.releases._diagonal.SAMPLING_FILL`, a third of the
#: reference's): on the quick real-data benchmark that fill left 2 of 270
#: scored fits beyond 10 times the non-private error unwarned (27 at the
#: reference's 0.1, none at 0.01, where nearly every fit warned).


@dataclass(frozen=True)
class BoxGaussPrediction:
    """The predictions of a fit in a box: its mean and its covariance, each
    against its baseline (public values only)."""

    mean: Prediction
    covariance: Prediction
    mean_limit: float = MEAN_EXACT

    @property
    def admissible(self):
        """Whether neither refusal limit is crossed: the mean at most
        :attr:`mean_limit` times its baseline, the covariance below its own."""
        mean = self.mean.error <= self.mean_limit * self.mean.baseline
        return bool(mean and not self.covariance.loses)

    @property
    def score(self):
        """The product of the two ratios of predicted to baseline error."""
        mean = self.mean.error / self.mean.baseline
        return mean * (self.covariance.error / self.covariance.baseline)


def box_gaussian_messages(owner, prediction, total, n, d):
    """Why a fit in a box is refused (None: it is not), and why it warns that
    it is predicted beyond :data:`ASTRAY` times the non-private error (None:
    it does not). Public values only."""
    mean, cov = prediction.mean, prediction.covariance
    reasons = []
    if mean.error > prediction.mean_limit * mean.baseline:
        reasons.append(
            f"the mean is predicted at {mean.error:.3g} against "
            f"{mean.baseline:.3g} for the diagonal Gaussian's per-coordinate "
            "means (half the budget)"
        )
    if cov.loses:
        reasons.append(
            f"the covariance is predicted at {cov.error:.3g} against "
            f"{cov.baseline:.3g} for the better of the zero matrix and the "
            "private per-coordinate variances (half the budget)"
        )
    useless = None
    if reasons:
        useless = (
            f"{owner}: with n={n}, d={d} and {total}, {' and '.join(reasons)} "
            "(box units). Give a larger "
            "budget or more rows, or fit PrivateMean or PrivateCovariance alone."
        )
    np_mean, np_cov = sampling_errors(n, d)
    far = [
        f"the {name} at {error:.3g} ({error / sampling:.3g} times its "
        "non-private sampling error)"
        for name, error, sampling in (
            ("mean", mean.error, np_mean),
            ("covariance", cov.error, np_cov),
        )
        if error > ASTRAY * sampling
    ]
    astray = None
    if far:
        astray = (
            f"{owner}: with n={n}, d={d} and {total}, the fit is predicted to put "
            f"{' and '.join(far)}, box units, on data with variance "
            f"{SAMPLING_FILL:g} per coordinate and correlation "
            f"{REFERENCE_CORRELATION} (a diagonal covariance leaves the "
            "correlations out). A larger budget or more rows would bring it "
            "closer."
        )
    return useless, astray


def _radius(d):
    """The clipping radius of the full covariance release: ``sqrt(d)`` rounded
    up (box rows about the box's centre are never clipped)."""
    return float(np.nextafter(math.sqrt(d), math.inf))


def _augmented_radius(d):
    """The radius of the augmented rows ``(z, sqrt(d))``: ``sqrt(2 d)``
    rounded up (no row of the box is clipped)."""
    return float(np.nextafter(math.sqrt(2.0 * d), math.inf))


def moments_entries(total, n, d):
    """The diagonal plan: ``box_moments``, the release ``(m, w s)`` of
    :mod:`dpgauss.releases._moments` at ``w =`` :data:`SQUARE_WEIGHT`, at
    the whole cost (``make(cost, n_partials=None)``)."""

    def make(cost, *, n_partials=None):
        return moments_mechanism(cost, n, d, n_partials, weight=SQUARE_WEIGHT)

    return [Release("box_moments", total, kind_of(total), make, size=2 * d)]


def moments_error(mechanism, d, fill=BOX_FILL):
    """Predicted errors of the diagonal plan on the reference data of
    :func:`~dpgauss.releases._diagonal.reference_norm` (box units, means 0):
    the means' l2 error and the diagonal covariance's Frobenius error (each
    variance's noise capped by the projection onto [0, 1] at ``max(fill, 1 -
    fill)``, the off-diagonal entries left at 0). Public values only."""
    var = mechanism.variance(2 * d)
    noise = math.sqrt(d) * min(
        math.sqrt(variance_noise_variance(var, SQUARE_WEIGHT)), max(fill, 1.0 - fill)
    )
    off = REFERENCE_CORRELATION * fill * math.sqrt(d * (d - 1.0))
    return math.sqrt(d * var), math.hypot(noise, off)


#: The eigenvalue floor of the diagonal plan, as a fraction of its largest
#: variance (:func:`diagonal_floor`).
DIAGONAL_FLOOR = 2.0**-20


def diagonal_floor(values):
    """The eigenvalue floor of a diagonal release: :data:`DIAGONAL_FLOOR`
    times its largest variance (the cap-based floor of
    :func:`~dpgauss.releases._center.eigenvalue_floor` when every one is 0).
    A variance released as 0 is one the noise could not tell from 0: a
    floor at the noise level would put it at many times its own variance,
    while this one keeps the covariance positive definite and adds at most
    a millionth of the largest variance."""
    top = float(np.max(values)) if values.size else 0.0
    if not top > 0.0:
        return eigenvalue_floor(values, 0.0, float(values.shape[0]))
    tiny = 4.0 / np.finfo(np.float64).max
    return max(DIAGONAL_FLOOR * top, values.shape[0] * 2.0**-52 * top, tiny)


def _release_moments(X, center, half, plan, rng):
    """The diagonal plan's release and its post-processing: the means
    projected into [-1, 1], and the variances of :func:`moments_variances`.
    Returns the means, the variances and the public sd of one mean's noise."""
    d = X.shape[1]
    first, squares = box_moments(X, center, half)
    mech = plan.calibrate("box_moments", n_partials=n_partial_sums(X))
    noisy = mech.randomise(weighted_moments(first, squares, SQUARE_WEIGHT), rng)
    # Everything below is post-processing of the release.
    noisy = np.asarray(noisy, dtype=np.float64)
    noisy = np.nan_to_num(noisy, nan=0.0, posinf=1.0, neginf=-1.0)
    var = float(mech.variance(2 * d))
    mean = np.clip(noisy[:d], -1.0, 1.0)
    second = noisy[d:] / SQUARE_WEIGHT + 0.5
    law = noise_law(mech, 2 * d, SQUARE_WEIGHT)
    variances = moments_variances(second, mean, var, var / SQUARE_WEIGHT**2, **law)
    return mean, variances, math.sqrt(var)


def _entries(total, n, d, share):
    """The releases of one candidate plan: the diagonal one (``share`` None),
    the augmented one (:data:`AUGMENTED`) or the full one with ``share`` of
    the cost on the mean."""
    if share is None:
        return moments_entries(total, n, d)
    if share == AUGMENTED:
        return covariance_entries("gauss", total, d + 1, n, _augmented_radius(d))
    if share == STAGED:
        return staged_entries(total, n, d, SQUARE_WEIGHT)
    mean, rest = split_cost(total, [share, 1.0 - share])
    covariance = covariance_plan_entries(rest, d, "auto", False, n, _radius(d))
    return [*box_mean_plan(mean, n, d), *covariance]


def mean_baseline(total, n, d):
    """The mean baseline's predicted l2 error (box units, data filling the
    box): the diagonal Gaussian's means, the per-coordinate clipped means at
    half the cost (:func:`~dpgauss.releases._box_mean.baseline_error`); its
    variances, at the other half, are the diagonal of
    :func:`covariance_baseline`. A fit that releases a mean and a covariance
    from one budget is held to the simplest private answer that does both,
    not to a mean that spends the whole budget alone."""
    return baseline_error(split_cost(total, [0.5, 0.5])[0], n, d)


def covariance_baseline(total, n, d):
    """The covariance baseline's predicted Frobenius error (box units, the
    reference data): the better of the zero matrix and the per-coordinate
    second moments at half the cost (the means, at the other half, add
    nothing at the reference data's centred means)."""
    half = split_cost(total, [0.5, 0.5])[1]
    diagonal = diagonal_error(diagonal_mechanism(half, n, d, False), d, False)
    return min(reference_norm(d), diagonal)


def box_gaussian_predict(total, n, d, mechanisms):
    """The :class:`BoxGaussPrediction` of a plan's mechanisms (by name, each
    at its worst public case), for the cost ``total``."""
    cov_base = covariance_baseline(total, n, d)
    mean_base = mean_baseline(total, n, d)
    if "box_moments" in mechanisms:
        mean, cov = moments_error(mechanisms["box_moments"], d)
    elif "box_first" in mechanisms:
        mean, cov = _staged_prediction(mechanisms, d)
    elif "box_mean" not in mechanisms:  # the augmented release
        mech = mechanisms["second_moment"]
        mean = math.sqrt(mech.entry_variances()[1])  # sqrt(d) / sqrt(d) per row
        cov = gauss_error(mech, d, trace=d * BOX_FILL) + mean * mean
    else:
        # box_predict's error reads the mechanisms only (its baseline, at
        # the cost passed, is not used).
        mean = box_predict(total, n, d, mechanisms).error
        # The centre's error leaves a rank-one bias of Frobenius norm about
        # its squared error (as a released centre's does in filled_prediction).
        cov = full_prediction(mechanisms, "auto", d).error + mean * mean
    limit = MEAN_LOSS if "box_center" in mechanisms else MEAN_EXACT
    return BoxGaussPrediction(
        Prediction(mean, mean_base, "l2"),
        Prediction(cov, cov_base, "frobenius"),
        limit,
    )


def _staged_prediction(mechanisms, d, fill=BOX_FILL):
    """Predicted errors of the staged plan on the reference data: the
    combined means' l2 error and the better of its two options' Frobenius
    errors (the choice between them is made after the first stage, to the
    data's fill). Public values only."""
    tau = reference_tau(d, fill)  # the augmented rows' radius at this fill
    mean, moments, _, _ = staged_errors(mechanisms, d, SQUARE_WEIGHT, tau)
    cap = max(fill, 1.0 - fill)
    noise = math.sqrt(d) * min(math.sqrt(moments + 2.0 * mean * mean), cap)
    off = REFERENCE_CORRELATION * fill * math.sqrt(d * (d - 1.0))
    noise_at = at_tau(mechanisms["second_moment"], d, tau)
    augmented = gauss_error(noise_at, d, trace=d * fill)
    return math.sqrt(d * mean), min(math.hypot(noise, off), augmented + d * mean)


#: Under pure DP a full plan is taken only where its predicted score is this
#: many times below the diagonal plan's (see :func:`box_gaussian_plan`).
FULL_MARGIN = 2.0


def box_gaussian_plan(total, n, d):
    """The releases of a Gaussian fit in a box (module docstring): among the
    candidates, admissible first, the one whose :attr:`BoxGaussPrediction.score`
    is smallest (ties: the diagonal plan, then the smaller mean share). Public
    values only; every candidate costs ``total``. Priced without n: the
    diagonal plan.

    The full plans' errors are predicted on reference data (columns filling
    a tenth of their box, correlation 0.3), which tied, zero-inflated or
    heavy-tailed columns do not fill: there the full release's diagonal,
    whose noise is set by the whole ball, cannot measure variances that the
    per-coordinate release measures, and the fit answers about the zero
    matrix (randhie at epsilon 1, n = 5,047: 2.9 times the private diagonal's
    error, predicted 0.85 of it). Under zCDP the staged plan reads the fill
    first; under pure DP splitting the budget costs the diagonal 60% more
    noise variance (a quarter then three quarters), so a full plan is taken
    only where it is predicted :data:`FULL_MARGIN` = 2 times better than the
    diagonal plan. On the real-data benchmark's pure-epsilon rows (10 seeds)
    the covariance's clear losses fell from 8 to 2 and its largest median
    ratio to the baseline from 5.4 to 1.4, the means unchanged; randhie at
    n = 20,190 and epsilon 1 keeps its full plan (predicted 2.5 times better,
    measured 0.36 of the baseline's error).
    """
    best = _entries(total, n, d, None)
    if n is None:
        return best
    best_key = _key(total, n, d, best)
    # Under zCDP the staged plan reads the data's fill before it releases a
    # full covariance; the full plans cannot, and lose to the diagonal on
    # columns that fill a hundredth of their box.
    staged = isinstance(total, ZCDP)
    margin = 1.0 if staged else FULL_MARGIN
    for share in (STAGED,) if staged else MEAN_SHARES:
        entries = _entries(total, n, d, share)
        inadmissible, score = _key(total, n, d, entries)
        if (inadmissible, score * margin) < best_key:
            best, best_key = entries, (inadmissible, score * margin)
    return best


def _key(total, n, d, entries):
    """The order of candidates: admissible ones first, then by score."""
    mechanisms = {r.name: r.build() for r in ReleasePlan(total, entries).releases()}
    prediction = box_gaussian_predict(total, n, d, mechanisms)
    return (not prediction.admissible, prediction.score)


def release_box_gaussian(X, center, half, plan, rng):
    """The plan's releases on the rows of ``X`` mapped into the box.

    Returns
    -------
    mean : ndarray of shape (d,)
        In box units, in [-1, 1].
    values, vectors : ndarray
        The covariance's spectrum in box units, every variance at most 1
        (:func:`~dpgauss.releases._diagonal.cap_box_spectrum`).
    floor : float
        Its eigenvalue floor (:func:`~dpgauss.releases._center.eigenvalue_floor`).
    mean_sd : float or ndarray of shape (d,)
        The public noise sd of the mean (per coordinate; the releases'
        calibration and public weights only), before its projection into
        [-1, 1].
    """
    d = X.shape[1]
    if any(r.name == "box_first" for r in plan.releases()):
        staged = release_staged(X, center, half, plan, rng, SQUARE_WEIGHT)
        mean, values, vectors, _, sd = staged
        return mean, values, vectors, diagonal_floor(values), sd
    if any(r.name == "box_moments" for r in plan.releases()):
        mean, variances, sd = _release_moments(X, center, half, plan, rng)
        values, vectors = cap_box_spectrum(variances, np.eye(d))
        return mean, values, vectors, diagonal_floor(values), sd
    if not any(r.name == "box_mean" for r in plan.releases()):
        return _release_augmented(X, center, half, plan, rng)
    Z = boxed(X, center, half)
    mean, sd, _ = box_units_mean(Z, plan, rng)
    # The centre's expected rank-one bias along the identity: its squared
    # error over d (release_spectrum divides the second moment's correction).
    shift = float(np.sum(sd * sd)) / d
    spectrum = release_spectrum(Z, mean, shift, _radius(d), "auto", plan, rng)
    values, vectors = cap_box_spectrum(spectrum.values, spectrum.vectors)
    floor = eigenvalue_floor(values, spectrum.noise_sd, spectrum.cap)
    return mean, values, vectors, floor, sd


def _augmented_rows(chunk, center, half, c, out=None):
    """A chunk's box rows with the constant column c appended (``(z, c)``,
    each row from its own row and public values; in ``out`` when given)."""
    if out is None:
        out = np.empty((np.shape(chunk)[0], np.shape(chunk)[1] + 1))
    box_offsets(chunk, center, half, out=out[:, :-1])
    out[:, -1] = c
    return out


def _release_augmented(X, center, half, plan, rng):
    """The augmented release (module docstring) and its post-processing: the
    mean from the last column, the covariance ``M - m m^T`` plus the mean's
    noise variance on the diagonal (``E[m m^T]`` exceeds the mean's outer
    product by it), then GaussCov's spectrum in box units, its floor, and
    the mean's public noise sd."""
    n, d = X.shape
    c = math.sqrt(d)
    radius = _augmented_radius(d)
    # The rows ``(z, c)`` formed chunk by chunk as the pass reads them.
    rows = mapped_rows(X, _augmented_rows, center, half, c, width=d + 1)
    _, S = clipped_sums(rows, np.zeros(d + 1), radius)
    case = {"rows": n, "radius": radius, "n_partials": n_partial_sums(rows)}
    mech = plan.calibrate("second_moment", **case)
    released = np.asarray(mech.randomise(S / n, rng), dtype=np.float64)
    released = np.nan_to_num(released, nan=0.0, posinf=0.0, neginf=0.0)
    mean = np.clip(released[:d, d] / c, -1.0, 1.0)
    noise = mech.entry_variances(d + 1)[1] / (c * c)
    C = released[:d, :d] - np.outer(mean, mean) + noise * np.eye(d)
    values, vectors, sd = gauss_spectrum(mech, 0.5 * (C + C.T), float(d))
    values, vectors = cap_box_spectrum(values, vectors)
    floor = eigenvalue_floor(values, sd, float(d))
    return mean, values, vectors, floor, math.sqrt(noise)


def from_box(mean, values, vectors, floor, center, half):
    """The Gaussian in box units mapped back to the data's units
    (post-processing of released values and the public box).

    The mean is projected into the box (``|m_j| <= 1``). The covariance
    ``C = V diag(max(values, floor)) V^T`` gets each variance capped at 1 (a
    variable in [-1, 1] has variance at most 1) by ``D C D`` with ``D_jj =
    min(1, C_jj^(-1/2))``, which keeps it positive definite and its
    eigenvalues at least ``floor min(D)^2``, the floor returned. The model in
    the data's units is ``diag(half)`` times that Gaussian: the spectrum is
    returned in box units with ``scale = half``, so columns in units 1e-3 and
    1e6 apart keep their own precision (an eigendecomposition in the data's
    units would lose the small column's variance to the rounding of the
    large one's).

    Returns
    -------
    location : ndarray of shape (d,)
        In the data's units, inside the box.
    values, vectors : ndarray
        The capped covariance's spectrum in box units.
    floor : float
        Its eigenvalue floor, in box units.
    scale : ndarray of shape (d,)
        ``half``: the covariance in the data's units is ``diag(scale) V
        diag(values) V^T diag(scale)``.
    """
    mean = np.clip(np.nan_to_num(mean, nan=0.0), -1.0, 1.0)
    location = np.clip(center + half * mean, center - half, center + half)
    values = np.maximum(values, floor)
    C = (vectors * values) @ vectors.T
    cap = np.minimum(1.0, 1.0 / np.sqrt(np.maximum(np.diag(C), 1e-300)))
    C = cap[:, None] * C * cap[None, :]
    new_values, new_vectors = np.linalg.eigh(0.5 * (C + C.T))
    new_floor = max(float(floor) * float(np.min(cap)) ** 2, np.finfo(float).tiny)
    scale = np.asarray(half, dtype=np.float64)
    return location, np.maximum(new_values, new_floor), new_vectors, new_floor, scale
