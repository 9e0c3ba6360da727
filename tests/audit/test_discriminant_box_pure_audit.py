"""Audits of the discriminant analyses with a public box under pure DP.

There the box fixes the clipping frame: the default ``clipping="adaptive"``
releases no center or radius, and the class statistics are clipped to the
ball of radius ``sqrt(d)`` (rounded up) about the box's center, in box units.

* ``class_sums`` (LDA, d = 2, bounds ``[-1, 1]^2``): a class-0 row at
  ``+1e12 (1, 1)`` against one at ``-1e12 (1, 1)``. In box units they are
  the corners ``(1, 1)`` and ``(-1, -1)``: class 0's sum moves by 2 in each
  coordinate, l1 ``2 d / n = 2 sqrt(d) B / n`` with ``B = sqrt(d)``, the
  charged sensitivity, attained. Summary: the Laplace log-likelihood ratio
  of the release (the optimal test); claim: its planned share of epsilon.
  Canary: the release calibrated to a quarter of its sensitivity.
* the fallback on the priors (LDA and QDA, d = 1): the fitted classifier
  predicts one class everywhere (every class mean set to their average,
  :func:`~dpgauss.releases._class_rule.usable_means`) or not. The decision
  reads released values only, so its probability moves by at most
  ``e^epsilon`` between neighbours; claim: the fit's whole epsilon. The
  neighbours: a row of class 0 at ``-1e12`` against one of class 1 at
  ``+1e12`` (the count, the sums and the moments all move). Canary: a fallback
  decided by the exact class count (private, never released), which falls
  back on one neighbour and never on the other.
"""

import warnings

import numpy as np
import pytest

import dpgauss.discriminant_analysis._base as base
import dpgauss.discriminant_analysis._lda as lda
import dpgauss.discriminant_analysis._qda as qda
from dpgauss import PrivacyBudget
from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)
from dpgauss.exceptions import UtilityWarning
from dpgauss.releases._box import box_offsets
from dpgauss.testing.audit import audit, fit_seed

pytestmark = pytest.mark.audit

N, FAR, BOX = 10, 1e12, (-1.0, 1.0)


def _pair(d, row_a, row_b, label_a, label_b):
    """N rows at +-0.5 per coordinate in two alternating classes; row 0
    replaced (features and label)."""
    X = np.full((N, d), 0.5)
    X[0::2] *= -1.0
    y = np.arange(N) % 2
    A, B = (X.copy(), y.copy()), (X.copy(), y.copy())
    A[0][0], A[1][0] = row_a, label_a
    B[0][0], B[1][0] = row_b, label_b
    return A, B


# -- class_sums in box units ---------------------------------------------------

SUMS_EPSILON = 1.0 / 0.55  # the whole budget; the sums' share is read off the plan


def _box_estimator(**params):
    return PrivateLinearDiscriminantAnalysis(
        classes=[0, 1],
        bounds=BOX,
        covariance_type="full",
        epsilon=SUMS_EPSILON,
        on_useless="warn",
        **params,
    )


def _exact_sums(data):
    X, y = data
    d = X.shape[1]
    Z = box_offsets(X, np.zeros(d), np.ones(d))
    radius = float(np.nextafter(np.sqrt(d), np.inf))
    _, sums, _ = base.labelled_statistics(Z, y, 2, np.zeros(d), radius, None)
    return (sums / N).ravel()


