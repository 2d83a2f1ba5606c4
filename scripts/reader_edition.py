"""The reader's edition of the chapter notebooks (`make notebooks`).

The chapters in book/ are MyST source: numbers are `{glue:}` placeholders filled in by the book
build, citations and cross-references are roles, admonitions and exercises are directive fences.
JupyterLab, Colab and Binder show all of that as raw text. This script writes, for every notebook
listed in _toc.yml, a copy into _build/notebooks/ (same file names) whose markdown every Jupyter
front end renders:

- `{glue:}` / `{glue:text}` / `{glue:md}` roles and `{glue:figure}` directives: the glued value
  from the notebook's own stored outputs (format specs such as ``:.1f`` applied);
- admonitions: titled blockquotes; `{dropdown}` and ``:class: dropdown``: ``<details>`` blocks;
- `{exercise}`: numbered headings; `{solution}`: ``<details><summary>`` blocks;
- `{cite}` / `{cite:t}` / `{cite:p}`: author-year text linking to a References cell appended to
  the chapter (the entries it cites, from references.bib);
- `{numref}` / `{ref}` / `{eq}` / `{doc}`: the numbers and titles the HTML build gives them,
  computed from the same rules (chapters numbered through the numbered parts of _toc.yml, figures,
  equations, exercises and sections numbered in document order within a chapter); a test checks
  them against the built site where one exists;
- labelled display math (`$$ ... $$ (label)`, `{math}`): `$$ ... \\tag{3.1} $$`, which MathJax
  numbers.

Code cells, outputs and widget state are kept; cells the site hides get their input collapsed
(``metadata.jupyter.source_hidden``); each figure gets its numbered caption as a markdown cell; a
first code cell installs the library when `llmmath` is not importable (Colab, Binder).

``student=True`` (for the teaching kit's student edition, `make student`) additionally drops every
solution block and every cell tagged ``answer`` (``ANSWER_TAG``: the hidden cells that compute the
values only solutions show, and any cell whose output gives an exercise's answer away).
``--student-site DIR`` writes the MyST source of the student site into DIR: the pages of _toc.yml
with the same cells and solution blocks removed but MyST kept, the configuration (title marked,
sphinx-exercise's ``hide_solutions`` on) and links to the assets, for `jupyter-book build DIR`.

Standard library only, so it runs before any environment exists.
Usage: python scripts/reader_edition.py [--out DIR] [--student] [notebook names ...]
       python scripts/reader_edition.py --student-site DIR
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "notebooks"
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


# --------------------------------------------------------------------------------------------
# Bibliography


def _strip_braces(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` only outside braces (BibTeX's author lists)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        ch = text[i]
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur))
            cur, i = [], i + len(sep)
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_bib(text: str) -> dict[str, dict[str, str]]:
    """Entries of a BibTeX file: {key: {"type": ..., field: value}} (values with braces kept)."""
    entries = {}
    for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[m.end():i - 1]
        fields = {"type": m.group(1).lower()}
        for f in _split_top(body, ","):
            if "=" not in f:
                continue
            name, value = f.split("=", 1)
            value = value.strip()
            if value[:1] in "{\"":
                value = value[1:-1]
            fields[name.strip().lower()] = value.strip()
        entries[m.group(2)] = fields
    return entries


def _last_names(entry: dict[str, str]) -> list[str]:
    names = []
    for author in _split_top(entry.get("author", ""), " and "):
        if author.startswith("{") and author.endswith("}"):
            names.append(_strip_braces(author))  # a corporate author: {NVIDIA}
        elif "," in author:
            names.append(_strip_braces(author.split(",", 1)[0]))
        else:
            names.append(_strip_braces(author).split(" ")[-1])
    return names


def cite_parts(entry: dict[str, str]) -> tuple[str, str]:
    """(authors, year) as the site's author_year style prints them: "Pope *et al.*", "2023"."""
    names = _last_names(entry) or [_strip_braces(entry.get("title", "?"))]
    if len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} *et al.*"
    return who, _strip_braces(entry.get("year", "n.d."))


