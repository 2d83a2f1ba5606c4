"""What the HTML build resolved, written down for the editions that are not the site.

The reader's edition (scripts/reader_edition.py), the slides and the figure export show the
book's numbers, titles and citations outside Sphinx. Rather than recompute them, they read what
this build resolved: at ``build-finished`` (HTML builders only) this extension writes
``<outdir>/../resolved.json`` (``_build/resolved.json`` for `make book`), outside the served
site, holding

- ``docs``: every page of the table of contents in reading order, with its title
  (``env.titles``), chapter number (``env.toc_secnumbers``; ``""`` for an unnumbered page), the
  caption of the toctree (part) that lists it, and its sections in document order (level, number,
  title, ids): the numbers the site prints before each heading;
- ``labels``: every label of the standard domain (sections, figures, tables, exercises: number
  from ``StandardDomain.get_fignumber``, so from ``env.toc_fignumbers`` / ``toc_secnumbers``) and
  of the math domain (equations, numbered as the ``{eq}`` role numbers them), with its kind,
  document, number and title; ``ref_is_numref`` marks the targets sphinx-exercise turns a plain
  ``{ref}`` into a ``{numref}`` for;
- ``formats``: ``numfig_format`` and the ``{eq}`` format of this configuration;
- ``citations``: for every entry of the bibliography, as sphinxcontrib-bibtex formats it with this
  configuration's styles (``bibtex_reference_style``, ``bibtex_default_style``, through
  _ext/bibliography_style.py): the author part and year of an author-year citation, its place in
  the bibliography's order, its label and the formatted entry (markdown);
- ``cite_style``: the brackets and separators of the parenthetical and textual citations.

Markdown here is pybtex's markdown rendering of the same rich text the site renders as HTML.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from docutils.nodes import make_id
from sphinx.util import logging

logger = logging.getLogger(__name__)

FILENAME = "resolved.json"


def _num(numbers) -> str:
    return ".".join(map(str, numbers or ()))


def _doc_order(env) -> list[str]:
    """The root document, then every document its toctrees include, depth first."""
    order, seen = [], set()

    def walk(doc):
        if doc in seen:
            return
        seen.add(doc)
        order.append(doc)
        for child in env.toctree_includes.get(doc, []):
            walk(child)
    walk(env.config.root_doc)
    return order


def _parts(env) -> dict[str, str]:
    """docname -> caption of the toctree of the root document that lists it."""
    from sphinx import addnodes

    out = {}
    for toctree in env.get_doctree(env.config.root_doc).findall(addnodes.toctree):
        for _, doc in toctree["entries"]:
            out.setdefault(doc, toctree.get("caption") or "")
    return out


def _sections(env, doc: str, doctree) -> list[dict]:
    numbers = env.toc_secnumbers.get(doc, {})
    out = []
    for i, section in enumerate(doctree.findall(nodes.section)):
        if not section.children or not isinstance(section[0], nodes.title):
            continue  # e.g. sphinx-exercise's untitled content wrapper
        anchor = "" if i == 0 else "#" + section["ids"][0]
        level = 1
        parent = section.parent
        while parent is not None:
            level += isinstance(parent, nodes.section)
            parent = parent.parent
        out.append({"level": level, "number": _num(numbers.get(anchor)),
                    "title": section[0].astext(), "ids": list(section["ids"])})
    return out


def collect(app) -> dict:
    env, builder = app.env, app.builder
    std = env.get_domain("std")
    order = _doc_order(env)
    parts = _parts(env)
    doctrees = {doc: env.get_doctree(doc) for doc in order}
    docs = {}
    for doc in order:
        top = env.toc_secnumbers.get(doc, {}).get("")
        docs[doc] = {"title": env.titles[doc].astext() if doc in env.titles else "",
                     "number": _num(top), "part": parts.get(doc, ""),
                     "sections": _sections(env, doc, doctrees[doc])}

    exercises = getattr(env, "sphinx_exercise_registry", {})
    labels = {}
    for label, (doc, labelid) in sorted(std.anonlabels.items()):
        if doc not in doctrees:
            continue
        node = doctrees[doc].ids.get(labelid)
        kind = std.get_enumerable_node_type(node) if node is not None else None
        number = ""
        if kind:
            try:
                number = _num(std.get_fignumber(env, builder, kind, doc, node))
            except ValueError:
                number = ""
        title = std.labels.get(label, (None, None, ""))[2]
        if label in exercises:
            ex_title = exercises[label]["node"].children[0]
            title = ex_title.children[1].astext() if len(ex_title.children) > 1 else ""
        labels[label] = {"kind": kind or "target", "doc": doc, "number": number, "title": title,
                         "ref_is_numref": label in exercises and kind == "exercise"}
    math = env.get_domain("math")
    for label, (doc, seq) in sorted(math.equations.items()):
        node_id = make_id(f"equation-{label}")  # as the math domain names it
        if env.config.math_numfig and env.config.numfig:
            number = _num(env.toc_fignumbers.get(doc, {}).get("displaymath", {}).get(node_id))
        else:
            number = str(seq)
        labels[label] = {"kind": "equation", "doc": doc, "number": number, "title": "",
                         "ref_is_numref": False}

    return {"docs": docs, "labels": labels,
            "formats": {"numfig": dict(env.config.numfig_format),
                        "eq": env.config.math_eqref_format or "({number})"},
            **_citations(app)}


def _citations(app) -> dict:
    """Every bibliography entry's author-year parts and formatted entry, as the site has them."""
    try:
        domain = app.env.get_domain("cite")
    except Exception:  # noqa: BLE001 - no sphinxcontrib-bibtex: nothing to write
        return {"citations": {}, "cite_style": {}}
    from pybtex.richtext import Text
    from sphinxcontrib.bibtex.style.template import year

    style = domain.reference_style
    author = style.person.author_or_editor_or_title(full=False)
    md = _markdown_backend()
    out = {}
    for i, cit in enumerate(domain.citations):
        data = {"entry": cit.entry, "style": style}
        out[cit.key] = {
            "author": Text(author.format_data(data)).render(md),
            "year": Text(year.format_data(data)).render(md),
            "order": i,
            "label": cit.formatted_entry.label,
            "doc": cit.bibliography_key.docname,
            "id": cit.citation_id,
            "entry": " ".join(cit.formatted_entry.text.render(md).split()),
        }

    def s(x):
        return x if isinstance(x, str) else x.render(md)  # brackets are markup: kept raw
    p, t = style.bracket_parenthetical, style.bracket_textual
    cite_style = {"p": {"left": s(p.left), "right": s(p.right), "sep": s(p.sep),
                        "author_year_sep": s(style.author_year_sep)},
                  "t": {"left": s(t.left), "right": s(t.right), "sep": s(t.sep),
                        "text_reference_sep": s(style.text_reference_sep)}}
    return {"citations": out, "cite_style": cite_style}


def _markdown_backend():
    """pybtex's markdown backend, escaping only what changes the meaning of inline prose in
    Jupyter's markdown (its default escapes every dot and hyphen: "et al\\.")."""
    from pybtex.backends.markdown import Backend

    class Prose(Backend):
        def format_str(self, text):
            return re.sub(r"([\\`*_\[\]<>$|])", r"\\\1", text)

    return Prose()


def write(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir).parent / FILENAME
    path.write_text(json.dumps(collect(app), indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    logger.info(f"resolved numbers, titles and citations written to {path}")


def setup(app):
    app.connect("build-finished", write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
