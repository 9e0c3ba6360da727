"""The "populous" aggregator of SubsampleAggregate: its plan, its test and its mask.

The k candidates ``Y_1..Y_k`` are one statistic per group of rows, so replacing
one row changes at most one candidate; k and every parameter are public. The
aggregator is Ashtiani and Liaw's populous mean (2022, Algorithm 1), made exact
in :mod:`dpgauss.ensemble._populous`; this module runs it as three planned
releases, composed sequentially (the plan charges each):

1. ``radius`` (only with ``radius="auto"``, pure ``SVT_SHARE`` epsilon): the
   neighbour radius tau, the first radius of a public geometric grid whose
   pair count clears a public threshold, by sparse vector
   (:class:`~dpgauss.mechanisms.AboveThreshold`). A pair count is a fixed
   function of each pair of candidates, so replacing one candidate moves every
   count by at most ``2 (k - 1)``, the sensitivity sparse vector is
   calibrated for. tau is then public for what follows.
2. ``test`` (``(TEST_SHARE epsilon, delta / 2)``): the truncated-Laplace test
   on the neighbour counts at tau (:class:`_PopulousTest`); a failed test is
   released as an exception after the spend. Its proof, and the float error
   of its pass probability that its delta pays for, are in
   :mod:`dpgauss.ensemble._populous`.
3. ``mask`` (the rest of epsilon, as the largest rho-zCDP whose conversion at
   the other ``delta / 2`` fits): the ramp-weighted mean of the snapped
   candidates, computed exactly and rounded once to the lattice of a Gaussian
   mechanism of sensitivity :func:`~dpgauss.ensemble._populous.mask_sensitivity`
   (about ``33 tau / k``), which bounds the weighted mean's change on every
   pair of neighbours of which one passes the test.

Each planned release carries the factory of its mechanism: the check before
the spend builds the mask at the largest radius any search or public radius
can reach (``MAX_RADIUS``, the largest noise), and the fit builds it with the
same factory at the radius it uses.

The Euclidean relation lives here; the PSD space (``space="psd"``) shares the
radius search, the test and the budget split and has its own relation and
mask (:mod:`dpgauss.ensemble._psd_aggregate`).
"""

import numpy as np

from dpgauss.accounting import ZCDP, ApproxDP, PureDP, approx_to_zcdp
from dpgauss.accounting._plan import Release, known
from dpgauss.ensemble import _populous as populous
from dpgauss.exceptions import PrivateTestFailedError
from dpgauss.mechanisms import AboveThreshold, GaussianMechanism
from dpgauss.mechanisms._checks import MAX_RADIUS

__all__ = [
    "GRID_OCTAVES",
    "MAX_POPULOUS_GROUPS",
    "RAMP",
    "SVT_SHARE",
    "TEST_SHARE",
    "THRESHOLD",
    "mask_factory",
    "pair_counts",
    "populous_entries",
    "populous_mean",
    "populous_min_groups",
    "populous_parts",
    "populous_test_factory",
    "run_test",
    "search_and_test_entries",
    "svt_factory",
    "svt_radius",
]

#: Populous mean: test threshold T and ramp (a, b) (spec Section 12.1).
THRESHOLD, RAMP = 0.9, (0.55, 0.75)
#: Populous epsilon shares: sparse vector (radius="auto") and the test; delta is
#: split evenly between the test and the mask.
SVT_SHARE, TEST_SHARE = 0.1, 0.2
#: Populous groups at most (exact neighbour counting is O(k^2 p)).
MAX_POPULOUS_GROUPS = 10_000
#: Sparse vector's radius grid: 2^(j/2), |j| <= 2 * GRID_OCTAVES.
GRID_OCTAVES = 100


def populous_parts(total, auto_radius):
    """The budget split: ``(eps_svt, eps_test, delta_test, rho_mask)``.

    Sparse vector takes ``SVT_SHARE`` of epsilon (none with a public radius),
    the test ``TEST_SHARE`` of epsilon and half of delta, and the mask the
    largest rho whose conversion at the other half of delta fits the rest of
    epsilon.
    """
    eps, delta = total.epsilon, total.delta
    eps_svt = SVT_SHARE * eps if auto_radius else 0.0
    eps_test = TEST_SHARE * eps
    delta_test = 0.5 * delta
    eps_mask = eps - eps_svt - eps_test
    rho = approx_to_zcdp(eps_mask, delta - delta_test)
    return eps_svt, eps_test, delta_test, rho


