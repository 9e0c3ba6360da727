"""Private preprocessing: standardisation within public bounds."""

from dpgauss.preprocessing._scaler import PrivateStandardScaler

__all__ = ["PrivateStandardScaler"]
