"""SubsampleAggregate(isolation="process"): each group's fit in a process of its own.

The canary is an estimator that keeps state across fits in a class attribute:
in process, one changed row moves the candidates of the groups fitted after
its own (the flaw the option exists for); isolated, it moves its own group's
candidate only. Each forked group costs about 10-30 ms here, so these tests
fit a few dozen groups at most.
"""

import os
import pickle
import signal
import time

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LinearRegression, LogisticRegression

import dpgauss.ensemble._isolation as isolation_module
from dpgauss import PrivacyBudget
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.ensemble._group_fits import group_candidates
from dpgauss.testing._stateful import RemembersRows

pytestmark = pytest.mark.skipif(
    isolation_module.start_method() != "fork",
    reason="the fast tests fork; spawn is tested under slow",
)


@pytest.fixture(autouse=True)
def _forget():
    RemembersRows.seen = []
    yield
    RemembersRows.seen = []


def _candidates(X, isolated, k=8):
    rng = np.random.default_rng(3)
    Y, _ = group_candidates(
        RemembersRows(), "location_", X, None, k, rng, (1,), None, isolated
    )
    return Y[:, 0]


def _neighbours():
    """X and X with one row replaced (row 0, which lands in some group)."""
    X = np.random.default_rng(0).normal(size=(80, 2))
    Z = X.copy()
    Z[0] = 1e6
    return X, Z


def test_in_process_a_stateful_estimator_lets_one_row_move_many_candidates():
    # The flaw is real: every group fitted after row 0's group reads it.
    X, Z = _neighbours()
    moved = _candidates(X, False) != _candidates(Z, False)
    assert moved.sum() > 1


def test_isolated_one_row_moves_only_its_own_groups_candidate():
    X, Z = _neighbours()
    a, b = _candidates(X, True), _candidates(Z, True)
    assert (a != b).sum() == 1
    # each candidate is its own group's mean: the state of other fits is gone
    rng = np.random.default_rng(3)
    order = rng.permutation(80)
    means = [X[order[g * 10 : (g + 1) * 10], 0].mean() for g in range(8)]
    np.testing.assert_allclose(a, means, rtol=1e-12)
    assert RemembersRows.seen == []  # the parent is left as it was


def test_a_fit_leaves_the_parents_state_as_it_was():
    X, _ = _neighbours()
    est = SubsampleAggregate(
        RemembersRows(),
        statistic="location_",
        rho=1.0,
        n_groups=8,
        random_state=0,
        on_useless="warn",
        isolation="process",
    ).fit(X)
    # the probe (public rows, in this process) only: no group's rows
    assert len(RemembersRows.seen) == 20
    assert est.statistic_.shape == (1,)


def _fit(estimator, X, y, isolation, **kwargs):
    return SubsampleAggregate(
        estimator,
        statistic=("coef_", "intercept_"),
        rho=0.5,
        n_groups=12,
        random_state=7,
        on_useless="warn",  # 12 groups: few for the searches, fine here
        isolation=isolation,
        **kwargs,
    ).fit(X, y)


@pytest.mark.parametrize("classifier", [False, True])
def test_a_stateless_estimator_gives_the_same_release_bit_for_bit(classifier):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=1200)
    if classifier:
        estimator, y, extra = LogisticRegression(), y > 0, {"classes": [False, True]}
    else:
        estimator, extra = LinearRegression(), {}
    a = _fit(estimator, X, y, None, **extra)
    b = _fit(estimator, X, y, "process", **extra)
    for name in ("statistic_", "center_", "radius_", "sensitivity_"):
        assert (
            np.asarray(getattr(a, name)).tobytes()
            == np.asarray(getattr(b, name)).tobytes()
        ), name
    assert a.n_groups_ == b.n_groups_ == 12


class _FailsOnPositive(BaseEstimator):
    """Raises on groups whose first row is positive, and exits the process
    abruptly on groups whose first row is below -1 (isolated only)."""

    def __init__(self, exit_below=None):
        self.exit_below = exit_below

    def fit(self, X, y=None):
        if X[0, 0] > 0:
            raise RuntimeError("data-dependent failure")
        if self.exit_below is not None and X[0, 0] < self.exit_below:
            os._exit(3)
        self.location_ = X.mean(axis=0)
        return self


def test_failed_groups_are_failed_candidates_as_in_process():
    X = np.random.default_rng(2).normal(size=(120, 2))

    def run(est, isolated):
        Y, _ = group_candidates(
            est,
            "location_",
            X,
            None,
            12,
            np.random.default_rng(5),
            (2,),
            None,
            isolated,
        )
        return Y

    in_process = run(_FailsOnPositive(), False)
    isolated = run(_FailsOnPositive(), True)
    assert np.isnan(in_process[:, 0]).sum() > 0
    np.testing.assert_array_equal(in_process, isolated)  # NaN where the fit raised
    # a child that dies is a failed candidate too (in process it would end the
    # interpreter)
    dying = run(_FailsOnPositive(exit_below=-0.5), True)
    assert np.isnan(dying[:, 0]).sum() > np.isnan(isolated[:, 0]).sum()
    kept = ~np.isnan(dying[:, 0])
    np.testing.assert_array_equal(dying[kept], isolated[kept])


