"""Additive noise mechanisms: Gaussian (zCDP) and Laplace (pure DP).

Each mechanism is built from the sensitivity of the statistic it releases (a
promise by the caller, stated next to every call site in dpgauss) and a privacy
cost, from which it calibrates its noise scale:

* Gaussian, l2 sensitivity D, rho-zCDP: sigma = D / sqrt(2 rho)
  (Bun and Steinke 2016, Proposition 1.6).
* Laplace, l1 sensitivity D, epsilon-DP: b = D / epsilon (Dwork et al. 2006).

The symmetric-matrix variants release a symmetric matrix statistic by noising its
upper triangle (diagonal included) and mirroring the noise.
"""

import math

import numpy as np

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "SymmetricGaussianMechanism",
    "SymmetricLaplaceMechanism",
]


def _as_float_array(value):
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("the value to privatise contains NaN or infinity.")
    return array


def _as_symmetric(value):
    array = _as_float_array(value)
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {array.shape}.")
    if not np.allclose(array, array.T, rtol=1e-10, atol=0.0):
        raise ValueError("expected a symmetric matrix.")
    return array


class GaussianMechanism:
    """The Gaussian mechanism for a scalar or vector with known l2 sensitivity.

    Parameters
    ----------
    sensitivity : float
        The l2 sensitivity: the largest l2 distance between the statistic on two
        neighbouring datasets (replace-one, n public).
    rho : float
        The zCDP cost. Noise is N(0, sigma^2) per coordinate with
        ``sigma = sensitivity / sqrt(2 rho)``.

    Attributes
    ----------
    scale : float
        The noise standard deviation sigma.
    cost : ZCDP
        The privacy cost of one release.

    Examples
    --------
    >>> from dpgauss.mechanisms import GaussianMechanism
    >>> mech = GaussianMechanism(sensitivity=1.0, rho=0.5)
    >>> mech.scale, mech.cost
    (1.0, ZCDP(rho=0.5))
    >>> mech.randomise([0.0, 10.0], random_state=0).round(3)
    array([0.126, 9.868])
    """

    def __init__(self, *, sensitivity, rho):
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = ZCDP(_check_positive_finite("rho", rho))
        self.scale = self.sensitivity / math.sqrt(2.0 * self.cost.rho)

    def randomise(self, value, random_state=None):
        """Return ``value`` plus Gaussian noise.

        Parameters
        ----------
        value : float or array-like
            The exact statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray
            The noisy statistic.
        """
        value = _as_float_array(value)
        return value + _noise.draw_gaussian(self.scale, value.shape, random_state)

    def __repr__(self):
        return f"GaussianMechanism(sensitivity={self.sensitivity!r}, {self.cost})"


class LaplaceMechanism:
    """The Laplace mechanism for a scalar or vector with known l1 sensitivity.

    Parameters
    ----------
    sensitivity : float
        The l1 sensitivity under replace-one neighbours.
    epsilon : float
        The pure DP cost. Noise is Laplace(0, b) per coordinate with
        ``b = sensitivity / epsilon``.

    Attributes
    ----------
    scale : float
        The Laplace scale b.
    cost : PureDP
        The privacy cost of one release.

    Examples
    --------
    >>> from dpgauss.mechanisms import LaplaceMechanism
    >>> mech = LaplaceMechanism(sensitivity=2.0, epsilon=1.0)
    >>> mech.scale, mech.cost
    (2.0, PureDP(epsilon=1.0))
    """

    def __init__(self, *, sensitivity, epsilon):
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))
        self.scale = self.sensitivity / self.cost.epsilon

    def randomise(self, value, random_state=None):
        """Return ``value`` plus Laplace noise.

        Parameters
        ----------
        value : float or array-like
            The exact statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray
            The noisy statistic.
        """
        value = _as_float_array(value)
        return value + _noise.draw_laplace(self.scale, value.shape, random_state)

    def __repr__(self):
        return f"LaplaceMechanism(sensitivity={self.sensitivity!r}, {self.cost})"


