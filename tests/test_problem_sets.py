"""The problem sets (issue 15): built with Otter Assign, graded in-process with otter's runner.

The solution notebook of every set scores full marks (public and hidden tests), the blank
student notebook scores zero without breaking the grader, two seeds give two different
variants whose solutions both pass, the hand-worked solutions agree with the library's keys
over many seeds, and nothing a student receives holds a key value, solution code or a hidden
test.
"""

from __future__ import annotations

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


@pytest.mark.parametrize("part", build.available())
@pytest.mark.parametrize("seed", SEEDS)
def test_the_solution_notebook_passes_every_test(built, part, seed):
    ag = built[seed] / part / "autograder"
    result = build.grade(ag / f"{part}.ipynb", ag)
    assert result["errors"] == []
    assert sorted(result["questions"]) == sorted(keys.questions(part))
    for name, q in result["questions"].items():
        assert q["public"] and q["hidden"], (name, q["messages"])
    assert result["score"] == result["possible"] > 0


@pytest.mark.parametrize("part", build.available())
def test_the_blank_student_notebook_fails_every_test_without_breaking_the_grader(built, part):
    dest = built[SEEDS[0]] / part
    result = build.grade(dest / "student" / f"{part}.ipynb", dest / "autograder")
    assert result["score"] == 0 and result["possible"] > 0
    for name, q in result["questions"].items():
        assert not q["public"] and not q["hidden"], name
        assert any("fill in your answer" in m for m in q["messages"]), name


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


def test_a_wrong_answer_gets_a_slip_hint(built):
    """Graded report: check's verdict; public test: the slip back into the plausible range."""
    seed, part = SEEDS[0], "part1"
    ag = built[seed] / part / "autograder"
    nb = nbformat.read(ag / f"{part}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "q1_answer =" in cell.source:
            cell.source += "\nq1_answer = q1_answer * 1000  # ms, not s"
    sub = ag.parent / "slip.ipynb"
    nbformat.write(nb, sub)
    q1 = build.grade(sub, ag)["questions"]["q1"]
    assert not q1["public"] and not q1["hidden"] and q1["score"] == 0
    assert any("unit prefix slip of 1000" in m for m in q1["messages"])
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
