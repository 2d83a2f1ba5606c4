"""The reader's edition of the chapter notebooks (`make notebooks`, run by `make book`).

The chapters in book/ are MyST source: numbers are `{glue:}` placeholders filled in by the book
build, citations and cross-references are roles, admonitions and exercises are directive fences.
JupyterLab, Colab and Binder show all of that as raw text. This module writes, for every notebook
of _toc.yml, a copy into _build/notebooks/ (same file names) whose markdown every Jupyter front
end renders:

- `{glue:}` / `{glue:text}` / `{glue:md}` roles and `{glue:figure}` directives: the glued value
  from the notebook's own stored outputs (format specs such as ``:.1f`` applied);
- admonitions: titled blockquotes; `{dropdown}` and ``:class: dropdown``: ``<details>`` blocks;
- `{exercise}`: numbered headings; `{solution}`: ``<details><summary>`` blocks, except the
  solutions of the exercises the course guide assigns as homework (`homework_labels`): a note
  (HOMEWORK_NOTE) in their place, as on the site (_ext/homework_solutions.py), and the glued
  values only they paste dropped from the stored outputs;
- `{cite}` / `{cite:t}` / `{cite:p}`: author-year text linking to a References cell appended to
  the chapter (the entries it cites, formatted as the site's bibliography formats them);
- `{numref}` / `{ref}` / `{eq}` / `{doc}`, section numbers, figure captions, labelled display math
  (``\\tag{3.1}``, which MathJax numbers): the numbers and titles the HTML build gave them.

Nothing is renumbered here. The HTML build writes what Sphinx resolved (numbers of sections,
figures, equations and exercises, page titles, citation texts) to ``_build/resolved.json``
(_ext/resolved.py), and this module reads it: run `make book` first. MyST is parsed with
myst-parser's own markdown-it parser (the one the site is built with), so roles, targets,
directives and labelled math are found as the site finds them; the text around them is kept
byte for byte.

Code cells, outputs and widget state are kept; cells the site hides get their input collapsed
(``metadata.jupyter.source_hidden``); each figure gets its numbered caption as a markdown cell; a
first code cell installs the library when `llmmath` is not importable (Colab, Binder).

``student=True`` (for the teaching kit's student edition, `make student`) additionally drops every
solution block and every cell tagged ``answer`` (``ANSWER_TAG``: the hidden cells that compute the
values only solutions show, and any cell whose output gives an exercise's answer away), with
nbconvert's ``TagRemovePreprocessor``. ``--student-site DIR`` writes the MyST source of the
student site into DIR: the pages of _toc.yml with the same cells and solution blocks removed but
MyST kept, the configuration (title marked, sphinx-exercise's ``hide_solutions`` on) and links to
the assets, for `jupyter-book build DIR` (no build needed for that step).

Usage: python -m scripts.reader_edition [--out DIR] [--resolved JSON] [--student] [names ...]
       python -m scripts.reader_edition --student-site DIR
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "notebooks"
RESOLVED = ROOT / "_build" / "resolved.json"  # written by _ext/resolved.py
RECORD = "application/papermill.record/"
# The one tag that marks an answer cell: the student edition drops it (README, "For instructors").
ANSWER_TAG = "answer"
ANSWER_TAGS = (ANSWER_TAG,)
# Tags with which the site hides a cell's input; the edition collapses it instead.
HIDDEN_INPUT_TAGS = ("remove-input", "hide-input", "remove-cell", "hide-cell")
ADMONITIONS = ("note", "tip", "hint", "important", "warning", "caution", "attention", "danger",
               "error", "seealso")
# Used by the install cell when the notebook runs outside a checkout and _config.yml names no
# public repository yet (README: launch buttons).
FALLBACK_REPO_URL = ""


class NotBuilt(RuntimeError):
    """The resolved numbers are missing: the HTML build has not run."""


# --------------------------------------------------------------------------------------------
# The book: pages of _toc.yml, and what the HTML build resolved


def toc_pages(root: Path = ROOT) -> list[tuple[str, bool]]:
    """[(docname, in a numbered part)] in _toc.yml order, as Jupyter Book's own parser
    (sphinx-external-toc) reads it. For what needs no build (the student site's source, lists
    of chapters); numbers and titles come from the build (`load_book`)."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    site = parse_toc_yaml(root / "_toc.yml")
    numbered = {doc for tree in site.root.subtrees if tree.numbered for doc in tree.files()}
    return [(doc, doc in numbered) for doc in site]


