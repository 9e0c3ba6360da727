"""Audits of PublicPrivateGMM's releases on neighbours with a far row.

The weights' histogram (the row moves from one component to another: the
public rule assigns the far row elsewhere) and one private EM step (the three
releases of :mod:`dpgauss.mixture._refine`, read through their likelihood-ratio
statistic, which carries the whole privacy loss of a Gaussian release) are
released many times on two neighbours, and epsilon is bounded from below. Each
has a canary (noise for a fraction of the sensitivity) that must be caught.
The per-component estimators are PrivateGaussianEstimators (audited in
test_mean_audit and test_covariance_audit); that one replaced row changes at
most two of them by one row is property-tested in
tests/mixture/test_public_private.py.
"""

import numpy as np
import pytest

import dpgauss.mixture._refine as refine_module
from dpgauss.accounting import ZCDP, zcdp_to_approx
from dpgauss.mixture._public import _PublicClusters, _weights
from dpgauss.mixture._refine import (
    refine_entries,
    step_factories,
    step_radius,
    step_statistics,
)
from dpgauss.testing.audit import audit

pytestmark = pytest.mark.audit

RHO, DELTA = 0.5, 1e-2
CLAIM = zcdp_to_approx(RHO, DELTA)
CENTERS = np.array([[0.0, 0.0], [12.0, 0.0]]) + 1e6


def _draw(n, rng):
    return CENTERS[rng.integers(0, 2, n)] + rng.standard_normal((n, 2))


def _neighbours(n=400, far_both=False):
    """X and Y differ in row 0: at component 0's center in X and 1e12 away
    (the public rule assigns it to component 1) in Y; with ``far_both``, 1e12
    away on either side (nearer component 0 in X, component 1 in Y, clipped
    to opposite points of the sphere in the whitened frames)."""
    rng = np.random.default_rng(0)
    X = _draw(n, rng)
    X[0] = CENTERS[0] - np.array([1e12, 0.0]) if far_both else CENTERS[0]
    Y = X.copy()
    Y[0] = CENTERS[0] + np.array([1e12, 0.0])
    return X, Y, _draw(60, rng)


def _audit(run_a, run_b, n):
    return audit(
        run_a, run_b, n_samples=n, n_select=n // 2, delta=DELTA, random_state=3
    )


def _weights_runner(labels, hist, source, target):
    def run(n, rng):
        out = np.array([hist.release(labels, rng) for _ in range(n)])
        return out[:, source] - out[:, target]  # moves by 2 (l2 sqrt 2)

    return run


def _weights_runs(broken):
    X, Y, public = _neighbours()
    clusters = _PublicClusters(public, 2, seed=0)
    a, b = clusters.predict(X), clusters.predict(Y)
    assert a[0] != b[0]  # the far row changes component
    assert np.array_equal(a[1:], b[1:])
    hist = _weights(ZCDP(RHO), 2)
    if broken:  # noise for half the sensitivity
        cls = type(hist.mechanism)
        hist.mechanism = cls(sensitivity=hist.mechanism.sensitivity / 2, rho=RHO)
    return [_weights_runner(z, hist, a[0], b[0]) for z in (a, b)]


def test_weights_keep_their_claim_when_a_row_changes_component():
    result = _audit(*_weights_runs(False), 10_000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_weights_with_half_the_sensitivity_are_caught():
    result = _audit(*_weights_runs(True), 4000)
    assert result.epsilon_lower > CLAIM, result


def _step_runs(factor):
    """One EM step's releases on the neighbours, each as the likelihood-ratio
    statistic ``sum_p <release_p, diff_p> / sd_p^2``; ``factor`` scales the
    sensitivities (1: as calibrated; below 1: a canary)."""
    X, Y, _ = _neighbours(200, far_both=True)
    k, d = CENTERS.shape
    weights = np.full(k, 0.5)
    uppers = np.array([np.eye(d)] * k)
    C = step_radius(d)
    costs = [r.cost for r in refine_entries(ZCDP(RHO), 1, "gaussian")]
    factories = step_factories(X.shape[0], d, k)  # at the radius C
    mechs = [
        make(cost, n_partials=1) for make, cost in zip(factories, costs, strict=True)
    ]
    if factor != 1:
        mechs = [
            type(m)(sensitivity=m.sensitivity * factor, rho=m.cost.rho) for m in mechs
        ]
    stats = {}
    for name, Z in (("a", X), ("b", Y)):
        counts, sums, moments = step_statistics(Z, weights, CENTERS, uppers, C)
        stats[name] = (counts, sums.ravel(), refine_module._block_diagonal(moments))
    diffs = [b - a for a, b in zip(stats["a"], stats["b"], strict=True)]
    variances = [
        m.effective_scale(s) ** 2 for m, s in zip(mechs, (k, k * d, k * d), strict=True)
    ]
    # The symmetric release: noise variance s on the diagonal, s / 2 on each
    # upper entry (mirrored), so the statistic weighs a diagonal entry 1 / s
    # and an upper pair 2 / s: the sum over the whole matrix over s.

    def runner(name):
        def run(n, rng):
            out = np.empty(n)
            for i in range(n):
                released = [
                    m.randomise(v, rng) for m, v in zip(mechs, stats[name], strict=True)
                ]
                out[i] = (
                    released[0] @ diffs[0] / variances[0]
                    + released[1] @ diffs[1] / variances[1]
                    + np.sum(released[2] * diffs[2]) / variances[2]
                )
            return out

        return run

    return runner("a"), runner("b")


def test_em_step_keeps_its_claim_with_a_far_row():
    result = _audit(*_step_runs(1.0), 6000)
    assert result.epsilon_lower <= CLAIM, result


def test_canary_em_step_with_a_quarter_of_the_sensitivity_is_caught():
    result = _audit(*_step_runs(0.25), 2000)
    assert result.epsilon_lower > CLAIM, result


def _public_only_means(X, public, leak=False):
    """The fit's means under fallback="public" (wine-like sizes: every
    component predicted useless); ``leak`` is a canary whose public-only
    mixture also reads the first private row."""
    import warnings
    from unittest import mock

    import dpgauss.mixture._public_only as public_only
    from dpgauss.mixture import PublicPrivateGMM

    real = public_only.public_mixture

    def leaky(rows, k, seed):
        return real(np.vstack([rows, X[:1]]), k, seed)

    gmm = PublicPrivateGMM(3, rho=0.5, random_state=0)
    with mock.patch.object(public_only, "public_mixture", leaky if leak else real):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gmm.fit(X, X_public=public)
    assert gmm.regime_ == "public_only"
    return gmm.means_


@pytest.mark.parametrize("leak", [False, True])
def test_the_public_only_fallback_reads_no_private_row(leak):
    # The fallback spends nothing, so it must be the same function on every
    # pair of neighbours: replacing one private row by a row 1e12 away (and
    # a second pair replacing every row) leaves the output bit for bit. The
    # canary reads one private row and must be caught.
    rng = np.random.default_rng(3)
    X, public = rng.normal(size=(126, 13)), rng.normal(size=(18, 13))
    Y = X.copy()
    Y[0] = 1e12
    same = [
        np.array_equal(
            _public_only_means(A, public, leak), _public_only_means(B, public, leak)
        )
        for A, B in ((X, Y), (X, -X))
    ]
    assert all(same) != leak
