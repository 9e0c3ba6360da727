"""TailSensitiveCovariance with a public box: units, the diagonal choice, bounds."""

import warnings

import numpy as np
import pytest

from dpgauss import PrivacyBudget, TailSensitiveCovariance
from dpgauss.exceptions import UselessFitError, UtilityWarning


def test_mixed_units_cost_nothing(mixed_units, relative_error):
    X, box = mixed_units()
    est = TailSensitiveCovariance(bounds=box, rho=1.0, random_state=0).fit(X)
    # In box units the rows have variance 1/16 per coordinate (correlation
    # 1/2) and n = 3000: the final release's noise at rho ~ 0.6 is about 1e-2
    # of that covariance per entry, so every column, whatever its unit, is
    # estimated to a few percent; 0.2 leaves room for the searches' clipping
    # bias and the mean's noise.
    assert est.method_ in ("gauss", "separate")
    assert relative_error(est.covariance_, X) < 0.2
    assert np.all(np.abs(est.location_ - X.mean(0)) <= 0.05 * (box[1] - box[0]))


def test_without_the_box_the_small_columns_are_zero_and_named(
    mixed_units, relative_error
):
    # The same rows with only a norm bound: the final release's noise is the
    # same on every entry (set by the radius, about 1e6 here), so the columns
    # at 1e-3, 1 and 1e3 are within it. They come out 0 (the zero matrix's
    # answer for them, not noise 1e15 times their variance) and a warning
    # names them; the box is what estimates them.
    X, box = mixed_units()
    center = (box[0] + box[1]) / 2
    radius = float(np.linalg.norm((box[1] - box[0]) / 2))
    est = TailSensitiveCovariance(rho=1.0, data_norm=radius, random_state=0)
    with pytest.warns(UtilityWarning, match=r"feature\(s\) 0, 1, 2 are set to 0"):
        est.fit(X - center)
    error = relative_error(est.covariance_, X)
    assert error <= 1.0
    boxed = TailSensitiveCovariance(bounds=box, rho=1.0, random_state=0).fit(X)
    assert relative_error(boxed.covariance_, X) < 0.2 * error


def test_pure_dp_small_n_takes_the_diagonal_release(mixed_units):
    X, box = mixed_units(n=300)
    est = TailSensitiveCovariance(bounds=box, epsilon=2.0, random_state=0).fit(X)
    assert est.method_ == "diagonal"
    off = est.covariance_ - np.diag(np.diag(est.covariance_))
    assert np.all(off == 0.0)
    # The diagonal release's Laplace noise on a box-unit variance has sd
    # 0.021 (l1 9d/(4n) at epsilon 2), against variances of 0.0625, below
    # the K = 5.4 sds a variance must clear to be kept: each is 0 up to the
    # floor (the zero matrix's answer) or within a factor 3 of the truth.
    ratio = np.diag(est.covariance_) / np.var(X, axis=0)
    assert np.all((ratio < 2.0**-40) | ((ratio > 1 / 3) & (ratio < 3)))


def test_refuses_before_the_spend_when_nothing_beats_the_zero_matrix(mixed_units):
    X, box = mixed_units(n=50)
    budget = PrivacyBudget(epsilon=1.0)
    est = TailSensitiveCovariance(bounds=box, epsilon=0.05, budget=budget)
    with pytest.raises(UselessFitError, match="Nothing was spent"):
        est.fit(X)
    assert budget.ledger() == []


@pytest.mark.parametrize("privacy", [{"rho": 1e-4}, {"epsilon": 0.01}, {"rho": 4.0}])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_outputs_stay_in_the_box_whatever_the_noise(privacy, seed, mixed_units):
    # Rows far outside the box (1e12) and budgets from tiny to large: the
    # box-unit covariance is capped at variance 1 and the location projected
    # into the box (post-processing), so every variance is at most h^2.
    X, box = mixed_units(n=200, seed=seed)
    X[:5] = 1e12
    est = TailSensitiveCovariance(
        bounds=box, random_state=seed, on_useless="warn", **privacy
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    h = (box[1] - box[0]) / 2
    assert np.all(np.isfinite(est.covariance_))
    assert np.all(np.isfinite(est.precision_))
    assert np.all(np.diag(est.covariance_) <= h * h * (1 + 1e-9))
    assert np.all((est.location_ >= box[0]) & (est.location_ <= box[1]))


def test_bounds_and_data_norm_are_exclusive(mixed_units):
    X, box = mixed_units(n=100)
    with pytest.raises(ValueError, match="not both"):
        TailSensitiveCovariance(rho=1.0, bounds=box, data_norm=1.0).fit(X)
    with pytest.raises(ValueError, match="location=None"):
        TailSensitiveCovariance(rho=1.0, bounds=box, location=np.zeros(4)).fit(X)
    with pytest.raises(ValueError):
        TailSensitiveCovariance(rho=1.0).fit(X)


def test_same_releases_as_before_without_a_box():
    # The box is an alternative: without it the fit is unchanged (data_norm).
    X = np.random.default_rng(3).normal(size=(400, 3))
    a = TailSensitiveCovariance(rho=0.5, data_norm=10.0, random_state=4).fit(X)
    assert a.method_ in ("gauss", "separate")
    assert a.radius_ <= 10.0
