"""The public side of PublicPrivateGMM: clustering of the public rows (free),
the assignment of private rows by rules that read only public rows and released
values, and the small pieces the fit composes (the weights' histogram, the
component estimators, the fitted attributes).
"""

import math
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture

from dpgauss.accounting._costs import privacy_parameters, scaled
from dpgauss.accounting._plan import PlanError
from dpgauss.base import FitData
from dpgauss.gaussian import PrivateGaussianEstimator
from dpgauss.mechanisms._checks import check_radius
from dpgauss.mechanisms._releases import second_moment_mechanism
from dpgauss.mechanisms._statistics import HistogramMechanism
from dpgauss.mixture._refine import cholesky_factors
from dpgauss.releases._range import finite_mean, scaled_deviations
from dpgauss.utils._sums import iter_chunks

#: A component whose released weight and public share differ by more than
#: this many public-sampling sds (plus the count noise) is reported.
WEIGHT_SDS = 4.0
#: Components closer than this many sds (``separation_``) are reported:
#: hard assignment then misassigns a visible share of the rows.
MIN_SEPARATION = 4.0
#: A component whose private covariance's trace exceeds this many times its
#: public cluster's (when that has d + 1 rows or more) probably merged two.
TRACE_RATIO = 4.0
#: The private PCA clips rows at this many times the public rows' largest
#: distance to their mean (a public radius; farther rows are clipped).
PCA_MARGIN = 1.5
#: A component with fewer private rows than this times sqrt(d) may be
#: predicted useless: without hints a Gaussian needs about 320 sqrt(d) rows
#: (the user guide's figure for PrivateGaussianEstimator).
COMPONENT_ROWS = 320.0
#: Standardised or projected coordinates are clipped to [-BIG, BIG] before a
#: row is assigned (squares stay finite; far rows stay far).
BIG = 1e150


class _PublicClusters:
    """The public rows' Gaussian mixture and its labels (free)."""

    def __init__(self, public, k, seed):
        m = public.shape[0]
        self.k = k
        if k == 1 or m < 2 * k:
            self.model = None
            self.labels = np.zeros(m, dtype=np.int64) if k == 1 else np.arange(m) % k
            return
        self.model = GaussianMixture(
            k, covariance_type="full", n_init=3, reg_covar=1e-6, random_state=seed
        )
        # Standardised by the public scale so reg_covar is relative.
        self._center, self._scale = _standardisation(public)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model.fit((public - self._center) / self._scale)
        self.labels = self.model.predict((public - self._center) / self._scale)

    def predict(self, X):
        """Each row's most likely public component: reads the row and public
        values only, so it is the same rule for every dataset."""
        if self.model is None:
            return np.zeros(X.shape[0], dtype=np.int64)
        return _assign(
            X, lambda rows: (rows - self._center) / self._scale, self.model.predict
        )


#: Covariance floors (``reg_covar``, in units of each column's public
#: variance) the public-only mixture chooses from by cross-validation on the
#: public rows: with fewer public rows per component than d + 1 a component's
#: covariance is singular, and the floor decides held-out log-likelihoods
#: (scikit-learn's 1e-6 scored wine's held-out rows near -1e12 per row).
PUBLIC_REGS = (1e-3, 1e-2, 0.1, 0.3, 1.0)
#: Folds of that cross-validation.
PUBLIC_FOLDS = 3


