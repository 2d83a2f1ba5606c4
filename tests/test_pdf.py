"""The PDF edition (`make pdf`): opened with poppler's pdftotext/pdfimages and checked.

Every chapter title is there and numbered, no raw TeX, MyST role or glue placeholder and no
unresolved `??` reference is left, the bibliography is printed, and the figures are embedded
(at least one image per saved figure output and per kernel-free explorer of the notebooks).
It reads as a book (issue 36): nothing runs off a page (LaTeX's log), exercises are numbered per
chapter as on the web, solutions are in their appendix and not after each exercise, code at 88
columns fits its box, the bibliography and the parts are titled once, the introduction is titled.
Skips when no PDF has been built, except with LLMMATH_REQUIRE_PDF=1 (`make pdf` sets it).
LLMMATH_PDF=path/book.pdf checks another build (its book.log beside it), e.g. an older one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import subprocess
from pathlib import Path

import pytest

from llmmath import book

ROOT = Path(__file__).resolve().parents[1]
PDF = Path(os.environ.get("LLMMATH_PDF", ROOT / "_build" / "latex" / "book.pdf"))
LOG = PDF.with_suffix(".log")
SOLUTIONS = "Solutions to the exercises"  # the appendix _latex/pdf_outputs.py adds
pytestmark = pytest.mark.pdf


def _toc_files():
    return re.findall(r"file:\s*(\S+)", (ROOT / "_toc.yml").read_text(encoding="utf-8"))


def _title(path):
    md = ROOT / f"{path}.md"
    if md.exists():
        sources = [md.read_text(encoding="utf-8")]
    else:
        nb = json.loads((ROOT / f"{path}.ipynb").read_text(encoding="utf-8"))
        sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    for source in sources:
        found = re.search(r"^# (.+)$", source, re.M)
        if found:
            return re.sub(r"[*_`]", "", found.group(1)).strip()
    raise AssertionError(f"{path}: no '# ' title")


def _squash(text):
    return re.sub(r"\s+", " ", text)


def _printed_files():
    """The toc files in the PDF's order, with the solutions appendix (SOLUTIONS) before the
    bibliography, where _latex/pdf_outputs.py puts it."""
    files = _toc_files()
    at = next((i for i, f in enumerate(files) if f.endswith("bibliography")), len(files))
    return files[:at] + [SOLUTIONS] + files[at:]


def _chapters(flat):
    """{toc file: its text}; each chapter opens with the class's CHAPTER heading and each appendix
    with APPENDIX (the appendices are lettered: _latex/pdf_outputs.py), in toc order."""
    files = [f for f in _printed_files() if f != "book/intro"]  # the intro is unnumbered
    starts = [m.start() for m in re.finditer(r"\b(?:CHAPTER|APPENDIX)\b", flat)]
    assert len(starts) == len(files), (f"{len(starts)} CHAPTER/APPENDIX "
                                       f"headings for {len(files)} toc files")
    starts.append(len(flat))
    return {f: flat[a:b] for f, a, b in zip(files, starts, starts[1:], strict=False)}


@pytest.fixture(scope="module")
def pdf_text():
    if not PDF.exists():
        message = f"{PDF} is missing: run `make pdf`"
        if os.environ.get("LLMMATH_REQUIRE_PDF") == "1":
            pytest.fail(message)
        pytest.skip(message)
    if not shutil.which("pdftotext"):
        pytest.fail("pdftotext is missing: scripts/ensure_tex.sh installs poppler-utils")
    out = subprocess.run(["pdftotext", "-layout", str(PDF), "-"], capture_output=True,
                         text=True, check=True).stdout
    return out


def test_every_chapter_title_is_printed_and_numbered(pdf_text):
    flat = _squash(pdf_text)
    for path in _toc_files():
        title = _squash(_title(path))
        assert title in flat, f"{path}: title {title!r} not in the PDF"
    # Numbered chapters: running heads read "Chapter N. Title".
    chapters = [f"book/{c}" for c in book.chapters(ROOT / "_toc.yml")]
    for n, path in enumerate(chapters, start=1):
        assert f"Chapter {n}. {_squash(_title(path))}" in flat, f"chapter {n} ({path}) unnumbered"


def test_appendices_are_lettered(pdf_text):
    flat = _squash(pdf_text)
    chapters = {f"book/{c}" for c in book.chapters(ROOT / "_toc.yml")}
    appendices = [p for p in _printed_files() if p not in chapters and p != "book/intro"]
    assert appendices and flat.count("APPENDIX") == len(appendices)
    for i, path in enumerate(appendices):  # all of them: ten today, lettered A to J
        letter = string.ascii_uppercase[i]
        title = path if path == SOLUTIONS else _squash(_title(path))
        assert f"Appendix {letter}. {title}" in flat, f"{path} is not appendix {letter}"


def test_no_unresolved_reference_or_raw_markup(pdf_text):
    assert "??" not in pdf_text, "an unresolved reference (??) is printed"
    # The library reference documents the glue role literally as {glue:}`name`; nothing else may.
    glue = [m for m in re.findall(r"\{glue[^}]*\}`?[\w-]*", pdf_text) if not m.endswith("`name")
            and m != "{glue:}"]
    assert not glue, f"glue placeholders printed: {glue[:5]}"
    # The library reference (book/api) quotes roles in docstrings; every other page must not.
    for path, text in _chapters(_squash(pdf_text)).items():
        if path == "book/api":
            continue
        for raw in ("{numref}", "{eq}", "{cite}", "{doc}", "{ref}", "\\frac", "\\sphinx", "$$",
                    "\\begin{", "<FrameSlider", "_explorer: "):
            assert raw not in text, f"{path}: raw markup {raw!r} printed"


def test_equations_are_numbered(pdf_text):
    # Chapter 3's decode-time bound is equation (3.1) in the HTML edition too.
    assert re.search(r"\(3\.1\)", pdf_text)


def test_bibliography_is_printed(pdf_text):
    tail = pdf_text[pdf_text.rfind("BIBLIOGRAPHY"):]
    assert "BIBLIOGRAPHY" in pdf_text and "Pope" in tail, "bibliography missing or empty"


def test_bibliography_is_titled_once_with_no_blank_page(pdf_text):
    # Sphinx's thebibliography opened a second chapter: a blank page with only a running head,
    # then "BIBLIOGRAPHY" again under "APPENDIX I BIBLIOGRAPHY".
    headings = re.findall(r"^\s*BIBLIOGRAPHY\s*$", pdf_text, re.M)
    assert len(headings) == 1, f"the bibliography is titled {len(headings)} times"
    pages = pdf_text.split("\f")
    first = next(i for i, p in enumerate(pages) if re.search(r"^\s*BIBLIOGRAPHY\s*$", p, re.M))
    assert re.search(r"\b(?:19|20)\d\d[a-z]?\b", pages[first]), (
        "the bibliography's first page has no entry: its list starts on a later page")


def test_parts_and_introduction_are_titled_once(pdf_text):
    flat = _squash(pdf_text)
    # a part page reads "Part I" over its caption, the contents "I Foundations" (a page's
    # own sections, such as "H.1 Part I: Foundations", are not parts)
    twice = re.findall(r"^\s*(?:[IVX]+\s+)?Part [IVX]+:.*", pdf_text, re.M)
    assert not twice, f"a part is titled twice: {twice[:2]}"
    contents = flat[flat.find("CONTENTS"):flat.find("CHAPTER")]
    assert re.search(r"Introduction \d+ I Foundations", contents), (
        "the introduction is not in the table of contents before Part I")
    assert re.search(r"^\s*INTRODUCTION\s*$", pdf_text, re.M), "the introduction has no heading"


def test_title_page_has_subtitle_edition_and_licence(pdf_text):
    pages = pdf_text.split("\f")
    front = _squash(" ".join(pages[:2]))
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    subtitle = re.search(r'^title:\s*"[^:]*: ([^"]+)"', cff, re.M).group(1)
    version = re.search(r'^version:\s*"?([\w.]+)', cff, re.M).group(1)
    assert subtitle.lower() in front.lower(), "no subtitle on the title page"
    assert f"Edition {version}" in front, "no edition line on the title page"
    assert "CC BY 4.0" in front and "MIT" in front, "no licence on the title page's back"


def _overflows(log_text, tolerance_pt=5.0):
    """LaTeX's own reports of material taller than the page: a table or a signature that cannot
    break ("Overfull \\vbox ... while \\output is active") or a float bigger than the page.
    Boxes a few points over are LaTeX's usual spacing slack, not lost content."""
    found = [f"Float too large by {m}pt" for m in re.findall(
        r"Float too large for page by ([\d.]+)pt", log_text)]
    found += [f"Overfull \\vbox {m}pt" for m in re.findall(
        r"Overfull \\vbox \(([\d.]+)pt too high\)", log_text) if float(m) > tolerance_pt]
    return found


