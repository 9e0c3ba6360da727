"""Differential-privacy checks every dpgauss estimator must pass.

scikit-learn's ``parametrize_with_checks`` tests the estimator contract; these
checks test what it cannot see: that a fit charges its shared budget exactly what
it reports, spends again on refit, is reproducible only through ``random_state``,
shares its budget with clones and never mutates its parameters.
"""

import math

import numpy as np
from sklearn.base import clone

from dpgauss.accounting import ZCDP, PrivacyBudget
from dpgauss.accounting._composition import compose

__all__ = ["check_dp_estimator"]


def _value(cost):
    return cost.rho if isinstance(cost, ZCDP) else cost.epsilon


def check_budget_charged_exactly(estimator, X):
    """The ledger grows by exactly ``privacy_spent_``; a second fit spends again."""
    budget = PrivacyBudget(rho=1e6)
    est = clone(estimator).set_params(budget=budget)
    est.fit(X)
    first = [e.cost for e in budget.ledger()]
    assert first, "a fit recorded nothing in its budget"
    assert compose(type(est.privacy_spent_)(0.0), first) == est.privacy_spent_
    in_currency = [
        c.to_zcdp() if isinstance(est.privacy_spent_, ZCDP) else c for c in first
    ]
    assert math.isclose(
        _value(est.privacy_spent_),
        math.fsum(_value(c) for c in in_currency),
        rel_tol=1e-12,
    )
    est.fit(X)
    assert len(budget.ledger()) == 2 * len(first), "a refit did not spend again"


def check_clone_shares_budget(estimator, X):
    """A clone charges the same ledger as the original."""
    budget = PrivacyBudget(rho=1e6)
    est = clone(estimator).set_params(budget=budget)
    twin = clone(est)
    assert twin.budget is budget
    twin.fit(X)
    assert budget.ledger(), "the clone's spend did not reach the shared ledger"


def check_randomness(estimator, X, attribute):
    """The same int seed reproduces a fit; different seeds (and None) differ."""
    a = getattr(clone(estimator).set_params(random_state=0).fit(X), attribute)
    b = getattr(clone(estimator).set_params(random_state=0).fit(X), attribute)
    c = getattr(clone(estimator).set_params(random_state=1).fit(X), attribute)
    d = getattr(clone(estimator).set_params(random_state=None).fit(X), attribute)
    e = getattr(clone(estimator).set_params(random_state=None).fit(X), attribute)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c), "different seeds gave the same release"
    assert not np.array_equal(d, e), "random_state=None repeated a release"


def check_parameters_untouched(estimator, X):
    """``fit`` leaves every parameter object as it was."""
    est = clone(estimator)
    before = est.get_params(deep=False)
    est.fit(X)
    after = est.get_params(deep=False)
    assert all(before[k] is after[k] for k in before), "fit changed a parameter"


def check_dp_estimator(estimator, X, attribute):
    """Run every DP check on ``estimator`` with data ``X``.

    Parameters
    ----------
    estimator : estimator
        An unfitted dpgauss estimator with a ``budget`` and ``random_state``.
    X : ndarray of shape (n_samples, n_features)
        Data to fit.
    attribute : str
        A fitted attribute holding a private release (compared across seeds).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivateCovariance
    >>> from dpgauss.utils.estimator_checks import check_dp_estimator
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> check_dp_estimator(PrivateCovariance(rho=1.0, data_norm=3.0), X, "covariance_")
    """
    check_budget_charged_exactly(estimator, X)
    check_clone_shares_budget(estimator, X)
    check_randomness(estimator, X, attribute)
    check_parameters_untouched(estimator, X)
