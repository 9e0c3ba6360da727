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
"""

from dataclasses import dataclass

__all__ = ["Prediction"]


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
