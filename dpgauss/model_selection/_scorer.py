"""A differentially private scorer for scikit-learn's model selection.

The score of a fitted model on a test fold is a release about the fold's rows:
:class:`PrivateScorer` pays for it from a :class:`~dpgauss.PrivacyBudget` and
releases the mean of a per-sample score clipped to public bounds, plus Gaussian
(zCDP) or Laplace (pure DP) noise.
"""

import math
import numbers
import warnings

import numpy as np

from dpgauss.accounting import PrivacyBudget, resolve_privacy
from dpgauss.accounting._composition import compose
from dpgauss.accounting._costs import kind_of
from dpgauss.mechanisms._factory import additive
from dpgauss.utils import fit_generator
from dpgauss.utils._leak import private_scoring

__all__ = ["PrivateScorer", "make_private_scorer"]

#: Slack added to the unit-scale sensitivity 1/n_test for floating-point rounding
#: of the mean (see :func:`_unit_mean`): 2^-50 = 8 u with u = 2^-53.
_ROUNDING_SLACK = 2.0**-50

#: The per-sample scores by name, and the natural bounds of those that have
#: them (``bounds`` may then be left out). Each is a function of its own row
#: and the fitted model only.
_SCORES = (
    "log_likelihood",
    "accuracy",
    "neg_log_loss",
    "neg_squared_error",
    "neg_absolute_error",
)
_NATURAL_BOUNDS = {"accuracy": (0.0, 1.0)}
_NEEDS_Y = (
    "accuracy",
    "neg_log_loss",
    "neg_squared_error",
    "neg_absolute_error",
    "r2",
)


def _per_sample_score(name, estimator, X, y):
    """Per-sample values of a named score (one per row of ``X``)."""
    if name == "log_likelihood":
        return estimator.score_samples(X)
    if name == "accuracy":
        return (np.asarray(estimator.predict(X)) == np.asarray(y)).astype(np.float64)
    if name == "neg_log_loss":
        proba = np.asarray(estimator.predict_proba(X), dtype=np.float64)
        index = {label: k for k, label in enumerate(estimator.classes_)}
        # A label the model does not know scores -inf: clipped to low.
        columns = np.array([index.get(label, -1) for label in np.asarray(y)])
        picked = proba[np.arange(len(columns)), np.maximum(columns, 0)]
        picked = np.where(columns >= 0, picked, 0.0)
        return np.log(picked)
    error = np.asarray(estimator.predict(X), dtype=np.float64) - np.asarray(
        y, dtype=np.float64
    )
    if name == "neg_squared_error":
        return -(error * error)
    return -np.abs(error)


def _check_fold(estimator, X, y, score):
    """Refuse a test fold the score cannot read, before any charge: a value
    that is not finite, a non-numeric fold or a fold of another width for a
    model that reads numbers (a dpgauss estimator, or a pipeline starting
    with one), a y of another length, a missing y, or labels outside a dpgauss
    classifier's public ``classes_`` (other models score them as wrong). A
    fold is in the domain of the scorer's guarantee only when the score can
    read it, as the fits' rows are (the same rule: bad input is refused
    before the spend)."""
    values = np.asarray(X)
    if values.dtype.kind not in "biufc" and _is_dpgauss(estimator, 0):
        try:
            values = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"the test fold is not numeric (dtype {values.dtype}); nothing "
                "was charged."
            ) from None
    if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
        raise ValueError(
            "the test fold contains NaN or infinity; nothing was charged. Clean "
            "or impute it (without reading the private rows' values) first."
        )
    width = getattr(estimator, "n_features_in_", None)
    if width is not None and values.ndim == 2 and values.shape[1] != width:
        raise ValueError(
            f"the test fold has {values.shape[1]} features but the model was "
            f"fitted on {width}; nothing was charged."
        )
    if not (isinstance(score, str) and score in _NEEDS_Y):
        return
    if y is None:
        raise ValueError("this score needs the test fold's targets y.")
    if len(y) != _n_rows(X):
        raise ValueError(
            f"the test fold has {_n_rows(X)} rows but {len(y)} targets; nothing "
            "was charged."
        )
    targets = np.asarray(y)
    if targets.dtype.kind in "fc" and not np.all(np.isfinite(targets)):
        raise ValueError(
            "the test fold's targets contain NaN or infinity; nothing was charged."
        )
    classes = getattr(estimator, "classes_", None)
    if score in ("accuracy", "neg_log_loss") and _is_dpgauss(estimator, -1):
        outside = ~np.isin(targets, np.asarray(classes))
        if np.any(outside):
            raise ValueError(
                f"the test fold has {int(outside.sum())} label(s) outside the "
                f"model's public classes {np.asarray(classes).tolist()}; nothing "
                "was charged (the fit refuses them too)."
            )


