"""Exact samplers for discrete noise, using integer arithmetic only.

Canonne, Kamath and Steinke (2020), "The discrete Gaussian for differential
privacy", Algorithms 1-3, vectorised with numpy. Every probability is a ratio of
integers and every coin is a draw of ``rng.integers`` (numpy's bounded integers
are exactly uniform: Lemire's method with rejection), so the law of every output
is exactly the one stated, with no floating-point number anywhere between the
random bits and the output. This is what defeats the attack of Mironov (2012) on
floating-point noise, whose reachable output floats depend on the center.

* :func:`bernoulli_exp`: Bernoulli(exp(-num/den)) for integer arrays.
* :func:`discrete_laplace`: ``P(k) ∝ exp(-|k| / t)`` on the integers.
* :func:`discrete_gaussian`: ``P(k) ∝ exp(-k^2 / (2 t u))`` on the integers.
* :func:`discrete_linf`: ``P(z) ∝ exp(-||z||_inf / t)`` on the integer vectors.

Vectorisation: each sampler keeps the indices of the entries still running and
draws one array of coins per round for all of them. Entries are independent, so
running their loops side by side gives each one exactly the law of the scalar
algorithm. Small requests (at most ``_SCALAR_MAX`` draws) run the same
algorithms one draw at a time on Python integers, with uniform integers taken
exactly from a buffer of ``rng.integers`` words (see ``_Words``).
"""

import math

import numpy as np

from dpgauss.utils._random import check_generator

__all__ = ["bernoulli_exp", "discrete_gaussian", "discrete_laplace", "discrete_linf"]

#: Largest denominator of :func:`bernoulli_exp` (``rng.integers(0, den)`` and the
#: products formed below stay within int64).
MAX_DENOMINATOR = 2**62
#: Largest discrete Laplace scale t: then ``U + t V`` stays below 2**62 unless
#: V > 2**10, an event of probability exp(-1024).
MAX_LAPLACE_SCALE = 2**52
#: In :func:`discrete_gaussian`, ``(|y| - u)^2`` is formed in int64 when
#: ``||y| - u| < _SQUARE_LIMIT`` and with Python integers otherwise (exact either
#: way; tests lower this limit to exercise the second path).
_SQUARE_LIMIT = 2**31
#: Requests of at most this many draws use the scalar samplers (Python integers,
#: coins from a buffer of uniform words): numpy's per-call overhead dominates
#: there. Both paths draw from the same laws; tests force each one.
_SCALAR_MAX = 64
_TWO63 = 2**63


def _int_array(name, value):
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}.")
    if array.dtype.kind == "u" and array.size and array.max() >= 2**63:
        raise ValueError(f"{name} must be below 2**63.")
    return array.astype(np.int64)


def _positive_int(name, value, limit):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    value = int(value)
    if not 1 <= value <= limit:
        raise ValueError(f"{name} must be in [1, {limit}], got {value!r}.")
    return value


def _count(size):
    shape = () if size is None else tuple(np.atleast_1d(np.asarray(size, dtype=int)))
    return shape, math.prod(shape)


def _bernoulli_exp_fraction(num, den, rng):
    """Bernoulli(exp(-num/den)) for ``0 <= num <= den`` (CKS Algorithm 1, gamma <= 1).

    ``K = 1``; while ``A ~ Bernoulli(gamma / K)`` is 1, ``K += 1``; return ``K``
    odd. ``P(K > k) = gamma^k / k!``, so ``P(K odd) = sum_k (-gamma)^k / k! =
    exp(-gamma)``. ``Bernoulli(num / (den K))`` is drawn as ``Bernoulli(num/den)``
    and an independent ``Bernoulli(1/K)`` (the product of the two probabilities),
    each as one exactly uniform integer. Every running entry shares the same K in
    a round, so ``1/K`` is drawn with a scalar bound.

    ``num``: int64 of shape (m,); ``den``: a Python int or int64 of shape (m,).
    """
    result = np.empty(num.size, dtype=bool)
    active = np.arange(num.size)
    scalar = np.ndim(den) == 0
    k = 1
    while active.size:
        high = den if scalar else den[active]
        go = rng.integers(0, high, size=active.size) < num[active]
        if k > 1:
            go &= rng.integers(0, k, size=active.size) == 0
        result[active[~go]] = k % 2 == 1
        active = active[go]
        k += 1
    return result


