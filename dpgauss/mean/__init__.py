"""Private means with no a-priori bounds."""

from dpgauss.mean._mean import PrivateMean

__all__ = ["PrivateMean"]
