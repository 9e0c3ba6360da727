"""PrivateProductDistribution: a private product distribution on {0,1}^d.

The learner of Kamath, Li, Singhal and Ullman 2019 (Algorithm 7; see
``specs/klsu2019.md``, section 3.10), in its practical form: every round reads
all n rows and the rounds share the budget by composition.

**Algorithm.** Write ``u_1 = 1/2`` and ``R = max(ceil(log2 d) - 1, 1)``.

1. Round 1 releases the column counts of all d coordinates. A coordinate
   whose noisy mean is above 1/2 is *flipped* (``x_j -> 1 - x_j``; a
   bijection of the released counts, so free), which makes every
   ``p_j <= 1/2`` up to the noise, as the paper assumes. This is the spec's
   separate flip step folded into round 1: at ``u_1 = 1/2`` round 1 has the
   flip release's sensitivity anyway, so the flip costs nothing extra.
2. Every round r = 1..R releases the counts of the coordinates S_r not yet
   locked, the rows restricted to S_r being first truncated to at most K_r
   ones (below); a coordinate whose estimate is at least ``u_r / 4`` is
   *locked*, the rest go on to round r + 1 with ``u_{r+1} = u_r / 2``. As
   every round counts the same rows, a coordinate's releases are one count
   plus independent noises: its estimate (for locking and the result) is
   their inverse-variance average (post-processing; on sparse marginals it
   cut the Hellinger ratio to the non-private fit from about 1.85 to 1.45 in
   the benchmark's setting).
3. The final round releases the counts of the coordinates left (their means
   are at most ``u_f = 2^-(R+1)``, about 1/d) and clips them to ``[0, u_f]``.

**Truncation.** A row restricted to S_r with more than K_r ones is dropped
(counted as all zeros). K_r is public: it comes from ``u_r |S_r|`` (a bound on
a row's expected number of ones in S_r once the coordinates above ``u_r`` are
locked; ``|S_r|`` is a function of earlier releases), n and a failure
probability, by the Chernoff bound ``P[X >= k] <= exp(k - mu) (mu / k)^k``
(k > mu) for a sum of independent Bernoullis of mean at most mu, so that with
probability at least ``1 - TRUNCATION_BETA`` no row is dropped in any round
(this is for accuracy only; privacy holds for any K_r). Round 1 truncates
nothing (``K_1 = d``).

**Sensitivity** (replace-one neighbours, n public). Each round releases the
vector of column counts ``sum_i y_i`` where ``y_i`` is row i restricted to S_r,
or 0 when it has more than K_r ones. Every ``y_i`` is a 0/1 vector with at
most ``K = min(K_r, |S_r|)`` ones. Replacing one row changes the sum by
``y' - y`` for two such vectors. Both are nonnegative, so ``<y, y'> >= 0`` and

    ||y - y'||_2^2 = ||y||^2 + ||y'||^2 - 2 <y, y'> <= ||y||^2 + ||y'||^2
                  <= 2 K,

and ``y - y'`` has entries in {-1, 0, 1} on |S_r| coordinates, so also
``||y - y'||_2^2 <= |S_r|``. The l2 sensitivity is therefore
``sqrt(min(2 K_r, |S_r|))`` (not the triangle inequality's ``2 sqrt(K_r)``),
and since the entries are in {-1, 0, 1} the l1 sensitivity is the same count,
``min(2 K_r, |S_r|)``: pure epsilon-DP (Laplace noise) is supported too.
The counts are integers below 2^53, computed in integer arithmetic, so they
are exact: no floating-point summation term is needed. The noise is added to
the counts by the exact (lattice) mechanisms; dividing by n, flipping,
locking, clipping and the floor below are post-processing. The set S_r and
K_r are functions of earlier releases and public values, so the rounds
compose adaptively: the fit costs the sum of the rounds' planned costs.

**Budget split.** The R + 1 releases get equal shares of the total. Using all
rows in every round (rather than the paper's disjoint blocks of n / (R + 1)
rows at the full budget) gives noise ``sqrt(R + 1)`` times smaller and keeps
the non-private error of all n rows; ``benchmarks/bench_product.py`` measures
both (Hellinger ratio to the non-private fit on sparse marginals, d = 200,
n = 20,000, rho = 0.5: 1.46 against 2.99 for disjoint blocks).

**Floor.** ``probabilities_`` are clipped to ``[1 / (2n), 1 - 1 / (2n)]``
(public), so every log-likelihood is finite.
"""