def test_a_child_that_sends_the_wrong_size_or_a_non_finite_value_fails():
    def run(value):
        return isolation_module.isolated_candidates(lambda: value, lambda g: (), 3, 2)

    assert np.isnan(run(np.arange(3.0))).all()  # 3 values for a statistic of 2
    assert np.isnan(run(np.arange(1.0))).all()
    assert np.isnan(run(np.array([1.0, np.inf]))).all()
    assert np.isnan(run(None)).all()
    # a large statistic (beyond a pipe's buffer) comes back whole
    big = np.arange(40000.0)
    Y = isolation_module.isolated_candidates(lambda: big, lambda g: (), 3, big.size)
    assert (Y == big).all()


def test_unknown_isolation_refused_before_the_spend():
    budget = PrivacyBudget(rho=5.0)
    X = np.random.default_rng(0).normal(size=(100, 2))
    est = SubsampleAggregate(
        RemembersRows(),
        statistic="location_",
        rho=1.0,
        budget=budget,
        isolation="thread",
    )
    with pytest.raises(ValueError, match="isolation"):
        est.fit(X)
    assert budget.ledger() == []
    assert RemembersRows.seen == []


def test_where_processes_are_spawned_an_unpicklable_statistic_is_refused(monkeypatch):
    monkeypatch.setattr(isolation_module, "start_method", lambda: "spawn")
    budget = PrivacyBudget(rho=5.0)
    X = np.random.default_rng(0).normal(size=(100, 2))
    est = SubsampleAggregate(
        LinearRegression(),
        statistic=lambda fitted: fitted.coef_,
        rho=1.0,
        budget=budget,
        isolation="process",
    )
    with pytest.raises(ValueError, match="picklable"):
        est.fit(X, X[:, 0])
    assert budget.ledger() == []


_PARENT = os.getpid()


class _OnlyHere(BaseEstimator):
    """Fits in the test process only: isolation cannot work with it."""

    def fit(self, X, y=None):
        if os.getpid() != _PARENT:
            os._exit(1)
        self.location_ = X.mean(axis=0)
        return self


@pytest.mark.parametrize("output_shape", [None, (2,)])
def test_isolation_that_cannot_work_is_refused_before_the_spend(output_shape):
    # with output_shape given no probe was needed for the shape, and every
    # group failed after the spend (a release of nothing but the placeholder)
    budget = PrivacyBudget(rho=5.0)
    X = np.random.default_rng(0).normal(size=(100, 2))
    est = SubsampleAggregate(
        _OnlyHere(),
        statistic="location_",
        rho=1.0,
        n_groups=10,
        budget=budget,
        on_useless="warn",
        isolation="process",
        output_shape=output_shape,
    )
    with pytest.raises(ValueError, match="probe rows in a process of its own"):
        est.fit(X)
    assert budget.ledger() == []
    est.set_params(isolation=None).fit(X)  # in process it runs
    assert len(budget.ledger()) > 0


class _Interrupted(Exception):
    pass


def _interrupt(signum, frame):
    raise _Interrupted


def test_an_interrupt_while_a_child_hangs_kills_it():
    # A child that hangs (an OpenMP or loky pool inherited from this process
    # deadlocks in a forked child) is killed when the read is interrupted:
    # before, the parent then waited in waitpid for as long as it hung.
    # Its group fails, as an interrupt fails the group it hits.
    hang = 60.0

    def sleeps():
        time.sleep(hang)
        return np.zeros(1)

    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        start = time.monotonic()
        Y = isolation_module.isolated_candidates(sleeps, lambda g: (), 1, 1)
        took = time.monotonic() - start
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert np.isnan(Y).all()
    assert took < hang / 4  # 0.5 s and a kill, far from the child's 60 s


def test_processes_a_group_leaves_behind_are_killed_with_it(tmp_path):
    # An adversarial review: worker processes a group's fit starts (loky's
    # idle workers live 300 s) outlived its child, thousands at 1,510 groups.
    # Each child leads a process group, killed once its candidate is read.
    import subprocess
    import sys

    pids = tmp_path / "pids"

    def leaves_a_process():
        worker = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with open(pids, "a") as f:
            f.write(f"{worker.pid}\n")
        return np.zeros(1)

    Y = isolation_module.isolated_candidates(leaves_a_process, lambda g: (), 3, 1)
    assert (Y == 0).all()
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) == 3
    time.sleep(0.2)
    for pid in left:  # killed (and reaped by init), or a zombie at most
        try:
            with open(f"/proc/{pid}/stat") as f:
                assert f.read().split()[2] == "Z"
        except FileNotFoundError:
            pass


def test_a_group_that_cannot_start_is_a_failed_candidate(monkeypatch):
    # No pipe or process to be had raised after the spend (a release whose
    # occurrence other groups' leftovers could drive); now the group fails.
    calls = []
    real = isolation_module.os.pipe

    def pipe():
        calls.append(1)
        if len(calls) == 2:
            raise OSError("EMFILE")
        return real()

    monkeypatch.setattr(isolation_module.os, "pipe", pipe)
    Y = isolation_module.isolated_candidates(lambda: np.ones(1), lambda g: (), 3, 1)
    assert np.isnan(Y[1]).all()
    assert (Y[[0, 2]] == 1).all()


@pytest.mark.parametrize("value", [None, "none", "process"])
def test_isolation_survives_clone_get_params_and_pickle(value):
    est = SubsampleAggregate(LinearRegression(), rho=1.0, isolation=value)
    assert clone(est).get_params()["isolation"] == value
    assert pickle.loads(pickle.dumps(est)).isolation == value
    assert SubsampleAggregate(**est.get_params(deep=False)).isolation == value
