"""TailSensitiveCovariance: radius and threshold searches, accuracy, accounting."""

import math

import numpy as np
import pytest

from dpgauss import PrivacyBudget, PrivateCovariance, TailSensitiveCovariance
from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan, dominates
from dpgauss.mechanisms import AboveThreshold
from dpgauss.releases._adaptive import (
    RADIUS_BETA,
    RADIUS_GRID,
    TAU_GRID,
    PairDifferences,
    full_threshold,
    pair_indices,
    predicted_noise,
    private_radius,
    radius_mechanism,
    scan_threshold,
    search_floor,
    search_threshold,
    tau_grid,
)
from dpgauss.releases._covariance import covariance_entries
from dpgauss.utils._sums import row_norms


def _skewed(n, d, seed, heavy=8):
    """Rows of norm 2^-k with Zipf-like counts: most tiny, a few of norm 1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    weights = 1.0 / np.arange(1, heavy + 1) ** 3
    bucket = rng.choice(heavy, size=n, p=weights / weights.sum())
    return X * (2.0 ** (bucket + 1 - heavy))[:, None]


@pytest.mark.parametrize("loose", [1.0, 10.0, 1000.0])
def test_private_radius_finds_the_top_of_the_norms(loose):
    # 600 of 10,000 rows at norm 1: the result is never below the largest norm,
    # and at most one grid step (sqrt 2) above it unless noise stops the
    # scan early on one of the count-0 radii above the data: each does so with
    # probability about exp(-T eps / 4) / 2 = 1/1600 (T = 4 log(800) / eps), so
    # with 20 such radii (loose = 1000) in about 1% of runs; allow 10%.
    norms = np.concatenate([np.full(600, 1.0), np.full(9400, 0.01)])
    rng = np.random.default_rng(0)
    svt = radius_mechanism(1.0, norms.size)
    radii = np.array([private_radius(norms, loose, svt, rng) for _ in range(100)])
    assert radii.min() >= 1.0 - 1e-12
    assert np.mean(radii <= math.sqrt(2) * 1.0001) >= 0.9


class _Recorder:
    """An AboveThreshold stand-in that records the queries and fires at one."""

    def __init__(self, fire_at=None):
        self.fire_at, self.asked = fire_at, None

    def first_above(self, values, rng):
        self.asked = np.asarray(values)
        if self.fire_at is None or self.fire_at >= values.size:
            return None
        return self.fire_at


def test_scans_do_not_ask_the_query_whose_answer_cannot_change_the_result():
    # The radius scan's count at data_norm is 0 (norms are clipped to it) and
    # the threshold search's query at tau = r has no bias: firing there or at
    # the next query returns the same value, so they are not asked, and noise
    # alone cannot stop either at the top (at n = 150 it did in about a third
    # of the fits). The first query asked maps to the old second one.
    norms = np.concatenate([np.full(50, 0.3), np.full(50, 0.05)])
    svt = _Recorder(fire_at=0)
    assert private_radius(norms, 1.0, svt, None) == 1.0
    assert svt.asked.size == RADIUS_GRID - 1
    assert svt.asked[0] == 0.0  # count beyond 1/sqrt(2): none
    svt = _Recorder(fire_at=3)  # the radius 2^-2 (query 4): return 2^-1.5
    assert private_radius(norms, 1.0, svt, None) == 2.0**-1.5
    assert private_radius(norms, 1.0, _Recorder(), None) == 1.0
    taus = tau_grid(1.0)
    noise = np.full(TAU_GRID, 1e-3)
    for fire_at, expected in ((0, taus[0]), (2, taus[2]), (None, taus[-2])):
        rec = _Recorder(fire_at)
        got = search_threshold(norms, 1.0, noise, 100, lambda s, r=rec: r, None)
        assert got == expected
        assert rec.asked.size == TAU_GRID - 1


def _search(norms, trace, final, n, d, rng):
    plan = ReleasePlan(final, covariance_entries("auto", final, d))
    noise = [predicted_noise(plan, n, d, t, trace) for t in tau_grid(1.0)]

    def make_svt(sensitivity):
        return AboveThreshold(threshold=0.0, sensitivity=sensitivity, epsilon=1.0)

    return search_threshold(norms, 1.0, noise, n, make_svt, rng)


def test_threshold_search_clips_a_thin_tail_and_keeps_a_thick_one():
    n, d = 20_000, 50
    final = ZCDP(0.05)
    rng = np.random.default_rng(0)
    # Five rows of norm 1 add a bias of 5/n (1 - tau^2) ~ 2.5e-4 when clipped;
    # the predicted (denoised) noise at tau = 1 is ~2e-3 (0.4 sqrt(2 t sigma),
    # t ~ 2^-6, sigma ~ 1.1e-3) and falls like tau, so clipping pays; where the
    # noisy search stops varies from run to run, so the typical run must clip.
    thin = np.concatenate([np.full(5, 1.0), np.full(n - 5, 2.0**-3)])
    taus = [_search(thin, np.mean(thin**2), final, n, d, rng) for _ in range(20)]
    assert np.median(taus) <= 0.5
    thick = np.full(n, 1.0)
    tau = _search(thick, 1.0, final, n, d, rng)
    assert tau == 1.0  # clipping every row would cost far more than noise


def test_search_floor_is_where_bias_surely_exceeds_noise():
    # gamma(tau) = mean((min(|y|, 1)^2 - tau^2)_+) >= t - tau^2: at the floor the
    # exact bias exceeds the noise for every set of norms (here 200 random sets
    # of every shape, with the exact t), so a noise-free search would have
    # stopped at or above it.
    rng = np.random.default_rng(0)
    taus = tau_grid(1.0)
    for _ in range(200):
        norms = rng.uniform(0, 1, rng.integers(5, 50)) ** rng.uniform(0.2, 5)
        t = float(np.mean(norms**2))
        noise = t * rng.uniform(0, 1) * taus**2  # falls with tau, as predicted
        floor = search_floor(1.0, noise, t)
        bias = np.mean(np.maximum(norms**2 - taus[floor] ** 2, 0.0))
        assert taus[floor] ** 2 <= t - noise[floor] or floor == TAU_GRID - 1
        assert bias >= noise[floor] - 1e-12
    # No tau qualifies (trace within the noise): the whole grid.
    assert search_floor(1.0, np.ones(TAU_GRID), 0.5) == TAU_GRID - 1
    assert search_floor(1.0, np.zeros(TAU_GRID), 0.0) == TAU_GRID - 1


def test_search_does_not_fall_below_the_floor():
    # A threshold the queries never reach (the threshold noise of a search on
    # few rows can be that large): before, the search returned the bottom of
    # the grid, 2^-60 r, and the estimate was the zero matrix. With the trace
    # it returns the tau above the floor (0.5: t = 0.25 with no noise).
    norms = np.full(100, 0.5)  # t = 0.25
    noise = np.zeros(TAU_GRID)

    def never(sensitivity):
        return AboveThreshold(threshold=1e9, sensitivity=sensitivity, epsilon=1.0)

    rng = np.random.default_rng(0)
    taus = tau_grid(1.0)
    floor = search_floor(1.0, noise, 0.25)
    assert taus[floor] == 0.5  # tau^2 = 0.25 <= t - 0
    got = search_threshold(norms, 1.0, noise, 100, never, rng, trace=0.25)
    assert got == taus[floor - 1]
    # Without it the bottom of the grid is the floor.
    assert search_threshold(norms, 1.0, noise, 100, never, rng) == taus[-2]


def test_small_n_near_mean_centers_around_the_shrunk_mean():
    # Iris-like (n = 150, d = 4, mean at the origin, data_norm = 4, rho = 0.1):
    # one scan, whose pairs' radius is unreliable at this n (it fell inside the
    # data in 10% of fits, and the pairs scored 0.66 of the zero matrix's
    # error against the mean path's 0.37). With a precise pairs' trace they
    # are taken only if the mean's error (shrunk: about 2 of the 4
    # coordinates' variance) exceeds 4 tr C / sqrt(d) = 8. Measured: 20 of 20
    # fits around the mean, mean error 0.28 (0.40 and 17 of 20 before).
    X = np.random.default_rng(0).normal(size=(150, 4))
    C = np.cov(X.T, bias=True)
    fits = [
        TailSensitiveCovariance(rho=0.1, data_norm=4.0, random_state=s).fit(X)
        for s in range(20)
    ]
    assert sum(f.centering_ == "mean" for f in fits) >= 18
    errors = [np.linalg.norm(f.covariance_ - C) / np.linalg.norm(C) for f in fits]
    assert np.mean(errors) < 0.4


def test_small_n_loose_bound_stays_near_the_zero_matrix():
    # n = 150, one coordinate N(0, 1), two constant, a bound 30 times the data,
    # epsilon = 1: a fit that centered far from the data (a released mean 27
    # away) and kept a noise-dominated release at its own trace would err up
    # to 443 times the zero matrix's error (mean 16). Measured: mean 0.91,
    # worst 1.0 over 40 fits.
    errors = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        X = np.zeros((150, 3))
        X[:, 0] = rng.normal(size=150)
        C = np.cov(X.T, bias=True)
        est = TailSensitiveCovariance(data_norm=30.0, epsilon=1.0, random_state=seed)
        error = np.linalg.norm(est.fit(X).covariance_ - C) / np.linalg.norm(C)
        errors.append(error)
    assert max(errors) < 1.5
    assert np.mean(errors) < 1.1


def test_tail_sensitive_on_skewed_data():
    # Heavy tail (8 buckets): most rows are tiny, so the fixed methods, clipped at
    # 1, pay noise for a radius almost no row needs; the denoiser recovers much
    # of that, so the tail estimator (which spends 9/32 of the cost on its
    # searches) is within 1.5x of the better fixed method. Mean over 5 fits.
    n, d, rho = 20_000, 50, 0.1
    X = _skewed(n, d, 0)
    M = X.T @ X / n

    def error(est):
        return np.mean(
            [
                np.linalg.norm(est.set_params(random_state=s).fit(X).covariance_ - M)
                for s in range(5)
            ]
        )

    tail = error(TailSensitiveCovariance(rho=rho, data_norm=1.0, center=False))
    best_fixed = min(
        error(PrivateCovariance(method=m, rho=rho, data_norm=1.0, center=False))
        for m in ("gauss", "separate")
    )
    assert tail < 1.5 * best_fixed


def test_loose_bound_costs_little():
    # data_norm 100x too large: the private radius recovers the scale; the
    # error stays within 1.5x (the target), averaged over 5 fits.
    n, d = 20_000, 30
    X = _skewed(n, d, 1, heavy=4)
    M = X.T @ X / n
    errors = {}
    for bound in (1.0, 100.0):
        est = TailSensitiveCovariance(rho=0.1, data_norm=bound, center=False)
        errors[bound] = np.mean(
            [
                np.linalg.norm(est.set_params(random_state=s).fit(X).covariance_ - M)
                for s in range(5)
            ]
        )
    assert errors[100.0] <= 1.5 * errors[1.0]


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(1.0)])
def test_ledger_matches_the_plan_and_adds_up(center, total):
    budget = PrivacyBudget(rho=100.0)
    kwargs = (
        {"rho": total.rho} if isinstance(total, ZCDP) else {"epsilon": total.epsilon}
    )
    est = TailSensitiveCovariance(
        **kwargs, data_norm=5.0, center=center, budget=budget, random_state=0
    ).fit(_skewed(2000, 5, 0))
    events = [(e.cost, e.mechanism) for e in budget.ledger()]
    assert events == est._pricing_plan(5, total=total).charges()
    assert est.privacy_spent_.to_zcdp().rho == pytest.approx(total.to_zcdp().rho)
    labels = [m for _, m in events]
    # center=True: the scans' choice charges its dominating option (two scans
    # under zCDP, where their pure epsilons add to more; one under pure DP).
    scans = {
        ZCDP: ["choice:scans/radius", "choice:scans/spread_radius"],
        PureDP: ["choice:scans/pair_radius"],
    }[type(total)]
    expected = scans if center else ["above_threshold:radius"]
    assert labels[: len(expected)] == expected
    assert labels[-2:] == [
        "above_threshold:clip_threshold",
        "choice:covariance/second_moment",
    ]
    assert len(labels) == len(expected) + (4 if center else 3)
    assert est.clip_threshold_ <= est.radius_ <= 5.0 * (2**0.5 if center else 1)


@pytest.mark.parametrize(
    "split", [(0.5, 0.5), (0.2, 0.2, 0.2, 0.2), (0.5, 0.5, 0.0, 0.0), "quarter"]
)
def test_bad_split_is_refused_before_spending(split):
    budget = PrivacyBudget(rho=1.0)
    est = TailSensitiveCovariance(rho=0.5, data_norm=1.0, split=split, budget=budget)
    with pytest.raises((ValueError, TypeError), match="split"):
        est.fit(_skewed(100, 3, 0))
    assert budget.ledger() == []


def test_outputs_are_valid_and_score():
    X = _skewed(3000, 4, 2)
    est = TailSensitiveCovariance(epsilon=1.0, data_norm=1.0, random_state=0).fit(X)
    assert np.linalg.eigvalsh(est.covariance_).min() >= -1e-12
    assert np.trace(est.covariance_) <= est.clip_threshold_**2 * (1 + 1e-9)
    assert est.method_ in {"gauss", "separate"}
    assert np.isfinite(est.score(X))


@pytest.mark.parametrize("n", [2, 40, 150, 10**6])
def test_scan_threshold_is_reachable_with_n_rows(n):
    # DLY's T = (4/eps) log(K/beta) was 178 at eps = 0.15, above n = 150, where
    # the scan could then only stop by noise; with monotone noise the full T is
    # (2/eps) (log(K/beta) + 1) = 102. The cap keeps T at most n / 2 and leaves
    # large n untouched.
    eps = 0.15
    full = (2.0 / eps) * (math.log(RADIUS_GRID / RADIUS_BETA) + 1.0)
    assert full_threshold(eps) == pytest.approx(full)
    assert scan_threshold(eps, n) == min(full_threshold(eps), n / 2)


def test_small_n_radius_does_not_collapse():
    # Iris-like: n = 150, d = 4, norms about 2, data_norm = 4, rho = 0.1. Before
    # the cap the radius fell to data_norm * 2^-39.5 and the covariance to about
    # 0 (error 0.93 of the zero matrix's). The scans now stop near the median
    # norm at worst (T <= n / 2); radius_ is 2 or more for rows around the
    # mean, about 0.7 at worst for pairs (whose median norm is about 2 / sqrt 2
    # ... times sqrt 2 for the reported units, halved by one early stop).
    X = np.random.default_rng(0).normal(size=(150, 4))
    C = np.cov(X.T, bias=True)
    radii, errors = [], []
    for seed in range(10):
        est = TailSensitiveCovariance(rho=0.1, data_norm=4.0, random_state=seed)
        est.fit(X)
        radii.append(est.radius_)
        errors.append(np.linalg.norm(est.covariance_ - C) / np.linalg.norm(C))
    assert min(radii) >= 0.5
    assert np.median(errors) < 0.8


def test_scan_that_never_fires_returns_the_bound():
    # Fewer rows than the threshold and no noise large enough: no evidence that
    # the bound is loose, so the bound itself (not the bottom of the grid).
    svt = AboveThreshold(threshold=1e6, sensitivity=1.0, epsilon=10.0)
    norms = np.full(5, 0.5)
    assert private_radius(norms, 4.0, svt, np.random.default_rng(0)) == 4.0


@pytest.mark.parametrize("n", [2, 7, 10])
def test_replacing_one_row_changes_at_most_one_pair(n):
    # The privacy of the pairs path: for a pairing drawn independently of the
    # data, neighbours' pair rows z differ in at most one row, whichever row is
    # replaced and however far (1e300 keeps x/2 - x'/2 finite).
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3))
    first, second = pair_indices(n, np.random.default_rng(1))
    assert first.size == second.size == n // 2
    assert len(set(first) | set(second)) == 2 * (n // 2)
    base = PairDifferences(X, first, second)
    for j in range(n):
        Y = X.copy()
        Y[j] = [1e300, -1e300, 1e12]
        other = PairDifferences(Y, first, second)
        changed = np.any(base.rows() != other.rows(), axis=1)
        assert changed.sum() <= 1
        assert np.all(np.isfinite(other.rows()))
        np.testing.assert_allclose(other.norms(), row_norms(other.rows(), 0.0 * X[0]))


def test_far_mean_uses_pairs_and_stays_useful():
    # Standardized-like rows 10 data scales from the origin, n = 178, d = 13 (the
    # bench_quality setting): around a released mean the covariance carries the
    # mean's noise as a rank-one error about 20 times ||C||_F; from pairs it
    # needs no center. Median over 12 fits (zero matrix = 1): before 8.1. Fits
    # where the pair scan stops far above the data still miss.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(178, 13)) @ np.diag(np.linspace(0.5, 1.5, 13))
    far = X + 10.0 * np.sqrt(np.sum(np.var(X, axis=0))) / np.sqrt(13)
    C = np.cov(far.T, bias=True)
    bound = 11 * 2 * np.sqrt(13)
    fits = [
        TailSensitiveCovariance(rho=0.1, data_norm=bound, random_state=s).fit(far)
        for s in range(12)
    ]
    errors = [np.linalg.norm(f.covariance_ - C) / np.linalg.norm(C) for f in fits]
    assert sum(f.centering_ == "pairs" for f in fits) >= 6
    assert np.median(errors) < 3.0


def test_near_mean_with_many_rows_centers_around_the_mean():
    # Many rows, location at the mean: the mean's noise is negligible, the
    # centered path (twice fewer rows' worth of noise than pairs) is kept.
    X = np.random.default_rng(0).normal(size=(20000, 5))
    est = TailSensitiveCovariance(rho=1.0, data_norm=10.0, random_state=0).fit(X)
    assert est.centering_ == "mean"
    assert (
        TailSensitiveCovariance(rho=1.0, data_norm=10.0, center=False, random_state=0)
        .fit(X)
        .centering_
        == "none"
    )


@pytest.mark.parametrize("kind", ["rho", "epsilon"])
def test_scans_choice_charges_a_cost_that_dominates_both_options(kind):
    # Exact dominance (a 1e-12 tolerance would under-record the one-scan
    # option by 1 ulp at rho = 2): for 300 budgets the charged option's
    # cost components are >= those of either option, exactly.
    for value in np.logspace(-8, 4, 300):
        est = TailSensitiveCovariance(data_norm=1.0, **{kind: float(value)})
        plan = est._pricing_plan(3)
        choice = next(e for e in plan.entries if e.name == "scans")
        charged = [r.cost for r in choice.charged]
        for option in choice.options.values():
            assert dominates(charged, [r.cost for r in option])


@pytest.mark.parametrize("estimator", [TailSensitiveCovariance, PrivateCovariance])
def test_tiny_radius_completes_after_the_charge(estimator):
    # data_norm = 2e-84 passes the calibration checks; squares of its fourth
    # power underflow, which crashed the trace shrinkage after the charge.
    X = np.random.default_rng(0).normal(size=(500, 3)) * 1e-85
    budget = PrivacyBudget(rho=10.0)
    est = estimator(rho=1.0, data_norm=2e-84, budget=budget, random_state=0).fit(X)
    assert np.all(np.isfinite(est.covariance_))
    assert budget.spent().rho == pytest.approx(1.0)


# Outputs of TailSensitiveCovariance(random_state=0) recorded before its plan and
# releases moved to dpgauss.releases._adaptive (shared with PrivatePCA and
# PrivateWhitener, method="tail"): (params, radius_, clip_threshold_,
# centering_, method_, trace of covariance_, sum of location_). The radius and
# threshold are grid points (exact); the two sums are checked to rtol 1e-9: BLAS
# rounding moves them by ~1e-13 relative, a different noise draw by its noise
# sd (here 1e-3 relative or more).
_RECORDED = [
    (
        {"rho": 1.0, "data_norm": 8.0},
        5.656854249492381, 2.8284271247461903, "mean", "gauss",
        4.7290927803868845, 19.72445024470056,
    ),
    (
        {"epsilon": 1.0, "data_norm": 8.0},
        2.8284271247461903, 2.0000000000000004, "pairs", "gauss",
        0.6466254180649883, 15.716537894012285,
    ),
    (
        {"rho": 0.5, "data_norm": 8.0, "center": False},
        5.656854249492381, 4.000000000000001, "none", "gauss",
        14.66333561146182, 0.0,
    ),
]  # fmt: skip


@pytest.mark.parametrize("recorded", _RECORDED, ids=["mean", "pairs-pure", "none"])
def test_outputs_unchanged_by_the_shared_release_module(recorded):
    from sklearn.datasets import load_digits

    params, radius, tau, centering, method, trace, location = recorded
    X = load_digits().data / 16.0
    est = TailSensitiveCovariance(random_state=0, **params).fit(X)
    assert (est.radius_, est.clip_threshold_) == (radius, tau)
    assert (est.centering_, est.method_) == (centering, method)
    assert np.trace(est.covariance_) == pytest.approx(trace, rel=1e-9)
    assert est.location_.sum() == pytest.approx(location, rel=1e-9, abs=0.0)
