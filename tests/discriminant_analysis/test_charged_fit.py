"""A charged fit of the private discriminant analyses: it completes at every
radius adaptive clipping may release, compares labels once, before the spend,
keeps no per-fit state on the estimator, gives the same releases on Dask
blocks, and charges exactly its plan under approximate DP."""

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from dpgauss.accounting import ZCDP, PrivacyBudget, PureDP
from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)
from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._classes import RADIUS_GRID, encode_labels
from dpgauss.releases._groups import labelled_statistics

MODELS = [PrivateLinearDiscriminantAnalysis, PrivateQuadraticDiscriminantAnalysis]


def _blobs(n=100, d=3, K=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * scale, rng.integers(0, K, n)


# -- a charged fit completes for every released radius --------------------------


@pytest.mark.parametrize(
    ("cls", "K", "d", "rho"),
    [
        # The smallest budgets the calibration check accepts (found by bisection
        # on log rho, n = 100, data_norm = 1): the exact samplers' lattice
        # variance is then near its 2**61 limit, and whether it fits depends on
        # where the noise scale falls between two powers of two, so on the
        # radius. A check that tried data_norm and data_norm / 4096 only let
        # 14/20 (QDA) and 17/20 (LDA) of these fits raise "the lattice
        # variance ... exceeds 2**61" after the charge.
        (PrivateQuadraticDiscriminantAnalysis, 4, 4, 1.2688457003674965e-16),
        (PrivateLinearDiscriminantAnalysis, 2, 8, 3.9651428136484264e-17),
    ],
)
def test_fit_completes_where_an_intermediate_radius_cannot_calibrate(cls, K, d, rho):
    X, y = _blobs(100, d, K, scale=0.3)
    est = cls(
        classes=list(range(K)),
        data_norm=1.0,
        rho=rho,
        covariance_type="full",
        on_useless="warn",
    )
    plan = est._pricing_plan(d, total=ZCDP(rho), n_samples=100)
    failing = 0
    for j in range(1, RADIUS_GRID, 64):  # the case is real: some radii fail
        failing += not est._calibrates_at(plan, j / (RADIUS_GRID - 1))
    assert failing > 0
    for seed in range(20):
        budget = PrivacyBudget(rho=1.0)
        fitted = clone(est).set_params(budget=budget, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            # a UtilityWarning reads released values only: allowed
            warnings.simplefilter("ignore", UtilityWarning)
            fitted.fit(X, y)
        assert len(budget.ledger()) == 5
        assert np.all(np.isfinite(fitted.means_))


# -- labels: compared once, before the spend, row by row --------------------------


def test_labels_are_encoded_row_by_row_even_when_numpy_cannot_compare():
    # An object array holding an array: numpy's y == label raises for the
    # whole array. Each row must still get the code of its own label (dropping
    # the whole class would let one row's label change every row's code).
    y = np.empty(4, dtype=object)
    y[:] = [0, 1, np.array([0, 1]), 1]
    np.testing.assert_array_equal(encode_labels(y, np.array([0, 1])), [0, 1, -1, 1])
    words = np.array(["a", "b", "a"])
    np.testing.assert_array_equal(encode_labels(words, np.array([b"a", b"b"])), -1)


@pytest.mark.parametrize("cls", MODELS)
def test_no_label_is_read_after_the_spend(cls, monkeypatch):
    # The codes computed during validation are what the releases use: the
    # labels are not compared again after the charge (a comparison may warn).
    import dpgauss.discriminant_analysis._base as module

    X, y = _blobs()
    calls = []
    original = module.encode_labels
    monkeypatch.setattr(
        module, "encode_labels", lambda *a: calls.append(1) or original(*a)
    )
    budget = PrivacyBudget(rho=10.0)
    est = cls(classes=[0, 1, 2], data_norm=3.0, rho=1.0, budget=budget)
    spends = []
    spend = budget.spend_many
    monkeypatch.setattr(
        budget,
        "spend_many",
        lambda *a, **k: spends.append(len(calls)) or spend(*a, **k),
    )
    est.fit(X, y)
    assert spends == [1]  # validation encoded once, before the spend
    assert len(calls) == 1  # and nothing after it


@pytest.mark.parametrize("cls", MODELS)
def test_transient_state_never_stays(cls):
    X, y = _blobs()
    est = cls(classes=[0, 1, 2], data_norm=3.0, rho=1.0, random_state=0).fit(X, y)
    assert not {"_y", "_partials"} & set(vars(est))
    assert not {"_y", "_partials"} & set(vars(pickle.loads(pickle.dumps(est))))
    with pytest.raises(ValueError):
        est.fit(X, np.where(y == 2, 9, y))
    assert not {"_y", "_partials"} & set(vars(est))
    assert not {"_y", "_partials"} & set(vars(clone(est)))
    est.planned_costs(3)
    assert not {"_y", "_partials"} & set(vars(est))


# -- Dask: block by block, same releases ------------------------------------------


def test_class_statistics_of_a_dask_array_are_summed_block_by_block():
    da = pytest.importorskip("dask.array")
    X, y = _blobs(3000, 4, 3)
    X[0] = 1e300
    codes = y.copy()
    codes[5] = -1
    for outer in ("pooled", "per_class", None):
        want = labelled_statistics(X, codes, 3, np.zeros(4), 2.0, outer)
        got = labelled_statistics(
            da.from_array(X, chunks=(700, 2)), codes, 3, np.zeros(4), 2.0, outer
        )
        np.testing.assert_array_equal(got[0], want[0])
        # Different summation orders: within the rounding term (e ~ 1e-12 here).
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-10)
        if outer is not None:
            np.testing.assert_allclose(got[2], want[2], rtol=0, atol=1e-9)
            assert np.array_equal(got[2], np.swapaxes(got[2], -1, -2))


@pytest.mark.parametrize("cls", MODELS)
def test_dask_fit_matches_numpy_and_charges_the_same(cls):
    da = pytest.importorskip("dask.array")
    X, y = _blobs(3000, 3, 3)
    ledgers = []
    fits = []
    for data in (X, da.from_array(X, chunks=500)):
        budget = PrivacyBudget(rho=10.0)
        fits.append(
            cls(
                classes=[0, 1, 2], data_norm=5.0, rho=1.0, budget=budget, random_state=0
            ).fit(data, y)
        )
        ledgers.append([(e.cost, e.mechanism) for e in budget.ledger()])
    assert ledgers[0] == ledgers[1]
    # Same seed and lattice: the releases agree to the rounding of the sums.
    np.testing.assert_allclose(fits[0].means_, fits[1].means_, atol=1e-9)


# -- ledger = plan, every privacy mode --------------------------------------------


@pytest.mark.parametrize("cls", MODELS)
@pytest.mark.parametrize("clipping", ["adaptive", "fixed"])
def test_ledger_equals_plan_with_epsilon_and_delta(cls, clipping):
    X, y = _blobs(200)
    budget = PrivacyBudget(epsilon=10.0, delta=1e-3)
    est = cls(
        classes=[0, 1, 2],
        data_norm=5.0,
        clipping=clipping,
        epsilon=1.0,
        delta=1e-6,
        budget=budget,
        random_state=0,
    ).fit(X, y)
    plan = est._pricing_plan(3, n_samples=X.shape[0])
    assert [(e.cost, e.mechanism) for e in budget.ledger()] == plan.charges()
    assert est.privacy_spent_ == plan.spent()
    assert isinstance(est.privacy_spent_, ZCDP)
    kinds = {type(e.cost) for e in budget.ledger()}
    assert kinds == ({ZCDP, PureDP} if clipping == "adaptive" else {ZCDP})
    assert math.isclose(
        sum(e.cost.rho for e in budget.ledger() if isinstance(e.cost, ZCDP))
        + sum(
            e.cost.epsilon**2 / 2 for e in budget.ledger() if isinstance(e.cost, PureDP)
        ),
        est.privacy_spent_.rho,
        rel_tol=1e-12,
    )
