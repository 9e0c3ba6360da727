"""check_generator: the one entry point for randomness."""

import numpy as np
import pytest

from dpgauss.utils import check_generator


def test_int_is_reproducible():
    a = check_generator(5).standard_normal(3)
    b = check_generator(5).standard_normal(3)
    np.testing.assert_array_equal(a, b)


def test_none_uses_fresh_entropy():
    a = check_generator(None).standard_normal(3)
    b = check_generator(None).standard_normal(3)
    assert not np.array_equal(a, b)


def test_generator_passes_through_and_randomstate_seeds_one():
    rng = np.random.default_rng(0)
    assert check_generator(rng) is rng
    legacy = np.random.RandomState(0)
    assert isinstance(check_generator(legacy), np.random.Generator)


@pytest.mark.parametrize("bad", [-1, 1.5, "seed", True])
def test_bad_seeds(bad):
    with pytest.raises(ValueError, match="random_state must be"):
        check_generator(bad)
