"""Statistical privacy audits of every mechanism, each with a broken-variant canary.

For each mechanism: worst-case (or near worst-case) neighbouring inputs, a scalar
summary of the output, the claimed epsilon at a delta, and a deliberately broken
variant. The real mechanism's lower confidence bound on epsilon (95%, Clopper-
Pearson, event chosen on separate runs) must not exceed the claim; the broken
variant's must, which proves the audit has the power to catch the bug.

The mechanisms are the exact (lattice, integer-selection) ones, the default; the
canaries are broken exact variants. The default run uses enough samples for the
canaries (seconds); ``-m slow`` runs the same audits with 5x more samples. The
float-bit attack that only the exact mechanisms resist is in
``test_float_attack_audit.py``.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from dpgauss.accounting import PureDP, zcdp_to_approx
from dpgauss.mechanisms import (
    AboveThreshold,
    ExponentialMechanism,
    GaussianMechanism,
    HistogramMechanism,
    LaplaceMechanism,
    QuantileMechanism,
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
    _noise,
)
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.mechanisms._range import QuantileSearch
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit


@dataclass
class Case:
    name: str
    make: Callable  # make(broken: bool) -> (run_a, run_b)
    claimed: float  # claimed epsilon at `delta`
    delta: float
    n: int  # runs per input in the measuring batch (default suite)


# --- Gaussian / Laplace, scalar -------------------------------------------------
def _additive(cls, **cost):
    def make(broken):
        mech = cls(sensitivity=0.5 if broken else 1.0, **cost)  # broken: half noise
        return (
            lambda n, rng: mech.randomise(np.zeros(n), rng),
            lambda n, rng: mech.randomise(np.ones(n), rng),
        )

    return make


# --- l-infinity K-norm: every entry moves by D at once ------------------------------
def _linf(broken):
    # A = 0 and B = (1, 1, 1): l-infinity distance D = 1 with every entry moved,
    # the case where the privacy loss reaches epsilon in a whole cone. Summary:
    # the privacy loss itself, ||y||_inf - ||y - B||_inf (in [-1, 1] times 1/scale),
    # so the events {summary >= t} are the likelihood ratio's level sets.
    mech = LInfinityMechanism(sensitivity=0.5 if broken else 1.0, epsilon=1.0, size=3)
    b = np.ones(3)

    def run(value):
        def sample(n, rng):
            out = np.array([mech.randomise(value, rng) for _ in range(n)])
            return np.abs(out).max(axis=1) - np.abs(out - b).max(axis=1)

        return sample

    return run(np.zeros(3)), run(b)


# --- symmetric Gaussian: neighbours differ off the diagonal ---------------------
class _OffDiagonalTooSmall(SymmetricGaussianMechanism):
    """Broken: off-diagonal variance S/4, not S/2 (sd sigma/2, not sigma/sqrt 2)."""

    def randomise(self, value, random_state=None):
        rng = self._start(random_state)
        t, u = self.lattice_variance(2)
        g = self.grid
        diagonal = _noise.lattice_gaussian(t, u, 2, rng)
        off = _noise.lattice_gaussian(t // 2, u // 2, 1, rng)  # (t/2)(u/2) = S/4
        coords = _noise.to_lattice(np.asarray(value, dtype=float), g)
        noise = np.array([[diagonal[0], off[0]], [off[0], diagonal[1]]])
        return _noise.from_lattice(coords, noise, g)


def _symmetric_gaussian(broken):
    # Frobenius distance D = 1 between A = 0 and B with B_01 = B_10 = 1/sqrt(2).
    cls = _OffDiagonalTooSmall if broken else SymmetricGaussianMechanism
    mech = cls(sensitivity=1.0, rho=0.5)
    b = np.array([[0.0, 1.0], [1.0, 0.0]]) / math.sqrt(2)

    def run(value):
        return lambda n, rng: np.array(
            [mech.randomise(value, rng)[0, 1] for _ in range(n)]
        )

    return run(np.zeros((2, 2))), run(b)


def _symmetric_laplace(broken):
    # Upper-triangle l1 distance D = 1, all of it on entry (0, 0).
    mech = SymmetricLaplaceMechanism(sensitivity=0.5 if broken else 1.0, epsilon=1.0)
    b = np.array([[1.0, 0.0], [0.0, 0.0]])

    def run(value):
        return lambda n, rng: np.array(
            [mech.randomise(value, rng)[0, 0] for _ in range(n)]
        )

    return run(np.zeros((2, 2))), run(b)


# --- histogram: one value moves from bin 1 to bin 0 ------------------------------
def _histogram(**cost):
    def make(broken):
        hist = HistogramMechanism([0.0, 1.0, 2.0], **cost)
        if broken:  # half the noise: calibrated to half the sensitivity
            cls = type(hist.mechanism)
            hist.mechanism = cls(sensitivity=hist.mechanism.sensitivity / 2, **cost)
        a = [0.5] * 10 + [1.5]
        b = [0.5] * 11

        def run(values, shift):
            # Summary min(c0 - 10.5, 0.5 - c1): B's is A's plus one; the event
            # {summary >= t} needs both counts in their tails, so its probability
            # ratio reaches the full two-bin privacy loss.
            def sample(n, rng):
                out = np.array([hist.release(values, rng) for _ in range(n)])
                return np.minimum(out[:, 0] - 10.5, 0.5 - out[:, 1])

            return sample

        return run(a, 0), run(b, 1)

    return make


# --- exponential mechanism: one candidate gains D, the others lose D --------------
def _exponential(broken):
    # broken: the utility's sensitivity understated by half (exponent doubled, the
    # same error as declaring these non-monotone utilities monotone).
    mech = ExponentialMechanism(sensitivity=0.5 if broken else 1.0, epsilon=1.0)
    u_a = np.zeros(100)
    u_b = np.full(100, -1.0)
    u_b[0] = 1.0
    return (
        lambda n, rng: np.array([mech.select(u_a, rng) for _ in range(n)]),
        lambda n, rng: np.array([mech.select(u_b, rng) for _ in range(n)]),
    )


# --- AboveThreshold: 8 queries move up by D, the last moves down by D -------------
def _above_threshold(broken, factor=4.0):
    # broken: epsilon used as if it were `factor` epsilon (noise scales divided by
    # it). The default run catches factor 4 with 10,000 runs; factor 2 needs about
    # 60,000 (measured bound 1.80), which the slow run checks.
    scale = factor if broken else 1.0
    svt = AboveThreshold(threshold=0.0, sensitivity=1.0, epsilon=scale * 1.0)
    return _svt_runs(svt, np.zeros(9), np.concatenate([np.ones(8), [-1.0]]))


def _svt_runs(svt, f_a, f_b):
    """Samplers of ``svt``'s output index (-1 for None) on two query vectors."""

    def run(values):
        def sample(n, rng):
            out = [svt.first_above(values, rng) for _ in range(n)]
            return np.array([-1 if k is None else k for k in out], dtype=float)

        return sample

    return run(f_a), run(f_b)


