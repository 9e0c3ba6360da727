"""Audits of the discriminant analyses' squares releases charged the unit
cube's sensitivities (:mod:`dpgauss.releases._cube`): a public box and a fixed
frame (pure DP, or ``clipping="fixed"``), rows in box units about the box's
center.

The neighbours (d = 2, bounds ``[-1, 1]^2``, class 0 both): a row at ``1e12
(1, 1)`` (the corner ``(1, 1)`` in box units) against one at the center.

* ``pooled_squares`` (the diagonal plan): ``q - q' = (1, 1)``, l1 ``d = 2``
  and l2 ``sqrt(d)``, the cube's sensitivities, attained. Pure: summary the
  Laplace log-likelihood ratio (the optimal test); zCDP: ``q_1 + q_2`` (the
  projection on the difference).
* ``second_moment`` (LDA, pure): ``z z^T`` against 0, upper-triangle l1 3,
  the charged ``d (d + 1) / 2``, attained; summary the log-likelihood ratio.

The claim is the release's planned share of the budget (a fixed frame: no
release reads another). Each canary calibrates the audited release to a
quarter of its cube sensitivity and must exceed the claim.
"""

import numpy as np
import pytest

import dpgauss.discriminant_analysis._base as base
import dpgauss.discriminant_analysis._lda as lda
from dpgauss.accounting import zcdp_to_approx
from dpgauss.discriminant_analysis import PrivateLinearDiscriminantAnalysis
from dpgauss.releases._box import box_offsets
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

DELTA, N, FAR, D = 1e-2, 10, 1e12, 2
#: Each case: (release, covariance type, privacy parameters); the claim is
#: the release's planned share, read off the plan.
CASES = {
    "squares-pure": ("pooled_squares", "diag", {"epsilon": 1.0 / 0.15}),
    "squares": ("pooled_squares", "diag", {"rho": 0.5 / 0.3}),
    "moment-pure": ("second_moment", "full", {"epsilon": 1.0 / 0.4}),
}


def _pair():
    """N rows at ``+-0.25`` in two alternating classes; row 0 (class 0) at
    the far corner in A, at the center in B."""
    X = np.full((N, D), 0.25)
    X[1::2] *= -1.0
    y = np.arange(N) % 2
    A, B = (X.copy(), y), (X.copy(), y)
    A[0][0] = FAR
    B[0][0] = 0.0
    return A, B


def _estimator(structure, params):
    return PrivateLinearDiscriminantAnalysis(
        classes=[0, 1],
        bounds=(-1.0, 1.0),
        clipping="fixed",
        covariance_type=structure,
        on_useless="warn",
        **params,
    )


def _exact(release, data):
    X, y = data
    Z = box_offsets(X, np.zeros(D), np.ones(D))
    radius = float(np.nextafter(np.sqrt(D), np.inf))
    outer = "pooled_squares" if release == "pooled_squares" else "pooled"
    _, _, moments = base.labelled_statistics(Z, y, 2, np.zeros(D), radius, outer)
    out = np.asarray(moments) / N
    if out.ndim == 2:
        return out[np.triu_indices(D)]
    return out


def _entries(out):
    out = np.asarray(out)
    return out[np.triu_indices(D)] if out.ndim == 2 else out


def _audit(name, record_releases, n_samples):
    release, structure, params = CASES[name]
    record = record_releases()
    A, B = _pair()
    exact_a, exact_b = _exact(release, A), _exact(release, B)
    probe = _estimator(structure, params)
    total = probe._pricing_plan(D, n_samples=N)
    cost = total.cost(release)  # the planned share (pure diag: half of 0.3)
    mech = probe._factories(N, D, None, cube=True)[release](cost)
    if "rho" in params:
        claim, delta = zcdp_to_approx(cost.rho, DELTA), DELTA

        def summary(out):
            return float(np.sum(_entries(out)))

    else:
        claim, delta = cost.epsilon, 0.0
        # The cube's l1 bounds are attained: the squares' 2, the moment's 3.
        l1 = float(np.sum(np.abs(exact_a - exact_b)))
        assert l1 * N == pytest.approx(2.0 if release == "pooled_squares" else 3.0)

        def summary(out):
            z = _entries(out)
            return float(np.sum(np.abs(z - exact_b) - np.abs(z - exact_a))) / (
                mech.scale
            )

    def runner(data):
        est = _estimator(structure, params)

        def run(n, rng):
            out = []
            for _ in range(n):
                est.set_params(random_state=fit_seed(rng)).fit(*data)
                out.append(summary(record[release]))
            return np.array(out)

        return run

    result = audit(
        runner(A),
        runner(B),
        n_samples=n_samples,
        n_select=n_samples // 2,
        delta=delta,
        random_state=23,
    )
    return result, claim


#: The cube mechanism factory each release's canary weakens.
FACTORIES = {
    "pooled_squares": (base, "cube_square_mechanism"),
    "second_moment": (lda, "cube_moment_mechanism"),
}


NAMES = ["squares-pure", "moment-pure", pytest.param("squares", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", NAMES)
def test_cube_release_at_its_worst_neighbour_keeps_its_claim(name, record_releases):
    result, claim = _audit(name, record_releases, 1000)
    assert result.epsilon_lower <= claim, result


@pytest.mark.parametrize("name", NAMES)
def test_canary_cube_release_at_a_quarter_of_the_sensitivity_is_caught(
    name, record_releases, weaken
):
    weaken(*FACTORIES[CASES[name][0]], 4.0)
    result, claim = _audit(name, record_releases, 600)
    assert result.epsilon_lower > claim, result