def search_and_test_entries(total, auto_radius, k=None):
    """The plan entries ``radius`` (with ``auto_radius``) and ``test`` for k
    groups, and the rho left for the mask (:func:`populous_parts`)."""
    eps_svt, eps_t, delta_t, rho = populous_parts(total, auto_radius)
    entries = []
    if auto_radius:
        entries.append(
            Release("radius", PureDP(eps_svt), "above_threshold", svt_factory(k))
        )
    test = ApproxDP(eps_t, delta_t)
    entries.append(Release("test", test, "truncated_laplace", populous_test_factory(k)))
    return entries, rho


def populous_entries(total, auto_radius, *, k=None, p=None):
    """The Euclidean populous mean's plan entries: ``radius`` (with
    ``auto_radius``), ``test`` and ``mask``, for k groups and candidates of p
    entries (public; None when the plan is only priced)."""
    entries, rho = search_and_test_entries(total, auto_radius, k)
    mask = Release("mask", ZCDP(rho), "gaussian", mask_factory(k), size=p or 1)
    return [*entries, mask]


def svt_factory(k=None):
    """The ``radius`` release's factory: ``make(cost, k=k, threshold=k * k)``,
    sparse vector on pair counts of sensitivity ``2 (k - 1)``."""

    def make(cost, *, k=k, threshold=None):
        k = known(k, "k")
        if threshold is None:
            threshold = float(k * k)
        return AboveThreshold(
            threshold=threshold, sensitivity=2.0 * (k - 1), epsilon=cost.epsilon
        )

    return make


def populous_test_factory(k=None):
    """The ``test`` release's factory: ``make(cost, k=k)``, the truncated-Laplace
    test of k groups."""

    def make(cost, *, k=k):
        return _PopulousTest(cost, known(k, "k"))

    return make


def mask_factory(k=None):
    """The ``mask`` release's factory: ``make(cost, k=k, radius=MAX_RADIUS)``,
    the Gaussian mechanism at :func:`~dpgauss.ensemble._populous.mask_sensitivity`
    for k groups and neighbour radius ``radius`` (the largest any search or
    public radius can be by default: the largest noise)."""

    def make(cost, *, k=k, radius=MAX_RADIUS):
        sens = populous.mask_sensitivity(known(k, "k"), radius, THRESHOLD, *RAMP)
        return GaussianMechanism(sensitivity=sens, rho=cost.rho)

    return make


def populous_min_groups(total, auto_radius):
    """The fewest groups the populous test needs at ``total`` (public)."""
    _, eps_t, delta_t, _ = populous_parts(total, auto_radius)
    delta_cal = populous.calibration_delta(eps_t, delta_t)
    if not delta_cal > 0:
        raise ValueError(
            f"delta={total.delta!r} is too small for the populous test's "
            "exact pass probability. Nothing was spent."
        )
    return populous.min_groups(eps_t, delta_cal, THRESHOLD, *RAMP)


def populous_mean(Y, k, plan, rng, radius):
    """The Euclidean populous mean of the candidates ``Y`` (rows; NaN: failed).

    Returns
    -------
    value : ndarray of shape (p,)
        The released mean.
    used : float
        The neighbour radius used (tau rounded down onto the snapping grid).
    sensitivity : float
        The mask's l2 sensitivity.
    """
    a, b = RAMP
    if radius == "auto":
        grid = 2.0 ** (np.arange(-2 * GRID_OCTAVES, 2 * GRID_OCTAVES + 1) / 2.0)
        tau = svt_radius(pair_counts(Y, grid), grid, k, plan, rng)
    else:
        tau = float(radius)
    h, t = populous.snap_grid(tau)
    Ys = populous.snap(Y, h)
    counts = populous.neighbour_counts(Ys, h, t)
    run_test(counts, k, tau, plan, rng)
    A_w, B_w = populous.weight_params(k, a, b)
    weights = np.minimum(np.maximum(counts - A_w, 0), B_w)
    used = t * h
    mech = plan.calibrate("mask", k=k, radius=used)
    coords = populous.exact_lattice_mean(Ys, weights, mech.grid)
    return mech.randomise_lattice(coords, rng), used, mech.sensitivity


