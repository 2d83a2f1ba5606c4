"""The code a reader sees stands on its own (issue 11, issue 12's reader's API).

A chapter's visible code cells (no ``remove-input`` / ``remove-cell`` tag; ``hide-input`` cells
count, since a reader can open them) may use only names that visible cells above them define: a
reader must be able to follow each one knowing only what the page shows. Hidden cells are plumbing
(glue, formatting) and may import what they like. Each chapter opens with ``import llmmath as lm``
and at most one more import line.
"""

from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path

import pytest

from llmmath import book

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = [BOOK / f"{c}.ipynb" for c in book.chapters(BOOK.parent / "_toc.yml")]
HIDDEN = {"remove-input", "remove-cell"}


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names the cell binds, names it loads)."""
    bound, loaded = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, loaded


def _code_cells(path: Path):
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "code":
            yield i, set(cell.get("metadata", {}).get("tags", [])), "".join(cell["source"])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_visible_cells_use_only_visible_names(path):
    seen = set(dir(builtins))
    problems = []
    for i, tags, source in _code_cells(path):
        if tags & HIDDEN:
            continue
        bound, loaded = _names(source)
        missing = sorted(loaded - seen - bound)
        if missing:
            problems.append(f"cell {i}: {missing}")
        seen |= bound
    assert not problems, (f"{path.name}: visible code uses names "
                          f"defined only in hidden cells: {problems}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_opens_with_the_readers_api(path):
    visible = [s for _, tags, s in _code_cells(path) if not tags & HIDDEN]
    lines = [ln for ln in visible[0].splitlines() if ln.startswith(("import ", "from "))]
    assert lines[0] == "import llmmath as lm", (f"{path.name}: first visible "
                                                f"code line is {lines[0]!r}")
    assert len(lines) <= 2, f"{path.name}: {len(lines)} import lines in the opening cell"


def test_the_check_catches_a_hidden_name(tmp_path):
    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "source": ["import llmmath as lm\n"]},
        {"cell_type": "code", "metadata": {"tags": ["remove-input"]}, "source": ["secret = 1\n"]},
        {"cell_type": "code", "metadata": {}, "source": ["print(secret)\n"]},
    ]}
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(AssertionError, match="secret"):
        test_visible_cells_use_only_visible_names(path)