def _sums_audit(record_releases, n_samples):
    record = record_releases()
    A, B = _pair(2, [FAR, FAR], [-FAR, -FAR], 0, 0)
    probe = _box_estimator()
    budget = PrivacyBudget(epsilon=SUMS_EPSILON)
    probe.set_params(budget=budget).fit(*A)
    names = [e.mechanism.split(":")[1] for e in budget.ledger()]
    # The box fixes the frame: no center or radius is released.
    assert names == ["class_counts", "class_sums", "second_moment"]
    plan = probe._pricing_plan(2, n_samples=N)
    mech = probe._factories(N, 2, None)["class_sums"](plan.cost("class_sums"))
    exact_a, exact_b = _exact_sums(A), _exact_sums(B)
    # The neighbours attain the charged l1 sensitivity 2 d / n.
    assert np.sum(np.abs(exact_a - exact_b)) == pytest.approx(4.0 / N)

    def summary(out):
        return float(np.sum(np.abs(out - exact_b) - np.abs(out - exact_a)))

    def runner(data):
        est = _box_estimator()

        def run(n, rng):
            out = []
            for _ in range(n):
                est.set_params(random_state=fit_seed(rng)).fit(*data)
                out.append(summary(record["class_sums"]) / mech.scale)
            return np.array(out)

        return run

    result = audit(
        runner(A),
        runner(B),
        n_samples=n_samples,
        n_select=n_samples // 2,
        random_state=17,
    )
    # The planned share, read off the plan.
    return result, plan.cost("class_sums").epsilon


def test_box_class_sums_at_their_worst_neighbour_keep_their_claim(record_releases):
    result, claim = _sums_audit(record_releases, 1000)
    assert result.epsilon_lower <= claim, result


def test_canary_box_class_sums_at_a_quarter_of_the_sensitivity_is_caught(
    record_releases, weaken
):
    weaken(base, "labelled_sum_mechanism", 4.0)
    result, claim = _sums_audit(record_releases, 600)
    assert result.epsilon_lower > claim, result


# -- the fallback on the priors ------------------------------------------------

FALLBACK_EPSILON = 1.0
MODELS = {
    "lda": (PrivateLinearDiscriminantAnalysis, lda),
    "qda": (PrivateQuadraticDiscriminantAnalysis, qda),
}


def _fell_back(fitted):
    means = fitted.means_
    return float(np.all(means == means[0]))


def _fallback_audit(cls, n_samples):
    A, B = _pair(1, -FAR, FAR, 0, 1)

    def runner(data):
        est = cls(
            classes=[0, 1],
            bounds=BOX,
            epsilon=FALLBACK_EPSILON,
            on_useless="warn",
        )

        def run(n, rng):
            out = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UtilityWarning)
                for _ in range(n):
                    est.set_params(random_state=fit_seed(rng)).fit(*data)
                    out.append(_fell_back(est))
            return np.array(out)

        return run

    return audit(
        runner(A),
        runner(B),
        n_samples=n_samples,
        n_select=n_samples // 2,
        random_state=19,
    )


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_fallback_keeps_the_fits_claim(model):
    cls, _ = MODELS[model]
    result = _fallback_audit(cls, 1000)
    # Honest: the fallback is taken on both neighbours at similar rates.
    assert result.epsilon_lower <= FALLBACK_EPSILON, result


@pytest.mark.parametrize("model", sorted(MODELS))
def test_canary_a_fallback_decided_by_the_exact_counts_is_caught(model, monkeypatch):
    cls, module = MODELS[model]
    exact = {}
    statistics = base.labelled_statistics

    def stash(X, y, K, *args, **kwargs):
        counts, sums, moments = statistics(X, y, K, *args, **kwargs)
        exact["counts"] = counts
        return counts, sums, moments

    usable = module.usable_means

    def leaky(offsets, sizes, *args):
        _, noise_var = usable(offsets, sizes, *args)
        # Reads the exact class count (private): 5 rows in class 0 on the
        # first neighbour, 4 on the second.
        if exact["counts"][0] >= N // 2:
            average = (sizes / np.sum(sizes)) @ offsets
            return np.broadcast_to(average, offsets.shape).copy(), 0.0 * noise_var
        return offsets, noise_var

    monkeypatch.setattr(base, "labelled_statistics", stash)
    monkeypatch.setattr(module, "usable_means", leaky)
    result = _fallback_audit(cls, 600)
    assert result.epsilon_lower > FALLBACK_EPSILON, result
