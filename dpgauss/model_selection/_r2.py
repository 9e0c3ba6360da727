"""A differentially private R^2 scorer for regressors (``make_private_scorer("r2")``).

R^2 on a test fold, ``1 - sum (y - y_hat)^2 / sum (y - mean(y))^2``, is a ratio
of two statistics of the fold. :class:`PrivateR2Scorer` releases the three
means it needs in one vector release, each of a value in [0, 1] computed from
its own row, and forms the ratio from them (post-processing).

**The release.** With public bounds ``(low, high)`` on y (the regressor's
``target_bounds``) and ``w = high - low``, each row i of the fold gives

* ``t_i = clip((y_i - low) / w, 0, 1)`` (NaN is refused before the charge),
* ``p_i = clip((y_hat_i - low) / w, 0, 1)`` (a NaN prediction counts as
  ``low``, an infinite one as its end of the box),
* the vector ``a_i = ((p_i - t_i)^2, t_i, t_i^2)``, every entry in [0, 1].

The release is the mean of the ``a_i``, each coordinate summed by
``math.fsum`` (the exact sum rounded once) and divided by the public n.
Replacing one row moves one ``a_i``, each coordinate by at most 1, and leaves
the others bit for bit unchanged; with the rounding of
:func:`~dpgauss.model_selection._scorer._unit_mean`, each coordinate of the
mean moves by at most ``D = 1/n + 2^-50``: l2 sensitivity ``sqrt(3) D``, l1
``3 D``. Gaussian noise (zCDP) or Laplace noise (pure DP) on each coordinate,
calibrated to those (:func:`~dpgauss.mechanisms._factory.additive`).

**Post-processing.** With ``m = (e, s, q)`` released, the fold's variance of t
is ``v = q - s^2``; the score is ``1 - max(e, 0) / max(v, floor)``, ``floor =
3 sd`` (sd the public noise sd of one coordinate, so a noise draw cannot
divide by about zero), and at most 1. Both statistics are of the targets and
predictions clipped to the box: for predictions inside it and targets inside
it, the score is scikit-learn's ``r2_score`` plus the noise's effect.
"""

import math
import warnings

import numpy as np

from dpgauss.mechanisms._factory import additive
from dpgauss.model_selection._scorer import (
    _ROUNDING_SLACK,
    PrivateScorer,
    _check_n_test,
    _n_rows,
    _unit_values,
)
from dpgauss.utils._leak import private_scoring

__all__ = ["PrivateR2Scorer", "r2_means"]

#: Entries of each row's vector (the squared error, t and t^2).
_ENTRIES = 3
#: The variance's floor in noise sds of one released coordinate.
FLOOR_SDS = 3.0


def r2_means(predictions, targets, low, high):
    """The three means of the release (module docstring), unnoised.

    Parameters
    ----------
    predictions, targets : array-like of shape (n,)
        The model's predictions and the fold's targets.
    low, high : float
        The public bounds on y.

    Returns
    -------
    ndarray of shape (3,)
        Means of ``(p - t)^2``, ``t`` and ``t^2``, each within ``2^-52`` of
        its exact value.

    Examples
    --------
    >>> from dpgauss.model_selection._r2 import r2_means
    >>> r2_means([0.0, 2.0], [0.0, 4.0], 0.0, 4.0).tolist()  # p = (0, 0.5), t = (0, 1)
    [0.125, 0.5, 0.5]
    """
    t = _unit_values(targets, low, high)
    p = _unit_values(predictions, low, high)
    rows = ((p - t) ** 2, t, t * t)
    n = t.shape[0]
    return np.array([math.fsum(r.tolist()) / n for r in rows])


