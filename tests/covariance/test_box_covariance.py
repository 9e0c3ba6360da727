"""PrivateCovariance and PrivateEllipticEnvelope with a public box."""

import warnings

import numpy as np
import pytest

from dpgauss import PrivateCovariance, PrivateEllipticEnvelope
from dpgauss.accounting import PrivacyBudget
from dpgauss.exceptions import UselessFitError, UtilityWarning


def test_mixed_units_cost_nothing(mixed_units, relative_error):
    X, box = mixed_units()
    est = PrivateCovariance(bounds=box, rho=1.0, random_state=0).fit(X)
    # The full release at rho = 1 with n = 3000 in d = 4: its noise is about
    # 1e-2 of the box-unit covariance (0.06 per entry), so every column,
    # whatever its unit, is estimated to a few percent; 0.2 leaves room for
    # the mean's noise and the denoiser's bias.
    assert est.method_ in ("gauss", "separate")
    assert relative_error(est.covariance_, X) < 0.2
    assert np.all(np.abs(est.location_ - X.mean(0)) <= 0.05 * (box[1] - box[0]))


def test_pure_dp_small_n_takes_the_diagonal_release(mixed_units):
    X, box = mixed_units(n=300)
    est = PrivateCovariance(bounds=box, epsilon=2.0, random_state=0).fit(X)
    assert est.method_ == "diagonal"
    off = est.covariance_ - np.diag(np.diag(est.covariance_))
    assert np.all(off == 0.0)
    # The Laplace noise on a box-unit variance has sd 0.021 (l1 9d/(4n),
    # scale 0.015) against variances of 0.0625: below the K = 5.4 sds a
    # variance must clear to be kept, so each is either 0 up to the floor
    # (2^-52 of its bound), the zero matrix's answer, or within a factor 3.
    ratio = np.diag(est.covariance_) / np.var(X, axis=0)
    assert np.all((ratio < 2.0**-40) | ((ratio > 1 / 3) & (ratio < 3)))
    # Ten times the rows: the noise is a tenth, every variance is kept.
    X, box = mixed_units(n=3000)
    est = PrivateCovariance(method="diagonal", bounds=box, epsilon=2.0)
    ratio = np.diag(est.set_params(random_state=0).fit(X).covariance_)
    ratio = ratio / np.var(X, axis=0)
    assert np.all((ratio > 2 / 3) & (ratio < 1.5))


def test_refuses_before_the_spend_when_nothing_beats_the_zero_matrix(mixed_units):
    X, box = mixed_units(n=50)
    budget = PrivacyBudget(epsilon=1.0)
    est = PrivateCovariance(bounds=box, epsilon=0.05, budget=budget)
    with pytest.raises(UselessFitError, match="Nothing was spent"):
        est.fit(X)
    assert budget.ledger() == []


@pytest.mark.parametrize("method", ["auto", "gauss", "separate", "diagonal"])
@pytest.mark.parametrize("seed", [0, 1, 2**31 - 1])
def test_outputs_within_the_box_for_any_draw(method, seed, mixed_units):
    # Rows 1e12 away and a budget so small the noise is 1e6 box units.
    X, (lo, hi) = mixed_units(n=40, seed=seed)
    X[:5] = 1e12
    X[5:10] = -1e12
    est = PrivateCovariance(
        bounds=(lo, hi),
        method=method,
        epsilon=1e-6,
        on_useless="warn",
        random_state=seed,
    )
    with pytest.warns(UtilityWarning):
        est.fit(X)
    h = (hi - lo) / 2
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.isfinite(est.precision_))
    assert np.all(np.diag(est.covariance_) <= h * h * (1 + 1e-9))
    assert np.linalg.eigvalsh(est.covariance_).max() <= np.sum(h * h) * (1 + 1e-9)
    assert np.all((est.location_ >= lo) & (est.location_ <= hi))


