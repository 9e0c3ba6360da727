"""End-to-end audits of the pure-epsilon releases that take the cube's K-norm noise.

Four fits on a public box at epsilon 1, d = 3 features: PrivateStandardScaler
(the ``moments`` release ``(m, 2 s)``), PrivatePCA (``axes``, the same
release), PrivateGaussianEstimator (``box_moments``, ``(m, 3/2 s)``) and
PrivateMean (``box_mean``). n = 50 rows, half at -1/2 and half at 1/2 in every
coordinate, except the first at -1e12 (clipped to -1); the neighbour moves it
to +1e12 (clipped to 1). Every mean entry then moves by 2/n at once and no
centred square moves (for the weight-2 release also the pair from 0 to 1e12,
which moves every square entry by 2/n): the l-infinity distance of the two
statistics is 2/n, the release's l-infinity sensitivity (``max(2, w) / n``
for the moments, the whole box's width over n for the mean), so the privacy
loss reaches epsilon on a whole cone of outputs.

Summary: ``||y - A||_inf - ||y - B||_inf``, the mechanism's privacy loss
times its scale, for the exact statistics A and B of the two data sets and
the release y as recovered from the fit (post-processing of its outputs):
the scaler's and PCA's ``(m, 2 s)`` from ``mean_`` and the variances, the
Gaussian's ``(m, 3/2 s)`` from ``mean_`` and ``covariance_``'s diagonal
(projections and shrinkage inverted where they did not clip), the mean's m.
Canary: the cube's noise calibrated to half its sensitivity (an epsilon of 2)
must be caught.
"""

import warnings

import numpy as np
import pytest

import dpgauss.mechanisms._factory as factory
import dpgauss.releases._box_mean as box_mean
from dpgauss import PrivatePCA, PrivateStandardScaler
from dpgauss.accounting import PureDP
from dpgauss.decomposition._axes import axes_noise
from dpgauss.gaussian import PrivateGaussianEstimator
from dpgauss.mean import PrivateMean
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.releases._box_gaussian import SQUARE_WEIGHT
from dpgauss.releases._box_mean import BoxMeanMechanism
from dpgauss.releases._diagonal import PRIOR_MEAN, PRIOR_VARIANCE
from dpgauss.releases._moments import moments_mechanism
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

EPSILON, N, D = 1.0, 50, 3
BOUNDS = (-np.ones(D), np.ones(D))

ESTIMATORS = {
    "scaler": lambda: PrivateStandardScaler(BOUNDS, epsilon=EPSILON),
    "pca": lambda: PrivatePCA(D, bounds=BOUNDS, method="diagonal", epsilon=EPSILON),
    "gaussian": lambda: PrivateGaussianEstimator(
        bounds=BOUNDS, epsilon=EPSILON, on_useless="warn"
    ),
    "mean": lambda: PrivateMean(bounds=BOUNDS, epsilon=EPSILON),
}


def _neighbours(first):
    X = np.full((N, D), 0.5)
    X[: N // 2] = -0.5
    X[0] = first
    Y = X.copy()
    Y[0] = 1e12
    return X, Y


def _scaler_release(est):
    m = est.mean_
    return np.concatenate([m, 2.0 * (est.var_ + m * m - 0.5)])


def _pca_release(est):
    # The variances were shrunk as PRIOR_MEAN + weight (v - PRIOR_MEAN) with a
    # public weight; the axes are the coordinate axes, in released order.
    mech = moments_mechanism(PureDP(EPSILON), N, D, n_partials=1)
    weight = PRIOR_VARIANCE / (PRIOR_VARIANCE + axes_noise(mech, D))
    v = np.empty(D)
    v[np.abs(est.components_).argmax(axis=1)] = (
        PRIOR_MEAN + (est.explained_variance_ - PRIOR_MEAN) / weight
    )
    m = est.mean_
    return np.concatenate([m, 2.0 * (v + m * m - 0.5)])


RELEASES = {
    "scaler": _scaler_release,
    "pca": _pca_release,
}
# The Gaussian's variances are kept or set to 0 by a rule that reads every
# column (releases/_faint.py), so its squares cannot be recovered from the
# fit; its audited statistic is the released means alone (the "means" pair
# moves only them).


def _statistic(Z, name):
    z = np.clip(Z, -1.0, 1.0)
    if name not in RELEASES:
        return z.mean(0)
    return np.concatenate([z.mean(0), 2.0 * (z * z - 0.5).mean(0)])


def _runner(name, X, a, b):
    est = ESTIMATORS[name]()
    release = RELEASES.get(name, lambda fitted: fitted.mean_)

    def run(n, rng):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np.array(
                [
                    release(est.set_params(random_state=fit_seed(rng)).fit(X))
                    for _ in range(n)
                ]
            )
        return np.abs(out - a).max(axis=1) - np.abs(out - b).max(axis=1)

    return run


def _audit(name, pair, n):
    X, Y = _neighbours(FIRST[pair])
    a, b = _statistic(X, name), _statistic(Y, name)
    runs = [_runner(name, Z, a, b) for Z in (X, Y)]
    return audit(*runs, n_samples=n, n_select=n // 2, random_state=13)


#: The replaced row's first place: -1e12 moves every mean entry by 2/n (no
#: square moves); 0 moves every square entry of ``(m, 2 s)`` by 2/n (t = q = 1)
#: and every mean entry by 1/n: both pairs reach the l-infinity sensitivity
#: 2/n of the weight-2 release.
FIRST = {"means": -1e12, "squares": 0.0}
CASES = [
    ("scaler", "means"),
    ("scaler", "squares"),
    ("pca", "means"),
    ("pca", "squares"),
    # The Gaussian's fit is the slowest and its canary's margin the thinnest
    # (its means alone: 1.03 against the claim 1, honest 0.41; fits are
    # seeded from the audit's generator, so this repeats): run on purpose,
    # with -m slow.
    pytest.param("gaussian", "means", marks=pytest.mark.slow),
    ("mean", "means"),
]


class _Half(LInfinityMechanism):
    """Broken: the cube's noise for half the stated sensitivity."""

    def __init__(self, *, sensitivity, epsilon, size, exact=True):
        super().__init__(
            sensitivity=sensitivity / 2.0, epsilon=epsilon, size=size, exact=exact
        )


def test_the_audited_releases_take_the_cube_noise():
    cost = PureDP(EPSILON)
    assert isinstance(moments_mechanism(cost, N, D), LInfinityMechanism)
    mech = moments_mechanism(cost, N, D, weight=SQUARE_WEIGHT)
    assert isinstance(mech, LInfinityMechanism)
    assert isinstance(
        BoxMeanMechanism(cost, N, np.full(D, 2.0)).mechanism, LInfinityMechanism
    )


@pytest.mark.parametrize(("name", "pair"), CASES)
def test_cube_noise_keeps_its_pure_claim_end_to_end(name, pair):
    result = _audit(name, pair, 1500)
    assert result.epsilon_lower <= EPSILON, result


@pytest.mark.parametrize(("name", "pair"), CASES)
def test_canary_half_the_sensitivity_is_caught(name, pair, monkeypatch):
    monkeypatch.setattr(factory, "LInfinityMechanism", _Half)
    monkeypatch.setattr(box_mean, "LInfinityMechanism", _Half)
    result = _audit(name, pair, 1500)
    assert result.epsilon_lower > EPSILON, result
