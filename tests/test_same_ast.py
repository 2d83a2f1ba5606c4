"""scripts/same_ast.py: a correct line wrap passes; a lost or doubled space, a changed value or
a changed string does not (hand-written before/after pairs)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("same_ast", ROOT / "scripts" / "same_ast.py")
same_ast = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(same_ast)

OLD = 'x = f("hello world, {y} here", 1)\n'


def _problem(old: str, new: str):
    return same_ast.compare(old, new, "t.py")[0]


def test_split_string_and_wrapped_call_are_the_same():
    new = 'x = f("hello world, "\n      "{y} here",\n      1)\n'
    assert _problem(OLD, new) is None


def test_split_f_string_with_plain_piece_is_the_same():
    old = 'x = f"a {y} b c"\n'
    assert _problem(old, 'x = (f"a {y} "\n     "b c")\n') is None


def test_lost_space_at_a_join_is_reported():
    new = 'x = f("hello world,"\n      "{y} here", 1)\n'
    assert "string constant changed" in _problem(OLD, new)


def test_doubled_space_at_a_join_is_reported():
    new = 'x = f("hello world,  "\n      "{y} here", 1)\n'
    assert "string constant changed" in _problem(OLD, new)


def test_changed_number_is_reported():
    assert "fields differ" in _problem(OLD, OLD.replace("1)", "2)"))


def test_changed_code_is_reported():
    assert _problem("a = b * c\n", "a = b + c\n") is not None


def test_rewrapped_docstring_is_the_same():
    old = 'def g():\n    """One two three four."""\n'
    new = 'def g():\n    """One two\n    three four."""\n'
    assert _problem(old, new) is None


def test_reworded_docstring_is_reported():
    old = 'def g():\n    """One two three four."""\n'
    new = 'def g():\n    """One two three five."""\n'
    assert _problem(old, new) is not None


def test_line_breaks_in_embedded_code_are_a_note():
    old = 'JS = """const w = a - b;\nf(`x y`);"""\n'
    new = 'JS = """const w = a -\n  b;\nf(\n  `x y`);"""\n'
    problem, notes = same_ast.compare(old, new, "t.py")
    assert problem is None and len(notes) == 1


def test_space_lost_in_embedded_code_is_reported():
    old = 'JS = """const w = a - b;"""\n'
    assert _problem(old, 'JS = """const w = a -b;"""\n') is not None


def test_a_file_that_no_longer_parses_is_reported():
    assert "does not parse" in _problem(OLD, 'x = f("hello world, {y} here", 1\n')
