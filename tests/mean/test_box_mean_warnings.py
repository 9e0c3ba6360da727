"""PrivateMean(bounds): rows sitting at the box's edge are reported."""

import warnings

import numpy as np
import pytest

from dpgauss import PrivateMean
from dpgauss.exceptions import UtilityWarning


def test_rows_at_the_edge_of_a_box_too_narrow_are_named_with_the_side():
    # Rows at 100 +- 10 and -50 +- 1 in the box (-1, 1) (raw values in a box
    # meant for standardised ones): all clipped to an edge, the released
    # box-unit means are 1 and -1 within noise (sd about 9e-4 at n = 5000,
    # rho 0.5). A mean of clipped rows says little, and the fit said nothing.
    # A feature inside the box is not named; a wide enough box is silent.
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [rng.normal(100, 10, 5000), rng.normal(0, 0.3, 5000), rng.normal(-50, 1, 5000)]
    )
    with pytest.warns(UtilityWarning, match=r"feature\(s\) 0 \(upper\), 2 \(lower\)"):
        PrivateMean(bounds=(-1.0, 1.0), rho=0.5, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateMean(bounds=(-200.0, 200.0), rho=0.5, random_state=0).fit(X)


def test_raw_breast_cancer_in_a_standardised_box_is_named():
    # n = 569, d = 30, rho 0.5: the mean's noise sd is 0.019 box units. At
    # the former rule (mean within 1% of the edge beyond two sds, 0.99) it
    # could not fire: 1 - 2 x 0.019 < 0.99. Binary 0/1 columns with half ones
    # in (0, 1) sit at both edges, their means at the centre: silent.
    from sklearn.datasets import load_breast_cancer

    X = load_breast_cancer().data
    with pytest.warns(UtilityWarning, match=r"feature\(s\) 0 \(upper\)") as caught:
        PrivateMean(bounds=(-3.0, 3.0), rho=0.5, random_state=0).fit(X)
    assert sum("box's edge" in str(w.message) for w in caught) == 1
    B = np.random.default_rng(0).integers(0, 2, size=(2000, 3)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        PrivateMean(bounds=(0.0, 1.0), rho=0.5, random_state=0).fit(B)
