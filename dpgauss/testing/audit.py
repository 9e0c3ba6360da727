"""A small statistical privacy audit: a lower confidence bound on epsilon.

Run a mechanism many times on two neighbouring inputs, pick an output event
(a threshold or a value of a scalar summary of the output) on a first batch of
runs, then measure that one event on a fresh batch and bound the privacy loss
with exact Clopper-Pearson intervals:

.. math::

   \\varepsilon \\ge \\log \\frac{\\underline{p}_A - \\delta}{\\overline{p}_B}

where ``P[M(A) in S] <= e^eps P[M(B) in S] + delta`` must hold for every event S
if M is (epsilon, delta)-DP. Choosing the event on separate runs keeps the
bound's confidence level honest (no multiple testing). A bound above the claimed
epsilon shows, at the stated confidence, that the claim is false; a bound below it
proves nothing by itself, which is why every audit in the tests also runs on a
deliberately broken variant of the mechanism and must flag it.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from dpgauss.utils._random import check_generator

__all__ = ["AuditResult", "audit", "clopper_pearson", "fit_seed"]


def fit_seed(rng):
    """An integer seed for one fit, drawn from the audit's generator.

    A fit given a Generator mixes fresh operating-system entropy into it (two
    fits must never share noise), so an audit that passed its own generator
    to every fit changed from run to run; an integer seed is used as given.

    Parameters
    ----------
    rng : numpy.random.Generator
        The audit's generator (the ``rng`` of ``run(n, rng)``).

    Returns
    -------
    int
        A seed in ``[0, 2**63)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.testing.audit import fit_seed
    >>> fit_seed(np.random.default_rng(0)) == fit_seed(np.random.default_rng(0))
    True
    """
    return int(rng.integers(2**63))


def clopper_pearson(successes, trials, alpha):
    """Exact one-sided Clopper-Pearson bounds for a binomial proportion.

    Parameters
    ----------
    successes : int or ndarray
        Number of successes k.
    trials : int
        Number of trials n.
    alpha : float
        Each bound holds with probability at least ``1 - alpha``.

    Returns
    -------
    lower, upper : float or ndarray
        ``P[p >= lower] >= 1 - alpha`` and ``P[p <= upper] >= 1 - alpha``.

    Examples
    --------
    >>> from dpgauss.testing.audit import clopper_pearson
    >>> lower, upper = clopper_pearson(50, 100, 0.025)
    >>> round(float(lower), 3), round(float(upper), 3)
    (0.398, 0.602)
    """
    k = np.asarray(successes, dtype=np.float64)
    lower = np.where(k > 0, beta.ppf(alpha, k, trials - k + 1), 0.0)
    upper = np.where(k < trials, beta.ppf(1 - alpha, k + 1, trials - k), 1.0)
    return lower, upper


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Parameters
    ----------
    epsilon_lower : float
        Lower confidence bound on epsilon at ``delta`` (0 when nothing shows).
    event : str
        The event measured, e.g. ``"A: output >= 1.3"``.
    counts : tuple of int
        Occurrences of the event among the runs on the first and second input.
    n_samples : int
        Runs per input in the measuring batch.

    Examples
    --------
    >>> from dpgauss.testing.audit import AuditResult
    >>> AuditResult(0.4, "A: output >= 1", (120, 80), 1000).epsilon_lower
    0.4
    """

    epsilon_lower: float
    event: str
    counts: tuple
    n_samples: int


def _candidate_events(pooled):
    """Thresholds (and, for few distinct values, single values) to consider."""
    values = np.unique(pooled)
    if values.size <= 64:
        return values, values
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.0005, 0.9995, 400)))
    return thresholds, np.empty(0)


def _event_counts(outputs, thresholds, singles):
    """Counts of {out >= t}, {out < t} and {out == v} for every candidate."""
    ordered = np.sort(outputs)
    n = ordered.size
    at_least = n - np.searchsorted(ordered, thresholds, side="left")
    equal = np.searchsorted(ordered, singles, side="right") - np.searchsorted(
        ordered, singles, side="left"
    )
    return np.concatenate([at_least, n - at_least, equal])


def _epsilon_bounds(k_a, k_b, n, delta, alpha):
    lower_a, _ = clopper_pearson(k_a, n, alpha / 2)
    _, upper_b = clopper_pearson(k_b, n, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((lower_a - delta) / upper_b)
    return np.where(lower_a > delta, eps, -np.inf)


def audit(
    run_a, run_b, *, n_samples, delta=0.0, alpha=0.05, n_select=None, random_state=None
):
    """Lower-bound the epsilon of a mechanism on two neighbouring inputs.

    Parameters
    ----------
    run_a, run_b : callable
        ``run(n, rng)`` returns ``n`` independent scalar outputs (a 1-D array) of
        the mechanism on the first and on the second input.
    n_samples : int
        Runs per input in the measuring batch.
    delta : float, default=0.0
        The delta at which epsilon is bounded.
    alpha : float, default=0.05
        The bound holds with probability at least ``1 - alpha``.
    n_select : int, default=None
        Runs per input in the event-selection batch (``n_samples`` if None).
    random_state : None, int or Generator, default=None
        Source of randomness for the runs.

    Returns
    -------
    AuditResult
        The bound and the event it came from, for the worse of the two
        directions (A against B and B against A).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms import LaplaceMechanism
    >>> from dpgauss.testing.audit import audit
    >>> mech = LaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    >>> result = audit(
    ...     lambda n, rng: mech.randomise(np.zeros(n), rng),
    ...     lambda n, rng: mech.randomise(np.ones(n), rng),
    ...     n_samples=100_000,
    ...     random_state=0,
    ... )
    >>> bool(result.epsilon_lower <= 1.0)
    True
    """
    rng = check_generator(random_state)
    n_select = n_samples if n_select is None else n_select
    sel_a = np.asarray(run_a(n_select, rng), dtype=np.float64)
    sel_b = np.asarray(run_b(n_select, rng), dtype=np.float64)
    thresholds, singles = _candidate_events(np.concatenate([sel_a, sel_b]))
    counts_a = _event_counts(sel_a, thresholds, singles)
    counts_b = _event_counts(sel_b, thresholds, singles)
    forward = _epsilon_bounds(counts_a, counts_b, n_select, delta, alpha)
    backward = _epsilon_bounds(counts_b, counts_a, n_select, delta, alpha)
    both = np.concatenate([forward, backward])
    best = int(np.argmax(both))
    swapped, index = divmod(best, forward.size)

    test_a = np.asarray(run_a(n_samples, rng), dtype=np.float64)
    test_b = np.asarray(run_b(n_samples, rng), dtype=np.float64)
    k_a = int(_event_counts(test_a, thresholds, singles)[index])
    k_b = int(_event_counts(test_b, thresholds, singles)[index])
    if swapped:
        k_a, k_b = k_b, k_a
    eps = float(_epsilon_bounds(k_a, k_b, n_samples, delta, alpha))
    return AuditResult(
        epsilon_lower=max(eps, 0.0),
        event=_describe(index, thresholds, singles, swapped),
        counts=(k_a, k_b),
        n_samples=int(n_samples),
    )


def _describe(index, thresholds, singles, swapped):
    first = "B" if swapped else "A"
    t = thresholds.size
    if index < t:
        return f"{first}: output >= {thresholds[index]:.6g}"
    if index < 2 * t:
        return f"{first}: output < {thresholds[index - t]:.6g}"
    return f"{first}: output == {singles[index - 2 * t]:.6g}"
