"""Lecture slides: one reveal.js deck per chapter, built offline from the executed notebooks.

`make slides` runs this. For every chapter of _toc.yml (the documents of its numbered parts, read
from _toc.yml each time: nothing here names a chapter) it writes `_build/slides/<chapter>.html`:

- a title slide with the chapter's number, title and opening question;
- the learning goals;
- the chapter's display math (numbered as the book numbers it) and every figure, in reading
  order, each under the title of the section it belongs to; a figure's caption is shown, its alt
  text is the image's `alt` and the speaker note;
- the takeaways box;
- two or three exercise prompts (the first, a middle one and the last: warm-up to open-ended),
  never their solutions: slides are for class.

Every number is the glued value stored in the executed notebook; cross-references, citations and
glue roles are resolved by the reader's edition (scripts/reader_edition.py), with its student
mode, so no solution block can reach a deck. Chapter, figure and equation numbers, titles and
part captions are the HTML build's (_build/resolved.json): run `make book` first. Figures are
the PNGs the notebook holds (what the book shows), written next to the deck as
`<chapter>/<label>.png`. An index page lists the decks.

Nothing is fetched when a deck is opened: reveal.js (and its notes plugin) comes from
_vendor/reveal/ (npm `reveal.js` 5.2.1, MIT), MathJax 3 (SVG output, fonts inside the script)
from the `sphinx-mathjax-offline` package the site already uses; both are copied into
`_build/slides/_assets/`, so a deck works from file://.

Usage: python -m scripts.slides [--out DIR] [chapter docnames or stems ...]
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scripts import reader_edition as rd  # the same MyST resolution as the reader's edition

ROOT = rd.ROOT
OUT = ROOT / "_build" / "slides"
REVEAL = ROOT / "_vendor" / "reveal"
ASSETS = "_assets"
N_EXERCISES = 3
# block tokens after which the paragraph before them no longer introduces a display equation
LEAD_BREAKS = ("heading_open", "fence", "colon_fence", "math_block", "math_block_label", "amsmath",
               "table_open", "html_block", "hr", "myst_block_break")
CITE_LINK = re.compile(r"\[([^\[\]]+)\]\(#References\)")


def mathjax_dir() -> Path:
    """MathJax 3 as vendored by sphinx-mathjax-offline in this environment."""
    import importlib.util

    for name in ("sphinx-mathjax-offline", "sphinx_mathjax_offline"):
        for base in sys.path:
            cand = Path(base) / name / "static" / "mathjax"
            if (cand / "tex-svg.js").exists():
                return cand
    spec = importlib.util.find_spec("sphinx_mathjax_offline")
    if spec and spec.origin:
        cand = Path(spec.origin).parent / "static" / "mathjax"
        if (cand / "tex-svg.js").exists():
            return cand
    raise FileNotFoundError("slides: MathJax not found: the package sphinx-mathjax-offline "
                            "(requirements.txt) provides it; run in the project's .venv")


# --------------------------------------------------------------------------------------------
# Markdown -> HTML (markdown-it-py, which myst-parser brings; math left for MathJax)


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


def to_html(text: str) -> str:
    global _MD
    if _MD is None:
        _MD = _markdown()
    text = CITE_LINK.sub(r"\1", text)  # citations as author-year text: the deck has no list
    text = re.sub(r"\]\(([\w.-]+)\.ipynb\)", r"](\1.html)", text)  # chapter links -> decks
    return _MD.render(text)


# --------------------------------------------------------------------------------------------
# What a deck holds


@dataclass
class Figure:
    label: str
    number: str
    caption: str  # HTML
    alt: str
    png: bytes
    section: str


@dataclass
class Equation:
    latex: str
    number: str
    section: str
    lead: str = ""  # HTML: the sentence that introduces it in the chapter


@dataclass
class Exercise:
    number: str
    title: str
    body: str  # HTML


@dataclass
class Deck:
    doc: str
    stem: str
    number: str
    title: str
    question: str = ""  # HTML
    goals: str = ""  # HTML
    takeaways: str = ""  # HTML
    items: list = field(default_factory=list)  # Figure | Equation, in reading order
    exercises: list = field(default_factory=list)
    n_exercises_total: int = 0

    @property
    def figures(self) -> list[Figure]:
        return [i for i in self.items if isinstance(i, Figure)]


def chapters(book: rd.Book) -> list[tuple[str, str]]:
    """(docname, number) of every numbered chapter in _toc.yml that is a notebook."""
    return [(doc, n) for doc, n in book.docs if n and (book.root / f"{doc}.ipynb").exists()]


def _png(cell: dict) -> bytes | None:
    for out in cell.get("outputs", []):
        data = out.get("data", {}).get("image/png")
        if data:
            return base64.b64decode(rd._text(data))
    return None


def _question(text: str, ctx: rd.Context) -> str:
    """The opening question: the first bold sentence ending in '?' of the chapter's first cell."""
    m = re.search(r"\*\*([^*]+\?)\*\*", text)
    return to_html(rd.transform_roles(m.group(1), ctx)) if m else ""


