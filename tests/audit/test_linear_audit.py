"""Audit of the linear regression release (dpgauss.releases._linear), with a canary.

n = 1000 rows of one feature at +-1/2 in the box [-1, 1] and targets at
+-1/2 in [-1, 1], with an intercept: the augmented rows ``(z, 1, t)`` lie in
the ball of radius sqrt(3). The first row moves from ``(1e12, -1e12)`` (box
corner ``(1, -1)``) to ``(1e12, 1e12)`` (``(1, 1)``): its ``z t`` and ``t``
entries of the second moment move by 2 / n, the most one row can move the
slope's numerator (the cross moment of z and t), with ``z`` unchanged. The
audited output is the released slope ``coef[0]``,
post-processing of both releases (``lambda_min`` and ``moments``), so the
claim is the whole cost: rho 0.1 (as (epsilon, delta) at delta 1e-2) and pure
epsilon 1. Canary: the moments' mechanism calibrated to a twentieth of its
sensitivity.
"""

import numpy as np
import pytest

import dpgauss.releases._linear as module
from dpgauss.accounting import ZCDP, PureDP, zcdp_to_approx
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

N, DELTA = 1000, 1e-2
CASES = {
    "zcdp": (ZCDP(0.1), zcdp_to_approx(0.1, DELTA), DELTA),
    "pure": (PureDP(1.0), 1.0, 0.0),
}


def _rows(sign):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    y = X[:, 0] * np.where(np.arange(N) % 3 == 0, -1.0, 1.0)
    XY = np.column_stack([X, y])
    XY[0] = (1e12, sign * 1e12)
    return XY


def _runner(XY, total):
    X, y = XY[:, :1], XY[:, 1]
    boxes = module.regression_boxes((-1.0, 1.0), (-1.0, 1.0), 1, True, "Audit")

    def run(n, rng):
        out = np.empty(n)
        for i in range(n):
            plan = ReleasePlan(total, module.linear_entries(total, N, 1, True))
            gen = np.random.default_rng(fit_seed(rng))
            out[i] = module.release_linear(X, y, boxes, True, plan, gen).coef[0]
        return out

    return run


def _audit(total, delta, n):
    return audit(
        _runner(_rows(-1.0), total),
        _runner(_rows(1.0), total),
        n_samples=n,
        n_select=n // 2,
        delta=delta,
        random_state=11,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_release_keeps_its_claim_with_a_far_row(case):
    total, claim, delta = CASES[case]
    result = _audit(total, delta, 1000)
    assert result.epsilon_lower <= claim, result


def _weak_moments(original, factor):
    """``moments_mechanism`` calibrated to ``1 / factor`` of its sensitivity
    (either noise: the ball's Gaussian, the cube's K-norm)."""

    def weak(cost, *args, **kwargs):
        mech = original(cost, *args, **kwargs)
        if isinstance(mech, module.CubeMomentsMechanism):
            return module.CubeMomentsMechanism(
                sensitivity=mech.sensitivity / factor,
                epsilon=cost.epsilon,
                q=mech.q,
                constant=mech.constant,
                value=mech.value,
            )
        return type(mech)(sensitivity=mech.sensitivity / factor, rho=cost.rho)

    return weak


@pytest.mark.parametrize("case", sorted(CASES))
def test_canary_a_twentieth_of_the_moments_sensitivity_is_caught(case, monkeypatch):
    total, claim, delta = CASES[case]
    weak = _weak_moments(module.moments_mechanism, 20.0)
    monkeypatch.setattr(module, "moments_mechanism", weak)
    result = _audit(total, delta, 600)
    assert result.epsilon_lower > claim, result


def _square_runner(sign, weight):
    """The ``moments`` release's noisy square of z (entry (0, 0)), on the rows
    of :func:`_rows` with y = 0 and the first row's z at 0 (sign -1) or 1
    (sign +1, x = 1e12): that square moves by 1 / n, 2 / n doubled, the cube's
    whole D, while the slope audit above moves only off-diagonal entries."""
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0, 0] = 0.0 if sign < 0 else 1e12
    y = np.zeros(N)
    boxes = module.regression_boxes((-1.0, 1.0), (-1.0, 1.0), 1, True, "A")
    (c, h), (c_y, h_y) = boxes
    radius = np.sqrt(module._radii(1, True)[1])
    args = (c, h, c_y, h_y, module.INTERCEPT_SCALE, radius)
    _, S = module.over_chunks(X, module._chunk_moments, *args, labels=y)
    M = 0.5 * (S + S.T) / N

    def run(n, rng):
        mech = module.moments_mechanism(PureDP(1.0), N, 1, True)
        if weight is not None:  # the canary: squares weighted past the claim
            mech.weights = np.where(mech.rows == mech.cols, weight, 1.0)
        return np.array([mech.randomise(M, rng)[0, 0] for _ in range(n)])

    return run


@pytest.mark.parametrize("weight", [None, 40.0])
def test_the_moments_square_keeps_its_claim_and_its_canary_is_caught(weight):
    # The slope audit cannot see a break confined to the squares (weights 40
    # on them, so each moves by 20 D: its bound stays near 0.07), so the
    # released square is audited directly: about 0.05 as released, about 4.9
    # for the canary (1,000 runs each side, pure epsilon 1).
    result = audit(
        _square_runner(-1.0, weight),
        _square_runner(1.0, weight),
        n_samples=1000,
        n_select=500,
        random_state=11,
    )
    if weight is None:
        assert result.epsilon_lower <= 1.0, result
    else:
        assert result.epsilon_lower > 1.0, result
