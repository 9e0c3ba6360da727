"""
One budget for a whole search, priced before it runs
====================================================

Model selection reads private data twice: every candidate is fitted on a
training fold, and scored on a test fold. With dpgauss both are releases
charged to one :class:`~dpgauss.PrivacyBudget`: the fits by the private
estimators, and the scores by a private scorer
(:func:`~dpgauss.model_selection.make_private_scorer`), which clips each row's
score to public bounds and adds calibrated noise to their mean. A whole search
is priced from public values before it runs
(:func:`~dpgauss.model_selection.check_search_budget`), and refused, with
nothing spent, when the budget cannot pay for it.

This example runs a :func:`~sklearn.model_selection.validation_curve` and then
a :class:`~sklearn.model_selection.GridSearchCV` over the budget of a
:class:`~sklearn.pipeline.Pipeline` (:class:`~dpgauss.PrivateStandardScaler`
then :class:`~dpgauss.PrivateCovariance`) on one budget, prints the ledger,
and shows a third search refused. See :doc:`/user_guide/model_selection` for
what a search with non-private scores would leak.

Privacy: the whole example is rho-zCDP with respect to replacing one row, at
the total the ledger records; n, d, the public boxes, ``data_norm``, the
scorer's bounds and the folds (:class:`~sklearn.model_selection.KFold`, a
function of n only) are public.
"""

# %%
# Data, public knowledge and the pipeline
# ---------------------------------------
# Four correlated features in their own units, each with a public box (its
# possible range). The scaler standardises with a private mean and scale, so
# the covariance can use a public ``data_norm`` in standard units.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import multivariate_normal
from sklearn.model_selection import GridSearchCV, KFold, validation_curve
from sklearn.pipeline import Pipeline

from dpgauss import PrivacyBudget, PrivateCovariance, PrivateStandardScaler
from dpgauss.exceptions import BudgetExceededError, UtilityWarning
from dpgauss.model_selection import (
    check_search_budget,
    make_private_scorer,
    search_cost,
)

# The sweep includes small budgets on purpose: there the scaler's
# UtilityWarning (released variances within twice their noise) fires at each
# fit; the figure shows the same thing, so it is silenced here.
warnings.filterwarnings("ignore", category=UtilityWarning)

rng = np.random.default_rng(0)
true_sd = np.array([12.0, 9.0, 15.0, 0.1])
correlation = np.array(
    [
        [1.0, 0.5, 0.3, 0.0],
        [0.5, 1.0, 0.2, 0.1],
        [0.3, 0.2, 1.0, -0.3],
        [0.0, 0.1, -0.3, 1.0],
    ]
)
true_cov = correlation * np.outer(true_sd, true_sd)
lower = np.array([0.0, 100.0, 0.0, 0.0])
upper = np.array([120.0, 230.0, 300.0, 1.0])
true_mean = np.array([45.0, 170.0, 40.0, 0.3])
X = rng.multivariate_normal(true_mean, true_cov, size=9000)
X = np.clip(X, lower, upper)  # the population lives in the boxes

budget = PrivacyBudget(rho=2.0)
pipeline = Pipeline(
    [
        (
            "scale",
            PrivateStandardScaler(
                bounds=(lower, upper), rho=0.02, budget=budget, random_state=0
            ),
        ),
        (
            "cov",
            PrivateCovariance(rho=0.05, data_norm=6.0, budget=budget, random_state=0),
        ),
    ]
)


# %%
# The private scorer
# ------------------
# The score of a test row is its log-likelihood under the fitted model, in the
# original units: the pipeline's ``score_samples`` is the log-density of the
# standardised row, and dividing by the scales adds ``-sum(log(scale_))``. Each
# value depends on its own row and the released model only, as the scorer
# requires. It is clipped to public bounds: in these units the log-density of
# a plausible model is at most about -8, and rows scored below -30 count as
# -30. Each call charges rho = 0.01; its noise has standard deviation
# ``scorer.noise_scale(n_test)``.
def log_likelihood(model, X_test, y=None):
    return model.score_samples(X_test) - np.log(model["scale"].scale_).sum()


scorer = make_private_scorer(
    budget=budget, rho=0.01, bounds=(-30.0, -5.0), score=log_likelihood, random_state=0
)
cv = KFold(n_splits=3, shuffle=True, random_state=0)
print(f"score noise on a fold of 3000 rows: sd {scorer.noise_scale(3000):.3f}")