import math

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.density import sampling_generator
from dpgauss.mechanisms._factory import additive
from dpgauss.releases._prediction import Prediction, report_useless
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._leak import warn_if_scored_in_search
from dpgauss.utils._sklearn_compat import _fit_context
from dpgauss.utils._sums import CHUNK_ROWS

__all__ = ["PrivateProductDistribution"]

#: Probability (over the data, for accuracy only) that some round drops a row.
TRUNCATION_BETA = 0.05
#: The RMS error of answering 1/2 for a marginal drawn uniformly from [0, 1]:
#: the baseline a fit must be predicted to beat (it reads nothing).
UNINFORMED_ERROR = 1.0 / math.sqrt(12.0)


def n_rounds_for(d):
    """The number R of partitioning rounds for d coordinates (public).

    ``R = max(ceil(log2 d) - 1, 1)``: the final round's bound ``u_f = 2^-(R+1)``
    is then at most about 1/d, so the expected number of ones of a row in the
    final coordinates is at most about 1.

    Parameters
    ----------
    d : int
        Number of coordinates.

    Returns
    -------
    int
        R.

    Examples
    --------
    >>> from dpgauss.product._product import n_rounds_for
    >>> n_rounds_for(200), n_rounds_for(2)
    (7, 1)
    """
    return max(math.ceil(math.log2(d)) - 1, 1) if d > 1 else 1


def count_bound(mu, n, beta):
    """The truncation count K: with mean at most ``mu``, no row has more ones.

    The smallest integer K >= 1 with ``n P[X >= K + 1] <= beta`` by the
    Chernoff bound ``P[X >= k] <= exp(k - mu) (mu / k)^k`` (k > mu), valid for
    any sum X of independent Bernoulli variables with ``E X <= mu`` (the bound
    increases with mu for k > mu). Public: a function of ``mu``, n and beta.

    Parameters
    ----------
    mu : float
        Bound on a row's expected number of ones.
    n : int
        Number of rows (union bound).
    beta : float
        Failure probability.

    Returns
    -------
    int
        K.

    Examples
    --------
    >>> from dpgauss.product._product import count_bound
    >>> count_bound(0.78, 20_000, 0.05 / 8)
    9
    """
    if mu <= 0:
        return 1
    target = math.log(beta) - math.log(n)

    def log_tail(k):  # log of the Chernoff bound on P[X >= k], for k > mu
        return k - mu + k * math.log(mu / k)

    low = math.floor(mu) + 1  # the bound is decreasing in k above mu
    high = low + 1
    while log_tail(high) > target:
        high *= 2
    while high - low > 1:
        mid = (low + high) // 2
        if log_tail(mid) > target:
            low = mid
        else:
            high = mid
    k = low if log_tail(low) <= target else high
    return max(k - 1, 1)


def counts_mechanism(cost, l2_squared):
    """The mechanism for a round's counts, whose neighbours differ by a vector
    with entries in {-1, 0, 1} and at most ``l2_squared`` nonzero ones.

    l2 sensitivity ``sqrt(l2_squared)`` (Gaussian, zCDP) or l1 sensitivity
    ``l2_squared`` (Laplace, pure DP); see the module docstring for the proof.

    Parameters
    ----------
    cost : ZCDP or PureDP
        The round's cost.
    l2_squared : int
        ``min(2 K, |S|)`` (at least 1).

    Returns
    -------
    GaussianMechanism or LaplaceMechanism
        The calibrated mechanism.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.product._product import counts_mechanism
    >>> counts_mechanism(ZCDP(0.5), 4).scale
    2.0
    """
    l2_squared = max(int(l2_squared), 1)
    return additive(cost, l2=math.sqrt(l2_squared), l1=float(l2_squared))


def _counts_factory(cost, *, l2_squared):
    """A round's mechanism, :func:`counts_mechanism`, for its ``l2_squared``."""
    return counts_mechanism(cost, l2_squared)


