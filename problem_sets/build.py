"""Build the problem sets with otter-grader; grade submissions safely (grader.py).

    python problem_sets/build.py [--seed N] [--out DIR] [PART ...]    # make psets SEED=N
    python problem_sets/build.py grade SET SUBMISSION.ipynb [...] [--out DIR] [--csv OUT.csv]
                                 [--student-id ID] [--per-student]

``build`` writes, for each set, the source notebook with the issued seed into ``DIR/_src/SET/``
and runs Otter Assign on it: ``DIR/SET/student/`` is what students get (the notebook with every
solution replaced by ``...``, ``pset.py`` and the public tests), ``DIR/SET/autograder/`` what the
instructor grades with (the solution notebook, public and hidden tests, ``pset.py``, ``keys.py``
and ``issue.json``). The seed is written into the notebook (``SEED = N``) and into every hidden
test; the library version it is issued with (``llmmath.__version__`` and ``git describe``) into
the notebook's seed cell and, with a digest of the issued keys, into ``issue.json``, which the
grader checks before grading.

``grade`` runs each submission in a child process without the keys and grades the answers it
printed (grader.py); a submission's file name (without ``.ipynb``) is the student's id, and with
``--per-student`` it picks the student's variant (``pset.student_seed``: students fill in
``STUDENT_ID``); without it everyone is graded on the term's variant. ``--csv`` writes one row per
student and question (student id, set, part, points, max) for the course platform's gradebook.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import grader  # noqa: E402  (safe grading, one tolerance)
from pset import PARTS, SETS, WEEKS  # noqa: E402,F401  (the sets: parts, then weeks)

DEFAULT_SEED = 2026
BUILD = HERE / "_build"
SHARED = ("pset.py", "keys.py")

_SEED_LINE = re.compile(r"^(SEED = )\d+", flags=re.MULTILINE)
_GRADE_CALL = re.compile(r"(keys\.grade\(\"(?:part\d|week\d\d)\", \"q\d+\", )\d+")


def _issued_with(version: dict) -> str:
    return f"llmmath {version['llmmath']}" + (f", git {version['git']}" if version["git"] else "")


def issue(source: Path, seed: int, version: dict | None = None) -> nbformat.NotebookNode:
    """The source notebook with ``seed`` written into its SEED line and its hidden tests, and
    the library version it is issued with (``grader.library_version()``) above the SEED line."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: got {seed!r}; allowed values are whole numbers >= 0")
    version = version or grader.library_version()
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            src = _GRADE_CALL.sub(rf"\g<1>{seed}", _SEED_LINE.sub(rf"\g<1>{seed}", cell.source))
            if _SEED_LINE.search(src):
                src = _SEED_LINE.sub(lambda m: f"# issued with {_issued_with(version)}\n"
                                     + m.group(0), src, count=1)
            cell.source = src
    return nb


def build(out: Path = BUILD, seed: int = DEFAULT_SEED, parts=None) -> dict[str, Path]:
    """Run Otter Assign on each part's source notebook; return {part: its output folder}."""
    from otter.assign import main as assign

    out = Path(out).resolve()
    version = grader.library_version()
    done = {}
    for part in available() if parts is None else parts:
        if part not in SETS:
            raise KeyError(f"part: got {part!r}; allowed values are {', '.join(SETS)}")
        src = out / "_src" / part
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        for name in SHARED:
            shutil.copy(HERE / name, src / name)
        nbformat.write(issue(HERE / f"{part}.ipynb", seed, version), src / f"{part}.ipynb")
        dest = out / part
        shutil.rmtree(dest, ignore_errors=True)
        cwd = os.getcwd()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                assign(str(src / f"{part}.ipynb"), str(dest), no_pdfs=True, no_run_tests=True)
        finally:
            os.chdir(cwd)
        # Otter copies `files` into both versions; the keys go to the autograder only.
        shutil.copy(HERE / "keys.py", dest / "autograder" / "keys.py")
        record = {"set": part, "seed": seed, **version, "keys": grader.keys_digest(part, seed),
                  "tolerance": grader.TOLERANCE, "slip_credit": grader.SLIP_CREDIT}
        (dest / "autograder" / "issue.json").write_text(json.dumps(record, indent=1) + "\n")
        done[part] = dest
    return done


def available() -> tuple[str, ...]:
    """The sets that have a source notebook (every part; the weeks written so far)."""
    return tuple(s for s in SETS if (HERE / f"{s}.ipynb").exists())


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["grade"]:
        ap = argparse.ArgumentParser(prog="build.py grade")
        ap.add_argument("part", choices=SETS)
        ap.add_argument("submissions", nargs="+")
        ap.add_argument("--out", default=str(BUILD))
        ap.add_argument("--csv", default=None, help="write the gradebook rows here")
        ap.add_argument("--student-id", default=None,
                        help="the student's id (one submission; default: its file name)")
        ap.add_argument("--per-student", action="store_true",
                        help="grade each submission on its student's variant (pset.student_seed)")
        a = ap.parse_args(argv[1:])
        results = []
        for sub in a.submissions:
            sid = a.student_id or Path(sub).stem
            r = grader.grade(sub, Path(a.out) / a.part / "autograder",
                             student_id=sid if a.per_student else None)
            r["student_id"] = sid
            results.append(r)
            print(f"{sid} ({a.part}, seed {r['seed']}): {r['score']:g} / {r['possible']:g}")
            for name, q in r["questions"].items():
                print(f"  {name}: {q['score']:g} / {q['possible']:g}  {q['verdict']}")
            for e in r["errors"]:
                print("  error in " + e)
        if a.csv:
            print(f"wrote {grader.write_csv(results, a.csv)}")
        return 0
    ap = argparse.ArgumentParser(prog="build.py")
    ap.add_argument("parts", nargs="*", default=None)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--out", default=str(BUILD))
    a = ap.parse_args(argv)
    for part, dest in build(Path(a.out), a.seed, a.parts or None).items():
        print(f"{part} (seed {a.seed}): {dest / 'student'} and {dest / 'autograder'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
