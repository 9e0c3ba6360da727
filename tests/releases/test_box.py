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


# -- the boxed passes stream (issue 30): releases._box.boxed ----------------------
def _bounded_fits():
    import dpgauss

    box = ([0.0, -10.0, -3.0], [20.0, 0.0, 3.0])
    p = {"rho": 0.5, "random_state": 0, "on_useless": "warn"}
    return {
        "PrivateCovariance": lambda: dpgauss.PrivateCovariance(bounds=box, **p),
        "PrivateCovariance-pure": lambda: dpgauss.PrivateCovariance(
            bounds=box, epsilon=1.0, random_state=0, on_useless="warn"
        ),
        "TailSensitiveCovariance": lambda: dpgauss.TailSensitiveCovariance(
            bounds=box, **p
        ),
        "PrivateMean": lambda: dpgauss.PrivateMean(bounds=box, **p),
        "PrivateMean-adaptive": lambda: dpgauss.PrivateMean(
            bounds=box, epsilon=0.05, random_state=0, on_useless="warn"
        ),
        "LDA": lambda: dpgauss.PrivateLinearDiscriminantAnalysis(
            classes=[0, 1], bounds=box, **p
        ),
        "QDA": lambda: dpgauss.PrivateQuadraticDiscriminantAnalysis(
            classes=[0, 1], bounds=box, **p
        ),
        "PrivateGaussianEstimator": lambda: dpgauss.PrivateGaussianEstimator(
            bounds=box, **p
        ),
        "PrivateGaussianEstimator-pure": lambda: dpgauss.PrivateGaussianEstimator(
            bounds=box, epsilon=1.0, random_state=0, on_useless="warn"
        ),
        "PrivateStandardScaler": lambda: dpgauss.PrivateStandardScaler(bounds=box, **p),
        "PrivatePCA-gauss": lambda: dpgauss.PrivatePCA(
            2, bounds=box, method="gauss", **p
        ),
    }


def _fitted_bits(est):
    return {
        k: np.asarray(v).tobytes()
        for k, v in sorted(vars(est).items())
        if k.endswith("_") and not k.startswith("_") and isinstance(v, np.ndarray)
    }


def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [3.0, 2.0, 1.0] + [10.0, -5.0, 0.0]
    X[::97] *= 4.0  # rows beyond the box, clipped onto its faces
    return X, (np.arange(n) % 2).astype(np.int8)


@pytest.mark.parametrize("name", list(_bounded_fits()))
def test_boxed_fits_give_numpy_s_release_on_memmap_and_dask(name, tmp_path):
    # 20,000 rows: three canonical chunks (CHUNK_ROWS = 8,192) and a part,
    # Dask blocks that straddle them. The numpy input is read-only: a write
    # into the caller's rows would raise; the file is compared byte for byte.
    da = pytest.importorskip("dask.array")
    make = _bounded_fits()[name]
    X, y = _rows(20_000)
    kept = X.copy()
    X.setflags(write=False)
    path = tmp_path / "rows.npy"
    np.save(path, X)
    on_disk = path.read_bytes()
    label = y if name in ("LDA", "QDA") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _fitted_bits(make().fit(X, label))
        assert expected
        for rows in (
            np.load(path, mmap_mode="r"),
            np.load(path, mmap_mode="c"),
            da.from_array(X, chunks=(7_001, 2)),
        ):
            assert _fitted_bits(make().fit(rows, label)) == expected
    assert np.array_equal(X, kept)
    assert path.read_bytes() == on_disk


def test_boxed_rows_are_the_whole_box_map_chunk_by_chunk():
    from dpgauss.releases._box import boxed
    from dpgauss.utils._sums import iter_chunks

    X, _ = _rows(20_000)
    X[5] = [np.nan, np.inf, -1e308]
    center, half = np.array([10.0, -5.0, 0.0]), np.array([10.0, 5.0, 3.0])
    whole = box_offsets(X, center, half)
    Z = boxed(X, center, half)
    assert Z.shape == X.shape
    # Copies: the chunks are mapped into one buffer, reused chunk to chunk.
    chunks = [chunk.copy() for chunk in iter_chunks(Z)]
    assert np.array_equal(np.concatenate(chunks), whole)
    index = np.array([5, 19_999, 0, 5])
    assert np.array_equal(Z[index], whole[index])
    assert np.array_equal(Z[3], whole[3])
    assert np.array_equal(Z[10:20, 1:], whole[10:20, 1:])
    assert np.array_equal(np.asarray(Z), whole)


# The bound: a pass holds a few chunk-sized float64 arrays at once (the block
# read from the file, its boxed rows, their clipped offsets or squares), at
# most 8 of CHUNK_ROWS x d x 8 bytes = 1.25 MiB here, 10 MiB; the whole boxed
# copy the box routes made before was the file's 30.5 MiB (3 times the bound;
# 33-66 MiB traced), and the one n-long array that remains (LDA/QDA's label
# codes, one byte a row: 0.2 MiB) fits inside it.
@pytest.mark.parametrize(
    "name",
    [
        "PrivateCovariance",
        "PrivateMean",
        "PrivateMean-adaptive",
        "LDA",
        "QDA",
        "PrivateGaussianEstimator",
        "PrivatePCA-gauss",
        "TailSensitiveCovariance",
    ],
)
def test_a_boxed_fit_on_a_memmap_allocates_per_chunk_not_per_row(name, tmp_path):
    import tracemalloc

    from dpgauss.utils._sums import CHUNK_ROWS

    n, d = 200_000, 20
    path = tmp_path / "rows.npy"
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, d))
    out[:] = np.random.default_rng(0).normal(size=(n, d)) + 3.0
    out.flush()
    del out
    X = np.load(path, mmap_mode="r")
    y = (np.arange(n) % 2).astype(np.int8)
    box = (np.full(d, -9.0), np.full(d, 9.0))
    est = _bounded_fits()[name]()
    est.set_params(bounds=box)
    label = y if name in ("LDA", "QDA") else None
    bound = 8 * CHUNK_ROWS * d * 8
    if name == "TailSensitiveCovariance":
        # The pairs' reader keeps its last four groups of PAIR_BLOCK *
        # PAIR_GROUP rows (a chunk of pairs spans group boundaries), and a
        # group read is permuted and boxed into two more copies: six groups,
        # 15.6 MiB here (17.8 MiB traced in all; the whole boxed copy the
        # reader gathered from before, 34.8 MiB).
        from dpgauss.releases._pairs import PAIR_BLOCK, PAIR_GROUP

        bound += 6 * PAIR_BLOCK * PAIR_GROUP * d * 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tracemalloc.start()
        try:
            est.fit(X, label)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak <= bound, f"{peak / 2**20:.1f} MiB"
