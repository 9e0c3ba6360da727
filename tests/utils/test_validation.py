"""Public-bound checks."""

import math

import pytest

from dpgauss.utils.validation import check_data_norm


def test_check_data_norm():
    assert check_data_norm(2) == 2.0
    with pytest.raises(ValueError, match="data_norm is required"):
        check_data_norm(None)
    with pytest.raises(ValueError, match="finite number > 0"):
        check_data_norm(math.inf)