# --- AboveThreshold, monotone: every query moves up by D ------------------------
def _above_threshold_monotone(broken):
    # Monotone neighbours (all 9 queries up by D), the case whose proof spends
    # eps/2 on the threshold and eps/2 on the query that fires. broken: epsilon
    # used as if it were 4 epsilon, as for the general variant.
    svt = AboveThreshold(
        threshold=0.0, sensitivity=1.0, epsilon=4.0 if broken else 1.0, monotone=True
    )
    return _svt_runs(svt, np.zeros(9), np.ones(9))


# --- quantile: a sparse lower half, a dense upper half, one value moves down ------
def _quantile(broken):
    # broken: the exponent doubled (epsilon 2 run while claiming 1; the error of
    # treating the non-monotone utility as monotone). 101 public candidates.
    q = QuantileMechanism(
        0.5, bounds=(0.0, 1.0), epsilon=2.0 if broken else 1.0, n_candidates=101
    )
    a = np.concatenate(
        [np.linspace(0.0, 0.8, 11)[1:], 0.8 + 0.05 * np.linspace(0, 1, 10)]
    )
    b = a.copy()
    b[-1] = 0.0
    return (
        lambda n, rng: np.array([q.release(a, rng) for _ in range(n)]),
        lambda n, rng: np.array([q.release(b, rng) for _ in range(n)]),
    )


# --- bound-free quantile search: the median crosses between two far clusters -------
def _quantile_search(broken):
    # A: 5 values at 0, 6 at 1e6 (median 1e6); B: one moves down (median 0). Each
    # of the 64 steps releases one count at epsilon / 64. broken: every step
    # calibrated at the whole epsilon (the composition forgotten).
    search = QuantileSearch(PureDP(1.0), n_features=1)
    if broken:
        search.step = LaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    a = np.array([0.0] * 5 + [1e6] * 6)[:, None]
    b = np.array([0.0] * 6 + [1e6] * 5)[:, None]

    def run(values):
        return lambda n, rng: np.array(
            [search.release(values, rng)[0] for _ in range(n)]
        )

    return run(a), run(b)


