"""The exact populous mean's pieces: counting, the test, the sensitivity bound."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate

from dpgauss.ensemble import _populous as P
from dpgauss.mechanisms import GaussianMechanism

T, (A_RAMP, B_RAMP) = 0.9, (0.55, 0.75)


def _brute_counts(Ys, tau):
    """Exact counts in rationals (NaN rows: only themselves)."""
    k = Ys.shape[0]
    ok = np.all(np.isfinite(Ys), axis=1)
    lim = Fraction(tau) ** 2
    counts = np.ones(k, dtype=np.int64)
    for i in range(k):
        if not ok[i]:
            continue
        c = 0
        for j in range(k):
            if ok[j]:
                sq = sum(
                    (Fraction(float(a)) - Fraction(float(b))) ** 2
                    for a, b in zip(Ys[i], Ys[j], strict=True)
                )
                c += sq <= lim
        counts[i] = c
    return counts


@pytest.mark.parametrize("seed", range(4))
def test_neighbour_counts_are_exact_near_the_boundary(seed):
    rng = np.random.default_rng(seed)
    tau = 0.7
    h, t = P.snap_grid(tau)
    Y = rng.normal(scale=0.4, size=(40, 2))
    # pairs exactly at the radius, one grid step inside and outside
    Y[1] = Y[0] + np.array([t * h, 0.0])
    Y[2] = Y[0] + np.array([(t + 1) * h, 0.0])
    Y[3] = Y[0] + np.array([0.0, (t - 1) * h])
    Y[4] = [1e300, -1e300]
    Y[5] = [1e300, -1e300]
    Y[6] = np.nan
    Ys = P.snap(Y, h)
    got = P.neighbour_counts(Ys, h, t, block=7)
    assert np.array_equal(got, _brute_counts(Ys, t * h))
    assert got[6] == 1


def _tlap_tail(x, lam, A):
    B = 1.0 / (2 * lam * (1 - math.exp(-A / lam)))
    lo = max(x, -A)
    if lo >= A:
        return 0.0
    pts = [0.0] if lo < 0 < A else None
    value, _ = integrate.quad(
        lambda z: B * math.exp(-abs(z) / lam), lo, A, points=pts, epsabs=1e-13
    )
    return value


@pytest.mark.parametrize(("eps", "delta"), [(0.2, 5e-7), (1.0, 1e-3)])
def test_pass_probability_matches_the_truncated_laplace_tail(eps, delta):
    k = 3000
    A = P.test_half_width(k, eps, delta)
    lam = 2.0 / (k * eps)
    for q in np.linspace(T - 0.01, min(1.0, T + 2 * A + 0.01), 41):
        N = round(float(q) * k * k)
        got = P.pass_probability(N, k, T, eps, delta)
        if N < T * k * k:
            assert got == 0.0
            continue
        want = _tlap_tail(T + A - N / (k * k), lam, A)
        assert abs(got - want) < 1e-9


@pytest.mark.parametrize(("eps", "delta"), [(0.2, 5e-7), (1.0, 1e-3)])
def test_test_is_eps_delta_private_for_every_count(eps, delta):
    """P[pass | N] <= e^eps P[pass | N'] + delta (and for fail), |N - N'| <= 2(k-1)."""
    k = 500
    cal = P.calibration_delta(eps, delta)
    step = 2 * (k - 1)
    lo = int(T * k * k) - 2 * step
    Ns = np.arange(lo, k * k + 1, 37)
    probs = {int(N): P.pass_probability(int(N), k, T, eps, cal) for N in Ns}
    for N in Ns:
        for M in (N - step, N + step):
            if M < 0 or M > k * k:
                continue
            p, q = probs[int(N)], P.pass_probability(int(M), k, T, eps, cal)
            assert p <= math.exp(eps) * q + delta
            assert 1 - p <= math.exp(eps) * (1 - q) + delta


def test_min_groups_lets_a_unanimous_test_pass_surely():
    k = P.min_groups(0.2, 5e-7, T, A_RAMP, B_RAMP)
    assert P.pass_probability(k * k, k, T, 0.2, 5e-7) == 1.0
    assert P.test_half_width(k, 0.2, 5e-7) <= (1 - T) / 2


def _exact_mu(Ys, counts, k):
    A_w, B_w = P.weight_params(k, A_RAMP, B_RAMP)
    m = np.minimum(np.maximum(counts - A_w, 0), B_w)
    if m.sum() == 0:
        return None
    return np.array(
        [
            float(
                sum(int(m[i]) * Fraction(float(Ys[i, c])) for i in range(k) if m[i])
                / int(m.sum())
            )
            for c in range(Ys.shape[1])
        ]
    )


@pytest.mark.parametrize("seed", range(6))
def test_mask_sensitivity_bounds_every_replacement(seed):
    """Property test: replace one candidate (near, at the radius, far, failed);
    whenever max(Q, Q') >= T, ||mu - mu'|| is within the calibrated bound."""
    rng = np.random.default_rng(seed)
    k, tau = 40, 1.0
    h, t = P.snap_grid(tau)
    bound = P.mask_sensitivity(k, t * h, T, A_RAMP, B_RAMP)
    worst = 0.0
    for _ in range(60):
        spread = rng.choice([0.2, 0.4, 0.5, 0.7])
        Y = rng.uniform(-spread, spread, size=(k, 1))
        Y[: rng.integers(0, 4)] = rng.uniform(-3, 3, size=(1, 1))  # stragglers
        Z = Y.copy()
        i = rng.integers(k)
        Z[i] = rng.choice([1e12, -0.5, 0.5, 1.0, np.nan, Y[i, 0] + 0.99])
        Ya, Za = P.snap(Y, h), P.snap(Z, h)
        ca, cb = P.neighbour_counts(Ya, h, t), P.neighbour_counts(Za, h, t)
        if max(ca.sum(), cb.sum()) < T * k * k:
            continue
        mu_a, mu_b = _exact_mu(Ya, ca, k), _exact_mu(Za, cb, k)
        gap = float(np.linalg.norm(mu_a - mu_b))
        worst = max(worst, gap / bound)
    assert worst <= 1.0


def test_randomise_lattice_is_a_function_of_the_integer_sum():
    mech = GaussianMechanism(sensitivity=1.0, rho=0.5)
    big = 2**1100  # beyond float64 after scaling: clipped to the lattice bound
    out = mech.randomise_lattice([0, 3, -big], random_state=0)
    assert out.shape == (3,)
    assert np.isfinite(out[:2]).all()
    again = mech.randomise_lattice([0, 3, -big], random_state=0)
    assert np.array_equal(out, again)
    assert mech.draws == 2
    with pytest.raises(ValueError, match="exact"):
        GaussianMechanism(sensitivity=1.0, rho=0.5, exact=False).randomise_lattice([0])


def test_mask_sensitivity_holds_on_the_worst_known_pair():
    """The worst pair an exhaustive 1-D search and hill climbing found
    (k = 11, tau = 4, one candidate moved from 9 to 1): it uses about a tenth
    of the bound, so the test would fail a bound ten or more times too small
    (the random pairs above stay below a twentieth of it)."""
    k, tau = 11, 4.0
    Y = np.array([[9.0], [5], [5], [5], [1], [1], [5], [5], [9], [9], [5]])
    Z = Y.copy()
    Z[0] = 1.0
    h, t = P.snap_grid(tau)
    ca, cb = (
        P.neighbour_counts(P.snap(Y, h), h, t),
        P.neighbour_counts(P.snap(Z, h), h, t),
    )
    assert max(ca.sum(), cb.sum()) >= T * k * k
    gap = float(np.linalg.norm(_exact_mu(Y, ca, k) - _exact_mu(Z, cb, k)))
    ratio = gap / P.mask_sensitivity(k, t * h, T, A_RAMP, B_RAMP)
    assert 0.09 < ratio <= 1.0
