"""Shared fixtures.

``global_random_seed`` follows scikit-learn's convention: the environment variable
DPGAUSS_TESTS_GLOBAL_RANDOM_SEED is an int (default 42), ``"all"`` (0..99) or a
range ``"a-b"``, so that a tolerance can be checked not to be tuned to one seed:
``DPGAUSS_TESTS_GLOBAL_RANDOM_SEED=all python3 dev.py test -- -k seed``.
"""

import os

import numpy as np
import pytest
from hypothesis import settings

# Property tests are derandomised by default so CI is reproducible; set
# DPGAUSS_HYPOTHESIS_PROFILE=explore to search with fresh random examples.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", max_examples=1000)
settings.load_profile(os.environ.get("DPGAUSS_HYPOTHESIS_PROFILE", "ci"))


def _seeds():
    value = os.environ.get("DPGAUSS_TESTS_GLOBAL_RANDOM_SEED", "42")
    if value == "all":
        return list(range(100))
    if "-" in value:
        low, high = (int(v) for v in value.split("-"))
        return list(range(low, high + 1))
    return [int(value)]


def pytest_generate_tests(metafunc):
    if "global_random_seed" in metafunc.fixturenames:
        metafunc.parametrize("global_random_seed", _seeds())


@pytest.fixture
def rotated_gaussian():
    """A sampler ``(d, n, seed, far=0, cond=1) -> (X, mu, C)`` of N(mu, C).

    C is a random rotation of ``geomspace(1, cond, d)`` and ``||mu|| = far`` in
    a random direction (the unbounded estimators' tests).
    """

    def sample(d, n, seed, far=0.0, cond=1.0):
        rng = np.random.default_rng(seed)
        Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
        C = Q @ np.diag(np.geomspace(1.0, cond, d)) @ Q.T
        mu = rng.normal(size=d)
        mu = mu / np.linalg.norm(mu) * far
        return rng.multivariate_normal(mu, C, size=n), mu, C

    return sample


@pytest.fixture
def warnings_before_releases(monkeypatch):
    """A function ``(estimator, X) -> messages``: fits ``estimator`` on X and
    returns the warnings already given when its ``_fit_releases`` started,
    i.e. before any release drew noise (the pre-spend warnings' tests)."""
    import warnings

    def fit(estimator, X):
        cls = type(estimator)
        release = cls._fit_releases
        seen = []

        def spy(self, data, plan, rng):
            seen.append([str(w.message) for w in caught])
            return release(self, data, plan, rng)

        monkeypatch.setattr(cls, "_fit_releases", spy)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            estimator.fit(X)
        return seen[0]

    return fit


@pytest.fixture
def spy_on(monkeypatch):
    """``spy_on(module, name)``: the list of what ``module.name`` returns in
    the calls that follow (it still returns it)."""

    def spy_on(module, name):
        taken = []
        original = getattr(module, name)

        def spy(*args, **kwargs):
            taken.append(original(*args, **kwargs))
            return taken[-1]

        monkeypatch.setattr(module, name, spy)
        return taken

    return spy_on
