"""The full release's post-processing in a box: off-diagonal test, faint columns."""

import numpy as np

from dpgauss.releases._covariance import MeasuredDiagonal
from dpgauss.releases._offdiagonal import no_direction, noise_only, sparsify


def _measured(C, noise, rng, off_sd=None):
    """C plus one draw of symmetric Gaussian noise (sd ``noise`` on the
    diagonal, ``noise / sqrt(2)`` off it), as a release would return it."""
    d = C.shape[0]
    off_sd = noise / np.sqrt(2.0) if off_sd is None else off_sd
    E = rng.normal(0.0, off_sd, (d, d))
    E = np.triu(E, 1)
    E = E + E.T + np.diag(rng.normal(0.0, noise, d))
    R = C + E
    measured = MeasuredDiagonal(
        np.diag(R).copy(), noise, R[np.triu_indices(d, 1)], off_sd
    )
    return R, measured


def test_pure_noise_passes_the_test_at_its_level():
    # T is chi-squared with m = 45 degrees of freedom under pure noise; the
    # threshold m + 3 sqrt(2 m) is its 1 - 0.002 quantile or so, so out of
    # 400 draws at most a handful exceed it (binomial mean 0.8-1.2: 8 is
    # beyond 5 sds of it).
    rng = np.random.default_rng(0)
    fails = sum(not noise_only(rng.normal(0.0, 0.1, 45), 0.1) for _ in range(400))
    assert fails <= 8


def test_uncorrelated_release_becomes_its_own_diagonal():
    rng = np.random.default_rng(1)
    C = np.diag([0.3, 0.2, 0.1, 0.05])
    R, measured = _measured(C, 0.01, rng)
    values, vectors = np.linalg.eigh(R)
    out = sparsify(values, vectors, measured, pure=False)
    assert out is not None
    new_values, new_vectors, dropped = out
    estimate = (new_vectors * new_values) @ new_vectors.T
    assert not dropped.any()
    # Exactly diagonal (the off-diagonal noise is gone), the diagonal the
    # spectrum's own (R's, to rounding).
    assert np.all(estimate - np.diag(np.diag(estimate)) == 0.0)
    np.testing.assert_allclose(np.diag(estimate), np.diag(R), atol=1e-12)


def test_correlated_release_is_kept_as_it_is():
    rng = np.random.default_rng(2)
    C = np.full((4, 4), 0.05) + np.diag([0.25, 0.15, 0.05, 0.05])
    R, measured = _measured(C, 0.01, rng)
    values, vectors = np.linalg.eigh(R)
    assert sparsify(values, vectors, measured, pure=False) is None


def test_faint_columns_among_correlated_ones_are_set_to_0():
    rng = np.random.default_rng(3)
    d = 8
    # Four wide correlated columns and four faint ones (1e-4, a hundredth
    # of the noise sd 0.01): the faint ones' released diagonals are noise
    # (one is below 0 about half the time, so the rule is strict: kept
    # only above the 1 - 0.001/8 normal quantile, 3.66 sds, which the faint
    # columns exceed with probability 1.25e-4 each).
    C = np.zeros((d, d))
    C[:4, :4] = 0.1
    C += np.diag([0.2, 0.2, 0.2, 0.2, 1e-4, 1e-4, 1e-4, 1e-4])
    R, measured = _measured(C, 0.01, rng)
    values, vectors = np.linalg.eigh(R)
    new_values, new_vectors, dropped = sparsify(values, vectors, measured, False)
    assert dropped.tolist() == [False] * 4 + [True] * 4
    estimate = (new_vectors * new_values) @ new_vectors.T
    assert np.all(np.abs(estimate[4:, :]) < 1e-15)
    # The wide block is the spectrum's own (its negative eigenvalues at 0).
    spectrum = (vectors * np.clip(values, 0.0, None)) @ vectors.T
    np.testing.assert_allclose(estimate[:4, :4], spectrum[:4, :4], atol=1e-12)


def test_nothing_to_test_leaves_the_release():
    values, vectors = np.array([1.0, 0.5]), np.eye(2)
    assert sparsify(values, vectors, MeasuredDiagonal(values, 0.1), False) is None
    one = MeasuredDiagonal(np.array([1.0]), 0.1, np.zeros(0), 0.1)
    assert sparsify(np.array([1.0]), np.eye(1), one, False) is None


def test_a_correlated_block_shows_a_direction_the_sum_may_miss():
    # A block of 16 of d = 64 coordinates whose 120 pairs sit 1.1 sds above
    # pure noise: they add about 1.2 * 120 = 145 sds^2 to the chi-squared
    # statistic, within its threshold (m = 2016, 3 sqrt(2 m) = 190 above
    # the mean), while their direction has eigenvalue about 1.1 * 15 = 16.5
    # sds on top of the noise's (about 16 at the edge 2 sqrt(d)), beyond
    # the bound 2 sqrt(64) + 3 = 19.
    rng = np.random.default_rng(4)
    d, k = 64, 16
    noise = rng.normal(0.0, 1.0, d * (d - 1) // 2)
    rows, cols = np.triu_indices(d, 1)
    block = noise + 1.1 * ((rows < k) & (cols < k))
    assert noise_only(noise, 1.0)
    assert no_direction(noise, d, 1.0)
    assert noise_only(block, 1.0)
    assert not no_direction(block, d, 1.0)
