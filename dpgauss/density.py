"""One fitted Gaussian model, shared by the estimators that release one.

* :class:`GaussianDensityMixin`: N(``location_``, ``covariance_``) stored as one
  eigendecomposition, behind ``covariance_``, ``precision_``,
  ``score_samples``, ``score``, ``mahalanobis`` and ``sample``.
* :func:`sampling_generator`: the checks and the Generator of a fitted model's
  ``sample``.

Post-processing of released values only: nothing here reads private rows or
spends a budget, which is why it sits beside :mod:`dpgauss.base` rather than in
it (the fit template), in the same layer.
"""

import math
import numbers

import numpy as np
from scipy import linalg
from sklearn.base import DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.utils._leak import warn_if_scored_in_search
from dpgauss.utils._linalg import model_parts
from dpgauss.utils._random import check_generator

__all__ = ["GaussianDensityMixin", "sampling_generator"]


def sampling_generator(estimator, n_samples, random_state):
    """The Generator a fitted model's ``sample`` draws from, after checking
    that it is fitted and that ``n_samples`` is a positive int."""
    check_is_fitted(estimator)
    if not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}.")
    return check_generator(random_state)


class GaussianDensityMixin(DensityMixin):
    """One fitted Gaussian N(``location_``, ``covariance_``) behind every method.

    The model is stored once, as an eigendecomposition whose eigenvalues are at
    least ``eigenvalue_floor_``: ``covariance_`` is that matrix, ``precision_``
    its inverse, and ``score_samples``, ``mahalanobis`` and ``sample`` use the
    same eigenvalues, so all of them describe the same distribution.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivateCovariance
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> est = PrivateCovariance(rho=1.0, data_norm=4.0, random_state=0).fit(X)
    >>> bool(np.allclose(est.covariance_ @ est.precision_, np.eye(2)))
    True
    """

    @staticmethod
    def _gaussian_attributes(location, eigenvalues, eigenvectors, floor, scale=None):
        """The fitted attributes of N(location, S V diag(max(values, floor)) V^T S).

        ``S = diag(scale)`` is a public change of units (identity when
        ``scale`` is None; see :func:`~dpgauss.utils._linalg.model_parts`):
        the spectrum stays in the units it was released in, and
        ``covariance_`` and ``precision_`` are formed entrywise from it, so
        columns 1e-3 and 1e6 apart keep their own precision.
        """
        values = np.maximum(np.asarray(eigenvalues, dtype=np.float64), floor)
        vectors = np.asarray(eigenvectors, dtype=np.float64)
        covariance = (vectors * values) @ vectors.T
        covariance = 0.5 * (covariance + covariance.T)
        precision = (vectors / values) @ vectors.T
        precision = 0.5 * (precision + precision.T)
        model = (values, vectors)
        if scale is not None:  # entrywise: the products stay symmetric
            scale = np.asarray(scale, dtype=np.float64)
            outer = np.outer(scale, scale)
            covariance, precision = covariance * outer, precision / outer
            model = (values, vectors, scale)
        return {
            "location_": np.asarray(location, dtype=np.float64),
            "covariance_": covariance,
            "precision_": precision,
            "eigenvalue_floor_": float(floor),
            "_model": model,
        }

    def get_precision(self):
        """Return the precision matrix, the inverse of ``covariance_``.

        Returns
        -------
        ndarray of shape (n_features, n_features)
            ``precision_``.
        """
        check_is_fitted(self)
        return self.precision_

    def mahalanobis(self, X):
        """Return the squared Mahalanobis distances of ``X`` to the fitted model.

        Applied to private rows the result is not private (it reads them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``(x - location_)^T precision_ (x - location_)``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        values, vectors, scale = model_parts(self._model)
        whitened = (((X - self.location_) / scale) @ vectors) / np.sqrt(values)
        return np.einsum("ij,ij->i", whitened, whitened)

    def score_samples(self, X):
        """Return the log-density of each sample under the fitted Gaussian.

        Applied to private rows the result is not private (it reads them); see
        :mod:`dpgauss.model_selection` for a private score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log-density of N(``location_``, ``covariance_``) at each row.
        """
        distances = self.mahalanobis(X)
        values, _, scale = model_parts(self._model)
        logdet = float(np.sum(np.log(values)) + 2.0 * np.sum(np.log(scale)))
        return -0.5 * (values.shape[0] * math.log(2.0 * math.pi) + logdet + distances)

    def score(self, X, y=None):
        """Return the mean per-sample log-likelihood of ``X`` (not private).

        This reads ``X``: on private data (a cross-validation test fold, say) the
        score is not differentially private. Use
        :func:`dpgauss.model_selection.make_private_scorer` to score privately.

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

        Warns
        -----
        PrivacyLeakWarning
            When called by scikit-learn's cross-validation or search on a test
            fold (the score is published without noise and without a charge).
        """
        warn_if_scored_in_search(self)
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
        rng = sampling_generator(self, n_samples, random_state)
        values, vectors, scale = model_parts(self._model)
        z = rng.standard_normal((int(n_samples), self.location_.shape[0]))
        return self.location_ + scale * ((z * np.sqrt(values)) @ vectors.T)
