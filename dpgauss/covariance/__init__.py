"""Private covariance estimators (Dong, Liang and Yi 2022) and the private
elliptic envelope built on them."""

from dpgauss.covariance._elliptic_envelope import PrivateEllipticEnvelope
from dpgauss.covariance._private_covariance import PrivateCovariance
from dpgauss.covariance._tail_sensitive import TailSensitiveCovariance

__all__ = ["PrivateCovariance", "PrivateEllipticEnvelope", "TailSensitiveCovariance"]
