"""PrivateGaussianEstimator(bounds=...): the faint-column warning of its mean."""

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import chi2
from sklearn.datasets import load_breast_cancer

from dpgauss import PrivateGaussianEstimator
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.gaussian._warnings import faint_mean_reach, faint_mean_warning
from dpgauss.releases._box_gaussian import box_gaussian_plan, box_gaussian_predict
from dpgauss.releases._box_mean import FAINT_SD, reach_of_noise
from dpgauss.releases._prediction import ASTRAY
from dpgauss.testing._box_edge import edge_messages, edge_rows


def _prediction(total, n, d):
    plan = ReleasePlan(total, box_gaussian_plan(total, n, d))
    built = {r.name: r.build() for r in plan.releases()}
    return plan, box_gaussian_predict(total, n, d, built)


def test_the_reach_is_one_coordinate_s_noise_over_astray_sampling_errors():
    # A column of sd s has a mean of sampling sd s / sqrt(n); the noise sd
    # a = error / sqrt(d) is ASTRAY times it at s = a sqrt(n) / ASTRAY, and
    # the 5-vector's error is beyond ASTRAY times its sampling error in one
    # fit of ten up to sqrt(chi2_5's 0.9 quantile / 5) = 1.36 times that.
    _, prediction = _prediction(PureDP(2.0), 150, 5)
    a = prediction.mean.error / math.sqrt(5)
    factor = math.sqrt(chi2.ppf(0.9, 5) / 5)
    assert factor == pytest.approx(1.359, abs=1e-3)
    assert faint_mean_reach(prediction, 150, 5) == pytest.approx(
        a * math.sqrt(150) / ASTRAY * factor
    )


def test_one_fit_in_ten_lands_beyond_astray_at_the_reach():
    # The quantile the reach stands for, by simulation: Gaussian noise of sd
    # a on 5 columns of sd s = reach; the error over the sampling error
    # exceeds ASTRAY in a share p of 20,000 fits, p = 0.1 up to a binomial
    # sd of sqrt(0.09 / 20000) = 0.0021 (bound: 5 sds).
    rng = np.random.default_rng(3)
    n, d, a = 150, 5, 0.01
    reach = reach_of_noise(a, n, d)
    noise = rng.normal(0.0, a, size=(20000, d))
    ratio = np.linalg.norm(noise, axis=1) / (reach * math.sqrt(d / n))
    assert abs(np.mean(ratio > ASTRAY) - 0.1) < 5 * math.sqrt(0.09 / 20000)


def test_the_warning_from_public_values():
    # Student t rows at epsilon 2, n = 150 (sds 0.06-0.09 half-widths in
    # their codebook box) landed at 10 times their sampling error: warned.
    plan, prediction = _prediction(PureDP(2.0), 150, 5)
    message = faint_mean_warning("G", prediction, plan, 150, 5)
    assert faint_mean_reach(prediction, 150, 5) >= FAINT_SD
    assert "fixed by the box" in message
    # rho 0.5 at the same n and d: the noise is resolved down to 0.032.
    plan, prediction = _prediction(ZCDP(0.5), 150, 5)
    assert faint_mean_warning("G", prediction, plan, 150, 5) is None
    # randhie's n and d at epsilon 1 (the full plan): 0.022.
    plan, prediction = _prediction(PureDP(1.0), 20190, 9)
    assert faint_mean_warning("G", prediction, plan, 20190, 9) is None


def test_no_warning_for_the_adaptive_box_mean():
    # Its windows narrow to the rows' spread; its prediction is the whole
    # box's worst case, not the noise a faint column gets.
    _, prediction = _prediction(PureDP(2.0), 150, 5)
    adaptive = SimpleNamespace(
        total=PureDP(2.0),
        releases=lambda: [SimpleNamespace(name="box_center")],
    )
    assert faint_mean_warning("G", prediction, adaptive, 150, 5) is None


def test_the_fit_warns_before_its_releases(warnings_before_releases):
    X = np.random.default_rng(0).standard_t(3, size=(150, 5))
    est = PrivateGaussianEstimator(bounds=(-30.0, 30.0), epsilon=2.0, random_state=0)
    seen = warnings_before_releases(est, X)
    assert any("fixed by the box" in m for m in seen)
    assert est.privacy_spent_ == PureDP(2.0)


def test_the_warning_reads_no_row():
    messages = []
    for X in (np.zeros((150, 5)), np.full((150, 5), 1e12)):
        est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), epsilon=2.0, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X)
        messages.append([str(w.message) for w in caught])
    # The warnings before the spend are the same; after it, the rows at
    # 1e12 (all clipped to the upper bound) are named from the released mean.
    edge = [[m for m in ms if "box's edge" in m] for ms in messages]
    before = [[m for m in ms if "box's edge" not in m] for ms in messages]
    assert before[0] == before[1]
    assert any("fixed by the box" in m for m in messages[0])
    assert edge[0] == []
    assert len(edge[1]) == 1


def test_no_faint_warning_where_the_noise_resolves_faint_columns():
    # No faint-mean warning before the spend; the variances of columns of sd
    # 0.05 half-widths are within the noise at n = 150 and set to 0, which
    # the fit says after the release (features named).
    X = np.random.default_rng(1).normal(0.0, 0.05, size=(150, 5))
    est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), rho=0.5, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert "feature(s) 0, 1, 2, 3, 4 is within the noise" in messages[0]
    np.testing.assert_allclose(np.diag(est.covariance_), 0.0, atol=1e-12)


def test_zeroed_variances_are_named_after_the_release():
    # One column fills its box, four are faint: only the four are named.
    rng = np.random.default_rng(2)
    X = rng.normal(0.0, 0.02, size=(2000, 5))
    X[:, 0] = rng.uniform(-1.0, 1.0, 2000)
    est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), rho=0.5, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    named = [str(w.message) for w in caught if "set to 0" in str(w.message)]
    assert len(named) == 1
    assert "feature(s) 1, 2, 3, 4 is" in named[0]
    assert est.covariance_[0, 0] > 0.1


@pytest.mark.parametrize("privacy", [{"rho": 0.5}, {"epsilon": 1.0}, {"epsilon": 0.05}])
def test_rows_at_the_box_edge_are_named_once_with_their_side(privacy):
    # Column 0 clipped to the upper bound, 2 to the lower one (raw values in
    # a box meant for standardised ones); a box that holds them is silent,
    # and so are 0/1 columns with half ones in (0, 1). The three budgets take
    # the staged, full (box mean) and moments plans.
    X = edge_rows()
    est = PrivateGaussianEstimator(bounds=(-1.0, 1.0), random_state=0, **privacy)
    (message,) = edge_messages(est, X)
    assert message.startswith("PrivateGaussianEstimator: the released mean of")
    assert "feature(s) 0 (upper), 2 (lower) lies" in message
    est.set_params(bounds=(-200.0, 200.0))
    assert edge_messages(est, X) == []
    B = np.random.default_rng(1).integers(0, 2, size=(2000, 3)).astype(float)
    assert edge_messages(est.set_params(bounds=(0.0, 1.0)), B) == []


def test_raw_breast_cancer_in_a_standardised_box_is_named():
    # n = 569, d = 30, rho 0.5: the means' noise sd is about 0.02 box units;
    # features 0, 3 and 23 (radius, area, worst area) sit at the upper bound.
    X = load_breast_cancer().data
    est = PrivateGaussianEstimator(rho=0.5, bounds=(-3.0, 3.0), random_state=0)
    (message,) = edge_messages(est, X)
    assert "feature(s) 0 (upper)" in message
