"""Lecture slides: one reveal.js deck per chapter, built offline from the executed notebooks.

`make slides` runs this. For every chapter of _toc.yml (the documents of its numbered parts, read
from _toc.yml each time) it writes `_build/slides/<chapter>.html`, a deck for a 75-minute lecture
(at least MIN_SLIDES slides, most of them built up in fragments):

- a title slide with the chapter's number, title and opening question; the learning goals;
- in reading order, a slide per section (the idea its first paragraph states), every display
  equation (its introducing sentence, the equation built line by line, then what it means), every
  figure with its caption, and the chapter's worked example by hand, one step per fragment;
- two or three in-class questions spread through the lecture, the answer on a fragment: exercises
  the course guide leaves to class (never homework, exam-suitable or project exercises), or a
  predict-then-check question on the chapter's own result;
- the takeaways, and exercise prompts to try after class, never their solutions.

What a deck holds is read by scripts/slide_deck.py; which cells are the worked example and which
exercises are asked in class is scripts/slide_plan.yml. Speaker notes (key `S`) are the chapter's
prose around each item, shortened. Every number is the glued value stored in the executed
notebook, resolved as the reader's edition resolves it (scripts/reader_edition.py, student mode):
chapter, figure and equation numbers and titles are the HTML build's (_build/resolved.json): run
`make book` first. Figures are the PNGs the notebook holds, written next to the deck as
`<chapter>/<label>.png`. An index page lists the decks; it links the figure export only when
`make figures` has built it.

Nothing is fetched when a deck is opened: reveal.js (and its notes plugin) comes from
_vendor/reveal/ (npm `reveal.js` 5.2.1, MIT), MathJax 3 (SVG output, fonts inside the script)
from the `sphinx-mathjax-offline` package the site already uses; both are copied into
`_build/slides/_assets/`, so a deck works from file://.

Usage: python -m scripts.slides [--out DIR] [chapter docnames or stems ...]
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
import time
from pathlib import Path

from scripts import reader_edition as rd
from scripts import slide_deck as sd
from scripts.slide_deck import Deck, Equation, Figure, Hand, Question, Section

ROOT = rd.ROOT
OUT = ROOT / "_build" / "slides"
REVEAL = ROOT / "_vendor" / "reveal"
ASSETS = "_assets"
# The slide rule for a 75-minute lecture: about 1.5 minutes a slide (most are built up in several
# clicks), plus about 5 minutes for each in-class question and the worked example at the board:
# at least 32 slides (the decks have 33-46).
MIN_SLIDES = 32


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


def chapters(book: rd.Book) -> list[tuple[str, str]]:
    """(docname, number) of every numbered chapter in _toc.yml that is a notebook."""
    return [(doc, n) for doc, n in book.docs if n and (book.root / f"{doc}.ipynb").exists()]


# --------------------------------------------------------------------------------------------
# HTML

esc = html.escape


def _section(inner: str, cls: str = "", notes: str = "") -> str:
    attr = f' class="{cls.strip()}"' if cls.strip() else ""
    note = f'\n<aside class="notes">{esc(notes)}</aside>' if notes else ""
    return f"<section{attr}>\n{inner}{note}\n</section>"


def _density(fragment: str) -> str:
    """A class that shrinks long text so it fits a slide."""
    n = len(re.sub(r"<[^>]+>", "", fragment))
    return "dense" if n > 900 else ("medium" if n > 520 else "")


def _fragments(fragment: str) -> str:
    """Each top-level list item of an HTML list revealed on its own fragment."""
    return re.sub(r"<li>", '<li class="fragment">', fragment)


def _math(e: Equation, upto: int) -> str:
    body = " \\\\ ".join(e.lines[:upto])
    if e.aligned:
        body = f"\\begin{{aligned}}{body}\\end{{aligned}}"
    tag = f"\\tag{{{esc(e.number)}}}" if e.number else ""
    return f"\\[{esc(body)}{tag}\\]"


def equation_slide(e: Equation) -> str:
    """The lead, then the equation built line by line (a stack of ever longer versions, so the
    lines stay aligned), then what it means."""
    n = len(e.lines)
    blocks = []
    for k in range(1, n + 1):
        if n == 1:
            cls = "fragment"
        elif k == 1:
            cls = "fragment fade-out"  # shown from the start, replaced by the next line's block
        elif k < n:
            cls = "fragment current-visible"
        else:
            cls = "fragment"
        index = max(k - 2, 0)
        blocks.append(f'<div class="math {cls}" data-fragment-index="{index}">{_math(e, k)}</div>')
    stack = f'<div class="r-stack">{"".join(blocks)}</div>' if n > 1 else blocks[0]
    meaning = (f'<p class="meaning fragment" data-fragment-index="{max(n - 1, 1)}">'
               f"{e.meaning}</p>" if e.meaning else "")
    lead = f'<p class="lead">{e.lead}</p>' if e.lead else ""
    return _section(f"<h3>{esc(e.section)}</h3>\n{lead}\n{stack}\n{meaning}", "math-slide",
                    e.notes)


def hand_slides(h: Hand) -> list[str]:
    """The worked example, at most 4 steps (about STEP_CHARS characters) a slide, a step a
    fragment, numbered on across slides."""
    chunks, cur, size = [], [], 0
    for step in h.steps:
        n = len(re.sub(r"<[^>]+>", "", step))
        if cur and (len(cur) == 4 or size + n > sd.STEP_CHARS):
            chunks.append(cur)
            cur, size = [], 0
        cur.append(step)
        size += n
    chunks.append(cur)
    out, start = [], 1
    for k, chunk in enumerate(chunks, 1):
        part = f" ({k}/{len(chunks)})" if len(chunks) > 1 else ""
        items = "".join(f'<li class="fragment">{s}</li>' for s in chunk)
        body = f'<ol start="{start}">{items}</ol>'
        out.append(_section(f'<p class="kicker">Worked example</p>\n<h3>{h.title}{part}</h3>\n'
                            f"{body}", "hand " + _density(body), h.notes))
        start += len(chunk)
    return out


def points_slide(s: Section) -> str:
    """A section's argument: the first sentence of each of its later paragraphs, one a fragment
    (at most five)."""
    items = "".join(f'<li class="fragment">{p}</li>' for p in s.points[:5])
    body = f"<ul>{items}</ul>"
    return _section(f'<p class="kicker">Section {esc(s.number)}</p>\n<h3>{s.title}</h3>\n{body}',
                    "points " + _density(body), sd.shorten(" ".join(s.points_notes)))


def question_slide(q: Question, k: int) -> str:
    answer = f'<div class="answer fragment"><p class="kicker">Answer</p>\n{q.answer}</div>'
    return _section(f'<p class="kicker">In-class question {k}</p>\n<h3>{q.title}</h3>\n'
                    f'<div class="prompt">{q.prompt}</div>\n{answer}',
                    "inclass", q.notes)


def _with_questions(items: list, questions: list) -> list:
    """The questions spread evenly through the lecture, each just before a section starts."""
    out = list(items)
    for k in range(len(questions), 0, -1):
        at = round(k * len(items) / (len(questions) + 1))
        while at < len(items) and not isinstance(items[at], Section):
            at += 1
        out.insert(at, (k, questions[k - 1]))
    return out


def deck_html(deck: Deck) -> str:
    slides = [_section(
        f'<p class="kicker">The Roofline Book &middot; Chapter {esc(deck.number)}</p>\n'
        f"<h1>{esc(deck.title)}</h1>\n"
        + (f'<div class="question">{deck.question}</div>' if deck.question else ""),
        "title-slide")]
    slides.append(_section(f"<h2>Learning goals</h2>\n{_fragments(deck.goals)}",
                           "goals " + _density(deck.goals), deck.goals_notes))
    outline = "".join(f"<li>{s.title}</li>" for s in deck.items
                      if isinstance(s, Section) and s.number.count(".") == 1)
    slides.append(_section(f"<h2>Today</h2>\n<ol class=\"outline\">{outline}</ol>",
                           "outline", "The lecture follows the chapter's sections: "
                           + "; ".join(sd.plain(s.title) for s in deck.items
                                       if isinstance(s, Section) and s.number.count(".") == 1)
                           + "."))
    open_section = None  # the section being drawn

    def close_section():
        # a section's argument, paragraph by paragraph, closes it (when it has two or more)
        if open_section and len(open_section.points) >= 2:
            slides.append(points_slide(open_section))

    for item in _with_questions(deck.items, deck.questions) + [None]:
        if item is None or isinstance(item, (tuple, Section)):
            close_section()
            open_section = item if isinstance(item, Section) else None
        if item is None:
            break
        if isinstance(item, tuple):
            slides.append(question_slide(item[1], item[0]))
        elif isinstance(item, Section):
            slides.append(_section(
                f'<p class="kicker">Section {esc(item.number)}</p>\n<h2>{item.title}</h2>\n'
                + (f'<p class="idea">{item.idea}</p>' if item.idea else ""),
                "section-slide " + _density(item.idea), item.notes))
        elif isinstance(item, Figure):
            src = f"{deck.stem}/{item.label}.png"
            slides.append(_section(
                f'<h3>{esc(item.section)}</h3>\n<figure id="{esc(item.label)}">'
                f'<img src="{esc(src)}" alt="{esc(item.alt)}" data-figure="{esc(item.label)}">\n'
                f'<figcaption><strong>Fig. {esc(item.number)}.</strong> '
                f"{sd.strip_p(item.caption)}</figcaption></figure>",
                "figure-slide", item.notes))
        elif isinstance(item, Hand):
            slides += hand_slides(item)
        else:
            slides.append(equation_slide(item))
    slides.append(_section(f"<h2>Takeaways</h2>\n{_fragments(deck.takeaways)}",
                           "takeaways " + _density(deck.takeaways), deck.takeaways_notes))
    for ex in deck.prompts:
        head = f"Exercise {esc(ex.number)}" + (f": {esc(ex.title)}" if ex.title else "")
        slides.append(_section(f'<p class="kicker">Try it after class</p>\n<h3>{head}</h3>\n'
                               f"{ex.body}", "exercise " + _density(ex.body),
                               "A prompt to try after class: the worked solution is in the "
                               "full edition of the book, not on the slides."))
    slides.append(_section(
        f"<h2>Read on</h2>\n<p>The chapter has the derivations, the explorer and "
        f"{deck.n_exercises_total} exercises with worked solutions.</p>"
        f'<p class="small"><a href="index.html">All decks</a></p>', "end"))
    return PAGE.format(title=esc(f"{deck.number}. {deck.title}"), assets=ASSETS,
                       slides="\n\n".join(slides))


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
    if (window.Reveal && Reveal.isReady()) {{ Reveal.sync(); Reveal.layout(); }}
  }})}}
}};
</script>
<script src="{assets}/mathjax/tex-svg.js"></script>
<script src="{assets}/reveal/reveal.js"></script>
<script src="{assets}/reveal/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({{hash: true, slideNumber: "c/t", width: 1280, height: 720, margin: 0.04,
                   center: false, transition: "none", plugins: [RevealNotes]}});
</script>
</body>
</html>
"""

