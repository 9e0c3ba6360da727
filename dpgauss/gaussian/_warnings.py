"""PrivateGaussianEstimator's warnings before the spend, beside the refusal.

Not an estimator module. With a box the Gaussian's mean is released with
noise set by the box, n, d and the cost (the moments, staged and augmented
releases, and the box mean on the whole box), not by the rows' spread: a
column that fills little of its box gets that noise at full size. The
far-from-non-private warning of :func:`~dpgauss.releases._box_gaussian.
box_gaussian_messages` measures the mean against data with sds of about 0.18
half-widths (:data:`~dpgauss.releases._diagonal.SAMPLING_FILL`); Student t
columns in their codebook box have 0.05-0.09 and landed at 10 times their
sampling error at epsilon 2, n = 150, without a warning. :func:`faint_mean_warning`
applies the whole-box mean's rule (:func:`~dpgauss.releases._box_mean.
faint_reach`, :data:`~dpgauss.releases._box_mean.FAINT_SD`) to the Gaussian's
mean.

:func:`zeroed_variances_message` is the warning after the release: the
per-coordinate rule of :mod:`dpgauss.releases._faint` sets a variance within
its noise to 0 (the zero matrix's answer for that column), and the far-mean
table at rho 0.5, n = 150 lost 1.4 times to the private diagonal that way
in bench_real without a word, where the covariance estimators name such
columns.

Privacy: functions of the prediction (public noise), n, d and the cost only;
:func:`zeroed_variances_message` of the released spectrum (post-processing).
"""

import math
import warnings

import numpy as np

from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._box_mean import FAINT_SD, is_adaptive, reach_of_noise
from dpgauss.releases._prediction import ASTRAY
from dpgauss.utils._leak import caller_stacklevel

__all__ = [
    "faint_mean_reach",
    "faint_mean_warning",
    "warn_zeroed_variances",
    "zeroed_variances_message",
]


def faint_mean_reach(prediction, n, d):
    """The column sd, in box half-widths, below which the Gaussian's mean is
    predicted beyond ASTRAY times the column's sampling error in one fit of
    ten: the noise sd of one coordinate's mean (the predicted l2 error over
    ``sqrt(d)``, box units) times ``sqrt(n) / ASTRAY``, times the chi-square
    factor of :func:`~dpgauss.releases._box_mean.reach_of_noise`. A column of
    sd ``s`` has a mean with sampling sd ``s / sqrt(n)``.

    Examples
    --------
    >>> from dpgauss.gaussian._warnings import faint_mean_reach
    >>> from dpgauss.releases._box_gaussian import BoxGaussPrediction
    >>> from dpgauss.releases._prediction import Prediction
    >>> mean = Prediction(0.1, 1.0, "l2")
    >>> p = BoxGaussPrediction(mean, Prediction(0.1, 1.0, "frobenius"))
    >>> round(faint_mean_reach(p, 400, 4), 3)
    0.139
    """
    return reach_of_noise(prediction.mean.error / math.sqrt(d), n, d)


def faint_mean_warning(owner, prediction, plan, n, d):
    """The warning of a Gaussian fit whose mean's box-fixed noise puts columns
    with sds of :data:`~dpgauss.releases._box_mean.FAINT_SD` half-widths
    beyond ASTRAY times their sampling errors, or None. None for the
    adaptive box mean (``box_center`` first): its windows narrow to the
    rows' spread, and its prediction is the whole box's worst case. Public
    values only."""
    if is_adaptive(plan):
        return None
    reach = faint_mean_reach(prediction, n, d)
    if reach < FAINT_SD:
        return None
    return (
        f"{owner}: with n={n}, d={d} and {plan.total}, the mean of a column whose "
        f"sd is below {reach:.2g} of its box half-width would land beyond "
        f"{ASTRAY:g} times its sampling error in one fit of ten or more: the "
        "mean's noise is fixed by the "
        "box, not by the rows' spread. A tighter box, more rows or a larger "
        "budget help."
    )


def zeroed_variances_message(owner, values, vectors):
    """The warning naming the features whose released variance was set to 0
    (box units: a kept variance is above its noise, far from 0), or None.
    Post-processing of the released spectrum.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.gaussian._warnings import zeroed_variances_message
    >>> zeroed_variances_message("G", np.array([0.2, 0.0]), np.eye(2))[:42]
    'G: the released variance of feature(s) 1 i'
    >>> zeroed_variances_message("G", np.array([0.2, 0.1]), np.eye(2)) is None
    True
    """
    diagonal = np.sum(np.asarray(vectors) ** 2 * np.asarray(values), axis=1)
    zeroed = np.flatnonzero(~(diagonal > 1e-12))
    if zeroed.size == 0:
        return None
    names = ", ".join(str(int(j)) for j in zeroed)
    return (
        f"{owner}: the released variance of feature(s) {names} is within the "
        "noise of the release and set to 0 (with their covariances: the zero "
        "matrix's answer for them); their spread is unknown, not 0, and the "
        "model's density along them rests on its eigenvalue floor. More rows, "
        "a larger budget or a box that fits the rows' spread (once no column "
        "sits at an edge of it) help."
    )


def warn_zeroed_variances(owner, values, vectors):
    """Warn (``UtilityWarning``, at the user's line) with
    :func:`zeroed_variances_message` where it has one. Post-processing."""
    message = zeroed_variances_message(owner, values, vectors)
    if message is not None:
        warnings.warn(message, UtilityWarning, stacklevel=caller_stacklevel())


#: Released eigenvalues within this many eigenvalue floors (the final
#: release's noise sd per entry) are the release's noise level, not the rows'.
AT_FLOOR = 2.0


def warn_unresolved_directions(owner, values, floor):
    """Warn when eigenvalues of the released covariance sit at its floor.

    Without hints the frame is learned privately, and where columns differ in
    scale by more than it resolves (mixed units; strongly collinear columns)
    the final release's noise, the same along every direction of the frame,
    swamps the small directions: they come out at the eigenvalue floor, whose
    spread in the data's units can exceed their true variance by factors of
    1e8 (raw breast cancer, n = 569: 29 of 30 at the floor, a mean 20-80 sds
    off per column, silent before). ``values`` are the released eigenvalues
    before the floor, ``floor`` the ``eigenvalue_floor_`` (public). Returns
    the number reported. Post-processing of released values.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dpgauss.gaussian._warnings import warn_unresolved_directions
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_unresolved_directions("G", np.array([9.0, 1.5, 0.0]), 1.0)
    2
    >>> "2 of the released covariance's 3 eigenvalues" in str(caught[0].message)
    True
    """
    values = np.asarray(values, dtype=np.float64)
    at = int(np.count_nonzero(~(values > AT_FLOOR * floor)))
    if at:
        warnings.warn(
            f"{owner}: {at} of the released covariance's {values.size} "
            f"eigenvalues are within {AT_FLOOR:g} times its eigenvalue floor "
            f"(eigenvalue_floor_ = {floor:.3g}): the release does not resolve "
            "the rows' spread along those directions, and the model puts the "
            "noise level there. Their true variance may be far smaller (columns "
            "in very different units, or strongly collinear ones), and the "
            "model's density and the mean's error along them are then off by as "
            "much. Such columns need bounds=(lower, upper) (a codebook, or "
            "PrivateBounds) or a private standardisation first "
            "(PrivateStandardScaler); more rows or a larger budget also help.",
            UtilityWarning,
            stacklevel=caller_stacklevel(),
        )
    return at
