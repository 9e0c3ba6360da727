"""The only module that imports private scikit-learn API.

scikit-learn's ``_fit_context`` and ``_param_validation`` are private but are what
every scikit-learn estimator uses; keeping them behind this one module means a
scikit-learn release that moves them needs one fix here.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "_fit_context",
    "validate_parameter_constraints",
    "validate_params",
]