def _bernoulli_exp_one(m, rng):
    """m draws of Bernoulli(exp(-1)): Algorithm 1 with gamma = 1 (first coin is 1)."""
    result = np.empty(m, dtype=bool)
    active = np.arange(m)
    k = 2
    while active.size:
        go = rng.integers(0, k, size=active.size) == 0
        result[active[~go]] = k % 2 == 1
        active = active[go]
        k += 1
    return result


def _all_ones(whole, rng):
    """For each entry, whether ``whole[i]`` independent Bernoulli(exp(-1)) are all 1.

    ``whole`` holds non-negative integers (int64, or Python ints in an object
    array for numerators beyond int64); there is no cap on them: an entry stops
    at its first 0, which comes after about 1.6 draws on average.
    """
    out = np.ones(whole.shape[0], dtype=bool)
    pending = np.flatnonzero(np.asarray(whole > 0, dtype=bool))
    rounds = 0
    while pending.size:
        ok = _bernoulli_exp_one(pending.size, rng)
        out[pending[~ok]] = False
        rounds += 1
        pending = pending[ok]
        pending = pending[np.asarray(whole[pending] > rounds, dtype=bool)]
    return out


def _bernoulli_exp_split(whole, rem, den, rng):
    """Bernoulli(exp(-(whole + rem/den))), ``0 <= rem < den`` (CKS Algorithm 1).

    ``exp(-(w + f)) = exp(-1)^w exp(-f)``: w independent Bernoulli(exp(-1)) all 1
    and an independent Bernoulli(exp(-f)). ``den`` is a Python int or an int64
    array like ``rem``.
    """
    out = _bernoulli_exp_fraction(rem, den, rng)
    alive = np.flatnonzero(out)
    if alive.size:
        out[alive] = _all_ones(whole[alive], rng)
    return out


def bernoulli_exp(num, den, rng):
    """Exact Bernoulli(exp(-num/den)) draws for integer arrays.

    Parameters
    ----------
    num : array-like of int
        Numerators, ``num >= 0`` (int64).
    den : array-like of int
        Denominators, ``0 < den <= 2**62``; broadcast against ``num``.
    rng : None, int or numpy.random.Generator
        Source of randomness (resolved once).

    Returns
    -------
    ndarray of bool
        One independent draw per entry of the broadcast shape.

    Notes
    -----
    CKS Algorithm 1: ``gamma = num/den`` is split as ``floor(gamma)`` (all of that
    many Bernoulli(exp(-1)) must be 1) plus the fraction ``(num mod den)/den``
    (the alternating-series sampler). Only uniform integers are drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._discrete import bernoulli_exp
    >>> draws = bernoulli_exp(np.full(100_000, 1), 2, np.random.default_rng(0))
    >>> round(float(draws.mean()), 2)  # exp(-1/2) = 0.607
    0.61
    """
    rng = check_generator(rng)
    num = _int_array("num", num)
    den = _int_array("den", den)
    if np.any(num < 0):
        raise ValueError("num must be >= 0.")
    if np.any(den <= 0) or np.any(den > MAX_DENOMINATOR):
        raise ValueError("den must be in [1, 2**62].")
    scalar_den = den.ndim == 0
    num_b, den_b = np.broadcast_arrays(num, den)
    shape = num_b.shape
    flat_num, flat_den = num_b.ravel(), den_b.ravel()
    whole, rem = np.divmod(flat_num, flat_den)
    out = _bernoulli_exp_split(whole, rem, int(den) if scalar_den else flat_den, rng)
    return out.reshape(shape)