CSS = """/* The Roofline Book: slide style (scripts/slides.py). 16:9, legible from the back. */
.reveal {{ font-size: 32px; }}
.reveal h1 {{ font-size: 2.0em; text-transform: none; }}
.reveal h2 {{ font-size: 1.45em; text-transform: none; }}
.reveal h3 {{ font-size: 1.0em; text-transform: none; color: #1f4e79; margin-bottom: 0.4em; }}
.reveal .kicker {{ font-size: 0.6em; color: #666; margin: 0 0 0.2em 0; text-transform: uppercase;
  letter-spacing: 0.06em; font-style: normal; }}
.reveal .title-slide {{ padding-top: 12%; }}
.reveal .question {{ margin-top: 1.2em; font-size: 0.95em; font-style: italic; }}
.reveal ul, .reveal ol {{ display: block; margin-left: 1.2em; }}
.reveal li {{ margin: 0.3em 0; }}
.reveal section {{ text-align: left; }}
.reveal .medium {{ font-size: 0.85em; }}
.reveal .dense {{ font-size: 0.72em; }}
.reveal .idea {{ font-size: 1.0em; margin-top: 1em; }}
.reveal figure {{ margin: 0; text-align: center; }}
.reveal figure img {{ max-height: 470px; max-width: 100%; margin: 0.1em auto; }}
.reveal figcaption {{ font-size: 0.62em; line-height: 1.3; text-align: left; color: #333; }}
.reveal .lead {{ font-size: 0.9em; margin: 0.5em 0 0 0; }}
.reveal .meaning {{ font-size: 0.9em; margin-top: 0.6em; }}
.reveal .math {{ margin: 0.5em 0; text-align: center; font-size: 1.1em; }}
.reveal .r-stack .math {{ margin: 0.3em 0; }}
.reveal .hand ol {{ line-height: 1.35; }}
.reveal .hand li, .reveal .points li {{ margin: 0.45em 0; }}
.reveal .inclass .prompt {{ font-size: 0.9em; }}
.reveal .inclass .answer {{ background: #f3f6fa; border-left: 5px solid #1f4e79;
  padding: 0.3em 0.8em; margin-top: 0.6em; font-size: 0.78em; }}
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
<p>One deck per chapter, each a 75-minute lecture built from the chapter itself: its sections,
equations built line by line, figures, its worked example step by step, two or three in-class
questions whose answers appear on the next click, and the takeaways (<code>make slides</code>).
They work offline from this folder. Keys: arrows or space to move (each click reveals the next
step), <kbd>S</kbd> for the speaker view with notes on what to say, <kbd>F</kbd> full screen,
<kbd>Esc</kbd> overview; add <code>?print-pdf</code> to a deck's address and print to get a PDF.
The exercise prompts at the end of each deck are for after class: their worked solutions stay in
the full edition of the book.</p>
<p>{figures}</p>
{parts}
</body>
</html>
"""