@dataclass
class Target:
    kind: str  # "section", "figure", "equation", "exercise", "table", ... or "target"
    doc: str  # docname, e.g. "book/decode_roofline"
    number: str  # "3.1" ("" when unnumbered)
    title: str = ""
    ref_is_numref: bool = False  # sphinx-exercise shows a plain {ref} as its {numref}


@dataclass
class Book:
    root: Path
    docs: list[tuple[str, str | None]]  # (docname, chapter number or None), toc order
    titles: dict[str, str] = field(default_factory=dict)  # docname -> title (no number)
    labels: dict[str, Target] = field(default_factory=dict)
    sections: dict[str, list[dict]] = field(default_factory=dict)  # docname -> in doc order
    parts: dict[str, str] = field(default_factory=dict)  # docname -> part caption
    citations: dict[str, dict] = field(default_factory=dict)  # bib key -> author, year, entry
    cite_style: dict = field(default_factory=dict)  # brackets and separators
    formats: dict = field(default_factory=lambda: {"numfig": {}, "eq": "({number})"})


def load_book(root: Path = ROOT, resolved: Path | None = None) -> Book:
    """The book as the HTML build resolved it (``_build/resolved.json``)."""
    path = resolved or (root / "_build" / "resolved.json")
    if not path.exists():
        raise NotBuilt(f"{path} is missing: the reader's edition takes its numbers, titles and "
                       "citations from the HTML build; run `make book` first")
    data = json.loads(path.read_text(encoding="utf-8"))
    docs = data["docs"]
    return Book(
        root=root,
        docs=[(doc, d["number"] or None) for doc, d in docs.items()],
        titles={doc: d["title"] for doc, d in docs.items()},
        labels={k: Target(v["kind"], v["doc"], v["number"], v["title"], v["ref_is_numref"])
                for k, v in data["labels"].items()},
        sections={doc: d["sections"] for doc, d in docs.items()},
        parts={doc: d["part"] for doc, d in docs.items()},
        citations=data["citations"], cite_style=data["cite_style"], formats=data["formats"])


GUIDE = ROOT / "book" / "course_guide.md"
# What the public editions show in place of a homework exercise's worked solution
HOMEWORK_NOTE = ("Assigned as homework in the course guide: the worked solution is in the "
                 "instructor kit.")


def homework_labels(guide: Path = GUIDE) -> set[str]:
    """The exercises the course guide assigns as homework, in either plan (its tables' homework
    columns), projects left out (open-ended: no single answer). The one list of homework: the
    public site (_ext/homework_solutions.py) and its notebooks omit their worked solutions, the
    leak scan (tests/test_instructor_kit.py) searches for their answers."""
    out, column = set(), None
    for line in guide.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            column = None
        elif "homework" in cells:
            column = cells.index("homework")
        elif column is not None and not set(line) <= set("|-: "):
            hw = cells[column].split("project:")[0]
            out |= set(re.findall(r"\{ref\}`([\w-]+)`", hw))
    return out


def chapter_notebooks(book: Book) -> list[str]:
    return [doc for doc, _ in book.docs if (book.root / f"{doc}.ipynb").exists()]


# --------------------------------------------------------------------------------------------
# MyST, as the site's parser sees it


@functools.cache
def _parser():
    """myst-parser's markdown-it parser with the extensions _config.yml enables."""
    import yaml
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    parse = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8")).get("parse", {})
    cfg = MdParserConfig(enable_extensions=set(parse.get("myst_enable_extensions", [])),
                         dmath_double_inline=parse.get("myst_dmath_double_inline", False))
    return create_md_parser(cfg, RendererHTML)


def parse(text: str):
    """The block tokens of MyST markdown (markdown-it-py tokens, with line maps)."""
    return _parser().parse(text)


@dataclass
class Directive:
    name: str
    arg: str
    options: dict[str, str]
    body: str


