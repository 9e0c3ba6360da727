"""
Cross-validating a private classifier on one budget
===================================================

A cross-validation reads every private row twice: once in the fits, once in
the scores. Both are releases. This example prices a whole cross-validation of
:class:`~dpgauss.PrivateLinearDiscriminantAnalysis` before it runs, splits
without reading the labels, scores each fold with a private accuracy, and
draws everything from one :class:`~dpgauss.PrivacyBudget`, whose ledger says
afterwards what was spent.

Privacy: each fit is rho-zCDP with respect to replacing one training row (its
label included); each score is rho-zCDP with respect to replacing one test
row; the folds are a public function of the row index (``KFold`` with
shuffling: no label read), so the whole run composes to the sum the ledger
records. n, d, ``data_norm``, the ``classes`` and the scores' bounds (0, 1)
are public. See :doc:`/user_guide/model_selection`.
"""

# %%
# Data and public knowledge
# -------------------------
# scikit-learn's bundled digits: 8 x 8 pixels with values 0 to 16. Divided by
# 16, every row has norm at most 8 (the format's bound, not the rows'), and
# the ten classes are public.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import KFold, cross_val_score

from dpgauss import PrivacyBudget, PrivateLinearDiscriminantAnalysis
from dpgauss.model_selection import (
    check_cross_validation_budget,
    make_private_scorer,
)

X, y = load_digits(return_X_y=True)
X = X / 16.0

# %%
# One budget, priced before anything runs
# ---------------------------------------
# Five folds at each of three budgets per fit, each fold scored once. The
# folds come from ``KFold(shuffle=True)``: a classifier's default ``cv=5`` is a
# ``StratifiedKFold``, which reads the labels to form the folds (dpgauss
# warns, ``PrivacyLeakWarning``). ``check_cross_validation_budget`` raises
# before any spend when the budget cannot pay for all of it.
budget = PrivacyBudget(rho=20.0)
cv = KFold(n_splits=5, shuffle=True, random_state=0)
accuracy = make_private_scorer("accuracy", budget=budget, rho=0.05, random_state=0)
rhos = [0.1, 0.5, 2.0]
for rho in rhos:
    clf = PrivateLinearDiscriminantAnalysis(
        classes=range(10), data_norm=8.0, rho=rho, budget=budget, random_state=0
    )
    cost = check_cross_validation_budget(clf, X, y, cv=cv, scoring=accuracy)
    print(
        f"rho={rho}: {cost.n_fits} fits and {cost.n_scores} scores cost "
        f"{cost.total(budget)}"
    )

# %%
# The cross-validation
# --------------------
# Each score is the fold's accuracy plus Gaussian noise of sd about
# ``1 / (n_test sqrt(2 x 0.05))`` = 0.009 at 360 test rows, clipped to [0, 1].
scores = {}
for rho in rhos:
    clf = PrivateLinearDiscriminantAnalysis(
        classes=range(10), data_norm=8.0, rho=rho, budget=budget, random_state=0
    )
    scores[rho] = cross_val_score(clf, X, y, cv=cv, scoring=accuracy)
    print(
        f"rho={rho}: private accuracy {scores[rho].mean():.3f} "
        f"(folds {np.round(scores[rho], 3)})"
    )
print(f"spent {budget.spent()} of {budget.total}")
print(budget.format_ledger().splitlines()[-1])

# %%
# Accuracy against the budget per fit
# -----------------------------------
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.boxplot([scores[r] for r in rhos])
ax.set_xticks(range(1, len(rhos) + 1), [str(r) for r in rhos])
ax.set_xlabel("rho per fit")
ax.set_ylabel("private accuracy (5 folds)")
ax.set_title("PrivateLinearDiscriminantAnalysis on digits")
fig.tight_layout()
plt.show()
