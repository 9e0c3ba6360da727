"""Private preprocessing: bounds without peeking, standardisation within public
bounds, ZCA whitening."""

from dpgauss.preprocessing._bounds import PrivateBounds
from dpgauss.preprocessing._scaler import PrivateStandardScaler
from dpgauss.preprocessing._whitener import PrivateWhitener

__all__ = ["PrivateBounds", "PrivateStandardScaler", "PrivateWhitener"]
