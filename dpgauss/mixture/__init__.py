"""Private Gaussian mixtures."""

from dpgauss.mixture._public_private import (
    PublicPrivateGMM,
    SeparationError,
    SeparationWarning,
)

__all__ = ["PublicPrivateGMM", "SeparationError", "SeparationWarning"]
