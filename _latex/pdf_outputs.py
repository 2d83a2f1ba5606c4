"""LaTeX/PDF edition: explorers appear as their saved figure instead of a repr string.

In a LaTeX build myst-nb falls back to text/plain for outputs it cannot print: a live explorer
(widget view) and its kernel-free twin (frames.slider's self-contained HTML) would both show as
``<... explorer: ...>``. For the latex builder only, this read-phase transform replaces
- a frames.slider output by its first pre-rendered frame (an image, with the frame's alt text)
  and one line saying how many frames the online edition steps through;
- a widget view by one line pointing to the online edition and the notebook.
The appendices are lettered in the PDF (``\\appendix`` before the first of them).
HTML builds are untouched, except that when a PDF has been built (``make pdf``) the HTML build
copies it to the site as PDF_NAME and every page's footer links it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

_FRAMES = re.compile(r'class="llm-frames\b')
_FIRST_IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)"')
_LABELS = re.compile(r"L=\[([^\]]*)\]")
WIDGET = "application/vnd.jupyter.widget-view+json"
PDF_NAME = "the-roofline-book.pdf"


def _is_bundle(node):
    return isinstance(node, nodes.container) and node.get("nb_element") == "mime_bundle"


def _html_of(bundle):
    for child in bundle.children:
        if child.get("mime_type") == "text/html":
            return "".join(n.astext() for n in child.findall(nodes.raw))
    return None


class ExplorersAsFigures(SphinxTransform):
    default_priority = 500

    def apply(self, **kwargs):
        if self.app.builder.format != "latex":
            return
        out = Path(self.app.outdir).parent / "pdf_frames"
        for bundle in list(self.document.findall(_is_bundle)):
            mimes = [c.get("mime_type") for c in bundle.children]
            html = _html_of(bundle)
            if html and _FRAMES.search(html):
                bundle.replace_self(self._frame(html, out))
            elif WIDGET in mimes:
                para = nodes.paragraph()
                para += nodes.emphasis(text=(
                    "Interactive explorer: in the online edition, or live when the notebook "
                    "runs (make lab, Colab, Binder). Its saved frames are printed beside it."))
                bundle.replace_self(para)

    def _frame(self, html, out):
        found = _FIRST_IMG.search(html)
        if not found:
            raise ValueError("a frames.slider output has no first <img> data URI to print")
        data = base64.b64decode(found.group(1))
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{hashlib.sha256(data).hexdigest()}.png"
        if not path.exists():
            path.write_bytes(data)
        uri = "/" + os.path.relpath(path, self.app.srcdir)
        labels = _LABELS.search(html)
        names = re.findall(r'"([^"]*)"', labels.group(1)) if labels else []
        result = [nodes.image(uri=uri, alt=found.group(2), candidates={"*": uri.lstrip("/")})]
        if names:
            para = nodes.paragraph()
            para += nodes.emphasis(text=(
                f"Printed: frame 1 of {len(names)} ({names[0]}); online, a slider steps "
                f"through all {len(names)} ({names[0]} to {names[-1]})."))
            result.append(para)
        return result


def first_appendix(toc_text: str) -> str | None:
    """The docname that opens the part captioned "Appendices" in _toc.yml, if there is one."""
    m = re.search(r'caption:\s*"?Appendices"?\s*\n(?:\s+\w+:.*\n)*?\s+-\s*file:\s*(\S+)', toc_text)
    return m.group(1) if m else None


class AppendicesLettered(SphinxTransform):
    """In the PDF the appendices are lettered (A, B, ...) like a textbook's, not chapters 13-18:
    ``\\appendix`` goes before the first appendix (latex builder only)."""

    default_priority = 500

    def apply(self, **kwargs):
        if self.app.builder.format != "latex":
            return
        toc = Path(self.app.srcdir) / "_toc.yml"
        first = first_appendix(toc.read_text(encoding="utf-8")) if toc.exists() else None
        if first and self.env.docname == first:
            self.document.insert(0, nodes.raw("", "\\appendix\n", format="latex"))


def _built_pdf(app):
    pdf = Path(app.outdir).parent / "latex" / "book.pdf"
    return pdf if pdf.is_file() else None


def _pdf_link(app, pagename, templatename, context, doctree):
    pdf = _built_pdf(app)
    if app.builder.format != "html" or pdf is None:
        return
    href = context["pathto"](PDF_NAME, 1)
    size = pdf.stat().st_size / 1e6
    context["theme_extra_footer"] = (context.get("theme_extra_footer") or "") + (
        f'<p class="llm-pdf-link"><a href="{href}">The whole book as one PDF</a> '
        f"({size:.1f} MB)</p>")


def _copy_pdf(app, exception):
    pdf = _built_pdf(app)
    if exception is None and app.builder.format == "html" and pdf is not None:
        (Path(app.outdir) / PDF_NAME).write_bytes(pdf.read_bytes())


class ExerciseRefsAsText(SphinxPostTransform):
    """A reference to an exercise prints its number as text in the PDF.

    Sphinx's LaTeX writer prints a number reference as ``\\ref`` to ``doc:label``, a label that
    sphinx-exercise never writes (it labels ``exercise:label``), so the course guide's references
    to exercises printed as "Exercise ??". The resolved node already holds the number the HTML
    shows ("Exercise 1.1"): keep that text, linked to the label sphinx-exercise does write.
    """

    default_priority = 20  # after the references are resolved
    builders = ("latex",)

    def run(self, **kwargs):
        for node in list(self.document.findall(addnodes.number_reference)):
            text = node.astext()
            if not text.startswith("Exercise"):
                continue
            target = node.get("refid") or node.get("refuri", "").rpartition("#")[2]
            link = nodes.reference("", text, internal=True, refid=f"exercise:{target}")
            node.replace_self(link if target else nodes.Text(text))


def setup(app):
    app.add_post_transform(ExerciseRefsAsText)
    app.add_transform(ExplorersAsFigures)
    app.add_transform(AppendicesLettered)
    app.connect("html-page-context", _pdf_link)
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
