"""Data for the covariance benchmarks: the DLY 2022 synthetic generator and digits.

``zipf_data`` follows the authors' ``gen_synthetic_data_fix`` (spec section 4.2):
X = Z U with Z ~ N(0, I), U ~ Uniform(0, 1)^{d x d}, rows centered, then the rows
split into N contiguous Zipf buckets (bucket k gets a share proportional to
1/(k+1)^3) and every row of bucket k rescaled to norm exactly 2^(k+1-N). The
benchmark estimates the second moment of these rows (the paper's target).
"""

import numpy as np


def zipf_data(n, d, n_buckets, seed, s=3.0):
    """Return the (n, d) synthetic dataset of DLY 2022 section 7.1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) @ rng.uniform(0.0, 1.0, (d, d))
    X -= X.mean(axis=0)
    weights = 1.0 / np.arange(1, n_buckets + 1) ** s
    edges = np.floor(n * np.concatenate([[0.0], np.cumsum(weights / weights.sum())]))
    edges[-1] = n
    norms = np.empty(n)
    for k in range(n_buckets):
        norms[int(edges[k]) : int(edges[k + 1])] = 2.0 ** (k + 1 - n_buckets)
    X *= (norms / np.linalg.norm(X, axis=1))[:, None]
    return X


def digits_scaled():
    """sklearn digits (n=1797, d=64) scaled as the paper scales MNIST: /(16 sqrt(d)).

    Every row then has norm at most 1 (pixels lie in [0, 16]); the scale is public.
    """
    from sklearn.datasets import load_digits

    X = load_digits().data
    return X / (16.0 * np.sqrt(X.shape[1]))
