"""Privacy accounting: typed costs, conversions and the shared PrivacyBudget."""

from dpgauss.accounting._budget import LedgerEvent, PrivacyBudget
from dpgauss.accounting._costs import (
    ZCDP,
    ApproxDP,
    PureDP,
    approx_to_zcdp,
    pure_to_zcdp,
    zcdp_to_approx,
)

__all__ = [
    "ZCDP",
    "ApproxDP",
    "LedgerEvent",
    "PrivacyBudget",
    "PureDP",
    "approx_to_zcdp",
    "pure_to_zcdp",
    "zcdp_to_approx",
]