def directive(token) -> Directive | None:
    """A ```{name} / :::{name} fence as a Directive (None for a code fence)."""
    if token.type not in ("fence", "colon_fence"):
        return None
    m = re.match(r"^\{([\w:-]+)\}\s*(.*)$", token.info.strip())
    if not m:
        return None
    lines = token.content.split("\n")
    options, k = {}, 0
    while k < len(lines) and re.match(r"^\s*:[\w-]+:", lines[k]):
        key, _, value = lines[k].strip()[1:].partition(":")
        options[key] = value.strip()
        k += 1
    if options and k < len(lines) and not lines[k].strip():
        k += 1  # the blank line between options and content
    return Directive(m.group(1), m.group(2).strip(), options, "\n".join(lines[k:]).strip("\n"))


def roles(tokens):
    """Every role of the inline text of these block tokens, in order: (name, content)."""
    for tok in tokens:
        for child in tok.children or []:
            if child.type == "myst_role":
                yield child.meta["name"], child.content


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    starts.append(len(text) + 1)
    return starts


def rewrite(text: str, block, role, heading=None) -> str:
    """`text` with its MyST constructs replaced and everything else kept as it is.

    ``block(token, raw)`` returns the replacement of a fence, target or labelled display math
    (``None``: keep it), ``role(name, content)`` the text of a role (``role=None``: keep roles),
    ``heading()`` the number to put before the next heading ("" for none)."""
    starts = _line_starts(text)
    edits, cursor = [], 0
    for tok in parse(text):
        if tok.map and tok.type in ("fence", "colon_fence", "myst_target", "math_block_label"):
            a, b = starts[tok.map[0]], min(starts[tok.map[1]], len(text))
            raw = text[a:b]
            new = block(tok, raw.rstrip("\n"))
            if new is not None:
                edits.append((a, b, new + "\n" if new and raw.endswith("\n") else new))
            cursor = b
        elif (tok.type == "heading_open" and heading is not None and tok.level == 0
              and tok.markup.startswith("#")):
            n = heading()
            m = re.match(r"[ \t]*#{1,6}[ \t]+", text[starts[tok.map[0]]:])
            if n and m:
                at = starts[tok.map[0]] + m.end()
                edits.append((at, at, f"{n}. "))
        elif tok.type == "inline" and role is not None:
            for child in tok.children or []:
                if child.type == "code_inline":  # step over it: a role spelled inside is code
                    body = r"\s+".join(map(re.escape, child.content.split()))
                    tick = re.escape(child.markup)
                    m = re.compile(tick + r"\s*" + body + r"\s*" + tick).search(text, cursor)
                    cursor = m.end() if m else cursor
                elif child.type == "myst_role":
                    name, content = child.meta["name"], child.content
                    pat = re.compile(r"\{" + re.escape(name) + r"\}(`+)" + re.escape(content)
                                     + r"\1")
                    m = pat.search(text, cursor)
                    if not m:
                        raise ValueError(f"role {{{name}}}`{content}` not found in its source")
                    edits.append((m.start(), m.end(), role(name, content)))
                    cursor = m.end()
    out, pos = [], 0
    for a, b, new in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(text[pos:a])
        out.append(new)
        pos = b
    out.append(text[pos:])
    return "".join(out)


def glue_refs(text: str) -> set[str]:
    """Names of glued values this MyST text pastes (roles and {glue:figure}), at any depth."""
    found = set()
    for tok in parse(text):
        d = directive(tok)
        if d:
            if d.name.startswith("glue"):
                found.add(d.arg)
            found |= glue_refs(d.arg) | glue_refs(d.body)
        for name, content in roles([tok]):
            if name.startswith("glue"):
                found.add(content.partition(":")[0].strip())
    return found


def solution_bodies(text: str) -> list[str]:
    """The bodies of the `{solution}` blocks of MyST markdown, at any depth."""
    found = []
    for tok in parse(text):
        d = directive(tok)
        if d:
            found += [d.body] if d.name == "solution" else solution_bodies(d.body)
    return found


# --------------------------------------------------------------------------------------------
# Transformations


@dataclass
class Context:
    """What the transformations of one chapter need."""
    book: Book
    doc: str
    glue: dict[str, dict] = field(default_factory=dict)  # name -> mime bundle (prefix stripped)
    cited: list[str] = field(default_factory=list)
    student: bool = False
    homework: frozenset[str] = frozenset()  # exercises whose solution gives way to HOMEWORK_NOTE


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def glue_values(nb: dict) -> dict[str, dict]:
    """Every glued value of a notebook: {name: {mime: data}} from papermill.record bundles."""
    values = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            data = out.get("data", {})
            if name and any(k.startswith(RECORD) for k in data):
                values[name] = {k[len(RECORD):]: v for k, v in data.items()
                                if k.startswith(RECORD)}
    return values


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def escape_md(text: str) -> str:
    """Plain text made safe inside markdown prose: `$` would start math in Jupyter."""
    return re.sub(r"([\\$*_|<`])", r"\\\1", text)


