"""The notation page lists every symbol of every chapter's displayed math, once (issue 31).

A symbol is a letter (Latin, Greek or calligraphic) with its subscript and a ``*`` superscript:
``N_\\text{act}`` is ``N_act``, ``I^*`` is ``I^*``. Runs of letters are words (``\\max``,
``\\text{ms}``, ``softmax``), not products of symbols. The notation page's tables (first column)
say which symbols exist; a chapter's displayed equations (``$$ ... $$`` and ``{math}`` blocks)
may use no other, and no symbol has two rows.
"""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from llmmath.book import chapters

ROOT = Path(__file__).resolve().parents[1]

GREEK = set("alpha beta gamma delta epsilon varepsilon eta theta kappa lambda mu nu xi pi rho "
            "sigma tau phi varphi chi psi omega Gamma Delta Lambda Sigma Phi Omega Theta Pi "
            "Psi".split())
WORDS = {"text", "mathrm", "operatorname", "textrm", "mbox", "label", "tag", "textbf", "emph"}
COMMAND = re.compile(r"\\([a-zA-Z]+)")


def _braced(tex, i):
    """The content of the group opening at tex[i] == "{", and the index after it closes."""
    depth = 0
    for j in range(i, len(tex)):
        depth += {"{": 1, "}": -1}.get(tex[j], 0)
        if depth == 0:
            return tex[i + 1:j], j + 1
    return tex[i + 1:], len(tex)


def _skip_spaces(tex, i):
    while i < len(tex) and tex[i] == " ":
        i += 1
    return i


def _script(tex, i):
    """A sub- or superscript's text starting at tex[i] (after "_" or "^"), and where it ends."""
    i = _skip_spaces(tex, i)
    if i >= len(tex):
        return "", i
    if tex[i] == "{":
        return _braced(tex, i)
    m = COMMAND.match(tex, i)
    if m:
        j = _skip_spaces(tex, m.end())
        if m.group(1) in WORDS and j < len(tex) and tex[j] == "{":
            return _braced(tex, j)
        return m.group(0), m.end()
    return tex[i], i + 1


def _name(script):
    return re.sub(r"\\(text|mathrm|mathit|rm)\s*|[{}\\ ]", "", script)


def symbols(tex):
    """The symbols of a TeX expression: a letter with its subscript and a ``*`` superscript."""
    out, i, n = set(), 0, len(tex)
    while i < n:
        m = COMMAND.match(tex, i)
        if m:
            i = _skip_spaces(tex, m.end())
            if m.group(1) in WORDS:  # words, not symbols
                if i < n and tex[i] == "{":
                    i = _braced(tex, i)[1]
                continue
            if m.group(1) == "mathcal" and i < n and tex[i] == "{":
                inner, i = _braced(tex, i)
                base = "\\mathcal{" + inner + "}"
            elif m.group(1) in GREEK:
                base = "\\" + m.group(1)
            else:  # an operator or a function: \\max, \\frac, \\le
                continue
        elif tex[i].isalpha():
            j = i
            while j < n and tex[j].isalpha():
                j += 1
            word, i = tex[i:j], j
            if len(word) > 1:  # a run of letters is a word (softmax), not a product
                continue
            base = word
        else:
            i += 1
            continue
        sub = star = ""
        while i < n and tex[i] in "_^":
            op = tex[i]
            script, i = _script(tex, i + 1)
            if op == "_":
                sub = _name(script)
            elif script.strip() in ("*", "\\ast"):  # other superscripts are powers
                star = "^*"
        out.add(base + ("_" + sub if sub else "") + star)
    return out


def display_math(md):
    """The displayed equations of a markdown cell: $$ ... $$ and {math} blocks."""
    return (re.findall(r"\$\$(.+?)\$\$", md, re.S)
            + re.findall(r"```\{math\}(.*?)```", md, re.S))


def _notation_rows():
    """Per row of the notation tables, the symbols its first column defines.

    "$I^* = C/W$" defines I^*: what follows "=" is a definition, not new symbols. "$B^*(S)$"
    defines B^*(S), a different quantity from B^* (the argument is kept in its name).
    """
    rows = []
    for line in (ROOT / "book" / "notation.md").read_text().splitlines():
        if line.startswith("| $"):
            row = set()
            for piece in re.findall(r"\$(.+?)\$", line.split("|")[1]):
                head = piece.split("=")[0]
                arg = re.search(r"\([^)]*\)", head)
                row |= {sym + (arg.group(0) if arg else "")
                        for sym in symbols(re.sub(r"\([^)]*\)", "", head))}
            rows.append(row)
    return rows


KNOWN = {re.sub(r"\(.*\)$", "", s) for row in _notation_rows() for s in row}


def test_the_extractor_reads_symbols_as_the_book_writes_them():
    got = symbols(r"t \ge \max\left(\frac{2 B N_\text{act}}{n C}, \text{ms}\right) + I^* "
                  r"+ \eta_\text{mm} + \mathcal{L}_\infty + n_{kv} + x")
    assert got == {"t", "B", "N_act", "n", "C", "I^*", "\\eta_mm", "\\mathcal{L}_infty", "n_kv",
                   "x"}


def test_no_symbol_has_two_rows():
    counts = Counter(s for row in _notation_rows() for s in row)
    assert [s for s, c in counts.items() if c > 1] == []


@pytest.mark.parametrize("slug", chapters())
def test_every_displayed_symbol_is_on_the_notation_page(slug):
    # plain JSON (the compat venvs hold the library and pytest, not nbformat)
    nb = json.loads((ROOT / "book" / f"{slug}.ipynb").read_text())
    used = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for block in display_math("".join(cell["source"])):
                used |= symbols(block)
    assert sorted(used - KNOWN) == [], f"{slug}: add these to book/notation.md or rename them"


def test_the_intro_maps_every_chapter_in_its_part():
    # The map of the book (intro.md) names each chapter once, in the toc's order: a chapter the
    # map leaves out (chapter 10 once was) is a chapter a reader planning a course never sees.
    intro = (ROOT / "book" / "intro.md").read_text()
    table = intro[intro.index("## A map of the book"):]
    table = table[:table.index("```\n", table.index("{list-table}"))]
    named = re.findall(r"\{doc\}`(\w+)`", table)
    assert named == chapters()