def test_coinpress_takes_the_box(mixed_units, relative_error):
    X, box = mixed_units()
    est = PrivateCovariance(bounds=box, method="coinpress", rho=1.0, random_state=0)
    est.fit(X)
    assert np.all(np.isfinite(est.covariance_))
    assert relative_error(est.covariance_, X) < 0.5


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({}, "data_norm is required"),
        ({"data_norm": 1.0, "bounds": (0, 1)}, "not both"),
        ({"bounds": (0, 1), "location": [0.0, 0.0, 0.0, 0.0]}, "location=None"),
        ({"data_norm": 1.0, "method": "diagonal"}, "needs bounds"),
        ({"bounds": (1, 0)}, "lower < upper"),
    ],
)
def test_bad_box_parameters_refused_before_the_spend(params, match, mixed_units):
    X, _ = mixed_units(n=50)
    budget = PrivacyBudget(rho=1.0)
    with pytest.raises(ValueError, match=match):
        PrivateCovariance(rho=0.5, budget=budget, **params).fit(X)
    assert budget.ledger() == []


def test_envelope_takes_the_box(mixed_units):
    X, box = mixed_units()
    env = PrivateEllipticEnvelope(bounds=box, rho=1.0, random_state=0).fit(X)
    # About 10% flagged on the rows it was fitted on (contamination 0.1).
    assert 0.02 < np.mean(env.predict(X) == -1) < 0.3


def test_density_methods_describe_covariance_with_a_box():
    # The model is kept in box units with diag(h) as a change of units; the
    # density, the distances and the samples are those of N(location_,
    # covariance_) all the same (scales 1e-1..1e2 keep scipy's check exact).
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(3)
    scales = np.array([0.1, 1.0, 100.0])
    X = np.clip(rng.normal(size=(2000, 3)) / 4, -1, 1) * scales
    est = PrivateCovariance(bounds=(-scales, scales), rho=1.0, random_state=0)
    est.fit(X)
    truth = multivariate_normal(est.location_, est.covariance_)
    np.testing.assert_allclose(est.score_samples(X[:50]), truth.logpdf(X[:50]))
    d = X[:50] - est.location_
    expected = np.einsum("ij,jk,ik->i", d, est.precision_, d)
    np.testing.assert_allclose(est.mahalanobis(X[:50]), expected, rtol=1e-9)
    samples = est.sample(20000, random_state=0)
    # 20000 draws: the sample covariance is within about 3% (4 sd) of it.
    np.testing.assert_allclose(
        np.cov(samples.T) / np.outer(scales, scales),
        est.covariance_ / np.outer(scales, scales),
        atol=0.01,
    )


def _independent_columns():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((4000, 5)) * np.array([1.0, 2.0, 3.0, 1.0, 0.5])
    half = 4.0 * np.array([1.0, 2.0, 3.0, 1.0, 0.5])
    return X, (-half, half)


def test_uncorrelated_columns_come_out_diagonal():
    # Independent columns, box 8 sds wide, n = 4000 at rho 0.5, the full
    # release forced (clipped at sqrt(d) box units): its 10 off-diagonal
    # entries are noise far above the sample correlations (sd 1/sqrt(n) =
    # 0.016 of each pair's scale), whose chi-squared statistic exceeds its
    # 3-sd threshold in about 2% of draws (seed fixed): they are all set to
    # 0 (post-processing). TailSensitiveCovariance's searched radius makes
    # its noise smaller than the sample correlations, which then show.
    X, box = _independent_columns()
    est = PrivateCovariance(bounds=box, method="gauss", rho=0.5, random_state=0)
    C = est.fit(X).covariance_
    assert np.all(C - np.diag(np.diag(C)) == 0.0)
    # Each variance from the full release's diagonal, its noise sd at most
    # 0.03 box units against 1/16: within a factor 2 of its own.
    ratio = np.diag(C) / np.var(X, axis=0)
    assert np.all((ratio > 0.5) & (ratio < 2.0))


