"""The additive factory and the mechanisms' own noise variances."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, ApproxDP, PureDP
from dpgauss.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)
from dpgauss.mechanisms._factory import additive


@pytest.mark.parametrize(
    ("cost", "symmetric", "kind", "scale"),
    [
        (ZCDP(0.5), False, GaussianMechanism, 2.0),
        (PureDP(2.0), False, LaplaceMechanism, 1.5),
        (ZCDP(2.0), True, SymmetricGaussianMechanism, 1.0),
        (PureDP(3.0), True, SymmetricLaplaceMechanism, 1.0),
    ],
)
def test_the_cost_picks_the_noise_and_its_sensitivity(cost, symmetric, kind, scale):
    # zCDP: sigma = l2 / sqrt(2 rho); pure: b = l1 / epsilon.
    mech = additive(cost, l2=2.0, l1=3.0, symmetric=symmetric)
    assert type(mech) is kind
    assert mech.cost == cost
    assert mech.scale == scale


def test_an_approximate_cost_has_no_additive_noise():
    with pytest.raises(TypeError, match="ZCDP or PureDP"):
        additive(ApproxDP(1.0, 1e-6), l2=1.0, l1=1.0)


@pytest.mark.parametrize("exact", [True, False])
def test_variance_and_sd_follow_the_noise_distribution(exact):
    gauss = GaussianMechanism(sensitivity=1.0, rho=0.5, exact=exact)
    laplace = LaplaceMechanism(sensitivity=1.0, epsilon=0.5, exact=exact)
    # Gaussian: variance s^2, sd s; Laplace of scale b: variance 2 b^2, sd sqrt(2) b.
    assert gauss.variance() == gauss.scale**2
    assert gauss.sd() == gauss.scale
    assert laplace.variance() == 2.0 * laplace.scale**2
    assert laplace.sd() == laplace.scale * math.sqrt(2.0)
    # size: the exact sampler's actual parameter, slightly above the ideal one.
    for mech in (gauss, laplace):
        assert mech.variance(7) == mech.variance(None) or exact
        assert mech.sd(7) >= mech.sd()
        assert mech.variance(per=4.0) == pytest.approx(mech.variance() / 16.0)


def test_symmetric_entry_variances():
    gauss = SymmetricGaussianMechanism(sensitivity=1.0, rho=0.5)
    laplace = SymmetricLaplaceMechanism(sensitivity=1.0, epsilon=0.5)
    diagonal, off = gauss.entry_variances()
    assert (diagonal, off) == (gauss.scale**2, gauss.scale**2 / 2.0)
    assert laplace.entry_variances() == (2.0 * laplace.scale**2,) * 2
    assert gauss.entry_variances(4)[0] == gauss.variance(4)


def test_measured_variance_matches_the_stated_one():
    # 20,000 draws: the sample variance's relative sd is sqrt(2 / n) (Gaussian),
    # about sqrt(5 / n) (Laplace, kurtosis 6); 6 of those is far beyond chance.
    n = 20_000
    for mech, ratio_sd in (
        (GaussianMechanism(sensitivity=1.0, rho=0.5), math.sqrt(2.0 / n)),
        (LaplaceMechanism(sensitivity=1.0, epsilon=0.5), math.sqrt(5.0 / n)),
    ):
        draws = mech.randomise(np.zeros(n), random_state=0)
        assert abs(np.var(draws) / mech.variance(n) - 1.0) < 6.0 * ratio_sd


def test_tail_bounds_hold_at_their_level():
    # beta = 0.01: the share of 20,000 draws beyond the bound is at most 1%
    # plus 4 binomial sds (sqrt(0.01 * 0.99 / 20000) = 0.0007).
    n, beta = 20_000, 0.01
    for mech in (
        GaussianMechanism(sensitivity=1.0, rho=0.5),
        LaplaceMechanism(sensitivity=1.0, epsilon=0.5),
    ):
        draws = mech.randomise(np.zeros(n), random_state=1)
        assert np.mean(draws > mech.tail(beta)) < beta + 4 * 0.0007
    assert GaussianMechanism(sensitivity=1.0, rho=0.5).tail(0.5) > 0
