"""Private covariance estimators."""

from dpgauss.covariance._private_covariance import PrivateCovariance

__all__ = ["PrivateCovariance"]
