"""End-to-end audit of PrivateEllipticEnvelope's output at a probe, with a canary.

The envelope's fit is PrivateCovariance's (tests/audit/test_covariance_audit.py
audits the release itself); this audits what a user of the envelope sees: its
``decision_function`` at a fixed public probe, a post-processing of the
release. Neighbours as in the covariance audit: n = 50 rows of norm B = 1 along
u = (e1 + e2)/sqrt(2) or v = (e1 - e2)/sqrt(2), half each; the neighbour
replaces one u row by 3 v. With clipping, the second moment along v grows by
B^2 / n (one noise sd of an off-diagonal entry at rho = 0.5, the shift the
claim allows); the probe is v, whose distance is about 1 / (v^T M v).
Without clipping (the canary, a plausible bug) it grows by 9 B^2 / n.
"""

import numpy as np
import pytest

import dpgauss.releases._center as module
from dpgauss import PrivateEllipticEnvelope
from dpgauss.accounting import zcdp_to_approx
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

RHO, DELTA, N = 0.5, 1e-2, 50
CLAIM = zcdp_to_approx(RHO, DELTA)
U = np.array([1.0, 1.0]) / np.sqrt(2)
V = np.array([1.0, -1.0]) / np.sqrt(2)


def _neighbours():
    a = np.array([U] * (N // 2) + [V] * (N // 2))
    b = a.copy()
    b[0] = 3 * V
    return a, b


def _runner(X):
    env = PrivateEllipticEnvelope(method="gauss", rho=RHO, data_norm=1.0, center=False)

    def run(n, rng):
        return np.array(
            [
                env.set_params(random_state=fit_seed(rng))
                .fit(X)
                .decision_function(V[None])[0]
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
        random_state=7,
    )


def test_envelope_decision_keeps_the_claim():
    result = _audit(1000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_without_clipping_is_caught(monkeypatch):
    monkeypatch.setattr(module, "clipped_sums", _unclipped_sums)
    result = _audit(1000)
    assert result.epsilon_lower > CLAIM, result


@pytest.mark.slow
def test_envelope_decision_keeps_the_claim_large():
    result = _audit(30_000)
    assert result.epsilon_lower <= CLAIM, result
