"""The fit hooks of the estimators built on a released spectrum
(``releases._spectrum``), through a small subclass and through PrivatePCA."""

import warnings
from dataclasses import replace

import numpy as np
import pytest

import dpgauss.releases._spectrum as spectrum_module
from dpgauss import PrivatePCA
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.base import FitData
from dpgauss.exceptions import UtilityWarning
from dpgauss.mechanisms._checks import check_plan
from dpgauss.releases._center import (
    Spectrum,
    covariance_plan_entries,
    release_center,
    release_spectrum,
)
from dpgauss.releases._covariance import filled_prediction
from dpgauss.releases._spectrum import SpectrumReleaseMixin

METHODS = ["auto", "gauss", "separate", "eigen"]


class _Spectral(SpectrumReleaseMixin):
    """The mixin alone, with the four parameters it reads."""

    def __init__(self, data_norm=1.0, center=True, method="gauss", bounds=None):
        self.data_norm = data_norm
        self.center = center
        self.method = method
        self.bounds = bounds


def _rows(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.6 ** np.arange(d) + 0.2
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(1.0)])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("method", METHODS)
def test_the_plan_is_the_covariance_plan(method, center, total):
    # The non-"tail" methods plan exactly PrivateCovariance's releases at the
    # public data_norm, so the costs compose to the total as they do there.
    est = _Spectral(data_norm=2.0, center=center, method=method)
    plan = est._build_plan(total, FitData(n=100, d=3))
    expected = ReleasePlan(
        total, covariance_plan_entries(total, 3, method, center, 100, 2.0)
    )
    assert plan.charges() == expected.charges()
    assert plan.spent() == total
    for ours, theirs in zip(plan.releases(), expected.releases(), strict=True):
        assert ours.name == theirs.name
        assert ours.build().sensitivity == theirs.build().sensitivity


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("method", METHODS)
def test_release_spectrum_is_the_center_and_spectrum_releases_sorted(method, center):
    # The hook makes the releases of releases._center with the fit's noise
    # stream (same draws, bit for bit) and only sorts the spectrum.
    n, d = 400, 4
    X = _rows(n, d, seed=0)
    est = _Spectral(center=center, method=method)
    plan = est._build_plan(ZCDP(1.0), FitData(n=n, d=d))
    mean, spectrum = est._release_spectrum(X, plan, np.random.default_rng(0))
    plan.finish()  # each planned release drew exactly once

    again = est._build_plan(ZCDP(1.0), FitData(n=n, d=d))
    rng = np.random.default_rng(0)
    origin = np.zeros(d)
    direct_center, shift, _ = release_center(X, origin, 1.0, center, again, rng)
    direct = release_spectrum(X, direct_center, shift, 1.0, method, again, rng)
    np.testing.assert_array_equal(mean, direct_center)
    if not center:
        np.testing.assert_array_equal(mean, np.zeros(d))
    order = np.argsort(-direct.values, kind="stable")
    np.testing.assert_array_equal(spectrum.values, direct.values[order])
    np.testing.assert_array_equal(spectrum.vectors, direct.vectors[:, order])
    assert (spectrum.noise_sd, spectrum.cap) == (direct.noise_sd, direct.cap)
    assert spectrum.method == direct.method

    assert np.all(np.diff(spectrum.values) <= 0)
    assert np.all(spectrum.values >= 0)
    np.testing.assert_allclose(
        spectrum.vectors.T @ spectrum.vectors, np.eye(d), atol=1e-10
    )


