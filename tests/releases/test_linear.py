"""The linear regression release (dpgauss.releases._linear)."""

from dataclasses import replace

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._linear import (
    _chunk_moments,
    _first_stage,
    linear_entries,
    regression_boxes,
    release_linear,
)


def _rows(n, d, seed=0, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    beta = np.linspace(-2.0, 2.5, d)
    y = X @ beta + 3.0 + rng.normal(0.0, noise, n)
    return X, y, beta


def _fit(X, y, total, fit_intercept=True, seed=0, target=(-12.0, 18.0)):
    n, d = X.shape
    boxes = regression_boxes((-1.0, 1.0), target, d, fit_intercept, "Test")
    plan = ReleasePlan(total, linear_entries(total, n, d, fit_intercept))
    return release_linear(X, y, boxes, fit_intercept, plan, np.random.default_rng(seed))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_huge_budget_gives_least_squares(fit_intercept):
    # rho 1e12: the noise (sd ~ R^2 / (n sqrt(rho))) and the ridge it sets are
    # ~1e-9 of the Gram matrix's entries, so the coefficients are those of
    # least squares on the same rows (none clipped: y within the target box,
    # and the refinement's range widened to 1 + ||beta_1||_1, where no
    # residual is clipped) up to about 1e-6.
    X, y, _ = _rows(5000, 4)
    if not fit_intercept:
        y = y - 3.0
    got = _fit(X, y, ZCDP(1e12), fit_intercept)
    A = np.column_stack([X, np.ones(len(y))]) if fit_intercept else X
    want = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(got.coef, want[:4], atol=1e-5)
    if fit_intercept:
        assert got.intercept == pytest.approx(want[4], abs=1e-5)
    else:
        assert got.intercept == 0.0


@pytest.mark.parametrize("total", [ZCDP(0.5), PureDP(1.0)])
def test_the_coefficients_are_close_at_a_moderate_budget(total):
    # n = 1e5, d = 5: the moments' noise on the Gram matrix is ~1e-4 of its
    # smallest eigenvalue (1/3 for uniform columns), so the error is the
    # sampling error plus a few 1e-3 in box units (times h_y = 15).
    X, y, beta = _rows(100_000, 5, seed=1)
    got = _fit(X, y, total, seed=2)
    assert np.max(np.abs(got.coef - beta)) < 0.2
    assert got.intercept == pytest.approx(3.0, abs=0.2)


def test_every_noise_draw_gives_finite_coefficients():
    # n = 30 at rho 1e-4: the noise dwarfs the statistics, the released Gram
    # matrix is far from positive definite; the ridge and the raised spectrum
    # keep the solve defined.
    X, y, _ = _rows(30, 6, seed=3)
    for seed in range(20):
        got = _fit(X, y, ZCDP(1e-4), seed=seed)
        assert np.all(np.isfinite(got.coef))
        assert np.isfinite(got.intercept)
        assert got.ridge > 0.0
        assert 0.0 < got.residual_range < np.inf


def test_the_refinement_rows_stay_in_the_box_for_any_released_centre():
    # The second pass's rows read a released centre and range: whatever they
    # are (huge, tiny, of either sign), every entry stays in [-1, 1], so the
    # second release's sensitivity is the first's.
    rng = np.random.default_rng(6)
    chunk = rng.uniform(-3.0, 3.0, size=(50, 2))
    targets = rng.uniform(-30.0, 30.0, 50)
    args = (np.zeros(2), np.ones(2), 0.0, 10.0, 1.0, np.sqrt(4.0))
    for beta, width in [
        (np.array([1e300, -1e300, 1e300]), 1e-300),
        (np.array([-1e308, 1e308, 0.0]), 1e-308),
        (np.array([0.3, -0.2, 0.1]), 1e-3),
        (np.array([0.3, -0.2, 0.1]), 1e300),
    ]:
        sums, S = _chunk_moments(chunk, targets, *args, beta, width)
        rows_max = np.sqrt(np.diag(S))  # each column's root sum of squares
        assert np.all(np.isfinite(S))
        assert np.all(np.abs(sums) <= 50.0)
        assert np.all(rows_max <= np.sqrt(50.0))


def test_the_first_stage_centres_on_the_intercept_when_its_fit_is_noise():
    # A released first stage whose Gram matrix is noise (its slopes huge):
    # the intercept alone leaves the smaller residuals, so it is the centre;
    # with a clean release the fit is, and the range is a few sds of its
    # residuals (sd 0.1 here: 3 sqrt(0.01 + 0.5 sd_estimate)).
    G = np.array([[0.3, 0.0, 0.0], [0.0, 0.3, 0.0], [0.0, 0.0, 1.0]])
    beta = np.array([0.5, -0.25, 0.2])
    m = G @ beta
    tt = float(beta @ G @ beta) + 0.01
    released = np.zeros((4, 4))
    released[:3, :3], released[:3, 3], released[3, :3] = G, m, m
    released[3, 3] = tt
    # Entry variances 1e-8: the estimate's sd ~1.3e-4, and widening stops at
    # sqrt(0.01 * 0.01 / (n 1e-8)) = 0.1 < 0.3 at n = 1e6.
    small = (1e-8, 1e-8)
    centre, width = _first_stage(released, 0.3, small, 1e-8, 10**6, 2, True)
    np.testing.assert_allclose(centre, beta, atol=1e-6)
    assert 0.30 < width < 0.302
    # At n = 1e3 the same noise is under 1% of the sampling error: the range
    # widens to 1 + ||beta||_1 (of the centre, equal to beta up to the
    # ridge's 1e-8), where no residual is clipped.
    wide = _first_stage(released, 0.3, small, 1e-8, 10**3, 2, True)[1]
    assert wide == pytest.approx(1.95, abs=1e-7)
    noisy = released.copy()
    noisy[:2, :2] = [[1e-4, 0.0], [0.0, 1e-4]]  # the slopes blow up
    noisy[:2, 3] = noisy[3, :2] = [0.3, -0.3]
    centre, width = _first_stage(noisy, 0.0, (1e-6, 1e-6), 1e-6, 10**6, 2, True)
    np.testing.assert_array_equal(centre[:2], [0.0, 0.0])
    assert centre[2] == pytest.approx(0.2)


def test_two_stages_catch_up_with_the_aggregate_at_a_small_budget():
    # n = 30,000, d = 3, features in [-1, 1], noise sd 1, target box +-8 (five
    # times y's spread), rho 0.001: one stage pays its noise on the box and
    # erred by 0.17-0.19 (median coefficient error); the refinement pays it
    # on the residuals' few sds, 0.07-0.08 over 30 seeds (the aggregate of
    # least-squares fits: 0.07). 12 seeds: the median's sd is about 0.01.
    rng = np.random.default_rng(7)
    beta = np.array([1.0, -2.0, 0.5])
    errors = []
    for seed in range(12):
        X = rng.uniform(-1.0, 1.0, size=(30_000, 3))
        y = X @ beta + rng.normal(0.0, 1.0, 30_000)
        got = _fit(X, y, ZCDP(0.001), seed=seed, target=(-8.0, 8.0))
        errors.append(np.linalg.norm(got.coef - beta))
    assert np.median(errors) < 0.12


def test_the_caller_rows_are_not_modified_and_far_rows_are_boxed():
    X, y, _ = _rows(2000, 3, seed=4)
    X[0] = 1e300
    y[1] = -np.inf
    kept = (X.copy(), y.copy())
    got = _fit(X, y, ZCDP(1.0), seed=5)
    assert np.all(np.isfinite(got.coef))
    np.testing.assert_array_equal(X, kept[0])
    np.testing.assert_array_equal(y, kept[1])


def test_slopes_lost_in_the_noise_give_the_zero_coefficient_model():
    # A target whose features explain 0.1% of its variance, in a box 20 times
    # its spread, at rho 0.05: the noise's error on the slopes (~1e-3 in box
    # units) dwarfs what they explain (~1e-6), so the release is the
    # intercept alone; the same rows with a strong signal keep their slopes.
    rng = np.random.default_rng(11)
    X = rng.uniform(-1.0, 1.0, size=(5000, 5))
    weak = 0.03 * X[:, 0] + rng.normal(0.0, 1.0, 5000)
    got = _fit(X, weak, ZCDP(0.05), target=(-20.0, 20.0), seed=1)
    np.testing.assert_array_equal(got.coef, np.zeros(5))
    assert got.intercept == pytest.approx(0.0, abs=0.5)
    strong = 3.0 * X[:, 0] + rng.normal(0.0, 1.0, 5000)
    got = _fit(X, strong, ZCDP(0.05), target=(-20.0, 20.0), seed=1)
    assert got.coef[0] == pytest.approx(3.0, abs=0.5)


class _Frozen:
    """A planned mechanism whose release ignores the private value it is
    given: it randomises a public value instead (recorded on public rows),
    with its own fixed seed. Everything else is the planned mechanism's."""

    def __init__(self, inner, name, public):
        self.inner, self.name, self.public = inner, name, public
        self.cost, self.draws = inner.cost, 0

    def __getattr__(self, attribute):
        return getattr(self.inner, attribute)

    def randomise(self, value, random_state=None):
        self.draws += 1
        self.public.setdefault(self.name, np.array(value, dtype=np.float64))
        seed = np.random.default_rng(list(self.name.encode()))
        return self.inner.randomise(self.public[self.name], seed)


def _frozen_fit(X, y, total, fit_intercept, public):
    n, d = X.shape
    entries = [
        replace(
            r,
            make=lambda c, m=r.make, k=r.name, **case: _Frozen(m(c, **case), k, public),
        )
        for r in linear_entries(total, n, d, fit_intercept)
    ]
    plan = ReleasePlan(total, entries)
    boxes = regression_boxes((-1.0, 1.0), (-5.0, 5.0), d, fit_intercept, "Test")
    got = release_linear(X, y, boxes, fit_intercept, plan, np.random.default_rng(0))
    plan.finish()
    return (got.coef.tobytes(), got.intercept, got.ridge, got.lower, got.residual_range)


def _taint_cases(n=3000, d=3):
    rng = np.random.default_rng(12)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    yield X, X @ [1.0, -2.0, 0.5] + 0.3 + rng.normal(0.0, 0.2, n)  # the public rows
    yield X, -X @ [1.0, -2.0, 0.5] + rng.normal(0.0, 3.0, n)
    far = rng.uniform(-0.1, 0.1, size=(n, d))
    far[0], y = 1e300, np.full(n, 4.0)
    y[0] = -1e300
    yield far, y
    yield np.zeros((n, d)), rng.normal(0.0, 1.0, n)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("total", [ZCDP(1e6), ZCDP(0.01), PureDP(1e6), PureDP(1.0)])
def test_everything_after_the_releases_reads_released_values_only(total, fit_intercept):
    # Every mechanism releases the same public value whatever it is given:
    # then beta_1, c, the second pass's rows and the coefficients are
    # functions of public and released values only, so the whole release is
    # the same bits on any rows (same n, d). The public rows are those of a
    # real fit (c < 1 at rho 0.01, the refinement centred on a fit).
    public = {}
    outputs = {
        _frozen_fit(X, y, total, fit_intercept, public) for X, y in _taint_cases()
    }
    assert len(outputs) == 1, outputs


def test_the_taint_check_catches_a_centre_read_off_the_exact_moments(monkeypatch):
    # The canary: beta_1 and c from the exact first-pass moments (not the
    # released ones); the releases are still frozen, yet the output moves.
    import dpgauss.releases._linear as module

    exact, moments, first_stage = {}, module._moments, module._first_stage

    def stash(X, labels, args, n):
        out = moments(X, labels, args, n)
        exact.setdefault("M", out[1])
        return out

    def peek(released, *args):
        return first_stage(np.array(exact.pop("M")), *args)

    monkeypatch.setattr(module, "_moments", stash)
    monkeypatch.setattr(module, "_first_stage", peek)
    public = {}
    outputs = {_frozen_fit(X, y, ZCDP(0.01), True, public) for X, y in _taint_cases()}
    assert len(outputs) > 1


@pytest.mark.parametrize("total", [PureDP(1e100), PureDP(1e149), ZCDP(1e200)])
def test_the_largest_budgets_the_checks_accept_give_least_squares(total):
    # Entry variances near 1e-200 (pure epsilon 1e100, n = 1000) to 1e-300:
    # their products, a b / (a + b) for the averaged releases' variances,
    # underflowed to 0, the noise bound and ridge with them, and the
    # inverse-variance weights became 0 / 0: the intercept was NaN after
    # the spend (pure epsilon >= about 1e80 at n = 1000, rho >= 1e150).
    X, y, _ = _rows(1000, 2, seed=8)
    got = _fit(X, y, total)
    A = np.column_stack([X, np.ones(len(y))])
    want = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(got.coef, want[:2], atol=1e-9)
    assert got.intercept == pytest.approx(want[2], abs=1e-9)
    assert got.ridge > 0.0


class _Watched:
    """A planned mechanism that records the generator each draw reads."""

    def __init__(self, inner, seen):
        self.inner, self.seen = inner, seen

    def __getattr__(self, attribute):
        return getattr(self.inner, attribute)

    def randomise(self, value, random_state=None):
        state = random_state.bit_generator.state["state"]["state"]
        self.seen.append((random_state, state))
        return self.inner.randomise(value, random_state)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("total", [ZCDP(0.1), PureDP(1.0)])
def test_every_release_draws_fresh_noise_from_the_fit_generator(total, fit_intercept):
    # Adaptive composition needs independent noises: every release draws
    # from the fit's one generator, each at a new state. A refinement drawn
    # from a copy of the state the first stage drew at (its noise a rescaled
    # copy, so ``sd2 R1 - sd1 R2`` is exact) passed the audits.
    X, y, _ = _rows(500, 2)
    seen = []
    entries = [
        replace(r, make=lambda c, m=r.make, **case: _Watched(m(c, **case), seen))
        for r in linear_entries(total, 500, 2, fit_intercept)
    ]
    plan = ReleasePlan(total, entries)
    boxes = regression_boxes((-1.0, 1.0), (-12.0, 18.0), 2, fit_intercept, "Test")
    rng = np.random.default_rng(0)
    release_linear(X, y, boxes, fit_intercept, plan, rng)
    assert len(seen) == len(entries)
    assert all(generator is rng for generator, _ in seen)
    assert len({state for _, state in seen}) == len(entries)