def _plain_title(text: str) -> str:
    """A heading's title as a reference shows it: no bold or code markup."""
    return text.replace("**", "").replace("`", "").strip()


def _lead(para: str, ctx: rd.Context) -> str:
    """The last sentence of the paragraph right before a display equation (its introduction)."""
    para = para.strip()
    if not para or "$$" in para:
        return ""
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z*])", para)[-1].strip()
    return _strip_p(to_html(rd.transform_markdown(sentence, ctx)))


def read_deck(book: rd.Book, doc: str, number: str) -> Deck:
    nb = json.loads((book.root / f"{doc}.ipynb").read_text(encoding="utf-8"))
    ctx = rd.Context(book, doc, rd.glue_values(nb), student=True)
    deck = Deck(doc, Path(doc).name, number, book.titles.get(doc, Path(doc).name))
    section = deck.title
    exercises = []
    for cell in nb["cells"]:
        src = rd._source(cell)
        if cell["cell_type"] == "code":
            meta = cell.get("metadata", {}).get("mystnb", {})
            fig = meta.get("figure", {})
            if fig.get("name"):
                png = _png(cell)
                if png is None:
                    raise ValueError(f"slides: {doc}: figure {fig['name']!r} has no stored PNG; "
                                     "re-execute the notebook (make execute)")
                caption = to_html(rd.transform_markdown(fig.get("caption", ""), ctx))
                deck.items.append(Figure(fig["name"], book.labels[fig["name"]].number, caption,
                                         meta.get("image", {}).get("alt", ""), png, section))
            continue
        if cell["cell_type"] != "markdown":
            continue
        if not deck.question:
            deck.question = _question(src, ctx)
        tokens = rd.parse(src)
        lead = ""  # the last paragraph, while nothing else came after it
        for i, tok in enumerate(tokens):
            d = rd.directive(tok)
            if d:
                title = d.arg.strip()
                if d.name == "admonition" and title.lower() == "learning goals":
                    deck.goals = to_html(rd.transform_markdown(d.body, ctx))
                elif d.name == "admonition" and title.lower() == "takeaways":
                    deck.takeaways = to_html(rd.transform_markdown(d.body, ctx))
                elif d.name == "exercise":
                    label = d.options.get("label", "")
                    n = book.labels[label].number if label in book.labels else ""
                    exercises.append(Exercise(n, rd.transform_roles(title, ctx),
                                              to_html(rd.transform_markdown(d.body, ctx))))
            elif tok.type == "heading_open" and tok.tag == "h2" and tok.level == 0:
                section = _plain_title(rd.transform_roles(tokens[i + 1].content, ctx))
            elif tok.type in ("math_block", "math_block_label"):
                label = tok.info if tok.type == "math_block_label" else ""
                n = book.labels[label].number if label else ""
                deck.items.append(Equation(tok.content.strip("\n"), n, section,
                                           _lead(lead, ctx)))
            elif tok.type == "inline" and tokens[i - 1].type == "paragraph_open":
                lead = tok.content  # at any depth: a list item's paragraph leads its math too
                continue
            if tok.type in LEAD_BREAKS:
                lead = ""
    deck.n_exercises_total = len(exercises)
    if exercises:
        picks = sorted({0, len(exercises) // 2, len(exercises) - 1})[:N_EXERCISES]
        deck.exercises = [exercises[i] for i in picks]
    missing = [what for what, v in (("learning goals", deck.goals), ("takeaways", deck.takeaways))
               if not v]
    if missing:
        raise ValueError(f"slides: {doc} has no {' and no '.join(missing)} admonition "
                         "(CHAPTERS.md: every chapter has both)")
    return deck


# --------------------------------------------------------------------------------------------
# HTML


def _section(inner: str, cls: str = "", notes: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    note = f'\n<aside class="notes">{html.escape(notes)}</aside>' if notes else ""
    return f"<section{attr}>\n{inner}{note}\n</section>"


def _density(fragment: str) -> str:
    """A class that shrinks long text so it fits a slide."""
    n = len(re.sub(r"<[^>]+>", "", fragment))
    return "dense" if n > 700 else ("medium" if n > 420 else "")


def _group_equations(items: list) -> list:
    """Consecutive equations of one section on one slide (at most three); figures alone."""
    out: list = []
    for item in items:
        if (isinstance(item, Equation) and out and isinstance(out[-1], list)
                and out[-1][0].section == item.section and len(out[-1]) < 3):
            out[-1].append(item)
        elif isinstance(item, Equation):
            out.append([item])
        else:
            out.append(item)
    return out


def deck_html(deck: Deck) -> str:
    esc = html.escape
    slides = [_section(
        f'<p class="kicker">The Roofline Book &middot; Chapter {esc(deck.number)}</p>\n'
        f"<h1>{esc(deck.title)}</h1>\n"
        + (f'<div class="question">{deck.question}</div>' if deck.question else ""),
        "title-slide")]
    slides.append(_section(f"<h2>Learning goals</h2>\n{deck.goals}", _density(deck.goals)))
    for item in _group_equations(deck.items):
        if isinstance(item, Figure):
            src = f"{deck.stem}/{item.label}.png"
            slides.append(_section(
                f'<h3>{esc(item.section)}</h3>\n<figure id="{esc(item.label)}">'
                f'<img src="{esc(src)}" alt="{esc(item.alt)}" data-figure="{esc(item.label)}">\n'
                f'<figcaption><strong>Fig. {esc(item.number)}.</strong> '
                f"{_strip_p(item.caption)}</figcaption></figure>",
                "figure-slide", notes=item.alt))
        else:
            body = "\n".join(
                (f'<p class="lead">{e.lead}</p>' if e.lead else "")
                + f'<div class="math">\\[{esc(e.latex)}'
                + (f"\\tag{{{esc(e.number)}}}" if e.number else "") + "\\]</div>" for e in item)
            slides.append(_section(f"<h3>{esc(item[0].section)}</h3>\n{body}", "math-slide"))
    slides.append(_section(f"<h2>Takeaways</h2>\n{deck.takeaways}",
                           "takeaways " + _density(deck.takeaways)))
    for ex in deck.exercises:
        head = f"Exercise {esc(ex.number)}" + (f": {esc(ex.title)}" if ex.title else "")
        slides.append(_section(f'<p class="kicker">Try it</p>\n<h3>{head}</h3>\n{ex.body}',
                               "exercise " + _density(ex.body)))
    slides.append(_section(
        f"<h2>Read on</h2>\n<p>The chapter has the derivations, the explorer and "
        f"{deck.n_exercises_total} exercises with worked solutions.</p>"
        f'<p class="small"><a href="index.html">All decks</a></p>', "end"))
    return PAGE.format(title=esc(f"{deck.number}. {deck.title}"), assets=ASSETS,
                       slides="\n\n".join(slides))


def _strip_p(fragment: str) -> str:
    return re.sub(r"^\s*<p>|</p>\s*$", "", fragment.strip())


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} (slides)</title>
<link rel="stylesheet" href="{assets}/reveal/reset.css">
<link rel="stylesheet" href="{assets}/reveal/reveal.css">
<link rel="stylesheet" href="{assets}/reveal/theme/white.css">
<link rel="stylesheet" href="{assets}/slides.css">
</head>
<body>
<div class="reveal"><div class="slides">
{slides}
</div></div>
<script>
window.MathJax = {{
  tex: {{inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]]}},
  svg: {{fontCache: "global"}},
  options: {{enableMenu: false}},
  startup: {{pageReady: () => MathJax.startup.defaultPageReady().then(() => {{
    if (window.Reveal && Reveal.isReady()) Reveal.layout();
  }})}}
}};
</script>
<script src="{assets}/mathjax/tex-svg.js"></script>
<script src="{assets}/reveal/reveal.js"></script>
<script src="{assets}/reveal/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({{hash: true, slideNumber: "c/t", width: 1280, height: 800, margin: 0.04,
                   center: false, transition: "none", plugins: [RevealNotes]}});
