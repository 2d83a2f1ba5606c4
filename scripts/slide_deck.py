"""What a lecture deck holds, read from one executed chapter notebook (scripts/slides.py draws it).

In reading order: a slide per section (its title and the idea its first paragraph states), every
display equation (its introducing sentence, the equation built line by line, and the sentence
after it that says what it means), every figure, and the chapter's worked example by hand, one
step per fragment. Then two or three in-class questions with their answers, the takeaways and
exercise prompts. Speaker notes are the chapter's own prose around each item, shortened.

Per-chapter choices (which cells are the worked example, which exercises become in-class
questions) are scripts/slide_plan.yml. Every number is the notebook's glued value, wrapped in
``<span class="glue" data-glue="NAME">`` so tests can hold it against the notebook; glue, roles
and cross-references are resolved as the reader's edition resolves them (scripts/reader_edition.py).
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from scripts import reader_edition as rd

PLAN = Path(__file__).with_name("slide_plan.yml")
GUIDE = rd.ROOT / "book" / "course_guide.md"
# the course guide's columns whose exercises a lecture must not answer in class
NOT_IN_CLASS = ("homework", "exam-suitable", "project")
# sections a lecture leaves to the book (matched on the start of the title, lower case)
SKIP_SECTIONS = ("exercises", "further reading", "what the tests check")
# block tokens after which a paragraph no longer introduces (or follows) a display equation
LEAD_BREAKS = ("heading_open", "fence", "colon_fence", "math_block", "math_block_label", "amsmath",
               "table_open", "html_block", "hr", "myst_block_break")
NOTE_CHARS = 650  # speaker notes: the chapter's paragraph, cut at a sentence near this length
STEP_CHARS = 620  # a worked-example slide holds at most 4 steps and about this many characters
CITE_LINK = re.compile(r"\[([^\[\]]+)\]\(#References\)")
# a sentence ends at . ! or ? (perhaps closing bold) before a capital, a role, math or bold
_ABBREV = r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bEq\.)(?<!\bFig\.)(?<!\bvs\.)(?<!\bal\.)(?<!\bcf\.)"
SENTENCE_END = re.compile(_ABBREV + r"(?<=[.!?])(\*\*)?\s+(?=[A-Z{$(*\\])")


# --------------------------------------------------------------------------------------------
# MyST -> HTML, glued values marked


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    def render_math(content, options):
        body = html.escape(content.strip("\n"))
        if options.get("display_mode"):
            return f'<div class="math">\\[{body}\\]</div>\n'
        return f"\\({body}\\)"

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.use(dollarmath_plugin, double_inline=True, renderer=render_math, allow_space=True,
           allow_digits=True)
    return md


_MD = None


def to_html(markdown: str) -> str:
    """Markdown (roles already resolved) as HTML; math left for MathJax."""
    global _MD
    if _MD is None:
        _MD = _markdown()
    markdown = CITE_LINK.sub(r"\1", markdown)  # citations as author-year text: no list on slides
    markdown = re.sub(r"\]\(([\w.-]+)\.ipynb\)", r"](\1.html)", markdown)  # chapters -> decks
    return _MD.render(markdown)


def strip_p(fragment: str) -> str:
    return re.sub(r"^\s*<p>|</p>\s*$", "", fragment.strip())


def myst(text: str, ctx: rd.Context) -> str:
    """MyST -> markdown as the reader's edition resolves it, each glued value in a marked span."""
    def role(name, content):
        shown = rd.role_text(ctx, name, content)
        if name.startswith("glue"):
            glued = html.escape(content.partition(":")[0].strip())
            return f'<span class="glue" data-glue="{glued}">{shown}</span>'
        return shown

    def block(tok, raw):  # a directive, target or labelled equation: as the edition renders it
        return f"\n\n{rd.transform_markdown(raw, ctx)}\n\n"

    return re.sub(r"\n{3,}", "\n\n", rd.rewrite(text, block, role)).strip("\n")


def myst_html(text: str, ctx: rd.Context, inline: bool = False) -> str:
    out = to_html(myst(text, ctx))
    return strip_p(out) if inline else out


