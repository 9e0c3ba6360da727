"""Docstring fragments shared by every estimator (imbalanced-learn's Substitution).

A class docstring writes ``{privacy_parameters}`` where the privacy parameters go
and ``{random_state}`` for ``random_state``; :func:`fill_doc` fills them in, so
the wording (and the privacy warnings in it) is the same everywhere.
"""

__all__ = ["fill_doc"]

_FRAGMENTS = {
    "privacy_parameters": """rho : float, default=None
        Privacy as rho-zero-concentrated DP (zCDP). Give exactly one of ``rho``,
        ``epsilon``, or ``epsilon`` and ``delta``.
    epsilon : float, default=None
        Privacy as pure epsilon-DP (alone; Laplace noise throughout) or, with
        ``delta``, as (epsilon, delta)-DP, achieved at the largest rho that
        implies it (Canonne, Kamath and Steinke 2020).
    delta : float, default=None
        See ``epsilon``; ``0 < delta < 1``.
    budget : PrivacyBudget, default=None
        A shared budget charged with every release of every fit, in one atomic
        step before any noise is drawn; a fit it cannot pay for raises
        :class:`~dpgauss.exceptions.BudgetExceededError` before spending
        anything. ``None`` charges nothing but still records
        ``privacy_spent_``.""",
    "random_state": """random_state : None, int, Generator or RandomState, default=None
        Source of noise. ``None`` (operating-system entropy) is the only setting
        for a real release: anyone who knows an int seed can reproduce the noise.
        Each fit charged to a budget draws its own stream, derived from
        ``random_state`` and the ids of its ledger events, so clones (as in
        ``GridSearchCV``) never share noise, while an int seed replayed on a fresh
        ledger reproduces a whole experiment. Without a budget nothing ties fits
        together: two fits with the same int seed then draw the same noise.""",
}


def fill_doc(obj):
    """Fill the shared fragments into ``obj.__doc__`` (a class decorator).

    Parameters
    ----------
    obj : type
        A class whose docstring uses ``{privacy_parameters}`` and
        ``{random_state}``.

    Returns
    -------
    type
        ``obj``, with its docstring filled.

    Examples
    --------
    >>> from dpgauss.utils._docstring import fill_doc
    >>> @fill_doc
    ... class Example:
    ...     '''Parameters
    ...     ----------
    ...     {random_state}
    ...     '''
    >>> "operating-system entropy" in Example.__doc__
    True
    """
    doc = obj.__doc__
    for key, text in _FRAGMENTS.items():
        doc = doc.replace("{" + key + "}", text)
    obj.__doc__ = doc
    return obj
