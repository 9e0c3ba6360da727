"""Randomness: ``random_state`` to a numpy Generator, and one stream per fit.

Two rules keep the noise of different releases independent:

* :func:`check_generator` turns a ``random_state`` into a Generator; call it once
  per public call and pass the Generator down (never resolve an int twice: two
  streams built from one int are identical).
* :func:`fit_generator` gives each fit charged to a budget its own stream, derived
  from ``random_state`` *and* the ids of the fit's ledger events. ``clone`` (and so
  ``GridSearchCV`` and ``cross_val_score``) deep-copies ``random_state`` but shares
  the budget (a budget is a handle to one ledger). With an int seed, the folds
  draw independent noise only when they are charged to a budget: the event ids
  then differ from fold to fold. Without a budget an int-seeded clone has no ids
  to mix in, so every fold draws the same noise, and two releases subtracted would
  reveal the exact difference of two statistics: cross-validate with a budget, or
  with ``random_state=None`` (or a Generator, which is mixed with
  operating-system entropy, so its clones differ with or without a budget). The
  event ids are unique within a ledger and start at 1 in a fresh one, so an int
  seed replayed on a fresh ledger reproduces a whole experiment.
"""

import numbers

import numpy as np

__all__ = ["check_generator", "check_random_state_param", "fit_generator"]


def check_generator(seed):
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    Unlike :func:`sklearn.utils.check_random_state`, which returns a legacy
    ``RandomState``, this returns a ``Generator``.

    Parameters
    ----------
    seed : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` seeds a new generator from operating-system entropy (the only
        setting meant for real releases). An int gives a reproducible generator,
        meant for tests and research: anyone who knows the seed can reproduce the
        noise and remove it. A Generator is used as is. A RandomState is used to
        seed a new Generator (so the habits of sklearn's ``check_random_state``
        work).

    Returns
    -------
    numpy.random.Generator
        The generator to draw noise from.

    Examples
    --------
    >>> from dpgauss.utils import check_generator
    >>> rng = check_generator(0)
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


def check_random_state_param(random_state, owner="estimator"):
    """Check a ``random_state`` parameter without drawing from it.

    Parameters
    ----------
    random_state : object
        The parameter.
    owner : str, default="estimator"
        Name used in the error message.

    Raises
    ------
    ValueError
        Unless it is None, a non-negative int (not a bool), a Generator or a
        RandomState.
    """
    if random_state is None or isinstance(
        random_state, (np.random.Generator, np.random.RandomState)
    ):
        return
    if (
        isinstance(random_state, numbers.Integral)
        and not isinstance(random_state, bool)
        and random_state >= 0
    ):
        return
    raise ValueError(
        f"{owner}: random_state must be None, a non-negative int, a numpy Generator "
        f"or RandomState, got {random_state!r}."
    )


def fit_generator(random_state, event_ids=()):
    """The Generator one fit draws all its noise from.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        The estimator's parameter. ``None`` draws from operating-system entropy
        (the event ids add nothing). An int seeds the stream together with the
        event ids (ids are unique within a ledger, so an int replayed on a fresh
        ledger reproduces an experiment; two fresh ledgers with the same int
        draw the same noise, which is what reproducing means). A Generator or
        RandomState gives up 128 bits (advancing it), which are mixed with the
        event ids and with operating-system entropy: copies of one Generator in
        the same state (as ``clone`` makes) give different streams whatever
        ledgers they are charged to (event ids restart at 1 in every fresh
        ledger, so the ids alone did not tell apart two clones with two fresh
        budgets). Only an int seed makes a fit reproducible.
    event_ids : sequence of int, default=()
        The ids of the ledger events the fit was charged with (empty without a
        budget). Unique within a ledger.

    Returns
    -------
    numpy.random.Generator
        A fresh generator for this fit.

    Examples
    --------
    >>> from dpgauss.utils import fit_generator
    >>> a = fit_generator(0, [1, 2]).standard_normal()
    >>> b = fit_generator(0, [3, 4]).standard_normal()
    >>> c = fit_generator(0, [1, 2]).standard_normal()
    >>> a == c, a == b
    (True, False)
    """
    ids = [int(i) for i in event_ids]
    if any(i < 0 for i in ids):
        raise ValueError(f"event ids must be non-negative, got {ids!r}.")
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        source = check_generator(random_state)
        entropy = [int(w) for w in source.integers(0, 2**32, size=4, dtype=np.uint64)]
        entropy += [int(w) for w in np.random.SeedSequence().generate_state(4)]
    else:
        entropy = [int(check_generator(random_state).bit_generator.seed_seq.entropy)]
    # SeedSequence hashes the whole list: (seed, ids) and (seed, other ids) give
    # statistically independent streams. A leading tag keeps a seed with event ids
    # apart from the same seed alone.
    tag = 1 if ids else 0
    return np.random.default_rng(np.random.SeedSequence([*entropy, tag, *ids]))
