"""Private linear models."""

from dpgauss.linear_model._linear import PrivateLinearRegression

__all__ = ["PrivateLinearRegression"]
