"""The Gaussian's plans in a box: the choice before the spend and the releases."""

import math

import numpy as np
import pytest

from dpgauss.accounting import ZCDP, PureDP
from dpgauss.accounting._composition import compose
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.releases._box_gaussian import (
    AUGMENTED,
    MEAN_SHARES,
    SQUARE_WEIGHT,
    _entries,
    box_gaussian_plan,
    box_gaussian_predict,
    from_box,
    mean_baseline,
    release_box_gaussian,
)
from dpgauss.releases._box_mean import baseline_error
from dpgauss.releases._box_staged import (
    STAGED,
    choose_augmented,
    staged_errors,
    tau_grid,
)

CANDIDATES = [None, AUGMENTED, STAGED, *MEAN_SHARES]


def _names(entries):
    return [r.name for r in entries]


def _mechanisms(total, entries):
    return {r.name: r.build() for r in ReleasePlan(total, entries).releases()}


def test_priced_without_n_the_plan_is_the_moments_release():
    assert _names(box_gaussian_plan(PureDP(1.0), None, 4)) == ["box_moments"]


@pytest.mark.parametrize("total", [PureDP(1.0), ZCDP(0.5)])
@pytest.mark.parametrize("share", CANDIDATES)
def test_every_candidate_costs_the_whole_budget(total, share):
    if share in (AUGMENTED, STAGED) and isinstance(total, PureDP):
        pytest.skip("the augmented release is offered under zCDP only")
    # The plan refuses charges above its total; none is left unspent either.
    plan = ReleasePlan(total, _entries(total, 500, 4, share))
    spent = compose(total, plan.costs())
    key = "rho" if isinstance(total, ZCDP) else "epsilon"
    assert getattr(spent, key) == pytest.approx(getattr(total, key), rel=1e-9)


def test_zcdp_with_many_rows_takes_the_staged_release():
    # d = 8, n = 5000, rho = 0.5: the mean is the baseline's and the full
    # covariance is predicted a tenth of the zero matrix's error; the staged
    # plan releases the fills first and the full covariance only where they
    # let it beat the diagonal.
    assert _names(box_gaussian_plan(ZCDP(0.5), 5000, 8)) == ["box_first", "box_second"]


def test_pure_dp_takes_a_full_plan_only_where_predicted_twice_better():
    # d = 9, epsilon 1 (public values only): at n = 5,047 the best full plan
    # is predicted at 0.85 of the diagonal plan's score (not enough: on tied
    # columns it answered the zero matrix), at n = 20,190 at 0.40 (taken).
    assert _names(box_gaussian_plan(PureDP(1.0), 5047, 9)) == ["box_moments"]
    assert "box_moments" not in _names(box_gaussian_plan(PureDP(1.0), 20190, 9))


def test_small_n_takes_the_moments_release_or_the_staged_one():
    # Under zCDP the staged plan's moments option loses nothing against the
    # single moments release, and its augmented rows clip at the first
    # stage's spread: taken at n = 150 too.
    assert _names(box_gaussian_plan(PureDP(1.0), 150, 9)) == ["box_moments"]
    assert _names(box_gaussian_plan(ZCDP(0.5), 150, 9)) == ["box_first", "box_second"]


def test_the_augmented_mean_carries_the_baselines_noise():
    # Off-diagonal noise variance s^2 / 2 over the constant sqrt(d) squared:
    # the per-coordinate baseline's 2 sqrt(d) / (n sqrt(2 rho)) per coordinate
    # (the lattice sampler adds well under 1%).
    total, n, d = ZCDP(0.5), 2000, 6
    prediction = box_gaussian_predict(
        total, n, d, _mechanisms(total, _entries(total, n, d, AUGMENTED))
    )
    assert prediction.mean.error == pytest.approx(baseline_error(total, n, d), rel=1e-2)


def test_the_moments_prediction_beats_both_baselines_under_zcdp():
    # The means carry the noise of the per-coordinate means at the whole rho
    # (the squares come free at w = 3/2), the baseline's at half of it: a
    # ratio of 1/sqrt(2) (the lattice sampler adds well under 1%).
    total, n, d = ZCDP(0.5), 300, 5
    prediction = box_gaussian_predict(
        total, n, d, _mechanisms(total, _entries(total, n, d, None))
    )
    assert prediction.mean.baseline == pytest.approx(
        math.sqrt(2.0) * baseline_error(total, n, d), rel=1e-6
    )
    assert prediction.mean.error == pytest.approx(
        prediction.mean.baseline / math.sqrt(2.0), rel=1e-2
    )
    assert not prediction.covariance.loses
    assert prediction.admissible