def _is_dpgauss(estimator, step):
    """Whether the model (or its pipeline's first, 0, or last, -1, step) is a
    dpgauss estimator: it reads numeric rows, and a dpgauss classifier's
    ``classes_`` are its public ``classes``."""
    steps = getattr(estimator, "steps", None)
    model = steps[step][1] if steps else estimator
    return type(model).__module__.startswith("dpgauss.")


def _check_bounds(bounds):
    """Return ``bounds`` as two floats ``low < high`` with a finite width."""
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise ValueError(
            "bounds must be a pair (low, high) of public bounds on the per-sample "
            f"score, got {bounds!r}."
        ) from None
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"bounds: {name} must be a real number, got {value!r}.")
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"bounds must be finite with low < high, got {bounds!r}.")
    if not math.isfinite(high - low):
        raise ValueError(f"bounds: high - low overflows float64, got {bounds!r}.")
    return low, high


def _n_rows(X):
    """The number of rows of ``X``, read from its shape (public: n_test)."""
    shape = getattr(X, "shape", None)
    n = shape[0] if shape is not None and len(shape) >= 1 else len(X)
    if not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"a test fold needs a known number of rows >= 1, got {n!r}.")
    return int(n)


def _unit_values(values, low, high):
    """Each value mapped to [0, 1]: ``u = clip((v - low) / (high - low), 0, 1)``,
    NaN and -inf to 0 (``low``), +inf to 1 (``high``); each u depends on its
    own value only and lies in [0, 1] exactly (the clip is exact in float64)."""
    with np.errstate(all="ignore"):
        unit = (np.asarray(values, dtype=np.float64) - low) / (high - low)
        return np.clip(np.where(np.isnan(unit), 0.0, unit), 0.0, 1.0)


def _check_n_test(n_test):
    """``n_test`` as an int >= 1 (a fold's public size)."""
    if isinstance(n_test, bool) or not isinstance(n_test, numbers.Integral):
        raise TypeError(f"n_test must be an int, got {n_test!r}.")
    if n_test < 1:
        raise ValueError(f"n_test must be >= 1, got {n_test!r}.")
    return int(n_test)


def _unit_mean(values, low, high):
    """Mean over rows of the per-sample scores mapped to [0, 1] (exact to 2u).

    Each value v becomes ``u = clip((v - low) / (high - low), 0, 1)``; NaN and -inf
    become 0 (the score ``low``), +inf becomes 1 (``high``) (:func:`_unit_values`).
    Each u depends on its own row only, and lies in [0, 1] exactly.

    Floating-point sensitivity. ``math.fsum`` returns the exact sum S of the u
    rounded once, so with u = 2^-53, ``|fsum - S| <= u S``; dividing by n rounds
    once more. As ``S / n <= 1``, the result m satisfies
    ``|m - S / n| <= 2u + u^2``. Replacing one row changes one u by at most 1 and
    leaves the others bit for bit unchanged, so S changes by at most 1 and
    ``|m - m'| <= 1/n + 2 (2u + u^2) < 1/n + 8u = 1/n + 2^-50`` for every finite
    or non-finite input.
    """
    unit = _unit_values(values, low, high)
    return math.fsum(unit.tolist()) / unit.shape[0]