class _NonzeroForgotComposition(QuantileSearch):
    """Broken: every step at the whole epsilon, the target kept where the
    correct search puts it (so both aim at the same count)."""

    def __init__(self, cost, n_features, quantile):
        super().__init__(cost, n_features, quantile, nonzero=True)
        self._sd = self.count_sd()
        self.step = LaplaceMechanism(sensitivity=1.0, epsilon=cost.epsilon)

    def count_sd(self):
        return getattr(self, "_sd", None) or super().count_sd()


def _nonzero_search(broken):
    # The nonzero 3/4 search's query is c(mid) - c0 / 4 against 3n/4 less 4
    # count sds (362 at epsilon 1): with n = 3,000 and 1,000 zeros, 1,138
    # values at 1 put the query exactly at the target between 1 and 1e6 on A;
    # on B one value moves from 1e6 to 0, moving the query there by 3/4 (a
    # zero's weight), the largest move with a zero involved. Then every step
    # between 1 and 1e6 decides on the same counts.
    cls = _NonzeroForgotComposition if broken else QuantileSearch
    kwargs = {} if broken else {"nonzero": True}
    search = cls(PureDP(1.0), 1, 0.75, **kwargs)
    a = np.r_[np.zeros(1000), np.ones(1138), np.full(862, 1e6)][:, None]
    b = np.r_[np.zeros(1001), np.ones(1138), np.full(861, 1e6)][:, None]

    def run(values):
        return lambda n, rng: np.array(
            [search.release(values, rng)[0] for _ in range(n)]
        )

    return run(a), run(b)


CASES = [
    Case(
        "gaussian",
        _additive(GaussianMechanism, rho=0.5),
        zcdp_to_approx(0.5, 1e-2),
        1e-2,
        200_000,
    ),
    Case("laplace", _additive(LaplaceMechanism, epsilon=1.0), 1.0, 0.0, 200_000),
    Case("linf", _linf, 1.0, 0.0, 10_000),
    Case(
        "symmetric_gaussian",
        _symmetric_gaussian,
        zcdp_to_approx(0.5, 1e-2),
        1e-2,
        12_000,
    ),
    Case("symmetric_laplace", _symmetric_laplace, 1.0, 0.0, 6_000),
    Case(
        "histogram_gaussian",
        _histogram(rho=0.5),
        zcdp_to_approx(0.5, 1e-2),
        1e-2,
        10_000,
    ),
    Case("histogram_laplace", _histogram(epsilon=1.0), 1.0, 0.0, 10_000),
    Case("exponential", _exponential, 1.0, 0.0, 10_000),
    Case("above_threshold", _above_threshold, 1.0, 0.0, 10_000),
    Case("above_threshold_monotone", _above_threshold_monotone, 1.0, 0.0, 10_000),
    Case("quantile", _quantile, 1.0, 0.0, 10_000),
    Case("quantile_search", _quantile_search, 1.0, 0.0, 400),
    Case("nonzero_quantile_search", _nonzero_search, 1.0, 0.0, 400),
]


def _run(case, broken, scale):
    run_a, run_b = case.make(broken)
    n = case.n * scale
    return audit(
        run_a, run_b, n_samples=n, n_select=n // 2, delta=case.delta, random_state=1234
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_mechanism_keeps_its_claim(case):
    result = _run(case, broken=False, scale=1)
    assert result.epsilon_lower <= case.claimed, result


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_broken_variant_is_caught(case):
    result = _run(case, broken=True, scale=1)
    assert result.epsilon_lower > case.claimed, result


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_mechanism_keeps_its_claim_large(case):
    result = _run(case, broken=False, scale=5)
    assert result.epsilon_lower <= case.claimed, result


@pytest.mark.slow
def test_above_threshold_with_half_noise_is_caught_large():
    case = next(c for c in CASES if c.name == "above_threshold")
    run_a, run_b = _above_threshold(broken=True, factor=2.0)
    n = 6 * case.n
    result = audit(run_a, run_b, n_samples=n, n_select=n // 2, random_state=1234)
    assert result.epsilon_lower > case.claimed, result