def plain(fragment: str) -> str:
    """HTML as the plain text of a speaker note (math kept as TeX)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment))
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str) -> list[str]:
    """MyST prose split into sentences (a bold lead such as "**By hand.**" is one of them)."""
    out, pos = [], 0
    for m in SENTENCE_END.finditer(text):
        out.append(text[pos:m.start()] + (m.group(1) or ""))
        pos = m.end()
    out.append(text[pos:])
    return [s.strip() for s in out if s.strip()]


def run_in(s: str) -> bool:
    """A bold run-in heading ("**Weight reads.**"): it opens a topic, it does not state one."""
    return bool(re.fullmatch(r"\*\*[^*]+\*\*", s.strip()))


def first_statement(text: str) -> str:
    """A paragraph's first sentence, with its run-in heading when it has one."""
    parts = sentences(text)
    return " ".join(parts[:2]) if run_in(parts[0]) and len(parts) > 1 else parts[0]


def shorten(text: str, limit: int = NOTE_CHARS, last: bool = False) -> str:
    """The first (or last) sentences of plain text, about `limit` characters."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text)
    if last:
        parts = parts[::-1]
    kept, n = [], 0
    for p in parts:
        if kept and n + len(p) > limit:
            break
        kept.append(p)
        n += len(p) + 1
    return " ".join(kept[::-1] if last else kept)


# --------------------------------------------------------------------------------------------
# What a deck holds


@dataclass
class Section:
    title: str
    number: str
    idea: str = ""  # HTML: the first sentences of the section's first paragraph
    notes: str = ""
    points: list[str] = field(default_factory=list)  # HTML: the later paragraphs' first sentences
    points_notes: list[str] = field(default_factory=list)  # those paragraphs, plain


@dataclass
class Figure:
    label: str
    number: str
    caption: str  # HTML
    alt: str
    png: bytes
    section: str
    notes: str = ""


@dataclass
class Equation:
    lines: list[str]  # LaTeX, one per displayed line (an aligned block split at its top-level \\)
    aligned: bool
    number: str
    section: str
    lead: str = ""  # HTML: the sentence that introduces it
    meaning: str = ""  # HTML: the sentence after it
    notes: str = ""


@dataclass
class Hand:
    title: str  # HTML: the bold lead ("By hand beside the library")
    steps: list[str]  # HTML, one per fragment
    section: str
    notes: str = ""


@dataclass
class Question:
    source: str  # exercise label or cell id
    title: str  # HTML
    prompt: str  # HTML
    answer: str  # HTML
    notes: str = ""


@dataclass
class Prompt:
    number: str
    title: str
    body: str  # HTML


@dataclass
class Deck:
    doc: str
    stem: str
    number: str
    title: str
    question: str = ""  # HTML: the chapter's opening question
    goals: str = ""  # HTML
    goals_notes: str = ""
    takeaways: str = ""  # HTML
    takeaways_notes: str = ""
    items: list = field(default_factory=list)  # Section | Equation | Figure | Hand, reading order
    questions: list = field(default_factory=list)
    prompts: list = field(default_factory=list)
    n_exercises_total: int = 0
    n_slides: int = 0  # set when the deck is drawn

    @property
    def figures(self) -> list[Figure]:
        return [i for i in self.items if isinstance(i, Figure)]


# --------------------------------------------------------------------------------------------
# The plan and the course guide


def load_plan(path: Path = PLAN) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def guide_columns(path: Path = GUIDE) -> dict[str, set[str]]:
    """{exercise label: the course guide's columns that list it} ("project" for the open-ended
    exercises the guide offers as projects)."""
    text = path.read_text(encoding="utf-8")
    cols: dict[str, set[str]] = {}
    for table in re.findall(r"(?:^\|.*\|[ \t]*\n?)+", text, re.M):
        rows = [[c.strip() for c in r.strip().strip("|").split("|")]
                for r in table.strip().splitlines()]
        for row in rows[2:]:
            for head, cell in zip(rows[0], row, strict=False):  # a short row: fewer cells
                for label in re.findall(r"\{ref\}`([\w-]+)`", cell):
                    cols.setdefault(label, set()).add(head)
    m = re.search(r"Each open-ended exercise(.*?)project", text, re.S)
    for label in re.findall(r"\{ref\}`([\w-]+)`", m.group(1) if m else ""):
        cols.setdefault(label, set()).add("project")
    return cols


# --------------------------------------------------------------------------------------------
# Reading a chapter


def _png(cell: dict) -> bytes | None:
    for out in cell.get("outputs", []):
        data = out.get("data", {}).get("image/png")
        if data:
            return base64.b64decode(rd._text(data))
    return None


def _stdout(cell: dict) -> str:
    return "".join(rd._text(o.get("text", "")) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def _paragraphs(src: str) -> list[str]:
    """The top-level paragraphs of a markdown cell, as MyST source."""
    lines = src.split("\n")
    return ["\n".join(lines[t.map[0]:t.map[1]]) for t in rd.parse(src)
            if t.type == "paragraph_open" and t.level == 0 and t.map]


def _split_aligned(latex: str) -> tuple[list[str], bool]:
    """An aligned block's lines (split at its top-level \\\\), or the equation as one line."""
    m = re.fullmatch(r"\s*\\begin\{aligned\}(.*)\\end\{aligned\}\s*", latex, re.S)
    if not m:
        return [latex.strip()], False
    lines, depth, cur, body, i = [], 0, [], m.group(1), 0
    while i < len(body):
        ch = body[i]
        depth += ch == "{"
        depth -= ch == "}"
        if body.startswith("\\\\", i) and depth == 0:
            lines.append("".join(cur))
            cur, i = [], i + 2
            continue
        cur.append(ch)
        i += 1
    lines.append("".join(cur))
    return [ln.strip() for ln in lines if ln.strip()], True