# -- scalar samplers (small requests) --------------------------------------------
class _Words:
    """Exactly uniform integers from a buffer of uniform 63-bit words of ``rng``.

    ``below(n)`` takes a word w, uniform on ``[0, 2^63)``, rejects it when
    ``w >= 2^63 - (2^63 mod n)`` (probability below ``n / 2^63``) and returns
    ``w mod n``: every residue then has exactly ``floor(2^63 / n)`` preimages, so
    the result is exactly uniform on ``{0, ..., n - 1}``. The words come from
    ``rng.integers(0, 2**63, size=...)`` in growing batches; unused words are
    discarded, which does not affect the law of anything drawn.
    """

    def __init__(self, rng):
        self._rng, self._words, self._batch = rng, [], 32

    def below(self, n):
        words = self._words
        while True:
            if not words:
                words = self._rng.integers(0, _TWO63, size=self._batch).tolist()
                self._words, self._batch = words, min(2 * self._batch, 4096)
            word = words.pop()
            if word < _TWO63 - _TWO63 % n:
                return word % n


def _scalar_bernoulli_fraction(num, den, words):
    """Bernoulli(exp(-num/den)), ``0 <= num <= den`` (CKS Algorithm 1, as above)."""
    k = 1
    while words.below(den) < num and (k == 1 or words.below(k) == 0):
        k += 1
    return k % 2 == 1


def _scalar_bernoulli_one(words):
    """Bernoulli(exp(-1)) (Algorithm 1 with gamma = 1)."""
    k = 2
    while words.below(k) == 0:
        k += 1
    return k % 2 == 1


def _scalar_bernoulli_exp(whole, rem, den, words):
    """Bernoulli(exp(-(whole + rem/den))) with Python integers (no size limit)."""
    if not _scalar_bernoulli_fraction(rem, den, words):
        return False
    done = 0
    while done < whole:
        if not _scalar_bernoulli_one(words):
            return False
        done += 1
    return True


def _scalar_laplace(t, words):
    """One discrete Laplace draw of scale t (CKS Algorithm 2, s = 1)."""
    while True:
        u = words.below(t)
        if not _scalar_bernoulli_fraction(u, t, words):
            continue
        v = 0
        while _scalar_bernoulli_one(words):
            v += 1
        x = u + t * v
        negative = words.below(2) == 1
        if not (negative and x == 0):
            return -x if negative else x


def _scalar_gaussian(t, u, words):
    """One discrete Gaussian N_Z(0, t u) draw (CKS Algorithm 3)."""
    den = 2 * t * u
    while True:
        y = _scalar_laplace(t, words)
        whole, rem = divmod((abs(y) - u) ** 2, den)
        if _scalar_bernoulli_exp(whole, rem, den, words):
            return y


def _scalar_draws(draw, n, rng):
    words = _Words(rng)
    return np.array([draw(words) for _ in range(n)], dtype=np.int64)


# -- vectorised samplers ---------------------------------------------------------
def _count_successes(m, rng):
    """m draws of V = number of consecutive Bernoulli(exp(-1)) successes."""
    v = np.zeros(m, dtype=np.int64)
    live = np.arange(m)
    while live.size:
        live = live[_bernoulli_exp_one(live.size, rng)]
        v[live] += 1
    return v


