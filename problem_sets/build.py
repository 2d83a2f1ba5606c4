"""Build the problem sets with otter-grader and grade submissions without a container.

    python problem_sets/build.py [--seed N] [--out DIR] [PART ...]    # make psets SEED=N
    python problem_sets/build.py grade PART SUBMISSION.ipynb [--out DIR]

``build`` writes, for each part, the source notebook with the issued seed into
``DIR/_src/PART/`` and runs Otter Assign on it: ``DIR/PART/student/`` is what students get (the
notebook with every solution replaced by ``...``, ``pset.py`` and the public tests),
``DIR/PART/autograder/`` what the instructor grades with (the solution notebook, public and
hidden tests, ``pset.py`` and ``keys.py``). The seed is written into the notebook (``SEED = N``)
and into every hidden test, so a student who changes ``SEED`` is graded on the issued variant.

``grade`` runs a submission in this process (its code cells in one namespace, as a kernel would,
an error in a cell recorded and the rest run on) and then the autograder's OK-format tests,
public and hidden, with otter's own test runner (``otter.test_files``), the runner behind
``otter.Notebook.check``. ``otter grade`` would do the same inside a Docker container, which
this machine does not have.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
from pset import PARTS, SETS, WEEKS  # noqa: E402,F401  (the sets: parts, then weeks)

DEFAULT_SEED = 2026
BUILD = HERE / "_build"
SHARED = ("pset.py", "keys.py")

_SEED_LINE = re.compile(r"^(SEED = )\d+", flags=re.MULTILINE)
_GRADE_CALL = re.compile(r"(keys\.grade\(\"(?:part\d|week\d\d)\", \"q\d+\", )\d+")


def issue(source: Path, seed: int) -> nbformat.NotebookNode:
    """The source notebook with ``seed`` written into its SEED line and its hidden tests."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: got {seed!r}; allowed values are whole numbers >= 0")
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _GRADE_CALL.sub(rf"\g<1>{seed}", _SEED_LINE.sub(rf"\g<1>{seed}",
                                                                           cell.source))
    return nb


def build(out: Path = BUILD, seed: int = DEFAULT_SEED, parts=None) -> dict[str, Path]:
    """Run Otter Assign on each part's source notebook; return {part: its output folder}."""
    from otter.assign import main as assign

    out = Path(out).resolve()
    done = {}
    for part in available() if parts is None else parts:
        if part not in SETS:
            raise KeyError(f"part: got {part!r}; allowed values are {', '.join(SETS)}")
        src = out / "_src" / part
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        for name in SHARED:
            shutil.copy(HERE / name, src / name)
        nbformat.write(issue(HERE / f"{part}.ipynb", seed), src / f"{part}.ipynb")
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
        done[part] = dest
    return done


def available() -> tuple[str, ...]:
    """The sets that have a source notebook (every part; the weeks written so far)."""
    return tuple(s for s in SETS if (HERE / f"{s}.ipynb").exists())


def _run_cells(notebook: Path, env: dict) -> list[str]:
    """Execute a notebook's code cells in ``env``; return the errors (cell index: message)."""
    errors = []
    nb = nbformat.read(notebook, as_version=4)
    for i, cell in enumerate(nb.cells):
        src = cell.source
        if cell.cell_type != "code" or src.startswith("# Initialize Otter") or \
                src.lstrip().startswith("grader."):
            continue  # otter's own check cells: the grader runs every test below anyway
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(src, f"{notebook.name}[{i}]", "exec"), env)
        except Exception as exc:  # a student's error is a result, not a crash of the grader
            errors.append(f"cell {i}: {type(exc).__name__}: {exc}")
    return errors


def grade(submission, autograder) -> dict:
    """Grade ``submission`` (a notebook) with the tests of ``autograder`` (a folder).

    Returns ``{"questions": {name: {"score", "possible", "public", "hidden", "messages"}},
    "score", "possible", "errors"}``, where ``public`` and ``hidden`` say whether every public
    (hidden) test case of the question passed.
    """
    from otter.test_files.ok_test import OKTestFile

    submission, autograder = Path(submission).resolve(), Path(autograder).resolve()
    env: dict = {"__name__": "__main__"}
    cwd, path = os.getcwd(), list(sys.path)
    for mod in ("pset", "keys"):  # the variant's own copies, not another build's
        sys.modules.pop(mod, None)
    try:
        os.chdir(autograder)
        sys.path.insert(0, str(autograder))
        errors = _run_cells(submission, env)
        questions = {}
        for test in sorted(glob.glob(str(autograder / "tests" / "*.py"))):
            tf = OKTestFile.from_file(test)
            tf.run(env)
            res = tf.test_case_results
            questions[tf.name] = {
                "score": tf.score, "possible": tf.possible,
                "public": all(r.passed for r in res if not r.test_case.hidden),
                "hidden": all(r.passed for r in res if r.test_case.hidden),
                "messages": [r.message for r in res],
            }
    finally:
        os.chdir(cwd)
        sys.path[:] = path
    return {"questions": questions, "errors": errors,
            "score": sum(q["score"] for q in questions.values()),
            "possible": sum(q["possible"] for q in questions.values())}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["grade"]:
        ap = argparse.ArgumentParser(prog="build.py grade")
        ap.add_argument("part", choices=SETS)
        ap.add_argument("submission")
        ap.add_argument("--out", default=str(BUILD))
        a = ap.parse_args(argv[1:])
        r = grade(a.submission, Path(a.out) / a.part / "autograder")
        for name, q in r["questions"].items():
            print(f"{name}: {q['score']:g} / {q['possible']:g}")
            for m in q["messages"]:
                if not m.startswith("✅"):
                    print("   " + m.strip().splitlines()[-1])
        for e in r["errors"]:
            print("error in " + e)
        print(f"total: {r['score']:g} / {r['possible']:g}")
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