def _first_last(author: str) -> str:
    """ "Pope, Reiner" -> "Reiner Pope"; a braced corporate author stays as it is."""
    if author.startswith("{") or "," not in author:
        return _strip_braces(author)
    last, first = author.split(",", 1)
    return _strip_braces(f"{first} {last}")


def reference_entry(entry: dict[str, str]) -> str:
    """One line of the References cell."""
    authors = [_first_last(a) for a in _split_top(entry.get("author", ""), " and ")]
    who = ", ".join(authors) if len(authors) <= 6 else ", ".join(authors[:6]) + ", et al."
    parts = [f"{who} ({_strip_braces(entry.get('year', 'n.d.'))}).",
             f"*{_strip_braces(entry.get('title', ''))}*."]
    venue = entry.get("booktitle") or entry.get("journal") or entry.get("howpublished") or ""
    if venue:
        parts.append(_strip_braces(venue) + ".")
    url = entry.get("url") or (f"https://doi.org/{entry['doi']}" if entry.get("doi") else "")
    if url:
        parts.append(f"<{url}>")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------
# The book: table of contents, labels and their numbers


def read_toc(root: Path) -> list[tuple[str, str | None]]:
    """[(docname, chapter number or None)] in _toc.yml order; numbering runs on across numbered
    parts, as sphinx-multitoc-numbering does."""
    docs, numbered, n = [], False, 0
    for line in (root / "_toc.yml").read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if s.startswith("root:"):
            docs.append((s.split(":", 1)[1].strip(), None))
        elif s.startswith("- caption:"):
            numbered = False
        elif s.startswith("numbered:"):
            numbered = s.split(":", 1)[1].strip().lower() == "true"
        elif s.startswith("- file:"):
            name = s.split(":", 1)[1].strip()
            if numbered:
                n += 1
            docs.append((name, str(n) if numbered else None))
    return docs


@dataclass
class Target:
    kind: str  # "section", "figure", "equation", "exercise"
    doc: str  # docname, e.g. "book/decode_roofline"
    number: str  # "3.1" ("" when unnumbered)
    title: str = ""


@dataclass
class Book:
    root: Path
    docs: list[tuple[str, str | None]]
    titles: dict[str, str] = field(default_factory=dict)  # docname -> title (no number)
    labels: dict[str, Target] = field(default_factory=dict)
    bib: dict[str, dict[str, str]] = field(default_factory=dict)
    numbers: dict[str, dict] = field(default_factory=dict)  # docname -> per-doc numbering