def _laplace_attempts(t, m, rng):
    """m attempts of CKS Algorithm 2 (s = 1); returns the accepted values, in order.

    One attempt: ``U ~ Unif{0..t-1}``; reject unless ``Bernoulli(exp(-U/t))``;
    ``V`` = number of consecutive Bernoulli(exp(-1)) successes
    (``P(V = v) = (1 - e^-1) e^-v``); ``X = U + t V``, so
    ``P(X = x) ∝ exp(-(x mod t)/t) exp(-floor(x/t)) = exp(-x/t)`` for x >= 0;
    ``B ~ Bernoulli(1/2)``; reject ``(B, X) = (1, 0)`` (zero would be counted
    twice); return ``(1 - 2B) X``: ``P(k) ∝ exp(-|k|/t)`` on all the integers.
    """
    limit = (2**62 - t) // t  # V <= limit keeps X = U + t V below 2**62
    u = rng.integers(0, t, size=m)
    u = u[_bernoulli_exp_fraction(u, t, rng)]
    v = _count_successes(u.size, rng)
    if v.size and int(v.max()) > limit:  # probability below exp(-1024)
        raise OverflowError("discrete Laplace draw beyond 2**62.")
    x = u + t * v
    negative = rng.integers(0, 2, size=x.size) == 1
    x = np.where(negative, -x, x)
    return x[~(negative & (x == 0))]


def _pooled(attempts, n, rate):
    """n outputs of a rejection sampler from batches of independent attempts.

    ``attempts(m)`` runs m independent attempts and returns the accepted values
    in order. The accepted values of independent attempts are independent draws
    of the target law (whatever the number accepted), so the first n of them, in
    order, are n independent draws. Batches are sized from the acceptance rate
    seen so far, so a few rounds suffice.
    """
    parts, have, tried = [], 0, 0
    while have < n:
        m = int((n - have) / rate * 1.05) + 16
        batch = attempts(m)
        parts.append(batch)
        have += batch.size
        tried += m
        rate = max(have / tried, 0.01)
    return np.concatenate(parts)[:n] if parts else np.empty(0, dtype=np.int64)


def _discrete_laplace_flat(t, n, rng):
    """n exact draws of the discrete Laplace of scale t (CKS Algorithm 2, s = 1)."""
    return _pooled(lambda m: _laplace_attempts(t, m, rng), n, 0.62)


def discrete_laplace(t, size, rng):
    """Exact draws of the discrete Laplace distribution of scale t.

    Parameters
    ----------
    t : int
        The scale, ``1 <= t <= 2**52``: ``P(k) = (1 - e^{-1/t}) / (1 + e^{-1/t})
        exp(-|k|/t)`` for every integer k.
    size : int, tuple of int or None
        Output shape (None: one draw, returned as a 0-d array).
    rng : None, int or numpy.random.Generator
        Source of randomness (resolved once).

    Returns
    -------
    ndarray of int64
        The draws.

    Notes
    -----
    Algorithm 2 of Canonne, Kamath and Steinke (2020) with s = 1 (the derivation
    is in ``_discrete_laplace_flat``). Shifting an integer center by an integer
    ``delta`` changes every probability by a factor at most ``exp(|delta|/t)``, so
    adding this noise to an integer vector of l1 sensitivity ``Delta`` is
    ``Delta/t``-DP.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._discrete import discrete_laplace
    >>> z = discrete_laplace(10, 100_000, np.random.default_rng(0))
    >>> z.dtype, round(float(np.mean(np.abs(z))), 0)  # about t for large t
    (dtype('int64'), 10.0)
    """
    t = _positive_int("t", t, MAX_LAPLACE_SCALE)
    shape, n = _count(size)
    rng = check_generator(rng)
    if n <= _SCALAR_MAX:
        return _scalar_draws(lambda w: _scalar_laplace(t, w), n, rng).reshape(shape)
    return _discrete_laplace_flat(t, n, rng).reshape(shape)


def _gaussian_acceptance(a, den, rng):
    """Bernoulli(exp(-a^2/den)) for int64 ``a`` (exactly, for every a)."""
    small = np.abs(a) < _SQUARE_LIMIT
    if small.all():
        whole, rem = np.divmod(a * a, den)
        return _bernoulli_exp_split(whole, rem, den, rng)
    whole = np.empty(a.size, dtype=object)
    rem = np.empty(a.size, dtype=np.int64)
    fast = np.flatnonzero(small)
    whole_fast, rem[fast] = np.divmod(a[fast] * a[fast], den)
    whole[fast] = whole_fast.tolist()
    for i in np.flatnonzero(~small).tolist():  # rare: Python integers, no overflow
        whole[i], rem[i] = divmod(int(a[i]) ** 2, den)
    return _bernoulli_exp_split(whole, rem, den, rng)


