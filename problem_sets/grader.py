"""Grade problem-set submissions safely: the submission runs in a child process without the keys.

    python problem_sets/build.py grade SET SUBMISSION.ipynb [MORE.ipynb ...] [--csv OUT.csv]

A submission is code written by a student, so it never runs in the grader's process. Each one runs
in a fresh Python child (``_RUNNER`` below) whose working folder is a temporary copy of what the
student received (the notebook and ``pset.py``, no ``keys.py``) and whose import path holds that
folder, the library and the installed packages, never ``problem_sets/`` or the autograder folder.
The child executes the code cells in one namespace, as a kernel would, and prints one line of JSON:
the value of each ``qN_answer`` it ends with. The parent reads only those numbers and grades them
against keys it computes itself, so a submission that imports or patches ``keys``, the checker
or anything else changes only its own process. (The child can still read any file its user can
read: on a shared machine, grade as a user that cannot read the kit, or in ``otter grade``'s
container.)

Scoring, per question (a "part" of the set): full points within ``TOLERANCE`` of the key, the
course guide's tolerance; ``SLIP_CREDIT`` of the points when the answer is off by one of the slips
``llmmath.exercises.check`` names (a factor of 2, 4, 8, 16, 1024 or a power of 1000: right method,
a unit or a convention wrong); nothing otherwise. The course guide states both numbers and
tests/test_problem_sets.py holds it to these constants.

Seeds: the set is issued with a term seed; a student who fills in ``STUDENT_ID`` gets their own
variant, ``pset.student_seed(term seed, student id)``. The grader derives the seed the same way
from the student id it is given (by default the submission's file name, as a course platform's
export names files), never from the submission's own ``SEED`` line.

Versions: ``build.py`` records in each set's ``issue.json`` the library version
(``llmmath.__version__``), ``git describe`` when there is a checkout, and a digest of the keys of
the issued seed. ``grade`` refuses a set whose library version or keys differ from today's (a
catalogue update mid-term moves the keys) and warns when only the commit differs.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from pset import TOLERANCE  # noqa: E402,F401  (the course guide's, one constant for all)

SLIP_CREDIT = 0.5  # share of a question's points for an answer off by a slip check names
CHILD_TIMEOUT_S = 300  # a submission that runs longer scores what it had: nothing
CSV_FIELDS = ("student_id", "set", "part", "points", "max")
BLANK = "no answer: {q}_answer is blank (...) or not one finite number"

# The child: run the notebook's code cells (otter's init and check cells skipped: they need the
# tests, which stay with the grader), then print the answers it ends with as one JSON line.
_RUNNER = r"""
import contextlib, io, json, math, sys
with open(sys.argv[1], encoding="utf-8") as f:
    cells = json.load(f)["cells"]
env, errors = {"__name__": "__main__"}, []
for i, cell in enumerate(cells):
    src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    if cell["cell_type"] != "code" or src.startswith("# Initialize Otter") or \
            src.lstrip().startswith("grader."):
        continue
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(src, f"cell {i}", "exec"), env)
    except BaseException as exc:
        errors.append(f"cell {i}: {type(exc).__name__}: {exc}")
answers = {}
for name in sys.argv[2:]:
    try:
        v = float(env[name + "_answer"])
        answers[name] = v if math.isfinite(v) else None
    except Exception:
        answers[name] = None
sys.__stdout__.write("\n" + json.dumps({"answers": answers, "errors": errors}) + "\n")
"""


def library_version() -> dict:
    """The library this process grades with: its version and, in a checkout, ``git describe``."""
    import llmmath

    desc = None
    try:
        desc = subprocess.run(["git", "describe", "--always", "--tags", "--dirty"],
                              cwd=Path(llmmath.__file__).parent, capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"llmmath": llmmath.__version__, "git": desc}


def keys_digest(part: str, seed: int) -> str:
    """A digest of every key of ``part``'s variant ``seed`` (moves when any key moves)."""
    import keys

    values = [f"{keys.key(part, q, seed):.12e}" for q in keys.questions(part)]
    return hashlib.sha256(" ".join(values).encode()).hexdigest()[:16]


def check_issue(autograder: Path) -> dict:
    """The set's ``issue.json``; refuse (ValueError) a set issued with other keys or library."""
    path = Path(autograder) / "issue.json"
    if not path.exists():
        raise ValueError(f"autograder: {autograder} has no issue.json; rebuild the set with "
                         "`make psets` (it records the library version the set is issued with)")
    issue = json.loads(path.read_text(encoding="utf-8"))
    now = library_version()
    if issue["llmmath"] != now["llmmath"]:
        raise ValueError(f"autograder: {issue['set']} was issued with llmmath {issue['llmmath']}, "
                         f"this is {now['llmmath']}: grade with the version it was issued with")
    digest = keys_digest(issue["set"], issue["seed"])
    if digest != issue["keys"]:
        raise ValueError(f"autograder: the keys of {issue['set']} (seed {issue['seed']}) moved "
                         f"since it was issued (at {issue['git']}, now {now['git']}): grade with "
                         "the library it was issued with")
    if issue.get("git") != now["git"]:
        warnings.warn(f"{issue['set']} was issued at {issue['git']}, this is {now['git']}; its "
                      "keys are unchanged", stacklevel=2)
    return issue


