"""The bibliography in the style the text cites in: author-year labels, one link per entry.

The chapters cite author-year ("Pope et al. (2023)"), but pybtex's `plain` style numbers the
list ([1], [2], ...), so a reader who meets "Pope et al." in the text hunts a numbered list for
it. And an arXiv entry that has both `url` and `eprint` printed the same link twice ("URL:
https://arxiv.org/abs/2211.05102, arXiv:2211.05102"). This registers, for sphinxcontrib-bibtex:

- labels `authoryear`: "Pope et al. 2023", "Brown and Smith 2020", "NVIDIA 2024", with a, b, ...
  appended when two entries would share a label;
- formatting style `book` (`bibtex_default_style: book` in _config.yml): `plain`, labelled as
  above, printing an arXiv entry's link once (as "arXiv:NNNN.NNNNN"), and a dollar written
  `\\$` in references.bib (LaTeX's escape, which pybtex's LaTeX reader keeps) printed as "$".

Tested in tests/test_bibliography_style.py.
"""

from __future__ import annotations

import re
from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.richtext import BaseMultipartText, String, Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import optional, sentence


def _plain(latex: str) -> str:
    """A name or organisation as a reader sees it: braces and TeX escapes gone."""
    return Text.from_latex(latex).render_as("text").strip()


def _names(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    if not persons:
        org = entry.fields.get("organization") or entry.fields.get("publisher") or entry.key
        return _plain(org)
    last = [_plain(" ".join(p.prelast_names + p.last_names)) for p in persons]
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


class AuthorYearLabels(BaseLabelStyle):
    """Labels that read like the citations in the text."""

    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        base = [f"{_names(e)} {e.fields.get('year', 'n.d.')}" for e in entries]
        total = Counter(base)
        used: Counter = Counter()
        for label in base:
            if total[label] > 1:
                used[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[used[label] - 1]
            else:
                yield label


_ARXIV = re.compile(r"arxiv\.org/(abs|pdf)/", re.I)


def _unescape(text):
    """Rich text with each `\\$` as "$": pybtex reads `\\%` and `\\&` but leaves `\\$` as it is."""
    if isinstance(text, str):
        return text.replace("\\$", "$")
    if isinstance(text, String):
        return String(_unescape(text.value))
    if isinstance(text, BaseMultipartText):
        return text._create_similar([_unescape(p) for p in text.parts])
    return text  # a Symbol (nbsp, newblock)


class BookStyle(PlainStyle):
    """`plain` with author-year labels, an arXiv link printed once and `\\$` printed as "$"."""

    default_label_style = "authoryear"

    def format_entry(self, label, entry, bib_data=None):
        formatted = super().format_entry(label, entry, bib_data=bib_data)
        formatted.text = _unescape(formatted.text)
        return formatted

    def format_web_refs(self, e):
        if e.fields.get("eprint") and _ARXIV.search(e.fields.get("url", "")):
            return sentence[optional[self.format_eprint(e)], optional[self.format_doi(e)]]
        return super().format_web_refs(e)


def register() -> None:
    """Make both names known to pybtex (idempotent)."""
    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels, force=True)
    register_plugin("pybtex.style.formatting", "book", BookStyle, force=True)


def setup(app):
    register()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
