"""Model selection that is honest about privacy.

A score computed on a private test fold is a release. This package provides:

* :func:`make_private_scorer` (:class:`PrivateScorer`): a ``scoring=`` for
  scikit-learn's searches and cross-validation that pays for every score from a
  :class:`~dpgauss.PrivacyBudget` and releases it with calibrated noise
  (:class:`PrivateR2Scorer` for a regressor's R^2);
* :func:`search_cost`, :func:`cross_validation_cost` (:class:`SearchCost`): the
  full price of a search or cross-validation, computed before it runs, and
  :func:`fit_cost`, that of one fit of an estimator or a pipeline;
* :func:`check_search_budget`, :func:`check_cross_validation_budget`: refuse,
  up front, a search the budget cannot pay for, and warn
  (:class:`~dpgauss.exceptions.PrivacyLeakWarning`) when its scores are not
  private.

This package never imports the estimator packages (``dpgauss.covariance``, ...):
it finds private steps by duck typing (a ``planned_costs`` method).
"""

from dpgauss.model_selection._cost import SearchCost
from dpgauss.model_selection._pricing import (
    check_cross_validation_budget,
    check_search_budget,
    cross_validation_cost,
    fit_cost,
    search_cost,
)
from dpgauss.model_selection._r2 import PrivateR2Scorer
from dpgauss.model_selection._scorer import PrivateScorer, make_private_scorer

__all__ = [
    "PrivateR2Scorer",
    "PrivateScorer",
    "SearchCost",
    "check_cross_validation_budget",
    "check_search_budget",
    "cross_validation_cost",
    "fit_cost",
    "make_private_scorer",
    "search_cost",
]