def _hand_steps(cell: dict, ctx: rd.Context) -> tuple[str, list[str], str]:
    """(title, steps, context) of one cell of the worked example: a markdown cell's paragraph that
    opens with **By hand (else its first), split into sentences; a code cell's printed lines."""
    if cell["cell_type"] == "code":
        lines = [ln.strip() for out in _stdout(cell).splitlines() for ln in out.split("; ")]
        return "", [f"<code>{html.escape(ln)}</code>" for ln in lines if ln], ""
    paras = _paragraphs(rd._source(cell))
    at = next((i for i, p in enumerate(paras) if p.lstrip().startswith("**By hand")), 0)
    parts = sentences(paras[at])
    title = ""
    if run_in(parts[0]):
        title, parts = myst_html(parts[0].strip("*").rstrip("."), ctx, inline=True), parts[1:]
    context = plain(myst_html(paras[at - 1], ctx)) if at > 0 else ""
    return title, [myst_html(p, ctx, inline=True) for p in parts], context


def _opening_question(src: str, ctx: rd.Context) -> str:
    """The chapter's opening question: its bold question, else its first paragraph up to the
    first question it asks (that sentence alone when the run-up is long)."""
    m = re.search(r"\*\*([^*]+\?)\*\*", src)
    if m:
        return myst_html(m.group(1), ctx, inline=True)
    for para in _paragraphs(src):
        parts = sentences(para)
        ask = next((i for i, p in enumerate(parts) if p.rstrip().endswith("?")), None)
        if ask is not None:
            run_up = " ".join(parts[:ask + 1])
            return myst_html(run_up if len(run_up) <= 450 else parts[ask], ctx, inline=True)
    return ""


def _hand(ids: list[str], cells: dict, ctx: rd.Context, section: str) -> Hand:
    """The worked example from its cells (scripts/slide_plan.yml), one step per sentence or line."""
    steps, title, context = [], "", ""
    for cid in ids:
        t, s, c = _hand_steps(cells[cid], ctx)
        title, context = title or t, context or c
        steps += s
    return Hand(title or "By hand", steps, section,
                "Work each step on the board before revealing it. "
                + shorten(context or plain(steps[-1]), 450, last=True))