def run_test(counts, k, tau, plan, rng):
    """The ``test`` release on the neighbour counts; raises
    :class:`~dpgauss.exceptions.PrivateTestFailedError` when it fails (after
    the spend: the failure is the release)."""
    test = plan.calibrate("test", k=k)
    if not test.run(int(counts.sum()), rng):
        raise PrivateTestFailedError(
            "SubsampleAggregate(aggregator='populous'): the private test did not "
            f"pass (the group statistics are not clustered within radius "
            f"{tau:.3g}); its cost ({plan.total}) is spent. More rows per group, "
            "a larger radius or another aggregator may help."
        )


def svt_radius(counts, grid, k, plan, rng):
    """The first grid radius whose pair count clears the threshold (sparse vector).

    Query j is ``N_j = |{(i, l) : distance(Y_i, Y_l) <= grid_j}|`` for a
    distance computed as a fixed function of each pair (failed candidates
    count only with themselves), so replacing one candidate moves every N_j
    by at most 2 (k - 1). The threshold asks for a Q well above the test's
    sure-pass level ``T + 2A``.
    """
    eps_t, delta_t = plan.cost("test").epsilon, plan.cost("test").delta
    A = populous.test_half_width(k, eps_t, delta_t)
    target = min(1.0, THRESHOLD + 2.0 * A + 0.5 * (1.0 - THRESHOLD - 2.0 * A))
    svt = plan.calibrate("radius", k=k, threshold=target * k * k)
    j = svt.first_above(counts.astype(np.float64), rng)
    if j is None:
        j = grid.size - 1
    return float(grid[j])


def pair_counts(Y, grid, block=None):
    """For each grid radius r, the number of ordered pairs (self pairs included)
    whose computed distance is at most r; failed candidates pair only with
    themselves. The distance of a pair is computed the same way wherever the
    pair sits (a row-wise sum over its p differences)."""
    k = Y.shape[0]
    if block is None:  # from the public k and p: at most 2e6 floats at once
        block = max(1, min(64, 2_000_000 // max(1, k * Y.shape[1])))
    ok = np.all(np.isfinite(Y), axis=1)
    Z = Y[ok]
    hist = np.zeros(grid.size + 1, dtype=np.int64)
    with np.errstate(all="ignore"):
        for start in range(0, Z.shape[0], block):
            diff = Z[start : start + block, None, :] - Z[None, :, :]
            dist = np.sqrt(np.sum(diff * diff, axis=2))
            dist = np.where(np.isnan(dist), np.inf, dist)
            hist += np.bincount(
                np.searchsorted(grid, dist.ravel(), side="left"),
                minlength=grid.size + 1,
            )
    counts = np.cumsum(hist)[: grid.size] + (k - Z.shape[0])
    return counts


class _PopulousTest:
    """The truncated-Laplace test of the populous mean (one draw per fit).

    ``cost`` is ApproxDP(eps, delta); the closed-form pass probability is
    computed at ``delta - (1 + e^eps) ETA`` (see
    :func:`dpgauss.ensemble._populous.pass_probability`).
    """

    def __init__(self, cost, k):
        self.cost, self.k = cost, int(k)
        self.delta_cal = populous.calibration_delta(cost.epsilon, cost.delta)
        if not self.delta_cal > 0:
            raise ValueError("delta is too small for the test.")
        self.draws = 0

    def run(self, total, rng):
        """True with probability P[Q + Z >= T + A], ``Q = total / k^2``."""
        self.draws += 1
        p = populous.pass_probability(
            total, self.k, THRESHOLD, self.cost.epsilon, self.delta_cal
        )
        return bool(rng.random() < p)
