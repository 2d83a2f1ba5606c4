"""What a chapter's cells put on the page reads as a book, not as a Python session (issue 36).

Over every notebook of the book (chapters, cheat sheet, appendix, exam bank, lab):

- no code line is longer than ``MAX_LINE`` characters (the code column fits it at 1280 px;
  ``ruff format --line-length 88`` keeps code there, long strings and comments are split by hand);
- no printed line (a stream, or the plain text of a result the page shows) is longer than
  ``MAX_LINE`` characters;
- no result the page shows is a bare Python repr: a tuple, dict, list or set (it starts with
  ``(``, ``{`` or ``[``), or a number with more than ``MAX_DIGITS`` significant digits
  (``215.99999999999997``, ``259200000000000.0``). A cell ends with a formatted ``print`` or a
  table, or is tagged ``remove-output`` when the prose already glues its numbers;
- a cell tagged ``answer`` (it glues an exercise's numbers into the hidden solution) shows
  nothing on the page.

Outputs the page does not show (cells tagged ``remove-output`` or ``remove-cell``) and rich
outputs (HTML tables, figures, widgets) are not read. Each rule is also checked on a planted
instance, so none passes by reading nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
MAX_LINE = 88
MAX_DIGITS = 6
HIDDEN = {"remove-output", "remove-cell"}
GLUE_RECORD = "application/papermill.record/text/plain"  # what myst-nb glue saves

# A run of digits with an optional fraction: the significant digits of each number printed.
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?:\.(\d+))?(?:[eE][-+]?\d+)?(?![\w.])")


def _shown_text(cell):
    """The plain-text outputs of a code cell that the page shows, as one string each."""
    if set(cell.get("metadata", {}).get("tags", [])) & HIDDEN:
        return []
    out = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            out.append(("stream", "".join(o["text"])))
        elif o["output_type"] in ("execute_result", "display_data"):
            data = o.get("data", {})
            rich = [k for k in data if k != "text/plain"]
            if "text/plain" in data and not rich:
                out.append((o["output_type"], "".join(data["text/plain"])))
    return out


def significant_digits(number: str) -> int:
    """Significant digits of a printed number: '215.99999999999997' has 17, '1,424' is read
    as two numbers by the caller (commas separate), '259200000000000.0' has 16, '0.0617' 3."""
    m = _NUMBER.fullmatch(number)
    if not m:
        raise ValueError(f"number: got {number!r}; expected digits with an optional fraction")
    whole, frac = m.group(1), m.group(2) or ""
    digits = (whole + frac).lstrip("0")
    if frac and not whole.strip("0"):  # 0.000123: leading zeros of the fraction do not count
        digits = frac.lstrip("0")
    elif not frac:  # 1200 counts as 2 (trailing zeros of a whole number are not precision)
        digits = digits.rstrip("0")
    return len(digits)


def cell_problems(cell) -> list[str]:
    """Every rule a code cell breaks, as short readable strings."""
    if cell["cell_type"] != "code":
        return []
    problems = []
    tags = set(cell.get("metadata", {}).get("tags", []))
    if "answer" in tags and not tags & HIDDEN:
        # an exercise's answer cell glues its numbers into the hidden solution; the page shows
        # none of it (chapter 2 printed Exercise 2.7's table before the exercises)
        shown = [o for o in cell.get("outputs", []) if o["output_type"] == "stream"
                 or set(o.get("data", {})) - {GLUE_RECORD}]
        if shown:
            problems.append("an answer cell shows its output on the page")
    for n, line in enumerate("".join(cell["source"]).splitlines(), 1):
        if len(line) > MAX_LINE:
            problems.append(f"code line {n} has {len(line)} characters: {line[:60]!r}...")
    for kind, text in _shown_text(cell):
        for line in text.splitlines():
            if len(line) > MAX_LINE:
                problems.append(f"printed line of {len(line)} characters: {line[:60]!r}...")
        if kind == "stream":
            continue
        bare = text.strip()
        if bare[:1] in ("(", "{", "["):
            problems.append(f"result is a bare Python repr: {bare[:60]!r}")
        for m in _NUMBER.finditer(bare):
            if significant_digits(m.group(0)) > MAX_DIGITS:
                problems.append(f"result prints {m.group(0)} ({significant_digits(m.group(0))}"
                                f" significant digits): {bare[:60]!r}")
                break
    return problems


def notebook_problems(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [f"cell {i}: {p}" for i, c in enumerate(cells) for p in cell_problems(c)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_cells_read_as_a_book(path):
    problems = notebook_problems(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def _code(source, outputs=(), tags=()):
    return {"cell_type": "code", "source": source, "outputs": list(outputs),
            "metadata": {"tags": list(tags)}}


def _result(text):
    return {"output_type": "execute_result", "data": {"text/plain": text}}


@pytest.mark.parametrize("cell, found", [
    # planted: the review's own examples, each must be found
    (_code("x = 1", [_result("{0.3333333333333333: 129.6, 0.2: 215.99999999999997}")]), "repr"),
    (_code("x = 1", [_result("(13179, 1283, 235499, 29971, '32.4 s')")]), "repr"),
    (_code("x = 1", [_result("259200000000000.0")]), "significant"),
    (_code("x = 1", [_result("0.682197180251655")]), "significant"),
    (_code("y = " + "a + " * 30 + "b"), "code line"),
    (_code("print(s)", [{"output_type": "stream", "name": "stdout", "text": "x" * 89}]),
     "printed line"),
    (_code("print(t)", [{"output_type": "stream", "name": "stdout", "text": "MLA fits"}],
           tags=["answer", "hide-input"]), "answer cell"),
])
def test_a_planted_instance_of_each_rule_is_found(cell, found):
    assert any(found in p for p in cell_problems(cell)), cell_problems(cell)


@pytest.mark.parametrize("cell", [
    _code("x = 1", [_result("'4.1 ms per step'")]),
    _code("x = 1", [_result("1,424 tokens at 0.0617 $/M")]),
    _code("x = 1", [_result("(1, 2)")], tags=["remove-output"]),
    _code("x = 1", [{"output_type": "execute_result",
                     "data": {"text/plain": "(1, 2)", "text/html": "<table/>"}}]),
    _code("y = " + "a + " * 20 + "b"),
    _code("glue('x', 1)", [{"output_type": "display_data",
                            "data": {GLUE_RECORD: "1"}}], tags=["answer"]),
    _code("print(t)", [{"output_type": "stream", "name": "stdout", "text": "MLA fits"}],
          tags=["answer", "remove-cell"]),
])
def test_what_reads_as_a_book_passes(cell):
    assert cell_problems(cell) == []


@pytest.mark.parametrize("number, digits", [
    ("215.99999999999997", 17), ("259200000000000.0", 16), ("0.0617", 3), ("1200", 2),
    ("129.6", 4), ("5404", 4), ("0.000123", 3), ("3.80e25", 3),
])
def test_significant_digits_by_hand(number, digits):
    assert significant_digits(number) == digits
