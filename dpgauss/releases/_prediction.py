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

__all__ = ["Prediction", "report_useless"]


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

    @property
    def loses(self):
        """Whether the release is predicted no better than its baseline."""
        return not self.error < self.baseline


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
