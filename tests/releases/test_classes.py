"""The classes of the discriminant analyses (dpgauss.releases._classes): public
labels, row codes that read each row's own label, and the post-processing of
the released class statistics."""

import numpy as np
import pytest

from dpgauss.accounting import PureDP
from dpgauss.releases._classes import (
    RADIUS_GRID,
    _radius_mechanism,
    check_classes,
    encode_labels,
    project_ball,
    shrink_spectrum,
)


@pytest.mark.parametrize(
    ("classes", "match"),
    [
        (None, "required"),
        ("ab", "not a string"),
        ([[0, 1]], "one-dimensional"),
        ([0, 0, 1], "repeated"),
        ([1], "at least two"),
        ([1, None], "comparable"),
    ],
)
def test_bad_classes_are_refused(classes, match):
    with pytest.raises(ValueError, match=match):
        check_classes(classes, "Owner")


def test_classes_are_sorted_and_unique():
    np.testing.assert_array_equal(check_classes([3, 1, 2], "Owner"), [1, 2, 3])


def test_each_code_reads_its_own_label_only():
    classes = np.array(["a", "b"])
    y = np.array(["b", "a", "c", "b"], dtype=object)
    np.testing.assert_array_equal(encode_labels(y, classes), [1, 0, -1, 1])
    # A label numpy cannot compare as a whole matches no class, and the
    # others keep their codes.
    odd = np.empty(3, dtype=object)
    odd[:] = ["a", np.arange(3), "b"]
    np.testing.assert_array_equal(encode_labels(odd, classes), [0, -1, 1])


def test_spectrum_is_floored_then_shrunk():
    values = np.array([-1.0, 0.5, 4.0])
    none = shrink_spectrum(values, 0.1, 3, None)
    np.testing.assert_allclose(none, [0.1, 0.5, 4.0])
    full = shrink_spectrum(values, 0.1, 3, 1.0)
    np.testing.assert_allclose(full, np.full(3, none.mean()))
    auto = shrink_spectrum(values, 0.1, 3, "auto")
    assert none.min() < auto.min() <= auto.max() < none.max()


def test_offsets_are_projected_into_the_ball():
    offsets = np.array([[3.0, 4.0], [0.3, 0.4], [1e300, -1e300]])
    out = project_ball(offsets, 1.0)
    np.testing.assert_allclose(out[:2], [[0.6, 0.8], [0.3, 0.4]])
    assert np.all(np.isfinite(out))
    assert np.all(np.linalg.norm(out, axis=1) <= 1.0 + 1e-15)


def test_the_radius_is_a_pure_quantile_on_the_public_grid():
    mech = _radius_mechanism(PureDP(1.0), 8.0)
    assert mech.cost == PureDP(1.0)
    rng = np.random.default_rng(0)
    radius = float(mech.release(np.full(500, 2.0), rng))
    assert 0.0 <= radius <= 8.0
    step = 8.0 / (RADIUS_GRID - 1)
    assert radius / step == pytest.approx(round(radius / step))
