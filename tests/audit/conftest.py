"""Fixtures shared by the audits: canaries that weaken a mechanism, and spies
that record a release's output (``spy_on``, for any function's, is in
tests/conftest.py)."""

import numpy as np
import pytest
from scipy.linalg import block_diag

import dpgauss.releases._box as box_module
from dpgauss.accounting._plan import ReleasePlan
from dpgauss.testing.audit import audit, fit_seed


@pytest.fixture
def weaken(monkeypatch):
    """``weaken(module, name, factor)``: the mechanism factory ``module.name``,
    whose first argument is the cost, calibrated to ``1 / factor`` of its
    sensitivity at the same rho or epsilon (a canary the audit must catch)."""

    def weaken(module, name, factor):
        original = getattr(module, name)

        def weak(cost, *args, **kwargs):
            mech = original(cost, *args, **kwargs)
            key = "rho" if hasattr(cost, "rho") else "epsilon"
            value = getattr(cost, key)
            return type(mech)(sensitivity=mech.sensitivity / factor, **{key: value})

        monkeypatch.setattr(module, name, weak)

    return weaken


@pytest.fixture
def record_releases(monkeypatch):
    """``record_releases()``: a dict filled, in the fits that follow, with each
    release's output by name, as its mechanism returns it (``randomise``,
    ``release``, ``release_counts`` or ``randomise_blocks``; blocks as the
    block-diagonal matrix they are the diagonal blocks of, its off-diagonal
    blocks exact 0)."""

    def install():
        record = {}
        calibrate = ReleasePlan.calibrate

        def spying(self, name, **case):
            mech = calibrate(self, name, **case)
            for method in (
                "randomise",
                "release",
                "release_counts",  # a quantile released from chunked counts
                "randomise_blocks",
            ):
                inner = getattr(mech, method, None)
                if inner is not None:

                    def wrapped(*args, _inner=inner, _name=name, _m=method, **kwargs):
                        out = _inner(*args, **kwargs)
                        blocks = _m == "randomise_blocks"
                        record[_name] = block_diag(*out) if blocks else out
                        return out

                    setattr(mech, method, wrapped)
            return mech

        monkeypatch.setattr(ReleasePlan, "calibrate", spying)
        return record

    return install


@pytest.fixture
def audit_release(record_releases):
    """``audit_release(make, X, Y, name, n, delta, random_state)``: the audit
    (:func:`~dpgauss.testing.audit.audit`, ``n`` samples a side, half to
    select) of the scalar release ``name`` of fits of ``make()`` on the
    neighbours X and Y, each fit with a fresh seed."""

    def runner(est, X, name):
        record = record_releases()

        def run(n, rng):
            out = []
            for _ in range(n):
                est.set_params(random_state=fit_seed(rng)).fit(X)
                out.append(float(np.asarray(record[name])))
            return np.array(out)

        return run

    def audit_pair(make, X, Y, name, n, delta, random_state):
        return audit(
            runner(make(), X, name),
            runner(make(), Y, name),
            n_samples=n,
            n_select=n // 2,
            delta=delta,
            random_state=random_state,
        )

    return audit_pair


def _unclipped_offsets(x, center, half_width, out=None):
    with np.errstate(all="ignore"):
        z = (np.asarray(x, dtype=np.float64) - center) / half_width
    if out is None:
        return z
    out[...] = z
    return out


def _unclipped_sums(X, center, radius, with_outer=True, trace_bits=None):
    y = np.asarray(X, dtype=np.float64) - center
    return y.sum(axis=0), y.T @ y


@pytest.fixture
def unclip(monkeypatch):
    """``unclip(offsets=module, sums=module)``: the box map ``box_offsets``
    of ``offsets`` without its clip into [-1, 1], and the ``clipped_sums``
    of ``sums`` without its clip to the ball (canaries the audits must
    catch)."""

    def unclip(offsets=None, sums=None):
        if offsets is not None:
            # The box routes map their rows chunk by chunk through
            # ``_box.boxed``, which reads ``box_offsets`` from its own module;
            # a module that still maps rows itself is patched too.
            monkeypatch.setattr(box_module, "box_offsets", _unclipped_offsets)
            if hasattr(offsets, "box_offsets"):
                monkeypatch.setattr(offsets, "box_offsets", _unclipped_offsets)
        if sums is not None:
            monkeypatch.setattr(sums, "clipped_sums", _unclipped_sums)

    return unclip
