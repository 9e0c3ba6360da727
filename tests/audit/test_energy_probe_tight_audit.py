"""Review R11: audit of the pure energy probe on a pair at its whole sensitivity.

``PrivateCovariance(bounds=(-1, 1), epsilon=EPS)`` on n = 1000 rows of four
features: +-(1, 1, 1, 1) / 2 (half), +-(1, 1, -1, -1) / 2 and +-(1, -1,
-1, 1) / 2 (a quarter each), mean 0 and ``offdiag(M) = P / 8`` (P the
adjacency of the cycle 0-1-2-3-0). The first row moves from (1, 1, 1, 1) to
(1, -1, 1, -1): orthogonal rows on the clipping sphere (radius 2) with the
same squares, so ``offdiag(z z^T - z' z'^T) = 2 P``, parallel to
``offdiag(M)``, and the off-diagonal energy E moves by ``4 sqrt(2) / n``,
the whole of its sensitivity about a common centre (measured in the fit,
about the two tables' released means: 0.988 to 0.9995 of it over 20 seeds;
the base rows lie inside the clipping sphere, so the mean's noise moves E
only in second order; corners on the sphere instead lost a quarter of it
to the clipping about a noisy mean. The audit of
``test_energy_probe_audit.py`` moves E by 77%). So the probe's claim is
audited where it is tight, and a canary at half the sensitivity (the
probe's true epsilon then twice its claim) must be caught, not only one at a
twentieth.
"""

import numpy as np
import pytest

import dpgauss.releases._energy_probe as module
from dpgauss import PrivateCovariance
from dpgauss.accounting import PureDP
from dpgauss.base import FitData

pytestmark = [
    pytest.mark.audit,
    pytest.mark.filterwarnings("ignore::dpgauss.exceptions.UtilityWarning"),
]

# The probe's own epsilon EPS 0.9 ENERGY_SHARE = 1.08: large enough that
# 1,500 runs resolve twice it.
EPS, DELTA, N = 12.0, 1e-3, 1000
PROBE = EPS * 0.9 * module.ENERGY_SHARE


def _rows():
    a, b, c = np.ones(4), np.array([1.0, 1, -1, -1]), np.array([1.0, -1, -1, 1])
    cycle = [a, -a, a, -a, b, -b, c, -c]
    X = 0.5 * np.array([cycle[i % 8] for i in range(N)])
    Y = X.copy()
    X[0], Y[0] = np.ones(4), np.array([1.0, -1.0, 1.0, -1.0])
    return X, Y


def _estimator():
    return PrivateCovariance(bounds=(-1.0, 1.0), epsilon=EPS, on_useless="warn")


def _audit_energy(n, audit_release):
    X, Y = _rows()
    return audit_release(_estimator, X, Y, "box_energy", n, DELTA, 11)


def test_the_pair_is_probed_and_moves_the_energy_by_its_sensitivity(spy_on):
    X, Y = _rows()
    plan = _estimator()._build_plan(PureDP(EPS), FitData(n=N, d=4))
    assert module.is_energy_probed(plan)
    energies = spy_on(module, "off_diagonal_energy")
    for seed in range(5):
        for rows in (X, Y):
            _estimator().set_params(random_state=seed).fit(rows)
    sensitivity = module.energy_mechanism(PureDP(1.0), N, 4, 2.0, 1).sensitivity
    moved = np.abs(np.subtract(energies[0::2], energies[1::2]))
    assert np.all(moved >= 0.98 * sensitivity), moved / sensitivity


def test_the_energy_keeps_its_claim_where_it_is_tight(audit_release):
    result = _audit_energy(1500, audit_release)
    assert result.epsilon_lower <= PROBE, result


def test_canary_half_the_energy_sensitivity_is_caught(audit_release, weaken):
    weaken(module, "energy_mechanism", 2.0)
    result = _audit_energy(1500, audit_release)
    assert result.epsilon_lower > PROBE, result
