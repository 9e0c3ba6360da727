"""The simplest private answers bench_real holds every estimator to.

Each baseline is private, computed by the benchmark from the same public
knowledge the estimator gets (n, d, the box ``(lower, upper)``, the privacy
parameters), with its own seeded noise. Neighbouring data sets differ in one
replaced row. Privacy is one of ``{"epsilon": e}`` (pure DP: Laplace noise),
``{"epsilon": e, "delta": d}`` (converted to the largest rho-zCDP that implies
it, then Gaussian noise) or ``{"rho": r}`` (Gaussian noise).

The box's public affine map ``z = clip((x - c) / h, -1, 1)`` (c the centre, h
the half-widths) puts every row in [-1, 1]^d; the baselines release in those
units and map back, which is post-processing.
"""

import math

import numpy as np


def box_frame(lower, upper):
    """Centre and half-widths of the box (public)."""
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    return (lower + upper) / 2, (upper - lower) / 2


def to_box(X, lower, upper):
    """Rows in box units, clipped into [-1, 1]^d (the public affine map)."""
    c, h = box_frame(lower, upper)
    return np.clip((X - c) / h, -1.0, 1.0)


def zcdp_of(privacy):
    """rho of a zCDP privacy, or the largest rho implying (epsilon, delta)-DP.

    rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP (Bun and
    Steinke 2016, Prop. 1.3); solving for rho gives the conversion.
    """
    if "rho" in privacy:
        return privacy["rho"]
    eps, delta = privacy["epsilon"], privacy["delta"]
    L = math.log(1 / delta)
    return (math.sqrt(L + eps) - math.sqrt(L)) ** 2


def noise(l1, l2, size, privacy, share, rng):
    """Noise for a release of l1 / l2 sensitivity at ``share`` of the budget.

    Pure epsilon: Laplace(l1 / (share epsilon)) per entry, (share epsilon)-DP.
    Otherwise: Gaussian(l2 / sqrt(2 share rho)) per entry, (share rho)-zCDP.
    Shares of one fit add up to at most 1 (basic composition).
    """
    if "delta" not in privacy and "epsilon" in privacy:
        return rng.laplace(0.0, l1 / (share * privacy["epsilon"]), size)
    rho = zcdp_of(privacy) * share
    return rng.normal(0.0, l2 / math.sqrt(2 * rho), size)


def box_mean(X, lower, upper, privacy, rng, share=1.0):
    """Per-coordinate clipped mean with noise, truncated to the box.

    In box units each coordinate of the clipped mean moves by at most 2 / n
    when a row is replaced: l1 sensitivity 2 d / n (Laplace at epsilon / d per
    coordinate, the same thing), l2 sensitivity 2 sqrt(d) / n. Truncating to
    [-1, 1] and mapping back are post-processing.
    """
    n, d = X.shape
    Z = to_box(X, lower, upper)
    m = Z.mean(axis=0) + noise(2 * d / n, 2 * math.sqrt(d) / n, d, privacy, share, rng)
    c, h = box_frame(lower, upper)
    return c + h * np.clip(m, -1.0, 1.0)


def box_moments(X, lower, upper, privacy, rng, share=1.0):
    """Private per-coordinate mean and variance with the box (half the share each).

    The mean is ``box_mean``. The second moment of the box-unit coordinates,
    each z_j**2 in [0, 1], moves by at most 1 / n per coordinate: l1
    sensitivity d / n, l2 sensitivity sqrt(d) / n. The variance
    ``clip(s2 - m**2, 0, 1)`` in box units (times h**2) is post-processing:
    at most the box's own half-width squared.
    """
    n, d = X.shape
    c, h = box_frame(lower, upper)
    mean = box_mean(X, lower, upper, privacy, rng, share / 2)
    Z = to_box(X, lower, upper)
    s2 = (Z**2).mean(axis=0) + noise(
        d / n, math.sqrt(d) / n, d, privacy, share / 2, rng
    )
    m = (mean - c) / h
    var = np.clip(np.clip(s2, 0, 1) - m**2, 0.0, 1.0)
    return mean, var * h**2


def diagonal_covariance(X, lower, upper, privacy, rng):
    """Covariance baseline with a box: the private variances on the diagonal.

    ``box_moments`` at the whole budget (sensitivities there); the zero matrix
    is the baseline without a box and costs nothing.
    """
    _, var = box_moments(X, lower, upper, privacy, rng)
    return np.diag(var)


def variance_axes(X, lower, upper, privacy, rng, k):
    """PCA baseline: the k coordinate axes of largest private variance.

    ``box_moments`` at the whole budget; ordering the released variances is
    post-processing.
    """
    _, var = box_moments(X, lower, upper, privacy, rng)
    order = np.argsort(-var, kind="stable")[:k]
    return np.eye(X.shape[1])[order]


def majority_class(y, classes, privacy, rng):
    """Classifier baseline: the class of largest private count.

    Replacing one row moves two counts by one: l1 sensitivity 2, l2
    sensitivity sqrt(2). The argmax is post-processing.
    """
    counts = np.array([(y == k).sum() for k in classes], float)
    counts += noise(2.0, math.sqrt(2.0), len(classes), privacy, 1.0, rng)
    return classes[int(np.argmax(counts))]


def public_mixture(X_public, n_components, seed):
    """Mixture baseline with public rows: scikit-learn's fit on them alone.

    Reads no private row: free.
    """
    from sklearn.mixture import GaussianMixture

    k = max(1, min(n_components, X_public.shape[0] // 2))
    return GaussianMixture(k, reg_covar=1e-3, random_state=seed).fit(X_public)


def aggregate_centre(p):
    """Aggregate baseline: the clipping centre, the origin of the statistic.

    A fixed public value: free (zero sensitivity).
    """
    return np.zeros(p)
