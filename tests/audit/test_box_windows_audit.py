"""Audits of the box mean's adaptive windows, with canaries.

The adaptive plan (``box_center``, ``box_spread``, then ``box_mean`` on the
window ``m +- (K t + 2 sd)``) is taken by ``PrivateMean(bounds=...)`` only
where the noise both resolves a window and dominates the sampling error:
at epsilon 1 and d = 1 no n does both, and where it does (epsilon below
0.01, n about 2e5) an audit could not resolve the claim. Privacy does not
depend on that choice (it reads public values only), so the releases are
audited here directly: ``adapts`` is forced and ``boxed_mean`` runs on a
fresh plan of the three releases per fit.

n = 2000 rows of one feature at the box's centre except the first, at -1e12
(clipped to -1); the neighbour moves it to 1e12 (clipped to 1). The released
centre is near 0 and the spread near its noise margin, so the window is
about [-0.2, 0.2] and the far row sits at its lower or upper end: the
windowed mean moves by the window's whole width over n, its sensitivity,
and the centre by 2/n, its own.

Canary: the window mean without its clip (values ``z - low`` up to 2 on a
window of width about 0.4): the far row then moves the windowed mean five
times more than the noise is calibrated for.

Three features under pure DP (the cube's K-norm noise, on windows of unequal
widths): n = 8000 rows at the centre except the first, at -1e12 in every
coordinate, moved to 1e12; the summary is the sum of the three released
coordinates (every coordinate moves the same way).
"""

import numpy as np
import pytest

import dpgauss.releases._box_mean as module
from dpgauss.accounting import ZCDP, PureDP, zcdp_to_approx
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

EPSILON, RHO, DELTA, N = 1.0, 0.5, 1e-2, 2000
CLAIM = zcdp_to_approx(RHO, DELTA)


@pytest.fixture(autouse=True)
def _adaptive(monkeypatch):
    monkeypatch.setattr(module, "adapts", lambda total, n, d: True)


def _runner(X, total):
    rows, d = X.shape
    center, half = np.zeros(d), np.ones(d)

    def run(n, rng):
        out = np.empty(n)
        for i in range(n):
            plan = ReleasePlan(total, module.box_mean_plan(total, rows, d))
            out[i] = np.sum(module.boxed_mean(X, center, half, plan, rng)[0])
        return out

    return run


def _audit(total, n, delta=0.0, rows=N, d=1):
    X = np.zeros((rows, d))
    X[0] = -1e12
    Y = X.copy()
    Y[0] = 1e12
    return audit(
        _runner(X, total),
        _runner(Y, total),
        n_samples=n,
        n_select=n // 2,
        delta=delta,
        random_state=7,
    )


def _unclipped_window(z, low, high, about=None):
    # The window's clip skipped (z may be rows mapped as they are read).
    v = np.asarray(z) if about is None else np.abs(np.asarray(z) - about)
    return np.sum(v - low, axis=0) / v.shape[0], 1


@pytest.mark.parametrize("total", [PureDP(EPSILON), ZCDP(RHO)])
def test_the_audited_releases_are_the_adaptive_plan(total):
    names = [r.name for r in module.box_mean_plan(total, N, 1)]
    assert names == ["box_center", "box_spread", "box_mean"]


@pytest.mark.parametrize("total", [PureDP(EPSILON), ZCDP(RHO)])
def test_the_window_is_narrow_so_the_canary_has_power(total):
    # The released window is well inside the box: the unclipped canary moves
    # the windowed mean by 2/n against a calibrated width below 1/2.
    plan = ReleasePlan(total, module.box_mean_plan(total, N, 1))
    X = np.zeros((N, 1))
    _, widths = module.boxed_mean(X, np.zeros(1), np.ones(1), plan, 0)
    assert widths[0] < 0.5


def test_adaptive_windows_keep_their_pure_claim_with_a_far_row():
    result = _audit(PureDP(EPSILON), 2000)
    assert result.epsilon_lower <= EPSILON, result


def test_adaptive_windows_keep_their_zcdp_claim_with_a_far_row():
    result = _audit(ZCDP(RHO), 2000, DELTA)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_an_unclipped_window_is_caught(monkeypatch):
    monkeypatch.setattr(module, "_window_mean", _unclipped_window)
    result = _audit(PureDP(EPSILON), 600)
    assert result.epsilon_lower > EPSILON, result


def test_canary_an_unclipped_window_is_caught_under_zcdp(monkeypatch):
    monkeypatch.setattr(module, "_window_mean", _unclipped_window)
    result = _audit(ZCDP(RHO), 600, DELTA)
    assert result.epsilon_lower > CLAIM, result


# -- three features: the cube's K-norm noise on unequal windows ----------------
ROWS3, D3 = 8000, 3


def test_the_three_feature_releases_take_the_cube_noise():
    plan = ReleasePlan(
        PureDP(EPSILON), module.box_mean_plan(PureDP(EPSILON), ROWS3, D3)
    )
    module.boxed_mean(np.zeros((ROWS3, D3)), np.zeros(D3), np.ones(D3), plan, 0)
    kinds = {type(m.mechanism).__name__ for m in plan._mechanisms.values()}
    assert kinds == {"LInfinityMechanism"}


def test_adaptive_windows_keep_their_pure_claim_in_three_features():
    result = _audit(PureDP(EPSILON), 2000, rows=ROWS3, d=D3)
    assert result.epsilon_lower <= EPSILON, result


def test_canary_an_unclipped_window_is_caught_in_three_features(monkeypatch):
    monkeypatch.setattr(module, "_window_mean", _unclipped_window)
    result = _audit(PureDP(EPSILON), 600, rows=ROWS3, d=D3)
    assert result.epsilon_lower > EPSILON, result
