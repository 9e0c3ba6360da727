"""Privacy-parameter parsing (estimators and budgets) and budget splits."""

import math

import pytest

from dpgauss.accounting import ZCDP, ApproxDP, PureDP, approx_to_zcdp
from dpgauss.accounting._parameters import (
    budget_total,
    resolve_privacy,
    split_cost,
    stated_cost,
)


def test_resolve_each_form():
    assert resolve_privacy(rho=0.3) == ZCDP(0.3)
    assert resolve_privacy(epsilon=2) == PureDP(2.0)
    assert resolve_privacy(epsilon=1.0, delta=1e-5) == ZCDP(approx_to_zcdp(1.0, 1e-5))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "no privacy parameter"),
        ({"rho": 1, "delta": 1e-6}, ValueError, "not a mix"),
        ({"delta": 0.1}, ValueError, "without epsilon"),
        ({"rho": "1"}, TypeError, "real number"),
        ({"rho": True}, TypeError, "real number"),
        ({"rho": math.nan}, ValueError, "finite number > 0"),
        ({"epsilon": -1}, ValueError, "finite number > 0"),
        ({"epsilon": 1, "delta": 0}, ValueError, "finite number > 0"),
        ({"epsilon": 1, "delta": 1}, ValueError, "delta must be < 1"),
    ],
)
def test_resolve_errors_name_the_problem(kwargs, error, match):
    with pytest.raises(error, match=match):
        resolve_privacy(**kwargs, owner="Est")


def test_error_names_the_owner():
    with pytest.raises(ValueError, match=r"^Est: "):
        resolve_privacy(owner="Est")


@pytest.mark.parametrize("total", [ZCDP(0.7), PureDP(0.3), ZCDP(1.0), PureDP(1e-9)])
@pytest.mark.parametrize("shares", [[0.25, 0.75], [0.1] * 10, [1 / 3] * 3, [1.0]])
def test_split_never_exceeds_the_total(total, shares):
    parts = split_cost(total, shares)
    value = total.rho if isinstance(total, ZCDP) else total.epsilon
    values = [p.rho if isinstance(p, ZCDP) else p.epsilon for p in parts]
    assert all(type(p) is type(total) for p in parts)
    assert math.fsum(values) <= value
    assert math.fsum(values) == pytest.approx(value, rel=1e-12)


def test_split_rejects_bad_shares():
    with pytest.raises(ValueError, match="sum to 1"):
        split_cost(ZCDP(1.0), [0.5, 0.6])
    with pytest.raises(ValueError, match="positive"):
        split_cost(ZCDP(1.0), [1.5, -0.5])


@pytest.mark.parametrize(
    "kwargs",
    [{"rho": 0.3}, {"epsilon": 2.0}, {"epsilon": 1.0, "delta": 1e-5}],
)
def test_estimators_and_budgets_read_the_same_form(kwargs):
    # One parser: the stated cost of a budget's total is the estimator's before
    # an estimator turns (epsilon, delta) into the rho-zCDP it spends.
    stated = stated_cost(**kwargs)
    assert budget_total(**kwargs) == stated
    if isinstance(stated, ApproxDP):
        assert resolve_privacy(**kwargs) == ZCDP(approx_to_zcdp(1.0, 1e-5))
    else:
        assert resolve_privacy(**kwargs) == stated


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"delta": 0.1}, {"rho": 1.0, "epsilon": 1.0}, {"epsilon": 1.0, "delta": 1.0}],
)
def test_estimators_and_budgets_refuse_the_same_forms(kwargs):
    with pytest.raises(ValueError):
        resolve_privacy(**kwargs)
    with pytest.raises(ValueError):
        budget_total(**kwargs)


def test_an_epsilon_whose_square_overflows_is_refused_with_a_clear_error():
    # epsilon^2 / 2 (its zCDP equivalent) overflows past about 1.9e154: a
    # bare OverflowError surfaced from the accounting before.
    with pytest.raises(ValueError, match=r"above 1e\+150"):
        resolve_privacy(epsilon=1e300)
    with pytest.raises(ValueError, match=r"above 1e\+150"):
        resolve_privacy(epsilon=1e300, delta=1e-6)
    assert resolve_privacy(epsilon=1e150).epsilon == 1e150