class PrivateScorer:
    """A scorer that releases a noisy mean of clipped per-sample scores.

    Use it as ``scoring=`` in :class:`~sklearn.model_selection.GridSearchCV`,
    :class:`~sklearn.model_selection.RandomizedSearchCV`,
    :func:`~sklearn.model_selection.cross_validate`,
    :func:`~sklearn.model_selection.cross_val_score` and
    :func:`~sklearn.model_selection.validation_curve`. Build it with
    :func:`make_private_scorer`. Each call pays for its release from ``budget``
    (one :meth:`~dpgauss.PrivacyBudget.spend_many` call, before anything is read),
    then returns::

        low + (high - low) * (mean_i u_i + noise),
        u_i = clip((s_i - low) / (high - low), 0, 1),

    where ``s_i`` is the per-sample score of test row i and the noise is
    calibrated to the sensitivity of the mean of the ``u_i``.

    Parameters
    ----------
    budget : PrivacyBudget
        The budget every call is charged to (shared with worker processes: the
        scorer is pickled with a handle to the same ledger).
    rho : float, default=None
        The zCDP cost of one call (Gaussian noise).
    epsilon : float, default=None
        Pure DP cost of one call (Laplace noise) when given alone; with ``delta``,
        converted to the largest rho that implies (epsilon, delta)-DP.
    delta : float, default=None
        With ``epsilon``: see above.
    bounds : tuple of (float, float) or None
        Public bounds ``(low, high)`` on the per-sample score. Values outside are
        clipped; NaN and -inf count as ``low``, +inf as ``high``. Never read them
        off the data. Required, except for ``"accuracy"`` (0, 1). The released
        score is clipped to them too (free).
    score : str or callable, default="log_likelihood"
        The per-sample score: ``"log_likelihood"`` (``estimator.score_samples``),
        ``"accuracy"`` (``predict(X) == y``), ``"neg_log_loss"`` (the log of the
        predicted probability of the true class), ``"neg_squared_error"`` or
        ``"neg_absolute_error"`` (a regressor's); or ``score(estimator, X, y)``
        returning one value per row, **each a function of its own row (and of
        the fitted model) only**. A test fold with NaN or infinity, or targets
        of another length, is refused before the charge.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Source of the noise, mixed with the ids of the call's ledger events (see
        :func:`dpgauss.utils.fit_generator`), so two calls charged to one budget
        never share noise, even from pickled copies. ``None`` draws from
        operating-system entropy; an int is for tests and research.

    Attributes
    ----------
    budget : PrivacyBudget
        The budget each call is charged to.
    cost : ZCDP or PureDP
        The privacy cost of one call.
    bounds : tuple of (float, float)
        The public bounds.
    score : str or callable
        The per-sample score.
    random_state : None, int, Generator or RandomState
        The noise's source.

    See Also
    --------
    make_private_scorer : Build a private scorer.
    check_search_budget : Price a search before running it.

    Notes
    -----
    **Privacy of one call.** Fix the fitted model theta and the test fold's size
    n (public: fold sizes of a data-independent splitter depend on the dataset's
    size only). Two neighbouring test folds differ in one row (replace-one). The
    ``u_i`` of the other rows are computed identically, and each ``u_i`` lies in
    [0, 1], so the mean of the ``u_i`` changes by at most ``1/n``; in float64 by
    at most ``1/n + 2^-50`` (rounding bound in :func:`_unit_mean`), the
    sensitivity the noise is calibrated to. Gaussian noise with
    ``sigma = (1/n + 2^-50) / sqrt(2 rho)`` is rho-zCDP (Bun and Steinke 2016,
    Proposition 1.6); Laplace noise with ``b = (1/n + 2^-50) / epsilon`` is
    epsilon-DP. The affine map back to the score's scale uses public values only
    (post-processing). As a function of the whole dataset (one row replaced
    changes at most one row of the fold), the call has the same guarantee.

    **Composition with the fits.** Every fit of a dpgauss estimator is itself a
    private release of its training fold (charged to a budget), so conditionally
    on the released model theta the score is a mechanism on the test fold alone,
    with the guarantee above for every theta. A search is then an adaptive
    sequence of releases -- fit, score, fit, score, ..., refit with parameters
    chosen from the released scores -- and zCDP (and pure DP) compose adaptively
    (Bun and Steinke 2016, Lemma 2.3; Dwork et al. 2006): the search is private
    at the sum of the fits' and the scores' costs, which is what the budget
    records. ``cv_results_``, ``best_params_``, ``best_score_``, the ranks and the
    choice of the refit are post-processing of released scores. Not covered:
    timings (``mean_fit_time``, ...), errors turned into scores by
    ``error_score``, and splitters that read labels or groups (then the folds
    are not a public function of the row index).

    The per-sample score must be a function of its row and of the fitted model
    only: a score that mixes rows (standardising within the fold, a rank) has a
    larger sensitivity than the one calibrated here. Noise is drawn through
    :mod:`dpgauss.mechanisms` (the floating-point caveat stated there applies).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import PrivateScorer
    >>> rng = np.random.default_rng(0)
    >>> X_train, X_test = rng.normal(size=(2000, 2)), rng.normal(size=(1000, 2))
    >>> budget = PrivacyBudget(rho=2.0)
    >>> est = PrivateCovariance(rho=1.0, data_norm=5.0, budget=budget,
    ...                         random_state=0).fit(X_train)
    >>> scorer = PrivateScorer(budget=budget, rho=0.5, bounds=(-15.0, 0.0),
    ...                        random_state=0)
    >>> round(scorer(est, X_test), 1)
    -2.8
    >>> budget.spent()
    ZCDP(rho=1.5)
    """

    def __init__(
        self,
        *,
        budget,
        rho=None,
        epsilon=None,
        delta=None,
        bounds=None,
        score="log_likelihood",
        random_state=None,
    ):
        if not isinstance(budget, PrivacyBudget):
            raise TypeError(
                "budget must be a dpgauss.PrivacyBudget (every score is a release "
                f"and is paid for), got {budget!r}."
            )
        self.cost = resolve_privacy(rho, epsilon, delta, owner="PrivateScorer")
        compose(budget.total, [self.cost])  # a cost of the wrong kind fails now
        self.budget = budget
        self.rho, self.epsilon, self.delta = rho, epsilon, delta
        if not (callable(score) or score in _SCORES):
            raise ValueError(
                f"score must be one of {_SCORES} or a callable "
                f"(estimator, X, y) -> per-sample array, got {score!r}."
            )
        if bounds is None:
            if score not in _NATURAL_BOUNDS:
                raise ValueError(
                    f"bounds are required for score={score!r}: public bounds "
                    "(low, high) on one row's score, never read off the data."
                )
            bounds = _NATURAL_BOUNDS[score]
        self.bounds = _check_bounds(bounds)
        self.score = score
        self.random_state = random_state

    # -- calibration (public values only) ---------------------------------------------
    def _mechanism(self, n_test):
        """The mechanism on the unit scale for a fold of ``n_test`` rows.

        Sensitivity ``1/n_test + 2^-50``: see the class Notes and :func:`_unit_mean`.
        """
        sensitivity = 1.0 / n_test + _ROUNDING_SLACK
        return additive(self.cost, l2=sensitivity, l1=sensitivity)

    def noise_scale(self, n_test):
        """Return the noise scale of a score on a fold of ``n_test`` rows.

        Parameters
        ----------
        n_test : int
            Number of rows of the test fold.

        Returns
        -------
        float
            The standard deviation of the Gaussian noise (zCDP) or the scale b of
            the Laplace noise (pure DP), on the score's scale.

        Examples
        --------
        >>> from dpgauss import PrivacyBudget
        >>> from dpgauss.model_selection import make_private_scorer
        >>> scorer = make_private_scorer(
        ...     budget=PrivacyBudget(rho=1.0), rho=0.02, bounds=(-20.0, 0.0)
        ... )
        >>> round(scorer.noise_scale(1000), 3)  # 20 / 1000 / sqrt(2 * 0.02)
        0.1
        """
        low, high = self.bounds
        return (high - low) * self._mechanism(_check_n_test(n_test)).scale

    # -- one release ------------------------------------------------------------------
    def __call__(self, estimator, X, y=None):
        """Charge the budget, then release the noisy mean score on ``X``.

        Parameters
        ----------
        estimator : object
            A fitted estimator (a private release).
        X : array-like of shape (n_test, n_features)
            The test fold (private).
        y : array-like of shape (n_test,), default=None
            Its targets, passed to a callable ``score``.

        Returns
        -------
        float
            The released score.

        Raises
        ------
        BudgetExceededError
            If the budget cannot pay; nothing is read then.
        """
        mechanism = self._mechanism(_n_rows(X))  # public: the fold's size
        _check_fold(estimator, X, y, self.score)
        events = self.budget.spend_many(
            [(mechanism.cost, f"{kind_of(mechanism.cost)}:score")],
            estimator=f"PrivateScorer({type(estimator).__name__})",
        )
        rng = fit_generator(self.random_state, [e.id for e in events])
        return self._release(estimator, X, y, mechanism, rng)

    def _per_sample(self, estimator, X, y):
        if isinstance(self.score, str):
            return _per_sample_score(self.score, estimator, X, y)
        return self.score(estimator, X, y)

    def _release(self, estimator, X, y, mechanism, rng):
        """The data-dependent part of a call, once it is paid for."""
        n_test = _n_rows(X)
        low, high = self.bounds
        # No warning may depend on the rows (an overflow in score_samples would be
        # a release): floating-point warnings are silenced while the fold is read.
        with private_scoring(), np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            values = np.asarray(self._per_sample(estimator, X, y), dtype=np.float64)
            if values.shape != (n_test,):
                raise ValueError(
                    f"the per-sample score must have shape ({n_test},) (one value "
                    f"per row of the fold), got shape {values.shape}."
                )
            mean = _unit_mean(values, low, high)
        noisy = float(np.asarray(mechanism.randomise(mean, rng)).reshape(()))
        # Within the public bounds, where every mean of clipped scores lies
        # (post-processing): an accuracy is never released above 1.
        return float(min(max(low + (high - low) * noisy, low), high))

    def __repr__(self):
        score = self.score if isinstance(self.score, str) else _name(self.score)
        return (
            f"PrivateScorer({self.cost}, bounds={self.bounds!r}, score={score!r}, "
            f"budget={self.budget!r})"
        )


