"""Without hints, columns in units nine decades apart keep their precision."""

import warnings

import numpy as np
import pytest

from dpgauss import PrivateGaussianEstimator
from dpgauss.exceptions import UtilityWarning
from dpgauss.utils._linalg import model_parts


def _mixed_units(n=2000, d=6, seed=102):
    # bench_real's scales_1e-3_1e6: correlated Gaussian columns whose sds span
    # 1e-3 to 1e6, centred at 5.
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, d)) / np.sqrt(d) + np.eye(d)
    return (rng.standard_normal((n, d)) @ A) * np.logspace(-3, 6, d) + 5.0


def _relative_error(C, X):
    # The covariance's error in standardised units (bench_real's measure).
    S = np.cov(X, rowvar=False, bias=True)
    D = 1.0 / X.std(axis=0)
    scaled = D[:, None] * (C - S) * D[None, :]
    return np.linalg.norm(scaled) / np.linalg.norm(D[:, None] * S * D[None, :])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_narrow_columns_variances_are_not_rounded_away(seed):
    # Before the model kept the frame's per-column units, its spectrum was
    # in the rows' units, where float64 rounds every eigenvalue below
    # d 2^-52 lambda_max ~ 1e-3 (the narrowest column's variance is 1e-6)
    # up to that floor: relative error 306-326 over 5 seeds, behind a
    # warning. Now 0.027-0.053 over the same seeds (the non-private error is
    # about sqrt(2 d / n) / d ~ 0.02 per entry); 0.25 leaves room for the
    # noise and is a thousand times below the failure.
    X = _mixed_units()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)  # none predicted
        est = PrivateGaussianEstimator(rho=0.5, random_state=seed).fit(X)
    assert _relative_error(est.covariance_, X) < 0.25
    values, vectors, scale = model_parts(est._model)
    # The model is diag(scale) V diag(values) V^T diag(scale), scale about
    # each column's sd; everything it answers agrees with covariance_.
    assert np.allclose(scale / X.std(axis=0), 1.0, rtol=0.5)
    C = scale[:, None] * ((vectors * values) @ vectors.T) * scale[None, :]
    assert np.allclose(C, est.covariance_, rtol=1e-10, atol=0.0)
    # precision_ inverts it (checked in the model's units: in the rows' units
    # the product of two matrices conditioned 1e18 is itself round-off).
    outer = np.outer(scale, scale)
    inner = (est.covariance_ / outer) @ (est.precision_ * outer)
    assert np.allclose(inner, np.eye(6), atol=1e-6)
    assert np.all(values >= est.eigenvalue_floor_)
    d2 = est.mahalanobis(X[:200])
    assert np.all(np.isfinite(d2))
    assert 3.0 < np.median(d2) < 12.0
