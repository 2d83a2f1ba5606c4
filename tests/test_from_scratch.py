"""Each chapter's from-scratch cell (tag ``from-scratch``): one visible cell of at most 15 lines of
plain Python (no ``llmmath``) that computes the chapter's core quantity (CONTRIBUTING.md, the
chapter standard).

The cells are found by their tag in every notebook; what each must agree with lives in its
chapter's claims file (``test_from_scratch_cell_agrees_with_the_library`` in
``tests/test_claims_<chapter>.py``, which runs the cell alone with ``claims.from_scratch``). A
tagged cell whose claims file has no such check fails here.
"""

import re
from pathlib import Path

import pytest
from claims import BOOK, FROM_SCRATCH_TAG, chapter_of, tagged_cells

MAX_LINES = 15
HIDING_TAGS = {"remove-input", "hide-input", "remove-cell", "hide-cell"}
TESTS = Path(__file__).resolve().parent
CHAPTERS = sorted(p.stem for p in BOOK.glob("*.ipynb") if tagged_cells(p))
CHECKED = sorted(chapter_of(p) for p in TESTS.glob("test_claims_*.py")
                 if re.search(r"^def test_from_scratch_cell_agrees_with_the_library\(",
                              p.read_text(encoding="utf-8"), re.M))


def test_every_cell_has_a_check():
    assert len(CHAPTERS) >= 13 and CHAPTERS == CHECKED, (
        "a from-scratch cell without a check in its claims file, or a check without its cell")


@pytest.mark.parametrize("stem", CHAPTERS)
def test_cell_is_short_plain_and_visible(stem):
    cells = tagged_cells(BOOK / f"{stem}.ipynb")
    assert len(cells) == 1, f"{stem}: exactly one cell is tagged {FROM_SCRATCH_TAG!r}"
    cell = cells[0]
    source = "".join(cell["source"])
    assert cell["cell_type"] == "code"
    assert len(source.strip().splitlines()) <= MAX_LINES
    assert "llmmath" not in source and "import" not in source, "plain Python: no imports"
    assert not HIDING_TAGS & set(cell["metadata"].get("tags", [])), "the reader must see it"
