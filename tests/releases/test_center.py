"""The clipped mean, the trace and the released spectrum (``releases._center``):
plan entries, factories, far rows, shapes, floors and refusals."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP, split_cost
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.mechanisms._checks import check_plan, check_release
from dpgauss.mechanisms._releases import (
    eigenvalue_mechanism,
    mean_mechanism,
    second_moment_mechanism,
)
from dpgauss.releases._center import (
    AUTO_TRACE_SHARE,
    MEAN_SHARE,
    Spectrum,
    covariance_plan_entries,
    eigenvalue_floor,
    mean_entries,
    mean_factory,
    release_center,
    release_mean,
    release_spectrum,
    release_trace,
    trace_factory,
    trace_release,
    useless_release_message,
    whitening_floor,
)
from dpgauss.releases._covariance import filled_prediction
from dpgauss.releases._emcov import BinghamMechanism
from dpgauss.utils._sums import (
    clipped_sums,
    fixed_point_bits,
    n_partial_sums,
    summation_error,
)

METHODS = ["auto", "gauss", "separate", "eigen"]
TOTALS = [ZCDP(0.5), PureDP(2.0)]
NAMES = {
    "auto": ["trace", "second_moment", "eigenvalues", "eigenvectors"],
    "gauss": ["second_moment"],
    "separate": ["eigenvalues", "eigenvectors"],
    "eigen": ["eigenvalues", "eigenvector_1", "eigenvector_2"],
}


def _rows(n, d, radius, seed):
    """n rows inside the ball of ``radius``, spread unevenly over the features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.7 ** np.arange(d)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return radius * X / np.maximum(1.0, norms)


class _Noiseless:
    """A planned mechanism that records the exact statistic instead of adding noise.

    It counts the draw on the real mechanism (so ``plan.finish`` still checks
    that every release drew once) and answers everything else (sensitivity,
    variance, tail) from it; EMCov's selection still samples.
    """

    def __init__(self, mechanism, record, name):
        self._mechanism, self._record, self._name = mechanism, record, name

    def randomise(self, value, random_state=None):
        self._mechanism.draws += 1
        self._record[self._name] = np.array(value, dtype=np.float64)
        return np.array(value, dtype=np.float64)

    def select(self, C, rng):
        self._record.setdefault(self._name, np.array(C))
        return self._mechanism.select(C, rng)

    def __getattr__(self, attr):
        return getattr(self._mechanism, attr)


class _NoiselessPlan(ReleasePlan):
    """A release plan whose mechanisms hand back the exact statistics."""

    def __init__(self, total, entries):
        super().__init__(total, entries)
        self.record, self.mechanisms = {}, {}

    def calibrate(self, name, **case):
        mechanism = super().calibrate(name, **case)
        self.mechanisms[name] = mechanism
        return _Noiseless(mechanism, self.record, name)


# -- plan entries ---------------------------------------------------------------


@pytest.mark.parametrize("total", TOTALS)
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("method", METHODS)
def test_plan_entries_compose_to_the_total(total, center, method):
    d = 3
    plan = ReleasePlan(
        total, covariance_plan_entries(total, d, method, center, 50, 1.0)
    )
    names = [r.name for r in plan.releases()]
    assert names == (["mean"] if center else []) + NAMES[method]
    # The entries' charged costs compose to the total: the shares are split
    # once, the last share being the remainder (split_cost), so nothing is lost
    # and nothing is charged twice. The choice of "auto" charges its dominating
    # option, and GaussCov and SeparateCov cost the same in every currency.
    assert plan.spent() == total
    rest = total
    if center:
        mean, rest = split_cost(total, [MEAN_SHARE, 1.0 - MEAN_SHARE])
        assert plan.cost("mean") == mean
    if method == "auto":
        trace, rest = split_cost(rest, [AUTO_TRACE_SHARE, 1 - AUTO_TRACE_SHARE])
        assert plan.cost("trace") == trace
        assert plan.cost("second_moment") == rest
        assert [plan.cost("eigenvalues"), plan.cost("eigenvectors")] == split_cost(
            rest, [0.5, 0.5]
        )


@pytest.mark.parametrize("total", TOTALS)
@pytest.mark.parametrize("method", METHODS)
def test_a_priced_plan_charges_what_a_fitted_one_does(total, method):
    # Pricing builds the entries without n or the radius; only the factories'
    # worst cases need them, never the costs.
    priced = ReleasePlan(total, covariance_plan_entries(total, 4, method, True))
    fitted = ReleasePlan(
        total, covariance_plan_entries(total, 4, method, True, 200, 3.0)
    )
    assert priced.charges() == fitted.charges()


