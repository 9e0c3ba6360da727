"""scikit-learn's estimator checks and dpgauss's DP checks on every estimator.

No check is expected to fail. scikit-learn skips two kinds of check on its own:

* ``check_methods_subset_invariance`` and ``check_methods_sample_order_invariance``
  are skipped for estimators tagged ``non_deterministic`` (every DP estimator is:
  its fit draws noise). They test the fitted model's methods, which are
  deterministic once fitted, so ``test_invariance_checks_with_a_fixed_seed`` below
  runs them explicitly.
* ``check_array_api_input`` runs only when SCIPY_ARRAY_API is set; dpgauss does
  not claim array-API support (its tag ``array_api_support`` is False).
"""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import (
    check_methods_sample_order_invariance,
    check_methods_subset_invariance,
    parametrize_with_checks,
)

from dpgauss import PrivacyBudget, PrivateCovariance, TailSensitiveCovariance
from dpgauss.utils.estimator_checks import check_dp_estimator

ESTIMATORS = [
    PrivateCovariance(rho=1.0, data_norm=10.0),
    PrivateCovariance(epsilon=1.0, data_norm=10.0, center=False),
    PrivateCovariance(
        epsilon=1.0, delta=1e-6, data_norm=10.0, budget=PrivacyBudget(rho=1e9)
    ),
    PrivateCovariance(method="separate", rho=1.0, data_norm=10.0),
    PrivateCovariance(method="eigen", epsilon=2.0, data_norm=10.0),
    TailSensitiveCovariance(rho=1.0, data_norm=100.0),
    TailSensitiveCovariance(epsilon=1.0, data_norm=10.0, center=False),
]

# Fitted attribute holding a private release, per estimator class.
RELEASE = {PrivateCovariance: "covariance_", TailSensitiveCovariance: "covariance_"}


def _id(est):
    return repr(est).replace("\n", "").replace(" ", "")


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_invariance_checks_with_a_fixed_seed(estimator):
    name = type(estimator).__name__
    check_methods_subset_invariance(name, estimator)
    check_methods_sample_order_invariance(name, estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_dp_checks(estimator):
    X = np.random.default_rng(0).normal(size=(60, 3))
    check_dp_estimator(estimator, X, RELEASE[type(estimator)])
