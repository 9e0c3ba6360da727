"""Public-bound checks, and the checks of Dask rows before the spend."""

import math

import dask
import numpy as np
import pytest

from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateLinearDiscriminantAnalysis,
    PrivateMean,
)
from dpgauss.utils.validation import check_data_norm


def test_check_data_norm():
    assert check_data_norm(2) == 2.0
    with pytest.raises(ValueError, match="data_norm is required"):
        check_data_norm(None)
    with pytest.raises(ValueError, match="finite number > 0"):
        check_data_norm(math.inf)


class _Client:
    def __init__(self, numpy_version):
        self.numpy_version = numpy_version

    def get_versions(self):
        return {"workers": {"tcp://w": {"packages": {"numpy": self.numpy_version}}}}


@pytest.mark.parametrize("same", [True, False])
def test_a_cluster_of_another_numpy_is_refused_before_the_spend(monkeypatch, same):
    # The pairing's group permutations are drawn in the workers: a worker on
    # another numpy could permute a recomputed group differently, putting a
    # row in two pairs. A fake distributed client stands in for a cluster.
    import dask.array as da

    from dpgauss import PrivacyBudget, TailSensitiveCovariance
    from dpgauss.utils import validation

    version = np.__version__ if same else "1.0.0"
    monkeypatch.setattr(validation, "_active_client", lambda: _Client(version))
    budget = PrivacyBudget(rho=1.0)
    X = da.from_array(np.random.default_rng(0).normal(size=(200, 3)), chunks=(50, 3))
    est = TailSensitiveCovariance(rho=0.5, data_norm=5.0, budget=budget)
    with dask.config.set(scheduler="threads"):
        if same:
            est.fit(X)
            assert budget.ledger()  # spent
        else:
            with pytest.raises(ValueError, match="numpy"):
                est.fit(X)
            assert budget.ledger() == []


def test_dask_rows_of_no_column_are_refused_before_the_spend():
    # PrivateCovariance(method="coinpress"), PrivateMean with hints and the
    # discriminant analyses built their plans for d = 0, spent, and then
    # failed in a pass: a spend without a release.
    da = pytest.importorskip("dask.array")
    budget = PrivacyBudget(rho=10.0)
    P = {"rho": 0.5, "random_state": 0, "budget": budget}
    for est, y in (
        (PrivateCovariance(method="coinpress", data_norm=6.0, **P), None),
        (PrivateMean(mean_bound=60.0, cov_bounds=(0.5, 5.0), **P), None),
        (
            PrivateLinearDiscriminantAnalysis(classes=[0, 1], data_norm=5.0, **P),
            np.repeat([0, 1], 100),
        ),
    ):
        with pytest.raises(ValueError, match="0 feature"):
            est.fit(da.zeros((200, 0), chunks=(50, -1)), y)
    assert budget.ledger() == []
