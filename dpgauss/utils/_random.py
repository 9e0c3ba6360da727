"""Resolution of ``random_state`` into a numpy Generator (the only entry point)."""

import numbers

import numpy as np

__all__ = ["check_random_state"]


def check_random_state(seed):
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    seed : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` seeds a new generator from operating-system entropy (the only
        setting meant for real releases). An int gives a reproducible generator,
        meant for tests and research: anyone who knows the seed can reproduce the
        noise and remove it. A Generator is used as is. A RandomState is used to
        seed a new Generator (so sklearn's ``check_random_state`` habits work).

    Returns
    -------
    numpy.random.Generator
        The generator to draw noise from.

    Examples
    --------
    >>> from dpgauss.utils import check_random_state
    >>> rng = check_random_state(0)
    >>> float(round(rng.standard_normal(), 4))
    0.1257
    """
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1, size=4))
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"random_state must be a non-negative int, got {seed!r}.")
        return np.random.default_rng(int(seed))
    raise ValueError(
        "random_state must be None, an int, a numpy Generator or RandomState, "
        f"got {seed!r}."
    )
