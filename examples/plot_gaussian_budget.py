"""
Mean and Gaussian with no bounds: error against the budget
==========================================================

:class:`~dpgauss.PrivateMean` and :class:`~dpgauss.PrivateGaussianEstimator`
need no public bound at all: they find the data's location and scale privately
(a noisy binary search over the floating-point numbers), learn a whitening
frame, and release the mean (and the covariance) in it. This example fits them
with no hints on Gaussian rows whose mean is 10,000 away from the origin and
whose covariance has condition number 100, at budgets rho from 0.003 to 3, and
plots their errors in the data's own geometry next to the non-private sample
mean and covariance.

Privacy: every fit is rho-zCDP with respect to replacing one row; only n and d
are public. The errors use the true parameters, known to the simulation only.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np

from dpgauss import PrivateGaussianEstimator, PrivateMean

rng = np.random.default_rng(0)
n, d = 5000, 5
rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
true_cov = rotation @ np.diag(np.geomspace(1.0, 100.0, d)) @ rotation.T
direction = rng.normal(size=d)
true_mean = 1e4 * direction / np.linalg.norm(direction)
# The true covariance's inverse square root: errors are measured after it, so
# that every direction counts as much as the data's spread along it.
values, vectors = np.linalg.eigh(true_cov)
whiten = vectors @ np.diag(values**-0.5) @ vectors.T


def mean_error(mean):
    """Mahalanobis distance to the true mean."""
    return np.linalg.norm(whiten @ (mean - true_mean))


def covariance_error(covariance):
    """Frobenius distance of the whitened covariance to the identity."""
    return np.linalg.norm(whiten @ covariance @ whiten - np.eye(d))


# %%
# Three data sets and one noise draw each per budget; medians are plotted.
rhos = np.array([0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0])
n_repeats = 3
datasets = [
    rng.multivariate_normal(true_mean, true_cov, size=n) for _ in range(n_repeats)
]
results = {
    key: np.empty((len(rhos), n_repeats))
    for key in ("PrivateMean", "PrivateGaussianEstimator mean", "covariance")
}
warned = {}  # the warnings issued, one of each kind, with the budgets
for i, rho in enumerate(rhos):
    for seed, X in enumerate(datasets):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # The smallest budgets are refused by default (their searches are
            # predicted to go astray); "warn" fits them anyway to draw the curve.
            mean = PrivateMean(rho=rho, random_state=seed, on_useless="warn")
            mean.fit(X)
            gaussian = PrivateGaussianEstimator(
                rho=rho, random_state=seed, on_useless="warn"
            ).fit(X)
        for w in caught:
            name = f"{w.category.__name__} ({str(w.message).split(':')[0]})"
            kind = warned.setdefault(name, [set(), str(w.message)])
            kind[0].add(float(rho))
        results["PrivateMean"][i, seed] = mean_error(mean.mean_)
        results["PrivateGaussianEstimator mean"][i, seed] = mean_error(gaussian.mean_)
        results["covariance"][i, seed] = covariance_error(gaussian.covariance_)
mean_baseline = np.median([mean_error(X.mean(axis=0)) for X in datasets])
cov_baseline = np.median([covariance_error(np.cov(X.T)) for X in datasets])

for key, err in results.items():
    print(f"{key:30s}", " ".join(f"{e:8.3f}" for e in np.median(err, axis=1)))
print(f"non-private mean, covariance: {mean_baseline:.3f}, {cov_baseline:.3f}")
for name, (at, message) in warned.items():
    print(f"{name} at rho = {sorted(at)}, e.g.:\n  {message}")

# %%
# Two panels: the mean (both estimators) and the covariance.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
for key in ("PrivateMean", "PrivateGaussianEstimator mean"):
    left.plot(rhos, np.median(results[key], axis=1), marker="o", label=key)
left.axhline(mean_baseline, color="black", linestyle="--", label="non-private")
left.set_ylabel("Mahalanobis error of the mean")
right.plot(
    rhos,
    np.median(results["covariance"], axis=1),
    marker="o",
    color="tab:green",
    label="PrivateGaussianEstimator",
)
right.axhline(cov_baseline, color="black", linestyle="--", label="non-private")
right.set_ylabel("whitened Frobenius error of the covariance")
for ax in (left, right):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rho (zCDP)")
    ax.legend(fontsize="small")
fig.suptitle(f"No hints: mean 1e4 away, condition number 100, n = {n}, d = {d}")
fig.tight_layout()

# %%
# With no bound at all, :class:`~dpgauss.PrivateMean` is within about 20% of
# the sampling error from rho = 0.01 on, although the mean lies 10,000 from the
# origin. :class:`~dpgauss.PrivateGaussianEstimator` splits its budget between
# the mean and the covariance, so its mean lags a little, and its covariance
# needs rho of about 0.1. At rho = 0.003 both estimators, by default, refuse
# before spending anything (:class:`~dpgauss.exceptions.UselessFitError`; with
# ``on_useless="warn"``, as here, a
# :class:`~dpgauss.exceptions.UtilityWarning`): at this n and budget the
# private search for the data's scale may go astray. The
# sampling error of a median of three is itself noisy, hence the private points
# slightly below the dashed line.
plt.show()
