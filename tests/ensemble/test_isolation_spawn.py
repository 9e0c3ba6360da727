"""SubsampleAggregate(isolation="process") where fork does not exist: each group
in a new interpreter (spawn), forced here on any platform; about 1-2 s per
group, so slow."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

import dpgauss.ensemble._isolation as isolation_module
from dpgauss.ensemble._group_fits import group_candidates


@pytest.mark.slow
def test_spawned_groups_give_the_in_process_candidates(monkeypatch):
    # Where fork does not exist each group starts a new interpreter (about
    # 1-2 s each here): the same rows and estimator give the same candidates.
    monkeypatch.setattr(isolation_module, "start_method", lambda: "spawn")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, -2.0, 0.5])

    def run(isolated):
        Y, _ = group_candidates(
            LinearRegression(),
            ("coef_", "intercept_"),
            X,
            y,
            2,
            np.random.default_rng(5),
            (4,),
            None,
            isolated,
        )
        return Y

    assert run(True).tobytes() == run(False).tobytes()
    # a group fit that raises (NaN targets) is a failed candidate
    Y, _ = group_candidates(
        LinearRegression(),
        "coef_",
        X,
        np.full(60, np.nan),
        2,
        np.random.default_rng(5),
        (3,),
        None,
        True,
    )
    assert np.isnan(Y).all()
