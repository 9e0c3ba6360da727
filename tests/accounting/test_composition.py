"""Exact sums of costs: the Tally that the ledger and the plan's choices share."""

import math
import sys
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from dpgauss.accounting import ZCDP, ApproxDP, PureDP, _composition, pure_to_zcdp
from dpgauss.accounting._composition import Tally, parts_of


@given(st.lists(st.floats(0.0, 1e300, allow_subnormal=True), max_size=40))
def test_exact_units_round_to_the_fsum_value(values):
    # Each float is an exact integer count of 2**-1074; the integer sum divided
    # by 2**1074 (correctly rounded) is the correctly rounded sum, as fsum's.
    units = [_composition._units(v) for v in values]
    assert all(
        Fraction(u, _composition._UNIT) == Fraction(v)
        for u, v in zip(units, values, strict=True)
    )
    assert sum(units) / _composition._UNIT == math.fsum(values)


_COSTS = st.lists(
    st.one_of(
        st.builds(ZCDP, st.floats(0.0, 1e300, allow_subnormal=True)),
        st.builds(PureDP, st.floats(0.0, 1e150, allow_subnormal=True)),
        st.builds(
            ApproxDP,
            st.floats(0.0, 1e300, allow_subnormal=True),
            st.floats(0.0, 0.999, allow_subnormal=True),
        ),
    ),
    max_size=30,
)


@given(_COSTS)
def test_tally_parts_are_the_fsum_parts(costs):
    # Composition reads parts_of (fsum); the ledger reads Tally.parts: the same
    # floats, bit for bit, for any costs whose sums are finite.
    assert Tally.of(costs).parts() == parts_of(costs)


def _fraction_vector(costs):
    """The exact sums as Fractions, and which kinds occur that compose reads."""
    zcdp = [c for c in costs if isinstance(c, ZCDP)]
    pure = [c for c in costs if isinstance(c, PureDP)]
    approx = [c for c in costs if isinstance(c, ApproxDP)]
    return (
        sum((Fraction(c.rho) for c in zcdp), Fraction(0)),
        sum((Fraction(c.epsilon) for c in pure), Fraction(0)),
        sum((Fraction(pure_to_zcdp(c.epsilon)) for c in pure), Fraction(0)),
        sum((Fraction(c.epsilon) for c in approx), Fraction(0)),
        sum((Fraction(c.delta) for c in approx), Fraction(0)),
        bool(zcdp),
        bool(approx),
    )


@given(_COSTS, _COSTS)
def test_covers_is_the_exact_componentwise_comparison(costs, others):
    mine, theirs = _fraction_vector(costs), _fraction_vector(others)
    expected = all(a >= b for a, b in zip(mine, theirs, strict=True))
    assert Tally.of(costs).covers(Tally.of(others)) == expected


def test_one_ulp_apart_is_told_apart():
    tiny = Tally.of([ZCDP(0.1), PureDP(1e-300)])
    assert Tally.of([ZCDP(0.1)]).parts().rho == tiny.parts().rho
    assert tiny.covers(Tally.of([ZCDP(0.1)]))
    assert not Tally.of([ZCDP(0.1)]).covers(tiny)


def test_fsum_overflows_where_the_exact_sum_rounds_to_the_largest_float():
    # Why composition keeps math.fsum: on this list fsum raises (an intermediate
    # overflow) while the exact sum, just above the largest float by less than
    # half an ulp, rounds to it.
    big = sys.float_info.max / 2
    values = [big, 2.0**968 * 3, big]
    assert Tally.of([ZCDP(v) for v in values]).parts().rho == sys.float_info.max
    try:
        math.fsum(values)
    except OverflowError:
        pass
    else:  # a Python whose fsum does not overflow here: nothing to keep apart
        assert math.fsum(values) == sys.float_info.max
