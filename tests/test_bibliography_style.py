"""_ext/bibliography_style.py on hand-written BibTeX: author-year labels, arXiv printed once."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pybtex.database import parse_string
from pybtex.plugin import find_plugin

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "bibliography_style", ROOT / "_ext" / "bibliography_style.py")
bib = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bib)
bib.register()

BIB = r"""
@article{pope, author = {Pope, Reiner and Douglas, Sholto and Chowdhery, Aakanksha},
  title = {Efficiently scaling transformer inference}, year = {2023}, journal = {MLSys},
  url = {https://arxiv.org/abs/2211.05102}, eprint = {2211.05102}}
@misc{two, author = {Kaplan, Jared and McCandlish, Sam}, title = {Scaling}, year = {2020}}
@misc{org, author = {{NVIDIA}}, title = {H100 datasheet}, year = {2022},
  url = {https://www.nvidia.com/h100}}
@misc{org2, author = {{NVIDIA}}, title = {H200 datasheet}, year = {2022}}
@misc{nobody, organization = {Open Compute}, title = {OAM}, year = {2021}}
@misc{van, author = {van der Berg, Anna}, title = {A}, year = {2019}}
"""


def _render():
    data = parse_string(BIB, "bibtex")
    style = find_plugin("pybtex.style.formatting", "book")()
    entries = style.format_entries(data.entries.values())
    return {e.key: (e.label, e.text.render_as("text")) for e in entries}


def test_labels_read_like_the_citations():
    out = _render()
    assert out["pope"][0] == "Pope et al. 2023"
    assert out["two"][0] == "Kaplan and McCandlish 2020"
    assert out["nobody"][0] == "Open Compute 2021"
    assert out["van"][0] == "van der Berg 2019"
    # two entries that would share a label are told apart, in list order
    assert sorted([out["org"][0], out["org2"][0]]) == ["NVIDIA 2022a", "NVIDIA 2022b"]


def test_an_arxiv_link_is_printed_once_and_other_urls_stay():
    out = _render()
    pope = out["pope"][1]
    assert "arXiv:2211.05102" in pope and "URL:" not in pope
    assert pope.count("2211.05102") == 1
    assert "URL: https://www.nvidia.com/h100" in out["org"][1]


def test_references_bib_parses_with_one_entry_per_key():
    """Branches append entries at the end of references.bib; a merge that drops a closing brace
    (it happened twice) or repeats a key fails here, before the book build."""
    import re

    from pybtex.database import parse_file

    text = (ROOT / "references.bib").read_text(encoding="utf-8")
    keys = re.findall(r"(?m)^@\w+\{([^,\s]+),", text)
    assert len(keys) == len(set(keys)), sorted(k for k in set(keys) if keys.count(k) > 1)
    assert set(parse_file(str(ROOT / "references.bib")).entries) == set(keys)


def test_an_escaped_dollar_prints_as_a_dollar():
    """references.bib writes a price as `\\$0.014` (a bare `$` opens LaTeX math); pybtex reads
    `\\%` and `\\&` but keeps the backslash of `\\$`, and the page printed "\\$0.014"."""
    data = parse_string(r"""@misc{price, author = {Klein, Andy}, year = {2022},
      title = {The \$500 module}, note = {about \$0.014 per GB, 55\% up; \$2/\$12}}""", "bibtex")
    style = find_plugin("pybtex.style.formatting", "book")()
    (entry,) = style.format_entries(data.entries.values())
    for backend in ("text", "html"):
        shown = entry.text.render_as(backend)
        assert "\\" not in shown, shown
        assert "$500" in shown and "$0.014 per GB" in shown and "$2/$12" in shown, shown


def test_no_note_in_references_bib_prints_a_backslash():
    """Every entry of the book's bibliography, formatted as the site formats it."""
    from pybtex.database import parse_file

    data = parse_file(str(ROOT / "references.bib"))
    style = find_plugin("pybtex.style.formatting", "book")()
    shown = {e.key: e.text.render_as("text") for e in style.format_entries(data.entries.values())}
    assert sum("$" in t for t in shown.values()) >= 10  # the price notes are still there
    assert not {k: t for k, t in shown.items() if "\\" in t}