def _rows(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(0.2, 0.1, size=(n, d))
    X[0] = 1e12
    X[1] = -1e12
    return X


@pytest.mark.parametrize("share", CANDIDATES)
@pytest.mark.parametrize("total", [PureDP(1e-3), ZCDP(1e-6), ZCDP(5.0)])
def test_releases_stay_in_the_box_for_every_plan(share, total):
    if share in (AUGMENTED, STAGED) and isinstance(total, PureDP):
        pytest.skip("the augmented release is offered under zCDP only")
    n, d = 400, 3
    X = _rows(n, d, 0)
    plan = ReleasePlan(total, _entries(total, n, d, share))
    center, half = np.full(d, 5.0), np.array([1e-3, 1.0, 1e6])
    released = release_box_gaussian(X, center, half, plan, np.random.default_rng(0))
    plan.finish()
    assert np.all(np.abs(released[0]) <= 1.0)
    assert np.all(np.asarray(released[4]) > 0)  # the mean's public noise sd
    mean, values, vectors, floor, scale = from_box(*released[:4], center, half)
    assert np.all((mean >= center - half) & (mean <= center + half))
    assert np.array_equal(scale, half)
    C = scale[:, None] * ((vectors * values) @ vectors.T) * scale[None, :]
    assert np.all(np.isfinite(C))
    assert np.all(np.diag(C) <= half**2 * (1 + 1e-9))
    assert np.all(values >= floor)
    assert floor > 0


def test_the_staged_choice_reads_the_fills():
    # Noise variances of d = 5 at n = 2000, rho = 0.5 (box units): diagonal
    # 1e-6 (moments) and 1.3e-5 (augmented), off-diagonal 3e-5 (sd 5.5e-3).
    # Columns filling a tenth of their box: each pair's noise is 0.055 of
    # its scale, below the reference correlation 0.3, so the augmented option
    # wins; filling a thousandth it is 5.5 times, and the diagonal keeps them.
    noise = (1e-6, 1.3e-5, 3e-5)
    assert choose_augmented(np.full(5, 0.1), *noise)
    assert not choose_augmented(np.full(5, 1e-3), *noise)
    assert not choose_augmented(np.zeros(5), *noise)


def test_the_staged_mean_stays_below_the_baselines_noise():
    # Both options combine the first stage's means with the second's. The
    # augmented rows' mean carries the off-diagonal noise over tau^2, and
    # GaussCov's noise variance grows as tau^4: at the reference data's tau
    # the combined mean's error is 0.65 of the per-coordinate means' at the
    # whole rho, 2 sqrt(d) / (n sqrt(2 rho)) per coordinate; at tau = sqrt(d)
    # (the uncentred rows' radius) exactly it; at the grid's largest,
    # sqrt(2 d), 1.26 times it, 0.89 of the mean baseline's at half the rho.
    total, n, d = ZCDP(0.5), 2000, 6
    mechanisms = _mechanisms(total, _entries(total, n, d, STAGED))
    prediction = box_gaussian_predict(total, n, d, mechanisms)
    ratio = prediction.mean.error / baseline_error(total, n, d)
    assert ratio == pytest.approx(0.65, rel=1e-2)
    for tau, expected in ((math.sqrt(d), 1.0), (tau_grid(d)[0], 1.26)):
        var = staged_errors(mechanisms, d, SQUARE_WEIGHT, tau)[0]
        ratio = math.sqrt(d * var) / baseline_error(total, n, d)
        assert ratio == pytest.approx(expected, rel=1e-2)
    assert math.sqrt(d * var) < 0.9 * mean_baseline(total, n, d)


@pytest.mark.parametrize(
    ("share", "option"),
    [
        (None, None),
        (AUGMENTED, None),
        (0.5, None),
        (STAGED, "moments"),
        (STAGED, "augmented"),
    ],
)
def test_every_plan_returns_its_means_public_noise_sd(share, option, monkeypatch):
    # Columns 0 and 2 clipped to the upper and lower bounds, 1 and 3 inside:
    # each path's released mean less two of its noise sds (the edge rule of
    # releases/_box.py) finds exactly those two, with the staged plan's
    # options forced both ways.
    import dpgauss.releases._box_staged as staged
    from dpgauss.releases._box import rows_at_edge

    monkeypatch.setattr(staged, "choose_augmented", lambda *a: option == "augmented")
    n, d = 4000, 4
    rng = np.random.default_rng(0)
    X = rng.normal(0.0, 0.2, size=(n, d))
    X[:, 0] += 50.0
    X[:, 2] -= 50.0
    total = ZCDP(0.5)
    plan = ReleasePlan(total, _entries(total, n, d, share))
    released = release_box_gaussian(
        X, np.zeros(d), np.ones(d), plan, np.random.default_rng(0)
    )
    plan.finish()
    mean, sd = released[0], np.asarray(released[4])
    assert np.all((sd > 0) & (sd < 0.02))
    assert rows_at_edge(mean, sd).tolist() == [True, False, True, False]
