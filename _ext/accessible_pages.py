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
citation list they become ``role="listitem"``. The saved explorers' sliders
are named in _vendor/widgets-glue.js (the widget manager draws them in the browser).
Tested in tests/test_accessible_pages.py; the browser suite runs axe-core over every page.
"""

from __future__ import annotations

import re
from pathlib import Path

_SEARCH = re.compile(r'(<button class="[^"]*search-button__button[^"]*"[^>]*?) aria-label="Search"')
_TOGGLE = re.compile(r'<summary aria-label="Toggle hidden content">')
_ENTRY = re.compile(r'(<div class="citation" id="[^"]*" )role="doc-biblioentry"')


def name_by_visible_text(html: str) -> str:
    """The page with the mismatched labels removed (idempotent)."""
    html = _SEARCH.sub(r"\1", html)
    html = _TOGGLE.sub("<summary>", html)
    if 'class="citation-list"' in html:
        html = _ENTRY.sub(r'\1role="listitem"', html)
    return html


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
