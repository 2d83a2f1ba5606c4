"""Accessible pages: names that match what a reader sees (axe-core's label-content-name-mismatch).

A post-build pass over every HTML page (``build-finished``, HTML builder only). The theme gives
two controls an ``aria-label`` that differs from their visible text, so a speech-input user who
says what they see ("Show code cell source", "Search") does not reach them:

- the search buttons: ``aria-label="Search"`` beside the visible "Search Ctrl+K";
- sphinx-togglebutton's summaries: ``aria-label="Toggle hidden content"`` beside the visible
  "Show code cell source".

The label is dropped, so each control is named by its visible text. And the bibliography's
``role="list"`` holds entries marked ``role="doc-biblioentry"`` (docutils), which a list may not
contain (axe-core's aria-required-children; the role is deprecated in DPUB-ARIA 1.1): inside a
citation list they become ``role="listitem"``. A solution's link ("Solution to Exercise 3.8
(... Pope's step ...)") repeats its exercise's title as sphinx-exercise copied it, before
Sphinx's smartquotes: its quotes and apostrophes become the typographic ones the exercise's own
title shows ("Pope’s"), so the two read the same. The saved explorers' sliders
are named in _vendor/widgets-glue.js (the widget manager draws them in the browser).
Tested in tests/test_accessible_pages.py; the browser suite runs axe-core over every page.
"""

from __future__ import annotations

import re
from pathlib import Path

_SEARCH = re.compile(r'(<button class="[^"]*search-button__button[^"]*"[^>]*?) aria-label="Search"')
_TOGGLE = re.compile(r'<summary aria-label="Toggle hidden content">')
_ENTRY = re.compile(r'(<div class="citation" id="[^"]*" )role="doc-biblioentry"')
_SOLUTION_LINK = re.compile(r'(Solution to<a class="reference internal" href="#[^"]*">)(.*?)(</a>)',
                            re.S)


def _smart(text: str) -> str:
    """Straight quotes as typographic ones, in the text between tags (as Sphinx's smartquotes)."""
    def fix(m):
        t = m.group(0).replace("&quot;", '"').replace("&#x27;", "'").replace("&#39;", "'")
        t = re.sub(r"(?<=\w)'", "\u2019", t)  # apostrophe, closing single quote
        t = re.sub(r"'(?=\w)", "\u2018", t)
        t = re.sub(r'"(?=\w)', "\u201c", t)
        return t.replace('"', "\u201d")
    return re.sub(r"(?<=>)[^<]+|^[^<]+", fix, text)


def name_by_visible_text(html: str) -> str:
    """The page with the mismatched labels removed (idempotent)."""
    html = _SEARCH.sub(r"\1", html)
    html = _TOGGLE.sub("<summary>", html)
    if 'class="citation-list"' in html:
        html = _ENTRY.sub(r'\1role="listitem"', html)
    return _SOLUTION_LINK.sub(lambda m: m.group(1) + _smart(m.group(2)) + m.group(3), html)


def _fix_site(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = name_by_visible_text(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("build-finished", _fix_site)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
