"""
Subsample and aggregate: a private linear regression against rho
================================================================

:class:`~dpgauss.SubsampleAggregate` makes a private version of any
scikit-learn estimator whose result is a vector (Ashtiani and Liaw 2022): the
rows are split at random into groups, a clone is fitted on each group, and the
groups' results are aggregated privately (by default a private median, a
private radius, then a clipped noisy mean). This example wraps
:class:`~sklearn.linear_model.LinearRegression` and compares the coefficients'
error with the non-private fit on all rows, at budgets rho from 0.001 to 1.

Privacy: every fit is rho-zCDP with respect to replacing one row, whatever the
wrapped estimator does; n, d, the number of groups and the parameters are
public. The true coefficients are known to the simulation only.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression

from dpgauss import SubsampleAggregate

rng = np.random.default_rng(0)
n, d = 30000, 3
true_coef = np.array([1.0, -2.0, 0.5])


def draw():
    X = rng.normal(size=(n, d))
    return X, X @ true_coef + rng.normal(size=n)


# %%
# Two data sets and one noise draw each per budget; medians are plotted. Only
# ``coef_`` is released (the default ``statistic``). The smallest budgets are
# refused by default (too few groups for the private searches, predicted from
# public values before anything is spent); ``on_useless="warn"`` fits them
# anyway, with a warning, to draw the whole curve.
rhos = np.array([0.001, 0.01, 0.1, 1.0])
n_repeats = 2
datasets = [draw() for _ in range(n_repeats)]
private = np.empty((len(rhos), n_repeats))
for i, rho in enumerate(rhos):
    for seed, (X, y) in enumerate(datasets):
        est = SubsampleAggregate(
            LinearRegression(), rho=rho, random_state=seed, on_useless="warn"
        )
        private[i, seed] = np.linalg.norm(est.fit(X, y).statistic_ - true_coef)
baseline = np.median(
    [
        np.linalg.norm(LinearRegression().fit(X, y).coef_ - true_coef)
        for X, y in datasets
    ]
)
print(f"groups: {est.n_groups_} of {est.group_size_} rows")
for rho, err in zip(rhos, np.median(private, axis=1), strict=True):
    print(f"rho = {rho:<5g} l2 error of coef_ {err:.4f}")
print(f"non-private LinearRegression: {baseline:.4f}")

# %%
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.plot(
    rhos,
    np.median(private, axis=1),
    marker="o",
    label="SubsampleAggregate(LinearRegression())",
)
ax.axhline(
    baseline,
    color="black",
    linestyle="--",
    label="LinearRegression on all rows (non-private)",
)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("rho (zCDP)")
ax.set_ylabel("l2 error of the coefficients")
ax.set_title(f"n = {n}, d = {d}")
ax.legend(fontsize="small")
fig.tight_layout()

# %%
# Each group fits only a few rows, so even with no noise the aggregate is a
# mean of many small, noisy fits, and the private error levels off above the
# non-private one: subsample and aggregate trades statistical efficiency for a
# guarantee that holds whatever the wrapped estimator does. It needs thousands
# of groups to be accurate at small budgets; with fewer it refuses
# (:class:`~dpgauss.exceptions.UselessFitError`) before spending anything.
plt.show()