def test_mean_entries_without_a_mean_leave_the_whole_cost():
    assert mean_entries(ZCDP(0.3), False) == ([], ZCDP(0.3))
    (mean,), rest = mean_entries(PureDP(1.0), True, 10, 2, 1.0)
    assert (mean.name, mean.kind, mean.size) == ("mean", "laplace", 2)
    assert [mean.cost, rest] == split_cost(PureDP(1.0), [MEAN_SHARE, 1 - MEAN_SHARE])


# -- factories ------------------------------------------------------------------


@pytest.mark.parametrize("total", TOTALS)
@pytest.mark.parametrize("method", METHODS)
def test_factories_build_the_planned_cost_at_the_worst_public_case(total, method):
    n, d, r = 300, 3, 2.0
    plan = ReleasePlan(total, covariance_plan_entries(total, d, method, True, n, r))
    built = check_plan(plan, "Test")
    assert sorted(built) == sorted(r.name for r in plan.releases())
    rounding = 2.0 * n * summation_error(n, n)
    for release in plan.releases():
        mech = check_release(release)  # the worst public case: every row a chunk
        assert mech.cost == release.cost
        cost = release.cost
        if release.name == "mean":
            expected = mean_mechanism(cost, n, d, r, n)
        elif release.name == "trace":
            # One fixed-point unit per row: the trace needs no rounding slack.
            assert mech.sensitivity == 2.0 ** fixed_point_bits(n)
            assert release.make(cost, bits=7).sensitivity == 2.0**7
            continue
        elif release.name in ("second_moment", "eigenvectors"):
            expected = second_moment_mechanism(cost, n, d, r, n)
        elif release.name == "eigenvalues":
            expected = eigenvalue_mechanism(cost, n, d, r, n)
        else:
            expected = BinghamMechanism(cost, r, rounding)
        assert type(mech) is type(expected)
        assert mech.sensitivity == expected.sensitivity
        if release.name == "mean":
            # A fit passes its own chunk count: fewer partial sums, less slack.
            assert release.make(cost, n_partials=1).sensitivity <= mech.sensitivity
            # A released (smaller) radius scales the sensitivity with it.
            half = release.make(cost, radius=r / 2).sensitivity
            assert half == pytest.approx(mech.sensitivity / 2, rel=1e-12)


def test_mean_factory_refuses_radii_float64_cannot_hold():
    make = mean_factory(10, 2, 0.0)
    with pytest.raises(ValueError, match="data_norm=0"):
        make(ZCDP(1.0))
    make = mean_factory(10, 2, 1.0)
    with pytest.raises(ValueError, match="the radius=1e"):
        make(ZCDP(1.0), radius=1e141)
    assert make(ZCDP(1.0), radius=1e-140).cost == ZCDP(1.0)


def test_trace_factory_defaults_to_the_precision_of_n_rows():
    assert trace_factory(1000)(ZCDP(1.0)).sensitivity == 2.0 ** fixed_point_bits(1000)
    release = trace_release(PureDP(0.5), 1000)
    assert (release.name, release.kind, release.bounded) == ("trace", "laplace", False)


def test_the_check_before_the_spend_refuses_a_budget_too_small():
    # rho = 1e-300 asks the mean's exact sampler for a lattice variance beyond
    # its integer arithmetic: refused by the planned factory, nothing spent.
    total = ZCDP(1e-300)
    plan = ReleasePlan(total, covariance_plan_entries(total, 3, "gauss", True, 100, 2))
    with pytest.raises(
        ValueError, match=r"Test: the release 'mean'.*Nothing was spent"
    ):
        check_plan(plan, "Test")


def test_useless_release_message_from_public_values():
    def message(total, method, n, d):
        plan = ReleasePlan(
            total, covariance_plan_entries(total, d, method, True, n, 1.0)
        )
        prediction = filled_prediction(check_plan(plan, "Test"), method, d, 1.0)
        return useless_release_message("Test", prediction, plan, n, d, 1.0)

    text = message(ZCDP(1e-3), "gauss", 100, 50)
    assert text.startswith("Test: with n=100, d=50, rho=0.001 and data_norm=1")
    assert "no better than the zero matrix" in text
    assert message(ZCDP(10.0), "gauss", 10_000, 3) is None
    assert message(ZCDP(10.0), "auto", 10_000, 3) is None
    assert message(ZCDP(1e-3), "eigen", 100, 50) is None  # no prediction


# -- far rows -------------------------------------------------------------------


