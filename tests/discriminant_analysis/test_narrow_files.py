"""LDA and QDA read a float32 or integer memory-mapped file chunk by chunk
(dpgauss.base.CHUNKED_DTYPES) and release what its float64 copy gives."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpgauss import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)


def _fits(d):
    box = (-40.0 * np.ones(d), 40.0 * np.ones(d))
    kw = {"classes": [0, 1], "rho": 0.5, "random_state": 0}
    return [
        PrivateLinearDiscriminantAnalysis(bounds=box, **kw),
        PrivateLinearDiscriminantAnalysis(data_norm=60.0, **kw),
        PrivateQuadraticDiscriminantAnalysis(bounds=box, **kw),
        PrivateQuadraticDiscriminantAnalysis(data_norm=60.0, **kw),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_a_narrow_memmap_is_read_in_chunks_and_released_as_its_float64_copy(
    tmp_path, dtype, assert_same_fit
):
    rng = np.random.default_rng(0)
    n, d = 20_000, 4  # three canonical chunks and a part
    y = (np.arange(n) % 2).astype(np.int8)
    X = rng.standard_normal((n, d)) * [1.0, 2.0, 3.0, 0.5] * 10 + 3.0 * y[:, None]
    np.save(tmp_path / "narrow.npy", X.astype(dtype))
    np.save(tmp_path / "wide.npy", X.astype(dtype).astype(np.float64))
    narrow = np.load(tmp_path / "narrow.npy", mmap_mode="r")
    wide = np.load(tmp_path / "wide.npy", mmap_mode="r")
    for est in _fits(d):
        assert est._validate_rows(narrow) is narrow  # kept, not converted
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a, b = clone(est).fit(narrow, y), clone(est).fit(wide, y)
        assert "means_" in assert_same_fit(a, b)
    np.testing.assert_array_equal(narrow, X.astype(dtype))
