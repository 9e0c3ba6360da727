"""The unbounded estimators' hints: the range entries, public bounds, whitening."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.base import FitData
from dpgauss.mechanisms._checks import check_release
from dpgauss.releases._hints import (
    RANGE_RISK,
    RangeHintsMixin,
    _one_column_fares_better,
    loose_public_range,
    public_whitening,
    tv_factors,
    wishart_kappa,
)
from dpgauss.releases._range import range_failure


class _Base:
    def _prepare_fit(self, data):
        return data


class _Hinted(RangeHintsMixin, _Base):
    """The mixin alone, with the parameters it reads."""

    _PUBLIC_FRAME = True

    def __init__(self, mean_bound=None, cov_bounds=None, public_tv_bound=0.0):
        self.mean_bound = mean_bound
        self.cov_bounds = cov_bounds
        self.public_tv_bound = public_tv_bound
        self.range_share = 0.05


@pytest.mark.parametrize("total", [ZCDP(1.0), PureDP(2.0)])
def test_range_entries_carry_their_factories(total):
    data = FitData(n=5000, d=4)
    entries, rest = _Hinted()._range_entries(total, data)
    assert [e.name for e in entries] == ["range_location", "range_scale"]
    for entry in entries:
        assert entry.make is not None
        for case in entry.cases:
            check_release(entry, **case)
    if isinstance(total, ZCDP):
        assert entries[0].cost.rho == pytest.approx(0.05)
        assert rest.rho == pytest.approx(0.9)


def test_hints_and_public_rows_spare_the_searches():
    data = FitData(n=5000, d=4)
    total = ZCDP(1.0)
    bounded = _Hinted(mean_bound=3.0, cov_bounds=(0.1, 4.0))
    assert bounded._range_entries(total, data) == ([], total)
    scale_only = _Hinted(mean_bound=3.0)._range_entries(total, data)[0]
    assert [e.name for e in scale_only] == ["range_scale"]
    public = np.random.default_rng(0).normal(size=(40, 4))
    with_rows = FitData(n=5000, d=4, X_public=public, n_public=40)
    est = _Hinted()
    with_rows = est._prepare_fit(with_rows)
    assert est._public_scale(with_rows) == "free"
    assert est._range_entries(total, with_rows) == ([], total)
    shifted = _Hinted(public_tv_bound=0.1)
    assert shifted._public_scale(with_rows) == "search"
    assert [e.name for e in shifted._range_entries(total, with_rows)[0]] == [
        "range_scale"
    ]


def test_hints_are_validated():
    for bad in ((1.0,), (2.0, 1.0), (0.0, math.inf), "wide"):
        with pytest.raises(ValueError, match="cov_bounds"):
            _Hinted(cov_bounds=bad)._check_hints()
    with pytest.raises(ValueError, match="mean_bound"):
        _Hinted(mean_bound=math.inf)._check_hints()
    assert _Hinted(cov_bounds=[0.0, 2.0])._bounds() == (0.0, 2.0)


def test_the_one_column_search_is_taken_only_when_it_fares_better():
    # d = 30 columns on 200 rows at rho = 0.1 are predicted to go astray;
    # one column on as many rows is predicted to fare better. On 10^5 rows
    # the d columns stay on track.
    cost = ZCDP(0.1)
    assert range_failure(cost, 200, 30) > RANGE_RISK
    assert _one_column_fares_better(cost, 200, 200, 30)
    assert not _one_column_fares_better(cost, 100_000, 100_000, 30)


def test_tv_factors():
    assert tv_factors(0.0) == (1.0, 0.0)
    scale, shift = tv_factors(0.5)
    assert scale == pytest.approx(64.0)
    assert shift == pytest.approx(8.0)


def test_wishart_kappa_bounds_the_whitened_covariance():
    # lambda_max(P Sigma P) <= kappa^2 with probability >= 1 - beta (beta =
    # 0.01): over 400 draws at most 4 + 3 binomial sds (about 10) may fail.
    d, m = 5, 60
    kappa = wishart_kappa(m, d)
    assert kappa is not None
    assert wishart_kappa(d + 1, d) is None
    rng = np.random.default_rng(0)
    A = rng.standard_normal((d, d))
    sigma = A @ A.T + 0.1 * np.eye(d)
    root = np.linalg.cholesky(sigma)
    failures = 0
    for _ in range(400):
        P, inverse = public_whitening(rng.standard_normal((m, d)) @ root.T + 7.0)
        np.testing.assert_allclose(P @ inverse, np.eye(d), atol=1e-8)
        failures += np.linalg.eigvalsh(P @ sigma @ P).max() > kappa**2
    assert failures <= 10


def test_public_whitening_stays_finite_on_degenerate_rows():
    for public in (np.ones((8, 3)), np.full((8, 3), 1e300), np.eye(8)[:, :3] * 1e-300):
        P, inverse = public_whitening(public)
        assert np.all(np.isfinite(P))
        assert np.all(np.isfinite(inverse))


@pytest.mark.parametrize(("m", "d"), [(23, 3), (6, 5), (30, 10)])
def test_loose_public_range_covers_the_whitened_top_eigenvalue(m, d):
    # Each side fails with probability at most 0.1: over 300 draws, at most
    # 30 + 3 binomial sds (about 46) failures a side.
    low, high = loose_public_range(m, d)
    rng = np.random.default_rng(m + d)
    A = rng.standard_normal((d, d))
    sigma = A @ A.T + 0.1 * np.eye(d)
    root = np.linalg.cholesky(sigma)
    below = above = 0
    for _ in range(300):
        public = rng.standard_normal((m, d)) @ root.T
        P, _ = public_whitening(public)
        top = np.linalg.eigvalsh(P @ sigma @ P).max()
        below += top < low
        above += top > high
    assert below <= 46
    assert above <= 46


# -- the scale search's share where range_share cannot measure the scales ----------
def _mixed_units(n=2000, d=6, seed=102):
    # Correlated Gaussian columns whose sds span 1e-3 to 1e6 (nine decades).
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, d)) / np.sqrt(d) + np.eye(d)
    return (rng.standard_normal((n, d)) @ A) * np.logspace(-3, 6, d) + 5.0


@pytest.mark.parametrize(
    ("n", "rho", "share"),
    [
        (100_000, 1.0, 0.05),  # measurable at range_share: unchanged
        (2000, 1.0, 0.1),  # raised to the first share that measures (not 0.075)
        (2000, 0.25, 0.05),  # no share up to 0.25 measures: unchanged, warned
    ],
)
def test_the_scale_share_is_raised_only_where_that_measures(n, rho, share):
    from dpgauss.releases._range import frame_count, nonzero_measurable, scale_costs

    est, d = _Hinted(), 6
    data = FitData(n=n, d=d, X_public=None, n_public=0)
    names = est._range_names(data)
    got = est._scale_share(ZCDP(rho), data, names)
    assert got == share
    rows = min(frame_count(n), 50_000)
    cost = est._scale_cost(ZCDP(rho), data, names, got)
    assert nonzero_measurable(cost, rows, d) == (rho == 1.0)
    # The plan's entries compose to the total whatever the share.
    entries, rest = est._range_entries(ZCDP(rho), data)
    spent = sum(e.cost.rho for e in entries) + rest.rho
    assert spent == pytest.approx(rho, rel=1e-12)
    assert scale_costs(entries[1].cost)[0] == cost
    # Unknown n (pricing before the rows): range_share, as before.
    priced = FitData(n=None, d=d, X_public=None, n_public=0, pricing=True)
    assert est._scale_share(ZCDP(rho), priced, names) == 0.05


def test_mixed_units_no_longer_put_the_narrow_columns_a_million_errors_off():
    import warnings

    from dpgauss import PrivateMean
    from dpgauss.exceptions import UtilityWarning

    X = _mixed_units()
    n = X.shape[0]
    mu, sd = X.mean(axis=0), X.std(axis=0)
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UtilityWarning)  # none predicted
            est = PrivateMean(rho=1.0, random_state=seed).fit(X)
        # In sampling errors per column. Before the raised share: 2e5 to 7e6
        # (every scale the same value); now 0.3-0.7 over 5 seeds. 20 leaves
        # room for the frame's noise, far below the failure.
        errors = np.abs(est.mean_ - mu) / sd * math.sqrt(n)
        assert errors.max() < 20.0
    assert est.privacy_spent_ == ZCDP(1.0)


def test_unmeasurable_scales_warn_before_the_spend():
    # d = 10, n = 700, rho 0.5: the Gaussian's scale search cannot measure the
    # columns at any share up to 0.25, and the box route's search cannot
    # reach the quartiles at half the cost: the frame then assumes columns of
    # about the same spread, which it says before the spend.
    import warnings

    from dpgauss import PrivacyBudget, PrivateGaussianEstimator
    from dpgauss.exceptions import UtilityWarning

    X = _mixed_units(n=700, d=10)
    budget = PrivacyBudget(rho=1.0)
    est = PrivateGaussianEstimator(rho=0.5, budget=budget, random_state=0)
    with pytest.warns(UtilityWarning, match="same spread") as caught:
        est.fit(X)
    message = next(str(w.message) for w in caught if "same spread" in str(w.message))
    assert "cov_bounds" in message
    assert budget.spent() == ZCDP(0.5)
    assert "box_low" not in {e.mechanism.split(":")[1] for e in budget.ledger()}
    # Where the scales can be measured: no such warning.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        PrivateGaussianEstimator(rho=1.0, random_state=0).fit(_mixed_units(n=2000))
    assert not any("same spread" in str(w.message) for w in seen)
