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
