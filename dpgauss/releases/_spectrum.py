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

import numpy as np

from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._adaptive import release_adaptive
from dpgauss.releases._adaptive_plan import adaptive_plan
from dpgauss.releases._center import (
    Spectrum,
    covariance_plan_entries,
    release_center,
    release_spectrum,
    useless_release_message,
)
from dpgauss.releases._covariance import filled_prediction
from dpgauss.releases._prediction import report_useless
from dpgauss.utils._sklearn_compat import Interval, StrOptions
from dpgauss.utils.validation import check_data_norm

__all__ = ["SpectrumReleaseMixin"]


class SpectrumReleaseMixin:
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
        "method": [StrOptions({"tail", "auto", "gauss", "separate", "eigen"})],
    }

    def _check_params(self):
        check_data_norm(self.data_norm, owner=type(self).__name__)

    def _method(self):
        """The covariance method the releases use (``method``; an estimator
        may resolve ``"auto"`` to a fixed method, from public reasons only)."""
        return self.method

    def _build_plan(self, total, data):
        d = data.d
        method = self._method()
        if method == "tail":
            return adaptive_plan(
                total, d, self.center, n=data.n, data_norm=float(self.data_norm)
            )
        entries = covariance_plan_entries(
            total, d, method, self.center, data.n, float(self.data_norm)
        )
        return ReleasePlan(total, entries)

    def _predict_error(self, plan, data, mechanisms):
        """The Frobenius error predicted for data filling the ``data_norm``
        ball, against the zero matrix's (None for "tail", whose radius is
        found privately, and "eigen")."""
        if self._method() == "tail":
            return None
        radius = float(self.data_norm)
        return filled_prediction(mechanisms, self._method(), data.d, radius)

    def _check_utility(self, plan, data):
        n, d = data.n, data.d
        # "tail" finds its radius privately: the fixed-radius prediction does
        # not apply (TailSensitiveCovariance warns of nothing either).
        if self._method() == "tail":
            return
        message = useless_release_message(
            type(self).__name__, data.prediction, plan, n, d, float(self.data_norm)
        )
        if message is not None:
            report_useless(self, message)

    def _release_spectrum(self, X, plan, rng):
        """The released mean (zeros without ``center``) and spectrum of ``X``.

        The spectrum is returned sorted by decreasing eigenvalue (a stable
        sort: ties keep the release's order), its eigenvectors with it.
        """
        radius = float(self.data_norm)
        origin = np.zeros(X.shape[1])
        method = self._method()
        if method == "tail":
            release = release_adaptive(X, origin, radius, self.center, plan, rng)
            center = release.center
            spectrum = Spectrum(
                release.values,
                release.vectors,
                float(release.noise_sd),
                float(release.cap),
                release.method,
            )
        else:
            center, shift = release_center(X, origin, radius, self.center, plan, rng)
            spectrum = release_spectrum(X, center, shift, radius, method, plan, rng)
        values = np.nan_to_num(spectrum.values, nan=0.0, posinf=0.0)
        values = np.maximum(values, 0.0)
        order = np.argsort(-values, kind="stable")
        sorted_spectrum = Spectrum(
            values[order],
            spectrum.vectors[:, order],
            spectrum.noise_sd,
            spectrum.cap,
            spectrum.method,
        )
        return center, sorted_spectrum
