"""The library reference, generated from what the package exports (book/api.md).

``{llmmath-api}`` expands into one section per module of ``llmmath``, found as the package finds
them (:func:`llmmath.physics_modules`, then :data:`llmmath.PRESENTATION`), so a new module
appears on the page without an edit here or there. Each section is the module's docstring and
the names in its ``__all__`` (every public name where it has none). A module that gathers
others (``PARTS``, as :mod:`llmmath.roofline` does) documents their names under its own, one
subsection per part, and the parts get no section of their own.

A docstring's formula on a line of its own, indented under its paragraph (``t = ... x alpha``),
is a block quote in reStructuredText, and the theme drew it as a grey quote box around a code
span: a box in a box. :func:`unquote_formulas` sets such a line as a paragraph of its own.
"""

from __future__ import annotations

import importlib
import inspect
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def modules() -> list[str]:
    """The modules the page documents, in the order it documents them."""
    import llmmath

    names = llmmath.physics_modules() + list(llmmath.PRESENTATION)
    gathered = {p.__name__.rsplit(".", 1)[1] for n in names
                for p in getattr(importlib.import_module(f"llmmath.{n}"), "PARTS", ())}
    return [n for n in names if n not in gathered]


def _members(module) -> str:
    names = getattr(module, "__all__", None)
    return f"   :members: {', '.join(names)}" if names else "   :members:"


def _part_rst(gatherer: str, part) -> list[str]:
    """A part's docstring, then each of its names documented under the gathering module."""
    lines = [f".. automodule:: {part.__name__}", "", f".. currentmodule:: {gatherer}", ""]
    for name in part.__all__:
        kind = "class" if inspect.isclass(getattr(part, name)) else "function"
        lines += [f".. auto{kind}:: {name}"] + (["   :members:"] if kind == "class" else []) + [""]
    return lines


class LibraryReference(SphinxDirective):
    """``{llmmath-api}``: a section per module, generated (no content, no options)."""

    def _section(self, title: str, rst: list[str], level_id: str) -> nodes.section:
        section = nodes.section(ids=[nodes.make_id(level_id)], names=[nodes.fully_normalize_name(
            level_id)])
        section += nodes.title(title, "", nodes.literal(title, title))
        # api.md is MyST: the autodoc directives (which write reStructuredText) run in eval-rst
        text = ["```{eval-rst}", *rst, "```"]
        self.state.nested_parse(StringList(text, source="llmmath-api"), self.content_offset,
                                section)
        return section

    def run(self):
        out = []
        for name in modules():
            full = f"llmmath.{name}"
            module = importlib.import_module(full)
            parts = getattr(module, "PARTS", ())
            if parts:
                section = self._section(full, [f".. automodule:: {full}", ""], full)
                for part in parts:
                    section += self._section(part.__name__, _part_rst(full, part),
                                             f"{part.__name__}-part")
            else:
                section = self._section(full, [f".. automodule:: {full}", _members(module), ""],
                                        full)
            out.append(section)
        return out


_FORMULA = re.compile(r"^(?P<indent>\s+)(?P<code>``[^`]+``[.,;:]?)\s*$")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)]|:\w[^:]*:)\s")


def unquote_formulas(lines: list[str]) -> list[str]:
    """The docstring's lines, each lone ``formula`` line indented under a paragraph (a block quote:
    a blank line before and after, the paragraph above not a list item) set at the paragraph's
    indent. List continuations and code blocks (after ``::``) are left alone."""
    out = list(lines)
    for i, line in enumerate(lines):
        m = _FORMULA.match(line)
        if not m or i < 2 or lines[i - 1].strip() or (i + 1 < len(lines) and lines[i + 1].strip()):
            continue
        above = next(x for x in reversed(lines[:i]) if x.strip())
        indent = len(above) - len(above.lstrip())
        if indent < len(m["indent"]) and not _LIST_ITEM.match(above) \
                and not above.rstrip().endswith("::"):
            out[i] = " " * indent + m["code"]
    return out


def _unquote_formulas(app, what, name, obj, options, lines):
    lines[:] = unquote_formulas(lines)


def _not_the_librarys(app, what, name, obj, skip, options):
    """Skip what a class inherits or is given by its base outside the library (the ``set`` that
    matplotlib writes for every Figure subclass, say): the page documents the library's code;
    and a module's ``SUMMARY`` rows, which the last chapter prints as a table."""
    module = getattr(obj, "__module__", None)
    if what == "class" and module and not module.startswith("llmmath"):
        return True
    if what == "module" and name == "SUMMARY":  # the summary table's rows: the book prints them
        return True
    return None


def setup(app):
    app.add_directive("llmmath-api", LibraryReference)
    app.connect("autodoc-skip-member", _not_the_librarys)
    app.connect("autodoc-process-docstring", _unquote_formulas)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