def _neighbours(n, d, r, center, direction):
    """Rows around ``center``; the neighbour moves the first, at the center,
    1e12 radii away (the largest change a clipped row can make)."""
    X = center + _rows(n, d, r, seed=3)
    X[0] = center
    Y = X.copy()
    Y[0] = 1e12 * r * np.asarray(direction, dtype=np.float64)
    return X, Y


DIRECTIONS = [[1.0, 0.0, 0.0], [-1.0, 1.0, 1.0]]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("total", TOTALS)
def test_a_far_row_moves_the_mean_by_at_most_its_sensitivity(total, direction):
    # The row 1e12 radii away is clipped to the ball before it is summed, so
    # the exact clipped mean moves by at most 2r/n (l2); the mechanism's
    # sensitivity adds the float64 summation bound, so the computed means obey
    # it with no further tolerance. Laplace noise is calibrated to l1, at most
    # sqrt(d) times l2.
    n, d, r = 40, 3, 2.0
    location = np.full(d, 0.5)
    means = []
    for rows in _neighbours(n, d, r, location, direction):
        (entry,), _ = mean_entries(total, True, n, d, r)
        plan = _NoiselessPlan(total, [entry])
        raw, _, offset, _ = release_mean(
            rows, location, r, plan, np.random.default_rng(0)
        )
        plan.finish()
        means.append(raw)
        assert np.linalg.norm(offset) <= r
    mech = plan.mechanisms["mean"]
    diff = means[0] - means[1]
    norm = np.abs(diff).sum() if isinstance(total, PureDP) else np.linalg.norm(diff)
    assert 0 < norm <= mech.sensitivity


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("total", TOTALS)
@pytest.mark.parametrize("method", ["auto", "gauss", "separate", "eigen"])
def test_a_far_row_moves_each_covariance_statistic_by_at_most_its_sensitivity(
    method, total, direction
):
    # Same center for both neighbours (it is public, or released before).
    # Each statistic's distance is measured in the norm its noise is
    # calibrated to: second moment Frobenius (Gaussian) or upper-triangle l1
    # (Laplace); sorted eigenvalues l2 or l1 (DLY Lemma 8); the trace's
    # fixed-point units, one unit 2^bits per row exactly; EMCov's first
    # utility matrix n M in the operator norm (its utility u^T n M u, unit u).
    n, d, r = 40, 3, 2.0
    center = np.full(d, 0.5)
    plans = []
    for rows in _neighbours(n, d, r, center, direction):
        plan = _NoiselessPlan(
            total, covariance_plan_entries(total, d, method, False, n, r)
        )
        spectrum = release_spectrum(
            rows, center, 0.0, r, method, plan, np.random.default_rng(0)
        )
        plan.finish()
        plans.append(plan)
        assert spectrum.values.shape == (d,)
        assert spectrum.vectors.shape == (d, d)
    x, y = (p.record for p in plans)
    assert x.keys() == y.keys()
    pure = isinstance(total, PureDP)
    for name in x:
        diff = x[name] - y[name]
        sensitivity = plans[0].mechanisms[name].sensitivity
        if name == "trace":
            distance = abs(float(diff))
        elif name in ("second_moment", "eigenvectors"):
            upper = np.triu(diff)
            distance = np.abs(upper).sum() if pure else np.linalg.norm(diff)
        elif name == "eigenvalues":
            distance = np.abs(diff).sum() if pure else np.linalg.norm(diff)
        elif name == "eigenvector_1":
            distance = np.linalg.norm(diff, 2)
        else:
            # Later steps compress n M to the complement of released
            # directions, which differ between the two runs; for a fixed
            # orthonormal basis P, ||P^T A P||_2 <= ||A||_2, the bound above.
            continue
        assert distance <= sensitivity, name


# -- the mean, the trace and the center -----------------------------------------


@pytest.mark.parametrize("total", [ZCDP(1e-8), PureDP(1e-4)])
def test_a_noisy_mean_is_projected_onto_the_ball(total):
    # Noise thousands of radii wide: the offset is scaled back onto the ball,
    # where the exact clipped mean lies (never farther from it).
    n, d, r = 50, 4, 1.0
    X = _rows(n, d, r, seed=1)
    plan = ReleasePlan(total, mean_entries(total, True, n, d, r)[0])
    raw, variance, offset, error = release_mean(
        X, np.zeros(d), r, plan, np.random.default_rng(1)
    )
    plan.finish()
    assert raw.shape == offset.shape == (d,)
    assert np.linalg.norm(raw) > 100 * r
    assert np.linalg.norm(offset) == pytest.approx(r, rel=1e-12)
    cost = plan.cost("mean")
    expected = mean_mechanism(cost, n, d, r, n_partial_sums(X)).variance(d)
    assert variance == expected
    assert 0 < error <= d * variance
    if isinstance(total, PureDP):  # Laplace: no shrinkage, the stated error
        assert error == d * variance
        np.testing.assert_allclose(offset, raw * (r / np.linalg.norm(raw)))


