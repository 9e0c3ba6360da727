"""Fixtures shared by the audits: canaries that weaken a mechanism, and spies
that record a private choice's outcome."""

import numpy as np
import pytest


@pytest.fixture
def weaken_gaussian(monkeypatch):
    """``weaken(module, name, factor)``: the Gaussian mechanism factory
    ``module.name`` calibrated to ``1 / factor`` of its sensitivity (a
    canary the audit must catch)."""

    def weaken(module, name, factor):
        original = getattr(module, name)

        def weak(*args, **kwargs):
            mech = original(*args, **kwargs)
            return type(mech)(sensitivity=mech.sensitivity / factor, rho=mech.cost.rho)

        monkeypatch.setattr(module, name, weak)

    return weaken


@pytest.fixture
def spy_on(monkeypatch):
    """``spy_on(module, name)``: the list of what ``module.name`` returns in
    the calls that follow (it still returns it)."""

    def spy_on(module, name):
        taken = []
        original = getattr(module, name)

        def spy(*args, **kwargs):
            taken.append(original(*args, **kwargs))
            return taken[-1]

        monkeypatch.setattr(module, name, spy)
        return taken

    return spy_on


def _unclipped_offsets(x, center, half_width):
    with np.errstate(all="ignore"):
        return (np.asarray(x, dtype=np.float64) - center) / half_width


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
            monkeypatch.setattr(offsets, "box_offsets", _unclipped_offsets)
        if sums is not None:
            monkeypatch.setattr(sums, "clipped_sums", _unclipped_sums)

    return unclip