FENCE_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
DIRECTIVE_RE = re.compile(r"^\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
TARGET_RE = re.compile(r"^\(([\w:.-]+)\)=\s*$")
DMATH_RE = re.compile(r"\$\$(.+?)\$\$[ \t]*\(([\w:.-]+)\)", re.S)


@dataclass
class Directive:
    name: str
    arg: str
    options: dict[str, str]
    body: str


def parse_blocks(text: str) -> list:
    """Split markdown into plain text (str), code fences (("code", raw)) and Directives."""
    lines = text.split("\n")
    out, buf, i = [], [], 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            buf.append(lines[i])
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        j = i + 1
        close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = lines[i + 1:j]
        d = DIRECTIVE_RE.match(info)
        if buf:
            out.append("\n".join(buf))
            buf = []
        if d and not (fence[0] == ":" and False):
            options, k = {}, 0
            while k < len(body) and re.match(r"^\s*:[\w-]+:", body[k]):
                key, _, value = body[k].strip()[1:].partition(":")
                options[key] = value.strip()
                k += 1
            while k < len(body) and not body[k].strip() and k == len(options):
                k += 1
            out.append(Directive(d.group("name"), d.group("arg").strip(), options,
                                 "\n".join(body[k:]).strip("\n")))
        elif fence[0] == ":":
            buf.extend(lines[i:j + 1])  # a bare ::: fence is not MyST; leave it as text
        else:
            out.append(("code", "\n".join(lines[i:j + 1])))
        i = j + 1
    if buf:
        out.append("\n".join(buf))
    return out


def _plain_title(text: str) -> str:
    """A heading's title as a reference shows it: roles reduced to their text, no markup."""
    text = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", text)
    return text.replace("**", "").replace("`", "").strip()


def scan_document(book: Book, doc: str, chapter: str | None, nb: dict) -> None:
    """Number this document's sections, figures, equations and exercises; register labels."""
    counts = {"figure": 0, "equation": 0, "exercise": 0}
    sections = [0, 0, 0, 0, 0, 0]
    headings = []  # per markdown cell, in order: list of section numbers for its headings
    pending: list[str] = []

    def num(kind):
        counts[kind] += 1
        return f"{chapter}.{counts[kind]}" if chapter else str(counts[kind])

    def scan_text(text):
        nums = []
        for line in text.split("\n"):
            t = TARGET_RE.match(line)
            if t:
                pending.append(t.group(1))
                continue
            h = HEADING_RE.match(line)
            if h:
                level, title = len(h.group(1)), h.group(2)
                if level == 1:
                    book.titles.setdefault(doc, _plain_title(title))
                    number = chapter or ""
                else:
                    sections[level - 1] += 1
                    for k in range(level, 6):
                        sections[k] = 0
                    number = ".".join([chapter] + [str(s) for s in sections[1:level]]) \
                        if chapter else ""
                nums.append(number)
                for label in pending:
                    book.labels[label] = Target("section", doc, number, _plain_title(title))
                pending.clear()
            elif line.strip():
                for label in pending:  # a target before a paragraph: link text is the label
                    book.labels[label] = Target("section", doc, "", label)
                pending.clear()
        for m in DMATH_RE.finditer(text):
            book.labels[m.group(2)] = Target("equation", doc, num("equation"))
        return nums

    def scan_blocks(blocks, nums):
        for b in blocks:
            if isinstance(b, str):
                nums.extend(scan_text(b))
            elif isinstance(b, Directive):
                name = b.name
                if name == "exercise":
                    t = Target("exercise", doc, num("exercise"), b.arg)
                    if "label" in b.options:
                        book.labels[b.options["label"]] = t
                elif name == "math" and "label" in b.options:
                    book.labels[b.options["label"]] = Target("equation", doc, num("equation"))
                elif name in ("figure", "glue:figure") and "name" in b.options:
                    book.labels[b.options["name"]] = Target("figure", doc, num("figure"))
                if name not in ("math",):
                    scan_blocks(parse_blocks(b.body), [])

    for cell in nb["cells"]:
        src = _source(cell)
        if cell["cell_type"] == "markdown":
            nums = []
            scan_blocks(parse_blocks(src), nums)
            headings.append(nums)
        elif cell["cell_type"] == "code":
            fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if fig.get("name"):
                book.labels[fig["name"]] = Target("figure", doc, num("figure"))
    book.numbers[doc] = {"headings": headings}


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def load_book(root: Path = ROOT) -> Book:
    book = Book(root, read_toc(root))
    bib = root / "references.bib"
    if bib.exists():
        book.bib = parse_bib(bib.read_text(encoding="utf-8"))
    for doc, chapter in book.docs:
        ipynb, md = root / f"{doc}.ipynb", root / f"{doc}.md"
        if ipynb.exists():
            scan_document(book, doc, chapter, json.loads(ipynb.read_text(encoding="utf-8")))
        elif md.exists():
            cell = {"cell_type": "markdown", "source": md.read_text(encoding="utf-8")}
            scan_document(book, doc, chapter, {"cells": [cell]})
    return book


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
    out = []
    for key in [k.strip() for k in keys.split(",") if k.strip()]:
        if key not in ctx.book.bib:
            raise KeyError(f"{ctx.doc}: citation key {key!r} is not in references.bib")
        if key not in ctx.cited:
            ctx.cited.append(key)
        who, year = cite_parts(ctx.book.bib[key])
        out.append((who, year))
    out.sort()  # the site's author_year style sorts a group by author, then year
    if role == "cite:t":
        return ", ".join(f"{who} [[{year}](#References)]" for who, year in out)
    return "[" + ", ".join(f"[{who}, {year}](#References)" for who, year in out) + "]"


def role_text(ctx: Context, role: str, content: str) -> str:
    """The markdown one MyST role becomes."""
    explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", content, re.S)
    text, label = (explicit.group(1), explicit.group(2)) if explicit else (None, content.strip())
    if role in ("glue", "glue:", "glue:any", "glue:text", "glue:md"):
        return glue_text(ctx, content, role.rstrip(":") or "glue")
    if role in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts"):
        return cite_text(ctx, content, role[:6] if role.startswith("cite:t") else "cite")
    if role == "numref":
        t = _ref_target(ctx, label)
        default = {"figure": "Fig. {number}", "equation": "Eq. {number}",
                   "exercise": "Exercise {number}", "section": "Section {number}"}[t.kind]
        shown = (text or default).replace("%s", "{number}").replace("{name}", t.title)
        return shown.replace("{number}", t.number)
    if role == "ref":
        t = _ref_target(ctx, label)
        if text:
            shown = text
        elif t.kind == "exercise":
            shown = f"Exercise {t.number}"  # sphinx-exercise's {ref} text
        else:
            shown = t.title
        return _doc_link(ctx, t.doc, shown) if t.doc != ctx.doc else shown
    if role == "eq":
        return f"({_ref_target(ctx, label).number})"
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


ROLE_OR_CODE = re.compile(r"\{(?P<role>[\w:+-]+)\}(?P<tick>`+)(?P<content>.+?)(?P=tick)"
                          r"|(?P<code>(?P<ct>`+).+?(?P=ct))", re.S)


def transform_roles(text: str, ctx: Context) -> str:
    """Replace every role in prose (not inside inline code) with its reader's text."""
    def sub(m):
        if m.group("code"):
            return m.group("code")
        return role_text(ctx, m.group("role"), m.group("content"))
    return ROLE_OR_CODE.sub(sub, text)


def _number_headings(text: str, numbers: list[str]) -> str:
    it = iter(numbers)

    def heading(m):
        n = next(it, "")
        return f"{m.group(1)} {n}. {m.group(2)}" if n else m.group(0)
    return re.sub(r"(?m)^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$", heading, text) if numbers else text


def transform_math(text: str, ctx: Context) -> str:
    """Labelled display math `$$ x $$ (label)` -> `$$ x \\tag{n} $$` (MathJax numbers it)."""
    def sub(m):
        n = _ref_target(ctx, m.group(2)).number
        body = m.group(1).strip("\n")
        return f"$$\n{body}\n\\tag{{{n}}}\n$$" if n else f"$$\n{body}\n$$"
    return DMATH_RE.sub(sub, text)


def titled_block(title: str, body: str) -> str:
    """An admonition as a titled blockquote (HTML wrapper, so display math inside stays intact)."""
    return f"<blockquote>\n\n**{title}**\n\n{body}\n\n</blockquote>"


def details_block(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def transform_directive(d: Directive, ctx: Context) -> str:
    name = d.name
    if name == "math":
        body = d.body.strip()
        label = d.options.get("label")
        n = _ref_target(ctx, label).number if label else ""
        return f"$$\n{body}\n\\tag{{{n}}}\n$$" if n else f"$$\n{body}\n$$"
    if name == "glue:figure" or name == "glue":
        bundle = ctx.glue.get(d.arg)
        if bundle is None:
            raise KeyError(f"{ctx.doc}: glue name {d.arg!r} has no stored value")
        img = next((k for k in ("image/png", "image/jpeg") if k in bundle), None)
        shown = (f"![{d.options.get('alt', d.arg)}](data:{img};base64,{_text(bundle[img])})"
                 if img else escape_md(_text(bundle.get("text/plain", ""))))
        caption = transform_markdown(d.body, ctx) if d.body else ""
        if "name" in d.options:
            caption = f"**Fig. {_ref_target(ctx, d.options['name']).number}.** {caption}"
        return shown + (f"\n\n{caption}" if caption.strip() else "")
    body = transform_markdown(d.body, ctx)
    if name == "exercise":
        label = d.options.get("label")
        n = _ref_target(ctx, label).number if label else ""
        title = transform_roles(d.arg, ctx)
        head = f"Exercise {n}" + (f" ({title})" if title else "")
        return f"#### {head}\n\n{body}"
    if name == "solution":
        if ctx.student:
            return ""
        t = _ref_target(ctx, d.arg.strip())
        title = transform_roles(t.title, ctx)
        summary = f"Solution to Exercise {t.number}" + (f" ({title})" if title else "")
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
            caption = f"**Fig. {_ref_target(ctx, d.options['name']).number}.** {body}"
        return f"![{d.options.get('alt', '')}]({d.arg})\n\n{caption}"
    raise ValueError(f"{ctx.doc}: directive {{{name}}} has no reader's-edition rendering; "
                     f"add one to scripts/reader_edition.py")


def transform_markdown(text: str, ctx: Context, heading_numbers: list[str] | None = None) -> str:
    """MyST markdown -> markdown Jupyter renders (directives, targets, math, roles)."""
    parts = []
    numbers = list(heading_numbers or [])
    for b in parse_blocks(text):
        if isinstance(b, Directive):
            parts.append(transform_directive(b, ctx))
        elif isinstance(b, tuple):
            parts.append(b[1])  # a code fence stays as it is
        else:
            b = re.sub(r"(?m)^\([\w:.-]+\)=[ \t]*\n?", "", b)
            n_here = len(re.findall(r"(?m)^#{1,6}\s+", b))
            b = _number_headings(b, numbers[:n_here])
            numbers = numbers[n_here:]
            parts.append(transform_roles(transform_math(b, ctx), ctx))
    # A directive always starts a block of its own: keep blank lines around it.
    return re.sub(r"\n{3,}", "\n\n", "\n\n".join(parts)).strip("\n")


def install_cell(root: Path = ROOT) -> dict:
    """The first code cell: install llmmath when it is missing (Colab, Binder); else a no-op."""
    url = FALLBACK_REPO_URL
    cfg = root / "_config.yml"
    if cfg.exists():
        m = re.search(r"(?ms)^repository:\s*\n(?:\s+.*\n)*?\s+url:\s*\"?([^\"\n]*)\"?",
                      cfg.read_text())
        url = (m.group(1).strip() if m else "") or url
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
        md = transform_roles(_text(data["text/markdown"]), ctx)
        out["data"]["text/markdown"] = md
    return out


def references_cell(ctx: Context) -> dict | None:
    if not ctx.cited:
        return None
    lines = ["## References", ""]
    for key in sorted(ctx.cited, key=lambda k: (cite_parts(ctx.book.bib[k]), k)):
        lines.append(f"- {reference_entry(ctx.book.bib[key])}")
    return {"cell_type": "markdown", "id": "reader-references", "metadata": {},
            "source": "\n".join(lines)}


def _split_source(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def transform_notebook(nb: dict, ctx: Context, student: bool = False) -> dict:
    """The reader's (or, with `student`, the student's) edition of one executed notebook."""
    ctx.student = student
    if student:
        nb = student_source(nb, ctx.doc)  # answer cells and their glued values gone first
    ctx.glue = glue_values(nb)
    new = copy.deepcopy(nb)
    headings = iter(ctx.book.numbers.get(ctx.doc, {}).get("headings", []))
    cells, installed = [], False
    for cell in nb["cells"]:
        cell = copy.deepcopy(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            nums = next(headings, [])
            if student and any(t in ANSWER_TAGS for t in tags):
                continue
            cell["source"] = _split_source(transform_markdown(_source(cell), ctx, nums))
            if cell["source"]:
                cells.append(cell)
            continue
        if cell["cell_type"] != "code":
            cells.append(cell)
            continue
        if student and any(t in ANSWER_TAGS for t in tags):
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
            number = _ref_target(ctx, fig["name"]).number
            caption = transform_markdown(fig.get("caption", ""), ctx)
            cells.append({"cell_type": "markdown", "id": f"reader-caption-{fig['name']}"[:64],
                          "metadata": {}, "source": f"**Fig. {number}.** {caption}"})
    refs = references_cell(ctx)
    if refs:
        cells.append(refs)
    new["cells"] = cells
    new["nbformat"], new["nbformat_minor"] = 4, max(nb.get("nbformat_minor", 5), 5)
    return new


# --------------------------------------------------------------------------------------------
# The student site: the MyST source with answers removed


def strip_solutions(text: str) -> str:
    """MyST markdown with every ``{solution}`` block removed (at any depth); the rest verbatim."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        d = DIRECTIVE_RE.match(m.group("info").strip())
        if d and d.group("name") == "solution":
            i = j + 1
            continue
        body = "\n".join(lines[i + 1:j])
        out.append(lines[i])
        if d:
            body = strip_solutions(body)
        if body or j > i + 1:
            out.append(body)
        if j < len(lines):
            out.append(lines[j])
        i = j + 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def _glue_refs(text: str) -> set[str]:
    return (set(re.findall(r"\{glue(?::\w*)?\}`([^`:]+)", text))
            | set(re.findall(r"(?m)^ {0,3}(?:`{3,}|:{3,})\{glue:figure\}\s*(\S+)", text)))


def _is_answer(cell: dict) -> bool:
    return any(t in ANSWER_TAGS for t in cell.get("metadata", {}).get("tags", []))


def student_source(nb: dict, doc: str = "") -> dict:
    """One notebook's student MyST source: answer cells and solution blocks removed.

    Raises ValueError when the remaining prose pastes a glued value that only an answer cell
    computes (an exercise statement needs it: glue it in an untagged cell instead)."""
    new = copy.deepcopy(nb)
    cells = []
    for cell in new["cells"]:
        if cell["cell_type"] == "markdown":
            # emptied, not dropped: markdown cells stay in step with the book's heading numbers
            cell["source"] = ("" if _is_answer(cell)
                              else _split_source(strip_solutions(_source(cell))))
        elif _is_answer(cell):
            continue
        cells.append(cell)
    new["cells"] = cells
    kept = set(glue_values(new))
    needed = set()
    for cell in cells:
        if cell["cell_type"] == "markdown":
            needed |= _glue_refs(_source(cell))
    missing = sorted(needed - kept)
    if missing:
        raise ValueError(f"{doc}: the student edition's prose pastes {missing}, glued only in "
                         f"cells tagged {ANSWER_TAG!r}; glue them in an untagged cell")
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

    book = load_book(root)
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
    for doc, _ in book.docs:
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


def chapter_notebooks(book: Book) -> list[str]:
    return [doc for doc, _ in book.docs if (book.root / f"{doc}.ipynb").exists()]


def build(out: Path = OUT, student: bool = False, root: Path = ROOT,
          names: list[str] | None = None) -> list[Path]:
    """Write the edition of every notebook in the table of contents into `out`."""
    book = load_book(root)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for doc in chapter_notebooks(book):
        src = root / f"{doc}.ipynb"
        if names and src.name not in names and src.stem not in names:
            continue
        nb = json.loads(src.read_text(encoding="utf-8"))
        new = transform_notebook(nb, Context(book, doc), student=student)
        dest = out / src.name
        dest.write_text(json.dumps(new, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="output folder (default _build/notebooks)")
    p.add_argument("--student", action="store_true", help="drop solutions and answer cells")
    p.add_argument("--student-site", type=Path, metavar="DIR",
                   help="write the student site's MyST source tree into DIR instead")
    p.add_argument("names", nargs="*", help="notebook names (default: every chapter)")
    args = p.parse_args(argv)
    if args.student_site:
        written = build_student_site(args.student_site)
        print(f"wrote the student site's source ({len(written)} pages) into {args.student_site}")
        return 0 if written else 1
    written = build(args.out, student=args.student, names=args.names)
    for path in written:
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
