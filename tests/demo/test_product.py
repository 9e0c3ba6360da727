"""PrivateProductDistribution on rare binary features."""


def test_product_distance_is_within_twice_the_nonprivate(demo_run):
    # Hellinger distance within twice the non-private one (measured 0.0512
    # against 0.0350; bench_product's target).
    (pp,) = demo_run.sections["product"]
    assert pp["value"] < 2.0 * pp["nonprivate"]
