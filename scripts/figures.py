"""Every figure of every chapter as SVG and PNG, for an instructor's own slides (`make figures`).

For each chapter of _toc.yml (read each time; nothing here names a chapter) a separate Python
process re-runs the chapter's code cells with the non-interactive Agg backend and saves each
labelled figure (a code cell with ``mystnb.figure.name``) the way its builder drew it:

    _build/figures/<chapter>/<label>.svg   vector, text as paths (no font needed to open it)
    _build/figures/<chapter>/<label>.png   200 dpi, white background

The label is the one the book's cross-references use (``fig-decode-roofline``), so a figure is
found by the name an instructor sees in the source. ``index.md`` and ``index.html`` list every
figure with its number, caption (glued numbers filled in from the executed notebook) and alt text.

Re-running rather than scraping the notebook's PNG is what gives an SVG: only the builder has the
vector drawing. Explorer cells (``widgets.*``/``frames.*`` calls) and every cell after the last
figure (exercise keys, answer checks) are skipped, and glue calls do nothing. A figure whose cell
no longer draws exactly one figure is an error, not a silent gap.

Figure numbers and chapter titles are the HTML build's (_build/resolved.json): run `make book`
first.

Usage: python -m scripts.figures [--out DIR] [--jobs N] [chapter docnames or stems ...]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts import reader_edition as rd  # captions and numbers as the reader's edition shows them

ROOT = rd.ROOT
OUT = ROOT / "_build" / "figures"
PNG_DPI = 200


def run_chapter(nb_path: Path, out: Path) -> list[dict]:
    """In this process: run the notebook's code (``llmmath.book.chapter_figures``, as the
    figure-quality tests do) and save its labelled figures into `out`."""
    import matplotlib.pyplot as plt

    from llmmath.book import chapter_figures

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    for label, fig in chapter_figures(nb_path):
        fig.savefig(out / f"{label}.svg", format="svg", bbox_inches="tight",
                    metadata={"Date": None})
        fig.savefig(out / f"{label}.png", format="png", dpi=PNG_DPI, bbox_inches="tight",
                    facecolor="white", metadata={"Software": None})
        saved.append({"label": label, "alt": getattr(fig, "alt_text", "")})
        plt.close(fig)
    return saved


def _worker(doc: str, out: Path) -> tuple[str, float]:
    start = time.perf_counter()
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "scripts.figures", "--worker",
                           str(ROOT / f"{doc}.ipynb"), "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"figures: {doc} failed:\n{proc.stderr[-3000:]}")
    return doc, time.perf_counter() - start


def write_index(book: rd.Book, todo: list[tuple[str, str]], out: Path) -> None:
    md = ["# The Roofline Book: figures", "",
          "Every figure of every chapter as SVG (vector) and PNG (200 dpi), named by its label "
          "(`make figures`). Text and figures are CC BY 4.0: credit *The Roofline Book*.", ""]
    rows = []
    for doc, number in todo:
        nb = json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))
        ctx = rd.Context(book, doc, rd.glue_values(nb), student=True)
        stem = Path(doc).name
        md += [f"## {number}. {book.titles.get(doc, stem)}", ""]
        rows.append(f"<h2>{html.escape(number)}. {html.escape(book.titles.get(doc, stem))}</h2>")
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("mystnb", {})
            label = meta.get("figure", {}).get("name") if cell["cell_type"] == "code" else None
            if not label:
                continue
            caption = rd.transform_markdown(meta["figure"].get("caption", ""), ctx)
            caption = re.sub(r"\[([^\[\]]+)\]\(#References\)", r"\1", caption)
            alt = meta.get("image", {}).get("alt", "")
            n = book.labels[label].number
            md += [f"- **Fig. {n}** `{label}`: [SVG]({stem}/{label}.svg), "
                   f"[PNG]({stem}/{label}.png). {caption}", ""]
            rows.append(
                f'<figure><a href="{stem}/{label}.svg"><img src="{stem}/{label}.png" '
                f'alt="{html.escape(alt)}" loading="lazy"></a><figcaption><b>Fig. {n}</b> '
                f"<code>{label}</code> (<a href=\"{stem}/{label}.svg\">SVG</a>, "
                f"<a href=\"{stem}/{label}.png\">PNG</a>). {html.escape(caption)}"
                "</figcaption></figure>")
    (out / "index.md").write_text("\n".join(md), encoding="utf-8")
    (out / "index.html").write_text(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>The Roofline Book: figures</title><style>body{font-family:sans-serif;"
        "max-width:60em;margin:2em auto;padding:0 1em;line-height:1.4}img{max-width:28em;"
        "display:block}figure{margin:1.5em 0}figcaption{font-size:.9em}</style></head><body>"
        "<h1>The Roofline Book: figures</h1><p>Every figure as SVG and PNG, named by its label "
        "(<code>make figures</code>); CC BY 4.0, credit <i>The Roofline Book</i>. Slides: "
        "<a href=\"../slides/index.html\">decks</a>.</p>\n" + "\n".join(rows)
        + "\n</body></html>\n", encoding="utf-8")


def build(out: Path = OUT, only: list[str] | None = None, jobs: int = 2) -> dict[str, float]:
    book = rd.load_book(ROOT)
    todo = [(d, n) for d, n in book.docs if n and (ROOT / f"{d}.ipynb").exists()]
    if only:
        want = {Path(o).stem for o in only}
        unknown = want - {Path(d).name for d, _ in todo}
        if unknown:
            raise KeyError(f"figures: {sorted(unknown)} are not chapters of _toc.yml")
        todo = [(d, n) for d, n in todo if Path(d).name in want]
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        times = dict(pool.map(lambda dn: _worker(dn[0], out / Path(dn[0]).name), todo))
    write_index(book, todo if not only else
                [(d, n) for d, n in book.docs if n and (out / Path(d).name).is_dir()], out)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=2, help="chapters in parallel (default 2)")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args(argv)
    if args.worker:
        run_chapter(args.worker.resolve(), args.out.resolve())
        return 0
    start = time.perf_counter()
    try:
        times = build(args.out.resolve(), args.chapters or None, args.jobs)
    except rd.NotBuilt as exc:
        print(f"figures: {exc}", file=sys.stderr)
        return 2
    n = sum(1 for _ in args.out.glob("*/*.svg"))
    slow = ", ".join(f"{Path(d).name} {t:.1f} s" for d, t in sorted(times.items()))
    print(f"figures: {n} figures (SVG and PNG) in {args.out} "
          f"({time.perf_counter() - start:.1f} s; {slow})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
