"""The exact law of the cube's lattice noise, ``P(z) ∝ exp(-||z||_inf / t)`` on Z^d.

Chi-square goodness of fit at small scales, where the radius's acceptance
coins ``(2k + 1) / (2k + 2j)`` reject most often and any error in them, in the
negative binomial proposal or in the uniform cube point would show: the
joint law over every lattice point (not only the shells), and the radius
``K`` with ``P(K = k) ∝ (2k + 1)^d exp(-k / t)``. Cells hold at least 5
expected draws (the chi-square approximation's usual rule); the tail beyond
them is one more cell. Seeds are fixed, so each test is deterministic; the
level 1e-4 leaves room for the seed while a wrong law (a factor off in one
shell) gives p-values far below it at these sizes.
"""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chi2

import dpgauss.mechanisms._discrete as module

LEVEL = 1e-4


def _chi_square_p(observed, expected):
    stat = float(np.sum((observed - expected) ** 2 / expected))
    return float(chi2.sf(stat, observed.size - 1))


def _shell_sizes(d, m):
    """Lattice points with ``||z||_inf = m`` in d dimensions."""
    return (2 * m + 1) ** d - (2 * m - 1) ** d if m else 1


def _joint_p(t, d, n, seed):
    rng = np.random.default_rng(seed)
    draws = np.array([module.discrete_linf(t, d, rng) for _ in range(n)])
    q = math.exp(-1.0 / t)
    total = sum(_shell_sizes(d, m) * q**m for m in range(4000))
    top = 0  # the largest norm whose every point expects at least 5 draws
    while n * q ** (top + 1) / total >= 5:
        top += 1
    points = list(itertools.product(range(-top, top + 1), repeat=d))
    index = {p: i for i, p in enumerate(points)}
    observed = np.zeros(len(points) + 1)
    for z in map(tuple, draws.tolist()):
        observed[index.get(z, len(points))] += 1
    expected = np.array([n * q ** max(map(abs, p)) / total for p in points])
    expected = np.append(expected, n - expected.sum())
    return _chi_square_p(observed, expected)


def _radius_p(t, d, n, seed):
    rng = np.random.default_rng(seed)
    radii = np.array([module._linf_radius(t, d, rng) for _ in range(n)])
    k = np.arange(4000)
    weights = (2.0 * k + 1.0) ** d * math.exp(-1.0 / t) ** k
    law = weights / weights.sum()
    top = int(np.max(np.flatnonzero(n * law >= 5)))
    observed = np.bincount(np.minimum(radii, top + 1), minlength=top + 2)
    expected = np.append(n * law[: top + 1], n * law[top + 1 :].sum())
    return _chi_square_p(observed[: top + 2].astype(float), expected)


def test_joint_law_over_the_lattice_points():
    assert _joint_p(1, 2, 6000, 0) > LEVEL


def test_radius_law_where_the_acceptance_coins_reject_most():
    assert _radius_p(1, 3, 6000, 1) > LEVEL


def _off_by_one(t, d, rng):
    """Broken: acceptance ``(2k + 1) / (2k + 2j + 1)``, a plausible slip."""
    while True:
        parts = module._pooled(
            lambda m: module._geometric_attempts(t, m, rng), d + 1, 0.62
        )
        k = sum(int(x) for x in parts.tolist())
        bounds = 2 * k + 2 * np.arange(1, d + 1, dtype=np.int64) + 1
        if np.all(rng.integers(0, bounds) < 2 * k + 1):
            return k


def test_canary_a_wrong_acceptance_is_caught(monkeypatch):
    monkeypatch.setattr(module, "_linf_radius", _off_by_one)
    assert _joint_p(1, 2, 6000, 0) < LEVEL
    assert _radius_p(1, 3, 6000, 1) < LEVEL


@pytest.mark.slow
@pytest.mark.parametrize(("t", "d"), [(1, 1), (2, 1), (1, 2), (3, 2), (1, 3), (2, 3)])
def test_joint_law_large(t, d):
    assert _joint_p(t, d, 60_000, 100 * t + d) > LEVEL


@pytest.mark.slow
@pytest.mark.parametrize(("t", "d"), [(1, 3), (1, 5), (2, 2)])
def test_radius_law_large(t, d):
    assert _radius_p(t, d, 50_000, 10 * t + d) > LEVEL
