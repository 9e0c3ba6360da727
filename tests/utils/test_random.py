"""check_generator: the one entry point for randomness."""

import numpy as np
import pytest

from dpgauss.utils import check_generator, fit_generator


def test_int_is_reproducible():
    a = check_generator(5).standard_normal(3)
    b = check_generator(5).standard_normal(3)
    np.testing.assert_array_equal(a, b)


def test_none_uses_fresh_entropy():
    a = check_generator(None).standard_normal(3)
    b = check_generator(None).standard_normal(3)
    assert not np.array_equal(a, b)


def test_generator_passes_through_and_randomstate_seeds_one():
    rng = np.random.default_rng(0)
    assert check_generator(rng) is rng
    legacy = np.random.RandomState(0)
    assert isinstance(check_generator(legacy), np.random.Generator)


@pytest.mark.parametrize("bad", [-1, 1.5, "seed", True])
def test_bad_seeds(bad):
    with pytest.raises(ValueError, match="random_state must be"):
        check_generator(bad)


def test_generator_clones_with_fresh_budgets_draw_different_noise():
    # Clones copy a seeded Generator, each is charged to a fresh ledger whose
    # event ids restart at 1. The ids alone would give both the same stream
    # (identical releases: subtracting two neighbours' outputs removes the
    # noise); operating-system entropy is mixed in.
    from sklearn.base import clone

    from dpgauss import PrivacyBudget, PrivateCovariance

    X = np.random.default_rng(0).normal(size=(200, 2))
    template = PrivateCovariance(
        rho=0.5, data_norm=5.0, random_state=np.random.default_rng(123)
    )
    first = clone(template).set_params(budget=PrivacyBudget(rho=1.0)).fit(X)
    second = clone(template).set_params(budget=PrivacyBudget(rho=1.0)).fit(X)
    assert not np.array_equal(first.location_, second.location_)
    a = fit_generator(np.random.default_rng(5), [1]).standard_normal()
    b = fit_generator(np.random.default_rng(5), [1]).standard_normal()
    assert a != b


@pytest.mark.parametrize("with_budget", [True, False])
def test_int_seeded_folds_draw_independent_noise_only_with_a_budget(with_budget):
    # The module docstring's claim, on cross-validation itself: two folds
    # with the same training rows (so any difference is the noise) and an int
    # random_state draw different noise when charged to one budget (distinct
    # event ids), and the same noise without one.
    from sklearn.model_selection import cross_validate

    from dpgauss import PrivacyBudget, PrivateCovariance

    X = np.random.default_rng(0).normal(size=(200, 2))
    rows = np.arange(200)
    budget = PrivacyBudget(rho=1.0) if with_budget else None
    est = PrivateCovariance(rho=0.25, data_norm=5.0, random_state=7, budget=budget)
    fitted = cross_validate(
        est,
        X,
        cv=[(rows, rows), (rows, rows)],
        scoring=lambda *_: 0.0,  # reads no row: only the fits matter here
        return_estimator=True,
    )["estimator"]
    same = np.array_equal(fitted[0].covariance_, fitted[1].covariance_)
    assert same is not with_budget
    if with_budget:
        assert len(budget.ledger()) > 1
