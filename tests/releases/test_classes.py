"""The classes of the discriminant analyses (dpgauss.releases._classes): public
labels, row codes that read each row's own label, and the post-processing of
the released class statistics."""

import numpy as np
import pytest
from scipy.stats import norm

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.releases._classes import (
    RADIUS_GRID,
    REFERENCE_MAJORITY,
    REFERENCE_SEPARATION,
    _radius_mechanism,
    check_classes,
    class_variances,
    covariance_error,
    encode_labels,
    project_ball,
    reference_error,
    reference_radius,
    shrink_means,
    shrink_spectrum,
)
from dpgauss.releases._groups import labelled_square_mechanism


@pytest.mark.parametrize(
    ("classes", "match"),
    [
        (None, "required"),
        ("ab", "not a string"),
        ([[0, 1]], "one-dimensional"),
        ([0, 0, 1], "repeated"),
        ([1], "at least two"),
        ([1, None], "comparable"),
    ],
)
def test_bad_classes_are_refused(classes, match):
    with pytest.raises(ValueError, match=match):
        check_classes(classes, "Owner")


def test_classes_are_sorted_and_unique():
    np.testing.assert_array_equal(check_classes([3, 1, 2], "Owner"), [1, 2, 3])


def test_each_code_reads_its_own_label_only():
    classes = np.array(["a", "b"])
    y = np.array(["b", "a", "c", "b"], dtype=object)
    np.testing.assert_array_equal(encode_labels(y, classes), [1, 0, -1, 1])
    # A label numpy cannot compare as a whole matches no class, and the
    # others keep their codes.
    odd = np.empty(3, dtype=object)
    odd[:] = ["a", np.arange(3), "b"]
    np.testing.assert_array_equal(encode_labels(odd, classes), [0, -1, 1])


def test_spectrum_is_floored_then_shrunk():
    values = np.array([-1.0, 0.5, 4.0])
    none = shrink_spectrum(values, 0.1, 3, None)
    np.testing.assert_allclose(none, [0.1, 0.5, 4.0])
    full = shrink_spectrum(values, 0.1, 3, 1.0)
    np.testing.assert_allclose(full, np.full(3, none.mean()))
    auto = shrink_spectrum(values, 0.1, 3, "auto")
    assert none.min() < auto.min() <= auto.max() < none.max()


def test_offsets_are_projected_into_the_ball():
    offsets = np.array([[3.0, 4.0], [0.3, 0.4], [1e300, -1e300]])
    out = project_ball(offsets, 1.0)
    np.testing.assert_allclose(out[:2], [[0.6, 0.8], [0.3, 0.4]])
    assert np.all(np.isfinite(out))
    assert np.all(np.linalg.norm(out, axis=1) <= 1.0 + 1e-15)


def test_the_radius_is_a_pure_quantile_on_the_public_grid():
    mech = _radius_mechanism(PureDP(1.0), 8.0)
    assert mech.cost == PureDP(1.0)
    rng = np.random.default_rng(0)
    radius = float(mech.release(np.full(500, 2.0), rng))
    assert 0.0 <= radius <= 8.0
    step = 8.0 / (RADIUS_GRID - 1)
    assert radius / step == pytest.approx(round(radius / step))


def test_reference_error_without_noise_is_the_bayes_error():
    # Two Gaussians at Mahalanobis distance D with priors p, q and the
    # log-prior threshold: p Phi(-D/2 - L/D) + q Phi(-D/2 + L/D).
    p, D = REFERENCE_MAJORITY, REFERENCE_SEPARATION
    L = np.log(p / (1 - p))
    bayes = p * norm.cdf(-D / 2 - L / D) + (1 - p) * norm.cdf(-D / 2 + L / D)
    got = reference_error(0.0, 0.0, 10, 2)
    assert got.error == pytest.approx(bayes, rel=1e-12)
    assert got.baseline == pytest.approx(1 - p)


