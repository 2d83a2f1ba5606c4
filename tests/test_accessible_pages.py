"""_ext/accessible_pages.py on hand-written markup (the browser suite runs axe-core on the site)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("accessible_pages",
                                               ROOT / "_ext" / "accessible_pages.py")
acc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(acc)

SEARCH = ('<button class="btn search-button-field search-button__button pst-js-only" '
          'title="Search" aria-label="Search" data-bs-placement="bottom">\n <span>Search</span> '
          'Ctrl+K</button>')
TOGGLE = '<summary aria-label="Toggle hidden content">\n<p>Show code cell source</p>\n</summary>'
OTHER = ('<button class="btn" aria-label="Close">x</button><summary '
         'class="sd-summary-title">S</summary>')


def test_search_button_and_toggle_named_by_their_text():
    page = acc.name_by_visible_text(SEARCH + TOGGLE + OTHER)
    assert 'aria-label="Search"' not in page and 'title="Search"' in page
    assert "<summary>\n<p>Show code cell source</p>" in page
    assert OTHER in page  # other labels are left alone


def test_bibliography_entries_are_list_items():
    bib = ('<div role="list" class="citation-list">\n<div class="citation" id="id83" '
           'role="doc-biblioentry">\n<span class="label">[1]</span></div></div>')
    page = acc.name_by_visible_text(bib)
    assert '<div class="citation" id="id83" role="listitem">' in page
    assert "doc-biblioentry" not in page


def test_idempotent():
    once = acc.name_by_visible_text(SEARCH + TOGGLE)
    assert acc.name_by_visible_text(once) == once
