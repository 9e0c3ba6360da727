"""PublicPrivateGMM's plan: every release carries its factory, the check before
the spend builds them, and what cannot be calibrated is refused unspent."""

import numpy as np
import pytest

from dpgauss import PrivacyBudget
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.mechanisms._checks import check_plan, check_release
from dpgauss.mixture import PublicPrivateGMM
from dpgauss.mixture._public import _Components, _weights

CENTERS = np.array([[0.0, 0.0, 0.0], [25.0, 0.0, 0.0], [0.0, 25.0, 0.0]])


def _draw(n, seed):
    rng = np.random.default_rng(seed)
    return CENTERS[rng.integers(0, 3, n)] + rng.standard_normal((n, 3))


@pytest.mark.parametrize(
    ("params", "m", "names"),
    [
        ({"n_components": 3, "rho": 0.5}, 90, ["weights", "components"]),
        ({"n_components": 3, "epsilon": 1.0}, 90, ["weights", "components"]),
        ({"n_components": 3, "rho": 0.5, "regime": "projected"}, 9, ["pca"]),
        ({"n_components": 2, "rho": 0.5, "refine_steps": 1}, 60, ["refine1_sums"]),
        ({"rho": 0.5}, 0, ["components"]),  # one component, no public rows
    ],
)
def test_every_planned_release_has_a_factory_that_builds(params, m, names):
    public = _draw(m, 1) if m else None
    gmm = PublicPrivateGMM(random_state=0, **params)
    plan = gmm._pricing_plan(3, X_public=public, n_samples=2000)
    releases = plan.releases()
    assert set(names) <= {r.name for r in releases}
    for release in releases:
        assert release.make is not None, release.name
        for case in release.cases:
            assert check_release(release, **case).cost == release.cost
    built = check_plan(plan, "PublicPrivateGMM", {"n_partials": 1})
    assert set(built) == {r.name for r in releases}


@pytest.mark.parametrize("cost", [{"rho": 1e-300}, {"epsilon": 1e-300}])
def test_an_uncalibratable_budget_is_refused_before_any_spend(cost):
    X, public = _draw(500, 4), _draw(60, 5)
    budget = PrivacyBudget(**dict.fromkeys(cost, 1.0))
    gmm = PublicPrivateGMM(3, budget=budget, random_state=0, **cost)
    with pytest.raises(ValueError, match=r"PublicPrivateGMM.*cannot be calibrated"):
        gmm.fit(X, X_public=public)
    assert budget.ledger() == []
    assert not hasattr(gmm, "means_")


def test_a_public_ball_beyond_float64_is_refused_before_the_pca():
    X = _draw(500, 6)
    public = _draw(9, 7) * 1e141  # the projected regime's ball: 1.5e141 and more
    budget = PrivacyBudget(rho=1.0)
    gmm = PublicPrivateGMM(3, rho=0.5, regime="projected", budget=budget)
    with pytest.raises(ValueError, match=r"release 'pca'.*ball radius"):
        gmm.fit(X * 1e141, X_public=public)
    assert budget.ledger() == []


def test_components_are_checked_by_the_component_estimators_own_plan():
    # Each component estimator at half the charge on 2 rows: a cost its own
    # check refuses is refused through the mixture's release.
    ok = _Components(ZCDP(0.5), ZCDP(0.25), 3)
    assert ok.draws == 0
    for mechanism, size, _ in ok.parts():
        assert size >= 1
        assert np.isfinite(getattr(mechanism, "scale", 1.0))
    with pytest.raises(ValueError, match="PrivateGaussianEstimator"):
        _Components(PureDP(1e-300), PureDP(5e-301), 3).parts()


def test_the_weights_histogram_is_checked_at_its_bins():
    hist = _weights(ZCDP(0.05), 4)
    [(mechanism, size, bounded)] = hist.parts()
    assert mechanism is hist.mechanism
    assert (size, bounded) == (4, True)
