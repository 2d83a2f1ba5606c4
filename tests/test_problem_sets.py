"""The problem sets (issues 15, 34): built with Otter Assign, graded in a child process.

The solution notebook of every set scores full marks, the blank student notebook scores zero
without breaking the grader, a submission that imports and patches the keys or the checker scores
zero, a named slip earns partial credit, the tolerance is the course guide's, per-student seeds
give each student a variant, the gradebook CSV has one row per question, a set issued with other
keys is refused, two seeds give two different variants whose solutions both pass, the hand-worked
solutions agree with the library's keys over many seeds, and nothing a student receives holds a
key value, solution code or a hidden test.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

# The book's toolchain, not the library's: `make compat` installs the library alone.
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("otter")

ROOT = Path(__file__).resolve().parents[1]
PSETS = ROOT / "problem_sets"
sys.path.insert(0, str(PSETS))

import build  # noqa: E402  (problem_sets/build.py)
import grader  # noqa: E402
import keys  # noqa: E402
import pset  # noqa: E402

SEEDS = (2026, 7)  # the default issue and a second term's


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{seed: build folder} with all four sets built for each seed (one Otter import)."""
    out = {}
    for seed in SEEDS:
        out[seed] = tmp_path_factory.mktemp(f"psets{seed}")
        build.build(out[seed], seed=seed)
    return out


def _solution_blocks(part):
    """Code the student must not see: lines otter strips from the source's solution cells."""
    nb = nbformat.read(PSETS / f"{part}.ipynb", as_version=4)
    hidden, inside, in_block = [], False, False
    for cell in nb.cells:
        if cell.cell_type == "raw":
            inside = cell.source.strip() == "# BEGIN SOLUTION" or (
                inside and cell.source.strip() != "# END SOLUTION")
            continue
        if cell.cell_type != "code" or not inside:
            continue
        for line in cell.source.splitlines():
            if line.strip().startswith("# BEGIN SOLUTION"):
                in_block = True
            elif line.strip() == "# END SOLUTION":
                in_block = False
            elif in_block or line.rstrip().endswith("# SOLUTION"):
                code = line.split("# SOLUTION")[0].strip()
                if code and not code.startswith("#"):
                    hidden.append(code.split("=", 1)[-1].strip() if code.endswith("_answer") is
                                  False and "_answer =" in code else code)
    return hidden


# The grader draws the variant in its own process and runs the submission in another, which reads
# the whole catalogue: the tests that grade a right answer are marked whole_catalogue and skip on
# make check's sentinel catalogue (tests/conftest.py); make test and make psets-test run them.
def _grade(built, part, notebook, seed=SEEDS[0], **kw):
    return grader.grade(notebook, built[seed] / part / "autograder", **kw)


@pytest.mark.parametrize("part", build.available())
@pytest.mark.whole_catalogue
def test_the_solution_notebook_scores_full_marks(built, part):
    ag = built[SEEDS[0]] / part / "autograder"
    result = _grade(built, part, ag / f"{part}.ipynb")
    assert result["errors"] == []
    assert sorted(result["questions"]) == sorted(keys.questions(part))
    for name, q in result["questions"].items():
        assert q["verdict"] == "right" and q["score"] == q["possible"] > 0, (name, q)
    assert result["score"] == result["possible"] == 10  # every set is worth 10 points


@pytest.mark.whole_catalogue
def test_the_second_seeds_solution_scores_full_marks_on_its_own_variant(built):
    ag = built[SEEDS[1]] / "week03" / "autograder"
    assert _grade(built, "week03", ag / "week03.ipynb", seed=SEEDS[1])["score"] == 10
    # ... and zero against the first seed's keys (week03's q1 key is the same for both, 3 points)
    other = grader.grade(ag / "week03.ipynb", built[SEEDS[0]] / "week03" / "autograder")
    assert other["score"] < 10


@pytest.mark.parametrize("part", pset.PARTS)
def test_the_blank_student_notebook_scores_zero_without_breaking_the_grader(built, part):
    dest = built[SEEDS[0]] / part
    result = _grade(built, part, dest / "student" / f"{part}.ipynb")
    assert result["score"] == 0 and result["possible"] == 10
    for name, q in result["questions"].items():
        assert q["answer"] is None and q["verdict"].startswith("no answer"), name