def test_reference_error_grows_with_the_noise_to_a_coin_flip():
    errors = [reference_error(s, 0.0, 20, 2).error for s in (0.0, 0.05, 0.2, 1, 10)]
    assert errors == sorted(errors)
    # Swamped means: the corrected rule's score is noise of sd far above the
    # log-prior term, so each row's class is a fair coin flip (error 1/2
    # within the prior term's Phi(L / spread) - 1/2, below 0.02 here), worse
    # than the majority class: the refusal fires.
    assert errors[-1] == pytest.approx(0.5, abs=0.02)
    assert errors[-1] > 1 - REFERENCE_MAJORITY
    many = reference_error(0.0, 0.0, 20, 4)
    assert many.baseline == pytest.approx(0.5)  # two of K equal classes


def test_reference_radius_is_the_bound_when_fixed_and_below_it_when_adaptive():
    assert reference_radius(3.0, 9, adaptive=False) == 3.0
    r = reference_radius(3.0, 9, adaptive=True)
    # Rows of variance 0.1 B^2 / d per coordinate: about sqrt(0.1) B, a bit more.
    assert np.sqrt(0.1) * 3.0 < r < 3.0


def test_the_diagonal_release_is_predicted_better_under_laplace():
    n, d, B = 1000, 10, np.sqrt(10)
    from dpgauss.mechanisms._releases import second_moment_mechanism

    full = covariance_error(second_moment_mechanism(PureDP(1.0), n, d, B), d, B, "full")
    diag = covariance_error(
        labelled_square_mechanism(PureDP(1.0), n, d, 1, B), d, B, "diag"
    )
    assert full[1] == diag[1]  # the same reference covariance
    assert diag[0] < full[0]
    # With little noise the full release keeps the correlations the diagonal
    # one drops.
    big = 10**7
    full = covariance_error(second_moment_mechanism(ZCDP(1.0), big, d, B), d, B, "full")
    diag = covariance_error(
        labelled_square_mechanism(ZCDP(1.0), big, d, 1, B), d, B, "diag"
    )
    assert full[0] < diag[0]


def test_class_variances_are_positive_and_capped_for_every_draw():
    rng = np.random.default_rng(3)
    for scale in (1e-12, 1.0, 1e12):
        released = rng.normal(0.0, scale, 5)
        released[0] = np.nan
        values = class_variances(released, 2.0, np.full(5, 0.1), 0.01, 1.0, "auto")
        assert np.all(np.isfinite(values))
        assert np.all(values > 0)
        assert np.all(values <= 2.0)  # the cap times the scale


def test_shrink_means_keeps_clear_signal_and_pulls_noise_to_the_average():
    sizes = np.array([60.0, 40.0])
    clear = np.array([[1.0, 0.0, 0.0, 0.0], [-1.5, 0.0, 0.0, 0.0]])
    kept = shrink_means(clear, sizes, np.array([0.01, 0.01]))
    np.testing.assert_allclose(kept, clear, atol=1e-3)
    noisy = shrink_means(clear, sizes, np.array([10.0, 10.0]))
    average = sizes @ clear / sizes.sum()
    np.testing.assert_allclose(noisy, np.tile(average, (2, 1)), atol=1e-15)
    # The weighted average itself never moves.
    np.testing.assert_allclose(sizes @ noisy / sizes.sum(), average, atol=1e-15)
    huge = shrink_means(np.array([[1e300, 0.0], [-1e300, 1.0]]), sizes, np.ones(2))
    assert np.all(np.isfinite(huge))


def test_pool_spectra_moves_noisy_classes_to_the_pooled_covariance():
    from dpgauss.releases._classes import pool_spectra

    a = (np.array([1.0, 4.0]), np.eye(2))
    b = (np.array([9.0, 9.0]), np.eye(2))
    quiet = pool_spectra([a, b], np.array([50.0, 50.0]), [1e-12, 1e-12])
    np.testing.assert_allclose(np.sort(quiet[0][0]), [1.0, 4.0])
    loud = pool_spectra([a, b], np.array([50.0, 50.0]), [1e12, 1e12])
    np.testing.assert_allclose(np.sort(loud[0][0]), [5.0, 6.5], rtol=1e-9)
    for values, _ in loud:
        assert np.all(values > 0)