def index_html(decks: list[Deck], parts: dict[str, str], figures: Path | None = None) -> str:
    """The list of decks by part; the figure export linked only when `figures` (its index page,
    relative to the decks' folder) exists: no link to a page `make slides` did not build."""
    blocks, current = [], None
    for d in decks:
        part = parts.get(d.doc, "")
        if part != current:
            if current is not None:
                blocks.append("</ul>")
            blocks.append(f"<h2>{esc(part)}</h2>\n<ul>")
            current = part
        blocks.append(f'<li><a href="{esc(d.stem)}.html">{esc(d.number)}. {esc(d.title)}</a> '
                      f'<span class="meta">({d.n_slides} slides, {len(d.figures)} figures, '
                      f"{sum(isinstance(i, Equation) for i in d.items)} equations, "
                      f"{len(d.questions)} in-class questions)</span></li>")
    if blocks:
        blocks.append("</ul>")
    figs = "Every figure as SVG and PNG for your own slides: "
    if figures is not None:
        figs += f'<a href="{esc(figures.as_posix())}">figure export</a>.'
    else:
        figs += "run <code>make figures</code> (then <code>make slides</code> links it here)."
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
    plan = sd.load_plan()
    decks = []
    for doc, number in todo:
        deck = sd.read_deck(book, doc, number, plan)
        figdir = out / deck.stem
        if figdir.exists():
            shutil.rmtree(figdir)
        figdir.mkdir()
        for f in deck.figures:
            (figdir / f"{f.label}.png").write_bytes(f.png)
        page = deck_html(deck)
        deck.n_slides = page.count("<section")
        if deck.n_slides < MIN_SLIDES:
            raise ValueError(f"slides: {doc}: {deck.n_slides} slides, fewer than a 75-minute "
                             f"lecture's {MIN_SLIDES} (scripts/slides.py, MIN_SLIDES)")
        (out / f"{deck.stem}.html").write_text(page, encoding="utf-8")
        decks.append(deck)
    if not only:
        for stale in out.glob("*.html"):
            if stale.name != "index.html" and stale.stem not in {d.stem for d in decks}:
                stale.unlink()
    export = out.parent / "figures" / "index.html"  # where `make figures` writes it
    (out / "index.html").write_text(
        index_html(decks, book.parts, Path("..", "figures", "index.html") if export.exists()
                   else None), encoding="utf-8")
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
    counts = sorted(d.n_slides for d in decks)
    print(f"slides: {len(decks)} decks of {counts[0]}-{counts[-1]} slides, {n_fig} figures in "
          f"{args.out} "
          f"({time.perf_counter() - start:.1f} s); open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