@pytest.mark.parametrize("total", [ZCDP(0.05), PureDP(0.5)])
def test_the_mean_noise_has_its_stated_variance(total):
    # 2,000 releases of a 4-vector: the sample variance of 8,000 noise entries
    # has relative sd sqrt((2 + kappa) / 8000), kappa the excess kurtosis (0
    # Gaussian, 3 Laplace): 0.016 and 0.025; 5 sd.
    n, d, r = 100, 4, 1.0
    X = _rows(n, d, r, seed=2)
    exact = clipped_sums(X, np.zeros(d), r, with_outer=False)[0] / n
    rng = np.random.default_rng(2)
    noise, variances = [], set()
    for _ in range(2000):
        plan = ReleasePlan(total, mean_entries(total, True, n, d, r)[0])
        raw, variance, _, _ = release_mean(X, np.zeros(d), r, plan, rng)
        noise.append(raw - exact)
        variances.add(variance)
    (variance,) = variances
    kurtosis = 3.0 if isinstance(total, PureDP) else 0.0
    tolerance = 5 * math.sqrt((2 + kurtosis) / len(noise) / d)
    assert np.var(noise) == pytest.approx(variance, rel=tolerance)


def test_release_trace_gives_an_upper_bound():
    # beta = 1e-3: the upper bound fails in about 0.1% of runs. 100 rows whose
    # squared norms are 0.3 r^2.
    bits = 40
    units = int(0.3 * 2**bits) * 100
    rng = np.random.default_rng(0)
    uppers = []
    for _ in range(2000):
        plan = ReleasePlan(ZCDP(0.01), [trace_release(ZCDP(0.01), 100)])
        uppers.append(release_trace(units, bits, 100, 1.0, plan, rng)[1])
    assert np.mean(np.array(uppers) < 0.3) < 0.005
    plan = ReleasePlan(PureDP(1e6), [trace_release(PureDP(1e6), 100)])
    estimate, upper, _ = release_trace(units, bits, 100, 1.0, plan, rng)
    assert estimate == pytest.approx(0.3, abs=1e-4)
    assert upper >= estimate


@pytest.mark.parametrize("total", [ZCDP(1e-6), PureDP(1e-3)])
def test_release_trace_stays_in_the_ball_for_any_noise(total):
    # The release is clipped to [0, r^2], where every mean squared clipped
    # norm lies; its variance is the mechanism's, scaled to trace units.
    n, bits, r = 20, fixed_point_bits(20), 3.0
    units = 7 * 2**bits
    rng = np.random.default_rng(4)
    for _ in range(50):
        plan = ReleasePlan(total, [trace_release(total, n)])
        estimate, upper, variance = release_trace(units, bits, n, r, plan, rng)
        assert 0.0 <= estimate <= upper <= r * r
        scale = r * r / (n * 2.0**bits)
        expected = trace_factory(n)(total).variance(1) * scale * scale
        assert variance == pytest.approx(expected, rel=1e-12)


def test_release_center_without_a_mean_draws_nothing():
    X = _rows(10, 2, 1.0, seed=5)
    location = np.array([0.25, -0.5])
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    center, shift, center_sd = release_center(
        X, location, 1.0, False, ReleasePlan(ZCDP(1), []), rng
    )
    assert center is location
    assert shift == 0.0
    assert center_sd is None  # nothing released: nothing to test at an edge
    assert rng.bit_generator.state == state


def test_release_center_adds_the_released_offset():
    n, d, r = 200, 3, 1.0
    X = _rows(n, d, r, seed=6)
    location = np.array([0.1, 0.0, -0.1])
    total = ZCDP(0.5)
    entries = mean_entries(total, True, n, d, r)[0]
    center, shift, center_sd = release_center(
        X, location, r, True, ReleasePlan(total, entries), np.random.default_rng(6)
    )
    _, variance, offset, error = release_mean(
        X, location, r, ReleasePlan(total, entries), np.random.default_rng(6)
    )
    np.testing.assert_array_equal(center, location + offset)
    assert shift == error / d
    assert center_sd == math.sqrt(variance)


# -- the released spectrum ------------------------------------------------------


