"""Privacy accounting: typed costs, conversions, parameters and PrivacyBudget."""

from dpgauss.accounting._budget import LedgerEvent, PrivacyBudget
from dpgauss.accounting._costs import (
    ZCDP,
    ApproxDP,
    PureDP,
    approx_to_zcdp,
    pure_to_zcdp,
    zcdp_to_approx,
)
from dpgauss.accounting._parameters import resolve_privacy, split_cost

__all__ = [
    "ZCDP",
    "ApproxDP",
    "LedgerEvent",
    "PrivacyBudget",
    "PureDP",
    "approx_to_zcdp",
    "pure_to_zcdp",
    "resolve_privacy",
    "split_cost",
    "zcdp_to_approx",
]
