"""Tests of llmmath.exercises.check: verdicts and hints for the usual slips."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath.exercises import UNANSWERED, check

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics


@pytest.mark.parametrize("answer, start", [
    (100, "right"), (104, "right"), (96, "right"),
    (106, "close (6% high)"), (94, "close (6% low)"),
])
def test_right_and_close(answer, start):
    assert check(answer, 100, quiet=True).startswith(start)


@pytest.mark.parametrize("factor, hint", [
    (2, "multiply-add"), (8, "bits vs bytes"), (1000, "1000"), (1e6, "1e6"), (1e9, "1e9"),
    (1024, "1024"), (1.0737, "GiB"), (1.0737**2, "twice"), (1.0995, "TiB"), (4, "factor of 4"),
])
@pytest.mark.parametrize("inverse", [False, True])
def test_factor_hints(factor, hint, inverse):
    answer = 3.7e5 / factor if inverse else 3.7e5 * factor
    verdict = check(answer, 3.7e5, quiet=True)
    assert verdict.startswith("off by a factor of ~")
    assert hint in verdict
    assert ("too low" in verdict) == inverse


def test_unknown_factor_and_signs():
    assert check(3, 1, quiet=True) == "off by a factor of ~3 (too high)"
    assert check(-1, 1, quiet=True) == "wrong sign"
    assert check(0, 1, quiet=True).startswith("off")
    assert check(0, 0, quiet=True) == "right"


def test_prints_and_returns(capsys):
    v = check(8e9, 1e9)
    assert capsys.readouterr().out.strip() == v


def test_rtol():
    assert check(110, 100, rtol=0.2, quiet=True) == "right"
    assert check(110, 100, rtol=0.01, quiet=True) != "right"
    with pytest.raises(ValueError, match="rtol"):
        check(1, 1, rtol=0)
    with pytest.raises(ValueError, match="answer"):
        check(float("nan"), 1)
    with pytest.raises(ValueError, match="expected"):
        check(1, [1, 2])


@settings(max_examples=200, deadline=None)
@given(x=st.floats(1e-30, 1e30), r=st.floats(0.96, 1.04))
def test_within_rtol_is_right(x, r):
    assert check(x * r, x, quiet=True) == "right"


@pytest.mark.parametrize("blank", [None, ...])
def test_a_blank_answer_asks_to_be_filled_in(blank, capsys):
    # The book's check cells ship blank (``my_answer = None``): they must run without error,
    # say what to do, and reveal nothing about the expected value.
    v = check(blank, 6.7e9)
    assert v == UNANSWERED and v.startswith("fill in your answer")
    out = capsys.readouterr().out
    assert out.strip() == v and "6.7" not in out
    # the expected value and rtol are still checked, so a broken cell fails before it is filled
    with pytest.raises(ValueError, match="expected"):
        check(blank, float("nan"))
    with pytest.raises(ValueError, match="rtol"):
        check(blank, 1.0, rtol=-1)


def test_slip_hints_unchanged_once_filled_in():
    assert check(8 * 6.7e9, 6.7e9, quiet=True).endswith("bits vs bytes?")
    assert check(6.7e9, 6.7e9, quiet=True) == "right"


def test_a_verdict_is_printed_once_in_a_notebook():
    """check prints its verdict; the returned value (a str) must not be echoed as 'right' again."""
    from IPython.core.formatters import DisplayFormatter

    v = check(295, 295, quiet=True)
    assert v == "right" and isinstance(v, str)
    assert DisplayFormatter().format(v) == ({}, {})          # a notebook shows nothing more
    assert DisplayFormatter().format("right")[0]             # while a plain str would be shown