def discrete_gaussian(t, u, size, rng):
    """Exact draws of the discrete Gaussian N_Z(0, S) with ``S = t u``.

    Parameters
    ----------
    t : int
        Scale of the discrete Laplace proposal, ``1 <= t <= 2**52`` (efficient
        for t near ``sqrt(S)``; the mechanisms use a power of two).
    u : int
        ``u = S / t >= 1``, with ``t u <= 2**61``.
    size : int, tuple of int or None
        Output shape (None: one draw, as a 0-d array).
    rng : None, int or numpy.random.Generator
        Source of randomness (resolved once).

    Returns
    -------
    ndarray of int64
        Draws with ``P(k) ∝ exp(-k^2 / (2 S))`` on the integers.

    Notes
    -----
    Algorithm 3 of Canonne, Kamath and Steinke (2020). Draw Y from the discrete
    Laplace of scale t and accept it with probability
    ``exp(-(|Y| - S/t)^2 / (2S)) = exp(-(|Y| - u)^2 / (2 t u))``; repeat until
    accepted. Proof of the law: with ``c = S/t``,

    .. math::

       \\frac{|y|}{t} + \\frac{(|y| - c)^2}{2S}
       = \\frac{|y|}{t} + \\frac{y^2}{2S} - \\frac{|y| c}{S} + \\frac{c^2}{2S}
       = \\frac{y^2}{2S} + \\frac{c^2}{2S},

    because ``c/S = 1/t``. So ``P(Y = y) P(accept | y) ∝ exp(-y^2/(2S))`` up to a
    factor that does not depend on y: the accepted Y has exactly the discrete
    Gaussian law, for any t > 0. The acceptance probability is a Bernoulli of
    ``exp(-num/den)`` with ``num = (|y| - u)^2`` and ``den = 2tu <= 2**62``; the
    numerator is formed in int64 while ``||y| - u| < 2**31`` and with Python
    integers beyond (exact, no truncation; at the mechanisms' t <= 2**26 this
    needs ``|y| > 2**30``, probability below ``exp(-2**4)`` per proposal).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._discrete import discrete_gaussian
    >>> z = discrete_gaussian(4, 4, 100_000, np.random.default_rng(0))
    >>> round(float(z.var()))  # S = 16 (the exact variance is a little below S)
    16
    """
    t = _positive_int("t", t, MAX_LAPLACE_SCALE)
    u = _positive_int("u", u, 2**61)
    if t * u > 2**61:
        raise ValueError(f"t * u must be at most 2**61, got {t * u}.")
    rng = check_generator(rng)
    shape, n = _count(size)
    if n <= _SCALAR_MAX:
        return _scalar_draws(lambda w: _scalar_gaussian(t, u, w), n, rng).reshape(shape)
    den = 2 * t * u

    def attempts(m):
        y = _discrete_laplace_flat(t, m, rng)
        return y[_gaussian_acceptance(np.abs(y) - u, den, rng)]

    out = _pooled(attempts, n, 0.7)
    return out.reshape(shape)


# -- the l-infinity K-norm lattice noise -----------------------------------------
def _geometric_attempts(t, m, rng):
    """m attempts of CKS Algorithm 2 without the sign: accepted ``X >= 0`` with
    ``P(X = x) ∝ exp(-x / t)`` (see :func:`_laplace_attempts` for the proof)."""
    limit = (2**62 - t) // t
    u = rng.integers(0, t, size=m)
    u = u[_bernoulli_exp_fraction(u, t, rng)]
    v = _count_successes(u.size, rng)
    if v.size and int(v.max()) > limit:  # probability below exp(-1024)
        raise OverflowError("geometric draw beyond 2**62.")
    return u + t * v