</script>
</body>
</html>
"""

CSS = """/* The Roofline Book: slide style (scripts/slides.py). */
.reveal {{ font-size: 30px; }}
.reveal h1 {{ font-size: 2.0em; text-transform: none; }}
.reveal h2 {{ font-size: 1.5em; text-transform: none; }}
.reveal h3 {{ font-size: 1.0em; text-transform: none; color: #1f4e79; margin-bottom: 0.4em; }}
.reveal .kicker {{ font-size: 0.7em; color: #666; margin: 0 0 0.2em 0; text-transform: uppercase;
  letter-spacing: 0.06em; }}
.reveal .title-slide {{ padding-top: 12%; }}
.reveal .question {{ margin-top: 1.2em; font-size: 0.95em; font-style: italic; }}
.reveal ul, .reveal ol {{ display: block; margin-left: 1.2em; }}
.reveal li {{ margin: 0.25em 0; }}
.reveal section {{ text-align: left; }}
.reveal .medium {{ font-size: 0.85em; }}
.reveal .dense {{ font-size: 0.72em; }}
.reveal figure {{ margin: 0; text-align: center; }}
.reveal figure img {{ max-height: 560px; max-width: 100%; margin: 0.2em auto; }}
.reveal figcaption {{ font-size: 0.55em; line-height: 1.3; text-align: left; color: #333; }}
.reveal .lead {{ font-size: 0.75em; margin: 0.6em 0 0 0; color: #333; }}
.reveal .math {{ margin: 0.5em 0; text-align: center; font-size: 1.1em; }}
.reveal .takeaways li::marker {{ color: #1f4e79; }}
.reveal blockquote {{ width: auto; font-style: normal; box-shadow: none;
  border-left: 4px solid #ccc; padding: 0.2em 0.8em; margin: 0.4em 0; font-size: 0.9em; }}
.reveal .small {{ font-size: 0.6em; }}
.reveal table {{ font-size: 0.7em; }}
"""

INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The Roofline Book: slides</title>
<style>
body {{ font-family: "Source Sans Pro", Helvetica, Arial, sans-serif; max-width: 48em;
  margin: 2em auto; padding: 0 1em; line-height: 1.5; color: #222; }}
h1 {{ font-size: 1.8em; }} h2 {{ font-size: 1.2em; margin-top: 1.5em; }}
li {{ margin: 0.3em 0; }} .meta {{ color: #666; font-size: 0.9em; }}
</style>
</head>
<body>
<h1>The Roofline Book: slides</h1>
<p>One deck per chapter, built from the chapter's own figures, equations and takeaways
(<code>make slides</code>). They work offline from this folder. Keys: arrows to move,
<kbd>S</kbd> for speaker notes (figure descriptions), <kbd>F</kbd> full screen,
<kbd>Esc</kbd> overview; add <code>?print-pdf</code> to a deck's address and print to get a PDF.
Exercise prompts only: the worked solutions stay in the full edition of the book.</p>
<p>{figures}</p>
{parts}
</body>
</html>
"""


def index_html(decks: list[Deck], parts: dict[str, str]) -> str:
    esc = html.escape
    blocks, current = [], None
    for d in decks:
        part = parts.get(d.doc, "")
        if part != current:
            if current is not None:
                blocks.append("</ul>")
            blocks.append(f"<h2>{esc(part)}</h2>\n<ul>")
            current = part
        blocks.append(f'<li><a href="{esc(d.stem)}.html">{esc(d.number)}. {esc(d.title)}</a> '
                      f'<span class="meta">({len(d.figures)} figures, '
                      f"{sum(isinstance(i, Equation) for i in d.items)} equations, "
                      f"{len(d.exercises)} exercise prompts)</span></li>")
    if blocks:
        blocks.append("</ul>")
    figs = ("Every figure as SVG and PNG for your own slides: "
            '<a href="../figures/index.html">figure export</a> (<code>make figures</code>).')
    return INDEX.format(parts="\n".join(blocks), figures=figs)


def copy_assets(out: Path) -> None:
    dest = out / ASSETS
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(REVEAL, dest / "reveal")
    mj = mathjax_dir()
    (dest / "mathjax").mkdir(parents=True)
    shutil.copy2(mj / "tex-svg.js", dest / "mathjax" / "tex-svg.js")
    # packages that \require or autoload pulls in on demand, loaded from beside tex-svg.js
    shutil.copytree(mj / "input" / "tex" / "extensions", dest / "mathjax" / "input" / "tex" /
                    "extensions")
    (dest / "slides.css").write_text(CSS.format(), encoding="utf-8")


def build(out: Path = OUT, only: list[str] | None = None, root: Path = ROOT) -> list[Deck]:
    book = rd.load_book(root)
    todo = chapters(book)
    if only:
        want = {Path(o).stem for o in only}
        unknown = want - {Path(d).name for d, _ in todo}
        if unknown:
            raise KeyError(f"slides: {sorted(unknown)} are not chapters of _toc.yml "
                           f"(chapters: {[Path(d).name for d, _ in todo]})")
        todo = [(d, n) for d, n in todo if Path(d).name in want]
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    decks = []
    for doc, number in todo:
        deck = read_deck(book, doc, number)
        figdir = out / deck.stem
        if figdir.exists():
            shutil.rmtree(figdir)
        figdir.mkdir()
        for f in deck.figures:
            (figdir / f"{f.label}.png").write_bytes(f.png)
        (out / f"{deck.stem}.html").write_text(deck_html(deck), encoding="utf-8")
        decks.append(deck)
    if not only:
        for stale in out.glob("*.html"):
            if stale.name != "index.html" and stale.stem not in {d.stem for d in decks}:
                stale.unlink()
    (out / "index.html").write_text(index_html(decks, book.parts),
                                    encoding="utf-8")
    return decks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("chapters", nargs="*", help="chapter docnames or stems (default: all)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        decks = build(args.out, args.chapters or None)
    except rd.NotBuilt as exc:
        print(f"slides: {exc}", file=sys.stderr)
        return 2
    n_fig = sum(len(d.figures) for d in decks)
    print(f"slides: {len(decks)} decks, {n_fig} figures in {args.out} "
          f"({time.perf_counter() - start:.1f} s); open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
