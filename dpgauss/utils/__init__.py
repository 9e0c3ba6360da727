"""Public helpers: random-state resolution and the statistical privacy audit."""

from dpgauss.utils._random import check_random_state

__all__ = ["check_random_state"]