@pytest.mark.parametrize("total", TOTALS)
@pytest.mark.parametrize("method", METHODS)
def test_the_released_spectrum_is_a_psd_matrix_within_the_cap(total, method):
    n, d, r = 500, 4, 1.0
    X = _rows(n, d, r, seed=7)
    plan = ReleasePlan(total, covariance_plan_entries(total, d, method, False, n, r))
    spectrum = release_spectrum(
        X, np.zeros(d), 0.0, r, method, plan, np.random.default_rng(7)
    )
    plan.finish()  # every planned release (of the chosen option) drew once
    assert isinstance(spectrum, Spectrum)
    assert spectrum.method in ("gauss", "separate", "eigen")
    if method != "auto":
        assert spectrum.method == method
        assert spectrum.cap == r * r
    assert 0.0 <= spectrum.cap <= r * r
    values, vectors = spectrum.values, spectrum.vectors
    assert values.shape == (d,)
    assert vectors.shape == (d, d)
    assert np.all(values >= 0)
    assert values.sum() <= spectrum.cap * (1 + 1e-12)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(d), atol=1e-10)
    estimate = (vectors * values) @ vectors.T
    assert np.linalg.eigvalsh(estimate).min() >= -1e-12
    assert spectrum.noise_sd > 0
    assert math.isfinite(spectrum.noise_sd)


@pytest.mark.parametrize("method", METHODS)
def test_a_huge_budget_releases_the_clipped_second_moment(method):
    # rho = 1e8: noise sd about sqrt(2) r^2 / (n sqrt(2 rho)) = 2e-7, far
    # below the 1% of the second moment's norm allowed (EMCov's steps at
    # eps ~ 1e4 leave an angular error of order sqrt(d / (eps n gap))).
    n, d, r = 2000, 3, 1.0
    X = _rows(n, d, r, seed=8)
    M = clipped_sums(X, np.zeros(d), r)[1] / n
    total = ZCDP(1e8)
    plan = ReleasePlan(total, covariance_plan_entries(total, d, method, False, n, r))
    spectrum = release_spectrum(
        X, np.zeros(d), 0.0, r, method, plan, np.random.default_rng(8)
    )
    estimate = (spectrum.vectors * spectrum.values) @ spectrum.vectors.T
    assert np.linalg.norm(estimate - M) < 0.01 * np.linalg.norm(M)


# -- floors -----------------------------------------------------------------------


def test_whitening_floor_is_at_least_the_noise_and_keeps_the_matrix_definite():
    vectors = np.eye(3)
    assert whitening_floor(Spectrum(np.zeros(3), vectors, 0.5, 1.0, "gauss")) == 0.5
    # A spread of 1e30: the floor d 2^-52 max keeps V diag V^T positive
    # definite as computed.
    values = np.array([1e30, 1.0, 0.0])
    floor = whitening_floor(Spectrum(values, vectors, 1e-9, 1.0, "gauss"))
    assert floor == 3 * 2.0**-52 * 1e30
    rotation = np.linalg.qr(np.random.default_rng(9).normal(size=(3, 3)))[0]
    matrix = (rotation * np.maximum(values, floor)) @ rotation.T
    assert np.all(np.linalg.eigvalsh(matrix) > 0)
    # Nothing released at all: the smallest floor whose -1/2 power is finite.
    tiny = whitening_floor(Spectrum(np.zeros(2), np.eye(2), 0.0, 1.0, "gauss"))
    assert tiny == 4.0 / np.finfo(np.float64).max
    assert math.isfinite(tiny**-0.5)
    infinite = whitening_floor(Spectrum(np.zeros(2), np.eye(2), np.inf, 1.0, "gauss"))
    assert infinite == tiny


def test_eigenvalue_floor_cases():
    # The smaller of the noise and the mean eigenvalue ...
    assert eigenvalue_floor(np.array([0.3, 0.1]), 0.05, 1.0) == 0.05
    assert eigenvalue_floor(np.array([0.3, 0.1]), 1.0, 1.0) == pytest.approx(0.2)
    # ... 2^-52 cap / d when nothing survived the noise ...
    assert eigenvalue_floor(np.zeros(4), 1e6, 2.0) == 2.0 / 4 * 2.0**-52
    # ... the cap-based floor for a NaN noise level ...
    assert eigenvalue_floor(np.array([1e-20, 0.0]), np.nan, 2.0) == 2.0**-52
    # ... and never below d 2^-52 times the largest value.
    assert eigenvalue_floor(np.array([1e30, 0.0]), 1e-9, 1.0) == 2 * 2.0**-52 * 1e30
