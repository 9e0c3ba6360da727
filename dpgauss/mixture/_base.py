"""The density methods of a fitted private Gaussian mixture.

Everything here is post-processing of the fitted ``weights_``, ``means_``,
``covariances_`` and ``precisions_cholesky_``, except that a score or
prediction computed on private rows reads them (see each method).
"""

import math

import numpy as np
from scipy.special import logsumexp
from sklearn.base import DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.density import sampling_generator
from dpgauss.mixture._refine import log_densities
from dpgauss.utils._leak import warn_if_scored_in_search

__all__ = ["BasePrivateMixture"]


class BasePrivateMixture(DensityMixin):
    """Log-densities, scores, predictions, sampling and information criteria
    of a fitted Gaussian mixture (``GaussianMixture``'s conventions)."""

    def _estimate_log_prob(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return log_densities(X, self.weights_, self.means_, self.precisions_cholesky_)

    def score_samples(self, X):
        """Log-density of each row under the mixture (not private on private rows).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``log sum_j w_j N(x; mu_j, Sigma_j)``.
        """
        return logsumexp(self._estimate_log_prob(X), axis=1)

    def score(self, X, y=None):
        """Mean log-likelihood per row (reads ``X``: not private on private rows).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.
        y : None
            Ignored.

        Returns
        -------
        float
            Mean of :meth:`score_samples`.
        """
        warn_if_scored_in_search(self)
        return float(np.mean(self.score_samples(X)))

    def predict_proba(self, X):
        """Posterior probability of each component for each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The responsibilities.
        """
        log = self._estimate_log_prob(X)
        return np.exp(log - logsumexp(log, axis=1, keepdims=True))

    def predict(self, X):
        """The most likely component of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        ndarray of shape (n_samples,)
            Component labels.
        """
        return np.argmax(self._estimate_log_prob(X), axis=1)

    def sample(self, n_samples=1, random_state=None):
        """Draw rows from the fitted mixture (post-processing, free).

        Parameters
        ----------
        n_samples : int, default=1
            Number of rows.
        random_state : None, int or Generator, default=None
            Source of randomness (independent of the fit's).

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            The rows.
        y : ndarray of shape (n_samples,)
            Their components.
        """
        rng = sampling_generator(self, n_samples, random_state)
        y = rng.choice(self.n_components_, size=int(n_samples), p=self.weights_)
        X = np.empty((int(n_samples), self.means_.shape[1]))
        for j in range(self.n_components_):
            count = int(np.sum(y == j))
            if count:
                lower = np.linalg.cholesky(self.covariances_[j])
                draws = rng.standard_normal((count, self.means_.shape[1]))
                X[y == j] = self.means_[j] + draws @ lower.T
        return X, y

    def _n_parameters(self):
        k, d = self.means_.shape
        return int(k * d * (d + 1) / 2 + k * d + k - 1)

    def bic(self, X):
        """Bayesian information criterion on ``X`` (reads ``X``: not private).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        float
            ``-2 n score(X) + p log(n)``, p the number of free parameters.
        """
        n = np.asarray(X).shape[0]
        return -2 * self.score(X) * n + self._n_parameters() * math.log(n)

    def aic(self, X):
        """Akaike information criterion on ``X`` (reads ``X``: not private).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows.

        Returns
        -------
        float
            ``-2 n score(X) + 2 p``.
        """
        n = np.asarray(X).shape[0]
        return -2 * self.score(X) * n + 2 * self._n_parameters()