def _exercises(nb: dict) -> dict[str, tuple[str, str, str]]:
    """{label: (title, prompt MyST, solution MyST)} of every exercise of the chapter."""
    found, solutions = {}, {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for tok in rd.parse(rd._source(cell)):
            d = rd.directive(tok)
            if d and d.name == "exercise":
                found[d.options.get("label", "")] = (d.arg, d.body)
            elif d and d.name == "solution":
                solutions[d.arg.strip()] = d.body
    return {k: (t, b, solutions.get(k, "")) for k, (t, b) in found.items()}


def _questions(plan: dict, nb: dict, ctx: rd.Context, doc: str) -> list[Question]:
    exercises = _exercises(nb)
    cells = {c.get("id"): c for c in nb["cells"]}
    assigned = guide_columns()
    out = []
    for q in plan.get("questions", []):
        if isinstance(q, str):
            if q not in exercises:
                raise KeyError(f"slides: {doc}: in-class question {q!r} is no exercise of the "
                               f"chapter (exercises: {sorted(exercises)})")
            taken = assigned.get(q, set()) & set(NOT_IN_CLASS)
            if taken:
                raise ValueError(f"slides: {doc}: in-class question {q!r} is {sorted(taken)} in "
                                 "book/course_guide.md: its answer must not be shown in class; "
                                 "pick another in scripts/slide_plan.yml")
            title, prompt, solution = exercises[q]
            if not solution:
                raise ValueError(f"slides: {doc}: exercise {q!r} has no solution to reveal")
            n = ctx.book.labels[q].number
            head = f"Exercise {n}" + (f": {rd.transform_roles(title, ctx)}" if title else "")
            answer = myst_html(solution, ctx)
            notes = ("Let the class work for a few minutes before revealing. "
                     + shorten(plain(answer), 400))
            out.append(Question(q, html.escape(head), myst_html(prompt, ctx), answer, notes))
        else:
            cell = cells.get(q.get("answer"))
            if cell is None or cell["cell_type"] != "markdown":
                raise KeyError(f"slides: {doc}: question answer cell {q.get('answer')!r} is no "
                               "markdown cell of the chapter")
            answer = myst_html(_paragraphs(rd._source(cell))[0], ctx)
            notes = "Take a show of hands on the prediction first. " + shorten(plain(answer), 400)
            out.append(Question(q["answer"], "Predict, then check", myst_html(q["ask"], ctx),
                                answer, notes))
    if not 2 <= len(out) <= 3:
        raise ValueError(f"slides: {doc}: {len(out)} in-class questions in "
                         "scripts/slide_plan.yml (want 2 or 3)")
    return out


def _cited_paragraphs(nb: dict) -> dict[str, str]:
    """{figure label: the first paragraph that cites it with {numref}}."""
    found: dict[str, str] = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for p in _paragraphs(rd._source(cell)):
                for label in re.findall(r"\{numref\}`(?:[^`<]*<)?([\w-]+)>?`", p):
                    found.setdefault(label, p)
    return found


def read_deck(book: rd.Book, doc: str, number: str, plan: dict | None = None) -> Deck:
    nb = json.loads((book.root / f"{doc}.ipynb").read_text(encoding="utf-8"))
    stem = Path(doc).name
    plan = (plan if plan is not None else load_plan()).get(stem)
    if not plan:
        raise KeyError(f"slides: {doc} has no entry in scripts/slide_plan.yml (its worked example "
                       "and in-class questions)")
    ctx = rd.Context(book, doc, rd.glue_values(nb), student=True)
    deck = Deck(doc, stem, number, book.titles.get(doc, stem))
    cited = _cited_paragraphs(nb)
    numbers = rd.heading_numbers(nb, ctx)
    hand_ids = list(plan.get("hand", []))
    cells = {c.get("id"): c for c in nb["cells"]}
    missing = [i for i in hand_ids if i not in cells]
    if not hand_ids or missing:
        raise KeyError(f"slides: {doc}: worked-example cells {missing or hand_ids} are not in the "
                       "notebook (scripts/slide_plan.yml, `hand`)")
    section, skip, current = deck.title, False, None
    pending = None  # the section or equation waiting for the paragraph after it
    last_para = ""  # the last paragraph read, for a figure without a citing paragraph
    prompts = []
    for cell in nb["cells"]:
        src = rd._source(cell)
        src_hand = cell.get("id") == hand_ids[0]
        if src_hand and not re.search(r"^\*\*By hand", src, re.M):
            deck.items.append(_hand(hand_ids, cells, ctx, section))  # at the cell's start
            src_hand = False
        if cell["cell_type"] == "code":
            fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if fig.get("name"):
                png = _png(cell)
                if png is None:
                    raise ValueError(f"slides: {doc}: figure {fig['name']!r} has no stored PNG; "
                                     "re-execute the notebook (make execute)")
                alt = cell["metadata"]["mystnb"].get("image", {}).get("alt", "")
                note = plain(myst_html(cited.get(fig["name"], last_para), ctx))
                deck.items.append(Figure(
                    fig["name"], book.labels[fig["name"]].number,
                    myst_html(fig.get("caption", ""), ctx), alt, png, section,
                    shorten(note) + (f" The figure: {alt}" if alt else "")))
                if isinstance(pending, Equation):  # what follows the figure speaks of it
                    pending = None
            continue
        if cell["cell_type"] != "markdown":
            continue
        if not deck.question:
            deck.question = _opening_question(src, ctx)

        heads = iter(numbers.get(cell.get("id"), []))
        tokens = rd.parse(src)
        lead = ""  # the last paragraph of this cell
        for i, tok in enumerate(tokens):
            d = rd.directive(tok)
            if tok.type == "heading_open" and tok.level == 0:
                n = next(heads, "")
                if tok.tag in ("h2", "h3"):
                    title = rd.transform_roles(tokens[i + 1].content, ctx).replace("**", "")
                    title = title.replace("`", "").strip()
                    if tok.tag == "h2":
                        skip = title.lower().startswith(SKIP_SECTIONS)
                    if not skip:
                        section = title
                        pending = current = Section(html.escape(title), n)
                        deck.items.append(pending)
            elif d:
                title = d.arg.strip().lower()
                if d.name == "admonition" and title == "learning goals":
                    deck.goals = myst_html(d.body, ctx)
                elif d.name == "admonition" and title == "takeaways":
                    deck.takeaways = myst_html(d.body, ctx)
                    deck.takeaways_notes = ("Go back to the opening question. "
                                            + plain(deck.question))
                elif d.name == "exercise":
                    label = d.options.get("label", "")
                    n = book.labels[label].number if label in book.labels else ""
                    prompts.append((label, Prompt(n, rd.transform_roles(d.arg, ctx),
                                                  myst_html(d.body, ctx))))
            elif tok.type in ("math_block", "math_block_label") and not skip:
                label = tok.info if tok.type == "math_block_label" else ""
                lines, aligned = _split_aligned(tok.content)
                lead_html = myst_html(sentences(lead)[-1], ctx, inline=True) if lead else ""
                pending = Equation(lines, aligned, book.labels[label].number if label else "",
                                   section, lead_html,
                                   notes=shorten(plain(myst_html(lead, ctx)), last=True)
                                   if lead else "")
                deck.items.append(pending)
            elif tok.type == "inline" and tokens[i - 1].type == "paragraph_open":
                lead = last_para = tok.content
                if not deck.goals_notes and tok.level == 1:  # the chapter's opening paragraph
                    deck.goals_notes = shorten(plain(myst_html(tok.content, ctx)))
                if src_hand and tok.level == 1 and tok.content.startswith("**By hand"):
                    deck.items.append(_hand(hand_ids, cells, ctx, section))
                    src_hand = False
                hand_para = tok.content.startswith("**By hand")
                if (current is not None and tok.level == 1 and not skip and pending is None
                        and not hand_para):
                    current.points.append(myst_html(first_statement(tok.content), ctx,
                                                    inline=True))
                    current.points_notes.append(plain(myst_html(tok.content, ctx)))
                if isinstance(pending, Section) and tok.level == 1 and not hand_para:
                    parts = sentences(tok.content)
                    pending.idea = myst_html(" ".join(parts[:2]), ctx, inline=True)
                    rest = plain(myst_html(" ".join(parts[2:]) or tok.content, ctx))
                    pending.notes = shorten(rest)
                elif isinstance(pending, Equation) and not run_in(sentences(tok.content)[0]):
                    # the sentence after it, unless the paragraph opens a new topic
                    first = sentences(tok.content)[0]
                    pending.meaning = myst_html(first, ctx, inline=True)
                    pending.notes = (pending.notes + " " + shorten(plain(myst_html(
                        tok.content, ctx)), 350)).strip()
                pending = None
                continue
            if tok.type in LEAD_BREAKS:
                lead = ""
    deck.n_exercises_total = len(prompts)
    deck.questions = _questions(plan, nb, ctx, doc)
    asked = {q.source for q in deck.questions}
    rest = [p for label, p in prompts if label not in asked]
    if rest:  # warm-up, middle, open-ended: what to try after class
        picks = sorted({0, len(rest) // 2, len(rest) - 1})
        deck.prompts = [rest[i] for i in picks]
    missing = [w for w, v in (("learning goals", deck.goals), ("takeaways", deck.takeaways))
               if not v]
    if missing:
        raise ValueError(f"slides: {doc} has no {' and no '.join(missing)} admonition "
                         "(CHAPTERS.md: every chapter has both)")
    section_of = None
    for s in deck.items:  # short notes take the section's next paragraphs
        if isinstance(s, Section):
            section_of = s
            if len(s.notes) < 150:
                s.notes = shorten(" ".join([s.notes] + s.points_notes).strip())
            if len(s.notes) < 40:  # a section of subsections: say what they take in turn
                subs = [plain(x.title) for x in deck.items if isinstance(x, Section)
                        and x.number.startswith(s.number + ".")]
                s.notes = (f"Section {s.number}, {plain(s.title)}, in parts: "
                           + "; ".join(subs) + ". " + s.notes).strip()
        elif isinstance(s, Figure) and section_of and len(s.notes) - len(s.alt) < 120:
            s.notes = shorten(" ".join(section_of.points_notes) or section_of.notes) + " " + s.notes
    return deck
