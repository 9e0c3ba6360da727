"""ReleasePlan: the ledger is written from it, and it catches every misuse."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, ApproxDP, PureDP
from dpgauss.accounting._plan import (
    Choice,
    PlanError,
    Release,
    ReleasePlan,
    dominates,
)


class _Mechanism:
    """A stand-in mechanism that counts its draws."""

    def __init__(self, cost):
        self.cost = cost
        self.draws = 0

    def randomise(self, value, rng=None):
        self.draws += 1
        return value


def _make(cost, doubled=False):
    """A stand-in factory; ``doubled`` miscalibrates (twice the planned rho)."""
    return _Mechanism(ZCDP(cost.rho * 2) if doubled else cost)


def _choice(rho):
    half = ZCDP(rho / 2)
    return Choice(
        "covariance",
        {
            "gauss": (Release("second_moment", ZCDP(rho), "gaussian", _make),),
            "separate": (
                Release("eigenvalues", half, "gaussian", _make),
                Release("eigenvectors", half, "gaussian", _make),
            ),
        },
    )


def test_charges_are_the_plan_and_a_choice_charges_its_costliest_option():
    plan = ReleasePlan(
        ZCDP(1.0), [Release("mean", ZCDP(0.1), "gaussian"), _choice(0.9)]
    )
    assert plan.charges() == [
        (ZCDP(0.1), "gaussian:mean"),
        (ZCDP(0.9), "choice:covariance/second_moment"),
    ]
    assert plan.spent() == ZCDP(1.0)
    assert plan.cost("eigenvalues") == ZCDP(0.45)


def test_pure_options_are_charged_at_the_option_that_dominates_in_both_currencies():
    # gauss: one pure 0.5 (0.125 as zCDP); separate: two pure 0.25 (0.0625).
    choice = Choice(
        "covariance",
        {
            "gauss": (Release("second_moment", PureDP(0.5), "laplace"),),
            "separate": (
                Release("eigenvalues", PureDP(0.25), "laplace"),
                Release("eigenvectors", PureDP(0.25), "laplace"),
            ),
        },
    )
    plan = ReleasePlan(PureDP(0.5), [choice])
    assert plan.costs() == [PureDP(0.5)]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # pure 1.0 (0.5 as zCDP) against zCDP 0.6: each is larger somewhere.
        ([PureDP(1.0)], [ZCDP(0.6)]),
        # pure, 0.5 as zCDP and epsilon 1.0, against 0.425 and epsilon 1.1.
        ([PureDP(1.0)], [PureDP(0.2), PureDP(0.9)]),
        # approximate costs: more epsilon against more delta.
        ([ApproxDP(1.0, 1e-7)], [ApproxDP(0.5, 1e-6)]),
    ],
)
def test_a_choice_without_a_dominating_option_is_refused(a, b):
    choice = Choice(
        "c",
        {
            "a": tuple(Release(f"a{i}", c, "x") for i, c in enumerate(a)),
            "b": tuple(Release(f"b{i}", c, "x") for i, c in enumerate(b)),
        },
    )
    with pytest.raises(PlanError, match="every currency"):
        choice.charged  # noqa: B018


def test_a_dominating_approximate_option_is_charged():
    choice = Choice(
        "c",
        {
            "small": (Release("s", ApproxDP(0.5, 1e-7), "x"),),
            "large": (Release("l", ApproxDP(1.0, 1e-6), "x"),),
        },
    )
    assert [r.cost for r in choice.charged] == [ApproxDP(1.0, 1e-6)]
    # Before, any two options with approximate costs tied ("inf" as rho) and the
    # first was charged, although the second costs far more.
    choice = Choice(
        "c",
        {
            "cheap": (Release("s", ApproxDP(0.1, 1e-9), "x"),),
            "dear": (
                Release("l", ApproxDP(5.0, 1e-3), "x"),
                Release("z", ZCDP(50.0), "g"),
            ),
        },
    )
    assert [r.cost for r in choice.charged] == [ApproxDP(5.0, 1e-3), ZCDP(50.0)]


def test_a_plan_over_its_total_is_refused():
    with pytest.raises(PlanError, match="more than"):
        ReleasePlan(
            ZCDP(1.0), [Release("a", ZCDP(0.6), "g"), Release("b", ZCDP(0.6), "g")]
        )


def test_duplicate_names_are_refused():
    with pytest.raises(PlanError, match="unique"):
        ReleasePlan(
            ZCDP(1.0), [Release("a", ZCDP(0.1), "g"), Release("a", ZCDP(0.1), "g")]
        )


def test_approximate_steps_sit_next_to_zcdp_steps():
    # rho = 0.1 at the delta left (9e-7) is epsilon ~2.15; plus 0.5: ~2.65.
    total = ApproxDP(3.0, 1e-6)
    plan = ReleasePlan(
        total,
        [Release("tukey", ApproxDP(0.5, 1e-7), "tukey"), Release("m", ZCDP(0.1), "g")],
    )
    assert 2.6 < plan.spent().epsilon <= 3.0
    assert [c for c, _ in plan.charges()] == [ApproxDP(0.5, 1e-7), ZCDP(0.1)]


def test_finish_checks_every_release_drew_once_at_its_cost():
    def plan():
        return ReleasePlan(
            ZCDP(1.0), [Release("mean", ZCDP(0.1), "g", _make), _choice(0.9)]
        )

    ok = plan()
    ok.calibrate("mean").randomise(0.0)
    ok.choose("covariance", "separate")
    ok.calibrate("eigenvalues").randomise(0.0)
    ok.calibrate("eigenvectors").randomise(0.0)
    ok.finish()

    never = plan()
    never.calibrate("mean").randomise(0.0)
    never.choose("covariance", "gauss")
    with pytest.raises(PlanError, match="never made"):
        never.finish()

    twice = plan()
    mech = twice.calibrate("mean")
    mech.randomise(0.0)
    mech.randomise(0.0)  # a second draw with the same cost: not in the ledger
    twice.choose("covariance", "gauss")
    twice.calibrate("second_moment").randomise(0.0)
    with pytest.raises(PlanError, match="2 times"):
        twice.finish()

    wrong = plan()
    with pytest.raises(PlanError, match="planned at"):
        wrong.calibrate("mean", doubled=True)
    with pytest.raises(PlanError, match="not chosen"):
        wrong.calibrate("second_moment")
    wrong.calibrate("mean")
    with pytest.raises(PlanError, match="twice"):
        wrong.calibrate("mean")
    with pytest.raises(PlanError, match="no release"):
        wrong.calibrate("nothing")
    with pytest.raises(PlanError, match="drew noise 0 times"):
        wrong.finish()


def test_every_estimator_plan_composes_within_its_total():
    from dpgauss.testing._test_common.instance_generator import make_instances
    from dpgauss.testing.discovery import all_estimators

    for est in make_instances(all_estimators()):
        total = est._privacy_total()
        plan = est._pricing_plan(4, total=total)
        spent = plan.spent()
        value = spent.rho if isinstance(spent, ZCDP) else spent.epsilon
        limit = total.rho if isinstance(total, ZCDP) else total.epsilon
        assert value <= limit * (1 + 1e-12)
        assert math.isclose(value, limit, rel_tol=1e-9)


def test_choice_dominance_is_exact():
    # An option 1 ulp more expensive is the one charged; with a tolerance the
    # cheaper one could be, under-recording the spend.
    cheap = (Release("cheap", ZCDP(0.1), "gaussian"),)
    dear = (Release("dear", ZCDP(math.nextafter(0.1, 1.0)), "gaussian"),)
    for options in ({"cheap": cheap, "dear": dear}, {"dear": dear, "cheap": cheap}):
        assert Choice("c", options).charged == dear
    assert dominates([ZCDP(0.2)], [ZCDP(0.1)])
    assert not dominates([ZCDP(0.1)], [ZCDP(0.1), PureDP(1e-300)])


def test_dominance_holds_after_other_costs_are_added():
    # Options whose rounded sums tie can differ once composed with a
    # third cost; exact sums pick the option whose composition is the larger.
    from dpgauss.accounting._composition import compose

    a = (
        Release("a1", PureDP(1.0), "laplace"),
        Release("a2", PureDP(2**-54), "laplace"),
    )
    b = (
        Release("b1", PureDP(1.0), "laplace"),
        Release("b2", PureDP(2**-53), "laplace"),
    )
    other = Release("o", PureDP(2**-55), "laplace")
    plan = ReleasePlan(PureDP(2.0), [other, Choice("c", {"a": a, "b": b})])
    for option in (a, b):
        composed = compose(PureDP(2.0), [other.cost, *(r.cost for r in option)])
        assert plan.spent().epsilon >= composed.epsilon


def test_pure_to_zcdp_never_rounds_down():
    from fractions import Fraction

    from dpgauss.accounting import pure_to_zcdp

    rng = np.random.default_rng(0)
    for eps in rng.uniform(1e-6, 10.0, 20_000):
        assert Fraction(pure_to_zcdp(float(eps))) >= Fraction(float(eps)) ** 2 / 2
