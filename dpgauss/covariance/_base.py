"""Shared base of the private covariance estimators (not an estimator module).

The public bound ``data_norm``, the center (``center``, ``location``), the
release of the clipped mean and of the trace, and the model assembly live here;
each estimator adds its own plan and releases.
"""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator

from dpgauss.accounting._plan import Release
from dpgauss.base import GaussianDensityMixin, PrivateEstimatorMixin
from dpgauss.covariance._denoise import shrink_mean
from dpgauss.covariance._methods import kind_of, noise_variance
from dpgauss.mechanisms import GaussianMechanism
from dpgauss.mechanisms._releases import mean_mechanism, sum_mechanism
from dpgauss.utils._sklearn_compat import Interval
from dpgauss.utils._sums import clipped_sums, n_partial_sums
from dpgauss.utils.validation import check_data_norm, split_cost

__all__ = ["BasePrivateCovariance", "eigenvalue_floor"]

#: Share of the fit's privacy cost spent on the mean when ``center=True``. The
#: covariance is then estimated around the released mean, so the mean's error
#: enters only quadratically (see ``benchmarks/bench_centering.py``).
MEAN_SHARE = 0.1


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

    def _mean_entries(self, total):
        """The mean's release (if ``center``) and the cost left for the rest.

        ``MEAN_SHARE`` of ``total`` goes to the mean; the split is made once, here.
        """
        if not self.center:
            return [], total
        mean, rest = split_cost(total, [MEAN_SHARE, 1.0 - MEAN_SHARE])
        return [Release("mean", mean, kind_of(total))], rest

    @staticmethod
    def _release_mean(X, center, radius, plan, rng):
        """Release the mean of the rows clipped to ``radius`` around ``center``.

        Sensitivity in :func:`dpgauss.mechanisms._releases.mean_mechanism`.
        Post-processing: a Gaussian release is shrunk towards ``center``
        (:func:`~dpgauss.covariance._denoise.shrink_mean`, whose risk estimate
        assumes the unprojected Gaussian release, so it comes first), then
        projected onto the ball of radius r, where the exact clipped mean lies
        (never farther from it).

        Returns
        -------
        raw : ndarray of shape (d,)
            The release (an offset from ``center``).
        variance : float
            The public variance of one coordinate of its noise.
        offset : ndarray of shape (d,)
            The shrunk, projected offset: the new center is ``center + offset``.
        error : float
            The estimated squared error of ``offset`` (at most ``d variance``).
        """
        n, d = X.shape
        sum_y = clipped_sums(X, center, radius, with_outer=False)[0]
        mech = plan.calibrate(
            "mean", lambda c: mean_mechanism(c, n, d, radius, n_partial_sums(X))
        )
        raw = mech.randomise(sum_y / n, rng)
        variance = noise_variance(mech, d)
        if isinstance(mech, GaussianMechanism):
            offset, error = shrink_mean(raw, variance)
        else:  # Stein's lemma needs Gaussian noise: Laplace releases stay as they are
            offset, error = raw, d * variance
        norm = float(np.linalg.norm(offset))
        if not norm <= radius:  # also inf
            offset = offset * (radius / norm) if math.isfinite(norm) else np.zeros(d)
        return raw, variance, offset, error

    @staticmethod
    def _release_trace(units, bits, n, radius, plan, rng, beta=1e-3):
        """Release the mean squared clipped norm and a high-probability upper bound.

        ``units`` is the exact fixed-point sum of ``min(|y|^2, r^2) / r^2`` on the
        ``2^-bits`` grid (each row adds an integer in [0, 2^bits]; see
        :func:`dpgauss.utils._sums.fixed_point_sums`). It is released with
        sensitivity 2^bits, then scaled (post-processing). The upper bound adds a
        one-sided tail shift (Gaussian: sigma sqrt(2 log(1/beta)); Laplace:
        b log(1/(2 beta))), so it fails with probability at most beta. Both are
        clipped to [0, r^2]. Returns the estimate, the upper bound and the public
        variance of the estimate's noise (before clipping).
        """
        r2 = radius * radius
        unit = float(2**bits)
        mech = plan.calibrate("trace", lambda c: sum_mechanism(c, unit))
        noisy = float(mech.randomise(float(units), rng))
        if isinstance(mech, GaussianMechanism):
            shift = mech.scale * math.sqrt(2.0 * math.log(1.0 / beta))
        else:
            shift = mech.scale * math.log(1.0 / (2.0 * beta))
        to_trace = r2 / (n * unit)
        estimate = min(max(noisy * to_trace, 0.0), r2)
        upper = min(max((noisy + shift) * to_trace, 0.0), r2)
        return estimate, upper, noise_variance(mech, 1) * to_trace * to_trace

    def _model_attributes(self, center, values, vectors, noise_sd, cap):
        """The fitted Gaussian, with the documented eigenvalue floor.

        The floor is the smaller of the noise sd of one entry of the final release
        and the mean released eigenvalue; when every released eigenvalue is 0
        (nothing rose above the noise), it is ``2^-52 r^2 / d``, so that the
        estimate stays as close to the zero matrix as the release is (a floor
        at the noise sd made it up to 80 times worse). It is a function of
        released values only (post-processing), keeps ``precision_`` finite, and
        never exceeds the average eigenvalue when there is one, so that
        Mahalanobis distances stay meaningful.
        """
        floor = eigenvalue_floor(values, noise_sd, cap)
        return self._gaussian_attributes(center, values, vectors, floor)


def eigenvalue_floor(values, noise_sd, cap):
    """The floor of a released spectrum (see ``_model_attributes``).

    The smaller of ``noise_sd`` and the mean of ``values``; ``2^-52 cap / d``
    when every value is 0; at least ``4 / max float`` (a finite precision) and
    ``d 2^-52`` times the largest value (so the matrix built from the spectrum
    stays positive definite in floating point: a spread beyond 1e16 made its
    computed eigenvalues negative). NaN-free for finite inputs.
    """
    d = values.shape[0]
    mean_value = float(np.sum(values)) / d
    floor = min(noise_sd, mean_value) if mean_value > 0 else cap / d * 2.0**-52
    if not floor == floor:  # NaN: fall back to the cap-based floor
        floor = cap / d * 2.0**-52 if cap == cap else 0.0
    top = float(np.max(values)) if d else 0.0
    return max(floor, 4.0 / np.finfo(np.float64).max, d * 2.0**-52 * top)