def _public_fit(Z, k, reg, seed):
    model = GaussianMixture(
        k, covariance_type="full", n_init=2, reg_covar=reg, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(Z)


def _public_reg(Z, k, seed):
    """The floor of :data:`PUBLIC_REGS` with the best mean held-out
    log-likelihood over :data:`PUBLIC_FOLDS` folds of the public rows (the
    largest when too few rows for k components in every fold)."""
    m = Z.shape[0]
    folds = np.arange(m) % PUBLIC_FOLDS
    if m - m // PUBLIC_FOLDS - 1 < k:
        return PUBLIC_REGS[-1]
    scores = []
    for reg in PUBLIC_REGS:
        total = 0.0
        for f in range(PUBLIC_FOLDS):
            model = _public_fit(Z[folds != f], k, reg, seed)
            total += float(model.score_samples(Z[folds == f]).sum())
        scores.append(total if np.isfinite(total) else -math.inf)
    return PUBLIC_REGS[int(np.argmax(scores))]


def public_mixture(public, k, seed):
    """The mixture fitted on the public rows alone: weights, means and
    covariances in the rows' units (free: it reads public rows only).

    Each column is standardised by its public mean and standard deviation
    (1 for a constant column) so the covariance floor is relative; the floor
    is chosen by cross-validation on the public rows (:func:`_public_reg`)
    and the fit is mapped back exactly (means ``c + s m``, covariances
    ``diag(s) C diag(s)``).
    """
    with np.errstate(all="ignore"):
        center = np.nan_to_num(public.mean(axis=0))
        scale = np.nan_to_num(public.std(axis=0))
        scale = np.where((scale > 0) & (scale < BIG), scale, 1.0)
        Z = np.clip(np.nan_to_num((public - center) / scale), -BIG, BIG)
    order = np.random.default_rng(seed).permutation(Z.shape[0])
    reg = _public_reg(Z[order], k, seed)
    model = _public_fit(Z, k, reg, seed)
    means = center + scale * model.means_
    covariances = scale[:, None] * model.covariances_ * scale[None, :]
    return model.weights_, means, covariances


def _bic_components(public, largest, seed):
    """The number of components (1..largest) with the lowest BIC on the
    public rows: full covariances for the k that leave 2 (d + 1) public rows
    per component, or spherical ones for every k when fewer than 2 such k
    exist (mixing the two made BIC favour many spherical components)."""
    m, d = public.shape
    center, scale = _standardisation(public)
    with np.errstate(all="ignore"):
        Z = np.clip(np.nan_to_num((public - center) / scale), -BIG, BIG)
    full = m // (2 * (d + 1))
    kind = "full" if full >= 2 else "spherical"
    top = min(largest, full) if kind == "full" else min(largest, max(1, m // 2))
    best, best_k = math.inf, 1
    for k in range(1, top + 1):
        gm = GaussianMixture(k, covariance_type=kind, n_init=2, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gm.fit(Z)
        value = gm.bic(Z)
        if value < best:
            best, best_k = value, k
    return best_k


def _standardisation(public):
    """A finite center and a positive finite scale of the public rows
    (computed on the deviations over their largest magnitude, so neither
    overflows)."""
    center, scaled, size = scaled_deviations(public)
    with np.errstate(all="ignore"):
        scale = size * float(np.std(scaled))
    return center, (scale if 0.0 < scale < math.inf else 1.0)


def _assign(X, coordinates, rule):
    """Each row's label, chunk by chunk: ``rule`` of the rows'
    ``coordinates`` (public maps) made finite and clipped to [-BIG, BIG], so
    that a far row never makes the rule raise after the spend (it is
    assigned like any far row). Reads each row alone."""
    labels = [np.zeros(0, dtype=np.int64)]
    for block in iter_chunks(X):
        with np.errstate(all="ignore"):
            z = coordinates(np.asarray(block, dtype=np.float64))
            z = np.clip(np.nan_to_num(z, nan=0.0, posinf=BIG, neginf=-BIG), -BIG, BIG)
            labels.append(np.asarray(rule(z), dtype=np.int64))
    return np.concatenate(labels)


def _nearest(X, center, basis, centroids):
    """Each row's nearest centroid after projection (public rule)."""

    def closest(proj):
        dist = ((proj[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
        return np.argmin(dist, axis=1)

    return _assign(X, lambda rows: (rows - center) @ basis, closest)


class _Histogram(HistogramMechanism):
    """The weights' histogram, checked before the spend through its noise
    mechanism (:meth:`parts`) at the histogram's size."""

    def parts(self):
        """The noise mechanism, for a release of ``k`` bins."""
        return [(self.mechanism, self.bins.shape[0] - 1, True)]


def _weights(cost, k):
    """The weights' histogram: the k cluster sizes (labels 0..k-1 in unit
    bins). Replacing one row moves one unit from one size to another (l2
    sqrt(2), l1 2, :class:`~dpgauss.mechanisms.HistogramMechanism`); the
    sizes are exact integers."""
    edges = np.arange(k + 1, dtype=np.float64) - 0.5
    return _Histogram(edges, **privacy_parameters(cost))


def _half(cost):
    """Half of a zCDP or pure cost (each of two components' share)."""
    return scaled(cost, 0.5)


def _pca_ball(public):
    """The public center and radius the private PCA clips at (public)."""
    center = finite_mean(public)
    with np.errstate(all="ignore"):
        spread = float(np.max(np.linalg.norm(public - center, axis=1)))
    return center, (PCA_MARGIN * spread if spread > 0 else 1.0)


def component_rows(X, members, rank, target, center, rng):
    """A component's rows, exactly ``target`` of them (a released count), in
    a uniformly random order.

    The rows where ``members`` holds, the first ``target`` of them by
    ``rank`` (drawn independently of the data, one rank per row index),
    padded with copies of ``center`` (public) up to ``target``, then permuted
    by ``rng.permutation(target)``.

    Privacy. Replacing row i changes ``members`` at i alone (the assignment
    reads row i only), so at most two components change, and each one's
    *multiset* of rows changes by one element replaced by another (a row
    leaving or entering the first ``target`` by rank, or a pad taking or
    giving its place). Its *sequence* in rank order can shift (one row
    leaves, the later ones move up, one enters), while the component
    estimator's proofs are for sequences differing in one position (its
    releases may depend on row order). The final permutation closes that gap:
    it is public randomness, drawn from the fit's stream for every dataset
    (its size ``target`` is a released value, so the draw is planned and
    needs no budget), and a uniformly random order of a multiset has a law
    that depends on the multiset alone. For multisets S, S' of size N that
    differ in one element, couple the two uniform permutations so that the
    differing element sits at the same position: the sequences then differ in
    that one position and agree elsewhere. The estimator's (eps, delta) or
    zCDP bound for replace-one neighbours holds for every such coupled pair,
    so it holds for the mixture over the permutation (a bound on the
    divergence or on every event's probability holds for mixtures of pairs
    each satisfying it: joint convexity).
    """
    index = np.flatnonzero(members)
    index = index[np.argsort(rank[index], kind="stable")][:target]
    rows = np.asarray(X[index], dtype=np.float64)
    if rows.shape[0] < target:
        pad = np.repeat(center[None, :], target - rows.shape[0], axis=0)
        rows = np.vstack([rows, pad])
    return rows[rng.permutation(target)]


def _component_estimator(cost, rng):
    """A PrivateGaussianEstimator at ``cost`` seeded from the fit's stream.

    It runs after the mixture's charge, which already paid for it, so a
    component predicted weak warns (the mixture collects those warnings)
    rather than refusing.
    """
    return PrivateGaussianEstimator(
        **privacy_parameters(cost),
        random_state=int(rng.integers(2**63)),
        on_useless="warn",
    )


def component_refusal(cost, n_rows, public_rows):
    """Why a component fit at ``cost`` on ``n_rows`` rows would be refused, or None.

    The component estimator's own pre-spend steps
    (:meth:`~dpgauss.base.PrivateEstimatorMixin._predicted_refusal`) on public
    values only: the predicted row count, d and the component's public rows.
    Reads no private row, so the mixture may act on it before its spend.
    """
    est = PrivateGaussianEstimator(**privacy_parameters(cost))
    public = public_rows if public_rows.shape[0] else None
    return est._predicted_refusal(max(int(n_rows), 2), public_rows.shape[1], public)


def useless_component(clusters, data, cost):
    """Why the first component predicted useless is, or None.

    Each component is predicted at its public cluster's share of n (an
    optimistic count: the fit truncates to the released count minus its
    noise) with that cluster's public rows, at the component ``cost``. It is
    useless when it has fewer than :data:`COMPONENT_ROWS` ``sqrt(d)`` rows
    and the component estimator's own pre-spend check refuses it
    (:func:`component_refusal`). That check alone is a union bound, too
    pessimistic for a mixture (a mixture whose components it flags at
    n = 10,000, d = 2 still beat the public rows' own fit 25-fold), so both
    must hold. Public values only.
    """
    m = clusters.labels.shape[0]
    for j in range(clusters.k):
        rows = data.X_public[clusters.labels == j]
        n_j = data.n * rows.shape[0] // m
        if n_j >= COMPONENT_ROWS * math.sqrt(data.d):
            continue
        why = component_refusal(cost, n_j, rows)
        if why is not None:
            return (
                f"PublicPrivateGMM: component {j} (about {n_j} of the n={data.n} "
                f"rows, {rows.shape[0]} public) is predicted useless: {why} A "
                "mixture fitted on the public rows alone (free, e.g. "
                "sklearn.mixture.GaussianMixture on X_public) is predicted "
                "better; more private or public rows, fewer components or a "
                "larger budget help."
            )
    return None


def components_factory(d, shared):
    """The factory of the ``components`` release for d features: a
    :class:`_Components` at the release's cost, each estimator at half of it
    when ``shared`` (more than one component: two change with a replaced
    row), the whole of it otherwise."""

    def make(cost):
        return _Components(cost, _half(cost) if shared else cost, d)

    return make


class _Components:
    """The ``components`` release: its noise is drawn by the per-component
    estimators, each at ``each`` (a cost) on its own plan.

    Before the spend, :meth:`parts` runs a component estimator's own check on
    its plan at its worst public case, 2 rows (the fewest a component is
    given; fewer rows, larger noise), so a budget a component cannot
    calibrate is refused by the mixture before anything is spent.
    """

    def __init__(self, cost, each, d):
        self.cost = cost
        self.each = each
        self.d = d
        self.draws = 0

    def parts(self):
        """The mechanisms of one component estimator's plan on 2 rows (after
        that estimator's own check, which raises ValueError first)."""
        est = _component_estimator(self.each, np.random.default_rng(0))
        data = est._prepare_fit(FitData(n=2, d=self.d))
        plan = est._build_plan(self.each, data)
        built = est._check_calibration(plan, data)
        return [
            (built[r.name], r.size, r.bounded)
            for r in plan.releases()
            if r.name in built
        ]


def _mixture_attributes(weights, means, covariances):
    _, chol = cholesky_factors(covariances)
    precisions = np.einsum("kij,klj->kil", chol, chol)
    return {
        "weights_": weights,
        "means_": means,
        "covariances_": covariances,
        "precisions_": precisions,
        "precisions_cholesky_": chol,
    }


def _separation(means, covariances):
    k = means.shape[0]
    if k < 2:
        return math.inf
    sds = np.sqrt([np.linalg.eigvalsh(c).max() for c in covariances])
    best = math.inf
    for i in range(k):
        for j in range(i + 1, k):
            gap = float(np.linalg.norm(means[i] - means[j])) / max(sds[i], sds[j])
            best = min(best, gap)
    return best


def separation_problems(fitted, public, public_labels, sd, n):
    """What the separation checks find, from public rows and released values
    only (free): released weights far from the public shares, a component much
    wider than its public cluster, components closer than a few sds."""
    k, d = fitted["means_"].shape
    m = public.shape[0]
    shares = np.bincount(public_labels, minlength=k) / m
    problems = []
    for j in range(k):
        p = shares[j]
        slack = WEIGHT_SDS * (math.sqrt(p * (1 - p) / m) + sd / n) + 0.02
        if abs(fitted["weights_"][j] - p) > slack:
            problems.append(
                f"component {j}'s weight {fitted['weights_'][j]:.3f} is far "
                f"from its public share {p:.3f}"
            )
        mine = public[public_labels == j]
        if mine.shape[0] >= d + 1:
            ratio = np.trace(fitted["covariances_"][j]) / max(
                float(np.trace(np.cov(mine.T).reshape(d, d))), 1e-300
            )
            if ratio > TRACE_RATIO:
                problems.append(
                    f"component {j} is {ratio:.1f} times wider than its public "
                    "cluster (two components merged?)"
                )
    if fitted["separation_"] < MIN_SEPARATION:
        problems.append(
            f"the closest components are {fitted['separation_']:.2f} sds "
            f"apart (below {MIN_SEPARATION}: hard assignment misassigns rows)"
        )
    return problems


def _weights_factory(cost, *, k):
    """The ``weights`` release: the histogram of the k cluster sizes."""
    return _weights(cost, k)


def _pca_factory(n, d, public):
    """The factory of the ``pca`` release: the second moment of n rows in d
    features clipped to the public rows' ball (:func:`_pca_ball`), whose
    radius must lie where float64 squares and sums stay exact
    (:func:`~dpgauss.mechanisms._checks.check_radius`, a ValueError before
    the spend). Without the public rows (a plan priced from their count) the
    radius is given by the caller."""
    ball = None if public is None else _pca_ball(public)[1]

    def make(cost, *, radius=ball, n_partials=None):
        if radius is None:
            raise PlanError("the pca release's radius comes from the public rows.")
        check_radius(radius, "the public rows' ball radius")
        return second_moment_mechanism(cost, n, d, radius, n_partials)

    return make