# %%
# A validation curve over the covariance's budget
# -----------------------------------------------
# ``validation_curve`` scores the training folds as well; it costs what the
# same ``GridSearchCV`` with ``refit=False`` and ``return_train_score=True``
# costs, so that is what is priced and checked, just before it runs. Pricing
# never fits a private step (that would spend), so it is told how many columns
# reach the covariance: the scaler keeps all four (``n_features``).
rhos = [0.001, 0.01, 0.1]
as_search = GridSearchCV(
    pipeline,
    {"cov__rho": rhos},
    cv=cv,
    scoring=scorer,
    refit=False,
    return_train_score=True,
    error_score="raise",
)
curve_cost = check_search_budget(as_search, X, n_features=4)
print(
    f"validation curve: {curve_cost.n_fits} fits, {curve_cost.n_scores} scores, "
    f"{curve_cost.total(budget)}"
)
train_scores, test_scores = validation_curve(
    pipeline,
    X,
    None,  # no targets
    param_name="cov__rho",
    param_range=rhos,
    cv=cv,
    scoring=scorer,
    error_score="raise",
)
print(f"spent so far: {budget.spent()}")

# Each fold's score carries the scorer's noise: the mean of three test folds
# has standard deviation ``noise_scale(3000) / sqrt(3)`` (the error bars). The
# true model's mean log-likelihood on the rows, known to the simulation only
# and not a release, is the reference.
reference = multivariate_normal(true_mean, true_cov).logpdf(X).mean()
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.errorbar(
    rhos,
    test_scores.mean(axis=1),
    yerr=scorer.noise_scale(3000) / np.sqrt(3),
    marker="o",
    capsize=3,
    label="test folds",
)
ax.plot(
    rhos, train_scores.mean(axis=1), marker="s", linestyle="--", label="training folds"
)
ax.axhline(reference, color="black", linestyle=":", label="true model")
ax.set_xscale("log")
ax.set_xlabel("rho of PrivateCovariance (the scaler: rho = 0.02)")
ax.set_ylabel("private mean log-likelihood per row")
ax.set_title("validation_curve with a private scorer (mean of 3 folds)")
ax.legend()
fig.tight_layout()

# %%
# A grid search over how to split a fit's budget
# ----------------------------------------------
# Each candidate spends rho = 0.1 per fit, split differently between the
# scaler and the covariance. The refit of the best candidate is priced at the
# dearest candidate (the winner is not known in advance). Choosing the winner
# from private scores is post-processing: it costs nothing more.
splits = [(0.01, 0.09), (0.03, 0.07), (0.05, 0.05)]  # (scaler, covariance)
search = GridSearchCV(
    pipeline,
    [{"scale__rho": [a], "cov__rho": [b]} for a, b in splits],
    cv=cv,
    scoring=scorer,
    error_score="raise",
)
cost = check_search_budget(search, X, n_features=4)
print(f"grid search: {cost.n_fits} fits, {cost.n_scores} scores, {cost.total(budget)}")
search.fit(X)
print("private mean test scores:", np.round(search.cv_results_["mean_test_score"], 3))
print("best:", search.best_params_)

# The refitted pipeline is a private release: its covariance in the original
# units is free post-processing.
best = search.best_estimator_
scale = best["scale"].scale_
with np.printoptions(precision=2, suppress=True):
    print("private covariance, original units:")
    print(best["cov"].covariance_ * np.outer(scale, scale))
    print("true covariance:")
    print(true_cov)

# %%
# The ledger
# ----------
# Every fit and every score is an entry, recorded before its release was
# computed (one line per fit here; ``per_event=True`` lists each release).
lines = budget.format_ledger().splitlines()
print("\n".join([*lines[:6], "...", *lines[-4:]]))
print(
    f"priced {curve_cost.total(budget)} + {cost.total(budget)}, spent {budget.spent()}"
)

# %%
# A search the budget cannot pay for is refused before anything is spent.
before = budget.spent()
try:
    check_search_budget(search, X, n_features=4)
except BudgetExceededError as error:
    print("refused:", error)
assert budget.spent() == before
print(f"spent: {budget.spent()}, remaining: {budget.remaining()}")
print(
    f"a further search would need {search_cost(search, X, n_features=4).total(budget)}"
)

# %%
# The validation curve separates rho = 0.001, whose covariance is mostly
# noise, from the others; between 0.01 and 0.1 the gain is within the scores'
# noise. The grid search's candidates also differ by less than that noise, so
# its choice among them is nearly a coin toss: a finer comparison needs more
# rows or a dearer scorer. What the search does guarantee is that its scores,
# its choice and the refitted model together cost exactly what the ledger
# records, and no more than the budget.
plt.show()
