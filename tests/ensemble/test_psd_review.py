"""Regression tests from the adversarial review of the PSD populous mean (611c692)."""

import numpy as np
from sklearn.base import BaseEstimator

from dpgauss.accounting import PrivacyBudget
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.ensemble import _psd as S
from dpgauss.exceptions import PrivateTestFailedError

_E = -(2.0**-400)
#: Exactly positive definite and a valid (sanitised) candidate, yet LAPACK's
#: dsyevd (np.linalg.eigh) does not converge on it: LinAlgError.
_NO_EIGH = np.array([[2.0**300, _E, 0.0], [_E, 2.0**-1000, _E], [0.0, _E, 2.0**301]])


def test_log_vectors_never_raises_on_a_sanitised_candidate():
    """log_vectors runs after the spend: a candidate it cannot decompose must be
    failed (a fixed map of that candidate), never an exception."""
    Y = np.stack([np.eye(3).ravel(), _NO_EIGH.ravel(), 2 * np.eye(3).ravel()])
    Sm, ok = S.sanitise(Y, 3)
    assert ok.all()
    V = S.log_vectors(Sm, ok)
    assert np.all(np.isnan(V[1])) or np.all(np.isfinite(V[1]))
    # the other candidates' vectors do not depend on it
    V0 = S.log_vectors(Sm[[0, 2]], ok[[0, 2]])
    assert V[[0, 2]].tobytes() == V0.tobytes()


class _OneBadGroup(BaseEstimator):
    def fit(self, X, y=None):
        self.covariance_ = _NO_EIGH if np.any(X[:, 0] > 1e6) else np.cov(X.T)
        return self


def test_one_row_cannot_turn_a_charged_fit_into_an_exception():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100_000, 3))
    Xp = X.copy()
    Xp[123] = 1e7  # the group holding it returns _NO_EIGH
    for Z in (X, Xp):
        budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
        est = SubsampleAggregate(
            _OneBadGroup(),
            statistic="covariance_",
            aggregator="populous",
            space="psd",
            epsilon=4.0,
            delta=1e-3,
            budget=budget,
            random_state=0,
        )
        try:
            est.fit(Z)
        except PrivateTestFailedError:
            pass
        assert len(budget.ledger()) == 4


def test_post_processing_is_finite_and_positive_definite_for_every_draw():
    from dpgauss.ensemble._subsample import _psd_matrix

    for upper, log_trace in [
        ([2.0**1000, -(2.0**1000), 2.0**1000], 700.0),
        ([-1.0, 0.0, -1.0], -745.0),
        ([1e-300, 1e300, 1e-300], 0.0),
        ([0.5, 0.1, 0.5], 1e308),
        ([0.5, 0.1, 0.5], -1e308),
    ]:
        out = _psd_matrix(np.array(upper), 2, 1e-3, log_trace)
        assert np.all(np.isfinite(out))
        assert np.linalg.eigvalsh(out).min() > 0


def test_a_radius_below_float_resolution_is_refused_before_the_spend():
    import pytest
    from sklearn.covariance import EmpiricalCovariance

    budget = PrivacyBudget(epsilon=10.0, delta=1e-2)
    est = SubsampleAggregate(
        EmpiricalCovariance(),
        statistic="covariance_",
        aggregator="populous",
        space="psd",
        epsilon=4.0,
        delta=1e-3,
        radius=1e-17,
        budget=budget,
    )
    with pytest.raises(ValueError, match="resolution"):
        est.fit(np.random.default_rng(0).standard_normal((40_000, 2)))
    assert budget.ledger() == []


def test_releases_run_without_the_cycle_collector_and_with_float_errors_ignored(
    monkeypatch,
):
    """A group fit's object in a reference cycle, finalised during the release,
    could call np.seterr(all="raise"): the releases run with gc disabled and
    inside errstate(all="ignore"), and gc is re-enabled afterwards."""
    import gc

    import dpgauss.ensemble._subsample as sub

    seen = []
    original = sub.SubsampleAggregate._winsorized

    def spy(self, *args):
        seen.append((gc.isenabled(), np.geterr()["over"]))
        return original(self, *args)

    monkeypatch.setattr(sub.SubsampleAggregate, "_winsorized", spy)
    X = np.random.default_rng(0).standard_normal((4000, 2))
    old = np.seterr(all="raise")
    try:
        sub.SubsampleAggregate(
            _OneBadGroup(), statistic="covariance_", rho=1.0, random_state=0
        ).fit(X)
    finally:
        np.seterr(**old)
    assert seen == [(False, "ignore")]
    assert gc.isenabled()
