"""Differential-privacy checks every dpgauss estimator must pass.

scikit-learn's ``parametrize_with_checks`` tests the estimator contract; these
checks test what it cannot see: that a fit charges its shared budget exactly its
release plan, spends again on refit, draws noise that no other fit on the same
budget shares (also across clones with one seed or one Generator), reproduces an
experiment from an int seed on a fresh ledger, refuses bad parameters before any
spend (also with scikit-learn's validation switched off), is not fitted after a
failed fit, and never mutates its parameters.
"""

import copy
import math

import numpy as np
from sklearn import config_context
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from dpgauss.accounting import ZCDP, PrivacyBudget
from dpgauss.accounting._composition import compose
from dpgauss.accounting._costs import value_of

__all__ = ["check_dp_estimator"]


def _value(cost):
    return value_of(cost)


def check_budget_charged_exactly(estimator, X, y=None):
    """The ledger grows by exactly the fit's plan; a second fit spends again."""
    budget = PrivacyBudget(rho=1e6)
    est = clone(estimator).set_params(budget=budget)
    est.fit(X, y)
    first = [(e.cost, e.mechanism) for e in budget.ledger()]
    assert first, "a fit recorded nothing in its budget"
    plan = est._pricing_plan(X.shape[1], n_samples=X.shape[0])
    assert first == plan.charges(), "the ledger differs from the release plan"
    costs = [c for c, _ in first]
    assert compose(type(est.privacy_spent_)(0.0), costs) == est.privacy_spent_
    in_currency = [
        c.to_zcdp() if isinstance(est.privacy_spent_, ZCDP) else c for c in costs
    ]
    assert math.isclose(
        _value(est.privacy_spent_),
        math.fsum(_value(c) for c in in_currency),
        rel_tol=1e-12,
    )
    assert est.planned_costs(X.shape[1], n_samples=X.shape[0]) == costs
    est.fit(X, y)
    assert len(budget.ledger()) == 2 * len(first), "a refit did not spend again"


def check_clone_shares_budget(estimator, X, y=None):
    """A clone charges the same ledger as the original."""
    budget = PrivacyBudget(rho=1e6)
    est = clone(estimator).set_params(budget=budget)
    twin = clone(est)
    assert twin.budget is budget
    twin.fit(X, y)
    assert budget.ledger(), "the clone's spend did not reach the shared ledger"


def check_clones_draw_independent_noise(estimator, X, attribute, y=None):
    """Two fits on one budget never share noise, whatever ``random_state`` is.

    ``clone`` deep-copies ``random_state``: with an int or a Generator, every
    clone starts from the same state. Subtracting two such releases of the same
    statistic would remove the noise. Replayed on a fresh ledger, an int seed
    reproduces the same sequence of releases.
    """
    for seed in (0, np.random.default_rng(0)):
        budget = PrivacyBudget(rho=1e6)
        est = clone(estimator).set_params(budget=budget, random_state=seed)
        # Four clones, not two: an estimator may release a public fallback
        # (an aggregate's clipping centre when its private search finds no
        # range) in a share of fits, and two fits can both land on it by
        # chance (SubsampleAggregate, winsorized, 20,000 rows: about 1 pair
        # in 40). Clones sharing their noise give four equal releases always.
        first, *rest = (getattr(clone(est).fit(X, y), attribute) for _ in range(4))
        assert not all(np.array_equal(first, r) for r in rest), (
            f"clones ({seed!r}) drew the same noise"
        )
    first = [
        getattr(
            clone(estimator).set_params(budget=budget, random_state=3).fit(X, y),
            attribute,
        )
        for budget in [PrivacyBudget(rho=1e6)] * 2
    ]
    replay = [
        getattr(
            clone(estimator).set_params(budget=budget, random_state=3).fit(X, y),
            attribute,
        )
        for budget in [PrivacyBudget(rho=1e6)] * 2
    ]
    for a, b in zip(first, replay, strict=True):
        np.testing.assert_array_equal(a, b)


