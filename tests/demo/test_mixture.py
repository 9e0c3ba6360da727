"""The mixture fitted with 120 public rows."""


def test_mixture_is_near_the_nonprivate_fit_and_above_the_public_rows(demo_run):
    # Within 0.1 nats of the non-private fit and well above the public rows
    # alone (measured -12.364, -12.363 and -13.44).
    ours, public_only = demo_run.sections["mixture"]
    assert ours["value"] > ours["nonprivate"] - 0.1
    assert public_only["value"] < ours["value"] - 0.5
    assert public_only["rho"] == public_only["epsilon"] == 0.0
