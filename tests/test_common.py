"""scikit-learn's estimator checks and dpgauss's DP checks on every estimator.

Estimators are discovered (:func:`dpgauss.testing.discovery.all_estimators`) and
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

Transformers fitted on a shared budget fail ``check_fit_idempotent`` by
design (``EXPECTED_FAILED_WITH_BUDGET``: two fits on one budget never share
noise). Two estimators fail some checks by design: :class:`PrivateProductDistribution`
accepts only binary data (0/1 entries), and the checks listed in
``EXPECTED_FAILED`` fit it on Gaussian floats, which it refuses;
``tests/product/test_product.py`` checks the same property on binary data.
:class:`PrivateEllipticEnvelope` thresholds at its model's chi-square quantile,
not at the training rows' quantile that scikit-learn's outlier checks require
(a non-private statistic); ``tests/covariance/test_elliptic_envelope.py`` runs
the rest of those checks. Each has its reason. The DP checks and the
invariance checks get binary data from ``DATA``.

The discriminant analyses take their classes as a public parameter (the test
instances: -20..20), so the checks that fit string labels or compare
``classes_`` with ``np.unique(y)`` are expected failures, and two checks whose
outcome depends on the noise drawn are skipped (``SKIPPED``), each with its
reason.
"""

import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.utils.estimator_checks import (
    check_methods_sample_order_invariance,
    check_methods_subset_invariance,
    parametrize_with_checks,
)

from dpgauss.testing._test_common.instance_generator import (
    INIT_PARAMS,
    instance_id,
    make_instances,
)
from dpgauss.testing.discovery import all_estimators
from dpgauss.testing.estimator_checks import check_dp_estimator

ESTIMATORS = list(make_instances(all_estimators()))

# Fitted attribute holding a private release, per estimator class.
RELEASE = {
    "PrivateBounds": "bounds_",
    "PrivateCovariance": "covariance_",
    "PrivateEllipticEnvelope": "covariance_",
    "PrivateGaussianEstimator": "mean_",
    "PrivateLinearDiscriminantAnalysis": "means_",
    "PrivateLinearRegression": "coef_",
    "PrivateMean": "mean_",
    "PrivatePCA": "components_",
    "PrivateProductDistribution": "probabilities_",
    "PrivateQuadraticDiscriminantAnalysis": "means_",
    "PrivateStandardScaler": "mean_",
    "PrivateWhitener": "whitening_",
    "PublicPrivateGMM": "means_",
    "SubsampleAggregate": "statistic_",
    "TailSensitiveCovariance": "covariance_",
}


#: Data for the DP and invariance checks, per estimator class (Gaussian
#: floats for the others).
DATA = {
    "PrivateProductDistribution": lambda rng, shape: (
        rng.random(shape) < np.linspace(0.2, 0.8, shape[1])
    ).astype(np.float64),
}


def _data(estimator, shape, seed=0):
    rng = np.random.default_rng(seed)
    make = DATA.get(type(estimator).__name__)
    return rng.normal(size=shape) if make is None else make(rng, shape)


_BINARY = (
    "fits on Gaussian floats, which PrivateProductDistribution refuses by "
    "design (binary data only; the refusal is tested); "
)
_DATA_QUANTILE = (
    "requires predict to flag exactly contamination * n training rows, i.e. "
    "offset_ at the training rows' own score quantile, which reads the data "
    "without noise; PrivateEllipticEnvelope's offset_ is the fitted model's "
    "chi-square quantile (public) by design. Everything else in the check "
    "passes: test_outlier_checks_apart_from_the_data_quantile in "
    "tests/covariance/test_elliptic_envelope.py runs it without that assertion, "
    "and test_clean_gaussian_outlier_share_near_contamination the flagged share "
    "against contamination"
)
#: Expected failures of scikit-learn's checks, each with its reason and the
#: test that checks the same property another way.
EXPECTED_FAILED = {
    "PrivateEllipticEnvelope": {
        "check_outliers_train": _DATA_QUANTILE,
        "check_outliers_train(readonly_memmap=True)": _DATA_QUANTILE,
        "check_outliers_fit_predict": _DATA_QUANTILE,
    },
    "PrivateProductDistribution": {
        "check_dict_unchanged": _BINARY + "see test_methods_leave_the_estimator",
        "check_dont_overwrite_parameters": _BINARY
        + "see test_fit_sets_only_fitted_attributes",
        "check_dtype_object": _BINARY + "see test_input_types_are_accepted",
        "check_estimators_dtypes": _BINARY + "see test_input_types_are_accepted",
        "check_estimators_fit_returns_self": _BINARY
        + "see test_fit_sets_only_fitted_attributes",
        "check_estimators_nan_inf": _BINARY + "see test_bad_input_spends_nothing",
        "check_estimators_overwrite_params": _BINARY
        + "see check_parameters_untouched in test_dp_checks",
        "check_estimators_pickle": _BINARY + "see test_clone_and_pickle",
        "check_f_contiguous_array_estimator": _BINARY
        + "see test_input_types_are_accepted",
        "check_fit2d_1feature": _BINARY + "see test_one_feature",
        "check_fit2d_predict1d": _BINARY + "see test_bad_input_spends_nothing",
        "check_fit_idempotent": _BINARY + "see test_clone_and_pickle",
        "check_fit_score_takes_y": _BINARY + "see test_score_and_sample",
        "check_fit_check_is_fitted": _BINARY + "see test_score_and_sample",
        "check_n_features_in": _BINARY + "see test_fit_sets_only_fitted_attributes",
        "check_n_features_in_after_fitting": _BINARY
        + "see test_bad_input_spends_nothing",
        "check_positive_only_tag_during_fit": _BINARY
        + "(the tag is False: negative entries are refused as non-binary)",
        "check_readonly_memmap_input": _BINARY + "see test_input_types_are_accepted",
    },
    "PrivateLinearDiscriminantAnalysis": None,  # filled below
    "PrivateQuadraticDiscriminantAnalysis": None,
}

