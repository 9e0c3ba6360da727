"""The one place where dpgauss draws privacy noise.

Every mechanism draws through these functions, so a future secure or discrete
sampler plugs in here.

Floating-point caveat: the samplers below are numpy's floating-point samplers.
Mironov (2012) showed that the low-order bits of floating-point Laplace samples can
leak information; dpgauss's guarantees are stated for ideal real-valued noise
(OpenDP's "idealized numerics"), as for every numpy-based DP library today.
"""

import numpy as np

from dpgauss.utils._random import check_generator

__all__ = [
    "draw_gaussian",
    "draw_gumbel",
    "draw_laplace",
    "draw_symmetric",
    "draw_uniform",
]


def draw_gaussian(scale, size, random_state):
    """Draw N(0, scale^2) noise of shape ``size``."""
    return check_generator(random_state).normal(0.0, scale, size=size)


def draw_laplace(scale, size, random_state):
    """Draw Laplace(0, scale) noise (density exp(-|x|/scale) / (2 scale))."""
    return check_generator(random_state).laplace(0.0, scale, size=size)


def draw_gumbel(size, random_state):
    """Draw standard Gumbel noise (for the exponential mechanism's Gumbel-max)."""
    return check_generator(random_state).gumbel(0.0, 1.0, size=size)


def draw_uniform(low, high, size, random_state):
    """Draw uniform noise on ``[low, high)``."""
    return check_generator(random_state).uniform(low, high, size=size)


def draw_symmetric(diagonal_scale, off_diagonal_scale, dim, kind, random_state):
    """Draw a symmetric ``dim x dim`` noise matrix, vectorised.

    Independent draws fill the upper triangle (diagonal included) and are mirrored
    to the lower triangle.

    Parameters
    ----------
    diagonal_scale, off_diagonal_scale : float
        Scale of the diagonal and of the off-diagonal entries.
    dim : int
        Matrix size.
    kind : {"gaussian", "laplace"}
        Noise family.
    random_state : None, int or Generator
        Source of randomness.

    Returns
    -------
    ndarray of shape (dim, dim)
        Symmetric noise.
    """
    rng = check_generator(random_state)
    draw = draw_gaussian if kind == "gaussian" else draw_laplace
    upper = np.triu(draw(1.0, (dim, dim), rng), k=1) * off_diagonal_scale
    noise = upper + upper.T
    noise[np.diag_indices(dim)] = draw(diagonal_scale, dim, rng)
    return noise