def glue_text(ctx: Context, content: str, role: str) -> str:
    """The text a `{glue:}` / `{glue:text}` / `{glue:md}` role shows."""
    name, _, spec = content.partition(":")
    name = name.strip()
    if name not in ctx.glue:
        raise KeyError(f"{ctx.doc}: glue name {name!r} has no stored value "
                       f"(glued names: {sorted(ctx.glue)[:8]}...); re-execute the notebook")
    bundle = ctx.glue[name]
    if role == "glue:md":
        return _text(bundle.get("text/markdown", bundle.get("text/plain", "")))
    plain = _text(bundle.get("text/plain", ""))
    if role == "glue:text" and spec:
        try:
            plain = format(float(plain), spec)
        except ValueError as exc:
            raise ValueError(f"{ctx.doc}: glue {name!r} = {plain!r} does not take the "
                             f"format spec {spec!r}") from exc
    if role in ("glue", "glue:any") and "text/markdown" in bundle:
        return _text(bundle["text/markdown"]).strip()
    return escape_md(plain)


def _ref_target(ctx: Context, label: str) -> Target:
    if label not in ctx.book.labels:
        raise KeyError(f"{ctx.doc}: unknown reference target {label!r}")
    return ctx.book.labels[label]


def _doc_link(ctx: Context, doc: str, text: str) -> str:
    """A link to another chapter's reader notebook; plain text for pages that are not notebooks."""
    if (ctx.book.root / f"{doc}.ipynb").exists() and doc != ctx.doc:
        return f"[{text}]({Path(doc).name}.ipynb)"
    return text


def _resolve_doc(ctx: Context, target: str) -> str:
    base = Path(ctx.doc).parent
    doc = (base / target).as_posix() if not target.startswith("/") else target.lstrip("/")
    return re.sub(r"\.(ipynb|md)$", "", doc)


def cite_text(ctx: Context, keys: str, role: str) -> str:
    """A citation as the site's author-year style shows it, each part linking to References."""
    cites = []
    for key in [k.strip() for k in keys.split(",") if k.strip()]:
        if key not in ctx.book.citations:
            raise KeyError(f"{ctx.doc}: citation key {key!r} is not in the bibliography")
        if key not in ctx.cited:
            ctx.cited.append(key)
        cites.append(ctx.book.citations[key])
    cites.sort(key=lambda c: c["order"])  # the site lists a group in the bibliography's order
    if role == "cite:t":
        s = ctx.book.cite_style["t"]
        return s["sep"].join(f"{c['author']}{s['text_reference_sep']}{s['left']}"
                             f"[{c['year']}](#References){s['right']}" for c in cites)
    s = ctx.book.cite_style["p"]
    return s["left"] + s["sep"].join(f"[{c['author']}{s['author_year_sep']}{c['year']}]"
                                     "(#References)" for c in cites) + s["right"]


def role_text(ctx: Context, role: str, content: str) -> str:
    """The markdown one MyST role becomes."""
    explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", content, re.S)
    text, label = (explicit.group(1), explicit.group(2)) if explicit else (None, content.strip())
    if role in ("glue", "glue:", "glue:any", "glue:text", "glue:md"):
        return glue_text(ctx, content, role.rstrip(":") or "glue")
    if role in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts"):
        return cite_text(ctx, content, role[:6] if role.startswith("cite:t") else "cite")
    numfig = ctx.book.formats["numfig"]
    if role == "numref":
        t = _ref_target(ctx, label)
        if t.kind not in numfig:
            raise KeyError(f"{ctx.doc}: {{numref}} to {label!r}, a {t.kind} (not numbered)")
        shown = (text or numfig[t.kind]).replace("%s", "{number}").replace("{name}", t.title)
        return shown.replace("{number}", t.number)
    if role == "ref":
        t = _ref_target(ctx, label)
        if text:
            shown = text
        elif t.ref_is_numref:
            shown = numfig[t.kind].replace("%s", t.number)
        else:
            shown = t.title
        return _doc_link(ctx, t.doc, shown) if t.doc != ctx.doc else shown
    if role == "eq":
        return ctx.book.formats["eq"].replace("{number}", _ref_target(ctx, label).number)
    if role == "doc":
        doc = _resolve_doc(ctx, label)
        if doc not in ctx.book.titles:
            raise KeyError(f"{ctx.doc}: {{doc}} target {label!r} is not a page of the book")
        return _doc_link(ctx, doc, text or ctx.book.titles[doc])
    if role == "math":
        return f"${content}$"
    if role in ("sub", "sup"):
        return f"<{role}>{content}</{role}>"
    if role in ("term", "abbr", "kbd", "code", "samp", "file", "command", "guilabel"):
        return f"`{content}`" if role in ("kbd", "code", "samp", "file", "command") else content
    raise ValueError(f"{ctx.doc}: role {{{role}}} has no reader's-edition rendering; "
                     f"add one to scripts/reader_edition.py")


