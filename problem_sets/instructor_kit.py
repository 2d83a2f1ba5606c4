"""The instructor kit (`make instructor`): everything that grades or answers, in one archive.

    python problem_sets/instructor_kit.py [--out _build/instructor] [--seed N]

Writes ``OUT/roofline-instructor-kit.tar.gz``, which the public site (`make book`) and the student
edition (`make student`) never contain (tests/test_instructor_kit.py):

- ``grader/``: ``grader.py``, ``build.py``, ``pset.py`` and ``keys.py`` (the problem sets' keys),
  ``chapter_keys.py`` (the keys of the chapters' sealed check cells), ``lab_keys.py`` (the lab's),
  the set sources with their worked solutions (``*.ipynb``) and ``grader.json`` (tolerance, slip
  credit, library version);
- ``lab/lab_keys.md``: the keys to the lab's "Try this" questions, with the reference run's numbers;
- ``sets/SET/``: every set built for the term's seed (``autograder/`` to grade with, ``student/``
  to hand out);
- ``solutions/``: the chapters as executed notebooks, every worked solution included;
- ``exam_bank/``: ``instructor/exam_bank/`` and ``book/exam_bank.ipynb``, whichever exist.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]
import build  # noqa: E402
import grader  # noqa: E402

NAME = "roofline-instructor-kit"
GRADER_FILES = ("grader.py", "build.py", "pset.py", "keys.py", "chapter_keys.py", "lab_keys.py")


def assemble(dest: Path, seed: int = build.DEFAULT_SEED) -> Path:
    """Write the kit's tree into ``dest/NAME`` and return it."""
    kit = dest / NAME
    (kit / "grader").mkdir(parents=True)
    for name in GRADER_FILES:
        shutil.copy(HERE / name, kit / "grader" / name)
    for nb in sorted(HERE.glob("*.ipynb")):
        shutil.copy(nb, kit / "grader" / nb.name)
    (kit / "grader" / "grader.json").write_text(json.dumps(
        {"tolerance": grader.TOLERANCE, "slip_credit": grader.SLIP_CREDIT, "seed": seed,
         **grader.library_version()}, indent=1) + "\n")
    import lab_keys

    (kit / "lab").mkdir()
    (kit / "lab" / "lab_keys.md").write_text(lab_keys.markdown() + "\n", encoding="utf-8")
    build.build(kit / "sets", seed=seed)
    shutil.rmtree(kit / "sets" / "_src")
    (kit / "solutions").mkdir()
    from scripts.reader_edition import toc_pages

    for doc, _ in toc_pages(ROOT):
        if (ROOT / f"{doc}.ipynb").exists() and doc != "book/exam_bank":
            shutil.copy(ROOT / f"{doc}.ipynb", kit / "solutions")
    bank = kit / "exam_bank"
    if (ROOT / "instructor" / "exam_bank").is_dir():
        shutil.copytree(ROOT / "instructor" / "exam_bank", bank,
                        ignore=shutil.ignore_patterns("__pycache__"))
    if (ROOT / "book" / "exam_bank.ipynb").exists():
        bank.mkdir(exist_ok=True)
        shutil.copy(ROOT / "book" / "exam_bank.ipynb", bank)
    return kit


def make(out: Path, seed: int = build.DEFAULT_SEED) -> Path:
    """Build the archive ``out/NAME.tar.gz``; return its path."""
    out.mkdir(parents=True, exist_ok=True)
    archive = out / f"{NAME}.tar.gz"
    with tempfile.TemporaryDirectory() as tmp:
        kit = assemble(Path(tmp), seed)
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(kit, arcname=NAME)
    return archive


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "instructor")
    ap.add_argument("--seed", type=int, default=build.DEFAULT_SEED)
    a = ap.parse_args(argv)
    print(f"wrote {make(a.out, a.seed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
