"""The fit hooks of the estimators built on a released spectrum (PCA, whitening).

A helper module, not an estimator module. :class:`SpectrumReleaseMixin`
implements the hooks of :class:`~dpgauss.base.PrivateEstimatorMixin` (plan,
predicted error, utility warning, releases; the template's own check before
the spend builds the planned factories) with the releases of one of
the covariance estimators, chosen by the estimator's ``method``:

* ``"auto"``, ``"gauss"``, ``"separate"``, ``"eigen"``: those of
  :class:`~dpgauss.covariance.PrivateCovariance`
  (:mod:`dpgauss.releases._center`), rows clipped at the public
  ``data_norm``;
* ``"tail"``: those of :class:`~dpgauss.covariance.TailSensitiveCovariance`
  (:mod:`dpgauss.releases._adaptive_plan` and
  :mod:`dpgauss.releases._adaptive`), its defaults (``location`` the origin,
  the default split), the radius and the clipping threshold found privately
  below ``data_norm``.

Either way the estimator receives the released mean and the released
eigendecomposition; everything it computes from them is post-processing.
"""

import numbers
from dataclasses import replace

import numpy as np

from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._adaptive import release_adaptive
from dpgauss.releases._adaptive_plan import adaptive_plan
from dpgauss.releases._box import box_location
from dpgauss.releases._center import (
    Spectrum,
    covariance_plan_entries,
    release_center,
    release_spectrum,
    useless_release_message,
)
from dpgauss.releases._clipped import warn_clipped_away
from dpgauss.releases._covariance import filled_prediction
from dpgauss.releases._diagonal import (
    BoxMixin,
    axes_prediction,
    box_plan_entries,
    box_rows,
    box_useless_message,
    diagonal_entries,
    diagonal_prediction,
    full_prediction,
    is_diagonal,
    release_diagonal,
    to_data_units,
    variance_sampling,
    with_sampling,
)
from dpgauss.releases._prediction import report_useless
from dpgauss.utils._sklearn_compat import Interval, StrOptions

__all__ = ["SpectrumReleaseMixin"]