def truncated_counts(rows, columns, flipped, limit):
    """Exact column counts of ``rows[:, columns]`` (flipped where ``flipped``),
    each row dropped when it has more than ``limit`` ones there.

    Parameters
    ----------
    rows : ndarray of bool, shape (n, d)
        The data.
    columns : ndarray of int
        The coordinates S.
    flipped : ndarray of bool, shape (d,)
        Coordinates read as ``1 - x_j``.
    limit : int
        The truncation count K.

    Returns
    -------
    ndarray of float64, shape (len(columns),)
        The counts (exact integers).
    """
    sums = np.zeros(columns.size, dtype=np.int64)
    if columns.size == 0:
        return sums.astype(np.float64)
    flips = flipped[columns]
    for start in range(0, rows.shape[0], CHUNK_ROWS):
        block = rows[start : start + CHUNK_ROWS][:, columns] ^ flips
        ones = block.sum(axis=1, dtype=np.int64)
        sums += block[ones <= limit].sum(axis=0, dtype=np.int64)
    return sums.astype(np.float64)


def product_rounds(blocks, names, release, rng, flip=True):
    """Run the rounds of the learner; return the estimate and its diagnostics.

    Parameters
    ----------
    blocks : sequence of ndarray of bool, shape (n_r, d)
        The rows each round reads, one per name (the same array every round
        in the estimator; disjoint blocks in the benchmark's comparison).
    names : sequence of str
        The releases, ``round_1`` ... ``round_R`` then ``final``.
    release : callable
        ``release(name, l2_squared)`` returns the calibrated mechanism of that
        round (see :func:`counts_mechanism`).
    rng : Generator
        Source of noise.
    flip : bool, default=True
        Flip the coordinates whose first-round mean is above 1/2.

    Returns
    -------
    estimate : ndarray of shape (d,)
        The means (before the floor).
    flipped : ndarray of bool, shape (d,)
        The flipped coordinates.
    lock_round : ndarray of int, shape (d,)
        The round each coordinate was locked in (R + 1: the final round).
    """
    d = blocks[0].shape[1]
    last = len(names)
    weighted = np.zeros(d)  # sum over rounds of weight * released mean
    weights = np.zeros(d)  # sum of the weights (inverse noise variances)
    flipped = np.zeros(d, dtype=bool)
    lock_round = np.full(d, last, dtype=np.int64)
    active = np.arange(d)
    u = 0.5
    for r, (name, rows) in enumerate(zip(names, blocks, strict=True), start=1):
        n = rows.shape[0]
        if r == 1:
            limit = d  # nothing is truncated: the data may have p_j > 1/2
        else:
            limit = min(
                count_bound(u * active.size, n, TRUNCATION_BETA / last), active.size
            )
        counts = truncated_counts(rows, active, flipped, limit)
        # Sensitivity (module docstring): neighbours' count vectors differ by
        # y' - y, y and y' nonnegative 0/1 vectors with at most `limit` ones,
        # so ||y - y'||^2 <= ||y||^2 + ||y'||^2 <= 2 limit, and <= |S|.
        mech = release(name, min(2 * limit, active.size))
        means = mech.randomise(counts, rng) / n
        if r == 1 and flip:
            flipped = means > 0.5
            means = np.where(flipped, 1.0 - means, means)
        # Every round counts the same rows, so (when no row is dropped) each
        # release of a coordinate is its one count plus independent noise:
        # the inverse-variance average of its releases so far is the better
        # estimate (post-processing).
        weight = 1.0 / mech.variance(per=n)
        weighted[active] += weight * means
        weights[active] += weight
        combined = weighted[active] / weights[active]
        if r == last:
            weighted[active] = np.clip(combined, 0.0, u) * weights[active]
            break
        lock = combined >= u / 4.0
        lock_round[active[lock]] = r
        active = active[~lock]
        u /= 2.0
    estimate = weighted / weights
    estimate = np.where(flipped, 1.0 - estimate, estimate)
    return estimate, flipped, lock_round


def round_names(d):
    """The releases of one fit: ``round_1`` ... ``round_R``, ``final``."""
    return [f"round_{r}" for r in range(1, n_rounds_for(d) + 1)] + ["final"]


def check_binary(X, owner):
    """Raise ValueError unless every entry of the float array X is 0 or 1."""
    if not np.all((X == 0.0) | (X == 1.0)):
        raise ValueError(
            f"{owner} expects binary data: every entry of X must be exactly 0 or 1 "
            "(bool or numeric). Nothing was spent."
        )


