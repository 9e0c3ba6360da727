"""Shared base of the private covariance estimators: post-processing methods.

Everything here reads only fitted (private) attributes, so it is post-processing
and free of privacy cost.
"""

import math
import numbers

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.accounting import ZCDP, PrivacyBudget
from dpgauss.accounting._composition import compose
from dpgauss.covariance._kernels import eigh_descending
from dpgauss.covariance._sums import (
    _file_backed,
    all_finite,
    clipped_sums,
    is_dask_array,
)
from dpgauss.mechanisms import GaussianMechanism, LaplaceMechanism
from dpgauss.utils._random import check_generator
from dpgauss.utils._sklearn_compat import Interval
from dpgauss.utils.validation import check_data_norm, resolve_privacy

__all__ = ["BasePrivateCovariance"]


def project_psd(matrix, upper):
    """Return the symmetric matrix with eigenvalues clipped to ``[0, upper]``.

    Post-processing: the covariance (or second moment) of rows of l2 norm at most
    B has every eigenvalue in [0, B^2], so this never moves the estimate away from
    the set the true value lies in.

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
        A (nearly) symmetric matrix.
    upper : float
        The largest eigenvalue kept.

    Returns
    -------
    eigenvalues : ndarray of shape (d,)
        The clipped eigenvalues.
    eigenvectors : ndarray of shape (d, d)
        Orthonormal eigenvectors, one per column.
    """
    values, vectors = eigh_descending(matrix)
    return np.clip(values, 0.0, upper), vectors


