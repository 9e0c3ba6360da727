"""PublicPrivateGMM: a Gaussian mixture learned privately with public rows.

Bie, Kamath and Singhal (2022), section 4, in the practical form of
``specs/bks2022.md`` section 5.5: the public rows do the clustering (free), the
private rows are hard-assigned by a rule that reads only the public rows and
released values, and each component is a
:class:`~dpgauss.gaussian.PrivateGaussianEstimator` fitted on its rows.
"""

import functools
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans

from dpgauss.accounting import split_cost
from dpgauss.accounting._costs import kind_of
from dpgauss.accounting._plan import Release, ReleasePlan
from dpgauss.base import PrivateEstimatorMixin
from dpgauss.exceptions import UtilityWarning
from dpgauss.mixture._base import BasePrivateMixture
from dpgauss.mixture._public import (
    _bic_components,
    _component_estimator,
    _half,
    _mixture_attributes,
    _nearest,
    _pca_ball,
    _pca_factory,
    _PublicClusters,
    _separation,
    _weights_factory,
    component_rows,
    components_factory,
    separation_problems,
    useless_component,
)
from dpgauss.mixture._public_only import PublicOnly, public_only_fit
from dpgauss.mixture._refine import refine, refine_entries
from dpgauss.releases._prediction import report_useless
from dpgauss.releases._range import finite_mean
from dpgauss.utils._docstring import fill_doc
from dpgauss.utils._sklearn_compat import Interval, StrOptions, _fit_context
from dpgauss.utils._sums import clipped_sums, n_partial_sums

__all__ = ["PublicPrivateGMM", "SeparationError", "SeparationWarning"]

#: ``refine_steps="auto"``: EM steps for more than one component. Measured
#: by benchmarks/bench_gmm.py (30% of the budget, against the same fit
#: without them; median gap to the non-private fit, 5 seeds): B 0.81 -> 0.26
#: nats (400 public rows), overlapping components (C) 0.028 -> 0.002 and
#: 0.12 -> 0.053, A 0.007 -> 0.011.
AUTO_STEPS = 2

#: The ledger's mechanism kind of the ``components`` release.
ESTIMATORS = "gaussian_estimators"
#: A component's rows are truncated (or padded) to its released count minus
#: this many noise sds: padding, which biases, is then rare.
COUNT_SDS = 2.0


class SeparationWarning(UtilityWarning):
    """The mixture's components look too close for hard assignment.

    Issued by :class:`PublicPrivateGMM` from public rows and released values
    only (free): a public cluster too small for its regime, released weights
    far from the public shares, a component much wider than its public
    cluster, or components closer than a few sds.
    """


class SeparationError(RuntimeError):
    """Raised instead of :class:`SeparationWarning` with
    ``on_separation_failure="raise"``; the budget is spent (the checks read
    released values) and the estimator stays unfitted."""


