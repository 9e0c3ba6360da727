"""SubsampleAggregate(LinearRegression())."""


def test_aggregate_is_near_the_nonprivate_coefficients(demo_run):
    # n = 30,000, d = 5, 1200 groups of 25 rows at rho = 0.5 (measured 0.0228 to
    # the truth, 0.0070 to the non-private fit, which is 0.0179 from the truth).
    # The aggregate's own noise and the candidates' spread add about 1/sqrt(k)
    # relative error.
    truth, to_full = demo_run.sections["subsample"]
    assert truth["metric"] == "coef_l2_error_to_truth"
    assert truth["value"] < 2.0 * truth["nonprivate"]
    assert to_full["value"] < 0.05
    assert "1200 groups of 25 rows" in demo_run.text