def test_nothing_runs_off_a_page():
    # "The book in one table" (13.8) was a tabulary: it ran over the footer and lost rows.
    # Tall tables are longtables now (pdf_outputs.LongTables) and break across pages.
    if not LOG.exists():
        pytest.fail(f"{LOG} is missing: run `make pdf`")
    bad = _overflows(LOG.read_text(encoding="utf-8", errors="replace"))
    assert not bad, f"material runs off its page (LaTeX log): {bad}"


def test_long_tables_continue_without_a_missing_table_number(pdf_text):
    # The tables carry no caption, so Sphinx's "Table 13.1 – continued from previous page" named
    # a table number printed nowhere; the head says only that the table continues.
    flat = _squash(pdf_text)
    assert "continued from the previous page" in flat, "no table breaks across pages"
    named = re.findall(r"Table \S+ \S continued from", flat)
    assert not named, f"a continued table names a number it never printed: {named[:2]}"


def test_code_at_88_columns_fits_its_box():
    # Chapter cells are at most 88 columns (tests/test_page_text.py): at the PDF's code size they
    # must fit the narrowest code box, or they wrap mid-identifier with a hook ("H100↪SXM").
    if not LOG.exists():
        pytest.fail(f"{LOG} is missing: run `make pdf`")
    found = re.search(r"ROOFLINE code: 88 columns take ([\d.]+)pt of ([\d.]+)pt",
                      LOG.read_text(encoding="utf-8", errors="replace"))
    assert found, "no code-width probe in the log (_latex/roofline.sty)"
    columns, box = map(float, found.groups())
    assert columns <= box, f"88 columns of code take {columns}pt, the code box is {box}pt"