def _linf_radius(t, d, rng):
    """One draw of K with ``P(K = k) ∝ (2k + 1)^d exp(-k / t)``, a Python int.

    Proposal: ``N``, the sum of ``d + 1`` independent geometric draws with
    ``P(x) ∝ q^x`` (``q = exp(-1/t)``), has ``P(N = k) = C(k + d, d) (1 - q)^(d+1)
    q^k`` (the compositions of k into d + 1 parts). Accept ``N = k`` with
    probability ``prod_{j=1..d} (2k + 1) / (2k + 2j)``, each factor one exactly
    uniform integer below ``2k + 2j`` compared with ``2k + 1``. Then
    ``P(K = k) ∝ C(k + d, d) q^k (2k + 1)^d k! / (2^d (k + d)!) = q^k (2k + 1)^d
    / (2^d d!)``, the target. Every factor is at most 1 (``2j >= 1``), and near 1
    when k is far above ``d^2``: the mechanisms use ``t >= 2**40``, where almost
    every proposal is accepted.
    """
    while True:
        parts = _pooled(lambda m: _geometric_attempts(t, m, rng), d + 1, 0.62)
        k = sum(int(x) for x in parts.tolist())
        if 2 * k + 2 * d >= 2**62:  # probability below exp(-2**20) at t <= 2**52
            raise OverflowError("l-infinity noise radius beyond 2**61.")
        denominators = 2 * k + 2 * np.arange(1, d + 1, dtype=np.int64)
        if np.all(rng.integers(0, denominators) < 2 * k + 1):
            return k


def discrete_linf(t, d, rng):
    """One exact draw of integer noise with ``P(z) ∝ exp(-||z||_inf / t)`` on Z^d.

    Parameters
    ----------
    t : int
        The scale, ``1 <= t <= 2**52``.
    d : int
        The dimension, ``d >= 1``.
    rng : None, int or numpy.random.Generator
        Source of randomness (resolved once).

    Returns
    -------
    ndarray of int64, shape (d,)
        The draw.

    Notes
    -----
    A mixture of uniform cubes. Draw the radius K with ``P(K = k) ∝ (2k + 1)^d
    q^k``, ``q = exp(-1/t)`` (:func:`_linf_radius`), then Z uniform on
    ``{-K, ..., K}^d`` (``rng.integers``, exactly uniform). For a point z with
    ``||z||_inf = m``,

    .. math::

       P(Z = z) = \\sum_{k \\ge m} \\frac{P(K = k)}{(2k + 1)^d}
       \\propto \\sum_{k \\ge m} q^k = \\frac{q^m}{1 - q},

    so ``P(Z = z) ∝ exp(-||z||_inf / t)``: the K-norm mechanism of the unit cube
    (Hardt and Talwar 2010) on the integer lattice. Shifting an integer center by
    ``delta`` changes every probability by a factor at most
    ``exp(||delta||_inf / t)`` (triangle inequality), so adding this noise to an
    integer vector of l-infinity sensitivity ``Delta`` is ``Delta / t``-DP. Each
    entry's variance is ``E[K (K + 1)] / 3``, about ``(d + 1)(d + 2) t^2 / 3``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mechanisms._discrete import discrete_linf
    >>> rng = np.random.default_rng(0)
    >>> z = np.array([discrete_linf(50, 3, rng) for _ in range(4000)])
    >>> # ||Z||_inf is about Gamma(d, t): mean d t
    >>> z.shape, round(float(np.abs(z).max(axis=1).mean()) / 50, 1)
    ((4000, 3), 3.0)
    """
    t = _positive_int("t", t, MAX_LAPLACE_SCALE)
    d = _positive_int("d", d, 2**20)
    rng = check_generator(rng)
    k = _linf_radius(t, d, rng)
    return rng.integers(-k, k + 1, size=d, dtype=np.int64)
