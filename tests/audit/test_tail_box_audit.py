"""End-to-end audit of TailSensitiveCovariance with a box, with a canary.

zCDP, ``center=False``, d = 1, n = 50 rows in the box (-1, 1), half at -1/2
and half at 1/2, except the first, which moves from the centre (z = 0) to
1e12 (z = 1 once mapped into the box). Every release of the fit (the radius
scan, the trace, the threshold search, the final GaussCov or SeparateCov) is
on the box rows, which lie in the ball of radius sqrt(d) the scan starts
from, so the fit is rho-zCDP whatever the far row is. The canary maps the
rows into the box without the clip and releases the final second moment of
the unclipped rows: the far row then moves it by 1e24 / n.

At d = 1 the choice before the spend may take the diagonal release (at
d = 2 it does: audited last here); the first two audits force the tail plan
by predicting it perfect (the ``tail_plan`` fixture). The choice reads
public values only, so forcing it changes which releases run, not their
privacy.
"""

import numpy as np
import pytest

from dpgauss import TailSensitiveCovariance
from dpgauss.accounting import zcdp_to_approx
from dpgauss.releases._prediction import Prediction
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.5, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _rows(first):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    return X


def _runner(X):
    est = TailSensitiveCovariance(
        rho=RHO, bounds=(-1.0, 1.0), center=False, on_useless="warn"
    )

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).covariance_[0, 0]
                for _ in range(n)
            ]
        )

    return run


def _audit(n):
    runs = [_runner(_rows(first)) for first in (0.0, 1e12)]
    return audit(*runs, n_samples=n, n_select=n // 2, delta=DELTA, random_state=9)


@pytest.fixture
def tail_plan(monkeypatch):
    def perfect(self, plan, n, d):
        return Prediction(0.0, 1.0, "frobenius")

    monkeypatch.setattr(TailSensitiveCovariance, "_box_tail_prediction", perfect)


def _unclipped(X, box):
    center, half_width = box
    return (np.asarray(X, dtype=np.float64) - center) / half_width


def _unclipped_moments(X, center, half_width, second=True):
    z = (np.asarray(X, dtype=np.float64) - center) / half_width
    return z.mean(axis=0), (z * z - 0.5).mean(axis=0)


def _unclipped_sums(X, center, radius, with_outer=True, trace_bits=None):
    y = np.asarray(X, dtype=np.float64) - center
    return y.sum(axis=0), y.T @ y


# 1,000 samples a side in the default run (the canary below is caught at
# 600); 2,000, a tighter lower bound, with -m slow.
@pytest.mark.parametrize("samples", [1000, pytest.param(2000, marks=pytest.mark.slow)])
@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
@pytest.mark.usefixtures("tail_plan")
def test_tail_release_in_box_units_keeps_its_claim_with_a_far_row(samples):
    est = TailSensitiveCovariance(
        rho=RHO, bounds=(-1.0, 1.0), center=False, on_useless="warn"
    )
    assert est.fit(_rows(1e12)).method_ in ("gauss", "separate")
    result = _audit(samples)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
@pytest.mark.usefixtures("tail_plan")
def test_canary_an_unclipped_box_is_caught_by_the_tail_audit(monkeypatch):
    monkeypatch.setattr("dpgauss.covariance._tail_sensitive.box_rows", _unclipped)
    monkeypatch.setattr("dpgauss.releases._adaptive.clipped_sums", _unclipped_sums)
    result = _audit(600)
    assert result.epsilon_lower > CLAIM, result


# -- the diagonal release the box path falls back to (pure DP) -------------------
# At d = 2 and n = 50 the choice takes it: the same audit as
# PrivateCovariance's diagonal release, through TailSensitiveCovariance. The
# first row's first coordinate moves from -1e12 (z = -1) to 1e12 (z = 1): the
# mean moves by 2/n, against the release's l1 sensitivity 9 d/(4n).
EPSILON = 1.0


def _rows2(first):
    X = np.full((N, 2), 0.5)
    X[: N // 2] = -0.5
    X[0, 0] = first
    return X


def _diagonal_runner(X):
    est = TailSensitiveCovariance(
        epsilon=EPSILON, bounds=(-1.0, 1.0), on_useless="warn"
    )

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).location_[0]
                for _ in range(n)
            ]
        )

    return run


def _diagonal_audit(n):
    runs = [_diagonal_runner(_rows2(first)) for first in (-1e12, 1e12)]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=10)


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_diagonal_fallback_keeps_its_claim_with_a_far_row():
    est = TailSensitiveCovariance(epsilon=EPSILON, bounds=(-1.0, 1.0))
    assert est.set_params(on_useless="warn").fit(_rows2(1e12)).method_ == "diagonal"
    result = _diagonal_audit(2000)
    assert result.epsilon_lower <= EPSILON, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught_by_the_diagonal_fallback_audit(
    monkeypatch,
):
    # Both clips skipped: the box map's and the moments' own.
    monkeypatch.setattr("dpgauss.covariance._tail_sensitive.box_rows", _unclipped)
    monkeypatch.setattr("dpgauss.releases._variances.box_moments", _unclipped_moments)
    result = _diagonal_audit(600)
    assert result.epsilon_lower > EPSILON, result