class PrivateR2Scorer(PrivateScorer):
    """A private R^2 for a regressor's test fold (module docstring).

    Build it with ``make_private_scorer("r2", bounds=(low, high), ...)``,
    ``bounds`` the public bounds on y (a :class:`~dpgauss.
    PrivateLinearRegression`'s ``target_bounds``).

    Parameters
    ----------
    budget : PrivacyBudget
        The budget every call is charged to.
    rho, epsilon, delta : float, default=None
        The cost of one call, as for :class:`PrivateScorer`.
    bounds : tuple of (float, float)
        Public bounds ``(low, high)`` on the target y. Required.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Source of the noise, as for :class:`PrivateScorer`.

    Notes
    -----
    **Privacy of one call.** For a fixed fitted model and the fold's public
    size n, replacing one row of the fold moves each of the three released
    means by at most ``1/n + 2^-50`` (module docstring): the Gaussian noise
    is rho-zCDP at l2 sensitivity ``sqrt(3) (1/n + 2^-50)``, the Laplace
    noise epsilon-DP at l1 sensitivity ``3 (1/n + 2^-50)``. The ratio is
    post-processing. Searches compose as for :class:`PrivateScorer`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivacyBudget, PrivateLinearRegression
    >>> from dpgauss.model_selection import make_private_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1.0, 1.0, size=(20_000, 2))
    >>> y = X @ [1.5, -2.0] + rng.normal(0.0, 0.5, 20_000)
    >>> budget = PrivacyBudget(rho=2.0)
    >>> model = PrivateLinearRegression(
    ...     bounds=(-1.0, 1.0), target_bounds=(-6.0, 6.0), rho=1.0,
    ...     budget=budget, random_state=0,
    ... ).fit(X[:10_000], y[:10_000])
    >>> r2 = make_private_scorer(
    ...     "r2", budget=budget, rho=0.5, bounds=(-6.0, 6.0), random_state=0
    ... )
    >>> round(r2(model, X[10_000:], y[10_000:]), 2)
    0.89
    >>> budget.spent()
    ZCDP(rho=1.5)
    """

    def __init__(
        self,
        *,
        budget,
        rho=None,
        epsilon=None,
        delta=None,
        bounds=None,
        random_state=None,
    ):
        if bounds is None:
            raise ValueError(
                "bounds are required for score='r2': public bounds (low, high) on "
                "the target y (a regressor's target_bounds), never read off the "
                "data."
            )
        super().__init__(
            budget=budget,
            rho=rho,
            epsilon=epsilon,
            delta=delta,
            bounds=bounds,
            score="neg_squared_error",
            random_state=random_state,
        )
        self.score = "r2"

    def _mechanism(self, n_test):
        """Three coordinates, each of sensitivity ``1/n_test + 2^-50``."""
        each = 1.0 / n_test + _ROUNDING_SLACK
        return additive(self.cost, l2=math.sqrt(_ENTRIES) * each, l1=_ENTRIES * each)

    def noise_scale(self, n_test):
        """Return the noise scale of one released mean, in units of ``t``.

        Parameters
        ----------
        n_test : int
            Number of rows of the test fold.

        Returns
        -------
        float
            The Gaussian sd (zCDP) or Laplace scale (pure DP) on each of the
            three means (of values in [0, 1]).
        """
        return float(self._mechanism(_check_n_test(n_test)).scale)

    def _release(self, estimator, X, y, mechanism, rng):
        """The data-dependent part of a call, once it is paid for."""
        n_test = _n_rows(X)
        low, high = self.bounds
        with private_scoring(), np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            predictions = np.asarray(estimator.predict(X), dtype=np.float64)
            if predictions.shape != (n_test,):
                raise ValueError(
                    f"the predictions must have shape ({n_test},), got "
                    f"{predictions.shape}."
                )
            means = r2_means(predictions, y, low, high)
        noisy = np.asarray(mechanism.randomise(means, rng), dtype=np.float64)
        # Post-processing of the release and public values from here.
        error, mean, square = (float(v) for v in noisy.reshape(_ENTRIES))
        floor = FLOOR_SDS * float(mechanism.sd())
        variance = max(square - mean * mean, floor)
        return float(min(1.0 - max(error, 0.0) / variance, 1.0))

    def __repr__(self):
        return (
            f"PrivateR2Scorer({self.cost}, bounds={self.bounds!r}, "
            f"budget={self.budget!r})"
        )
