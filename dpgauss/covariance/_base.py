"""Shared base of the private covariance estimators (not an estimator module).

The public bound ``data_norm``, the center (``center``, ``location``) and the
model assembly live here; the release of the clipped mean and of the trace are
in :mod:`dpgauss.releases._center` (shared with the estimators that use a
covariance release without being covariance estimators); each estimator adds
its own plan and releases.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator

from dpgauss.base import GaussianDensityMixin, PrivateEstimatorMixin
from dpgauss.releases._center import (
    MEAN_SHARE,
    eigenvalue_floor,
    mean_entries,
    release_mean,
    release_trace,
)
from dpgauss.releases._diagonal import cap_box_spectrum
from dpgauss.utils._sklearn_compat import Interval
from dpgauss.utils.validation import check_data_norm

__all__ = ["MEAN_SHARE", "BasePrivateCovariance"]


class BasePrivateCovariance(PrivateEstimatorMixin, GaussianDensityMixin, BaseEstimator):
    """Base class of the private covariance estimators.

    Subclasses build their plan with :meth:`_mean_entries` first and return the
    fitted model through :meth:`_model_attributes`.
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "center": ["boolean"],
        "location": ["array-like", None],
    }

    def _check_params(self):
        check_data_norm(self.data_norm, owner=type(self).__name__)

    def _location(self, d):
        """The public center of the clipping ball (the origin when None)."""
        if self.location is None:
            return np.zeros(d)
        location = np.asarray(self.location, dtype=np.float64)
        if location.shape != (d,) or not np.all(np.isfinite(location)):
            raise ValueError(
                f"location must be a finite array of shape ({d},), got shape "
                f"{location.shape}."
            )
        return location

    def _prepare_fit(self, data):
        """Refuse a malformed ``location`` before the spend (when fitting, not
        when pricing)."""
        if not data.pricing:
            self._location(data.d)
        return data

    def _mean_entries(self, total, n, d):
        """The mean's release (if ``center``) and the cost left for the rest
        (:func:`~dpgauss.releases._center.mean_entries`, rows clipped at
        ``data_norm``)."""
        return mean_entries(total, self.center, n, d, float(self.data_norm))

    #: The mean and trace releases (shared with the other estimators built on
    #: a covariance release: :mod:`dpgauss.releases._center`).
    _release_mean = staticmethod(release_mean)
    _release_trace = staticmethod(release_trace)

    def _model_attributes(self, center, values, vectors, noise_sd, cap, scale=None):
        """The fitted Gaussian, with the documented eigenvalue floor.

        The floor is the smaller of the noise sd of one entry of the final release
        and the mean released eigenvalue; when every released eigenvalue is 0
        (nothing rose above the noise), it is ``2^-52 r^2 / d``, so that the
        estimate stays as close to the zero matrix as the release is (a floor
        at the noise sd made it up to 80 times worse). It is a function of
        released values only (post-processing), keeps ``precision_`` finite, and
        never exceeds the average eigenvalue when there is one, so that
        Mahalanobis distances stay meaningful.

        With ``scale`` (a public change of units, such as a box's half-widths)
        the spectrum and the floor are in the released units and the model is
        ``diag(scale)`` times their Gaussian.
        """
        floor = eigenvalue_floor(values, noise_sd, cap)
        fitted = self._gaussian_attributes(center, values, vectors, floor)
        if scale is not None:  # a public change of units (post-processing)
            outer = np.outer(scale, scale)
            fitted["covariance_"] = fitted["covariance_"] * outer
            fitted["precision_"] = fitted["precision_"] / outer
            fitted["_model"] = (*fitted["_model"], np.asarray(scale, dtype=float))
        return fitted

    def _box_model(self, box, center, values, vectors, noise_sd):
        """The fitted model from a spectrum released in box units.

        ``box`` is the public ``(c, h)``. The box-unit covariance is capped
        so that no variance exceeds 1 (every box coordinate's variance is at
        most 1: :func:`~dpgauss.releases._diagonal.cap_box_spectrum`), the
        location is projected into the box, and both are mapped back by
        ``c + h m`` and ``diag(h) C diag(h)``: post-processing of released
        values and public ones, so every variance comes back at most
        ``h_j^2`` and the location inside the box whatever the noise drew.
        """
        c, h = box
        values, vectors = cap_box_spectrum(values, vectors)
        location = c + h * np.clip(center, -1.0, 1.0)
        return self._model_attributes(
            location, values, vectors, noise_sd, float(len(h)), scale=h
        )