def _submission(built, part, tmp_path, edit, seed=SEEDS[0], name="sub"):
    """The solution notebook of ``part`` with ``edit(cells)`` applied, written as NAME.ipynb."""
    ag = built[seed] / part / "autograder"
    nb = nbformat.read(ag / f"{part}.ipynb", as_version=4)
    edit(nb.cells)
    sub = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, sub)
    return sub


def _answer_cell(cells, q):
    return next(c for c in cells if c.cell_type == "code" and f"{q}_answer =" in c.source)


ATTACKS = {
    # the review's cheat (issue 34): blank answers, the keys imported from the autograder folder
    # the old grader put on sys.path (or found beside the notebook, up its folders or on the
    # import path), and the hidden test's checker patched to pass anything
    "patch keys": """
import pathlib, sys
here = pathlib.Path.cwd().resolve()
for d in [here, *here.parents, *map(pathlib.Path, sys.path)]:
    if (d / "keys.py").exists() or (d / "autograder" / "keys.py").exists():
        sys.path[:0] = [str(d), str(d / "autograder")]
import keys
keys.grade = lambda *a, **k: None
for q in keys.questions({part!r}):
    globals()[q + "_answer"] = keys.key({part!r}, q, SEED)
""",
    # the library's checker patched to call anything right, and otter's runner to pass anything
    "patch the checker": """
import llmmath.exercises
llmmath.exercises.check = lambda *a, **k: "right"
llmmath.exercises._verdict = lambda *a, **k: "right"
import otter.test_files.ok_test as ok
ok.OKTestFile.run = lambda self, env: None
q1_answer = q2_answer = q3_answer = q4_answer = 7.77e77
""",
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_submission_that_patches_the_keys_or_the_checker_scores_zero(built, tmp_path, attack):
    """The submission runs in a child process whose import path has no keys; what it patches
    stays there. (Planted: with the autograder folder on the child's PYTHONPATH, "patch keys"
    scores 10/10.)"""
    part = "week03"

    def blank_and_attack(cells):
        for q in keys.questions(part):
            _answer_cell(cells, q).source = f"{q}_answer = ..."
        cells.append(nbformat.v4.new_code_cell(ATTACKS[attack].format(part=part)))
    result = _grade(built, part, _submission(built, part, tmp_path, blank_and_attack))
    assert result["score"] == 0, result
    if attack == "patch keys":
        assert any("No module named 'keys'" in e for e in result["errors"]), result["errors"]
    # and the grader's own checker is untouched
    from llmmath.exercises import check
    assert check(2.0, 1.0, quiet=True) != "right"


@pytest.mark.whole_catalogue
def test_one_tolerance_and_partial_credit_for_a_named_slip(built, tmp_path):
    """q1 in ms instead of s (x1000: a slip check names) earns SLIP_CREDIT of its points; q2 8%
    off is right under the guide's 10% (it was wrong under the old 5%); q3 12% off (check hints
    at TB vs TiB, a factor the tolerance cannot tell from rounding) and q4 x37 (no named slip) earn
    nothing."""
    part = "part1"
    edits = {"q1": " * 1000", "q2": " * 1.08", "q3": " * 1.12", "q4": " * 37"}

    def slips(cells):  # in a last cell: q4's solution uses q3's answer
        cells.append(nbformat.v4.new_code_cell("\n".join(f"{q}_answer = {q}_answer{tail}"
                                                         for q, tail in edits.items())))
    result = _grade(built, part, _submission(built, part, tmp_path, slips))
    q = result["questions"]
    # part1's questions are worth 2, 2, 3 and 3 points (its source): 0.5 x 2 + 2 + 0 + 0 = 3
    assert [q[n]["possible"] for n in edits] == [2, 2, 3, 3]
    assert q["q1"]["score"] == 1 and "unit prefix slip of 1000" in q["q1"]["verdict"]
    assert q["q2"]["score"] == 2 and q["q2"]["verdict"] == "right"
    assert q["q3"]["score"] == 0 and "TiB" in q["q3"]["verdict"]
    assert q["q4"]["score"] == 0 and q["q4"]["verdict"] == "off by a factor of ~37 (too high)"
    assert result["score"] == 3


def test_the_tolerance_and_the_slip_credit_are_the_course_guides():
    guide = " ".join((ROOT / "book" / "course_guide.md").read_text(encoding="utf-8").split())
    full = re.search(r"full credit within (\d+)% of the key", guide)
    assert full and float(full.group(1)) / 100 == pset.TOLERANCE == grader.TOLERANCE
    slip = re.search(r"(\d+)% of the points when the answer is off by one of the slips", guide)
    assert slip and float(slip.group(1)) / 100 == grader.SLIP_CREDIT
    assert "5%" not in guide[guide.index("## Problem sets"):guide.index("## Lab")]


@pytest.mark.whole_catalogue
def test_per_student_seeds_are_stable_and_graded_by_the_students_id(built, tmp_path):
    # the documented definition: first 4 bytes (big-endian) of SHA-256 of "seed:student id"
    import hashlib
    expected = int.from_bytes(hashlib.sha256(b"2026:s1234").digest()[:4], "big")
    assert pset.student_seed(2026, "s1234") == pset.student_seed(2026, " s1234 ") == expected
    assert pset.student_seed(2026, None) == 2026
    assert pset.student_seed(2026, "s1234") != pset.student_seed(2026, "s1235")
    assert pset.student_seed(2031, "s1234") != expected
    for bad in ("", "  "):
        with pytest.raises(ValueError, match="student_id"):
            pset.student_seed(2026, bad)
    # two students of one class get different variants of a set
    a, b = (pset.problem("week05", pset.student_seed(2026, s)) for s in ("s1", "s2"))
    assert vars(a) != vars(b)
    # s1 fills in STUDENT_ID and answers its own variant: full marks as s1, not as s2
    part = "week05"

    def as_s1(cells):
        seed_cell = next(c for c in cells if c.cell_type == "code" and "STUDENT_ID = " in c.source)
        seed_cell.source = seed_cell.source.replace("STUDENT_ID = None", 'STUDENT_ID = "s1"')
    sub = _submission(built, part, tmp_path, as_s1, name="s1")
    assert _grade(built, part, sub, student_id="s1")["score"] == 10
    assert _grade(built, part, sub, student_id="s2")["score"] < 10


@pytest.mark.whole_catalogue
def test_the_gradebook_csv_has_one_row_per_student_and_question(built, tmp_path):
    import csv
    import shutil

    part = "week03"
    ag = built[SEEDS[0]] / part / "autograder"
    shutil.copy(ag / f"{part}.ipynb", tmp_path / "s1.ipynb")  # the solution, as student s1
    shutil.copy(ag.parent / "student" / f"{part}.ipynb", tmp_path / "s2.ipynb")  # blank
    out = tmp_path / "grades.csv"
    assert build.main(["grade", part, str(tmp_path / "s1.ipynb"), str(tmp_path / "s2.ipynb"),
                       "--out", str(built[SEEDS[0]]), "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["student_id", "set", "part", "points", "max"]
    # week03's questions are worth 3, 3 and 4 points: s1 has them all, s2 none
    assert [tuple(r.values()) for r in rows] == [
        ("s1", part, "q1", "3", "3"), ("s1", part, "q2", "3", "3"), ("s1", part, "q3", "4", "4"),
        ("s2", part, "q1", "0", "3"), ("s2", part, "q2", "0", "3"), ("s2", part, "q3", "0", "4")]


@pytest.mark.whole_catalogue
def test_the_library_version_is_recorded_and_a_moved_key_is_refused(built, tmp_path):
    import shutil

    import llmmath
    part = "week03"
    src = built[SEEDS[0]] / part
    nb = (src / "student" / f"{part}.ipynb").read_text()
    assert f"# issued with llmmath {llmmath.__version__}" in nb
    issue = json.loads((src / "autograder" / "issue.json").read_text())
    assert issue["llmmath"] == llmmath.__version__ and issue["seed"] == SEEDS[0]
    assert issue["tolerance"] == pset.TOLERANCE and issue["set"] == part
    copy = tmp_path / part
    shutil.copytree(src, copy)
    ag, sol = copy / "autograder", copy / "autograder" / f"{part}.ipynb"

    def tamper(**kw):
        (ag / "issue.json").write_text(json.dumps({**issue, **kw}))
    tamper(llmmath="0.0.1")
    with pytest.raises(ValueError, match="issued with llmmath 0.0.1"):
        grader.grade(sol, ag)
    tamper(keys="0" * 16)  # a catalogue update moved a key since the set was issued
    with pytest.raises(ValueError, match="keys of week03 .seed 2026. moved"):
        grader.grade(sol, ag)
    tamper(git="v0-elsewhere")
    with pytest.warns(UserWarning, match="issued at v0-elsewhere"):
        assert grader.grade(sol, ag)["score"] == 10
    (ag / "issue.json").unlink()
    with pytest.raises(ValueError, match="no issue.json"):
        grader.grade(sol, ag)


@pytest.mark.parametrize("part", build.available())
def test_two_seeds_are_two_variants(part):
    a, b = (pset.problem(part, s) for s in SEEDS)
    assert vars(a) != vars(b)
    ka = [keys.key(part, q, SEEDS[0]) for q in keys.questions(part)]
    kb = [keys.key(part, q, SEEDS[1]) for q in keys.questions(part)]
    assert ka != kb
    assert pset.problem(part, SEEDS[0]) == a  # deterministic


@pytest.mark.parametrize("part", build.available())
def test_the_issued_seed_is_in_the_notebook_and_every_hidden_test(built, part):
    seed = SEEDS[1]
    ag = built[seed] / part / "autograder"
    nb = (ag / f"{part}.ipynb").read_text()
    assert f"SEED = {seed}" in nb and "SEED = 2026" not in nb
    for test in (ag / "tests").glob("q*.py"):
        assert f"keys.grade('{part}', '{test.stem}', {seed}, " in test.read_text()


def _key_spellings(value):
    """The ways a key could be written down: repr, rounded forms, the integer part."""
    out = {repr(value), f"{value:.6g}", f"{value:.5g}", f"{value:.4g}", f"{value:.3e}"}
    if abs(value) >= 100:
        out.add(str(int(value)))
    return {s for s in out if len(s.replace(".", "").replace("-", "")) >= 4}


@pytest.mark.parametrize("part", build.available())
@pytest.mark.parametrize("seed", SEEDS)
def test_nothing_a_student_receives_holds_a_key_or_a_solution(built, part, seed):
    student = built[seed] / part / "student"
    files = sorted(p for p in student.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {f"{part}.ipynb", "pset.py", "q1.py"}
    assert "keys.py" not in {p.name for p in files}
    text = "\n".join(p.read_text() for p in files)
    for q in keys.questions(part):
        for spelling in _key_spellings(keys.key(part, q, seed)):
            # as a number of its own: not the middle of a longer one (a random cell id, say)
            found = re.search(rf"(?<![\w.]){re.escape(spelling)}(?![\w]|\.\d)", text)
            assert found is None, (q, spelling, text[max(found.start() - 40, 0):found.end() + 40])
    for marker in ("keys.grade", "import keys", "# SOLUTION", "BEGIN SOLUTION", "'hidden': True",
                   "HIDDEN"):
        assert marker not in text, marker
    for code in _solution_blocks(part):
        assert code not in text, code
    nb = nbformat.read(student / f"{part}.ipynb", as_version=4)
    answers = [c.source for c in nb.cells if c.cell_type == "code" and "_answer = ..." in c.source]
    assert len(answers) == len(keys.questions(part))
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_the_solution_blocks_are_found():
    # the leak scan above is only as good as this list: every set hides real code
    for part in build.available():
        assert len(_solution_blocks(part)) >= 2 * len(keys.questions(part)), part


@pytest.mark.parametrize("part", build.available())
def test_the_hand_solutions_agree_with_the_library_keys_over_many_seeds(part):
    """The source notebook's solutions (worked from the catalogue's fields by hand) against
    the keys (library calls): two independent computations of every answer, 40 variants."""
    import llmmath as lm
    from llmmath.exercises import check

    nb = nbformat.read(PSETS / f"{part}.ipynb", as_version=4)
    qs = {q: [c for c in nb.cells if c.cell_type == "code" and f"{q}_answer =" in c.source][0]
          for q in keys.questions(part)}
    bands = {}
    for c in nb.cells:
        m = re.search(r"pset\.feedback\((q\d)_answer, ([^,]+), ([^,]+),", c.source)
        if m:
            bands[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    assert set(bands) == set(keys.questions(part))
    for seed in range(40):
        env = {"lm": lm, "pset": pset, "P": pset.problem(part, seed)}
        for q in keys.questions(part):
            exec(qs[q].source, env)
            k = keys.key(part, q, seed)
            assert check(env[f"{q}_answer"], k, quiet=True) == "right", (seed, q)
            lo, hi = bands[q]
            assert lo <= k <= hi, (seed, q, k)  # the public range holds every variant's key


def test_a_wrong_answer_gets_a_slip_hint():
    """Public test: the slip back into the plausible range."""
    with pytest.raises(AssertionError, match="factor of ~1000.*unit prefix slip of 1000"):
        pset.feedback(1000 * 0.1, 1e-3, 0.3, "s")  # ms given as s
    # in a wide range several slips fit (50,000 / 8, / 16 and / 1000 all land in 1 to 1e4):
    # the hint names the one that lands nearest the middle (100), the prefix slip
    with pytest.raises(AssertionError, match="factor of ~1000"):
        pset.feedback(50_000.0, 1.0, 1e4, "s")
    with pytest.raises(AssertionError, match="too low.*1e\\+09"):
        pset.feedback(0.1 / 1e9, 1e-3, 0.3, "s")
    assert pset.feedback(0.1, 1e-3, 0.3, "s") is None
    for bad in (None, ..., "0.1", float("nan"), -1.0):
        with pytest.raises(AssertionError):
            pset.feedback(bad, 1e-3, 0.3, "s")


def test_bad_seeds_and_parts_are_refused_by_name():
    for bad in (-1, 2.5, "7", True):
        with pytest.raises(ValueError, match="seed"):
            pset.problem("part1", bad)
        with pytest.raises(ValueError, match="seed"):
            build.issue(PSETS / "part1.ipynb", bad)
    with pytest.raises(KeyError, match="part"):
        pset.problem("part9", 1)


def test_every_part_and_every_week_of_the_course_has_its_set():
    # one set per part and one per week of the 12-week plan (issue 15), all in the course guide
    assert build.available() == pset.SETS
    assert len(pset.WEEKS) == 12
    guide = (ROOT / "book" / "course_guide.md").read_text(encoding="utf-8")
    for name in pset.SETS:
        assert f"| `{name}`" in guide, name


def test_every_chapter_is_assessed_by_a_part_set_and_by_a_weekly_set():
    """The part sets together, and the weekly sets together, link every numbered chapter of
    _toc.yml (issue 34: chapter 10 was in no part set; issue 33: training_layout in none).
    (Planted: part3's link to bound_to_estimate removed fails here.)"""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    chapters = {Path(c["file"]).name for part in toc["parts"] if part.get("numbered")
                for c in part["chapters"]}
    assert len(chapters) == 14

    def linked(sets):
        out = set()
        for s in sets:
            intro = nbformat.read(PSETS / f"{s}.ipynb", as_version=4).cells[1].source
            out |= set(re.findall(r"\(\.\./book/([\w-]+)\.ipynb\)", intro))
        return out
    assert linked(pset.PARTS) == chapters
    assert linked(pset.WEEKS) == chapters
    # each part-4 and week-11 question on the new chapter is keyed by llmmath.layout
    src = (PSETS / "keys.py").read_text(encoding="utf-8")
    assert src.count("layout.step_time(") >= 2 and "layout.memory_per_chip(" in src
    assert "layout.goodput(" in src and "estimate.estimate_step(model, chip, p.batch, 0" in src
