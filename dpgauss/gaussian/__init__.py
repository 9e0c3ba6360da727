"""Private Gaussian distributions with no a-priori bounds."""

from dpgauss.gaussian._gaussian import PrivateGaussianEstimator

__all__ = ["PrivateGaussianEstimator"]
