"""What a fit predicts of its own accuracy before it spends: post-processing of
public values only.

The fit template (:class:`~dpgauss.base.PrivateEstimatorMixin`) builds every
planned mechanism at its worst public case before the spend
(:func:`~dpgauss.mechanisms._checks.check_plan`) and hands them to the
estimator's ``_predict_error``, which turns their noise (each mechanism's
``variance``, ``sd`` or ``entry_variances``) into a :class:`Prediction`: the
error the release is expected to make and the error of the simplest answer
with the same public knowledge (the baseline; the zero matrix for a
covariance bounded by ``data_norm``, say). The estimator's utility check reads
it from the fit data.

Privacy: a prediction is a function of the privacy parameters, n, d, the
public parameters and the public rows only; it reads no private row, so
computing it, warning from it or refusing on it reveals nothing.
:func:`report_useless` applies the estimator's ``on_useless`` policy to a
predicted failure: refuse before the spend (the default) or warn and spend.
"""

import warnings
from dataclasses import dataclass

from dpgauss.exceptions import UselessFitError, UtilityWarning

__all__ = [
    "ASTRAY",
    "Prediction",
    "report_baseline",
    "report_far",
    "report_useless",
]

#: A fit predicted beyond this multiple of the non-private estimate's sampling
#: error (``Prediction.sampling``) warns before the spend, even where it beats
#: its baseline: the answer will be far from what the rows hold.
ASTRAY = 10.0


@dataclass(frozen=True)
class Prediction:
    """A fit's predicted error and its baseline's, from public values only.

    Parameters
    ----------
    error : float
        The release's predicted error in ``metric``.
    baseline : float
        The error of the simplest answer with the same public knowledge, in
        the same metric (for data that fill the public bound).
    metric : str
        What is measured (``"frobenius"``: the Frobenius norm of the
        covariance's error).
    sampling : float or None, default=None
        The non-private estimate's sampling error on the same reference data,
        in the same metric, where the estimator can predict it (None: no
        such warning).

    Examples
    --------
    >>> from dpgauss.releases._prediction import Prediction
    >>> p = Prediction(error=2.0, baseline=1.0, metric="frobenius")
    >>> p.loses
    True
    """

    error: float
    baseline: float
    metric: str
    sampling: float | None = None

    @property
    def loses(self):
        """Whether the release is predicted no better than its baseline."""
        return not self.error < self.baseline

    @property
    def far(self):
        """Whether the release is predicted beyond :data:`ASTRAY` times the
        non-private sampling error (False when that is not predicted)."""
        return self.sampling is not None and self.error > ASTRAY * self.sampling


def report_far(estimator, prediction, n, d, total):
    """Warn before the spend of a fit predicted far beyond the non-private error.

    Called by the fit template after the utility check (a fit refused there
    never gets here). Public values only: the prediction, n, d and the cost.

    Examples
    --------
    >>> import warnings
    >>> from dpgauss import PrivateMean
    >>> from dpgauss.releases._prediction import Prediction, report_far
    >>> p = Prediction(error=1.0, baseline=2.0, metric="l2", sampling=0.01)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report_far(PrivateMean(), p, 100, 3, "rho=0.1")
    >>> "100 times" in str(caught[0].message)
    True
    """
    if not isinstance(prediction, Prediction) or not prediction.far:
        return
    ratio = prediction.error / prediction.sampling
    warnings.warn(
        f"{type(estimator).__name__}: with n={n}, d={d} and {total}, the release "
        f"is predicted at {prediction.error:.3g} ({prediction.metric}), {ratio:.3g} "
        "times the non-private estimate's sampling error on data that fill a "
        "third of the reference spread: it beats the simplest private answer, "
        "but noise dominates it. More rows or a larger budget help.",
        UtilityWarning,
        stacklevel=5,
    )


def report_baseline(estimator, message):
    """Warn, before the spend, that a fit releases its baseline's kind of answer.

    For a plan chosen from public values because nothing richer is predicted
    to beat the simplest private answer (PCA's coordinate axes, say): the fit
    is useful, but its error against the non-private estimate depends on
    structure the plan cannot see, so it warns whatever the policy (never
    raises). ``message`` is computed from public values only.

    Examples
    --------
    >>> import warnings
    >>> from dpgauss import PrivatePCA
    >>> from dpgauss.releases._prediction import report_baseline
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     report_baseline(PrivatePCA(), "The axes.")
    >>> str(caught[0].message)
    'The axes.'
    """
    warnings.warn(message, UtilityWarning, stacklevel=5)


def report_useless(estimator, message):
    """Refuse (``on_useless="raise"``) or warn of a fit predicted useless.

    Called from an estimator's ``_check_utility``, before the spend, with a
    message computed from public values only (it says why the fit is predicted
    no better than its baseline and what would help).

    Parameters
    ----------
    estimator : PrivateEstimatorMixin
        The estimator being fitted; its ``on_useless`` decides.
    message : str
        Why, and what would help.

    Raises
    ------
    UselessFitError
        With ``on_useless="raise"``; nothing has been spent.

    Examples
    --------
    >>> import warnings
    >>> from dpgauss import PrivateCovariance
    >>> from dpgauss.exceptions import UselessFitError
    >>> from dpgauss.releases._prediction import report_useless
    >>> try:
    ...     report_useless(PrivateCovariance(), "Too few rows.")
    ... except UselessFitError as error:
    ...     print(str(error).split(". ")[0])
    Too few rows
    """
    if getattr(estimator, "on_useless", "raise") == "warn":
        warnings.warn(message, UtilityWarning, stacklevel=5)
        return
    raise UselessFitError(
        f"{message} Nothing was spent. To spend anyway, with a warning, set "
        "on_useless='warn'."
    )
