"""Private product distributions on {0,1}^d."""

from dpgauss.product._product import PrivateProductDistribution

__all__ = ["PrivateProductDistribution"]
