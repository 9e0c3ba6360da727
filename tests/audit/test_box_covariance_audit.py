"""End-to-end audits of the covariance releases with a box, with canaries.

Diagonal release (pure DP): n = 50 rows in the box (-1, 1), half at -1/2 and
half at 1/2, except the first; ``PrivateCovariance(bounds=(-1, 1),
method="diagonal", center=True)`` releases the 2-vector (mean, 2 x centred
second moment) of the box coordinates with the cube's K-norm noise at
l-infinity sensitivity 2/n (:mod:`dpgauss.releases._moments`). The first row
moves from -1e12 (z = -1) to 1e12 (z = 1): the mean moves by 2/n, the second
moment not at all, so the audited ``location_`` sees the whole claim. The
canaries are the release calibrated to a twentieth of its sensitivity, and
the box map without its clips (a row 1e12 away then moves the mean by
1e12/n).

Full release in box units (zCDP): ``method="gauss"``, ``center=False``, d = 1:
the second moment about the box centre moves by 1/n when the first row goes
from the centre (z = 0) to 1e12 (z = 1), against a Frobenius sensitivity
sqrt(2) d / n: within rho-zCDP. Rows of the box lie in the ball the release
clips to, so that clip carries the guarantee; the canary skips both clips.
"""

import numpy as np
import pytest

import dpgauss.releases._variances as variances
from dpgauss import PrivateCovariance
from dpgauss.accounting import zcdp_to_approx
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

EPSILON, RHO, DELTA, N = 1.0, 0.5, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _neighbours(first, moved):
    X = np.full((N, 1), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    Y = X.copy()
    Y[0] = moved
    return X, Y


def _runner(X, attribute, **params):
    est = PrivateCovariance(bounds=(-1.0, 1.0), on_useless="warn", **params)

    def run(n, rng):
        return np.array(
            [
                np.ravel(
                    getattr(
                        est.set_params(random_state=fit_seed(rng)).fit(X), attribute
                    )
                )[0]
                for _ in range(n)
            ]
        )

    return run


def _diagonal_audit(n):
    X, Y = _neighbours(-1e12, 1e12)
    params = {"method": "diagonal", "epsilon": EPSILON}
    runs = [_runner(Z, "location_", **params) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=7)


def _gauss_audit(n):
    X, Y = _neighbours(0.0, 1e12)
    params = {"method": "gauss", "center": False, "rho": RHO}
    runs = [_runner(Z, "covariance_", **params) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, delta=DELTA, random_state=8)


def _unclipped(X, box):
    center, half_width = box
    return (np.asarray(X, dtype=np.float64) - center) / half_width


def _unclipped_sums(X, center, radius, with_outer=True, trace_bits=None):
    y = np.asarray(X, dtype=np.float64) - center
    if trace_bits is None:
        return y.sum(axis=0), y.T @ y
    return y.sum(axis=0), y.T @ y, 0


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_diagonal_release_keeps_its_claim_with_a_far_row():
    result = _diagonal_audit(2000)
    assert result.epsilon_lower <= EPSILON, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_a_twentieth_of_the_diagonal_sensitivity_is_caught(monkeypatch):
    original = variances.moments_mechanism

    def weak(cost, n, d, n_partials=None):
        # Calibrated as if there were 20 times the rows: a twentieth of each
        # sensitivity (the rounding terms aside).
        return original(cost, 20 * n, d, n_partials)

    monkeypatch.setattr(variances, "moments_mechanism", weak)
    result = _diagonal_audit(600)
    assert result.epsilon_lower > EPSILON, result


def _unclipped_moments(X, center, half_width, second=True):
    z = (np.asarray(X, dtype=np.float64) - center) / half_width
    return z.mean(axis=0), (z * z - 0.5).mean(axis=0)


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught_by_the_diagonal_audit(monkeypatch):
    # Both clips (the box map's and the moments' own) skipped.
    import dpgauss.covariance._private_covariance as estimator

    monkeypatch.setattr(estimator, "box_rows", _unclipped)
    monkeypatch.setattr(variances, "box_moments", _unclipped_moments)
    result = _diagonal_audit(600)
    assert result.epsilon_lower > EPSILON, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_full_release_in_box_units_keeps_its_claim_with_a_far_row():
    result = _gauss_audit(2000)
    assert result.epsilon_lower <= CLAIM, result


@pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning")
def test_canary_an_unclipped_box_is_caught_by_the_full_release_audit(monkeypatch):
    import dpgauss.covariance._private_covariance as estimator

    monkeypatch.setattr(estimator, "box_rows", _unclipped)
    monkeypatch.setattr(
        "dpgauss.releases._center.clipped_sums", _unclipped_sums, raising=True
    )
    result = _gauss_audit(600)
    assert result.epsilon_lower > CLAIM, result
