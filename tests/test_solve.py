"""The private root-finder (llmmath._solve.bisect) on functions whose roots are known by hand."""

from __future__ import annotations

import math

import pytest

from llmmath._solve import bisect

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics


def test_square_root_of_two():
    root = bisect(lambda x: x * x - 2.0, 0.0, 2.0)
    assert root == pytest.approx(math.sqrt(2.0), rel=1e-15)


def test_a_kinked_function_like_a_roofline():
    # max(x, 3) - 5 crosses zero at x = 5; its kink at 3 is no trouble for bisection
    assert bisect(lambda x: max(x, 3.0) - 5.0, 0.0, 100.0) == pytest.approx(5.0, rel=1e-15)


def test_in_log_space():
    # e^x = 1000 at x = ln 1000 = 6.907755278982137
    root = bisect(lambda x: math.exp(x) - 1000.0, math.log(1e-6), math.log(1e12), max_iter=200)
    assert math.exp(root) == pytest.approx(1000.0, rel=1e-13)


def test_a_root_at_either_end_of_the_bracket():
    assert bisect(lambda x: x, 0.0, 1.0) == pytest.approx(0.0, abs=1e-15)
    assert bisect(lambda x: x - 1.0, 0.0, 1.0) == pytest.approx(1.0, rel=1e-15)


def test_tolerance_stops_early_and_bounds_the_error():
    calls = []

    def f(x):
        calls.append(x)
        return x - 0.3

    root = bisect(f, 0.0, 1.0, atol=1e-3)
    # the bracket halves from width 1 until it is under 1e-3: 2^-10 < 1e-3 <= 2^-9, 10 halvings
    assert len(calls) == 2 + 10  # the two ends, then one evaluation per halving
    assert abs(root - 0.3) <= 2.0**-10 / 2


def test_relative_tolerance_scales_with_the_upper_end():
    calls = []

    def f(x):
        calls.append(x)
        return x - 1000.3

    root = bisect(f, 0.0, 2048.0, rtol=1e-6)  # stops once hi - lo < ~1e-3
    assert abs(root - 1000.3) < 1e-3
    assert len(calls) - 2 == 21  # 2048 / 2^21 = 9.8e-4 < 1.0003e-3 <= 2048 / 2^20


def test_max_iter_bounds_the_work():
    calls = []

    def f(x):
        calls.append(x)
        return x - 0.7

    root = bisect(f, 0.0, 1.0, max_iter=3)
    assert len(calls) == 2 + 3
    assert root == 0.6875  # [0, 1] -> [0.5, 1] -> [0.5, 0.75] -> [0.625, 0.75]: midpoint


def test_known_end_values_are_not_recomputed():
    calls = []

    def f(x):
        calls.append(x)
        return x - 0.25

    bisect(f, 0.0, 1.0, f_lo=-0.25, f_hi=0.75, max_iter=5)
    assert 0.0 not in calls and 1.0 not in calls and len(calls) == 5


@pytest.mark.parametrize("f, lo, hi", [
    (lambda x: x + 1.0, 0.0, 1.0),  # positive everywhere
    (lambda x: x - 5.0, 0.0, 1.0),  # negative everywhere
    (lambda x: math.nan, 0.0, 1.0),  # no sign at all
])
def test_a_bracket_without_a_root_is_a_clear_error(f, lo, hi):
    with pytest.raises(ValueError, match="holds no root"):
        bisect(f, lo, hi)


def test_bad_arguments():
    with pytest.raises(ValueError, match="lo <= hi"):
        bisect(lambda x: x, 1.0, 0.0)
    with pytest.raises(ValueError, match="max_iter"):
        bisect(lambda x: x, 0.0, 1.0, max_iter=-1)
    with pytest.raises(ValueError, match="tolerances"):
        bisect(lambda x: x, 0.0, 1.0, atol=-1.0)
