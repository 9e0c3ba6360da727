"""PrivatePCA with bounds names the features whose rows sit at the box's edge
(issue 29, item 2): from the released centre and its public noise sd, once
per fit, on every path that releases a centre (full, tail, axes)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from dpgauss import PrivatePCA


def _edge_rows(n=5000, seed=0):
    # Column 0 clipped to the upper bound of (-1, 1), column 2 to the lower.
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            rng.normal(100, 10, n),
            rng.normal(0, 0.3, n),
            rng.normal(-50, 1, n),
            rng.normal(0.2, 0.3, n),
        ]
    )


def _edge_messages(est, X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    return [str(w.message) for w in caught if "box's edge" in str(w.message)]


@pytest.mark.parametrize(
    ("params", "method"),
    [
        ({"rho": 0.5}, "gauss"),
        ({"rho": 0.5, "method": "tail"}, "gauss"),
        ({"epsilon": 0.05}, "diagonal"),  # the axes release
    ],
)
def test_rows_at_the_edge_are_named_once_with_their_side(params, method):
    est = PrivatePCA(2, bounds=(-1.0, 1.0), random_state=0, **params)
    (message,) = _edge_messages(est, _edge_rows())
    assert est.method_ == method
    assert message.startswith("PrivatePCA: the released mean of")
    assert "feature(s) 0 (upper), 2 (lower) lies" in message
    assert _edge_messages(est.set_params(bounds=(-200.0, 200.0)), _edge_rows()) == []
    B = np.random.default_rng(1).integers(0, 2, size=(2000, 3)).astype(float)
    assert _edge_messages(est.set_params(bounds=(0.0, 1.0)), B) == []


def test_without_a_centre_there_is_nothing_to_read():
    est = PrivatePCA(2, center=False, rho=0.5, bounds=(-1.0, 1.0), random_state=0)
    assert _edge_messages(est, _edge_rows()) == []


def test_raw_breast_cancer_in_a_standardised_box_is_named():
    # n = 569, d = 30: a tenth of rho 0.5 on the centre, noise sd 0.04 box
    # units; the fit used to say only that the release was noisy.
    X = load_breast_cancer().data
    est = PrivatePCA(3, rho=0.5, bounds=(-3.0, 3.0), random_state=0)
    (message,) = _edge_messages(est, X)
    assert "feature(s) 0 (upper)" in message
