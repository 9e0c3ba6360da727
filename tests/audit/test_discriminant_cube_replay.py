"""Deterministic neighbour replay of the discriminant analyses' cube releases
(:mod:`dpgauss.releases._cube`): the pooled squares and LDA's pooled second
moment of two neighbouring datasets, computed as the fit computes them (rows
mapped by :func:`~dpgauss.releases._box.box_offsets`, then
:func:`~dpgauss.releases._groups.labelled_statistics` about the box's center at
the fit's radius), must differ by at most the sensitivity of the mechanism the
fit's plan builds (l1 under pure DP, l2 under zCDP).

The pairs replace row 0 (its class changes too) by a far corner (1e12 box
widths, clipped to the face), the opposite corner or a split one, or by random
cube points; the other rows sit near the corners, where the summation's
rounding is largest. The pair ``0`` against the all-ones corner attains the
squares' l1 ``d`` and l2 ``sqrt(d)`` and the moment's upper-triangle l1
``d (d + 1) / 2``, the charged supremum over the cube (proof in
:mod:`dpgauss.releases._cube`). Both ratios are therefore within rounding of
1: a canary whose squares or moment is charged 1% less fails.
"""

import numpy as np
import pytest

import dpgauss.discriminant_analysis._base as base
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.discriminant_analysis import PrivateLinearDiscriminantAnalysis
from dpgauss.releases._box import box_offsets
from dpgauss.releases._cube import cube_moment_mechanism, cube_square_mechanism
from dpgauss.utils._sums import n_partial_sums

pytestmark = pytest.mark.audit


def _pairs(d, rng):
    one, zero = np.ones(d), np.zeros(d)
    split = np.where(np.arange(d) < d // 2, 1.0, -1.0)
    yield zero, one * 1e12
    yield one * 1e12, -one * 1e12
    yield one, split
    for _ in range(3):
        yield rng.uniform(-1, 1, d), rng.uniform(-1, 1, d)


def _statistic(X, y, d, outer):
    Z = box_offsets(X, np.zeros(d), np.ones(d))
    radius = float(np.nextafter(np.sqrt(d), np.inf))
    _, _, moments = base.labelled_statistics(Z, y, 3, np.zeros(d), radius, outer)
    moments = np.asarray(moments)
    return moments[np.triu_indices(d)] if moments.ndim == 2 else moments


def _worst_ratio(release, cost, d, n, factory=None):
    est = PrivateLinearDiscriminantAnalysis(
        classes=[0, 1, 2], bounds=(-1.0, 1.0), clipping="fixed", on_useless="warn"
    )
    assert est._cube_frame(cost)  # the fit takes the cube's factories
    rng = np.random.default_rng(d * 1000 + n)
    X = rng.choice([-1.0, 1.0], (n, d)) * rng.uniform(0.9, 1.0, (n, 1))
    y = rng.integers(0, 3, n)
    factories = est._factories(n, d, n_partial_sums(X), cube=True)
    mech = (factory or factories[release])(cost)
    outer = "pooled_squares" if release == "pooled_squares" else "pooled"
    worst = 0.0
    for z, w in _pairs(d, rng):
        XA, XB = X.copy(), X.copy()
        XA[0], XB[0] = z, w
        yB = y.copy()
        yB[0] = (y[0] + 1) % 3
        diff = (_statistic(XA, y, d, outer) - _statistic(XB, yB, d, outer)) / n
        size = np.abs(diff).sum() if isinstance(cost, PureDP) else np.linalg.norm(diff)
        worst = max(worst, size / mech.sensitivity)
    return worst


@pytest.mark.parametrize("d", [1, 2, 3, 5, 13, 30])
@pytest.mark.parametrize("n", [3, 40, 9000])
def test_squares_replay_within_the_cube_sensitivity(d, n):
    for cost in (PureDP(1.0), ZCDP(0.5)):
        ratio = _worst_ratio("pooled_squares", cost, d, n)
        # attained by 0 against the corner, up to the clip's and sums' rounding
        assert 1.0 - 1e-6 < ratio <= 1.0


@pytest.mark.parametrize("d", [1, 2, 3, 5, 13, 30])
@pytest.mark.parametrize("n", [3, 9000])
def test_moment_replay_within_the_cube_sensitivity(d, n):
    ratio = _worst_ratio("second_moment", PureDP(1.0), d, n)
    # the charged supremum d (d + 1) / 2, attained (module docstring)
    assert 1.0 - 1e-6 < ratio <= 1.0


@pytest.mark.parametrize("d", [1, 5, 30])
@pytest.mark.parametrize(
    ("release", "charged"),
    [
        ("pooled_squares", cube_square_mechanism),
        ("second_moment", cube_moment_mechanism),
    ],
)
def test_canary_charged_one_percent_less_fails_the_replay(d, release, charged):
    def weak(cost):
        mech = charged(cost, 40, d, np.sqrt(d))
        return type(mech)(sensitivity=0.99 * mech.sensitivity, epsilon=cost.epsilon)

    assert _worst_ratio(release, PureDP(1.0), d, 40, factory=weak) > 1.0
