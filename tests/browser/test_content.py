"""Every page of `_toc.yml` carries its real content: title, text, figures and equations.

The counts come from each page's source (notebook or Markdown), so a blank or truncated page
fails. These checks read the built HTML and need no browser (they run, and fail, even where
Chromium cannot start); test_site.py's `test_page` checks the same page as Chromium shows it.
"""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest
import yaml
from conftest import HTML, ROOT

pytestmark = pytest.mark.browser
MIN_WORDS = 150  # the shortest page (the bibliography) has far more once built


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


def source_of(stem: str):
    for ext in (".ipynb", ".md"):
        p = ROOT / (stem + ext)
        if p.exists():
            return p
    raise FileNotFoundError(f"_toc.yml names {stem}, which has no .ipynb or .md source")


def expectations(stem: str) -> dict:
    """Title, figures and display equations the source asks for."""
    p = source_of(stem)
    markdown, figures = [], 0
    if p.suffix == ".ipynb":
        nb = json.loads(p.read_text())
        for cell in nb["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                markdown.append(text)
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                figures += any(k in data for k in ("image/png", "image/svg+xml", "image/jpeg"))
    else:
        markdown.append(p.read_text())
    md = "\n".join(markdown)
    figures += len(re.findall(r"!\[|```\{(?:figure|image)\}", md))
    equations = md.count("$$") // 2 + len(re.findall(r"```\{math\}", md))
    title = next((m.group(1).strip() for m in re.finditer(r"^# (.+)$", md, re.M)), None)
    return {"title": title, "figures": figures, "equations": equations}


def _words(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def built(stem: str) -> str:
    path = HTML / (stem + ".html")
    assert path.exists(), f"{path} was not built"
    return path.read_text()


PAGES = toc_files()


@pytest.mark.parametrize("stem", PAGES)
def test_page_has_its_content(stem):
    want = expectations(stem)
    page = built(stem)
    main = re.search(r"<main.*?</main>", page, re.S)
    body = main.group(0) if main else page
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style).*?</\1>", " ",
                                                             body, flags=re.S)))
    assert len(text.split()) >= MIN_WORDS, f"{stem}: only {len(text.split())} words of text"
    if want["title"]:
        title = _words(re.sub(r"[`*_{}\[\]()]|\$[^$]*\$", " ", want["title"]))
        h1 = " ".join(_words(htmllib.unescape(re.sub(r"<[^>]+>", " ", h)))
                      for h in re.findall(r"<h1.*?</h1>", body, re.S))
        assert title and title in h1, f"{stem}: title {want['title']!r} not in <h1> {h1!r}"
    imgs = len(re.findall(r"<img\b", body))
    assert imgs >= want["figures"], f"{stem}: {imgs} images, the source has {want['figures']}"
    maths = len(re.findall(r'<div class="math[ "]', body))
    assert maths >= want["equations"], (f"{stem}: {maths} display equations, "
                                        f"source {want['equations']}")


# --- What the static page shows instead of a live explorer, and boxes and titles that read
# --- wrong (issue 36: N-M2, N-L10, N-L11). Each rule is a function of the page's HTML, so a
# --- planted page shows it bites.
_CELL = re.compile(r'(?=<div class="cell(?=[ "])[^"]*")')
_EXPLORER_CALL = re.compile(r"\bwidgets\.\w+\(|_explorer\(")