def check_randomness(estimator, X, attribute, y=None):
    """Without a budget: an int seed reproduces; other seeds and None differ.

    Six fits with ``random_state=None`` must not all repeat one release: a
    fit that releases a public fallback in some draws (a predicted-useless
    fit spent with ``on_useless="warn"`` lands on the clipping centre or a
    face of its ball in about a quarter of them) repeats it in two fits
    often, in six about once in 5,000, while a fixed seed repeats it always.
    """
    est = clone(estimator).set_params(budget=None)
    a = getattr(clone(est).set_params(random_state=0).fit(X, y), attribute)
    b = getattr(clone(est).set_params(random_state=0).fit(X, y), attribute)
    c = getattr(clone(est).set_params(random_state=1).fit(X, y), attribute)
    fresh = [
        getattr(clone(est).set_params(random_state=None).fit(X, y), attribute)
        for _ in range(6)
    ]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c), "different seeds gave the same release"
    repeated = all(np.array_equal(fresh[0], other) for other in fresh[1:])
    assert not repeated, "random_state=None repeated a release"


def check_parameters_untouched(estimator, X, y=None):
    """``fit`` leaves every parameter object as it was."""
    est = clone(estimator)
    before = est.get_params(deep=False)
    snapshot = copy.deepcopy({k: v for k, v in before.items() if k != "budget"})
    est.fit(X, y)
    after = est.get_params(deep=False)
    assert all(before[k] is after[k] for k in before), "fit changed a parameter"
    for key, value in snapshot.items():
        if hasattr(value, "get_params"):  # a wrapped estimator: its parameters
            # (fitting the wrapper must neither fit nor change it)
            assert not [k for k in vars(after[key]) if k.endswith("_")]
            assert repr(after[key].get_params()) == repr(value.get_params())
            continue
        np.testing.assert_equal(after[key], value)


def check_refuses_bad_parameters_before_spending(estimator, X, y=None):
    """A bad parameter is refused before any spend, even with validation off."""
    for skip in (False, True):
        for name, bad in (("random_state", "seed"), ("rho", -1.0), ("budget", 3)):
            if name == "rho" and estimator.get_params()["rho"] is None:
                continue
            budget = PrivacyBudget(rho=1e6)
            est = clone(estimator).set_params(budget=budget)
            est.set_params(**{name: bad})
            with config_context(skip_parameter_validation=skip):
                try:
                    est.fit(X, y)
                except (ValueError, TypeError):
                    pass
                else:
                    raise AssertionError(f"{name}={bad!r} was accepted")
            if name != "budget":
                assert budget.ledger() == [], f"{name}={bad!r} was refused too late"


def check_failed_fit_is_not_fitted(estimator, X, y=None):
    """A fit that fails leaves no fitted attribute behind (also after a good fit)."""
    est = clone(estimator).fit(X, y)
    check_is_fitted(est)
    bad = np.array(X, dtype=np.float64)
    bad[0, 0] = np.nan
    try:
        est.fit(bad, y)
    except ValueError:
        pass
    try:
        check_is_fitted(est)
    except NotFittedError:
        pass
    else:
        raise AssertionError("a failed fit left the estimator fitted")
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]


def check_dp_estimator(estimator, X, attribute, y=None):
    """Run every DP check on ``estimator`` with data ``X``.

    Parameters
    ----------
    estimator : estimator
        An unfitted dpgauss estimator with a ``budget`` and ``random_state``.
    X : ndarray of shape (n_samples, n_features)
        Data to fit.
    attribute : str
        A fitted attribute holding a private release (compared across seeds).
    y : array-like of shape (n_samples,), default=None
        Targets passed to every ``fit`` (labels for a classifier).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivateCovariance
    >>> from dpgauss.testing.estimator_checks import check_dp_estimator
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> check_dp_estimator(PrivateCovariance(rho=1.0, data_norm=3.0), X, "covariance_")
    """
    check_budget_charged_exactly(estimator, X, y=y)
    check_clone_shares_budget(estimator, X, y=y)
    check_clones_draw_independent_noise(estimator, X, attribute, y=y)
    check_randomness(estimator, X, attribute, y=y)
    check_parameters_untouched(estimator, X, y=y)
    check_refuses_bad_parameters_before_spending(estimator, X, y=y)
    check_failed_fit_is_not_fitted(estimator, X, y=y)
