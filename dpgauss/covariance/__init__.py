"""Private covariance estimators (Dong, Liang and Yi 2022)."""

from dpgauss.covariance._private_covariance import PrivateCovariance
from dpgauss.covariance._tail_sensitive import TailSensitiveCovariance

__all__ = ["PrivateCovariance", "TailSensitiveCovariance"]
