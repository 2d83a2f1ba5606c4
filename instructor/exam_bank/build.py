"""Write the exam bank's two variants for a seed as Markdown: question sheets and keys.

    python -m instructor.exam_bank.build --out DIR --seed N

writes ``DIR/README.md`` (the seed, the library version, which question covers which chapter),
``DIR/questions-A.md`` and ``DIR/questions-B.md`` (for students: questions only),
``DIR/key-A.md`` and ``DIR/key-B.md`` (answers, worked keys, marking notes) and
``DIR/keys-A.json``, ``DIR/keys-B.json`` (every answer in SI, for grading by script). The same
seed and library version give the same files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import llmmath

from . import bank

ROMAN = {1: "I", 2: "II", 3: "III", 4: "IV"}


def _header(q, number):
    return (f"### Q{number}. {q.title}\n\n*Part {ROMAN[q.part]}, chapter `{q.chapter}`; "
            f"{q.kind}; difficulty {q.difficulty}; {q.minutes} minutes*\n")


def questions_md(seed, letter, drawn) -> str:
    lines = [f"# Exam bank, variant {letter} (seed {seed})", "",
             "Closed book; the book's cheat sheet and a calculator allowed. Every constant a "
             "question needs is stated in it or on the cheat sheet; use the stated values, not "
             "the catalogue's. Numeric answers earn full credit within "
             f"{bank.TOLERANCE:.0%}.", ""]
    n = 0
    for part, name in bank.PARTS.items():
        lines += [f"## Part {ROMAN[part]}: {name}", ""]
        for q in (q for q in bank.QUESTIONS if q.part == part):
            n += 1
            v = drawn[q.qid][0 if letter == "A" else 1]
            lines += [_header(q, n), v.text, ""]
    return "\n".join(lines)


def key_md(seed, letter, drawn) -> str:
    lines = [f"# Exam bank key, variant {letter} (seed {seed})", "",
             f"llmmath {llmmath.__version__}. Keys are the library's values on the catalogue's "
             "figures; the worked keys follow the hand route from the stated (rounded) "
             f"constants, which agrees within {bank.TOLERANCE:.0%} (tests/test_exam_bank.py). "
             "Give full credit to either.", ""]
    n = 0
    for part, name in bank.PARTS.items():
        lines += [f"## Part {ROMAN[part]}: {name}", ""]
        for q in (q for q in bank.QUESTIONS if q.part == part):
            n += 1
            v = drawn[q.qid][0 if letter == "A" else 1]
            lines += [_header(q, n), v.text, "", "**Answers**", ""]
            lines += [f"- {a.label}: **{a.shown()}** (by hand: {a.shown(a.hand)})"
                      for a in v.answers]
            lines += ["", "**Worked key**", ""] + [f"{i}. {w}" for i, w in
                                                 enumerate(v.worked, 1)]
            if v.marking:
                lines += ["", f"*Marking*: {v.marking}"]
            lines.append("")
    return "\n".join(lines)


def keys_json(seed, letter, drawn) -> str:
    out = {"seed": seed, "variant": letter, "llmmath": llmmath.__version__,
           "tolerance": bank.TOLERANCE, "questions": {}}
    for q in bank.QUESTIONS:
        v = drawn[q.qid][0 if letter == "A" else 1]
        out["questions"][q.qid] = [{"label": a.label, "key": a.key} for a in v.answers]
    return json.dumps(out, indent=1, ensure_ascii=False)


def readme_md(seed) -> str:
    lines = ["# Exam bank (instructor kit)", "",
             f"Seed {seed}, llmmath {llmmath.__version__}. Two variants, A and B, of every "
             "question, with different models, chips or numbers. Hand out `questions-A.md` "
             "(or B); keep `key-*.md` and `keys-*.json`. Rebuild with another seed for another "
             "term: `python -m instructor.exam_bank.build --out DIR --seed N`.", "",
             "| question | Part | chapter | kind | difficulty | minutes |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {q.qid}: {q.title} | {ROMAN[q.part]} | {q.chapter} | {q.kind} | "
              f"{q.difficulty} | {q.minutes} |" for q in bank.QUESTIONS]
    lines += ["", "Chapters covered:", ""]
    lines += [f"- `{ch}`: {', '.join(ids)}" for ch, ids in bank.coverage().items()]
    return "\n".join(lines) + "\n"


def build(out, seed: int) -> list[Path]:
    """Write the files for ``seed`` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    drawn = bank.variants(seed)
    files = {"README.md": readme_md(seed)}
    for letter in "AB":
        files[f"questions-{letter}.md"] = questions_md(seed, letter, drawn)
        files[f"key-{letter}.md"] = key_md(seed, letter, drawn)
        files[f"keys-{letter}.json"] = keys_json(seed, letter, drawn)
    paths = []
    for name, text in files.items():
        (out / name).write_text(text.rstrip("\n") + "\n", encoding="utf-8")
        paths.append(out / name)
    return paths


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder to write into (created if missing)")
    p.add_argument("--seed", type=int, required=True, help="the term's seed, e.g. 2026")
    args = p.parse_args(argv)
    for path in build(args.out, args.seed):
        print(path)


if __name__ == "__main__":
    main()