def _text(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def bare_explorer_cells(page: str) -> list[str]:
    """Code cells whose source calls a live explorer (``widgets.*`` or ``*_explorer(``) and that
    show no output: on the static page they are code that does nothing."""
    bare = []
    for cell in _CELL.split(page)[1:]:
        source = re.search(r'<div class="cell_input.*?</pre>', cell, re.S)
        if not source or not _EXPLORER_CALL.search(_text(source.group(0))):
            continue
        output = re.search(r'<div class="cell_output[^"]*">(.*)', cell, re.S)
        if not output or not _text(output.group(1)).strip() and "<img" not in output.group(1):
            bare.append(_text(source.group(0)).strip().splitlines()[0][:70])
    return bare


def boxed_code_quotes(page: str) -> list[str]:
    """Block quotes that hold nothing but one code literal: a box inside a box."""
    return [_text(q).strip()[:60] for q in re.findall(
        r"<blockquote>\s*<div>\s*<p>\s*(<code[^>]*>.*?</code>)[.,;:]?\s*</p>\s*</div>\s*</blockquote>",
        page, re.S)]


def exercise_title_problems(page: str) -> list[str]:
    """Exercise titles: no parentheses inside sphinx-exercise's "Exercise N (title)", and each
    solution's link reads as its exercise's title does (the same apostrophes)."""
    problems = []
    titles = {}
    for label, head in re.findall(r'<div class="exercise[^"]*" id="([^"]+)">\s*'
                                  r'<p class="admonition-title">(.*?)</p>', page, re.S):
        title = " ".join(_text(head).split())
        titles[label] = title
        inner = re.search(r"\((.*)\)\s*$", title)
        if inner and re.search(r"[()]", inner.group(1)):
            problems.append(f"nested parentheses: {title}")
    for label, link in re.findall(r'Solution to<a class="reference internal" href="#([^"]+)">'
                                  r"(.*?)</a>", page, re.S):
        shown = " ".join(_text(link).split())
        if label in titles and shown != titles[label]:
            problems.append(
                f"solution link {shown!r} differs from exercise title {titles[label]!r}")
    return problems


@pytest.mark.parametrize("stem", PAGES)
def test_no_bare_explorer_code(stem):
    bare = bare_explorer_cells(built(stem))
    assert not bare, (f"{stem}: live-explorer code with no output (tag the cell remove-cell; "
                      f"the kernel-free frames show the explorer): {bare}")


@pytest.mark.parametrize("stem", PAGES)
def test_no_code_in_a_quote_box(stem):
    assert not boxed_code_quotes(built(stem)), f"{stem}: {boxed_code_quotes(built(stem))}"


@pytest.mark.parametrize("stem", PAGES)
def test_exercise_titles_read_cleanly(stem):
    problems = exercise_title_problems(built(stem))
    assert not problems, f"{stem}: {problems}"


def test_the_page_rules_bite_on_planted_html():
    source = ('<div class="cell docutils container"><div class="cell_input docutils container">'
              '<div class="highlight"><pre>widgets.decode_explorer(&quot;Llama&quot;)</pre></div>'
              "</div>")
    assert bare_explorer_cells(source + "</div>") == ['widgets.decode_explorer("Llama")']
    frames = ('<div class="cell_output docutils container"><div class="output text_html">'
              '<div class="llm-frames"><img src="a.png" alt="frame"></div></div></div>')
    assert bare_explorer_cells(source + frames + "</div>") == []
    quote = ('<blockquote>\n<div><p><code class="docutils literal notranslate"><span class="pre">'
             "t = a x b</span></code>.</p>\n</div></blockquote>")
    assert boxed_code_quotes(quote) == ["t = a x b"]
    assert boxed_code_quotes("<blockquote><div><p>A quote with <code>x</code>.</p></div>"
                             "</blockquote>") == []
    exam = ('<div class="exercise admonition" id="ex-a">\n<p class="admonition-title">'
            '<span class="caption-number">Exercise 1 </span> (A chip’s ridge point (10 minutes))'
            '</p></div><p class="admonition-title">Solution to<a class="reference internal" '
            "href=\"#ex-a\"> Exercise 1 (A chip's ridge point (10 minutes))</a></p>")
    found = " | ".join(exercise_title_problems(exam))
    assert "nested parentheses" in found and "differs from exercise title" in found, found
    fixed = exam.replace(" (10 minutes)", ", 10 minutes").replace("chip's", "chip’s")
    assert exercise_title_problems(fixed) == []