class SpectrumReleaseMixin(BoxMixin):
    """Plan, calibration and releases of an estimator built on a released spectrum.

    For estimators with the parameters ``data_norm``, ``center`` and ``method``
    (one of ``"tail"``, ``"auto"``, ``"gauss"``, ``"separate"``, ``"eigen"``)
    that need only the released eigendecomposition (PCA, whitening). They
    implement the hooks of :class:`~dpgauss.base.PrivateEstimatorMixin` with
    the releases of :class:`~dpgauss.covariance.TailSensitiveCovariance`
    (``"tail"``) or of :class:`~dpgauss.covariance.PrivateCovariance` (the
    others), and call :meth:`_release_spectrum` from ``_fit_releases``. Rows
    are clipped around the origin (the mean pass) and around the released
    mean (the covariance pass), or, with ``"tail"`` and few rows, the
    covariance is that of pair differences (see ``TailSensitiveCovariance``).
    """

    _spectrum_constraints: dict = {
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "center": ["boolean"],
        "method": [
            StrOptions({"tail", "auto", "gauss", "separate", "eigen", "diagonal"})
        ],
        "bounds": ["array-like", None],
    }

    #: Whether the diagonal release is judged against a random subspace (the
    #: private-variance axes: PCA) rather than the zero matrix.
    _axes_baseline = False

    def _check_params(self):
        self._check_norm_or_box()

    def _method(self):
        """The covariance method the releases use (``method``; an estimator
        may resolve ``"auto"`` to a fixed method, from public reasons only)."""
        return self.method

    def _build_plan(self, total, data):
        n, d = data.n, data.d
        if self._method() == "diagonal":
            return ReleasePlan(total, diagonal_entries(total, d, self.center, n))
        plan = self._full_plan(total, n, d)
        if self.bounds is None or self.method not in ("auto", "tail"):
            return plan
        entries = box_plan_entries(total, d, n, self.center, plan.entries)
        return plan if entries is plan.entries else ReleasePlan(total, entries)

    def _full_plan(self, total, n, d):
        """The plan of the full covariance release by the resolved ``method``
        (``"tail"``: TailSensitiveCovariance's; the others PrivateCovariance's),
        rows clipped at ``data_norm`` (``sqrt(d)`` in box units). Public values
        only."""
        method = self._method()
        radius = self._radius(d)
        if method == "tail":
            return adaptive_plan(total, d, self.center, n=n, data_norm=radius)
        entries = covariance_plan_entries(total, d, method, self.center, n, radius)
        return ReleasePlan(total, entries)

    def _predict_error(self, plan, data, mechanisms):
        """The Frobenius error predicted for data filling the ``data_norm``
        ball (with ``bounds``: the reference data of
        :func:`~dpgauss.releases._diagonal.reference_norm`, in box units),
        against the zero matrix's (None for "tail", whose radius is found
        privately, and "eigen")."""
        d = data.d
        if is_diagonal(plan) and self._axes_baseline:
            prediction = axes_prediction(mechanisms["diagonal"], d, self.center)
            if data.n is None:
                return prediction
            return replace(prediction, sampling=variance_sampling(data.n))
        if is_diagonal(plan):
            prediction = diagonal_prediction(mechanisms["diagonal"], d, self.center)
        elif self._method() == "tail":
            return None
        elif self.bounds is not None:
            prediction = full_prediction(mechanisms, self._method(), d)
        else:
            return filled_prediction(mechanisms, self._method(), d, self._radius(d))
        # In a box the non-private error is predictable on the same reference.
        return with_sampling(prediction, data.n, d)

    def _check_utility(self, plan, data):
        n, d = data.n, data.d
        # "tail" finds its radius privately: the fixed-radius prediction does
        # not apply (TailSensitiveCovariance warns of nothing either).
        if data.prediction is None:
            return
        if self.bounds is not None:
            message = box_useless_message(
                type(self).__name__, data.prediction, plan, n, d
            )
        else:
            message = useless_release_message(
                type(self).__name__, data.prediction, plan, n, d, self._radius(d)
            )
        if message is not None:
            report_useless(self, message)

    def _release_spectrum(self, X, plan, rng):
        """The released mean (zeros without ``center``) and spectrum of ``X``.

        With ``bounds`` the releases are made in box units and mapped back by
        ``diag(h)`` (post-processing, :func:`~dpgauss.releases._diagonal.\
to_data_units`). The spectrum is returned sorted by decreasing eigenvalue
        (a stable sort: ties keep the release's order), its eigenvectors with
        it. With ``data_norm``, a release whose trace shows most rows at the
        radius warns (:func:`~dpgauss.releases._clipped.warn_clipped_away`);
        with ``bounds``, a released centre whose features' rows sit at the
        box's edge (:meth:`~dpgauss.releases._diagonal.BoxMixin._warn_at_edge`).
        """
        d = X.shape[1]
        box = self._box(d)
        if box is not None:
            X = box_rows(X, box)
        radius = self._radius(d)
        origin = np.zeros(d)
        method = self._method()
        if is_diagonal(plan):
            center, variances, sd = release_diagonal(X, plan, rng, self.center)
            spectrum = Spectrum(variances, np.eye(d), sd, float(d), "diagonal")
            # One entry of the joint (m, s): the means' sd too.
            center_sd = sd if self.center else None
        elif method == "tail":
            release = release_adaptive(X, origin, radius, self.center, plan, rng)
            center, center_sd = release.center, release.center_sd
            spectrum = Spectrum(
                release.values,
                release.vectors,
                float(release.noise_sd),
                float(release.cap),
                release.method,
                release.measured,
            )
        else:
            center, shift, center_sd = release_center(
                X, origin, radius, self.center, plan, rng
            )
            spectrum = release_spectrum(X, center, shift, radius, method, plan, rng)
        self._warn_at_edge(center, center_sd)
        if box is not None:
            h = box[1]
            center = box_location(center, self.bounds, d, type(self).__name__)
            values, vectors = to_data_units(spectrum.values, spectrum.vectors, h)
            measured = spectrum.measured
            spectrum = Spectrum(
                values,
                vectors,
                spectrum.noise_sd * float(np.min(h * h)),
                float(np.sum(h * h)),
                spectrum.method,
                box_diagonal=None if measured is None else measured.values,
            )
        values = np.nan_to_num(spectrum.values, nan=0.0, posinf=0.0)
        values = np.maximum(values, 0.0)
        order = np.argsort(-values, kind="stable")
        sorted_spectrum = Spectrum(
            values[order],
            spectrum.vectors[:, order],
            spectrum.noise_sd,
            spectrum.cap,
            spectrum.method,
            box_diagonal=spectrum.box_diagonal,
        )
        if box is None and self.data_norm is not None:
            # Post-processing: the released trace against the public radius.
            warn_clipped_away(
                type(self).__name__,
                float(np.sum(values)),
                spectrum.noise_sd,
                d,
                float(self.data_norm),
            )
        return center, sorted_spectrum
