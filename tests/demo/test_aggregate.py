"""The regression section: SubsampleAggregate(LinearRegression()) and
PrivateLinearRegression."""


def test_aggregate_is_near_the_nonprivate_coefficients(demo_run):
    # n = 30,000, d = 5, 1200 groups of 25 rows at rho = 0.5 (measured 0.0228 to
    # the truth, 0.0070 to the non-private fit, which is 0.0179 from the truth).
    # The aggregate's own noise and the candidates' spread add about 1/sqrt(k)
    # relative error.
    truth, to_full, _, _ = demo_run.sections["subsample"]
    assert truth["estimator"] == "SubsampleAggregate(LinearRegression())"
    assert truth["metric"] == "coef_l2_error_to_truth"
    assert truth["value"] < 2.0 * truth["nonprivate"]
    assert to_full["value"] < 0.05
    assert "1200 groups of 25 rows" in demo_run.text


def test_the_linear_regression_is_near_the_nonprivate_coefficients(demo_run):
    # The same rows in the boxes x in [-4, 4], y in [-20, 20] at rho = 0.5:
    # 0.013-0.024 to the truth and 0.0045-0.0086 to the non-private fit over
    # five seeds (its noise, ~0.006 in l2, is a third of the sampling error).
    *_, truth, to_full = demo_run.sections["subsample"]
    assert truth["estimator"] == "PrivateLinearRegression()"
    assert truth["value"] < 2.0 * truth["nonprivate"]
    assert to_full["value"] < 0.02
    assert "PrivateLinearRegression" in demo_run.text