def _directives(name):
    n = 0
    for path in _toc_files():
        for ext in (".ipynb", ".md"):
            if (ROOT / f"{path}{ext}").exists():
                text = (ROOT / f"{path}{ext}").read_text(encoding="utf-8")
                n += len(re.findall(r"`{3,}\{" + name + r"\}", text))
    return n


def _exercises_per_chapter():
    counts = {}
    for n, slug in enumerate(book.chapters(ROOT / "_toc.yml"), start=1):
        nb = json.loads((ROOT / f"book/{slug}.ipynb").read_text(encoding="utf-8"))
        text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        counts[n] = len(re.findall(r"`{3,}\{exercise\}", text))
    return counts


def test_exercises_are_numbered_per_chapter(pdf_text):
    # As on the web: Exercise 3.1, not 3.9.1 (the section of the exercises crept in).
    flat = _squash(pdf_text)
    deep = sorted(set(re.findall(r"Exercise \d+\.\d+\.\d+", flat)))
    assert not deep, f"exercises numbered per section: {deep[:5]}"
    for chapter, count in _exercises_per_chapter().items():
        for k in range(1, count + 1):
            assert f"Exercise {chapter}.{k} " in flat, f"Exercise {chapter}.{k} is not printed"


def test_solutions_are_in_their_appendix_not_after_the_exercises(pdf_text):
    # The reader's PDF is not an answer key: every solution is in the appendix, none in a chapter.
    from llmmath.exercises import UNANSWERED

    flat = _squash(pdf_text)
    start = flat.find(SOLUTIONS.upper())
    assert start > 0, "no solutions appendix"
    body, appendix = flat[:start], flat[start:flat.rfind("BIBLIOGRAPHY")]
    inline = re.findall(r"Solution to Exercise [\d.]+", body)
    assert not inline, f"{len(inline)} solutions printed in the chapters: {inline[:3]}"
    solutions = _directives("solution")
    assert solutions >= 6 * len(_exercises_per_chapter())
    # a homework exercise's solution is the instructor kit's: the PDF, like the site, prints a
    # note in its place (_ext/homework_solutions.py)
    from scripts.reader_edition import homework_labels

    homework = len(homework_labels())
    printed = re.findall(r"Solution to Exercise \d+", appendix)  # also "Exercise 3" of "3.1"
    assert len(printed) == solutions - homework, (
        f"{len(printed)} solutions printed, {solutions} written, {homework} of them homework")
    assert _squash(UNANSWERED) not in flat, "a check cell's 'replace None' prompt is printed"


def _expected_images():
    n = 0
    for path in _toc_files():
        if not (ROOT / f"{path}.ipynb").exists():
            continue
        nb = json.loads((ROOT / f"{path}.ipynb").read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                html = "".join(data.get("text/html", ""))
                n += "image/png" in data or 'class="llm-frames' in html
    return n


def test_figures_are_embedded(pdf_text):
    rows = subprocess.run(["pdfimages", "-list", str(PDF)], capture_output=True, text=True,
                          check=True).stdout.splitlines()[2:]
    listing = [r for r in rows if r.split()[2] == "image"]  # not the alpha masks ("smask")
    expected = _expected_images()
    assert expected >= 30, f"only {expected} figure outputs found in the notebooks"
    assert len(listing) >= expected, f"{len(listing)} images embedded, {expected} expected"


def test_a_no_break_space_keeps_a_table_word_whole():
    # the one-table's chapter cells read "Ch.\u00a013": sized as one 6-character word, not as
    # "Ch." and "13" (a 3-character column clipped "Ch. 13" to "Ch. 1" in the PDF)
    import sys

    from docutils import nodes

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_latex"))
    from pdf_outputs import _cell_chars, column_widths

    entry = nodes.entry("", nodes.paragraph(text="Ch.\u00a013"))
    assert _cell_chars(entry) == (6, 6)
    wide = nodes.entry("", nodes.paragraph(text="a calibrated estimate (not a bound) " * 3))
    widths = column_widths([[_cell_chars(entry), _cell_chars(wide)]] * 13, 80)
    assert widths[0] >= 6 * 1.15 + 3 - 1, widths
