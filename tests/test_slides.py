"""The teaching kit's slides, figure export and cheat sheet (`make slides`, `make figures`).

Deck tests read `_build/slides/` and skip when it is absent, unless LLMMATH_REQUIRE_SLIDES=1 (set
by `make slides` for its test step); figure-export tests (names contain `figure_export`) read
`_build/figures/` likewise with LLMMATH_REQUIRE_FIGURES=1 (`make figures`). The chapter list
always comes from _toc.yml. The cheat-sheet tests need no build, except the one-page print check,
which prints the built site's page with Chromium when both are present.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
from scripts import reader_edition as rd  # noqa: E402

SLIDES = ROOT / "_build" / "slides"
FIGURES = ROOT / "_build" / "figures"
CHEAT = ROOT / "book" / "cheat_sheet.ipynb"
# the chapters: the notebooks of _toc.yml's numbered parts (their numbers come from the build)
CHAPTERS = [doc for doc, numbered in rd.toc_pages(ROOT)
            if numbered and (ROOT / f"{doc}.ipynb").exists()]
IDS = [Path(d).name for d in CHAPTERS]


def _book() -> rd.Book:
    """The book as `make book` resolved it (numbers, titles, citations); skips without a build."""
    try:
        return _load_book()
    except rd.NotBuilt as exc:
        if os.environ.get("LLMMATH_REQUIRE_SLIDES") == "1":
            raise
        pytest.skip(str(exc))


@functools.cache
def _load_book() -> rd.Book:
    return rd.load_book(ROOT)


def _need(folder: Path, env: str, make: str) -> None:
    if not folder.exists():
        if os.environ.get(env) == "1":
            pytest.fail(f"{folder} is missing although {env}=1: `{make}` did not build it")
        pytest.skip(f"{folder.relative_to(ROOT)} not built (run `{make}`)")


def _nb(doc: str) -> dict:
    return json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))


def _figure_labels(nb: dict) -> list[str]:
    return [c["metadata"]["mystnb"]["figure"]["name"] for c in nb["cells"]
            if c["cell_type"] == "code"
            and c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")]


class _Refs(HTMLParser):
    """Every URL a page loads: src/href of scripts, styles, images, frames, media; text."""

    def __init__(self):
        super().__init__()
        self.loads: list[tuple[str, str]] = []
        self.links: list[str] = []
        self.imgs: list[dict] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "video", "audio", "embed") and a.get("src"):
            self.loads.append((tag, a["src"]))
        if tag == "link" and a.get("href"):
            self.loads.append((tag, a["href"]))
        if tag == "object" and a.get("data"):
            self.loads.append((tag, a["data"]))
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img":
            self.imgs.append(a)
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def _plain(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


# --------------------------------------------------------------------------------------------
# Decks


def test_chapters_come_from_the_toc():
    assert CHAPTERS, "_toc.yml lists no numbered chapter notebooks"


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_every_chapter_has_a_deck_with_its_parts(doc):
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    number = dict(_book().docs)[doc]
    deck = SLIDES / f"{Path(doc).name}.html"
    assert deck.exists(), f"no deck for {doc} (chapter {number} of _toc.yml)"
    text = _plain(" ".join(_parse(deck).text))
    title = _book().titles[doc]
    assert title in text and f"Chapter {number}" in text
    for part in ("Learning goals", "Takeaways"):
        assert part in text, f"{deck.name}: no {part!r} slide"
    n_q = len(re.findall(r'<section class="inclass', deck.read_text(encoding="utf-8")))
    assert 2 <= n_q <= 3, f"{deck.name}: {n_q} in-class question slides (want 2 or 3)"
    index = _parse(SLIDES / "index.html")
    assert deck.name in index.links, f"index.html does not link {deck.name}"


def test_no_deck_for_a_page_that_is_not_a_chapter():
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    decks = {p.stem for p in SLIDES.glob("*.html")} - {"index"}
    assert decks == set(IDS)


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_deck_figures_exist_and_are_referenced(doc):
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    stem = Path(doc).name
    deck = SLIDES / f"{stem}.html"
    refs = _parse(deck)
    srcs = {i.get("src") for i in refs.imgs}
    labels = _figure_labels(_nb(doc))
    assert labels, f"{doc} has no labelled figure"
    for label in labels:
        src = f"{stem}/{label}.png"
        assert src in srcs, f"{deck.name}: figure {label} is not on any slide"
        png = SLIDES / src
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{src} missing"
        assert png.stat().st_size > 5000, f"{src} is suspiciously small"
    for img in refs.imgs:
        assert len(img.get("alt", "")) > 20, f"{deck.name}: {img.get('src')} has no alt text"


@pytest.mark.parametrize("page", ["index"] + IDS)
def test_a_deck_loads_nothing_from_the_network(page):
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    path = SLIDES / f"{page}.html"
    body = path.read_text(encoding="utf-8")
    for tag, url in _parse(path).loads:
        assert not re.match(r"^([a-z][a-z0-9+.-]*:|//)", url, re.I), (
            f"{path.name}: <{tag}> loads {url} (decks must work offline, from file://)")
        assert (SLIDES / url.split("?")[0].split("#")[0]).exists(), f"{path.name}: {url} missing"
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", body), f"{path.name}: CSS url() online"
    assert not re.search(r"""import\s*\(?\s*['"]https?:""", body)


def test_deck_assets_fetch_nothing_online():
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    for css in (SLIDES / "_assets").rglob("*.css"):
        text = css.read_text(encoding="utf-8")
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # licence banners name web pages
        assert not re.search(r"(url\(|@import)\s*['\"]?(https?:)?//", text), css.name
    cfg = (SLIDES / f"{IDS[0]}.html").read_text(encoding="utf-8")
    assert "RevealMath" not in cfg, "the math plugin fetches MathJax/KaTeX from a CDN by default"


def _words(text: str) -> str:
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|<[^>]+>|[*_`\\]", " ", text, flags=re.S)
    return _plain(text)


def _plan() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "scripts" / "slide_plan.yml").read_text(encoding="utf-8"))


def _solutions(src: str) -> list[tuple[str, str]]:
    """(exercise label, body) of each solution block of a markdown cell."""
    return [(d.arg.strip(), d.body) for d in map(rd.directive, rd.parse(src))
            if d and d.name == "solution"]


def _solution_phrases(doc: str) -> list[str]:
    """Runs of plain words (>= 30 characters) that only the solution blocks of the exercises the
    deck does not ask in class contain (not the student-visible text: a heading a solution
    repeats is no leak)."""
    book = _book()
    nb = _nb(doc)
    ctx = rd.Context(book, doc, rd.glue_values(nb))
    student = rd.Context(book, doc, rd.glue_values(nb), student=True)
    asked = {q for q in _plan()[Path(doc).name]["questions"] if isinstance(q, str)}  # revealed
    phrases, visible = [], []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        visible.append(_words(rd.transform_markdown(rd._source(cell), student)))
        for label, body in _solutions(rd._source(cell)):
            if label in asked:
                continue
            text = _words(rd.transform_markdown(body, ctx))
            phrases += [_plain(r) for r in re.findall(r"[A-Za-z][A-Za-z ,;'-]{29,}", text)]
    seen = " ".join(visible)
    return [p for p in phrases if len(p) >= 30 and p not in seen]


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_no_solution_text_in_a_deck(doc):
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    phrases = _solution_phrases(doc)
    assert len(phrases) >= 5, f"{doc}: found too few solution phrases to make this test mean much"
    deck = SLIDES / f"{Path(doc).name}.html"
    text = _plain(html.unescape(" ".join(_parse(deck).text)))
    leaked = [p for p in phrases if p in text]
    assert not leaked, f"{deck.name} shows solution text: {leaked[:3]}"
    assert "Solution to" not in text and 'class="solution' not in deck.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Decks as lectures: slide count, worked example, in-class questions, notes, equations, links

# A 75-minute lecture at about 1.5 minutes a slide, less the time of the in-class questions (about
# 5 minutes each) and of the worked example at the board: at least 32 slides.
LECTURE_SLIDES = 32
SECTION = re.compile(r'<section(?: class="([^"]*)")?>(.*?)</section>', re.S)
GLUE_SPAN = re.compile(r'<span class="glue" data-glue="([^"]+)">(.*?)</span>', re.S)
NOTES = re.compile(r'<aside class="notes">(.*?)</aside>', re.S)


def _slides(stem: str) -> list[tuple[str, str]]:
    """(class, inner HTML) of every slide of a deck."""
    return [(m.group(1) or "", m.group(2))
            for m in SECTION.finditer((SLIDES / f"{stem}.html").read_text(encoding="utf-8"))]


def _shown(glue: dict, name: str) -> str:
    """A glued value as the page shows it: its text, unescaped (worked by hand from the bundle)."""
    return html.unescape(rd._text(glue[name].get("text/plain", ""))).strip()


def _span_text(fragment: str) -> str:
    return _plain(html.unescape(re.sub(r"<[^>]+>", "", fragment).replace("\\", "")))


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_a_deck_is_a_lecture(doc):
    """A 75-minute lecture: at least LECTURE_SLIDES slides, most built up by fragments."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    slides = _slides(Path(doc).name)
    assert len(slides) >= LECTURE_SLIDES, f"{doc}: {len(slides)} slides < {LECTURE_SLIDES}"
    steps = sum(inner.count('fragment') for _, inner in slides)
    assert steps >= len(slides), f"{doc}: {steps} fragment steps on {len(slides)} slides"


def _hand_expected(doc: str) -> tuple[list[str], list[str]]:
    """(glue names, printed lines) of the worked example's cells as the plan names them: a
    markdown cell's paragraph that opens with **By hand (else its first paragraph), a code
    cell's printed lines."""
    cells = {c.get("id"): c for c in _nb(doc)["cells"]}
    names, lines = [], []
    for cid in _plan()[Path(doc).name]["hand"]:
        cell = cells[cid]
        if cell["cell_type"] == "code":
            out = "".join(rd._text(o.get("text", "")) for o in cell.get("outputs", [])
                          if o.get("output_type") == "stream")
            lines += [x.strip() for ln in out.splitlines() for x in ln.split("; ") if x.strip()]
            continue
        paras = [p for p in re.split(r"\n\s*\n", rd._source(cell))
                 if p.strip() and not p.lstrip().startswith(("#", "$$", "```", ":::"))]
        para = next((p for p in paras if p.lstrip().startswith("**By hand")), paras[0])
        names += [n.strip() for n in GLUE_USE.findall(para)]
    return names, lines


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_worked_example_steps_carry_the_notebooks_numbers(doc):
    """Every number the chapter's worked example glues is on the deck's worked-example slides,
    equal to the value stored in the notebook, and every printed line of its code; one step a
    fragment."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    glue = rd.glue_values(_nb(doc))
    hand = [inner for cls, inner in _slides(Path(doc).name) if cls.startswith("hand")]
    assert hand, f"{doc}: no worked-example slide"
    body = "".join(hand)
    shown = {}
    for name, text in GLUE_SPAN.findall(body):
        shown.setdefault(name, set()).add(_span_text(text))
    names, lines = _hand_expected(doc)
    assert len(names) + len(lines) >= 2, f"{doc}: the worked example has too few numbers"
    for name in names:
        assert name in shown, f"{doc}: the worked example's {name!r} is not on its slides"
        assert shown[name] == {_shown(glue, name)}, (name, shown[name], _shown(glue, name))
    text = _span_text(body)
    for line in lines:
        assert _plain(line) in text, f"{doc}: printed line {line!r} is not on the slides"
    steps = re.findall(r"<li( class=\"fragment\")?>", body)
    assert len(steps) >= 3 and all(steps), f"{doc}: worked example steps not one per fragment"


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_every_glued_number_on_a_deck_is_the_notebooks(doc):
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    glue = rd.glue_values(_nb(doc))
    spans = GLUE_SPAN.findall((SLIDES / f"{Path(doc).name}.html").read_text(encoding="utf-8"))
    assert len(spans) >= 20, f"{doc}: only {len(spans)} glued numbers on the deck"
    wrong = [(n, _span_text(t)) for n, t in spans if _span_text(t) != _shown(glue, n)]
    assert not wrong, f"{doc}: numbers that are not the notebook's: {wrong[:3]}"


def _guide_assigned() -> set[str]:
    """Exercises the course guide sets as homework, for the exam or as a project."""
    guide = (ROOT / "book" / "course_guide.md").read_text(encoding="utf-8")
    out = set()
    for table in re.findall(r"(?:^\|.*\n)+", guide, re.M):
        rows = [[c.strip() for c in r.strip().strip("|").split("|")] for r in table.splitlines()]
        keep = [i for i, h in enumerate(rows[0]) if h in ("homework", "exam-suitable")]
        for row in rows[2:]:
            for i in keep:
                out |= set(re.findall(r"\{ref\}`([\w-]+)`", row[i] if i < len(row) else ""))
    projects = re.search(r"Each open-ended exercise(.*?)project", guide, re.S)
    return out | set(re.findall(r"\{ref\}`([\w-]+)`", projects.group(1) if projects else ""))


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_in_class_questions_reveal_their_answer_on_a_fragment(doc):
    """Two or three questions, each answered on a fragment that carries the notebook's glued
    values; never an exercise the course assigns as homework, exam or project."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    glue = rd.glue_values(_nb(doc))
    asked = _plan()[Path(doc).name]["questions"]
    taken = [q for q in asked if isinstance(q, str) and q in _guide_assigned()]
    assert not taken, f"{doc}: in-class questions the course assigns: {taken}"
    questions = [inner for cls, inner in _slides(Path(doc).name) if cls.startswith("inclass")]
    assert 2 <= len(questions) <= 3
    for inner in questions:
        m = re.search(r'<div class="answer fragment">(.*?)</div>\s*(<aside|$)', inner, re.S)
        assert m, f"{doc}: a question whose answer is not on a fragment"
        spans = GLUE_SPAN.findall(m.group(1))
        assert spans, f"{doc}: an answer with no glued value"
        assert all(_span_text(t) == _shown(glue, n) for n, t in spans)
        prompt = inner[:inner.index('<div class="answer')]
        assert len(_span_text(prompt)) > 40, f"{doc}: a question with no prompt"


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_speaker_notes_say_what_to_say(doc):
    """Every content slide has notes, from the chapter's prose: a figure's are more than its
    alt text."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    for cls, inner in _slides(Path(doc).name):
        if cls.startswith(("title-slide", "end")):
            continue
        notes = NOTES.search(inner)
        assert notes and len(notes.group(1)) > 40, f"{doc}: a {cls!r} slide without notes"
        text = html.unescape(notes.group(1))
        for alt in re.findall(r'<img [^>]*alt="([^"]*)"', inner):
            assert len(text.replace(html.unescape(alt), "").strip()) > 80, (
                f"{doc}: a figure's notes are only its alt text")


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_no_slide_holds_only_an_equation(doc):
    """Each equation comes with a sentence (what it means, or its lead), and is built up: a
    fragment per line, all of an aligned block's lines in turn."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    builds = 0
    for _cls, inner in _slides(Path(doc).name):
        if '<div class="math' not in inner:
            continue
        words = re.sub(r'<div class="math[^"]*"[^>]*>.*?</div>|<h3>.*?</h3>|<aside.*?</aside>',
                       " ", inner, flags=re.S)
        assert len(_span_text(words)) >= 25, f"{doc}: a slide with only an equation: {inner[:200]}"
        blocks = re.findall(r'<div class="math ([^"]*)"', inner)
        assert blocks and all("fragment" in b for b in blocks), f"{doc}: equation not built"
        builds += len(blocks) > 1
    aligned = sum(c["source"].count("begin{aligned}") if isinstance(c["source"], str)
                  else "".join(c["source"]).count("begin{aligned}")
                  for c in _nb(doc)["cells"] if c["cell_type"] == "markdown")
    assert builds >= min(aligned, 1), f"{doc}: no equation built line by line"


@pytest.mark.parametrize("page", ["index"] + IDS)
def test_every_link_on_a_deck_resolves(page):
    """Every link of the index and the decks opens a file that `make slides` built (file://)."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    path = SLIDES / f"{page}.html"
    links = _parse(path).links
    if page == "index":
        assert len(links) >= len(IDS)
    for href in links:
        if href.startswith("#"):
            continue
        assert not re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I), f"{page}: {href} leaves the folder"
        target = (path.parent / href.split("#")[0]).resolve()
        assert target.is_file(), f"{page}.html links {href}, which does not exist"


# --------------------------------------------------------------------------------------------
# Figure export (`make figures`)


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_figure_export_every_figure_as_svg_and_png(doc):
    _need(FIGURES, "LLMMATH_REQUIRE_FIGURES", "make figures")
    stem = Path(doc).name
    labels = _figure_labels(_nb(doc))
    for label in labels:
        svg, png = FIGURES / stem / f"{label}.svg", FIGURES / stem / f"{label}.png"
        assert svg.exists() and png.exists(), f"{stem}/{label}: SVG or PNG missing"
        head = svg.read_text(encoding="utf-8")
        assert "<svg" in head and head.count("<path") > 20, f"{svg.name}: not a real drawing"
        assert svg.stat().st_size > 10_000, f"{svg.name} is suspiciously small"
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000, png.name
        width = int.from_bytes(data[16:20], "big")
        assert width >= 800, f"{png.name}: {width} px wide is too coarse for a slide"
    extra = {p.stem for p in (FIGURES / stem).glob("*.svg")} - set(labels)
    assert not extra, f"{stem}: exported figures the chapter no longer has: {sorted(extra)}"


def test_figure_export_index_lists_every_figure():
    _need(FIGURES, "LLMMATH_REQUIRE_FIGURES", "make figures")
    md = (FIGURES / "index.md").read_text(encoding="utf-8")
    page = (FIGURES / "index.html").read_text(encoding="utf-8")
    for doc in CHAPTERS:
        for label in _figure_labels(_nb(doc)):
            assert f"`{label}`" in md and f"{Path(doc).name}/{label}.svg" in page, label
    assert "{glue" not in md and "{cite" not in md, "unresolved MyST in the figure index"


# --------------------------------------------------------------------------------------------
# The cheat sheet


def _catalogue_name_parts() -> set[str]:
    import llmmath as lm

    names = [c.name for c in lm.chips.all_chips()] + [m.name for m in lm.models.all_models()]
    return {p for n in names for p in re.split(r"[-\s]", n) if p}


def test_cheat_sheet_types_no_number():
    """Every number in the cheat sheet's prose is glued: outside math (formulas) and roles, a
    token that starts with a digit may only be part of a catalogue name (the "70B" of "Llama 3
    70B", the "100" of "H100"). Its tables are code outputs (library values)."""
    nb = json.loads(CHEAT.read_text(encoding="utf-8"))
    allowed = _catalogue_name_parts()
    bad = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = rd._source(cell)
        text = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", " ", text, flags=re.S)
        text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", text)
        for token in re.findall(r"[\w.,%]+", text):
            token = token.strip(".,")
            if token[:1].isdigit() and token not in allowed:
                bad.append(token)
    assert not bad, f"typed numbers in the cheat sheet (glue them): {bad}"


def test_cheat_sheet_glues_resolve_and_tables_come_from_code():
    nb = json.loads(CHEAT.read_text(encoding="utf-8"))
    values = rd.glue_values(nb)
    md = "\n".join(rd._source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    used = set(re.findall(r"\{glue(?::\w*)?\}`([\w]+)", md))
    assert len(used) >= 10 and used <= set(values), sorted(used - set(values))
    tables = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if "|---" in "".join(o.get("data", {}).get("text/markdown", ""))]
    assert len(tables) >= 2, "the chip and model tables should be code outputs"


def test_cheat_sheet_is_in_the_appendices_and_linked_from_the_course_guide():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "book/notation\n      - file: book/cheat_sheet" in toc, "after the notation page"
    guide = (ROOT / "book" / "course_guide.md").read_text(encoding="utf-8")
    assert "{doc}`cheat_sheet`" in guide


def test_cheat_sheet_prints_on_one_page():
    """Printed from the built site by Chromium on A4 and on US Letter: one page each."""
    page = ROOT / "_build" / "html" / "book" / "cheat_sheet.html"
    browser = shutil.which("chromium") or shutil.which("google-chrome")
    if not page.exists() or browser is None:
        pytest.skip("needs the built site (make book) and Chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser, args=["--no-sandbox"])
        try:
            tab = b.new_page()
            tab.route(re.compile(r"^https?://"), lambda route: route.abort())
            tab.goto(page.as_uri(), wait_until="load")
            # MathJax typesets after `load`: wait until every formula is typeset
            tab.wait_for_function("() => document.querySelectorAll('mjx-container').length >= "
                                  "document.querySelectorAll('.math').length", timeout=30_000)
            tab.wait_for_timeout(300)
            tab.emulate_media(media="print")
            for paper in ("A4", "Letter"):
                pdf = tab.pdf(format=paper, print_background=False)
                pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
                assert pages == 1, f"the cheat sheet prints on {pages} {paper} pages"
        finally:
            b.close()


def test_decks_render_offline_in_a_browser():
    """Every deck opened from file:// in Chromium with the network cut: no request leaves the
    folder, every formula typesets without error, every image loads, no script error."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    browser = shutil.which("chromium") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("needs Chromium (scripts/ensure_chromium.sh)")
    sync_api = pytest.importorskip("playwright.sync_api")
    problems = []
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser, args=["--no-sandbox"])
        try:
            tab = b.new_page(viewport={"width": 1280, "height": 800})
            online: list[str] = []
            tab.route(re.compile(r"^(?!file:)"), lambda r: (online.append(r.request.url),
                                                            r.abort()))
            errors: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            for stem in IDS:
                online.clear()
                errors.clear()
                tab.goto((SLIDES / f"{stem}.html").as_uri(), wait_until="load")
                tab.wait_for_function("() => window.MathJax && MathJax.startup && "
                                      "MathJax.startup.promise", timeout=30_000)
                tab.evaluate("() => MathJax.startup.promise")
                state = tab.evaluate("""() => ({
                    slides: Reveal.getTotalSlides(),
                    math: document.querySelectorAll('mjx-container').length,
                    merror: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
                    broken: [...document.images].filter(i => !i.complete || !i.naturalWidth)
                                                .map(i => i.src)})""")
                if online or errors or state["merror"] or state["broken"] or not state["math"]:
                    problems.append((stem, online[:3], errors[:3], state))
        finally:
            b.close()
    assert not problems, problems


GLUE_USE = re.compile(r"\{glue(?::\w*)?\}`([^`:]+)(?::[^`]*)?`")


@functools.cache
def _answer_values() -> dict[str, set[str]]:
    """Per notebook page: the values only its solutions show (glued there and nowhere in the
    page's public text; at least three digits, so "8" or "64" are not taken for answers), as
    tests/test_student_edition.py defines them."""
    out = {}
    for doc, _ in rd.toc_pages(ROOT):
        if not (ROOT / f"{doc}.ipynb").exists() or doc == "book/cheat_sheet":
            continue
        nb = _nb(doc)
        glue = rd.glue_values(nb)
        cells = [rd._source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
        public = "\n".join(rd.strip_solutions(c) for c in cells)
        public_names = {n.strip() for n in GLUE_USE.findall(public)}

        def shown(name, glue=glue):
            return rd._text(glue[name].get("text/plain", "")).strip()
        public_text = " ".join(public.split()) + " " + " ".join(
            shown(n) for n in public_names if n in glue)
        values = set()
        for body in (s for c in cells for s in rd.solution_bodies(c)):
            for name in (n.strip() for n in GLUE_USE.findall(body)):
                if name in public_names or name not in glue:
                    continue
                v = shown(name)
                if sum(ch.isdigit() for ch in v) >= 3 and v not in public_text:
                    values.add(v)
        out[doc] = values
    return out


def test_cheat_sheet_gives_away_no_exercise_answer():
    """The student edition serves the cheat sheet too: it must not print a value that only a
    chapter's (or the exam bank's) solutions show, such as an exercise's computed answer."""
    nb = json.loads(CHEAT.read_text(encoding="utf-8"))
    ctx = rd.Context(_book(), "book/cheat_sheet", rd.glue_values(nb))
    shown = [rd.transform_markdown(rd._source(c), ctx) for c in nb["cells"]
             if c["cell_type"] == "markdown"]
    shown += ["".join(o.get("data", {}).get("text/markdown", "")) for c in nb["cells"]
              for o in c.get("outputs", [])]
    text = " ".join(" ".join(shown).split())
    answers = _answer_values()
    assert sum(map(len, answers.values())) >= 50, "too few answer values found to mean much"
    # a datasheet figure the catalogue appendix prints for everyone is a given, not an answer
    # (the H200's 141 GB of HBM is also Llama 3 70B's bf16 weights, an answer in chapter 11)
    catalogue = (ROOT / "book" / "appendix_catalogues.ipynb").read_text(encoding="utf-8")
    leaked = {doc: sorted(v for v in vals
                          if re.search(r"(?<![\d.,])" + re.escape(v) + r"(?!\d|[.,]\d)", text)
                          and f"| {v} |" not in catalogue)
              for doc, vals in answers.items()}
    leaked = {d: v for d, v in leaked.items() if v}
    assert not leaked, f"the cheat sheet prints exercise answers: {leaked}"


@pytest.mark.parametrize("doc", CHAPTERS, ids=IDS)
def test_a_deck_reveals_no_answer_but_its_in_class_ones(doc):
    """No value that only the chapter's solutions show (as test_student_edition.py defines them:
    glued in a solution and nowhere in the page's public text) is on the deck, except the
    answers of the exercises it asks in class. A homework answer the chapter's body prints
    is the body's leak (the student edition's leak scan), not the deck's."""
    _need(SLIDES, "LLMMATH_REQUIRE_SLIDES", "make slides")
    nb = _nb(doc)
    glue = rd.glue_values(nb)
    asked = {q for q in _plan()[Path(doc).name]["questions"] if isinstance(q, str)}
    revealed = {_shown(glue, n.strip()) for c in nb["cells"] if c["cell_type"] == "markdown"
                for label, body in _solutions(rd._source(c)) if label in asked
                for n in GLUE_USE.findall(body) if n.strip() in glue}
    alts = " ".join(c["metadata"]["mystnb"].get("image", {}).get("alt", "") for c in nb["cells"]
                    if c.get("metadata", {}).get("mystnb", {}).get("figure"))
    answers = {v for v in _answer_values()[doc] - revealed if v not in alts}  # alt text is public
    assert len(answers) >= 3, f"{doc}: too few answer values to make this test mean much"
    text = _span_text((SLIDES / f"{Path(doc).name}.html").read_text(encoding="utf-8"))
    hits = sorted(v for v in answers
                  if re.search(r"(?<![\d.,])" + re.escape(v) + r"(?!\d|[.,]\d)", text))
    assert not hits, f"{doc}: the deck shows answers it does not ask in class: {hits}"
