"""End-to-end audit of PrivateCovariance on neighbouring datasets, with a canary.

Neighbours: n = 50 rows of norm B = 1 along (e1 + e2)/sqrt(2) or (e1 - e2)/sqrt(2),
half each; the neighbour replaces one "+" row by a "-" row three times too long.
With clipping, the off-diagonal second moment moves by exactly B^2/n, and the
off-diagonal noise sd is B^2 / (n sqrt(2 rho)): the shift is sqrt(2 rho) noise
sds, exactly the Gaussian mechanism that rho-zCDP allows, so this neighbour is
worst-case for the released entry. The canary is the same estimator with the
clipping step removed (a plausible bug): the long row moves the entry by 5 B^2/n.
The clipped sums are patched in :mod:`dpgauss.releases._center`, where the
covariance release (shared with PrivatePCA and PrivateWhitener) calls them.
"""

import numpy as np
import pytest

import dpgauss.releases._center as module
from dpgauss import PrivateCovariance
from dpgauss.accounting import zcdp_to_approx
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.5, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)


def _neighbours():
    plus = np.array([1.0, 1.0]) / np.sqrt(2)
    minus = np.array([1.0, -1.0]) / np.sqrt(2)
    a = np.array([plus] * (N // 2) + [minus] * (N // 2))
    b = a.copy()
    b[0] = 3 * minus
    return a, b


def _runner(X):
    est = PrivateCovariance(method="gauss", rho=RHO, data_norm=1.0, center=False)

    def run(n, rng):
        return np.array(
            [
                est.set_params(random_state=fit_seed(rng)).fit(X).covariance_[0, 1]
                for _ in range(n)
            ]
        )

    return run


def _unclipped_sums(X, location, data_norm, with_outer=True, trace_bits=None):
    y = np.asarray(X, dtype=np.float64) - location
    if trace_bits is None:
        return y.sum(axis=0), y.T @ y
    return y.sum(axis=0), y.T @ y, 0


def _audit(n):
    a, b = _neighbours()
    return audit(
        _runner(a),
        _runner(b),
        n_samples=n,
        n_select=n // 2,
        delta=DELTA,
        random_state=99,
    )


def test_private_covariance_keeps_its_claim():
    result = _audit(3000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_without_clipping_is_caught(monkeypatch):
    monkeypatch.setattr(module, "clipped_sums", _unclipped_sums)
    result = _audit(3000)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.slow
def test_private_covariance_keeps_its_claim_large():
    result = _audit(40_000)
    assert result.epsilon_lower <= CLAIM, result
