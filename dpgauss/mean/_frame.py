"""The frame of PrivateMean: its releases' plan entries and factories, and the
per-coordinate log scales of the ``plan`` method (see
:class:`~dpgauss.mean.PrivateMean`)."""

import math

import numpy as np

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release
from dpgauss.mean._tukey import RestrictedTukeyMechanism
from dpgauss.mechanisms._releases import second_moment_mechanism, vector_mechanism
from dpgauss.releases._coinpress import STEP_BETA, tail_radius
from dpgauss.releases._covariance import covariance_factory
from dpgauss.releases._range import Stages, frame_count
from dpgauss.utils._sums import CHUNK_ROWS, is_dask_array, summation_error

#: Preconditioning releases of the coinpress frame.
FRAME_STEPS = 3
#: Width (natural log units) of the window the plan method clips log sizes to.
LOG_WINDOW = 16.0


def tukey_factory(d):
    """The factory of the ``tukey`` release: ``make(cost, features=d)`` is the
    :class:`~dpgauss.mean._tukey.RestrictedTukeyMechanism` of d columns (its
    construction refuses a cost it cannot calibrate)."""

    def make(cost, *, features=d):
        return RestrictedTukeyMechanism(cost, features)

    return make


def frame_factory(method, n, d):
    """The factory of the composite ``frame`` release: ``make(cost,
    method=method, rows=frame_count(n))`` is the nested release
    (:class:`~dpgauss.releases._range.Stages`) of :func:`frame_entries` on
    the pairs the frame reads."""
    m = None if n is None else frame_count(n)

    def make(cost, *, method=method, rows=m):
        return Stages(cost, frame_entries(cost, method, d, rows))

    return make


def frame_entries(cost, method, d=None, n=None):
    """The frame's sub-releases on n pairs: ``precondition_1`` ... (coinpress)
    or ``log_scales`` (plan), each with its factory.

    A preconditioning step is a second moment of the n pairs whitened to about
    the identity, clipped at the Gaussian tail radius in d dimensions
    (:func:`~dpgauss.releases._covariance.covariance_factory`); ``log_scales``
    is :func:`log_scales_factory`'s (its values are clipped to the window at
    once, so only a finite noise scale is needed).
    """
    kind, size = kind_of(cost), 1 if d is None else d
    if method == "plan":
        make = log_scales_factory(n, d)
        return [Release("log_scales", cost, kind, make, size, bounded=False)]
    parts = split_cost(cost, [1.0 / FRAME_STEPS] * FRAME_STEPS)
    gamma = None if d is None else tail_radius(d, STEP_BETA)
    names = [f"precondition_{k}" for k in range(1, FRAME_STEPS + 1)]
    makes = [covariance_factory(name, n, d, gamma, None) for name in names]
    return [
        Release(name, c, kind, make, size)
        for name, c, make in zip(names, parts, makes, strict=True)
    ]


def log_scales_factory(m, d):
    """The factory of ``log_scales``: ``make(cost, rows=m, features=d,
    n_partials=None)`` is the vector mechanism of the d clipped mean log
    sizes of m pairs summed in ``n_partials`` chunks (by default
    ``ceil(m / CHUNK_ROWS)``, what :func:`log_scales` adds), sensitivity
    ``W sqrt(d) (1 / m + 2 e)`` (see :func:`log_scales`)."""

    def make(cost, *, rows=m, features=d, n_partials=None):
        error = summation_error(rows, n_partials)
        sensitivity = LOG_WINDOW * math.sqrt(features) * (1.0 / rows + 2.0 * error)
        return vector_mechanism(cost, features, sensitivity)

    return make


def frame_noise(cost, n, d):
    """Predicted spectral norm of a preconditioning step's noise (public).

    ``2 sqrt(d)`` times the sd of an off-diagonal entry of the first step's
    release (pairs whitened to about the identity and clipped at the Gaussian
    tail radius): about the largest eigenvalue of a symmetric noise matrix.
    """
    part = split_cost(cost, [1.0 / FRAME_STEPS] * FRAME_STEPS)[0]
    mech = second_moment_mechanism(part, frame_count(n), d, tail_radius(d, STEP_BETA))
    _, off = mech.entry_variances(d)
    return 2.0 * math.sqrt(d * off)


def _windowed_logs(z, low):
    """``log |z| - low`` clipped to ``[0, W]``, entry by entry, warning-free."""
    with np.errstate(all="ignore"):
        logs = np.log(np.abs(z))
        logs = np.where(np.isnan(logs), low, logs)
        # Shift, then clip: in [0, W] exactly as computed (clipping to
        # [low, high] first let the rounded shift exceed W by an ulp).
        return np.clip(logs - low, 0.0, LOG_WINDOW)  # -inf (ties) -> 0


def log_scales(pairs, top, plan, rng):
    """Per-coordinate sds from the pairs' mean log sizes (``log_scales``).

    ``log |z_j|`` (z = x/2 - x'/2) is clipped to the public window
    ``[log(top) + 1 - W, log(top) + 1]``, W = :data:`LOG_WINDOW`, and the d
    means are released together by one Gaussian (Laplace) release: one pair's
    vector lies in a box of side W, so replacing one pair (one row changes one
    pair) moves the means by at most ``W sqrt(d) / m`` in l2, plus the
    chunked sums' rounding ``2 e W sqrt(d)``
    (:func:`~dpgauss.utils._sums.summation_error`, applied to the values
    shifted to ``[0, W]``). The noise is the same in every coordinate
    relative to its scale (a factor), which is what the variance-aware
    weights need; a per-coordinate quantile would cost sqrt(d) times more.
    For Gaussian z, ``E log|z_j| = log sigma_j - log(2) / 2 - 0.635``
    (``0.635 = (gamma + log 2) / 2``, gamma Euler's constant): the sds are
    post-processing.
    """
    m, d = pairs.shape
    high = math.log(top) + 1.0
    low = high - LOG_WINDOW
    sums, chunks = np.zeros(d), 0
    for start in range(0, m, CHUNK_ROWS):
        part = pairs[start : start + CHUNK_ROWS]
        if is_dask_array(part):
            # In the workers, under the function's own errstate: the
            # client's does not apply there, and log(0) of a tied pair would
            # warn (a warning that depends on the rows, after the spend).
            logs = part.map_blocks(_windowed_logs, low, dtype=np.float64)
        else:
            logs = _windowed_logs(part, low)
        sums = sums + logs.sum(axis=0)
        chunks += 1
    means = sums / m
    mech = plan.calibrate("log_scales", rows=m, features=d, n_partials=chunks)
    released = np.clip(mech.randomise(means, rng), 0.0, LOG_WINDOW)
    shift = 0.5 * math.log(2.0) + 0.5 * (np.euler_gamma + math.log(2.0))
    with np.errstate(all="ignore"):
        sds = np.exp(released + low + shift)
    return np.clip(np.where(np.isfinite(sds), sds, 1.0), 1e-300, 1e300)