_PUBLIC_CLASSES = (
    "fits on labels other than the instance's public classes -20..20 (strings, "
    "three classes, ...); classes is a public parameter by design (np.unique(y) "
    "would publish which private labels occur) and other labels are refused "
    "before any spend; "
)
#: The discriminant analyses' expected failures: the public classes.
_CLASSIFIER_FAILED = {
    "check_classifiers_classes": _PUBLIC_CLASSES
    + "tests/discriminant_analysis/test_discriminant.py::"
    "test_string_and_multiclass_labels checks the same with matching classes",
    "check_classifiers_train": _PUBLIC_CLASSES
    + "test_string_and_multiclass_labels and test_accuracy_near_sklearn",
}
for _name in (
    "PrivateLinearDiscriminantAnalysis",
    "PrivateQuadraticDiscriminantAnalysis",
):
    EXPECTED_FAILED[_name] = _CLASSIFIER_FAILED


#: Expected failures of transformers fitted on a shared budget, by design.
EXPECTED_FAILED_WITH_BUDGET = {
    "check_fit_idempotent": (
        "compares transform after two fits with one random_state; two fits "
        "charged to one budget draw independent noise by design (the privacy "
        "model: no two fits on one budget share noise, whatever random_state "
        "is), so the transforms differ. check_clones_draw_independent_noise in "
        "test_dp_checks tests that property; the instances without a budget pass "
        "this check."
    ),
}
_TWO_FITS = (
    "compares the predictions of two fits (on y as a column, on lists) with one "
    "random_state; two fits charged to one budget draw independent noise by "
    "design, so they differ; the instances without a budget pass this check."
)
for _check in ("check_supervised_y_2d", "check_classifier_data_not_an_array"):
    EXPECTED_FAILED_WITH_BUDGET[_check] = _TWO_FITS
#: Estimators whose fitted methods (transform, predict) check_fit_idempotent
#: and the checks above compare after two fits.
TRANSFORMERS_WITH_BUDGET = {
    "PrivatePCA",
    "PrivateStandardScaler",
    "PrivateWhitener",
    "PrivateLinearDiscriminantAnalysis",
    "PrivateQuadraticDiscriminantAnalysis",
}


#: Checks of budgeted classifiers whose outcome depends on the noise: with
#: the public classes -20..20 at epsilon 1 the released class means often show
#: no signal above their noise, and both fits then fall back on the priors and
#: predict the same majority class (the check passes) or not (it fails).
_BUDGET_NOISE_DEPENDENT = (
    "compares the predictions of two budgeted fits, which draw independent "
    "noise; with 41 public classes at epsilon 1 both often fall back on the "
    "priors (releases/_class_rule.py) and agree, so the outcome depends on "
    "the noise; the instances without a budget pass this check"
)
SKIPPED_WITH_BUDGET = {
    (name, "check_classifier_data_not_an_array"): _BUDGET_NOISE_DEPENDENT
    for name in (
        "PrivateLinearDiscriminantAnalysis",
        "PrivateQuadraticDiscriminantAnalysis",
    )
}
#: The scaler at epsilon 1 in the box [-100, 100]: the check's few rows give
#: releases the noise swamps, and both budgeted fits then land on the same
#: public fallback for about 4% of the ledger's event ids (13 of 300
#: offsets), so a strict expected failure passed or failed with the order in
#: which pytest-xdist ran the tests before it on the shared budget.
SKIPPED_WITH_BUDGET["PrivateStandardScaler", "check_fit_idempotent"] = (
    "compares transforms of two budgeted fits, which draw independent noise; "
    "on the check's rows both often land on the same public fallback, so the "
    "outcome depends on the ledger's event ids; "
    "check_clones_draw_independent_noise in test_dp_checks tests the property"
)


