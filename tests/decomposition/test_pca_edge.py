"""PrivatePCA with bounds names the features whose rows sit at the box's edge
(issue 29, item 2): from the released centre and its public noise sd, once
per fit, on every path that releases a centre (full, tail, axes)."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from dpgauss import PrivatePCA
from dpgauss.testing._box_edge import edge_messages, edge_rows


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
    (message,) = edge_messages(est, edge_rows())
    assert est.method_ == method
    assert message.startswith("PrivatePCA: the released mean of")
    assert "feature(s) 0 (upper), 2 (lower) lies" in message
    assert edge_messages(est.set_params(bounds=(-200.0, 200.0)), edge_rows()) == []
    B = np.random.default_rng(1).integers(0, 2, size=(2000, 3)).astype(float)
    assert edge_messages(est.set_params(bounds=(0.0, 1.0)), B) == []


def test_without_a_centre_there_is_nothing_to_read():
    est = PrivatePCA(2, center=False, rho=0.5, bounds=(-1.0, 1.0), random_state=0)
    assert edge_messages(est, edge_rows()) == []


def test_raw_breast_cancer_in_a_standardised_box_is_named():
    # n = 569, d = 30: a tenth of rho 0.5 on the centre, noise sd 0.04 box
    # units; the fit used to say only that the release was noisy.
    X = load_breast_cancer().data
    est = PrivatePCA(3, rho=0.5, bounds=(-3.0, 3.0), random_state=0)
    (message,) = edge_messages(est, X)
    assert "feature(s) 0 (upper)" in message
