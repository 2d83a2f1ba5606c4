"""``claims.each``: a claim over many cases is one test that fails once, naming every bad case."""

from __future__ import annotations

import pytest
from claims import each


def test_a_failing_case_fails_the_claim_and_every_failing_case_is_named():
    @each("x", [1, 2, 3, 4], ids=lambda x: f"x{x}")
    def claim(x):
        assert x % 2 == 1, f"{x} is even"

    with pytest.raises(pytest.fail.Exception) as info:
        claim()
    text = str(info.value)
    assert text.startswith("2 of 4 cases fail")
    assert "[x2] AssertionError: 2 is even" in text and "[x4]" in text and "[x1]" not in text


def test_an_error_in_a_case_is_a_failure_too():
    @each("d", [{"a": 1}, {}])
    def claim(d):
        assert d["a"] == 1

    with pytest.raises(pytest.fail.Exception, match=r"1 of 2 cases fail:\n\[\{\}\] KeyError"):
        claim()


def test_stacked_lists_run_their_product_with_several_names_per_case():
    seen = []

    @each("a", [1, 2])
    @each("b, c", [(10, 20), (30, 40)], ids=["low", "high"])
    def claim(a, b, c):
        seen.append((a, b, c))

    claim()
    assert sorted(seen) == [(1, 10, 20), (1, 30, 40), (2, 10, 20), (2, 30, 40)]
    assert claim.__name__ == "claim"


def test_skipped_cases_are_not_failures_and_all_skipped_is_a_skip():
    @each("x", [1, 2])
    def some(x):
        if x == 1:
            pytest.skip("not this one")
        assert x == 2

    some()  # one skipped, one passed

    @each("x", [1, 2])
    def none(x):
        pytest.skip("never")

    with pytest.raises(pytest.skip.Exception, match="all 2 cases skipped"):
        none()


def test_a_claim_over_nothing_and_mismatched_ids_are_refused():
    with pytest.raises(ValueError, match="no cases"):
        each("x", [])
    with pytest.raises(ValueError, match="2 values but 1 ids"):
        each("x", [1, 2], ids=["one"])