class BasePrivateCovariance(DensityMixin, BaseEstimator):
    """Base class: fitted-model methods mirroring ``EmpiricalCovariance``.

    Subclasses set, in ``fit``, ``covariance_``, ``location_``, ``precision_`` and
    ``privacy_spent_`` through :meth:`_set_covariance`.
    """

    _parameter_constraints: dict = {
        "rho": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "delta": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "budget": [PrivacyBudget, None],
        "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": [
            Interval(numbers.Integral, 0, None, closed="left"),
            np.random.RandomState,
            np.random.Generator,
            None,
        ],
    }

    # -- the price of a fit ----------------------------------------------------------
    def planned_costs(self, n_features):
        """Return the costs of the releases one fit makes, before any fit.

        A fit charges exactly these costs to ``budget`` (their composition is
        ``privacy_spent_``). They depend only on public parameters and the number
        of features, so a whole cross-validation or search can be priced before
        it runs (see :mod:`dpgauss.model_selection`).

        Parameters
        ----------
        n_features : int
            Number of columns of the data the fit would see.

        Returns
        -------
        list of ZCDP, PureDP or ApproxDP
            One cost per release, in the order the fit makes them.
        """
        total = self._resolve_public()[0]
        return [cost for cost, _ in self._plan(total, int(n_features))]

    # -- fitting helpers ----------------------------------------------------------
    def _resolve_public(self):
        """The fit's privacy total and public bound, checked before anything else."""
        name = type(self).__name__
        total = resolve_privacy(self.rho, self.epsilon, self.delta, owner=name)
        return total, check_data_norm(self.data_norm, owner=name)

    def _read_input(self, total, X):
        """Refuse an exhausted budget before reading ``X``, then validate ``X``.

        Returns the validated data and the public centre (``location``).
        """
        if self.budget is not None:
            self.budget.check(total)
        X = self._validate_input(X)
        return X, self._check_location(X.shape[1])

    def _validate_input(self, X):
        """Validate ``X`` (numpy, memory-mapped or Dask) and set ``n_features_in_``.

        A Dask array is checked lazily (shape, dtype, finiteness computed with
        Dask) so that it is never loaded into memory.
        """
        if _file_backed(X) and X.dtype == np.float64:
            # Shape, type and size checks on the map (no data read); finiteness
            # chunk by chunk with file reads; then keep the memmap itself (the
            # validated array is a plain view that would be read through the map).
            validate_data(self, X, ensure_min_samples=2, ensure_all_finite=False)
            if not all_finite(X):
                raise ValueError("Input X contains NaN or infinity.")
            return X
        if not is_dask_array(X):
            return validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        name = type(self).__name__
        if X.ndim != 2:
            raise ValueError(f"Expected 2D array, got a {X.ndim}D dask array.")
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(
            X.dtype, np.complexfloating
        ):
            raise ValueError(f"{name}: a dask array of real numbers is required.")
        if X.shape[0] < 2:
            raise ValueError(
                f"Found array with {X.shape[0]} sample(s) while a minimum of 2 is "
                f"required by {name}."
            )
        if not bool(np.isfinite(X).all().compute()):
            raise ValueError("Input X contains NaN or infinity.")
        self.n_features_in_ = int(X.shape[1])
        return X

    def _check_location(self, d):
        """The public centre of the clipping ball (the origin when None)."""
        if self.location is None:
            return np.zeros(d)
        location = np.asarray(self.location, dtype=np.float64)
        if location.shape != (d,) or not np.all(np.isfinite(location)):
            raise ValueError(
                f"location must be a finite array of shape ({d},), got shape "
                f"{location.shape}."
            )
        return location

    @staticmethod
    def _release_centre(X, location, radius, cost, rng, sum_y=None):
        """Release the mean of the rows clipped to ``radius`` around ``location``.

        Sensitivity (replace-one): 2r/n in l2 (Gaussian, zCDP) and 2 sqrt(d) r/n in
        l1 (Laplace, pure DP). The release is projected onto the ball of radius r,
        where the exact clipped mean lies (post-processing). Returns the new centre
        ``location + mean``. ``sum_y``, the sum of the clipped rows, is computed
        here unless given.
        """
        n, d = X.shape
        if sum_y is None:
            sum_y, _ = clipped_sums(X, location, radius, with_outer=False)
        if isinstance(cost, ZCDP):
            mech = GaussianMechanism(sensitivity=2 * radius / n, rho=cost.rho)
        else:
            mech = LaplaceMechanism(
                sensitivity=2 * math.sqrt(d) * radius / n, epsilon=cost.epsilon
            )
        mean = mech.randomise(sum_y / n, rng)
        norm = float(np.linalg.norm(mean))
        if norm > radius:
            mean = mean * (radius / norm)
        return location + mean

    def _charge(self, total, plan):
        """Record the planned releases in the shared budget, atomically.

        Parameters
        ----------
        total : ZCDP or PureDP
            The cost the fit may spend (its currency).
        plan : list of (cost, mechanism name)
            The releases; their composition is ``privacy_spent_``.
        """
        if self.budget is not None:
            self.budget.spend_many(plan, estimator=type(self).__name__)
        self.privacy_spent_ = compose(total, [cost for cost, _ in plan])

    def _set_covariance(self, covariance, location, eigenvalue_floor, upper):
        """Store the PSD covariance, its location and the floored precision."""
        values, vectors = project_psd(np.asarray(covariance, dtype=np.float64), upper)
        covariance = (vectors * values) @ vectors.T
        self.covariance_ = 0.5 * (covariance + covariance.T)  # exactly symmetric
        self.location_ = np.asarray(location, dtype=np.float64)
        self.eigenvalue_floor_ = float(eigenvalue_floor)
        floored = np.maximum(values, self.eigenvalue_floor_)
        precision = (vectors / floored) @ vectors.T
        self.precision_ = 0.5 * (precision + precision.T)
        self._sample_factor = vectors * np.sqrt(values)
        self._logdet = float(np.sum(np.log(floored)))

    # -- post-processing ----------------------------------------------------------
    def get_precision(self):
        """Return the precision matrix (inverse of the floored covariance).

        Returns
        -------
        ndarray of shape (n_features, n_features)
            ``precision_``.
        """
        check_is_fitted(self)
        return self.precision_

    def mahalanobis(self, X):
        """Return the squared Mahalanobis distances of ``X`` to the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations.

        Returns
        -------
        ndarray of shape (n_samples,)
            Squared distances, ``(x - location_)^T precision_ (x - location_)``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        centred = X - self.location_
        return np.einsum("ij,jk,ik->i", centred, self.precision_, centred)

    def score_samples(self, X):
        """Return the Gaussian log-likelihood of each sample under the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log-density at each row of the Gaussian with mean ``location_`` and
            the covariance with eigenvalues floored at ``eigenvalue_floor_``.
        """
        distances = self.mahalanobis(X)
        d = self.location_.shape[0]
        return -0.5 * (d * math.log(2.0 * math.pi) + self._logdet + distances)

    def score(self, X, y=None):
        """Return the mean per-sample Gaussian log-likelihood of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test observations.
        y : None
            Ignored.

        Returns
        -------
        float
            Mean of :meth:`score_samples`.
        """
        return float(np.mean(self.score_samples(X)))

    def error_norm(self, comp_cov, norm="frobenius", scaling=True, squared=True):
        """Return the error between ``comp_cov`` and ``covariance_``.

        Same convention as :meth:`sklearn.covariance.EmpiricalCovariance.error_norm`.

        Parameters
        ----------
        comp_cov : array-like of shape (n_features, n_features)
            The covariance to compare with.
        norm : {"frobenius", "spectral"}, default="frobenius"
            The norm of ``comp_cov - covariance_``.
        scaling : bool, default=True
            Divide the squared norm by n_features.
        squared : bool, default=True
            Return the squared norm.

        Returns
        -------
        float
            The error.
        """
        check_is_fitted(self)
        error = np.asarray(comp_cov, dtype=np.float64) - self.covariance_
        if norm == "frobenius":
            squared_norm = float(np.sum(error**2))
        elif norm == "spectral":
            squared_norm = float(np.max(linalg.svdvals(error @ error.T)))
        else:
            raise NotImplementedError(
                "Only spectral and frobenius norms are implemented"
            )
        if scaling:
            squared_norm /= error.shape[0]
        return squared_norm if squared else math.sqrt(squared_norm)

    def sample(self, n_samples=1, random_state=None):
        """Draw samples from N(``location_``, ``covariance_``) (post-processing, free).

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples.
        random_state : None, int or Generator, default=None
            Source of randomness (independent of the fit's).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The samples.
        """
        check_is_fitted(self)
        if not isinstance(n_samples, numbers.Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive int, got {n_samples!r}.")
        rng = check_generator(random_state)
        z = rng.standard_normal((int(n_samples), self.location_.shape[0]))
        return self.location_ + z @ self._sample_factor.T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
