"""Tests of the public box helpers (dpgauss.releases._box)."""

import numpy as np
import pytest

from dpgauss.releases._box import box_frame, box_offsets, check_bounds


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        ({"lower": 0, "upper": 1}, "pair"),
        ("01", "pair"),
        (3.0, "pair"),
        ((0, 1, 2), "got 3 items"),
        ((1, 0), "lower < upper"),
        ((0, np.inf), "finite"),
    ],
)
def test_bad_bounds_raise_a_value_error_naming_the_problem(bounds, match):
    with pytest.raises(ValueError, match=match):
        check_bounds(bounds, n_features=2, owner="Est")


def test_rows_far_outside_the_box_land_on_its_faces():
    lower, upper = check_bounds((-1.0, [1.0, 3.0]), n_features=2)
    center, half = box_frame(lower, upper)
    X = np.array([[1e12, -1e300], [np.nan, 0.0]])
    Z = box_offsets(X, center, half)
    np.testing.assert_array_equal(Z, [[1.0, -1.0], [0.0, -0.5]])