@fill_doc
class PrivateProductDistribution(DensityMixin, PrivateEstimatorMixin, BaseEstimator):
    """Private product distribution on {0,1}^d (Kamath, Li, Singhal, Ullman 2019).

    Learns the d marginal probabilities of independent binary features, with
    an error in total variation that adapts to sparse marginals: coordinates
    are released in rounds whose truncation radius shrinks with the
    coordinates' (privately found) scale, so that when every ``p_j`` is about
    1/d the noise is that of rows with O(1) ones, not of rows with d ones.

    Parameters
    ----------
    {privacy_parameters}
    flip : bool, default=True
        Flip (``x_j -> 1 - x_j``) the coordinates whose first-round noisy mean
        is above 1/2, so the rounds see ``p_j <= 1/2``; free (read off the
        first release). ``False`` asserts ``p_j <= 1/2`` for every j.
    {random_state}
    {on_useless}

    Attributes
    ----------
    probabilities_ : ndarray of shape (n_features,)
        The private marginals ``P[x_j = 1]``, in ``[1/(2n), 1 - 1/(2n)]``.
    flipped_ : ndarray of bool, shape (n_features,)
        The coordinates flipped after the first round.
    lock_round_ : ndarray of int, shape (n_features,)
        The round each coordinate was released in (``n_rounds_ + 1`` for the
        final round).
    n_rounds_ : int
        The partitioning rounds R (public: a function of d).
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateMean : Means of unbounded real data.

    Notes
    -----
    **Privacy.** rho-zCDP (or epsilon-DP with ``epsilon`` alone, Laplace
    noise; or (epsilon, delta)-DP through the largest rho implying it) with
    respect to replacing one row; n, d and every parameter are public. The
    releases, planned and charged before any data are read, with equal
    shares of the total: ``round_1`` ... ``round_R`` and ``final``, each the
    noisy column counts of the coordinates not yet locked, rows truncated to
    at most K_r ones there (dropped if above). Replacing a row moves the
    counts by a vector with entries in {-1, 0, 1} and at most
    ``min(2 K_r, |S_r|)`` nonzero ones (two nonnegative vectors y, y':
    ``||y - y'||^2 <= ||y||^2 + ||y'||^2``), which is both the squared l2 and
    the l1 sensitivity. The counts are exact integers; K_r and S_r are
    functions of n, d and earlier releases (adaptive composition). See
    :ref:`product` for the proof and the algorithm.

    Before the spend the fit predicts a marginal's noise sd from round 1's
    mechanism (public: n, d, the cost) and, where it is no better than
    answering 1/2 for every marginal (RMS error ``1/sqrt(12)`` for marginals
    spread over [0, 1]), refuses per ``on_useless``.

    Accuracy rests on the rows being independent draws of a product
    distribution; privacy holds for any binary input. ``fit`` accepts only
    entries that are exactly 0 or 1 and refuses anything else before any
    spend (a data domain check, like the refusal of NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss import PrivateProductDistribution
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.0, 0.02, size=100)
    >>> X = rng.random((20_000, 100)) < p
    >>> est = PrivateProductDistribution(rho=0.5, random_state=0).fit(X)
    >>> est.n_rounds_, est.privacy_spent_
    (6, ZCDP(rho=0.5))
    >>> bool(np.abs(est.probabilities_ - p).max() < 0.005)
    True
    >>> est.sample(2, random_state=0).shape
    (2, 100)
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "flip": ["boolean"],
    }

    def __init__(
        self,
        *,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        flip=True,
        random_state=None,
        on_useless="raise",
    ):
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.flip = flip
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the private marginals, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary data (bool, or numbers that are exactly 0 or 1); at least 2
            rows. Not modified.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateProductDistribution
            The fitted estimator.
        """
        return self._private_fit(X)

    # -- parameters and data ------------------------------------------------------
    def _check_params(self):
        if not isinstance(self.flip, (bool, np.bool_)):
            raise TypeError(f"flip must be a bool, got {self.flip!r}.")

    def _validate_rows(self, X):
        """A bool copy of X after checking it is a finite 0/1 matrix."""
        with np.errstate(all="ignore"):
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        check_binary(X, type(self).__name__)
        return X.astype(bool)

    def _check_rows(self, X):
        """Validate rows to score (not a fit): 0/1, as many features."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        check_binary(X, type(self).__name__)
        return X

    # -- the plan -----------------------------------------------------------------
    def _build_plan(self, total, data):
        d = data.d
        names = round_names(d)
        costs = split_cost(total, [1.0 / len(names)] * len(names))
        kind = kind_of(total)
        # A round's l2_squared is any integer in [1, d] (it follows released
        # values), and the exact samplers' limits are not monotone in the
        # sensitivity, so every one is checked before the spend.
        cases = tuple({"l2_squared": k} for k in range(1, d + 1))
        return ReleasePlan(
            total,
            [
                Release(name, cost, kind, make=_counts_factory, size=d, cases=cases)
                for name, cost in zip(names, costs, strict=True)
            ],
        )

    def _predict_error(self, plan, data, mechanisms):
        """Round 1's noise on a marginal, against answering 1/2 (public).

        Every coordinate's estimate includes round 1's count, whose neighbours
        differ in up to d entries (nothing is truncated there); later rounds
        only add independent releases of the same counts, so round 1's noise
        sd over n bounds a marginal's noise. The baseline is the answer that
        reads nothing, 1/2 for every marginal: its RMS error is ``1/sqrt(12)``
        for marginals spread uniformly over [0, 1]. The sampling error is
        that of a marginal at 1/2, ``1 / (2 sqrt(n))``.
        """
        first = next(iter(plan.releases()))
        mech = counts_mechanism(first.cost, data.d)
        error = float(mech.sd(data.d)) / data.n
        return Prediction(
            error, UNINFORMED_ERROR, "rms per marginal", 0.5 / math.sqrt(data.n)
        )

    def _check_utility(self, plan, data):
        prediction = data.prediction
        if prediction.loses:
            report_useless(
                self,
                f"PrivateProductDistribution: with n={data.n}, d={data.d} and "
                f"{plan.total}, a marginal's noise sd is predicted at "
                f"{prediction.error:.3g}, no better than answering 1/2 for every "
                f"marginal (RMS error {prediction.baseline:.3g} for marginals "
                "spread over [0, 1]). Give a larger budget or more rows.",
            )

    # -- the fit ------------------------------------------------------------------
    def _fit_releases(self, data, plan, rng):
        X = data.X
        n, d = X.shape
        names = round_names(d)

        def release(name, l2_squared):
            return plan.calibrate(name, l2_squared=l2_squared)

        estimate, flipped, lock_round = product_rounds(
            [X] * len(names), names, release, rng, bool(self.flip)
        )
        floor = 0.5 / n  # public
        return {
            "probabilities_": np.clip(estimate, floor, 1.0 - floor),
            "flipped_": flipped,
            "lock_round_": lock_round,
            "n_rounds_": len(names) - 1,
        }

    # -- the fitted model (post-processing) ---------------------------------------
    def score_samples(self, X):
        """Return the log-likelihood of each row under the fitted product model.

        Applied to private rows the result is not private (it reads them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary rows.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``sum_j x_j log p_j + (1 - x_j) log(1 - p_j)``.
        """
        X = self._check_rows(X)
        p = self.probabilities_
        return X @ np.log(p) + (1.0 - X) @ np.log1p(-p)

    def score(self, X, y=None):
        """Return the mean per-row log-likelihood of ``X`` (not private).

        This reads ``X``: on private data (a cross-validation test fold, say)
        the score is not differentially private.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary test rows.
        y : None
            Ignored.

        Returns
        -------
        float
            Mean of :meth:`score_samples`.

        Warns
        -----
        PrivacyLeakWarning
            When called by scikit-learn's cross-validation or search on a test
            fold (the score is published without noise and without a charge).
        """
        warn_if_scored_in_search(self)
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1, random_state=None):
        """Draw binary rows from the fitted product model (post-processing, free).

        Parameters
        ----------
        n_samples : int, default=1
            Number of rows.
        random_state : None, int or Generator, default=None
            Source of randomness (independent of the fit's).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Rows of 0.0 and 1.0.
        """
        rng = sampling_generator(self, n_samples, random_state)
        draws = rng.random((int(n_samples), self.probabilities_.shape[0]))
        return (draws < self.probabilities_).astype(np.float64)