def _name(func):
    return getattr(func, "__qualname__", None) or repr(func)


def make_private_scorer(
    score="log_likelihood",
    *,
    budget,
    rho=None,
    epsilon=None,
    delta=None,
    bounds=None,
    random_state=None,
):
    """Make a differentially private scorer for searches and cross-validation.

    Each call of the scorer refuses a fold it cannot score (nothing charged),
    charges ``budget`` one release (before reading the fold's values), then
    returns the mean over the fold of a per-sample score clipped
    to the public ``bounds``, plus noise calibrated to the sensitivity
    ``(high - low) / n_test`` (replace-one neighbours, ``n_test`` public). See
    :class:`PrivateScorer` for the proof and for why a search's total cost is the
    sum of its fits' and its scores' costs.

    Parameters
    ----------
    score : str or callable, default="log_likelihood"
        ``"log_likelihood"`` uses ``estimator.score_samples(X)``;
        ``"accuracy"``, ``"neg_log_loss"``, ``"neg_squared_error"`` and
        ``"neg_absolute_error"`` a classifier's or regressor's per-row score
        (see :class:`PrivateScorer`); ``"r2"`` a regressor's R^2, from three
        means released together, ``bounds`` then bounding y, at most 1 (a
        noise draw that puts the error below 0 gives 1)
        (:class:`~dpgauss.model_selection.PrivateR2Scorer`); a callable
        ``score(estimator, X, y)`` returns one value per row, each depending
        on its own row (and the fitted model) only.
    budget : PrivacyBudget
        The budget every call is charged to.
    rho : float, default=None
        The zCDP cost of one call (Gaussian noise).
    epsilon : float, default=None
        Pure DP cost of one call (Laplace noise); with ``delta``, converted to the
        largest rho implying (epsilon, delta)-DP.
    delta : float, default=None
        With ``epsilon``.
    bounds : tuple of (float, float) or None
        Public bounds ``(low, high)`` on the per-sample score (for
        ``"log_likelihood"``, on the log-density of one row); None only for
        ``"accuracy"``, whose bounds are (0, 1).
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Source of the noise (mixed with the ledger event ids of each call).
        ``None`` for real releases; an int for tests and research.

    Returns
    -------
    PrivateScorer
        A callable ``scorer(estimator, X, y=None)`` (a
        :class:`~dpgauss.model_selection.PrivateR2Scorer` for ``"r2"``).

    See Also
    --------
    check_search_budget : Price a search and refuse it up front if it cannot pay.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from dpgauss import PrivacyBudget, PrivateCovariance
    >>> from dpgauss.model_selection import check_search_budget, make_private_scorer
    >>> X = np.random.default_rng(0).normal(size=(3000, 2))
    >>> budget = PrivacyBudget(rho=2.0)
    >>> scorer = make_private_scorer(
    ...     budget=budget, rho=0.05, bounds=(-15.0, 0.0), random_state=0
    ... )
    >>> search = GridSearchCV(
    ...     PrivateCovariance(rho=0.1, data_norm=5.0, budget=budget, random_state=0),
    ...     {"center": [True, False]}, cv=3, scoring=scorer, error_score="raise",
    ... )
    >>> check_search_budget(search, X).total(budget)   # 6 x (0.1 + 0.05) + 0.1
    ZCDP(rho=1.0)
    >>> search = search.fit(X)
    >>> budget.spent()
    ZCDP(rho=1.0)

    A classifier's accuracy, bounded by (0, 1) without being told:

    >>> from sklearn.model_selection import KFold, cross_val_score
    >>> from dpgauss import PrivateLinearDiscriminantAnalysis
    >>> y = (X[:, 0] > 0).astype(int)
    >>> budget = PrivacyBudget(rho=2.0)
    >>> clf = PrivateLinearDiscriminantAnalysis(
    ...     classes=[0, 1], bounds=(-4.0, 4.0), rho=0.3, budget=budget, random_state=0
    ... )
    >>> accuracy = make_private_scorer(
    ...     "accuracy", budget=budget, rho=0.1, random_state=0
    ... )
    >>> cv = KFold(n_splits=5, shuffle=True, random_state=0)
    >>> scores = cross_val_score(clf, X, y, cv=cv, scoring=accuracy)
    >>> bool(np.all((scores > 0.9) & (scores <= 1.0)))
    True
    >>> budget.spent()
    ZCDP(rho=2.0)
    """
    if isinstance(score, str) and score == "r2":
        from dpgauss.model_selection._r2 import PrivateR2Scorer

        return PrivateR2Scorer(
            budget=budget,
            rho=rho,
            epsilon=epsilon,
            delta=delta,
            bounds=bounds,
            random_state=random_state,
        )
    return PrivateScorer(
        budget=budget,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        bounds=bounds,
        score=score,
        random_state=random_state,
    )
