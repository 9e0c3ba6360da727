"""The classifier, PCA and outlier detector."""


def test_workflow_is_near_scikit_learn(demo_run):
    # The classifier within 0.06 of scikit-learn's test accuracy (measured
    # 0.917-0.924 against 0.953 over seeds 0-3), the PCA capturing at least 80%
    # (0.981-0.985 over seeds 0-3 with its default, method="tail"; 0.53-0.60
    # with "gauss") and the envelope's AUC within 0.15 of the non-private
    # Mahalanobis distance's (0.868-0.904 against 0.857 over seeds 0-3, in
    # the box of the data set's published maxima).
    lda, pca, env = demo_run.sections["workflow"]
    assert lda["value"] > lda["nonprivate"] - 0.06
    assert pca["value"] > 0.8
    assert env["value"] > env["nonprivate"] - 0.15


def test_envelope_box_is_the_documented_one():
    # The envelope's box is read from the data set's documentation, the
    # published "Max" column, not from its rows (which it matches to the
    # table's three decimals; the demo widens it by half).
    import numpy as np
    from sklearn.datasets import load_breast_cancer

    from dpgauss.demo.workflow import published_maxima

    cancer = load_breast_cancer()
    maxima = published_maxima(cancer.DESCR)
    assert maxima.shape == (30,)
    np.testing.assert_allclose(maxima, cancer.data.max(axis=0), rtol=1e-3, atol=5e-4)


def test_envelope_verdict_states_the_auc_and_the_gap_in_words(demo_run):
    # The verdict read "ROC AUC -0.091": the difference to the non-private AUC,
    # printed where an AUC (never negative) is expected. Now the AUC, then the
    # gap as "below" or "above" the non-private one.
    env = demo_run.sections["workflow"][2]
    gap = env["value"] - env["nonprivate"]
    line = next(
        line
        for line in demo_run.text.splitlines()
        if line.startswith("Verdict: PrivateEllipticEnvelope()")
    )
    assert f"ROC AUC {env['value']:.3f}, {abs(gap):.3f} " in line
    assert ("below" if gap < 0 else "above") in line
    assert f"the {env['nonprivate']:.3f} of scikit-learn's" in line
    assert "ROC AUC -" not in demo_run.text
