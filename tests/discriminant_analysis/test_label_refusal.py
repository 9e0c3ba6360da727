"""Whether a fit is refused must not depend on which public classes occur.

Labels are checked before the spend against the public ``classes``; a label
outside them is refused (input validation the docs describe). Labels inside
them must all be accepted alike: an error that fires for some valid label
sets and not others is computed on private data, and tells whoever sees it
something about one row. With ``classes=[0.5, 1.0]``, rows all labelled 1.0
fit, while the same rows with one label 0.5 are refused as "continuous"
(scikit-learn's ``type_of_target`` read the labels' values, not the
classes); the check now runs only on labels outside the classes.
"""

import numpy as np
import pytest

from dpgauss import PrivacyBudget
from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "cls", [PrivateLinearDiscriminantAnalysis, PrivateQuadraticDiscriminantAnalysis]
)
def test_valid_labels_are_accepted_whichever_occur(cls):
    X = np.random.default_rng(0).normal(size=(2000, 2))
    neighbours = [np.ones(2000), np.r_[np.ones(1999), 0.5]]
    spent = []
    for y in neighbours:
        budget = PrivacyBudget(rho=10.0)
        cls(
            classes=[0.5, 1.0],
            data_norm=5.0,
            rho=1.0,
            budget=budget,
            random_state=0,
            on_useless="warn",
        ).fit(X, y)
        spent.append(len(budget.ledger()))
    assert spent[0] == spent[1] > 0
