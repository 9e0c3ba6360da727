"""A non-private, data-dependent step before a private one in a Pipeline warns."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    Normalizer,
    PolynomialFeatures,
    StandardScaler,
)

from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateLinearDiscriminantAnalysis,
    PrivateStandardScaler,
)
from dpgauss.exceptions import PrivacyLeakWarning, UtilityWarning
from dpgauss.utils._leak import (
    leaky_steps_before,
    learns_from_rows,
    warn_if_fitted_after_leaky_step,
)


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(200, 3))


def _cov():
    return PrivateCovariance(rho=1.0, data_norm=5.0, random_state=0)


@pytest.mark.parametrize("leaky", [StandardScaler(), PCA(2)])
def test_a_fitted_step_before_a_private_one_warns(X, leaky):
    pipe = make_pipeline(leaky, _cov())
    name = pipe.steps[0][0]
    with pytest.warns(PrivacyLeakWarning, match=f"'{name}' before PrivateCovariance"):
        pipe.fit(X)


@pytest.mark.parametrize(
    "safe",
    [
        FunctionTransformer(np.tanh),
        Normalizer(),
        PolynomialFeatures(2),
        PrivateStandardScaler((-5.0, 5.0), rho=1.0, random_state=0),
        "passthrough",
    ],
)
def test_stateless_shape_only_and_private_steps_are_silent(X, safe):
    pipe = Pipeline([("first", safe), ("cov", _cov())])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Utility warnings (from public values or released ones) are not leaks.
        warnings.simplefilter("ignore", UtilityWarning)
        pipe.fit(X)


def test_steps_after_the_private_one_are_not_its_concern(X):
    y = (X[:, 0] > 0).astype(int)
    clf = PrivateLinearDiscriminantAnalysis(
        classes=[0, 1], data_norm=5.0, rho=1.0, random_state=0
    )
    scaler = PrivateStandardScaler((-5.0, 5.0), rho=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The scaler may report a noisy variance (a UtilityWarning from released
        # values, which depends on the noise drawn): not what this test is about.
        warnings.simplefilter("ignore", UtilityWarning)
        make_pipeline(scaler, clf).fit(X, y)
    pipe = make_pipeline(clone(scaler), StandardScaler(), clf)
    with pytest.warns(PrivacyLeakWarning) as record:
        pipe.fit(X, y)
    # Only the classifier, fitted after the StandardScaler, warns of a leak.
    leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    assert "PrivateLinearDiscriminantAnalysis" in str(leaks[0].message)


def test_nested_pipelines_and_cross_validation_clones(X):
    inner = make_pipeline(PolynomialFeatures(1), StandardScaler())
    pipe = make_pipeline(inner, _cov())
    with pytest.warns(PrivacyLeakWarning, match="'pipeline' before"):
        pipe.fit(X)
    nested = Pipeline([("scale", StandardScaler()), ("rest", make_pipeline(_cov()))])
    with pytest.warns(PrivacyLeakWarning, match="'scale' before"):
        nested.fit(X)
    budget = PrivacyBudget(rho=10.0)
    cloned = make_pipeline(StandardScaler(), _cov().set_params(budget=budget))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cross_val_score(cloned, X, cv=2)
    leaks = [w for w in record if "learn from the private rows" in str(w.message)]
    assert len(leaks) == 2  # one per fold: the clones are detected too


def test_outside_a_pipeline_nothing_is_reported():
    assert warn_if_fitted_after_leaky_step(_cov()) == []
    pipe = make_pipeline(StandardScaler(), _cov())
    assert leaky_steps_before(pipe, _cov()) is None  # another object
    assert leaky_steps_before(pipe, pipe[-1]) == ["standardscaler"]


def test_learns_from_rows():
    assert learns_from_rows(StandardScaler())
    assert learns_from_rows(object())  # unknown: assumed to learn
    assert not learns_from_rows(None)
    assert not learns_from_rows(FunctionTransformer())
    assert not learns_from_rows(make_pipeline(Normalizer(), PolynomialFeatures()))
    assert learns_from_rows(make_pipeline(Normalizer(), StandardScaler()))


def test_column_transformers_and_unions_are_looked_into(X):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    quiet = [
        ColumnTransformer([("t", FunctionTransformer(np.tanh), [0, 1])]),
        ColumnTransformer(
            [
                (
                    "s",
                    PrivateStandardScaler((-5.0, 5.0), rho=1.0, random_state=0),
                    [0, 1],
                )
            ],
            remainder="passthrough",
        ),
        FeatureUnion([("a", Normalizer()), ("b", "drop")]),
    ]
    loud = [
        ColumnTransformer([("t", FunctionTransformer(), [0])], remainder=PCA(1)),
        ColumnTransformer([("s", StandardScaler(), [0, 1])]),
        FeatureUnion([("a", Normalizer()), ("b", StandardScaler())]),
    ]
    for step in quiet:
        assert not learns_from_rows(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.simplefilter("ignore", UtilityWarning)  # not a leak
            Pipeline([("first", step), ("cov", _cov())]).fit(X)
    for step in loud:
        assert learns_from_rows(step)
        with pytest.warns(PrivacyLeakWarning, match="'first' before"):
            Pipeline([("first", step), ("cov", _cov())]).fit(X)