def test_non_finite_and_negative_values_become_zero_and_ties_keep_their_order(
    monkeypatch,
):
    # Post-processing of whatever the release returns: NaN, infinities and
    # negative values become 0; the stable sort keeps tied columns in order.
    vectors = np.eye(5)
    values = np.array([np.nan, 0.5, -1.0, np.inf, 0.5])

    def fake(X, center, shift, radius, method, plan, rng):
        return Spectrum(values, vectors, 0.1, 1.0, method)

    monkeypatch.setattr(spectrum_module, "release_spectrum", fake)
    est = _Spectral(center=False)
    _, spectrum = est._release_spectrum(np.zeros((3, 5)), None, None)
    np.testing.assert_array_equal(spectrum.values, [0.5, 0.5, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(spectrum.vectors, vectors[:, [1, 4, 0, 2, 3]])


def test_the_method_hook():
    assert _Spectral(method="auto")._method() == "auto"
    # PCA resolves "auto" for a public reason (GaussCov dominates for the
    # components); "tail" stays the tail-sensitive releases.
    assert PrivatePCA(method="auto")._method() == "gauss"
    assert PrivatePCA(method="tail")._method() == "tail"


def test_a_missing_data_norm_is_refused():
    with pytest.raises(ValueError, match="_Spectral: data_norm is required"):
        _Spectral(data_norm=None)._check_params()
    _Spectral(data_norm=3.0)._check_params()


def test_the_utility_warning_comes_from_public_values():
    def warned(method, rho, n, d):
        est = _Spectral(method=method)
        est.on_useless = "warn"  # warn, so the test reads the message
        data = FitData(n=n, d=d)
        plan = est._build_plan(ZCDP(rho), data)
        if method != "tail":
            built = check_plan(plan, "_Spectral")
            data = replace(data, prediction=est._predict_error(plan, data, built))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est._check_utility(plan, data)
        return [w for w in caught if issubclass(w.category, UtilityWarning)]

    (warning,) = warned("gauss", 1e-3, 100, 50)
    assert str(warning.message).startswith("_Spectral: with n=100, d=50")
    assert warned("gauss", 10.0, 10_000, 3) == []
    assert warned("eigen", 1e-3, 100, 50) == []  # no prediction for EMCov
    # "tail" finds its radius privately: the fixed-radius prediction does
    # not apply, so it never warns.
    assert warned("tail", 1e-3, 100, 50) == []


@pytest.mark.parametrize("method", ["gauss", "separate", "eigen"])
def test_the_check_before_the_spend_builds_every_planned_release(method):
    pca = PrivatePCA(data_norm=2.0, method=method, rho=0.5)
    data = FitData(n=200, d=3, n_partials=1)
    plan = pca._build_plan(ZCDP(0.5), data)
    built = pca._check_calibration(plan, data)
    assert sorted(built) == sorted(r.name for r in plan.releases())
    for release in plan.releases():
        assert built[release.name].cost == release.cost


def test_the_check_before_the_spend_refuses_a_budget_too_small():
    pca = PrivatePCA(data_norm=2.0, method="gauss", rho=1e-300)
    data = FitData(n=200, d=3, n_partials=1)
    plan = pca._build_plan(ZCDP(1e-300), data)
    with pytest.raises(ValueError, match="PrivatePCA: the release 'mean'"):
        pca._check_calibration(plan, data)


@pytest.mark.parametrize("method", ["auto", "gauss", "separate", "eigen", "tail"])
def test_the_prediction_is_the_filled_ball_prediction(method):
    # Public values only: the planned mechanisms at their worst case. The
    # baseline is the zero matrix's error for data filling the ball evenly,
    # ||C||_F = r^2 / sqrt(d); "eigen" and "tail" predict nothing.
    est = _Spectral(data_norm=2.0, method=method)
    data = FitData(n=500, d=4)
    plan = est._build_plan(ZCDP(0.5), data)
    built = {} if method == "tail" else check_plan(plan, "_Spectral")
    prediction = est._predict_error(plan, data, built)
    if method in ("eigen", "tail"):
        assert prediction is None
        return
    assert prediction == filled_prediction(built, method, 4, 2.0)
    assert prediction.baseline == pytest.approx(4.0 / 2.0)
    assert prediction.error > 0