class SymmetricGaussianMechanism:
    """The Gaussian mechanism for a symmetric matrix with known Frobenius sensitivity.

    Parameters
    ----------
    sensitivity : float
        The Frobenius-norm sensitivity D of the symmetric statistic under
        replace-one neighbours (for the second moment of rows clipped to l2 norm
        B, ``D = sqrt(2) B^2 / n``).
    rho : float
        The zCDP cost.

    Attributes
    ----------
    scale : float
        sigma = D / sqrt(2 rho), the noise standard deviation on the diagonal.
        Off-diagonal entries get ``scale / sqrt(2)``.
    cost : ZCDP
        The privacy cost of one release.

    Notes
    -----
    Privacy proof. The map T sending a symmetric matrix A to the vector of its
    diagonal entries and of ``sqrt(2)`` times its strictly-upper entries is linear
    and preserves norms: ``||T(A)||_2 = ||A||_F``. So T(statistic) has l2
    sensitivity D, and adding N(0, sigma^2 I) to it with sigma = D / sqrt(2 rho) is
    rho-zCDP. Inverting T (post-processing, free) gives noise N(0, sigma^2) on each
    diagonal entry and N(0, sigma^2 / 2) on each upper entry, mirrored. Compared
    with the usual N(0, sigma^2) on every upper entry (which is calibrated to the
    same D, as the upper-triangle l2 norm is at most the Frobenius norm), the
    expected squared Frobenius error falls from ``d^2 sigma^2`` to
    ``d (d + 1) sigma^2 / 2`` at the same privacy.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import SymmetricGaussianMechanism
    >>> mech = SymmetricGaussianMechanism(sensitivity=np.sqrt(2) / 100, rho=1.0)
    >>> noisy = mech.randomise(np.eye(3), random_state=0)
    >>> bool(np.array_equal(noisy, noisy.T))
    True
    """

    def __init__(self, *, sensitivity, rho):
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = ZCDP(_check_positive_finite("rho", rho))
        self.scale = self.sensitivity / math.sqrt(2.0 * self.cost.rho)

    def randomise(self, value, random_state=None):
        """Return the symmetric ``value`` plus symmetric Gaussian noise.

        Parameters
        ----------
        value : array-like of shape (d, d)
            The exact symmetric statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (d, d)
            The noisy symmetric statistic.
        """
        value = _as_symmetric(value)
        noise = _noise.draw_symmetric(
            self.scale,
            self.scale / math.sqrt(2.0),
            value.shape[0],
            "gaussian",
            random_state,
        )
        return value + noise

    def __repr__(self):
        return (
            f"SymmetricGaussianMechanism(sensitivity={self.sensitivity!r}, {self.cost})"
        )


class SymmetricLaplaceMechanism:
    """The Laplace mechanism for a symmetric matrix, noise on the upper triangle.

    Parameters
    ----------
    sensitivity : float
        The l1 sensitivity of the upper triangle (diagonal included) under
        replace-one neighbours.
    epsilon : float
        The pure DP cost; every upper entry gets Laplace(sensitivity / epsilon)
        noise, mirrored below the diagonal (post-processing).

    Attributes
    ----------
    scale : float
        The Laplace scale.
    cost : PureDP
        The privacy cost of one release.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import SymmetricLaplaceMechanism
    >>> mech = SymmetricLaplaceMechanism(sensitivity=0.04, epsilon=1.0)
    >>> mech.randomise(np.eye(2), random_state=0).shape
    (2, 2)
    """

    def __init__(self, *, sensitivity, epsilon):
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))
        self.scale = self.sensitivity / self.cost.epsilon

    def randomise(self, value, random_state=None):
        """Return the symmetric ``value`` plus symmetric Laplace noise.

        Parameters
        ----------
        value : array-like of shape (d, d)
            The exact symmetric statistic.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        ndarray of shape (d, d)
            The noisy symmetric statistic.
        """
        value = _as_symmetric(value)
        noise = _noise.draw_symmetric(
            self.scale, self.scale, value.shape[0], "laplace", random_state
        )
        return value + noise

    def __repr__(self):
        return (
            f"SymmetricLaplaceMechanism(sensitivity={self.sensitivity!r}, {self.cost})"
        )