def test_the_probe_takes_the_per_coordinate_release_for_independent_columns():
    # The same rows with method="auto": the public choice is the full
    # release, the probe (a quarter of what the mean leaves) shows no
    # correlation (its off-diagonal entries' chi-squared sum is within 1.5 sds
    # of 0 in about 93% of draws), and the per-coordinate release is taken at
    # the rest: each variance's noise sd is about 0.001 box units against
    # 1/16, so within 10% of the sample variance (sampling alone: 2.2% sd).
    X, box = _independent_columns()
    est = PrivateCovariance(bounds=box, rho=0.5, random_state=0).fit(X)
    assert est.method_ == "diagonal"
    C = est.covariance_
    assert np.all(C - np.diag(np.diag(C)) == 0.0)
    ratio = np.diag(C) / np.var(X, axis=0)
    assert np.all((ratio > 0.9) & (ratio < 1.1)), ratio


def test_a_diagonal_the_probe_cannot_vouch_for_warns():
    # Six columns correlated about 0.4 (rms), each in a box 8 sds wide, n =
    # 2000 at rho 0.125: the probe's noise is comparable to the covariances,
    # its chi-squared evidence falls short in most fits and the diagonal is
    # released, leaving out correlations worth a relative error of about 0.5
    # (10 times the non-private sampling error is 0.5 at this n and d). Each
    # such fit says so; the independent columns of the test above take the
    # diagonal silently, the probe bounding their correlations within it.
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6)) / np.sqrt(6) + np.eye(6)
    X = rng.standard_normal((2000, 6)) @ A
    half = 8.0 * X.std(axis=0)
    diagonal = 0
    for seed in range(8):
        est = PrivateCovariance(bounds=(-half, half), rho=0.125, random_state=seed)
        if est.fit(X).method_ != "diagonal":
            continue
        diagonal += 1
        with pytest.warns(UtilityWarning, match="cannot rule out correlations"):
            est.fit(X)
    assert diagonal >= 4  # 6 of these 8 seeds
    X, box = _independent_columns()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est = PrivateCovariance(bounds=box, rho=0.5, random_state=0).fit(X)
    assert est.method_ == "diagonal"


def test_the_probe_averages_into_the_full_release_for_correlated_columns():
    # Columns correlated 0.5, n = 4000 at rho 0.5: the probe's chi-squared
    # sum is tens of sds above 0, the full option is taken and the two
    # GaussCov releases averaged (the noise of one at their joint cost):
    # the correlations come out within 0.1 (noise sd about 0.01 in
    # correlation units, sampling 0.012).
    rng = np.random.default_rng(6)
    cov = 0.5 + 0.5 * np.eye(4)
    X = rng.multivariate_normal(np.zeros(4), cov, size=4000)
    box = (-4.0 * np.ones(4), 4.0 * np.ones(4))
    est = PrivateCovariance(bounds=box, rho=0.5, random_state=0).fit(X)
    assert est.method_ == "gauss"
    C = est.covariance_
    corr = C / np.sqrt(np.outer(np.diag(C), np.diag(C)))
    np.testing.assert_allclose(corr, np.corrcoef(X.T), atol=0.1)


def test_correlated_columns_keep_their_rotation(mixed_units):
    X, box = mixed_units()
    est = PrivateCovariance(bounds=box, rho=1.0, random_state=0).fit(X)
    C = est.covariance_
    assert np.any(C - np.diag(np.diag(C)) != 0.0)


def test_features_set_to_zero_are_named():
    # A column a thousandth of the others' scale in the same box: its box-unit
    # variance (6e-8) is far below the noise, so it is set to 0 (or, in about
    # one fit in ten, kept shrunk within a few noise sds) and named either
    # way; the wide ones (1/16, about 10 noise sds at n = 2000, epsilon 2)
    # are kept.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3)) * np.array([1.0, 1.0, 1e-3])
    est = PrivateCovariance(
        bounds=(-4.0, 4.0), method="diagonal", epsilon=2.0, random_state=0
    )
    with pytest.warns(UtilityWarning, match=r"feature\(s\) 2 are (set to 0|kept)"):
        est.fit(X)
