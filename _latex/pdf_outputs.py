"""LaTeX/PDF edition: explorers appear as their saved figure instead of a repr string.

In a LaTeX build myst-nb falls back to text/plain for outputs it cannot print: a live explorer
(widget view) and its kernel-free twin (frames.slider's self-contained HTML) would both show as
``<... explorer: ...>``. For the latex builder only, this read-phase transform replaces
- a frames.slider output by its first pre-rendered frame (an image, with the frame's alt text)
  and one line saying how many frames the online edition steps through;
- a widget view by one line pointing to the online edition and the notebook.
The appendices are lettered in the PDF (``\\appendix`` before the first of them).

The PDF is a reader's book, not an answer key or a web page pasted on paper (issue 36):
- the exercises' solutions move to an appendix of their own, each titled "Solution to
  Exercise 3.1" with a link back, and each exercise points to its solution's page;
- exercises are numbered per chapter as on the web (3.1, not 3.9.1);
- a "check your answer" cell prints nothing until it has an answer, so its output is dropped;
- tables too tall for a page are longtables that break across pages, with column widths from
  their content; a module constant's value in the library reference is elided when it is long;
- the introduction has a title, and the title page a subtitle, edition and licence.
The layout rules in LaTeX (fonts, floats, headers, bibliography) are in _latex/roofline.sty.
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
from sphinx.util.texescape import escape as tex_escape
from sphinx_exercise.nodes import (
    exercise_enumerable_node,
    exercise_latex_number_reference,
    solution_node,
)

from llmmath.exercises import UNANSWERED

_FRAMES = re.compile(r'class="llm-frames\b')
_FIRST_IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)"')
_LABELS = re.compile(r"L=\[([^\]]*)\]")
WIDGET = "application/vnd.jupyter.widget-view+json"
PDF_NAME = "the-roofline-book.pdf"
SOLUTIONS_TITLE = "Solutions to the exercises"
INTRO_TITLE = "Introduction"
# Tables: a line of body text holds about this many characters; a table whose estimated
# height passes TALL_LINES lines becomes a longtable (tabulary cannot break). Less than half a
# page: a table printed in a cell's output shares an unbreakable box with the cell's code, and
# tabulary's own widths wrap narrow columns more than the estimate does (the published-runs
# table of "Laying out a training run", 21 lines estimated, ran 114 pt off its page).
LINE_CHARS = 100
TALL_LINES = 20


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
        # at most two thirds of the line: a frame is as tall as the slider's tallest (frames pads
        # them to one size), and a page-high frame with its note would not fit below text
        result = [nodes.image(uri=uri, alt=found.group(2), width="65%",
                              candidates={"*": uri.lstrip("/")})]
        if names:
            para = nodes.paragraph()
            para += nodes.emphasis(text=(
                f"Printed: frame 1 of {len(names)} ({names[0]}); online, a slider steps "
                f"through all {len(names)} ({names[0]} to {names[-1]})."))
            result.append(para)
        return result


class UnansweredChecksDropped(SphinxTransform):
    """A "check your answer" cell prints only "replace None with your number..." before the
    reader has answered: on paper that line is noise, so the PDF drops it (the code stays)."""

    default_priority = 500

    def apply(self, **kwargs):
        if self.app.builder.format != "latex":
            return
        for block in list(self.document.findall(nodes.literal_block)):
            lines = [line.strip() for line in block.astext().splitlines() if line.strip()]
            if lines and all(line == UNANSWERED for line in lines):  # one per check in a cell
                parent = block.parent
                block.parent.remove(block)
                while parent is not None and not parent.children and _is_output(parent):
                    grand = parent.parent
                    grand.remove(parent)
                    parent = grand


def _is_output(node):
    return isinstance(node, nodes.container) and (
        "cell_output" in node.get("classes", []) or node.get("nb_element") == "mime_bundle")


class IntroTitled(SphinxTransform):
    """The root page's own title is the book's, which jupyterbook-latex drops: in the PDF the
    introduction opens with an unnumbered chapter heading, in the contents and running heads."""

    default_priority = 500

    def apply(self, **kwargs):
        if self.app.builder.format != "latex" or self.env.docname != self.config.root_doc:
            return
        section = next(iter(self.document.findall(nodes.section)), None)
        if section is None:
            return
        title = tex_escape(INTRO_TITLE)
        section.insert(1, nodes.raw("", (
            f"\\chapter*{{{title}}}\\addcontentsline{{toc}}{{chapter}}{{{title}}}"
            f"\\markboth{{{title}}}{{{title}}}\n"), format="latex"))


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


def title_page(app, config):
    """A title page with the subtitle, the edition (CITATION.cff's version and date) and, on its
    back, the licence, instead of Sphinx's title, author and build date."""
    cff = Path(app.srcdir) / "CITATION.cff"
    text = cff.read_text(encoding="utf-8") if cff.exists() else ""

    def field(name):
        found = re.search(rf'^{name}:\s*"?([^"\n]*)"?', text, re.M)
        return found.group(1).strip() if found else ""

    subtitle = field("title").partition(": ")[2]
    subtitle = subtitle[:1].upper() + subtitle[1:]
    edition = f"Edition {field('version')}" if field("version") else ""
    if field("date-released"):
        from datetime import date
        released = date.fromisoformat(field("date-released"))
        edition += f", {released.day} {released:%B %Y}"
    esc = tex_escape
    title = field("title").partition(": ")[0] or config.project
    config.latex_elements["maketitle"] = (
        "\\begin{titlepage}\\centering\\sffamily\n"
        "\\vspace*{0.22\\textheight}\n"
        f"{{\\Huge\\bfseries {esc(title)}\\par}}\\vspace{{1.5em}}\n"
        f"{{\\Large {esc(subtitle)}\\par}}\\vspace{{4em}}\n"
        f"{{\\large {esc(config.author)}\\par}}\\vfill\n"
        f"{{\\normalsize {esc(edition)}\\par}}\n"
        "\\end{titlepage}\n"
        "\\thispagestyle{empty}\\null\\vfill\n"
        f"{{\\small\\noindent Copyright © {esc(config.copyright.split('. ')[0])}."
        "\\par\\medskip\\noindent "
        "The code (the library, the tests and the notebooks' code cells) is under the MIT "
        "licence; the text and the figures are under the Creative Commons Attribution 4.0 "
        "International licence (CC BY 4.0). See LICENSE; cite the book with CITATION.cff."
        f"\\par\\medskip\\noindent {esc(edition)}.\\par}}\n"
        "\\cleardoublepage\n")


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
    """A reference to an exercise prints its number as text in the PDF, linked to the exercise.

    Sphinx's LaTeX writer prints a number reference as ``\\ref`` to ``doc:label``, a label that
    sphinx-exercise never writes (it labels ``exercise:label``), so the course guide's references
    to exercises printed as "Exercise ??". The resolved node already holds the number the HTML
    shows ("Exercise 1.1"): keep that text, as sphinx-exercise's own link to ``exercise:label``.
    """

    default_priority = 20  # after the references are resolved
    builders = ("latex",)

    def run(self, **kwargs):
        for node in list(self.document.findall(addnodes.number_reference)):
            text = node.astext()
            if not text.startswith("Exercise"):
                continue
            target = node.get("refid") or node.get("refuri", "").rpartition("#")[2]
            link = exercise_latex_number_reference(refid=target)
            link += nodes.Text(text)
            node.replace_self(link if target else nodes.Text(text))


def exercises_per_chapter(app):
    """Exercise numbers per chapter, as on the web: jupyterbook-latex sets numfig_secnum_depth
    to 2 for its part layout, which numbers exercises per section (3.9.1). Sphinx numbers them
    when it reads (depth 1 here); the LaTeX writer then gets depth 2 back for its figure and
    equation counters (``env-check-consistency``, after the numbering; the LaTeX builder emits
    no ``write-started``)."""
    if app.builder.format == "latex":
        app.config.numfig_secnum_depth = 1


def _restore_secnum_depth(app, env):
    if app.builder.format == "latex":
        app.config.numfig_secnum_depth = 2


class SolutionsAppendix(SphinxPostTransform):
    """Every solution moves from its exercise to an appendix before the bibliography, under its
    chapter's heading, titled "Solution to Exercise 3.1 (...)" with "Exercise 3.1" linking back;
    each exercise ends with the page of its solution. Runs on the whole book (the LaTeX builder
    assembles one tree), after sphinx-exercise's titles and jupyterbook-latex's part layout."""

    default_priority = 800
    builders = ("latex",)

    def run(self, **kwargs):
        solutions = list(self.document.findall(solution_node))
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        if not solutions or not registry:
            return
        # the registry holds the nodes as read; the titles resolved for print are in this tree
        exercises = {n.get("label"): n for n in self.document.findall(exercise_enumerable_node)}
        groups: dict[str, list] = {}
        for sol in solutions:
            exercise = exercises.get(sol.get("target_label"))
            docname = registry.get(sol.get("target_label"), {}).get("docname")
            if exercise is None or not docname:
                continue
            number = _exercise_number(exercise)
            _link_title(sol, sol.get("target_label"), number)
            label = f"{docname}:{sol['label']}"
            exercise += nodes.raw("", (
                "\n\\par\\hfill{\\small\\itshape\\hyperref[" + label + "]{Solution: page~"
                "\\pageref*{" + label + "}}}\n"), format="latex")
            sol.parent.remove(sol)
            groups.setdefault(docname, []).append((number, sol))
        anchor = self._bibliography_file()
        if anchor is None or not groups:
            return
        appendix = addnodes.start_of_file(docname="solutions")
        section = nodes.section(ids=["solutions-to-the-exercises"],
                                names=[SOLUTIONS_TITLE.lower()])
        section += nodes.title(text=SOLUTIONS_TITLE)
        section += nodes.paragraph(text=(
            "The worked solution of every exercise, by chapter. Each title links back to its "
            "exercise; each exercise gives the page of its solution."))
        for docname, items in groups.items():
            title = self.env.titles[docname].astext()
            chapter, dot, _ = items[0][0].partition(".")  # the exam bank's are "Exercise 1"
            name = tex_escape(f"Chapter {chapter}. {title}" if dot else title)
            part = addnodes.start_of_file(docname=docname)  # links inside resolve as before
            part += nodes.raw("", (f"\\section*{{{name}}}\\addcontentsline{{toc}}{{section}}"
                                   f"{{{name}}}\\markright{{{name}}}\n"), format="latex")
            part.extend(sol for _, sol in items)
            section += part
        appendix += section
        parent = anchor.parent
        index = parent.index(anchor) + (0 if "bibliography" in anchor["docname"] else 1)
        parent.insert(index, appendix)

    def _bibliography_file(self):
        """The last appendix's file (the bibliography, which the solutions go before)."""
        files = [n for n in self.document.findall(addnodes.start_of_file)
                 if n.get("docname") in self.env.all_docs]
        return files[-1] if files else None


def _exercise_number(exercise) -> str:
    found = re.match(r"Exercise (\d+(?:\.\d+)*)", exercise.children[0].astext())
    if not found:
        raise ValueError(f"an exercise has no number in its title: {exercise.children[0]!r}")
    return found.group(1)


def _link_title(sol, exercise_label, number):
    """"Solution to Exercise 3.1 (Warm-up: ...)", with "Exercise 3.1" a link to the exercise."""
    title = sol.children[0]
    wrapper = next((c for c in title.children if isinstance(c, nodes.reference)), None)
    rest = list(wrapper.children[1:]) if wrapper is not None else []
    link = exercise_latex_number_reference(refid=exercise_label)
    link += nodes.Text(f"Exercise {number}")
    new = nodes.title()
    new += nodes.Text("Solution to ")
    new += link
    new.extend(c.deepcopy() for c in rest)
    sol.children[0] = new
    new.parent = sol


class LongTables(SphinxPostTransform):
    """A table taller than about half a page prints as a longtable, which breaks across pages
    (a tabulary cannot: it ran over the footer and lost rows), with column widths from its
    content: each column at least as wide as its longest word, the rest shared by how much
    text each column holds. So does a table too wide for the line, a size smaller. Other tables
    keep tabulary's natural widths."""

    default_priority = 800
    builders = ("latex",)

    def run(self, **kwargs):
        for table in list(self.document.findall(nodes.table)):
            if "longtable" in table["classes"] or table.next_node(nodes.table, include_self=False):
                continue
            rows = [[_cell_chars(e) for e in row.findall(nodes.entry)]
                    for row in table.findall(nodes.row)]
            ncols = max((len(r) for r in rows), default=0)
            if ncols == 0 or any(len(r) != ncols for r in rows):
                continue  # spanning cells: leave it to Sphinx
            # a table whose longest words alone overfill the line (the 9-column chip catalogue)
            # prints a size smaller, with a quarter more characters to the line, so no header
            # word is clipped
            small = sum(round(max(r[i][1] for r in rows) * 1.15) + 3
                        for i in range(ncols)) > LINE_CHARS
            total = round(LINE_CHARS * 1.25) if small else LINE_CHARS
            widths = column_widths(rows, total)
            lines = sum(max(-(-max(t, 1) // max(w, 1)) for (t, _), w in zip(r, widths, strict=True))
                        for r in rows)
            if lines < TALL_LINES and not small:
                continue
            table["classes"].append("longtable")
            spec = "".join(f">{{\\raggedright\\arraybackslash}}\\X{{{w}}}{{{total}}}"
                           for w in widths)
            at = table.parent.index(table)
            table.parent.insert(at, addnodes.tabular_col_spec(spec=spec))
            if small:
                table.parent.insert(at, nodes.raw("", "\\begingroup\\footnotesize", format="latex"))
                table.parent.insert(table.parent.index(table) + 1,
                                    nodes.raw("", "\\endgroup", format="latex"))


def _cell_chars(entry):
    """(characters, longest word) of a table cell; math counts at half its TeX source."""
    text = entry.astext()
    maths = sum(len(m.astext()) for m in entry.findall(nodes.math))
    chars = len(text) - maths // 2
    # a no-break space joins its neighbours into one word ("Ch. 13" must not break)
    words = [len(w) for w in re.split(r"[ \t\n\r\f\v]+", text) if w]
    return chars, min(max(words, default=1), 24)


def column_widths(rows, total):
    """Column widths (in characters, summing to ``total``: a tall table spans the text) for
    rows of (characters, longest word) cells: each column its longest word, plus a share of the
    rest in proportion to the text it holds beyond that (summed over its rows, so that one long
    cell does not claim the page), never more than its longest cell needs."""
    ncols = len(rows[0])
    natural = [max(r[i][0] for r in rows) for i in range(ncols)]
    # a word's room: sans headers run wider than the body's serif, plus the column's padding
    words = [round(max(r[i][1] for r in rows) * 1.15) + 3 for i in range(ncols)]
    mass = [sum(max(r[i][0] - words[i], 0) for r in rows) for i in range(ncols)]
    spare = max(total - sum(words), 0)
    widths = [min(max(n, w), w + spare * m / (sum(mass) or 1))
              for n, w, m in zip(natural, words, mass, strict=True)]
    return [max(1, int(w * total / sum(widths))) for w in widths]  # what is left, all share


class LongValuesElided(SphinxPostTransform):
    """The library reference prints a module constant as ``NAME = value``; a catalogue's value
    runs for pages in one unbreakable signature line, off the bottom of the page. In the PDF a
    value longer than MAX_VALUE characters is cut to its start and an ellipsis."""

    default_priority = 800
    builders = ("latex",)
    MAX_VALUE = 160

    def run(self, **kwargs):
        for sig in self.document.findall(addnodes.desc_signature):
            for note in list(sig.findall(addnodes.desc_annotation)):
                text = note.astext()
                if len(text) > self.MAX_VALUE and text.lstrip().startswith("="):
                    short = text[: self.MAX_VALUE].rsplit(" ", 1)[0] + " …"
                    note.replace_self(addnodes.desc_annotation(short, short))


def setup(app):
    app.add_post_transform(ExerciseRefsAsText)
    app.add_post_transform(SolutionsAppendix)
    app.add_post_transform(LongTables)
    app.add_post_transform(LongValuesElided)
    app.add_transform(ExplorersAsFigures)
    app.add_transform(UnansweredChecksDropped)
    app.add_transform(IntroTitled)
    app.add_transform(AppendicesLettered)
    app.connect("builder-inited", exercises_per_chapter, priority=900)  # after jupyterbook-latex
    app.connect("env-check-consistency", _restore_secnum_depth)
    app.connect("config-inited", title_page)
    app.connect("html-page-context", _pdf_link)
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
