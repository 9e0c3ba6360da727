"""Shared base of the private covariance estimators (not an estimator module).

The public bound ``data_norm``, the center (``center``, ``location``) and the
model assembly live here; the release of the clipped mean and of the trace are
in :mod:`dpgauss.releases._center` (shared with the estimators that use a
covariance release without being covariance estimators); each estimator adds
its own plan and releases.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from dpgauss.base import PrivateEstimatorMixin
from dpgauss.density import GaussianDensityMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._box import box_location
from dpgauss.releases._center import (
    MEAN_SHARE,
    eigenvalue_floor,
    mean_entries,
    release_mean,
    release_trace,
)
from dpgauss.releases._clipped import warn_clipped_away
from dpgauss.releases._diagonal import cap_box_spectrum
from dpgauss.releases._measured import confine
from dpgauss.releases._offdiagonal import sparsify
from dpgauss.releases._prediction import ASTRAY
from dpgauss.utils._messages import shown_indices
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
        # A public change of units (post-processing) when scale is given.
        return self._gaussian_attributes(center, values, vectors, floor, scale)

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
        h = box[1]
        values, vectors = cap_box_spectrum(values, vectors)
        location = box_location(center, self.bounds, len(h), type(self).__name__)
        return self._model_attributes(
            location, values, vectors, noise_sd, float(len(h)), scale=h
        )

    def _diagonal_model(self, box, measured):
        """The fitted model of the diagonal release with a box.

        ``measured`` is a :class:`~dpgauss.releases._diagonal.MeasuredVariances`
        (box units, in its own frame); the model is mapped back by
        ``c + h m`` and ``diag(h scale)``: post-processing of released and
        public values. Each variance comes back at most ``h_j^2``, a
        coordinate set to 0 at most ``2^-52 h_j^2``, the location inside the
        box.
        """
        h = box[1]
        d = h.shape[0]
        location = box_location(measured.mean, self.bounds, d, type(self).__name__)
        self._warn_unmeasured(
            ~np.asarray(measured.measured, dtype=bool),
            measured.uncertain,
            why=(
                "are kept at a shrunk estimate within a few noise sds of 0, "
                "which may be off by many times their own variance if they are "
                "far smaller than the noise"
            ),
        )
        if getattr(measured, "unresolved", None) is not None:
            self._warn_unresolved(measured.unresolved)
        return self._model_attributes(
            location,
            measured.values,
            np.eye(d),
            measured.noise_sd,
            float(d),
            scale=h * measured.scale,
        )

    def _warn_unresolved(self, error):
        """A ``UtilityWarning`` that the covariance came out diagonal while the
        probe could not rule out correlations that would leave a relative
        error of ``error`` (:func:`~dpgauss.releases._box_probe.
        unresolved_error`, beyond ASTRAY times the non-private sampling
        error). Post-processing of released values."""
        warnings.warn(
            f"{type(self).__name__}: the covariance is released diagonal (method_"
            " 'diagonal'): the probe of the columns' correlations did not show "
            "them strongly enough for the full release to pay, but it cannot "
            "rule out correlations that, left out, put the estimate up to "
            f"{error:.2g} in relative (Frobenius) error from the rows' own, "
            f"beyond {ASTRAY:g} times the non-private estimate's sampling error. "
            "A larger budget or more rows resolve them; method='gauss' releases "
            "them at this budget with the full release's noise.",
            UtilityWarning,
            stacklevel=5,
        )

    def _warn_unmeasured(self, unmeasured, uncertain=None, shown="", why=None):
        """A ``UtilityWarning`` naming the features set to 0 (``unmeasured``)
        and those kept at an uncertain estimate (``uncertain``; ``why`` says
        which, by default the full release's pooled one), or nothing when
        there are none: their error in their own units may be far from the
        non-private error, and the fit says so rather than land there
        silently. ``shown`` adds why the release set them to 0. A function of
        released values: post-processing."""
        zeroed = shown_indices(unmeasured)
        uncertain = shown_indices(uncertain) if uncertain is not None else ""
        if not (zeroed or uncertain):
            return
        said = []
        if zeroed:
            said.append(
                f"feature(s) {zeroed} are set to 0 (rows and columns, up to a "
                f"floor: the zero matrix's answer){shown}"
            )
        if uncertain:
            why = why or (
                "keep the release's pooled estimate, which may be off by many "
                "times their own variance if they are far smaller than the others"
            )
            said.append(f"feature(s) {uncertain} {why}")
        warnings.warn(
            f"{type(self).__name__}: the released variance of some features is "
            "within the noise of the release, whose size is set by the clipping "
            "radius, not by each column's own scale: "
            + "; ".join(said)
            + ". Columns in different units need bounds=(lower, upper) (with a "
            "box: bounds that fit each column's spread, once no column sits at an "
            "edge of the box); more rows or a larger budget also help.",
            UtilityWarning,
            stacklevel=5,
        )

    def _confined_model(
        self, center, values, vectors, noise_sd, cap, measured, pure, box=None
    ):
        """The model of a released spectrum, confined by the release's diagonal.

        ``measured`` is the final release's
        :class:`~dpgauss.releases._covariance.MeasuredDiagonal` (None: the
        spectrum as released), ``pure`` whether its noise is Laplace, ``cap``
        the trace bound it was projected under.

        The final release's noise is the same on every entry whatever each
        column's scale, so a column whose variance is below it would come out
        as noise (1e15 times the zero matrix's error in the columns' own
        units on columns in scales 1e-3 to 1e6 without a box; 6 times on
        star98 at rho 0.5 in its box, whose columns fill it very unevenly).
        With ``box`` the release is in box units, every bound at most 1 (a
        box coordinate's variance), and the model is mapped back by
        ``diag(h)``.
        :func:`~dpgauss.releases._measured.confine` caps each coordinate's
        variance at its bound from the released diagonal and sets the rows
        and columns of those within the noise while others are far above it
        to 0, the zero matrix's answer (post-processing); a warning names
        every coordinate within the noise.
        """
        if box is None and getattr(self, "data_norm", None) is not None:
            # Post-processing: the released trace against the public radius.
            warn_clipped_away(
                type(self).__name__,
                float(np.sum(values)),
                noise_sd,
                len(values),
                float(self.data_norm),
            )
        ceiling = None if box is None else 1.0  # a box coordinate's variance
        confined = None
        drop = None
        if measured is not None and box is not None:
            # Post-processing of the release in box units: off-diagonal
            # entries consistent with its noise as a whole and the rows and
            # columns of coordinates within their noise are set to 0.
            sparse = sparsify(values, vectors, measured, pure)
            if sparse is not None:
                values, vectors, drop = sparse
        if measured is not None:
            confined = confine(
                values, vectors, measured, pure, ceiling=ceiling, drop=drop
            )
        if confined is None or not confined.changed:
            # Nothing set to 0 and no variance capped: the released spectrum
            # as it is (the same model as the estimators sharing the release).
            if box is not None:
                fitted = self._box_model(box, center, values, vectors, noise_sd)
            else:
                fitted = self._model_attributes(center, values, vectors, noise_sd, cap)
            if confined is None:
                return fitted
        else:
            scale = confined.scale
            if box is not None:  # box units to data units (post-processing)
                h = box[1]
                owner = type(self).__name__
                center = box_location(center, self.bounds, len(h), owner)
                scale = h * scale
            fitted = self._model_attributes(
                center,
                confined.values,
                confined.vectors,
                confined.noise_sd,
                float(confined.values.shape[0]),
                scale=scale,
            )
        self._warn_unmeasured(
            confined.unmeasured,
            confined.uncertain,
            ", the release showing other columns far above them",
        )
        return fitted
