"""Differentially private mechanisms, exact and float-safe by default.

Every mechanism states the sensitivity it assumes, calibrates its noise from a
privacy cost, reports that cost (``mechanism.cost``), counts its releases
(``mechanism.draws``) and draws its noise through
:mod:`dpgauss.mechanisms._noise`, the one place noise is drawn
(``random_state=None`` draws from operating-system entropy, an int is
reproducible).

Floating point. By default (``exact=True``) every release is exact: additive
mechanisms round the statistic to a power-of-two lattice and add integer noise
(discrete Gaussian, discrete Laplace, or the cube's K-norm noise on the integer
lattice) sampled with integer arithmetic only
(Canonne, Kamath and Steinke 2020), calibrated to the sensitivity plus the
rounding; selection mechanisms run on integer utilities with exact
Bernoulli(exp(-rational)) coins. The output is a fixed function of an integer
that is private exactly as stated, so the guarantees hold for the float64
outputs as computed, not only for idealised real numbers. ``exact=False`` keeps
numpy's floating-point samplers, which are **not float-safe**: their low-order
bits leak the center (Mironov 2012); it exists for benchmarks and as the canary
of the privacy audits.
"""

from dpgauss.mechanisms._additive import GaussianMechanism, LaplaceMechanism
from dpgauss.mechanisms._linf import LInfinityMechanism
from dpgauss.mechanisms._selection import AboveThreshold, ExponentialMechanism
from dpgauss.mechanisms._statistics import HistogramMechanism, QuantileMechanism
from dpgauss.mechanisms._symmetric import (
    SymmetricGaussianMechanism,
    SymmetricLaplaceMechanism,
)

__all__ = [
    "AboveThreshold",
    "ExponentialMechanism",
    "GaussianMechanism",
    "HistogramMechanism",
    "LInfinityMechanism",
    "LaplaceMechanism",
    "QuantileMechanism",
    "SymmetricGaussianMechanism",
    "SymmetricLaplaceMechanism",
]
