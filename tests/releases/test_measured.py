"""Confining a released covariance by its own released diagonal."""

import warnings

import numpy as np
import pytest

from dpgauss import TailSensitiveCovariance
from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._covariance import MeasuredDiagonal
from dpgauss.releases._measured import confine, noise_quantile


def _covariance(out):
    frame = (out.vectors * out.values) @ out.vectors.T
    return frame * np.outer(out.scale, out.scale)


def _confined_draws(M, sd, pure, rng, count):
    """``count`` symmetric noisy copies of M (entry noise sd ``sd``), each
    with :func:`confine`'s result on its spectrum and released diagonal."""
    d = M.shape[0]
    for _ in range(count):
        noisy = M + rng.normal(0.0, sd, size=(d, d))
        noisy = (noisy + noisy.T) / 2
        values, vectors = np.linalg.eigh(noisy)
        released = MeasuredDiagonal(np.diag(noisy).copy(), sd)
        yield noisy, confine(np.maximum(values, 0), vectors, released, pure)


@pytest.mark.parametrize("pure", [False, True])
def test_columns_below_the_noise_and_the_mean_are_zero(pure):
    # Second moments 1e6, 1e4 and 0 (twice), released with noise sd 10 and
    # far below the mean (2.5e5). Where a zero column's released diagonal is
    # below 0 (each about half the time) a column is kept only above K sd (K
    # = 3.5 Gaussian, 5.5 Laplace at d = 4: probability 1e-3); where neither
    # is (a quarter of the draws) the faint rule keeps a column from 2 sds
    # (0.023 each). Expected keeps over 50 draws: 50 (1/4) 2 (0.045) = 1.1
    # (symmetrising leaves the diagonal's noise sd at 10); 5 or more has
    # Poisson probability 0.005.
    rng = np.random.default_rng(0)
    M = np.diag([1e6, 1e4, 0.0, 0.0])
    sd = 10.0
    k = noise_quantile(4, pure)
    keeps = 0
    for noisy, out in _confined_draws(M, sd, pure, rng, 50):
        assert out.unmeasured[:2].tolist() == [False, False]
        keeps += int(np.sum(~out.unmeasured[2:]))
        C = _covariance(out)
        dropped = np.flatnonzero(out.unmeasured)
        assert np.all(C[dropped, :] == 0.0)
        assert np.all(C[:, dropped] == 0.0)
        # The kept variances are capped at D_j + K sd.
        assert np.all(np.diag(C)[:2] <= np.diag(noisy)[:2] + k * sd + 1e-6)
    assert keeps <= 4


def test_columns_that_fill_less_of_the_box_are_kept_where_none_looks_faint():
    # Second moments 0.7, 0.65 and 0.1 (twice), noise sd 0.03: the small
    # columns sit 3.3 sds above 0 and 20 below the largest. The strict
    # quantile (3.5 sds, 0.105) zeroed them about 55% of the time
    # (modechoice at rho 0.125: 0.71 of the zero matrix's error in the
    # columns' own units, 0.31 kept). No released diagonal is below 0 and the
    # median is far above 2 sds, so they are kept from 2 sds: P(keep) = 0.91
    # per column, 91 of 100 expected (binomial sd 2.9): at least 80.
    rng = np.random.default_rng(1)
    M = np.diag([0.7, 0.65, 0.1, 0.1])
    sd = 0.03
    kept = 0
    for _, out in _confined_draws(M, sd, False, rng, 50):
        kept += int(np.sum(~out.unmeasured[2:]))
    assert kept >= 80


def test_one_scale_keeps_every_column():
    # Every column at the noise's level: no evidence the scales differ, so
    # the pooled estimate is kept (only the caps apply).
    rng = np.random.default_rng(1)
    d, sd = 6, 0.5
    kept = 0
    for _ in range(100):
        D = 1.0 + rng.normal(0.0, sd, size=d)
        out = confine(np.ones(d), np.eye(d), MeasuredDiagonal(D, sd), False)
        kept += int(not out.unmeasured.any())
    assert kept >= 99


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e300])
def test_outputs_finite_whatever_the_released_values(seed, scale):
    rng = np.random.default_rng(seed)
    d = 5
    values = np.abs(rng.standard_normal(d)) * scale
    vectors = np.linalg.qr(rng.standard_normal((d, d)))[0]
    D = rng.standard_normal(d) * scale
    D[0] = np.inf if seed == 0 else D[0]
    out = confine(values, vectors, MeasuredDiagonal(D, scale), seed % 2 == 0)
    assert np.all(np.isfinite(out.values))
    assert np.all(np.isfinite(out.scale))
    assert np.all(out.scale > 0)
    assert np.all((out.values >= 0) & (out.values <= d))
    assert 0 < out.noise_sd < np.inf


def test_no_noise_nothing_to_confine():
    assert (
        confine(np.ones(2), np.eye(2), MeasuredDiagonal(np.ones(2), 0.0), False) is None
    )


@pytest.mark.parametrize("privacy", [{"rho": 0.5}, {"epsilon": 1.0}])
@pytest.mark.parametrize("seed", range(4))
def test_tail_without_a_box_never_far_above_the_zero_matrix(privacy, seed):
    # Columns in scales 1e-3 .. 1e6 with only a norm bound: before, 1e15 times
    # the zero matrix's error in the columns' own units. Confined, the error
    # is at most about the zero matrix's (its rows and columns are 0 for the
    # columns below the noise, capped for the others), plus the kept columns'
    # own noise: 1.5 leaves room for that.
    rng = np.random.default_rng(seed)
    scales = np.logspace(-3, 6, 6)
    A = rng.standard_normal((6, 6)) / np.sqrt(6) + np.eye(6)
    X = (rng.standard_normal((2000, 6)) @ A) * scales
    X[:3] *= 1e6  # a few rows far out
    C = np.cov(X[3:].T)
    s = np.sqrt(np.diag(C))
    radius = float(np.linalg.norm(1e3 * scales))
    est = TailSensitiveCovariance(
        data_norm=radius, random_state=seed, on_useless="warn", **privacy
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    D = np.outer(s, s)
    error = np.linalg.norm((est.covariance_ - C) / D) / np.linalg.norm(C / D)
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.isfinite(est.precision_))
    assert error < 1.5


def test_tail_without_a_box_warns_when_nothing_rises_above_the_noise():
    # rho = 1e-4 on 2,000 rows: the radius scan cannot find the rows' radius
    # at this cost and the final release's noise exceeds every column's
    # second moment; the fit says so.
    scales = np.logspace(-3, 6, 6)
    X = np.random.default_rng(0).standard_normal((2000, 6)) * scales
    radius = float(np.linalg.norm(1e3 * scales))
    est = TailSensitiveCovariance(
        data_norm=radius, rho=1e-4, random_state=0, on_useless="warn"
    )
    with pytest.warns(UtilityWarning, match="within the noise"):
        est.fit(X)
