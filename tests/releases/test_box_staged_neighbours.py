"""The staged plan's augmented release replayed on neighbouring datasets.

Conditioned on the first stage's release (``m1`` and ``tau`` fixed, as the
second release sees them), replacing one row must move the exact statistic
``S / n`` handed to the mechanism by at most the Frobenius sensitivity the
mechanism is calibrated for, at every ``tau`` of the public grid and every
``m1`` in the box, in floating point. The noise is taken out (the recorded
value is the one ``randomise`` receives), so the check is deterministic.
The far rows include the box's corners at 1e12, rows exactly at ``tau``
from ``m1`` on opposite sides (the pair that attains ``sqrt(2) R^2 / n``),
extreme finite values and NaN. Canaries: the mechanism calibrated for the
rows without their appended column (radius ``tau`` instead of ``sqrt(2)
tau``), and the centred rows' clip at ``tau`` and the sums' clip both
removed (the box's kept): each must exceed the calibrated sensitivity.
"""

import numpy as np
import pytest

import dpgauss.releases._box_staged as module
from dpgauss.accounting import ZCDP
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._box_staged import staged_entries, tau_grid

WEIGHT = 1.5


class _Recorder:
    """A mechanism that records the value it is asked to release."""

    def __init__(self, mechanism, seen):
        self.mechanism, self.seen = mechanism, seen

    def randomise(self, value, rng=None):
        self.seen.append(np.array(value, dtype=np.float64))
        return np.array(value, dtype=np.float64)

    def entry_variances(self, size=None):
        return self.mechanism.entry_variances(size)


def _statistic(X, m1, tau, monkeypatch):
    """``(S / n, sensitivity)`` of the augmented release of ``X`` given the
    first stage's means ``m1`` and the radius ``tau``."""
    n, d = X.shape
    total = ZCDP(1.0)
    plan = ReleasePlan(total, staged_entries(total, n, d, WEIGHT))
    first = np.concatenate([m1, np.zeros(d)])
    monkeypatch.setattr(module, "_noisy_moments", lambda *a: (first, 1e-4))
    monkeypatch.setattr(module, "clipping_tau", lambda *a: float(tau))
    monkeypatch.setattr(module, "choose_augmented", lambda *a: True)
    seen, built = [], []
    calibrate = plan.calibrate

    def spy(name, **case):
        mechanism = calibrate(name, **case)
        built.append(mechanism)
        return _Recorder(mechanism, seen)

    monkeypatch.setattr(plan, "calibrate", spy)
    module.release_staged(
        X, np.zeros(d), np.ones(d), plan, np.random.default_rng(0), WEIGHT
    )
    (value,) = seen
    (mechanism,) = built
    return value, mechanism.sensitivity


def _far_rows(m1, tau, rng):
    d = m1.shape[0]
    rows = [np.full(d, v) for v in (1e12, -1e12, 1e308, -1e308, 5e-324, np.nan)]
    rows += [np.sign(rng.normal(size=d)) * 1e12 for _ in range(3)]
    for _ in range(3):
        u = rng.normal(size=d)
        u *= tau / np.linalg.norm(u)
        if np.all(np.abs(m1 + u) <= 1.0) and np.all(np.abs(m1 - u) <= 1.0):
            rows += [m1 + u, m1 - u]
    return rows


def _worst_ratio(d, n, monkeypatch, taus=None):
    rng = np.random.default_rng(d)
    base = rng.uniform(-1.0, 1.0, size=(n, d))
    worst = 0.0
    for m1 in (np.zeros(d), np.full(d, 0.9), rng.uniform(-1.0, 1.0, d)):
        for tau in tau_grid(d) if taus is None else taus:
            stats = []
            for row in _far_rows(m1, tau, rng):
                X = base.copy()
                X[0] = row
                value, sensitivity = _statistic(X, m1, tau, monkeypatch)
                stats.append(value)
            for i, a in enumerate(stats):
                for b in stats[i + 1 :]:
                    worst = max(worst, np.linalg.norm(a - b) / sensitivity)
    return worst


@pytest.mark.parametrize(("d", "n"), [(1, 2), (2, 7), (5, 40)])
def test_one_row_moves_the_statistic_within_the_calibrated_sensitivity(
    d, n, monkeypatch
):
    # The antipodal pair at tau attains sqrt(2) R^2 / n up to rounding, so
    # the worst ratio is close to 1 and must not exceed it.
    assert _worst_ratio(d, n, monkeypatch) <= 1.0


def test_canary_calibrated_without_the_appended_column(monkeypatch):
    calibrate = ReleasePlan.calibrate

    def narrow(self, name, **case):
        if name == "second_moment":
            case["radius"] = case["radius"] / np.sqrt(2.0)
        return calibrate(self, name, **case)

    monkeypatch.setattr(ReleasePlan, "calibrate", narrow)
    # Sensitivity halves, the change does not: the ratio nears 2.
    assert _worst_ratio(2, 7, monkeypatch, taus=tau_grid(2)[::7]) > 1.5


def test_canary_the_clips_at_tau_removed(monkeypatch):
    sums = module.clipped_sums
    monkeypatch.setattr(module, "clip_rows", lambda Z, center, tau: Z - center)
    monkeypatch.setattr(
        module, "clipped_sums", lambda rows, center, radius: sums(rows, center, 1e100)
    )
    # A corner row 2 sqrt(d) from m1 against rows within a small tau.
    assert _worst_ratio(2, 7, monkeypatch, taus=tau_grid(2)[-3:]) > 1.5