def _budgeted(estimator):
    return (
        type(estimator).__name__ in TRANSFORMERS_WITH_BUDGET
        and estimator.get_params()["budget"] is not None
    )


def _expected_failed_checks(estimator):
    expected = dict(EXPECTED_FAILED.get(type(estimator).__name__, {}))
    if _budgeted(estimator):
        expected.update(EXPECTED_FAILED_WITH_BUDGET)
        for name, check in SKIPPED_WITH_BUDGET:
            if name == type(estimator).__name__:
                expected.pop(check, None)
    return expected


def test_every_estimator_is_tested():
    names = {name for name, _ in all_estimators()}
    assert names == set(INIT_PARAMS)
    assert names == set(RELEASE)


def test_ids_are_deterministic():
    ids = [instance_id(e) for e in ESTIMATORS]
    assert ids == [instance_id(e) for e in make_instances(all_estimators())]
    assert len(set(ids)) == len(ids)


#: Checks whose outcome depends on the noise drawn (pass for some instances
#: and seeds, fail for others), skipped with their reason rather than marked
#: as expected failures (which scikit-learn makes strict).
_ONE_LABEL = (
    "fits y with one label while the public classes are -20..20; the other "
    "classes' released counts are noise around 0 (floored at max(1, noise "
    "sd)) and a DP fit cannot tell an empty class from a small one, so "
    "predictions are constant for some noise draws and not for others; "
    "tests/discriminant_analysis/test_discriminant.py::"
    "test_absent_class_is_rarely_predicted"
)
_DECISION_PROBA = (
    "compares predict_proba[:, 1] with a one-column decision_function, which "
    "holds for a binary model; with the public classes -20..20 the model has 41 "
    "classes and the check's outcome depends on the noise (its tie-breaking "
    "fallback passes for some draws); test_decision_proba_consistency checks "
    "the property with classes [0, 1]"
)
SKIPPED = {
    (name, check): reason
    for name in (
        "PrivateLinearDiscriminantAnalysis",
        "PrivateQuadraticDiscriminantAnalysis",
    )
    for check, reason in (
        ("check_classifiers_one_label", _ONE_LABEL),
        ("check_decision_proba_consistency", _DECISION_PROBA),
    )
}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    name = getattr(check, "func", check).__name__
    reason = SKIPPED.get((type(estimator).__name__, name))
    if reason is None and _budgeted(estimator):
        reason = SKIPPED_WITH_BUDGET.get((type(estimator).__name__, name))
    if reason is not None:
        pytest.skip(reason)
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=instance_id)
def test_invariance_checks_with_a_fixed_seed(estimator):
    name = type(estimator).__name__
    if name in DATA:  # scikit-learn's checks draw Gaussian floats
        _binary_invariance(estimator)
        return
    check_methods_subset_invariance(name, estimator)
    check_methods_sample_order_invariance(name, estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=instance_id)
def test_dp_checks(estimator):
    n = 60
    if type(estimator).__name__ == "SubsampleAggregate":
        # The checks compare noisy releases. On 60 rows the aggregate is
        # predicted useless, its searches go astray and it releases the
        # public centre, zeros, the same in every fit (free, by design);
        # 20,000 rows give releases that carry their noise at both budgets.
        n = 20_000
    X = _data(estimator, (n, 3))
    y = None
    if is_classifier(estimator):
        y = np.arange(n) % 2
    elif is_regressor(estimator):  # a linear signal the releases carry
        y = X[:, 0] - 2.0 * X[:, 1] + 0.1 * np.sin(np.arange(n))
    check_dp_estimator(estimator, X, RELEASE[type(estimator).__name__], y=y)


def _binary_invariance(estimator):
    """check_methods_subset_invariance and check_methods_sample_order_invariance
    on binary data: score_samples of a fitted model, row by row."""
    X = _data(estimator, (60, 3), seed=1)
    est = estimator.set_params(random_state=0).fit(X)
    full = est.score_samples(X)
    for part in np.array_split(np.arange(60), 4):
        np.testing.assert_allclose(est.score_samples(X[part]), full[part])
    order = np.random.default_rng(2).permutation(60)
    np.testing.assert_allclose(est.score_samples(X[order]), full[order])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=instance_id)
def test_repr_is_deterministic_and_does_no_io(estimator):
    text = repr(estimator)
    assert "path" not in text
    assert "/" not in text