def run_submission(submission: Path, student_files: Path, questions) -> dict:
    """Run ``submission`` in a child process beside a copy of ``student_files``; its answers."""
    import llmmath

    lib = str(Path(llmmath.__file__).resolve().parents[1])  # the library only, never the keys
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        for f in Path(student_files).iterdir():
            if f.is_file() and f.suffix == ".py":
                shutil.copy(f, tmp)
        shutil.copy(submission, Path(tmp) / "submission.ipynb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update(PYTHONPATH=lib, PYTHONNOUSERSITE="1", MPLBACKEND="Agg")
        try:
            done = subprocess.run([sys.executable, "-c", _RUNNER, "submission.ipynb",
                                   *questions], cwd=tmp, env=env, capture_output=True,
                                  text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"answers": {}, "errors": [f"ran past {CHILD_TIMEOUT_S} s"]}
    lines = done.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1])
        answers = {q: out["answers"].get(q) for q in questions}
        errors = [str(e) for e in out["errors"]]
    except (IndexError, ValueError, KeyError, TypeError, AttributeError):
        return {"answers": {}, "errors": [f"the submission did not run: {done.stderr[-500:]}"]}
    return {"answers": {q: (v if isinstance(v, (int, float)) else None)
                        for q, v in answers.items()}, "errors": errors}


def score(answer: float, key: float, points: float) -> float:
    """Points for one answer: full within TOLERANCE of the key; SLIP_CREDIT of them when the
    answer is a named slip away from it (``KNOWN_FACTORS`` of 2 or more: 2, 4, 8, 16, 1024, a
    power of 1000; the GB/GiB factors, 1.07 to 1.15, are too close to the tolerance to tell from
    a rounding); nothing otherwise."""
    import math

    from llmmath.exercises import KNOWN_FACTORS

    if key == 0 or answer == 0 or (answer > 0) != (key > 0):
        return points if answer == key else 0.0
    off = abs(math.log(answer / key))
    if off <= math.log1p(TOLERANCE):
        return points
    if any(abs(off - math.log(f)) <= math.log1p(TOLERANCE) for f, _ in KNOWN_FACTORS if f >= 2):
        return SLIP_CREDIT * points
    return 0.0


def _points(autograder: Path) -> dict[str, float]:
    from otter.test_files.ok_test import OKTestFile

    return {Path(t).stem: float(OKTestFile.from_file(str(t)).possible)
            for t in sorted((Path(autograder) / "tests").glob("q*.py"))}


def grade(submission, autograder, student_id: str | None = None, student_files=None) -> dict:
    """Grade one submission with the set in ``autograder`` (a built set's folder).

    ``student_id`` picks the student's variant (``pset.student_seed``); None grades the term's
    variant. Returns ``{"set", "seed", "student_id", "questions": {q: {"answer", "verdict",
    "score", "possible"}}, "score", "possible", "errors"}``.
    """
    autograder = Path(autograder).resolve()
    issue = check_issue(autograder)
    part = issue["set"]
    import keys
    import pset

    from llmmath.exercises import check

    seed = pset.student_seed(issue["seed"], student_id)
    points = _points(autograder)
    student = Path(student_files or autograder.parent / "student")
    ran = run_submission(Path(submission), student, list(points))
    questions = {}
    for q, possible in points.items():
        a, k = ran["answers"].get(q), keys.key(part, q, seed)
        verdict = BLANK.format(q=q) if a is None else check(a, k, rtol=TOLERANCE, quiet=True)
        questions[q] = {"answer": a, "verdict": str(verdict), "possible": possible,
                        "score": 0.0 if a is None else score(a, k, possible)}
    return {"set": part, "seed": seed, "student_id": student_id, "questions": questions,
            "errors": ran["errors"], "score": sum(q["score"] for q in questions.values()),
            "possible": sum(q["possible"] for q in questions.values())}


def write_csv(results, path) -> Path:
    """One row per student, set and question: student id, set, part, points, max."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for r in results:
            for q, res in r["questions"].items():
                w.writerow([r["student_id"] or "", r["set"], q, f"{res['score']:g}",
                            f"{res['possible']:g}"])
    return path