@fill_doc
class PublicPrivateGMM(PrivateEstimatorMixin, BasePrivateMixture, BaseEstimator):
    """Private Gaussian mixture learned with the help of public rows.

    ``fit(X, X_public=P)``: the public rows ``P`` (drawn from the same mixture;
    a few hundred for a handful of components) are free to use; the private
    rows ``X`` are touched only by private releases:

    * ``regime="public"`` (enough public rows per component: d + 1 or more):
      a Gaussian mixture is fitted to the public rows (free), every private
      row is assigned to its most likely public component (a rule reading the
      row and public values only), the component sizes are released as one
      noisy histogram (the weights), and each component is a
      :class:`~dpgauss.gaussian.PrivateGaussianEstimator` fitted on its rows,
      preconditioned by its public rows.
    * ``regime="projected"`` (fewer public rows per component): the private
      rows' second moment about the public mean, clipped to a public ball, is
      released (private PCA); the public rows projected on its top
      ``n_components`` eigenvectors are clustered by k-means (free), and the
      private rows are assigned to the nearest projected centroid; then the
      histogram and the per-component estimators as above.
    * ``regime="auto"`` chooses from the public rows alone.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        The number of components; ``"auto"`` picks it (1 to
        ``max_components``) by the BIC of Gaussian mixtures fitted to the
        public rows (free): full covariances up to the k that leave 2 (d + 1)
        public rows per component, spherical ones when that is below 2.
    {privacy_parameters}
    covariance_type : {{"full"}}, default="full"
        Only full covariances (scikit-learn's name, for compatibility).
    regime : {{"auto", "public", "projected"}}, default="auto"
        How the rows are clustered (above).
    max_components : int, default=8
        The largest ``n_components`` ``"auto"`` considers.
    weight_share : float, default=0.05
        Share of the cost for the weights' histogram.
    pca_share : float, default=0.2
        Share of the cost for the private PCA (``regime="projected"`` only).
    refine_steps : int or "auto", default="auto"
        Private EM steps run from the released mixture (soft assignment: they
        correct the bias of hard assignment where components overlap, and a
        weak first fit). ``"auto"``: 2 for more than one component, 0 for one.
    refine_share : float, default=0.3
        Share of the cost for the EM steps (when there are any).
    on_separation_failure : {{"warn", "raise", "ignore"}}, default="warn"
        What to do when the checks above fail: a
        :class:`SeparationWarning`, a :class:`SeparationError` (after the
        spend: the checks read released values) or nothing.
    fallback : {{"public", "refuse"}}, default="public"
        What a fit does, with ``on_useless="raise"``, when a component's
        private fit is predicted useless (before the spend, public values
        only): ``"public"`` returns the mixture fitted on the public rows
        alone (scikit-learn's fit on standardised columns, its covariance
        floor chosen by cross-validation on the public rows;
        ``regime_ == "public_only"``), warns
        with a :class:`~dpgauss.exceptions.UtilityWarning` and spends
        nothing; ``"refuse"`` raises
        :class:`~dpgauss.exceptions.UselessFitError`. With
        ``on_useless="warn"`` the fit warns and spends either way.
    {random_state}
    {on_useless}

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
        The private mixture weights (on the simplex).
    means_ : ndarray of shape (n_components, n_features)
        The private component means.
    covariances_ : ndarray of shape (n_components, n_features, n_features)
        The private component covariances (eigenvalues floored at a
        noise-aware level, so log-likelihoods stay finite).
    precisions_ : ndarray of shape (n_components, n_features, n_features)
        Their inverses.
    precisions_cholesky_ : ndarray of shape (n_components, n_features, n_features)
        Upper-triangular factors U with ``precisions_ = U U^T`` (scikit-learn's
        convention).
    n_components_ : int
        The number of components used.
    regime_ : str
        ``"public"``, ``"projected"``, ``"single"`` (one component) or
        ``"public_only"`` (the public rows' own mixture, ``fallback``).
    separation_ : float
        ``min ||mu_i - mu_j|| / max(sigma_i, sigma_j)`` over pairs of released
        components (sigma: the root of the largest eigenvalue); inf for one
        component.
    components_ : list of PrivateGaussianEstimator
        The fitted per-component estimators (the first fit; the mixture's
        attributes are theirs refined by ``refine_steps_`` EM steps).
    refine_steps_ : int
        Number of private EM steps run.
    privacy_spent_ : ZCDP or PureDP
        What the fit cost.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    PrivateGaussianEstimator : One Gaussian, with or without public rows.
    sklearn.mixture.GaussianMixture : The non-private model this one mirrors.

    Notes
    -----
    **Privacy.** rho-zCDP (or epsilon-DP with ``epsilon`` alone) with respect
    to replacing one private row; n, d, the parameters and ``X_public`` are
    public (the guarantee holds for every fixed public set, Bie, Kamath and
    Singhal 2022, Definition 2.17). The cluster sizes are never public.
    Releases, planned and charged before any noise is drawn:

    * ``pca`` (projected regime): the second moment of the rows minus the
      public mean, clipped to a public radius R (sensitivity ``sqrt(2) R^2 /
      n``; :func:`~dpgauss.mechanisms._releases.second_moment_mechanism`).
    * ``weights``: the k cluster sizes plus Gaussian (Laplace) noise. The
      assignment of a row reads that row, the public rows and released values
      only, so replacing one row moves one unit from one size to another: l2
      sensitivity sqrt(2), l1 2.
    * ``components``: the k per-component estimators, each a
      :class:`~dpgauss.gaussian.PrivateGaussianEstimator` at half the charge,
      fitted on its rows truncated (in an order drawn independently of the
      data) or padded (with copies of its public center) to a released count
      N_j, so that its row count is public as that estimator requires, then
      put in a uniformly random order drawn from the fit's stream whatever the
      data (:func:`~dpgauss.mixture._public.component_rows`). Replacing one
      private row changes the rows of at most two components, each one's
      multiset by one row replaced by another (a row leaves or enters the
      first N_j, or a pad row takes or gives its place); the random order
      makes the law of each sequence depend on its multiset alone, so the
      sequences are replace-one neighbours under a coupling of the orders (the
      estimator's proofs are for sequences): each of the two is private at
      half the charge for that change, the others see the same rows, so by
      composition the whole costs the charge. (The paper's parallel
      composition, one component per changed row, holds for adding or
      removing a row, not for replacing one: a replaced row can change
      clusters. Spec bks2022.md, erratum E8.)
    * ``refine{t}_counts``, ``refine{t}_sums``, ``refine{t}_moments`` (each EM
      step t, ``refine_share`` of the cost split evenly over the steps and
      10 / 25 / 65 within one): with responsibilities ``r_ij`` under the
      released mixture (``r_ij >= 0``, ``sum_j r_ij <= 1``) and offsets
      ``y_ij`` in component j's released whitened frame clipped to radius C,
      the sums over rows of ``r_ij``, ``r_ij y_ij`` and ``r_ij y_ij y_ij^T``
      (all components as one vector or one block-diagonal matrix). Replacing
      one row moves them by at most ``sqrt(2)``, ``2 C`` and ``sqrt(2) C^2``
      (l2 / Frobenius, plus float rounding; proofs in
      ``dpgauss/mixture/_refine.py``).

    Public rows are used as given: rows from another distribution cost
    accuracy, never privacy. Everything else (the public mixture, k-means,
    the checks, the weights' normalisation) is post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> from dpgauss.mixture import PublicPrivateGMM
    >>> rng = np.random.default_rng(0)
    >>> centers = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0]])
    >>> def draw(n):
    ...     return centers[rng.integers(0, 3, n)] + rng.standard_normal((n, 2))
    >>> X, public = draw(30000), draw(60)
    >>> gmm = PublicPrivateGMM(n_components=3, rho=0.5, random_state=0)
    >>> gmm = gmm.fit(X, X_public=public)
    >>> np.round(np.sort(gmm.weights_), 1)
    array([0.3, 0.3, 0.3])
    >>> gmm.regime_
    'public'
    """

    _parameter_constraints: dict = {
        **PrivateEstimatorMixin._parameter_constraints,
        "n_components": [
            Interval(numbers.Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "covariance_type": [StrOptions({"full"})],
        "regime": [StrOptions({"auto", "public", "projected"})],
        "max_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "weight_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "pca_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "refine_steps": [
            Interval(numbers.Integral, 0, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "refine_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "on_separation_failure": [StrOptions({"warn", "raise", "ignore"})],
        "fallback": [StrOptions({"public", "refuse"})],
    }

    def __init__(
        self,
        n_components="auto",
        *,
        rho=None,
        epsilon=None,
        delta=None,
        budget=None,
        covariance_type="full",
        regime="auto",
        max_components=8,
        weight_share=0.05,
        pca_share=0.2,
        refine_steps="auto",
        refine_share=0.3,
        on_separation_failure="warn",
        fallback="public",
        random_state=None,
        on_useless="raise",
    ):
        self.n_components = n_components
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.covariance_type = covariance_type
        self.regime = regime
        self.max_components = max_components
        self.weight_share = weight_share
        self.pca_share = pca_share
        self.refine_steps = refine_steps
        self.refine_share = refine_share
        self.on_separation_failure = on_separation_failure
        self.fallback = fallback
        self.random_state = random_state
        self.on_useless = on_useless

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, X_public=None):
        """Fit the private mixture, charging ``budget`` first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private training rows; at least 2. Not modified.
        y : None
            Ignored.
        X_public : array-like of shape (n_public, n_features), default=None
            Public rows from the same mixture, free to use. A fit parameter,
            never stored: in a ``Pipeline`` or a search, route it with
            scikit-learn's metadata routing (``set_fit_request(X_public=True)``).
            Not modified. Needed for more than one component: without it,
            ``n_components`` must be 1 or ``"auto"`` (which then means 1), and
            the fit is one :class:`~dpgauss.gaussian.PrivateGaussianEstimator`.

        Returns
        -------
        self : PublicPrivateGMM
            The fitted estimator.
        """
        try:
            return self._private_fit(X, X_public=X_public)
        except PublicOnly as signal:
            for name, value in public_only_fit(self, signal).items():
                setattr(self, name, value)
            return self

    # -- the plan -----------------------------------------------------------
    def _build_plan(self, total, data):
        k, n, d = self._k(data), data.n, data.d
        if k == 1:  # no clustering: one estimator on every row, the whole cost
            make = components_factory(d, shared=False)
            return ReleasePlan(total, [Release("components", total, ESTIMATORS, make)])
        regime = self._choose_regime(data)
        steps = self._refine_steps(data)
        refine_cost = None
        if steps:
            share = float(self.refine_share)
            refine_cost, total_rest = split_cost(total, [share, 1.0 - share])
        else:
            total_rest = total
        weights, rest = split_cost(
            total_rest, [self.weight_share, 1.0 - self.weight_share]
        )
        kind = kind_of(total)
        entries = []
        if regime == "projected":
            share = float(self.pca_share)
            pca, rest = split_cost(rest, [share, 1.0 - share])
            make = _pca_factory(n, d, data.X_public)
            entries.append(Release("pca", pca, kind, make, size=d))
        make = functools.partial(_weights_factory, k=k)
        entries.append(Release("weights", weights, kind, make, size=k))
        make = components_factory(d, shared=True)
        entries.append(Release("components", rest, ESTIMATORS, make))
        if steps:
            entries.extend(refine_entries(refine_cost, steps, kind, n, d, k))
        return ReleasePlan(total, entries)

    def _prepare_fit(self, data):
        """The public mixture (:class:`_PublicClusters`, free: public rows
        only), fitted once per fit or pricing."""
        data = super()._prepare_fit(data)
        public = data.X_public
        if public is None:
            return data
        clusters = _PublicClusters(public, self._components(public), self._seed())
        return data.derive(clusters=clusters)

    def _k(self, data):
        """The number of components, from the parameters and public rows."""
        public = data.X_public
        if public is None and data.pricing:
            return self._planned_k()  # pricing without the rows
        if public is None:
            if self.n_components in ("auto", 1):
                return 1
            raise ValueError(
                f"PublicPrivateGMM: n_components={self.n_components} needs public "
                "rows, fit(X, X_public=...); without them only one component can "
                "be fitted. Nothing was spent."
            )
        return data.public["clusters"].k

    def _planned_k(self):
        """k for pricing without public rows (n_components, or 1 for auto)."""
        return 1 if self.n_components == "auto" else int(self.n_components)

    def _choose_regime(self, data):
        """``"single"``, ``"public"`` or ``"projected"``, from public rows (or
        the parameters) only."""
        if self._k(data) == 1:
            return "single"
        if data.X_public is None:  # pricing without the rows: the dearer plan
            # "public" has the same total in the fit's currency and fewer,
            # larger releases, so it costs at least as much in every currency
            # (pure releases composed as zCDP add epsilon^2 / 2 each: the
            # projected plan's finer split priced 0.16 where the public one
            # charged 0.23).
            return "public" if self.regime == "auto" else self.regime
        clusters = data.public["clusters"]
        if self.regime != "auto":
            return self.regime
        sizes = np.bincount(clusters.labels, minlength=clusters.k)
        return "public" if sizes.min() >= data.d + 1 else "projected"

    def _refine_steps(self, data):
        """EM steps to plan: ``refine_steps``, or :data:`AUTO_STEPS` with
        ``"auto"``; none for one component (nothing to reassign)."""
        if self._k(data) == 1:
            return 0
        if self.refine_steps == "auto":
            return AUTO_STEPS
        return int(self.refine_steps)

    def _seed(self):
        """A seed for the public-only clustering (reproducible with an int
        ``random_state``; it touches no private value)."""
        rs = self.random_state
        return rs if isinstance(rs, numbers.Integral) else 0

    def _components(self, public):
        if self.n_components != "auto":
            k = int(self.n_components)
            if k > public.shape[0]:
                raise ValueError(
                    f"PublicPrivateGMM: n_components={k} but X_public has only "
                    f"{public.shape[0]} rows; every component needs a public row. "
                    "Nothing was spent."
                )
            return k
        return _bic_components(public, int(self.max_components), self._seed())

    def _check_utility(self, plan, data):
        d = data.d
        regime = self._choose_regime(data)
        if regime != "single":
            self._check_components(plan, data)
        if regime != "public":
            return
        clusters = data.public["clusters"]
        sizes = np.bincount(clusters.labels, minlength=clusters.k)
        if sizes.min() < d + 1:
            self._report(
                f"a public cluster has {sizes.min()} rows, fewer than d + 1 = "
                f"{d + 1}: regime='public' cannot precondition it; "
                "regime='projected' (or more public rows) is safer.",
                before_spend=True,
            )

    def _check_components(self, plan, data):
        """Refuse (or warn) when a component fit is predicted useless
        (:func:`useless_component`; public values only)."""
        cost = _half(plan.cost("components"))
        clusters = data.public["clusters"]
        message = useless_component(clusters, data, cost)
        if message is None:
            return
        if self.fallback == "public" and self.on_useless == "raise":
            raise PublicOnly(
                message,
                data.X_public,
                clusters.k,
                data.d,
                getattr(self, "feature_names_in_", None),
            )
        report_useless(self, message)

    def _report(self, message, before_spend=False):
        if self.on_separation_failure == "ignore":
            return
        if self.on_separation_failure == "raise":
            spent = "Nothing was spent." if before_spend else "The budget is spent."
            raise SeparationError(f"PublicPrivateGMM: {message} {spent}")
        warnings.warn(f"PublicPrivateGMM: {message}", SeparationWarning, stacklevel=4)

    # -- the fit ------------------------------------------------------------
    def _fit_releases(self, data, plan, rng):
        X = data.X
        n = X.shape[0]
        public = data.X_public
        regime = self._choose_regime(data)
        if regime == "single":
            return self._single(X, public, plan, rng)
        clusters = data.public["clusters"]
        order = rng.permutation(n)  # drawn before reading the rows
        if regime == "public":
            labels = clusters.predict(X)
            public_labels = clusters.labels
            k = clusters.k
        else:
            labels, public_labels, k = self._projected(X, public, clusters.k, plan, rng)
        hist = plan.calibrate("weights")
        released = hist.release(labels, rng)
        sd = math.sqrt(hist.mechanism.variance(k))
        fits = self._fit_components(
            X, labels, public, public_labels, released, sd, order, plan, rng
        )
        weights = np.maximum(released, 0.0)
        weights = weights / weights.sum() if weights.sum() > 0 else np.full(k, 1.0 / k)
        model = (
            weights,
            np.array([f.mean_ for f in fits]),
            np.array([f.covariance_ for f in fits]),
        )
        steps = self._refine_steps(data)
        if steps:
            model = refine(X, model, plan, rng, steps, n_partial_sums(X))
        fitted = _mixture_attributes(*model)
        fitted.update(
            n_components_=k,
            regime_=regime,
            components_=fits,
            refine_steps_=steps,
            separation_=_separation(fitted["means_"], fitted["covariances_"]),
        )
        self._check_released(fitted, public, public_labels, sd, n)
        return fitted

    def _single(self, X, public, plan, rng):
        """One component: one estimator on every row at the whole cost (n is
        public, so no count and no truncation are needed)."""
        est = _component_estimator(plan.cost("components"), rng)
        est.fit(X, X_public=public)
        plan.calibrate("components").draws = 1
        fitted = _mixture_attributes(np.ones(1), est.mean_[None], est.covariance_[None])
        fitted.update(
            n_components_=1,
            regime_="single",
            components_=[est],
            refine_steps_=0,
            separation_=math.inf,
        )
        return fitted

    def _projected(self, X, public, k, plan, rng):
        """Private PCA in a public ball, k-means on the projected public rows."""
        n, d = X.shape
        center, radius = _pca_ball(public)
        M = clipped_sums(X, center, radius)[1] / n
        mech = plan.calibrate("pca", radius=radius, n_partials=n_partial_sums(X))
        noisy = mech.randomise(M, rng)
        _, vectors = np.linalg.eigh(0.5 * (noisy + noisy.T))
        basis = vectors[:, ::-1][:, : min(k, d)]
        km = KMeans(n_clusters=k, n_init=10, random_state=self._seed())
        km.fit((public - center) @ basis)
        centroids = km.cluster_centers_
        labels = _nearest(X, center, basis, centroids)
        return labels, km.labels_, k

    def _fit_components(
        self, X, labels, public, public_labels, released, sd, order, plan, rng
    ):
        """One PrivateGaussianEstimator per component, at half the charge."""
        n = X.shape[0]
        half = _half(plan.cost("components"))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        fits, notes = [], []
        for j in range(released.shape[0]):
            rows_public = public[public_labels == j]
            center = (
                finite_mean(rows_public) if rows_public.size else finite_mean(public)
            )
            target = int(np.clip(math.floor(released[j] - COUNT_SDS * sd), 2, n))
            rows = component_rows(X, labels == j, rank, target, center, rng)
            est = _component_estimator(half, rng)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UtilityWarning)
                est.fit(rows, X_public=rows_public if rows_public.size else None)
            if any(issubclass(w.category, UtilityWarning) for w in caught):
                notes.append(j)
            fits.append(est)
        plan.calibrate("components").draws = 1
        if notes:
            warnings.warn(
                f"PublicPrivateGMM: components {notes} have too few rows for their "
                "private range search to be reliable (a larger budget, more rows "
                "or more public rows per component help).",
                UtilityWarning,
                stacklevel=4,
            )
        return fits

    def _check_released(self, fitted, public, public_labels, sd, n):
        """The separation checks on public rows and released values (free)."""
        problems = separation_problems(fitted, public, public_labels, sd, n)
        if problems:
            self._report("; ".join(problems) + ".")
