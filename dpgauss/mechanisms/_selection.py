"""Selection mechanisms: the exponential mechanism and AboveThreshold (sparse vector).

Both are pure epsilon-DP; in a zCDP budget they count as ``epsilon**2 / 2``.
"""

import numpy as np

from dpgauss.accounting import PureDP
from dpgauss.accounting._costs import _check_positive_finite
from dpgauss.mechanisms import _noise

__all__ = ["AboveThreshold", "ExponentialMechanism"]


class ExponentialMechanism:
    """Select a candidate with probability proportional to exp(eps u / (2 D)).

    Parameters
    ----------
    sensitivity : float
        D: the largest change of any one candidate's utility between neighbouring
        datasets (replace-one).
    epsilon : float
        The pure DP cost.
    monotonic : bool, default=False
        If every utility moves in the same direction between any two neighbours,
        the exponent may be ``eps u / D`` (McSherry and Talwar 2007); only set
        this when that is proven for the utility at hand.

    Attributes
    ----------
    cost : PureDP
        The privacy cost of one selection.

    Notes
    -----
    Sampling uses the Gumbel-max identity: ``argmax_i (log w_i + c u_i + G_i)``
    with i.i.d. standard Gumbel ``G_i`` has exactly the distribution
    ``P(i) ∝ w_i exp(c u_i)``. Optional ``log_base`` weights ``log w_i`` must not
    depend on the data (or their dependence must be part of the utility's
    sensitivity analysis, as for the quantile mechanism's interval lengths).

    Examples
    --------
    >>> from dpgauss.mechanisms import ExponentialMechanism
    >>> mech = ExponentialMechanism(sensitivity=1.0, epsilon=50.0)
    >>> int(mech.select([0.0, 10.0, 1.0], random_state=0))
    1
    """

    def __init__(self, *, sensitivity, epsilon, monotonic=False):
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))
        self.monotonic = bool(monotonic)

    @property
    def coefficient(self):
        """The factor c in ``P(i) ∝ exp(c u_i)``: eps/(2D), or eps/D if monotonic."""
        factor = 1.0 if self.monotonic else 2.0
        return self.cost.epsilon / (factor * self.sensitivity)

    def select(self, utilities, random_state=None, *, log_base=None):
        """Return the index of the selected candidate.

        Parameters
        ----------
        utilities : array-like of shape (k,)
            Finite utility of each candidate.
        random_state : None, int or Generator, default=None
            Source of randomness.
        log_base : array-like of shape (k,), default=None
            Log base-measure weights (``-inf`` excludes a candidate).

        Returns
        -------
        int
            The selected index.
        """
        utilities = np.asarray(utilities, dtype=np.float64)
        if utilities.ndim != 1 or utilities.size == 0:
            raise ValueError("utilities must be a non-empty 1-D array.")
        if not np.all(np.isfinite(utilities)):
            raise ValueError("utilities must be finite.")
        scores = self.coefficient * utilities
        if log_base is not None:
            scores = scores + np.asarray(log_base, dtype=np.float64)
        scores = scores + _noise.draw_gumbel(utilities.shape, random_state)
        return int(np.argmax(scores))

    def __repr__(self):
        return f"ExponentialMechanism(sensitivity={self.sensitivity!r}, {self.cost})"


class AboveThreshold:
    """AboveThreshold (the sparse vector technique): first query above a threshold.

    Parameters
    ----------
    threshold : float
        The public threshold T.
    sensitivity : float
        D: the largest change of any one query's value between neighbouring
        datasets.
    epsilon : float
        The pure DP cost of the whole run, however many queries are asked.

    Attributes
    ----------
    cost : PureDP
        The privacy cost of one run.

    Notes
    -----
    Algorithm (Dwork and Roth 2014, Algorithm 1; Lyu, Su and Li 2017, with
    epsilon_1 = epsilon_2 = epsilon / 2): draw ``T' = T + Lap(2D / eps)``; for each
    query k in order, return k as soon as ``f_k + Lap(4D / eps) >= T'``; return
    ``None`` if none does. This is epsilon-DP for any number of queries and for
    queries that are not monotone. All noise is drawn up front (same distribution
    as drawing it query by query).

    Examples
    --------
    >>> from dpgauss.mechanisms import AboveThreshold
    >>> svt = AboveThreshold(threshold=5.0, sensitivity=1.0, epsilon=20.0)
    >>> svt.first_above([0.0, 1.0, 9.0, 10.0], random_state=0)
    2
    """

    def __init__(self, *, threshold, sensitivity, epsilon):
        threshold = float(threshold)
        if not np.isfinite(threshold):
            raise ValueError(f"threshold must be finite, got {threshold!r}.")
        self.threshold = threshold
        self.sensitivity = _check_positive_finite("sensitivity", sensitivity)
        self.cost = PureDP(_check_positive_finite("epsilon", epsilon))

    def first_above(self, values, random_state=None):
        """Return the index of the first query judged above the threshold.

        Parameters
        ----------
        values : array-like of shape (k,)
            The exact query answers f_1(X), ..., f_k(X), in the order asked.
        random_state : None, int or Generator, default=None
            Source of randomness.

        Returns
        -------
        int or None
            The 0-based index of the first query that fired, or ``None``.
        """
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 1 or not np.all(np.isfinite(values)):
            raise ValueError("values must be a finite 1-D array.")
        eps = self.cost.epsilon
        noisy_threshold = self.threshold + _noise.draw_laplace(
            2.0 * self.sensitivity / eps, None, random_state
        )
        noisy = values + _noise.draw_laplace(
            4.0 * self.sensitivity / eps, values.shape, random_state
        )
        fired = np.flatnonzero(noisy >= noisy_threshold)
        return int(fired[0]) if fired.size else None

    def __repr__(self):
        return (
            f"AboveThreshold(threshold={self.threshold!r}, "
            f"sensitivity={self.sensitivity!r}, {self.cost})"
        )
