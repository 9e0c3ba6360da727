"""Private preprocessing: standardisation within public bounds, ZCA whitening."""

from dpgauss.preprocessing._scaler import PrivateStandardScaler
from dpgauss.preprocessing._whitener import PrivateWhitener

__all__ = ["PrivateStandardScaler", "PrivateWhitener"]
