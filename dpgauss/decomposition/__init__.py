"""Private matrix decompositions: principal components of a private covariance."""

from dpgauss.decomposition._pca import PrivatePCA

__all__ = ["PrivatePCA"]
