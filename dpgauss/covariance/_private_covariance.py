"""PrivateCovariance: covariance of rows clipped to a public ball, made private.

``method="gauss"`` is GaussCov (Dwork, Talwar, Thakurta and Zhang 2014; Dong, Liang
and Yi 2022, "AnalyzeGauss"): the Gaussian mechanism on the second moment of the
clipped rows, with its pure-DP Laplace twin when only ``epsilon`` is given.
"""

import math

import numpy as np
from sklearn.utils.validation import validate_data

from dpgauss.accounting import ZCDP
from dpgauss.covariance._base import BasePrivateCovariance
from dpgauss.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)
from dpgauss.utils._random import check_random_state
from dpgauss.utils._sklearn_compat import StrOptions, _fit_context
from dpgauss.utils.validation import check_data_norm, resolve_privacy, split_cost

__all__ = ["PrivateCovariance"]

#: Share of the fit's privacy cost spent on the mean when ``center=True``.
MEAN_SHARE = 0.25

#: Rows per chunk when summing over rows (bounds temporary memory to about
#: ``CHUNK_ROWS * n_features * 8`` bytes).
CHUNK_ROWS = 1 << 15


def clipped_sums(X, location, data_norm, chunk_rows=CHUNK_ROWS):
    """Return the sums over rows of y and y y^T for rows clipped to ``data_norm``.

    Each row ``x`` becomes ``y = (x - c) * min(1, data_norm / ||x - c||)`` with
    ``c = location``, so ``||y|| <= data_norm`` whatever the data. The input is
    read in chunks and never modified.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data (an array or a memory-mapped array).
    location : ndarray of shape (n_features,)
        The public centre of the clipping ball.
    data_norm : float
        The public radius.
    chunk_rows : int, default=CHUNK_ROWS
        Rows read at a time.

    Returns
    -------
    sum_y : ndarray of shape (n_features,)
        Sum of the clipped rows.
    sum_yy : ndarray of shape (n_features, n_features)
        Sum of their outer products.
    """
    d = X.shape[1]
    sum_y, sum_yy = np.zeros(d), np.zeros((d, d))
    for start in range(0, X.shape[0], chunk_rows):
        y = _clip_rows(np.asarray(X[start : start + chunk_rows]), location, data_norm)
        sum_y += y.sum(axis=0)
        sum_yy += y.T @ y
    return sum_y, sum_yy


