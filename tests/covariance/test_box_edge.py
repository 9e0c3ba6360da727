"""Covariance estimators with bounds name the features whose rows sit at the
box's edge (issue 29, item 2): from the released centre and its public noise
sd, one warning per fit, on every release path that releases a centre."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from dpgauss import (
    PrivateCovariance,
    PrivateEllipticEnvelope,
    TailSensitiveCovariance,
)
from dpgauss.testing._box_edge import edge_messages, edge_rows

ESTIMATORS = [
    pytest.param(lambda: PrivateCovariance(rho=0.5), id="cov-auto-rho"),
    pytest.param(lambda: PrivateCovariance(epsilon=1.0), id="cov-auto-eps"),
    pytest.param(lambda: PrivateCovariance(rho=0.5, method="diagonal"), id="diag"),
    pytest.param(lambda: PrivateCovariance(rho=0.5, method="gauss"), id="gauss"),
    pytest.param(lambda: PrivateCovariance(rho=0.5, method="coinpress"), id="coin"),
    pytest.param(lambda: TailSensitiveCovariance(rho=0.5), id="tail-rho"),
    pytest.param(lambda: TailSensitiveCovariance(epsilon=1.0), id="tail-eps"),
    pytest.param(lambda: PrivateEllipticEnvelope(rho=0.5), id="envelope"),
]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_rows_at_the_edge_are_named_once_with_their_side(make):
    est = make().set_params(bounds=(-1.0, 1.0), random_state=0)
    (message,) = edge_messages(est, edge_rows())
    assert message.startswith(f"{type(est).__name__}: the released mean of")
    assert "feature(s) 0 (upper), 2 (lower) lies" in message


@pytest.mark.parametrize("make", ESTIMATORS)
def test_a_box_that_holds_the_rows_and_binary_columns_are_silent(make):
    est = make().set_params(bounds=(-200.0, 200.0), random_state=0)
    assert edge_messages(est, edge_rows()) == []
    # 0/1 columns with half ones in (0, 1): every row at an edge, but half
    # at each: the box-unit means are about 0.
    B = np.random.default_rng(1).integers(0, 2, size=(2000, 3)).astype(float)
    est = make().set_params(bounds=(0.0, 1.0), random_state=0)
    assert edge_messages(est, B) == []


@pytest.mark.parametrize("privacy", [{"rho": 0.5}, {"epsilon": 1.0}])
def test_the_probes_full_option_names_them_too(privacy):
    # Four strongly correlated columns (the probe takes the full release,
    # method_ "gauss") beside one clipped to the upper bound.
    rng = np.random.default_rng(0)
    u = rng.normal(0, 0.4, 5000)
    X = np.column_stack(
        [rng.normal(100, 10, 5000)]
        + [s * u + rng.normal(0, 0.05, 5000) for s in (1, 1, 1, -1)]
    )
    est = PrivateCovariance(bounds=(-1.0, 1.0), random_state=0, **privacy)
    (message,) = edge_messages(est, X)
    assert est.method_ == "gauss"
    assert "feature(s) 0 (upper) lies" in message


@pytest.mark.parametrize("cls", [PrivateCovariance, TailSensitiveCovariance])
def test_a_public_centre_tells_nothing(cls):
    # center=False: the covariance is about the box's centre, no mean is
    # released, so there is nothing to read the edge from.
    est = cls(rho=0.5, center=False, bounds=(-1.0, 1.0), random_state=0)
    assert edge_messages(est, edge_rows()) == []


@pytest.mark.parametrize(
    "cls", [PrivateCovariance, TailSensitiveCovariance, PrivateEllipticEnvelope]
)
def test_raw_breast_cancer_in_a_standardised_box_is_named(cls):
    # Every row of features 0, 3 and 23 (radius, area, worst area: tens to
    # thousands) is clipped to the upper bound of (-3, 3); n = 569 puts the
    # centre's noise sd at 0.03-0.04 box units at rho 0.5. These fits used
    # to answer without naming the cause.
    X = load_breast_cancer().data
    (message,) = edge_messages(cls(rho=0.5, bounds=(-3.0, 3.0), random_state=0), X)
    assert "feature(s) 0 (upper)" in message
    assert "(lower)" not in message
    lower, upper = X.min(axis=0), X.max(axis=0)
    span = upper - lower
    box = (lower - 0.05 * span, upper + 0.05 * span)
    assert edge_messages(cls(rho=0.5, bounds=box, random_state=0), X) == []
