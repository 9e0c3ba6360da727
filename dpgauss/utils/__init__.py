"""Public helpers: random-state resolution."""

from dpgauss.utils._random import check_generator, fit_generator

__all__ = ["check_generator", "fit_generator"]
