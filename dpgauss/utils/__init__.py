"""Public helpers: random-state resolution and the statistical privacy audit."""

from dpgauss.utils._random import check_generator, fit_generator

__all__ = ["check_generator", "fit_generator"]
