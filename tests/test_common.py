"""scikit-learn's estimator checks and dpgauss's DP checks on every estimator.

Estimators are discovered (:func:`dpgauss.utils.discovery.all_estimators`) and
instantiated from ``INIT_PARAMS``; test ids are deterministic (class name and
parameters). No check is expected to fail. scikit-learn skips two kinds of check
on its own:

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

from dpgauss.utils._test_common.instance_generator import (
    INIT_PARAMS,
    instance_id,
    make_instances,
)
from dpgauss.utils.discovery import all_estimators
from dpgauss.utils.estimator_checks import check_dp_estimator

ESTIMATORS = list(make_instances(all_estimators()))

# Fitted attribute holding a private release, per estimator class.
RELEASE = {
    "PrivateCovariance": "covariance_",
    "PrivateGaussianEstimator": "mean_",
    "PrivateMean": "mean_",
    "PublicPrivateGMM": "means_",
    "SubsampleAggregate": "statistic_",
    "TailSensitiveCovariance": "covariance_",
}


def test_every_estimator_is_tested():
    names = {name for name, _ in all_estimators()}
    assert names == set(INIT_PARAMS)
    assert names == set(RELEASE)


def test_ids_are_deterministic():
    ids = [instance_id(e) for e in ESTIMATORS]
    assert ids == [instance_id(e) for e in make_instances(all_estimators())]
    assert len(set(ids)) == len(ids)


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=instance_id)
def test_invariance_checks_with_a_fixed_seed(estimator):
    name = type(estimator).__name__
    check_methods_subset_invariance(name, estimator)
    check_methods_sample_order_invariance(name, estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=instance_id)
def test_dp_checks(estimator):
    X = np.random.default_rng(0).normal(size=(60, 3))
    check_dp_estimator(estimator, X, RELEASE[type(estimator).__name__])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=instance_id)
def test_repr_is_deterministic_and_does_no_io(estimator):
    text = repr(estimator)
    assert "path" not in text
    assert "/" not in text
