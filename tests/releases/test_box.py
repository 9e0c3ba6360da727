"""Tests of the public box helpers (dpgauss.releases._box)."""

import warnings

import numpy as np
import pytest

from dpgauss.releases._box import box_frame, box_offsets, check_bounds, inside_bounds


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


# c + h exceeds upper by one rounding step for these bounds (fl(lower/2 +
# upper/2) + fl(upper/2 - lower/2) rounds up); about one random box in ten.
EDGE_BOX = (8.701448475755363, 9.827191161417792)


def test_inside_bounds_clips_the_rounding_step_back():
    c, h = box_frame(np.float64(EDGE_BOX[0]), np.float64(EDGE_BOX[1]))
    assert c + h > EDGE_BOX[1]
    back = inside_bounds(np.array([c + h, c - h]), EDGE_BOX, 2, "Example")
    assert back[0] == EDGE_BOX[1]
    assert back[1] >= EDGE_BOX[0]


@pytest.mark.parametrize(
    "name",
    [
        "PrivateCovariance",
        "TailSensitiveCovariance",
        "PrivateGaussianEstimator",
        "PrivateMean",
        "PrivatePCA",
    ],
)
def test_locations_mapped_back_stay_inside_the_bounds(name):
    # Every row on the upper face: the released location in box units is
    # clipped to 1 in about half the draws, and c + h is one rounding step
    # beyond upper before the clip to the bounds (each estimator here landed
    # there in at least one of these three seeds without it).
    import dpgauss

    X = np.full((400, 2), EDGE_BOX[1])
    for seed in range(3):
        est = getattr(dpgauss, name)(
            bounds=EDGE_BOX, epsilon=5.0, random_state=seed, on_useless="warn"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
        location = getattr(est, "location_", None)
        location = est.mean_ if location is None else location
        assert np.all(location <= EDGE_BOX[1])
        assert np.all(location >= EDGE_BOX[0])


def test_the_edge_rule_puts_half_of_the_rows_near_the_edge():
    # The proof of EDGE_SHARE: rows z in [-1, 1] with mean mu >= 0.9 have
    # E[1 - z] <= 0.1, so (Markov) at most half of them lie 0.2 or more
    # below 1. The worst case for the bound: half at exactly 0.8, half at 1
    # (mean 0.9), where the rows beyond 0.8 are exactly half.
    from dpgauss.releases._box import EDGE_REACH, EDGE_SHARE, rows_at_edge

    worst = np.r_[np.full(500, 1.0 - EDGE_REACH), np.ones(500)]
    assert np.mean(worst) == pytest.approx(EDGE_SHARE)
    assert np.mean(worst > 1.0 - EDGE_REACH) == 0.5
    rng = np.random.default_rng(0)
    for _ in range(200):  # any rows at that mean: at least half that close
        z = np.clip(1.0 - rng.exponential(rng.uniform(0.01, 0.2), 1000), -1, 1)
        if np.mean(z) >= EDGE_SHARE:
            assert np.mean(z > 1.0 - EDGE_REACH) >= 0.5
    # Two noise sds below the threshold: silent; above it, named by side.
    assert rows_at_edge([0.95, -0.95, 0.95], [0.02, 0.02, 0.03]).tolist() == [
        True,
        True,
        False,
    ]


def test_the_edge_warning_names_every_side_and_counts_the_rest():
    from dpgauss.exceptions import UtilityWarning
    from dpgauss.releases._box import warn_rows_at_edge

    mean = np.r_[np.ones(8), -np.ones(5), 0.0]
    with pytest.warns(UtilityWarning, match=r"9 \(lower\) \(and 3 more\) lies"):
        edge = warn_rows_at_edge("Est", mean, 1e-3, said="the fit")
    assert edge.tolist() == [True] * 13 + [False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Binary columns half ones in (0, 1): box means about 0, silent.
        assert not warn_rows_at_edge("Est", np.zeros(3), 1e-3).any()
