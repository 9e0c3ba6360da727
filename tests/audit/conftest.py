"""Fixtures shared by the audits: canaries that weaken a mechanism, and spies
that record a private choice's outcome."""

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