def _clip_rows(x, location, radius):
    """Return ``x - location`` with every row scaled into the ball of ``radius``.

    Privacy must not depend on input validation, so every float row is mapped
    into the ball: a row that is not finite (possible when scikit-learn's
    ``assume_finite`` is set) or whose offset overflows float64 is mapped to the
    centre, a fixed public point; a huge finite row is scaled without overflow.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.asarray(x, dtype=np.float64) - location
        y[~np.isfinite(y).all(axis=1)] = 0.0
        norms = np.sqrt(np.einsum("ij,ij->i", y, y))
    with np.errstate(divide="ignore"):
        factor = np.minimum(1.0, radius / norms)  # 0 where ||y||^2 overflowed
    huge = np.isinf(norms)
    if huge.any():  # recompute those norms as max|y| * ||y / max|y|||
        scaled = y[huge] / np.abs(y[huge]).max(axis=1, keepdims=True)
        factor[huge] = 1.0
        y[huge] = scaled * (radius / np.linalg.norm(scaled, axis=1))[:, None]
    y *= factor[:, None]
    return y


def _mechanisms(total, n, d, data_norm, center):
    """Calibrate the releases of one fit; return [(mechanism, name)].

    Sensitivities (replace-one neighbours, n public, ||y|| <= B = data_norm):

    * mean of y: ||(y - y') / n||_2 <= 2B / n, and ||.||_1 <= 2 sqrt(d) B / n;
    * second moment M = (1/n) sum y y^T:
      ||y y^T - y' y'^T||_F^2 = ||y||^4 + ||y'||^4 - 2 (y . y')^2 <= 2 B^4, so the
      Frobenius sensitivity is sqrt(2) B^2 / n. For Laplace noise on the upper
      triangle (diagonal included), its l1 norm for one row is
      (||y||_1^2 + ||y||_2^2) / 2 <= (d + 1) B^2 / 2, and also at most
      d ||.||_F; so the l1 sensitivity is min(d + 1, sqrt(2) d) B^2 / n.
    """
    shares = [MEAN_SHARE, 1.0 - MEAN_SHARE] if center else [1.0]
    costs = split_cost(total, shares)
    b2 = data_norm * data_norm
    mechs = []
    if isinstance(total, ZCDP):
        if center:
            mechs.append(
                (
                    GaussianMechanism(sensitivity=2 * data_norm / n, rho=costs[0].rho),
                    "gaussian:mean",
                )
            )
        mechs.append(
            (
                SymmetricGaussianMechanism(
                    sensitivity=math.sqrt(2) * b2 / n, rho=costs[-1].rho
                ),
                "gaussian:second_moment",
            )
        )
    else:
        if center:
            mechs.append(
                (
                    LaplaceMechanism(
                        sensitivity=2 * math.sqrt(d) * data_norm / n,
                        epsilon=costs[0].epsilon,
                    ),
                    "laplace:mean",
                )
            )
        mechs.append(
            (
                SymmetricLaplaceMechanism(
                    sensitivity=min(d + 1.0, math.sqrt(2) * d) * b2 / n,
                    epsilon=costs[-1].epsilon,
                ),
                "laplace:second_moment",
            )
        )
    return mechs


class PrivateCovariance(BasePrivateCovariance):
    """Differentially private covariance estimator (GaussCov).

    Rows are clipped to a public l2 ball, their second moment (and, with
    ``center=True``, their mean) are released with calibrated noise, and the result
    is post-processed into a symmetric positive semidefinite covariance.

    Parameters
    ----------
    method : {"gauss"}, default="gauss"
        The release mechanism. ``"gauss"``: noise on the second moment (Gaussian
        noise under zCDP, Laplace noise when only ``epsilon`` is given).
    rho : float, default=None
        Privacy as rho-zCDP. Give exactly one of ``rho``, ``epsilon``, or
        ``epsilon`` and ``delta``.
    epsilon : float, default=None
        Privacy as pure epsilon-DP (alone) or, with ``delta``, as
        (epsilon, delta)-DP, converted to the largest rho that implies it.
    delta : float, default=None
        See ``epsilon``; ``0 < delta < 1``.
    budget : PrivacyBudget, default=None
        A shared budget charged with every release of every fit, before the data
        are read. ``None`` charges nothing but still records ``privacy_spent_``.
    data_norm : float, default=None
        Required. Public l2 radius B: each row ``x`` is clipped to the ball of
        radius B around ``location``. Never taken from the data.
    center : bool, default=True
        If True, estimate the covariance around a privately estimated mean
        (a quarter of the privacy cost goes to the mean). If False, return the
        second moment about ``location``.
    location : array-like of shape (n_features,), default=None
        Public centre of the clipping ball, and the point the second moment is
        taken about when ``center=False``. ``None`` means the origin.
    random_state : None, int, Generator or RandomState, default=None
        Source of noise. ``None`` (operating-system entropy) is the only setting
        for a real release: anyone who knows an int seed can reproduce the noise.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        The private covariance, symmetric PSD, eigenvalues in [0, data_norm^2].
    location_ : ndarray of shape (n_features,)
        The private mean (``center=True``) or ``location``.
    precision_ : ndarray of shape (n_features, n_features)
        Inverse of ``covariance_`` with its eigenvalues floored at
        ``eigenvalue_floor_``.
    eigenvalue_floor_ : float
        Public floor (the standard deviation of the noise on a diagonal entry),
        used for ``precision_`` and the log-likelihood.
    privacy_spent_ : ZCDP or PureDP
        What the fit cost (what was charged to ``budget``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.covariance.EmpiricalCovariance : The non-private estimator.
    dpgauss.PrivacyBudget : A budget shared by several fits.

    Notes
    -----
    **Privacy.** The fit is rho-zCDP (``rho`` or ``epsilon`` and ``delta`` given) or
    epsilon-DP (``epsilon`` alone) with respect to replacing one row of ``X``; the
    number of rows n, ``data_norm``, ``location`` and every other parameter are
    public. Privacy holds for every dataset of finite rows because every row is
    clipped to the ball the noise is calibrated for (non-finite input is refused
    before any spend; see the user guide's privacy model). Sensitivities: the mean
    of the clipped rows moves by at most 2B/n in l2 (2 sqrt(d) B/n in l1); their
    second moment by at most sqrt(2) B^2/n in Frobenius norm (min(d + 1, sqrt(2) d)
    B^2/n in l1 over the upper triangle). Under zCDP the second moment gets N(0,
    sigma^2) noise on the diagonal and N(0, sigma^2/2) off it, sigma = sqrt(2) B^2 /
    (n sqrt(2 rho')), which is exactly as private as sigma on every entry (see
    :class:`~dpgauss.mechanisms.SymmetricGaussianMechanism`). Costs compose
    additively; the split is recorded release by release in the budget.
    Post-processing (subtracting the mean's outer product, clipping eigenvalues to
    [0, B^2], flooring them for the precision) is free. Guarantees assume ideal
    real-valued noise (see :mod:`dpgauss.mechanisms`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.covariance import PrivateCovariance
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([0, 0], [[1.0, 0.5], [0.5, 1.0]], size=20000)
    >>> est = PrivateCovariance(rho=1.0, data_norm=6.0, random_state=0).fit(X)
    >>> np.round(est.covariance_, 1)
    array([[1. , 0.5],
           [0.5, 1. ]])
    >>> est.privacy_spent_
    ZCDP(rho=1.0)
    """

    _parameter_constraints: dict = {
        **BasePrivateCovariance._parameter_constraints,
        "method": [StrOptions({"gauss"})],
        "center": ["boolean"],
        "location": ["array-like", None],
    }

    def __init__(
        self,
        *,
        method="gauss",
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        data_norm=None,
        center=True,
        location=None,
        random_state=None,
    ):
        self.method = method
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.data_norm = data_norm
        self.center = center
        self.location = location
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the private covariance of ``X``, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; at least 2 rows. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateCovariance
            The fitted estimator.
        """
        name = type(self).__name__
        total = resolve_privacy(self.rho, self.epsilon, self.delta, owner=name)
        data_norm = check_data_norm(self.data_norm, owner=name)
        if self.budget is not None:  # refuse an exhausted budget before reading X
            self.budget.check(total)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        n, d = X.shape
        location = self._check_location(d)
        mechs = _mechanisms(total, n, d, data_norm, bool(self.center))
        self._charge(total, [(m.cost, label) for m, label in mechs])
        rng = check_random_state(self.random_state)
        sum_y, sum_yy = clipped_sums(X, location, data_norm)
        second = mechs[-1][0].randomise(sum_yy / n, rng)
        if self.center:
            mean = _project_ball(mechs[0][0].randomise(sum_y / n, rng), data_norm)
            covariance, location = second - np.outer(mean, mean), location + mean
        else:
            covariance = second
        noise = mechs[-1][0]
        floor = noise.scale * (1.0 if isinstance(total, ZCDP) else math.sqrt(2.0))
        self._set_covariance(covariance, location, floor, data_norm**2)
        return self

    def _check_location(self, d):
        if self.location is None:
            return np.zeros(d)
        location = np.asarray(self.location, dtype=np.float64)
        if location.shape != (d,) or not np.all(np.isfinite(location)):
            raise ValueError(
                f"location must be a finite array of shape ({d},), got shape "
                f"{location.shape}."
            )
        return location


def _project_ball(vector, radius):
    """Project onto the l2 ball of ``radius`` (post-processing: the true clipped mean
    lies in it)."""
    norm = float(np.linalg.norm(vector))
    return vector if norm <= radius else vector * (radius / norm)
