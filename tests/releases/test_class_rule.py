"""The discriminant rule's noise correction and its test of the means' signal."""

import numpy as np
import pytest

from dpgauss.releases._class_rule import (
    COUNT_Z,
    SIGNAL_Z,
    faint_classes,
    noise_corrections,
    signal_score,
    usable_means,
)


def test_noise_corrections_are_half_the_noise_times_the_precision_trace():
    got = noise_corrections(np.array([0.5, 2.0]), 4.0)
    np.testing.assert_allclose(got, [1.0, 4.0])
    got = noise_corrections(np.array([1.0, 1.0]), np.array([2.0, 6.0]))
    np.testing.assert_allclose(got, [1.0, 3.0])


def test_noise_corrections_are_finite_for_every_input():
    got = noise_corrections(np.array([np.inf, np.nan, 1e308]), np.array([1e308] * 3))
    assert np.all(np.isfinite(got))
    assert np.all(got >= 0)


def test_the_correction_removes_the_noisier_means_pull():
    # Two classes at the same point, one mean released with far more noise:
    # uncorrected, every row scores higher for the less noisy class (the
    # noisy mean lies ~ s sqrt(d) away from everything); corrected, the
    # score difference averages 0 over the noise (E|e|^2 = d s^2).
    rng = np.random.default_rng(0)
    d, s_a, s_b = 30, 3.0, 0.3
    rows = rng.normal(size=(2000, d))
    wins, wins_corrected = [], []
    for _ in range(200):
        m_a = rng.normal(scale=s_a, size=d)
        m_b = rng.normal(scale=s_b, size=d)
        score_a = rows @ m_a - 0.5 * m_a @ m_a
        score_b = rows @ m_b - 0.5 * m_b @ m_b
        fix = noise_corrections(np.array([s_a**2, s_b**2]), float(d))
        wins.append(np.mean(score_a > score_b))
        wins_corrected.append(np.mean(score_a + fix[0] > score_b + fix[1]))
    assert np.mean(wins) < 0.05
    # Each draw's share is a fair coin over the rows on average: the mean of
    # 200 shares, each with sd at most 1/2, is within 4 / (2 sqrt(200)) of 1/2.
    assert abs(np.mean(wins_corrected) - 0.5) < 4 * 0.5 / np.sqrt(200)


def test_signal_score_of_pure_noise_is_about_a_standard_normal():
    # Coinciding means: |e_a - e_b|^2 / (s_a^2 + s_b^2) is chi-square with d
    # degrees of freedom, so the score (chi2 - d) / sqrt(2 d) has mean 0 and
    # sd 1; 2,000 draws put the sample mean within 4 / sqrt(2000) of 0.
    rng = np.random.default_rng(1)
    d = 40
    values, vectors = np.full(d, 2.0), np.eye(d)
    noise = np.array([0.5, 0.2])
    scores = [
        signal_score(
            rng.normal(size=(2, d)) * np.sqrt(noise)[:, None], noise, values, vectors
        )
        for _ in range(2000)
    ]
    assert abs(np.mean(scores)) < 4 / np.sqrt(2000)
    assert np.std(scores) == pytest.approx(1.0, rel=0.1)


def test_usable_means_keep_clear_signal_and_drop_noise():
    d = 10
    values, vectors = np.ones(d), np.eye(d)
    sizes = np.array([60.0, 40.0])
    clear = np.vstack([np.full(d, 2.0), np.full(d, -2.0)])
    kept, var = usable_means(clear, sizes, np.array([0.01, 0.01]), values, vectors)
    assert signal_score(clear, np.array([0.01, 0.01]), values, vectors) > SIGNAL_Z
    # Kept, shrunk by less than a thousandth (James-Stein with tiny noise).
    np.testing.assert_allclose(kept, clear, rtol=1e-3)
    assert np.all(var <= 0.01)
    same = np.zeros((2, d))
    dropped, var = usable_means(same, sizes, np.array([1.0, 1.0]), values, vectors)
    np.testing.assert_array_equal(dropped[0], dropped[1])
    np.testing.assert_array_equal(var, 0.0)


def test_usable_means_fall_back_on_non_finite_input():
    d = 3
    offsets = np.array([[np.nan, 0.0, 0.0], [1.0, 1.0, 1.0]])
    out, var = usable_means(
        offsets, np.ones(2), np.ones(2), np.array([1e-320, 1.0, 1.0]), np.eye(d)
    )
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(var, 0.0)


def test_faint_classes_are_counts_within_two_noise_sds_of_zero():
    assert COUNT_Z == 2.0
    got = faint_classes(np.array([-3.0, 0.0, 10.0, 10.01, 500.0, np.nan]), 5.0)
    np.testing.assert_array_equal(got, [True, True, True, False, False, True])


def test_faint_classes_flag_an_empty_class_at_the_laplace_rate():
    # Laplace noise of sd s (scale s / sqrt(2)) exceeds 2 s with probability
    # exp(-2 sqrt(2)) / 2 = 0.0296: an empty class is flagged 97% of the time.
    # Over 20,000 draws the share's sd is 0.0012; 4 sds is 0.005.
    rng = np.random.default_rng(2)
    sd = 7.0
    counts = rng.laplace(0.0, sd / np.sqrt(2.0), 20000)
    missed = 1.0 - np.mean(faint_classes(counts, sd))
    assert missed == pytest.approx(np.exp(-2.0 * np.sqrt(2.0)) / 2.0, abs=0.005)
