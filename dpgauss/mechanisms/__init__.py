"""Differentially private mechanisms.

Every mechanism states the sensitivity it assumes, calibrates its noise scale from
a privacy cost, reports that cost (``mechanism.cost``) and draws its noise through
:mod:`dpgauss.mechanisms._noise`, the one place noise is drawn
(``random_state=None`` draws from operating-system entropy, an int is
reproducible).

Floating-point caveat: guarantees are stated for ideal real-valued noise; numpy's
floating-point samplers are not hardened against attacks on low-order bits
(Mironov 2012).
"""

from dpgauss.mechanisms._additive import (
    GaussianMechanism,
    LaplaceMechanism,
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)
from dpgauss.mechanisms._selection import AboveThreshold, ExponentialMechanism
from dpgauss.mechanisms._statistics import PrivateHistogram, PrivateQuantile

__all__ = [
    "AboveThreshold",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "PrivateHistogram",
    "PrivateQuantile",
    "SymmetricGaussianMechanism",
    "SymmetricLaplaceMechanism",
]
