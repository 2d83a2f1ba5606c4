"""The PDF edition (`make pdf`): opened with poppler's pdftotext/pdfimages and checked.

Every chapter title is there and numbered, no raw TeX, MyST role or glue placeholder and no
unresolved `??` reference is left, the bibliography is printed, and the figures are embedded
(at least one image per saved figure output and per kernel-free explorer of the notebooks).
Skips when no PDF has been built, except with LLMMATH_REQUIRE_PDF=1 (`make pdf` sets it).
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
PDF = ROOT / "_build" / "latex" / "book.pdf"
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


def _chapters(flat):
    """{toc file: its text}; each chapter opens with the class's CHAPTER heading and each appendix
    with APPENDIX (the appendices are lettered: _latex/pdf_outputs.py), in toc order."""
    files = _toc_files()
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
    files = _toc_files()
    chapters = {f"book/{c}" for c in book.chapters(ROOT / "_toc.yml")}
    appendices = [p for p in files if p not in chapters and p != "book/intro"]
    assert appendices and flat.count("APPENDIX") == len(appendices)
    for i, path in enumerate(appendices):  # all of them: nine today, lettered A to I
        letter = string.ascii_uppercase[i]
        assert f"Appendix {letter}. {_squash(_title(path))}" in flat, (
            f"{path} is not appendix {letter}")


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
