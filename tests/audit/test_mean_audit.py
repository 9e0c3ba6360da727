"""Audits of PrivateMean's releases with a row 1e12 radii away from a far center.

A published CoinPress inside subsample-and-aggregate centers the data on the
non-private mean before clipping; one far row then moves its output by thousands
of noise sds. These audits release the CoinPress mean step (in a public,
non-trivial frame, around a center at 1e14) and the plan method's log-size
scales, and the one-column medians of row norms (the norm bound, the top
eigenvalue bound) many times on two neighbours, one of whose rows lies far away,
and bound epsilon from below; each has a canary (the non-private centering, a
sensitivity off by a factor) that must be caught.
"""

import numpy as np
import pytest

import dpgauss.mean._frame as mean_module
import dpgauss.releases._range as steps_module
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.mean._frame import log_scales
from dpgauss.releases._coinpress_mean import (
    coinpress_mean,
    mean_entries,
)
from dpgauss.releases._range import (
    Stages,
    norm_bound,
    range_release,
    top_eigenvalue,
)
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

RHO, DELTA, N, D = 0.5, 1e-2, 1000, 3
CLAIM = zcdp_to_approx(RHO, DELTA)
CENTER = np.full(D, 1e14)
FRAME = np.array([[2.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.3, 0.0, 0.5]])


def _neighbours(ratio=1e12):
    rng = np.random.default_rng(0)
    X = CENTER + rng.normal(size=(N, D)) * 0.3
    Y = X.copy()
    Y[0] = CENTER + ratio * np.array([1.0, -1.0, 1.0])
    return X, Y


def _repeat(once):
    """An audit runner: ``once(rng)`` (one release, a float) n times."""

    def run(n, rng):
        return np.array([once(rng) for _ in range(n)])

    return run


def _mean_runner(X, center=None):
    start = CENTER if center is None else center

    def once(rng):
        stages = Stages(ZCDP(RHO), mean_entries(ZCDP(RHO), 1))
        mean = coinpress_mean(X, FRAME, start, 1.0, stages.plan, 1, rng, 1)[0]
        stages.finish()
        return (FRAME @ (mean - CENTER)).sum()

    return _repeat(once)


def _audit(run_a, run_b, n):
    return audit(
        run_a, run_b, n_samples=n, n_select=n // 2, delta=DELTA, random_state=7
    )


def test_coinpress_mean_step_keeps_its_claim_with_far_rows():
    X, Y = _neighbours()
    result = _audit(_mean_runner(X), _mean_runner(Y), 10_000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_non_private_centering_is_caught():
    X, Y = _neighbours()
    run_a = _mean_runner(X, center=X.mean(axis=0))
    run_b = _mean_runner(Y, center=Y.mean(axis=0))
    result = _audit(run_a, run_b, 2000)
    assert result.epsilon_lower > CLAIM, result


def _scales_runner(pairs):
    def once(rng):
        stages = Stages(ZCDP(RHO), mean_module.frame_entries(ZCDP(RHO), "plan"))
        value = np.log(log_scales(pairs, 1.0, stages.plan, rng)).sum()
        stages.finish()
        return value

    return _repeat(once)


def _pairs():
    # Pairs differences of rows with sds 1; the neighbour's first pair is 1e300
    # (far above the window) in one coordinate and exactly tied (log 0) in
    # another.
    pairs = np.random.default_rng(1).normal(size=(N // 2, D)) / np.sqrt(2)
    other = pairs.copy()
    other[0] = [1e300, 0.0, 1e-300]
    return pairs, other


def test_log_scales_keep_their_claim_with_far_pairs():
    a, b = _pairs()
    result = _audit(_scales_runner(a), _scales_runner(b), 10_000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_log_scales_with_a_quarter_of_the_sensitivity(monkeypatch):
    original = mean_module.vector_mechanism
    monkeypatch.setattr(
        mean_module,
        "vector_mechanism",
        lambda cost, d, sensitivity: original(cost, d, sensitivity / 4.0),
    )
    a, b = _pairs()
    result = _audit(_scales_runner(a), _scales_runner(b), 3000)
    assert result.epsilon_lower > CLAIM, result


def _top_eigenvalue(pairs, plan, rng):
    # The rescaled form, with scales 1e-100: the rescaled far pair overflows
    # (its norm is clipped to the largest float) while the others' norms,
    # about 1e100, keep the released bound (about 4 M^2) finite; at scales
    # near 2^-1000 the bound would be the largest float for every draw and
    # the audit vacuous.
    return top_eigenvalue(pairs, plan, rng, "range_scale", np.full(D, 1e-100))


#: The one-column medians of row norms: the norm bound (``range_location``,
#: on the rows) and the top-eigenvalue bound (``range_scale``, on the pairs).
MEDIANS = [(norm_bound, "range_location"), (_top_eigenvalue, "range_scale")]


def _median_runner(release, name, X):
    def once(rng):
        plan = ReleasePlan(ZCDP(RHO), [range_release(name, ZCDP(RHO), D)])
        value = release(X, plan, rng)
        plan.finish()
        return value

    return _repeat(once)


def _norm_neighbours():
    # Half the rows have norm 1, half norm 2 (the median search's every step
    # in [1, 2) then sees the one count the neighbour changes); the
    # neighbour's first row is at 1e300 in every coordinate (its norm
    # overflows and is clipped).
    # 100 rows keep the 64-step searches quick.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, D))
    X /= np.linalg.norm(X, axis=1)[:, None]
    X[50:] *= 2.0
    Y = X.copy()
    Y[0] = 1e300
    return X, Y


@pytest.mark.parametrize(("release", "name"), MEDIANS)
def test_norm_medians_keep_their_claim_with_a_far_row(release, name):
    # 6 ms a search: 2,000 releases a side keep this under a minute; the
    # search itself has its own audit (test_mechanism_audits), this one checks
    # the norms (a far, overflowing row) and is proven able to fail below.
    X, Y = _norm_neighbours()
    runs = [_median_runner(release, name, Z) for Z in (X, Y)]
    result = _audit(*runs, 2000)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.parametrize(("release", "name"), MEDIANS)
def test_canary_norms_around_the_non_private_mean_are_caught(
    release, name, monkeypatch
):
    # The CoinPress-in-aggregation bug in this step: norms of x - mean(X)
    # (with the rescaled far pair, inf - inf: NaN norms, clipped to the
    # largest float by row_norms).
    original = steps_module.row_norms

    def centered(Z, center, far=False):
        with np.errstate(all="ignore"):
            return original(Z - np.mean(Z, axis=0), center, far=far)

    monkeypatch.setattr(steps_module, "row_norms", centered)
    X, Y = _norm_neighbours()
    runs = [_median_runner(release, name, Z) for Z in (X, Y)]
    result = _audit(*runs, 600)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.slow
def test_both_keep_their_claims_large():
    X, Y = _neighbours()
    result = _audit(_mean_runner(X), _mean_runner(Y), 100_000)
    assert result.epsilon_lower <= CLAIM, result
    a, b = _pairs()
    result = _audit(_scales_runner(a), _scales_runner(b), 100_000)
    assert result.epsilon_lower <= CLAIM, result
    X, Y = _norm_neighbours()
    for release, name in MEDIANS:
        runs = [_median_runner(release, name, Z) for Z in (X, Y)]
        result = _audit(*runs, 30_000)
        assert result.epsilon_lower <= CLAIM, result