def transform_roles(text: str, ctx: Context) -> str:
    """Every role of inline MyST text (a title, a caption) replaced with its reader's text."""
    return rewrite(text, lambda tok, raw: None, lambda n, c: role_text(ctx, n, c))


def titled_block(title: str, body: str) -> str:
    """An admonition as a titled blockquote (HTML wrapper, so display math inside stays intact)."""
    return f"<blockquote>\n\n**{title}**\n\n{body}\n\n</blockquote>"


def details_block(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def _math(body: str, number: str) -> str:
    body = body.strip("\n")
    return f"$$\n{body}\n\\tag{{{number}}}\n$$" if number else f"$$\n{body}\n$$"


def _caption(ctx: Context, label: str, caption: str) -> str:
    kind = ctx.book.formats["numfig"]["figure"].replace("%s", _ref_target(ctx, label).number)
    return f"**{kind}.** {caption}"


def transform_directive(d: Directive, ctx: Context) -> str:
    name = d.name
    if name == "math":
        label = d.options.get("label")
        return _math(d.body.strip(), _ref_target(ctx, label).number if label else "")
    if name == "glue:figure" or name == "glue":
        bundle = ctx.glue.get(d.arg)
        if bundle is None:
            raise KeyError(f"{ctx.doc}: glue name {d.arg!r} has no stored value")
        img = next((k for k in ("image/png", "image/jpeg") if k in bundle), None)
        shown = (f"![{d.options.get('alt', d.arg)}](data:{img};base64,{_text(bundle[img])})"
                 if img else escape_md(_text(bundle.get("text/plain", ""))))
        caption = transform_markdown(d.body, ctx) if d.body else ""
        if "name" in d.options:
            caption = _caption(ctx, d.options["name"], caption)
        return shown + (f"\n\n{caption}" if caption.strip() else "")
    if name == "solution" and not ctx.student and d.arg.strip() in ctx.homework:
        return titled_block("Note", HOMEWORK_NOTE)  # its glued values are gone: body not read
    body = transform_markdown(d.body, ctx)
    if name == "exercise":
        label = d.options.get("label")
        n = _ref_target(ctx, label).number if label else ""
        title = transform_roles(d.arg, ctx)
        head = ctx.book.formats["numfig"]["exercise"].replace("%s", n).strip()
        return f"#### {head}" + (f" ({title})" if title else "") + f"\n\n{body}"
    if name == "solution":
        if ctx.student:
            return ""
        t = _ref_target(ctx, d.arg.strip())
        title = transform_roles(t.title, ctx)
        head = ctx.book.formats["numfig"]["exercise"].replace("%s", t.number)
        summary = f"Solution to {head}" + (f" ({title})" if title else "")
        return details_block(summary, body)
    title = transform_roles(d.arg, ctx) if d.arg else ""
    if name == "dropdown" or "dropdown" in d.options.get("class", "").split():
        return details_block(title or name.capitalize(), body)
    if name == "admonition" or name in ADMONITIONS:
        return titled_block(title or name.capitalize(), body)
    if name in ("margin", "sidebar", "epigraph", "topic", "card", "div"):
        return titled_block(title, body) if title else f"<blockquote>\n\n{body}\n\n</blockquote>"
    if name == "figure":
        caption = body
        if "name" in d.options:
            caption = _caption(ctx, d.options["name"], body)
        return f"![{d.options.get('alt', '')}]({d.arg})\n\n{caption}"
    raise ValueError(f"{ctx.doc}: directive {{{name}}} has no reader's-edition rendering; "
                     f"add one to scripts/reader_edition.py")


def transform_markdown(text: str, ctx: Context, heading_numbers: list[str] | None = None) -> str:
    """MyST markdown -> markdown Jupyter renders (directives, targets, math, roles, numbers)."""
    numbers = iter(heading_numbers or [])

    def block(tok, raw):
        if tok.type == "myst_target":
            return ""
        if tok.type == "math_block_label":  # indentation and body kept as written
            m = re.match(r"^([ \t]*)\$\$(.*)\$\$[ \t]*\([^)]*\)[ \t]*$", raw, re.S)
            return m.group(1) + _math(m.group(2), _ref_target(ctx, tok.info).number)
        d = directive(tok)
        # a directive (and a code fence, kept as it is) is a block of its own: blank lines around
        return f"\n\n{transform_directive(d, ctx) if d else raw}\n\n"

    out = rewrite(text, block, lambda n, c: role_text(ctx, n, c), lambda: next(numbers, ""))
    return re.sub(r"\n{3,}", "\n\n", out).strip("\n")


def heading_count(text: str) -> int:
    """The headings of MyST markdown that are sections of the page (not inside a directive)."""
    return sum(1 for tok in parse(text) if tok.type == "heading_open" and tok.level == 0)


def heading_numbers(nb: dict, ctx: Context) -> dict[str, list[str]]:
    """{cell id: the site's numbers of its headings}: the built page's sections, in order."""
    sections = ctx.book.sections.get(ctx.doc, [])
    out, i = {}, 0
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            n = heading_count(_source(cell))
            out[cell.get("id")] = [s["number"] for s in sections[i:i + n]]
            i += n
    if i != len(sections):
        raise ValueError(f"{ctx.doc}: {i} headings in the notebook, {len(sections)} sections in "
                         "the built page: rebuild the site (`make book`)")
    return out


def install_cell(root: Path = ROOT) -> dict:
    """The first code cell: install llmmath when it is missing (Colab, Binder); else a no-op."""
    import yaml

    url = FALLBACK_REPO_URL
    cfg = root / "_config.yml"
    if cfg.exists():
        repo = yaml.safe_load(cfg.read_text(encoding="utf-8")).get("repository") or {}
        url = (repo.get("url") or "").strip() or url
    target = f"git+{url}" if url else ""
    src = [
        "# Reader's edition: install the book's library `llmmath` where it is missing (Colab,\n",
        "# Binder). Does nothing when llmmath imports.\n",
        "import importlib, importlib.util, pathlib, subprocess, sys\n",
        "if importlib.util.find_spec(\"llmmath\") is None:\n",
        "    checkout = next((p for p in pathlib.Path.cwd().resolve().parents\n",
        "                     if (p / \"lib\" / \"llmmath\").is_dir()), None)\n",
        f"    source = str(checkout) if checkout else {target!r}\n",
        "    if not source:\n",
        "        raise RuntimeError(\"llmmath is not installed: "
        "pip install the book's repository \"\n",
        "                           \"(see its README) and restart the kernel\")\n",
        "    subprocess.check_call([sys.executable, \"-m\", \"pip\", \"install\", "
        "\"-q\", source])\n",
        "    importlib.invalidate_caches()\n",
    ]
    return {"cell_type": "code", "execution_count": None, "id": "reader-install",
            "metadata": {"tags": ["reader-install"]}, "outputs": [], "source": src}


def transform_output(out: dict, ctx: Context) -> dict:
    """Stored markdown outputs (tables with {cite:p}) get the same role treatment as prose."""
    data = out.get("data", {})
    if "text/markdown" in data:
        out = copy.deepcopy(out)
        out["data"]["text/markdown"] = transform_roles(_text(data["text/markdown"]), ctx)
    return out


def references_cell(ctx: Context) -> dict | None:
    """The entries this chapter cites, labelled and formatted as the site's bibliography."""
    if not ctx.cited:
        return None
    lines = ["## References", ""]
    for key in sorted(ctx.cited, key=lambda k: ctx.book.citations[k]["order"]):
        c = ctx.book.citations[key]
        lines.append(f"- \\[{escape_md(c['label'])}\\] {c['entry']}")
    return {"cell_type": "markdown", "id": "reader-references", "metadata": {},
            "source": "\n".join(lines)}


def _split_source(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def transform_notebook(nb: dict, ctx: Context, student: bool = False) -> dict:
    """The reader's (or, with `student`, the student's) edition of one executed notebook."""
    ctx.student = student
    numbers = heading_numbers(nb, ctx)  # of the whole page, before any cell is dropped
    if student:
        nb = student_source(nb, ctx.doc)  # answer cells and their glued values gone first
    elif ctx.homework:
        nb = without_homework_glue(nb, ctx.homework)
    ctx.glue = glue_values(nb)
    new = copy.deepcopy(nb)
    cells, installed = [], False
    for cell in copy.deepcopy(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            text = transform_markdown(_source(cell), ctx, numbers.get(cell.get("id"), []))
            cell["source"] = _split_source(text)
            if cell["source"]:
                cells.append(cell)
            continue
        if cell["cell_type"] != "code":
            cells.append(cell)
            continue
        if not installed:
            cells.append(install_cell(ctx.book.root))
            installed = True
        if any(t in HIDDEN_INPUT_TAGS for t in tags):
            cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
        cell["outputs"] = [transform_output(o, ctx) for o in cell.get("outputs", [])]
        cells.append(cell)
        fig = cell["metadata"].get("mystnb", {}).get("figure", {})
        if fig.get("name"):
            caption = transform_markdown(fig.get("caption", ""), ctx)
            cells.append({"cell_type": "markdown", "id": f"reader-caption-{fig['name']}"[:64],
                          "metadata": {}, "source": _caption(ctx, fig["name"], caption)})
    refs = references_cell(ctx)
    if refs:
        cells.append(refs)
    new["cells"] = cells
    new["nbformat"], new["nbformat_minor"] = 4, max(nb.get("nbformat_minor", 5), 5)
    return new


# --------------------------------------------------------------------------------------------
# The student edition: answer cells and solution blocks removed, MyST otherwise kept


def strip_solutions(text: str, labels: set[str] | None = None) -> str:
    """MyST markdown with every ``{solution}`` block removed (at any depth), or only those of the
    exercises in `labels`; the rest verbatim."""
    def block(tok, raw):
        d = directive(tok)
        if d is None:
            return None
        if d.name == "solution" and (labels is None or d.arg.strip() in labels):
            return ""
        lines = raw.split("\n")
        if len(lines) < 2:
            return None
        inner = "\n".join(lines[1:-1])
        stripped = strip_solutions(inner, labels)
        if stripped == inner:
            return None
        return "\n".join([lines[0]] + ([stripped] if stripped else []) + [lines[-1]]) + "\n"

    out = rewrite(text, block, None)
    return re.sub(r"\n{3,}", "\n\n", out).strip("\n")


def _is_answer(cell: dict) -> bool:
    return any(t in ANSWER_TAGS for t in cell.get("metadata", {}).get("tags", []))


def student_source(nb: dict, doc: str = "") -> dict:
    """One notebook's student MyST source: answer cells (nbconvert's TagRemovePreprocessor) and
    solution blocks removed.

    Raises ValueError when the remaining prose pastes a glued value that only an answer cell
    computes (an exercise statement needs it: glue it in an untagged cell instead)."""
    import nbformat
    from nbconvert.preprocessors import TagRemovePreprocessor

    new = nbformat.from_dict(copy.deepcopy(nb))
    TagRemovePreprocessor(remove_cell_tags=set(ANSWER_TAGS), enabled=True).preprocess(new, {})
    new = json.loads(json.dumps(new))  # back to plain dicts
    for cell in new["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = _split_source(strip_solutions(_source(cell)))
    kept = set(glue_values(new))
    needed = set()
    for cell in new["cells"]:
        if cell["cell_type"] == "markdown":
            needed |= glue_refs(_source(cell))
    missing = sorted(needed - kept)
    if missing:
        raise ValueError(f"{doc}: the student edition's prose pastes {missing}, glued only in "
                         f"cells tagged {ANSWER_TAG!r}; glue them in an untagged cell")
    return new


def without_homework_glue(nb: dict, homework: set[str]) -> dict:
    """The notebook without the stored glue outputs that only the solutions of `homework`
    exercises paste: the public edition shows HOMEWORK_NOTE in their place, and the values would
    otherwise still sit in the downloadable notebook."""
    texts = [_source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
    captions = [c["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
                for c in nb["cells"]]
    kept = set().union(*(glue_refs(strip_solutions(t, homework)) for t in texts + captions))
    gone = set().union(*(glue_refs(t) for t in texts)) - kept
    if not gone:
        return nb
    new = copy.deepcopy(nb)
    for cell in new["cells"]:
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if o.get("metadata", {})
                               .get("scrapbook", {}).get("name") not in gone]
    return new


def student_config(text: str) -> str:
    """_config.yml for the student site: the titles say so; sphinx-exercise hides solutions."""
    text = re.sub(r"(?m)^title:\s*(.*)$", lambda m: f"title: {m.group(1)} (student edition)",
                  text, count=1)
    text = re.sub(r"(?m)^(\s+logo:[ \t]*\n\s+text:[ \t]*)(.+)$", r"\1\2 (student edition)", text,
                  count=1)  # the theme's sidebar title
    text, n = re.subn(r"(?m)^(sphinx:\s*\n(?:(?:  .*)?\n)*?  config:[ \t]*\n)",
                      r"\1    hide_solutions: true\n", text, count=1)
    if not n:
        raise ValueError("_config.yml: no `sphinx: config:` block to add hide_solutions to")
    return text


STUDENT_LINKS = ("_vendor", "_ext", "_latex", "references.bib")


def build_student_site(dest: Path, root: Path = ROOT) -> list[Path]:
    """Write the student site's source tree into `dest` (built by `make student`)."""
    import shutil

    if dest.exists():
        shutil.rmtree(dest)
    (dest / "book").mkdir(parents=True)
    (dest / "_toc.yml").write_text((root / "_toc.yml").read_text(encoding="utf-8"),
                                   encoding="utf-8")
    (dest / "_config.yml").write_text(student_config((root / "_config.yml").read_text(
        encoding="utf-8")), encoding="utf-8")
    for name in STUDENT_LINKS:
        if (root / name).exists():
            (dest / name).symlink_to((root / name).resolve())
    written = []
    for doc, _ in toc_pages(root):
        src_nb, src_md = root / f"{doc}.ipynb", root / f"{doc}.md"
        if src_nb.exists():
            nb = student_source(json.loads(src_nb.read_text(encoding="utf-8")), doc)
            out = dest / f"{doc}.ipynb"
            out.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        elif src_md.exists():
            out = dest / f"{doc}.md"
            out.write_text(strip_solutions(src_md.read_text(encoding="utf-8")) + "\n",
                           encoding="utf-8")
        else:
            continue
        written.append(out)
    return written


def build(out: Path = OUT, student: bool = False, root: Path = ROOT,
          names: list[str] | None = None, resolved: Path | None = None) -> list[Path]:
    """Write the edition of every notebook in the table of contents into `out`."""
    book = load_book(root, resolved)
    guide = root / "book" / "course_guide.md"
    homework = homework_labels(guide) if guide.exists() else set()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for doc in chapter_notebooks(book):
        src = root / f"{doc}.ipynb"
        if names and src.name not in names and src.stem not in names:
            continue
        nb = json.loads(src.read_text(encoding="utf-8"))
        ctx = Context(book, doc, homework=frozenset(homework))
        new = transform_notebook(nb, ctx, student=student)
        dest = out / src.name
        dest.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="output folder (default _build/notebooks)")
    p.add_argument("--resolved", type=Path, default=None,
                   help="the HTML build's resolved.json (default _build/resolved.json)")
    p.add_argument("--student", action="store_true", help="drop solutions and answer cells")
    p.add_argument("--student-site", type=Path, metavar="DIR",
                   help="write the student site's MyST source tree into DIR instead")
    p.add_argument("names", nargs="*", help="notebook names (default: every chapter)")
    args = p.parse_args(argv)
    if args.student_site:
        written = build_student_site(args.student_site)
        print(f"wrote the student site's source ({len(written)} pages) into {args.student_site}")
        return 0 if written else 1
    try:
        written = build(args.out, student=args.student, names=args.names,
                        resolved=args.resolved)
    except NotBuilt as exc:
        print(f"reader_edition: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
