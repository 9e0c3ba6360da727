"""Statistical privacy audits of RestrictedTukeyMechanism, each with a canary.

Two parts, each on near-worst-case replace-one neighbours, each against the
whole mechanism's claim ``ApproxDP(1, 1e-6)`` (audit delta 1e-6):

* **The test.** Scalar output: 1 if the propose-test-release check passed. On
  A (n = 440 Gaussian quantiles, d = 1) ``h_lb = 27``; B moves the lowest row to
  the center, ``h_lb = 26``; the threshold is 27.24, so both pass with
  probabilities near 1/2 where one unit of ``h_lb`` matters most. The real test
  (discrete Laplace of scale 2/epsilon_total) moves these by at most
  ``e^{1/2}``. Canary: Google's ``dp_regression`` bug, noise of scale
  epsilon_total / 2 = 0.5 against the same threshold (a unit of ``h_lb`` then
  moves the failure probability by a factor ~7).
* **The released point.** Output: the released coordinate, or -1 on failure.
  A has 3 zeros and 6 ones, B one zero fewer: the depth-t box moves from
  ``[0, 1]`` to a point at 1. The real mechanism fails the test on both (such
  data are unsafe), so nothing distinguishes them; the canary runs the
  exponential mechanism with no test, and the event ``output < 0.5`` (about
  1/2 on A, 0 on B) is flagged. A slow audit also runs the real mechanism on
  a dataset that passes (n = 2000), B moving the lowest row to the top, so that
  every box edge moves by one rank.

Each real audit's 95% lower confidence bound on epsilon must stay at or below
the claim; each canary's must exceed it.
"""

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpgauss.accounting import ApproxDP
from dpgauss.exceptions import PrivateTestFailedError
from dpgauss.mean._tukey import RestrictedTukeyMechanism
from dpgauss.mechanisms import LaplaceMechanism
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

COST = ApproxDP(1.0, 1e-6)
CLAIM = COST.epsilon


class _GoogleScale(RestrictedTukeyMechanism):
    """Broken: PTR noise of scale epsilon_total / 2, threshold unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._threshold = super().threshold
        scale = self.cost.epsilon / 2.0
        self.test = LaplaceMechanism(sensitivity=1.0, epsilon=1.0 / scale)

    @property
    def threshold(self):
        return self._threshold


class _NoTest(RestrictedTukeyMechanism):
    """Broken: the exponential mechanism released with no test."""

    def _check(self, X, rng):
        *rest, _ = super()._check(X, rng)
        return (*rest, True)


def _quantiles(n):
    return norm.ppf((np.arange(n) + 0.5) / n)[:, None]


def _test_runs(mech):
    a = _quantiles(440)
    b = a.copy()
    b[0] = 0.0

    def run(X):
        return lambda n, rng: np.array(
            [float(mech._check(X, rng)[-1]) for _ in range(n)]
        )

    return run(a), run(b)


def _point_runs(mech, a, b):
    def run(X):
        def sample(n, rng):
            out = np.empty(n)
            for i in range(n):
                try:
                    out[i] = mech.release(X, rng)[0]
                except PrivateTestFailedError:
                    out[i] = -1.0
            return out

        return sample

    return run(a), run(b)


def _small_pair():
    a = np.array([0.0] * 3 + [1.0] * 6)[:, None]
    b = np.array([0.0] * 2 + [1.0] * 7)[:, None]
    return a, b


def _audit(runs, n):
    return audit(*runs, n_samples=n, n_select=n // 2, delta=COST.delta, random_state=7)


def test_h_lb_of_the_test_pair():
    mech = RestrictedTukeyMechanism(COST, 1)
    a = _quantiles(440)
    b = a.copy()
    b[0] = 0.0
    # The pair sits at the threshold (27.24): h_lb 27 and 26.
    assert 26 < mech.threshold < 28
    rng = np.random.default_rng(0)
    passes = [np.mean([mech._check(x, rng)[-1] for _ in range(400)]) for x in (a, b)]
    assert 0.3 < passes[1] < passes[0] < 0.7


@pytest.mark.parametrize(
    ("scale", "n"), [(1, 3000), pytest.param(5, 15000, marks=pytest.mark.slow)]
)
def test_ptr_keeps_its_claim(scale, n):
    result = _audit(_test_runs(RestrictedTukeyMechanism(COST, 1)), n)
    assert result.epsilon_lower <= CLAIM, result


def test_ptr_with_google_noise_scale_is_caught():
    result = _audit(_test_runs(_GoogleScale(COST, 1)), 3000)
    assert result.epsilon_lower > CLAIM, result


def test_release_on_unsafe_data_keeps_its_claim():
    result = _audit(
        _point_runs(RestrictedTukeyMechanism(COST, 1), *_small_pair()), 1000
    )
    assert result.epsilon_lower <= CLAIM, result


def test_release_without_test_is_caught():
    result = _audit(_point_runs(_NoTest(COST, 1), *_small_pair()), 1000)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.slow
def test_release_on_passing_data_keeps_its_claim():
    a = _quantiles(2000)
    b = a.copy()
    b[0] = a[-1, 0] + 1.0
    mech = RestrictedTukeyMechanism(COST, 1)
    result = _audit(_point_runs(mech, a, b), 6000)
    assert result.epsilon_lower <= CLAIM, result
    assert math.isfinite(result.epsilon_lower)
