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
    "on_useless": """on_useless : {"raise", "warn"}, default="raise"
        What a fit does when its public values (n, d, the budget, the public
        bounds and hints) predict it no better than its baseline, the simplest
        private answer with the same public knowledge, or predict that a
        private search it needs goes astray: ``"raise"`` refuses with
        :class:`~dpgauss.exceptions.UselessFitError` before anything is spent,
        saying what would help; ``"warn"`` spends anyway and warns
        (:class:`~dpgauss.exceptions.UtilityWarning`). The decision reads no
        private row.""",
    "spectrum_bounds": """bounds : pair of float or array-like, default=None
        Public box ``(lower, upper)``: scalars or one value per feature, the
        alternative to ``data_norm`` (give exactly one; never taken from the
        data). Rows are mapped into the unit box ``clip((x - c) / h, -1, 1)``
        (c the box's centre, h its half-widths), released there at the
        radius ``sqrt(d)`` (about the released mean with ``center=True``, the
        box's centre otherwise), and the result is mapped
        back by ``diag(h)`` (free): columns in different units keep their own
        scale, variances come back at most ``h^2``. With ``method`` ``"auto"``
        or ``"tail"`` the fit takes the per-coordinate release
        (``"diagonal"``) where the full one is predicted no better, before
        the spend.""",
    "discriminant_box": """bounds : pair of float or array-like, default=None
        A public box, one pair per feature or scalars (instead of
        ``data_norm`` and ``location``): rows are mapped to the unit box,
        ``clip((x - c) / h, -1, 1)`` with the box's center c and half-widths
        h, released in those units (clipping ball of radius ``sqrt(d)``) and
        mapped back for free; the means are projected into the box and the
        variances capped by it. Under pure DP the box fixes the clipping
        frame: no center or radius is released (their Laplace noise would
        exceed the box at small n), whatever ``clipping`` says.
    covariance_type : {"auto", "full", "diag"}, default="auto"
        "full" releases a second moment (the full covariance); "diag" the
        pooled squares, for one shared diagonal covariance (much less noise
        per entry under pure DP). "auto" takes the one predicted the smaller
        covariance error before the spend, from n, d, the budget and the
        bound (public values).""",
    "X_public": """X_public : array-like of shape (n_public, n_features), default=None
        Public rows from the same distribution (or one close to it, see
        ``public_tv_bound``), free to use: their mean replaces the private
        search for the location (``range_location``; it then takes precedence
        over ``mean_bound``), and for an estimator that learns a covariance,
        ``n_features + 1`` rows or more also start its frame (replacing
        ``range_scale`` when they are enough for a Wishart bound). A fit
        parameter, never stored: in a ``Pipeline`` or a search, route it with
        scikit-learn's metadata routing (``set_fit_request(X_public=True)``).
        Not modified.""",
    "public_tv_bound": """public_tv_bound : float in [0, 1), default=0.0
        A public bound gamma on the total-variation distance between the
        Gaussian ``X_public`` was drawn from and the one ``X`` was (0: the
        same). The radii set from the public rows grow accordingly (Bie,
        Kamath and Singhal 2022, Lemma 3.12: covariances within a factor
        ``4 / (1 - gamma)^4``, means within ``sqrt(8 gamma / (1 - gamma))``
        sds); a bound too small costs accuracy, never privacy.""",
}


def _fill(doc):
    """``doc`` with each ``{key}`` replaced, its continuation lines indented
    like the line the placeholder is on (fragments are written for 4)."""
    for key, text in _FRAGMENTS.items():
        mark = "{" + key + "}"
        while mark in doc:
            at = doc.index(mark)
            column = at - (doc.rfind("\n", 0, at) + 1)
            shift = " " * max(column - 4, 0)
            body = text.replace("\n", "\n" + shift)
            doc = doc[:at] + body + doc[at + len(mark) :]
    return doc


def fill_doc(obj):
    """Fill the shared fragments into ``obj.__doc__`` (a class decorator).

    Parameters
    ----------
    obj : type
        A class whose docstring (or whose own methods' docstrings) use
        ``{privacy_parameters}``, ``{random_state}``, ``{on_useless}``,
        ``{X_public}``, ``{discriminant_box}`` or
        ``{public_tv_bound}``.

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
    obj.__doc__ = _fill(obj.__doc__)
    for member in vars(obj).values():  # the class's own methods, e.g. fit
        if callable(member) and member.__doc__ and "{" in member.__doc__:
            member.__doc__ = _fill(member.__doc__)
    return obj
