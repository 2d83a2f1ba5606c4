"""The instructor kit (issue 34): keys out of students' reach.

- every chapter check cell carries its key sealed (``check(..., sealed=...)``), never the
  expression that computes it, and each seal matches the library's key (problem_sets/chapter_keys);
- a sealed check gives the verdicts a plain check gives;
- `make instructor` packs keys, solutions, the sets, the exam bank and the grader configuration
  into one archive; the public site and the student edition serve none of them;
- no homework answer is served: every answer of a homework exercise of the course guide (its
  solution's glued values, its check cell's key) and every problem-set key of the default seed,
  searched in everything the student edition and the public site serve (the public site shows a
  note in place of a homework exercise's solution, _ext/homework_solutions.py; the other
  exercises keep theirs);
- the student environment: requirements-student.txt pins the library, otter-grader and what the
  student notebooks need at requirements.txt's versions, and the student edition says to use it.

The scans of the builds skip, saying why, when `_build/html` or `_build/student` is absent.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

from llmmath.exercises import check, seal
from scripts import reader_edition as re_ed

ROOT = Path(__file__).resolve().parents[1]
PSETS = ROOT / "problem_sets"
sys.path.insert(0, str(PSETS))
import chapter_keys  # noqa: E402

SITE, STUDENT = ROOT / "_build" / "html", ROOT / "_build" / "student"
CHECK_CALL = re.compile(r"exercises\.check\(\s*(my_\w+),\s*(?P<rest>[^\n]*)\)")


def _chapters():
    return [doc for doc, _ in re_ed.toc_pages(ROOT) if (ROOT / f"{doc}.ipynb").exists()]


def _code_cells(doc):
    nb = json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))
    return [re_ed._source(c) for c in nb["cells"] if c["cell_type"] == "code"]


# --- sealed check cells --------------------------------------------------------------------------

def test_every_check_cell_is_sealed_with_the_librarys_key():
    """(Planted: chapter_keys' bubble for 8 stages and 23 micro-batches fails the seal; a cell
    with the expression put back fails the 'sealed=' rule.)"""
    seen = {}
    for doc in _chapters():
        for src in _code_cells(doc):
            if "exercises.check(" not in src:
                continue
            calls = CHECK_CALL.findall(src)
            assert calls and len(calls) == src.count("exercises.check("), (doc, src)
            for _, rest in calls:
                m = re.fullmatch(r'sealed="([\w-]+):([0-9a-f]{16})"(?:, rtol=([\d.]+))?', rest)
                assert m, f"{doc}: a check cell shows its key: {rest}"
                label, _, rtol = m.groups()
                assert label not in seen, f"{label} sealed in {seen.get(label)} and {doc}"
                seen[label] = doc
                assert f"{label}:{m.group(2)}" == seal(chapter_keys.key(label), label), (
                    f"{doc}: {label}'s key moved; reseal: python problem_sets/chapter_keys.py")
                assert float(rtol or 0.05) == chapter_keys.rtol(label), label
    assert set(seen) == set(chapter_keys.KEYS)  # every key has its cell, every cell its key
    assert len(seen) >= 24  # the review counted 24 check cells


@pytest.mark.parametrize("key", [295.3, 6.738e9, 2.59e-3, 0.2258, 1e-30, 7.2e24])
def test_a_sealed_check_gives_the_plain_checks_verdicts(key):
    """(Planted: the log ratio _near returns negated swaps "close (high)" and "(low)"; a hash
    without the label gives two exercises one seal; "right" at 3x rtol.)"""
    sealed = seal(key, "ex")
    # right within rtol (4% off), slips (x8, /1000, x2, x1.1: hint named), too far (x37: no factor
    # shown); close within 6% (beyond 0.9 of the GiB factor check calls it a GiB or TiB slip)
    for answer in (key, key * 1.04, key / 1.04, key * 8, key / 1000, key * 2.0, key * 1.12):
        assert check(answer, sealed=sealed, quiet=True) == check(answer, key, quiet=True)
    assert check(key * 1.06, sealed=sealed, quiet=True) == "close (high)"
    assert check(key / 1.06, sealed=sealed, quiet=True) == "close (low)"
    assert check(-key, sealed=sealed, quiet=True) == "wrong sign"
    far = check(key * 37, sealed=sealed, quiet=True)
    assert far.startswith("off: not within 15%") and "37" not in far
    assert check(None, sealed=sealed, quiet=True).startswith("fill in your answer")
    # the seal is the label's (another exercise's seal of the same key differs) and 0.1% wide
    # (1% away is another bucket)
    assert seal(key, "other").split(":")[1] != sealed.split(":")[1]
    assert seal(key * 1.01, "ex") != sealed


def test_a_seal_and_a_sealed_check_refuse_bad_input_by_name():
    with pytest.raises(ValueError, match="value"):
        seal(0.0, "ex")
    with pytest.raises(ValueError, match="label"):
        seal(1.0, "a:b")
    with pytest.raises(ValueError, match="sealed"):
        check(1.0, sealed="ex:nothex", quiet=True)
    with pytest.raises(ValueError, match="exactly one"):
        check(1.0, 1.0, sealed=seal(1.0, "ex"), quiet=True)
    with pytest.raises(KeyError, match="label"):
        chapter_keys.key("no-such-ex")


# --- the archive -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    pytest.importorskip("otter")
    import instructor_kit

    out = tmp_path_factory.mktemp("kit")
    archive = instructor_kit.make(out)
    with tarfile.open(archive) as tar:
        return archive, set(tar.getnames())


def test_the_kit_is_one_archive_with_keys_solutions_sets_exam_bank_and_grader_config(kit):
    """(Planted: leaving chapter_keys.py out of GRADER_FILES fails here.)"""
    archive, names = kit
    assert archive.name == "roofline-instructor-kit.tar.gz"
    top = "roofline-instructor-kit"
    for f in ("keys.py", "chapter_keys.py", "grader.py", "pset.py", "build.py", "grader.json",
              "week03.ipynb"):
        assert f"{top}/grader/{f}" in names, f
    for s in ("part1", "week12"):
        assert f"{top}/sets/{s}/autograder/issue.json" in names
        assert f"{top}/sets/{s}/autograder/keys.py" in names
        assert f"{top}/sets/{s}/student/{s}.ipynb" in names
        assert f"{top}/sets/{s}/student/keys.py" not in names
    assert {f"{top}/solutions/{Path(d).name}.ipynb" for d in _chapters()} <= names
    if (ROOT / "instructor" / "exam_bank").is_dir() or (ROOT / "book" / "exam_bank.ipynb").exists():
        assert any(n.startswith(f"{top}/exam_bank/") for n in names)


def test_the_exam_bank_is_no_page_of_the_site():
    pages = {doc for doc, _ in re_ed.toc_pages(ROOT)}
    assert "book/exam_bank" not in pages


def _served(root: Path):
    return [p for p in root.rglob("*") if p.is_file()]


@pytest.mark.parametrize("where", ["public", "student"])
def test_neither_site_serves_keys_the_exam_bank_or_the_grader(where):
    roots = [SITE] if where == "public" else [STUDENT / "html", STUDENT / "notebooks"]
    if not (roots[0] / "index.html").exists():
        pytest.skip(f"no {where} build in {roots[0]}: `make book` / `make student` builds it")
    files = [p for root in roots for p in _served(root)]
    names = {p.name for p in files}
    for secret in ("keys.py", "chapter_keys.py", "grader.py", "issue.json", "exam_bank.html",
                   "exam_bank.ipynb", "roofline-instructor-kit.tar.gz"):
        assert secret not in names, f"{where}: serves {secret}"
    text = "\n".join(p.read_text(encoding="utf-8", errors="ignore") for p in files
                     if p.suffix in (".html", ".js", ".ipynb", ".txt", ".md"))
    for marker in ("keys.key(", "keys.grade(", "def _week01(", "KORTHIKANTI2022_530B[\"mfu_"):
        assert marker not in text, f"{where}: {marker}"


# --- homework answers --------------------------------------------------------------------------

GUIDE = ROOT / "book" / "course_guide.md"


def homework_labels() -> set[str]:
    """The exercises the course guide assigns as homework (scripts/reader_edition's parser, the
    one the site and its notebooks omit the solutions of)."""
    return re_ed.homework_labels(GUIDE)


def _shown(bundle: dict, spec: str) -> str:
    plain = re_ed._text(bundle.get("text/plain", "")).strip().strip("'\"")
    try:
        return format(float(plain), spec) if spec else plain
    except ValueError:
        return plain


GLUE = re.compile(r"\{glue(?::\w*)?\}`([^`:]+)(?::([^`]*))?`")


def _distinctive(value: str) -> bool:
    return sum(ch.isdigit() for ch in value) >= 3


def _spellings(value: float) -> set[str]:
    """A number as a page might print it: 3 or 4 significant figures, with thousands commas."""
    out = set()
    for digits in (3, 4):
        s = f"{value:.{digits}g}"
        if "e" not in s:
            out.add(s)
            if abs(value) >= 1000:
                out.add(f"{round(value):,}")
    return {s for s in out if _distinctive(s)}


def homework_answers() -> dict[str, tuple[str, set[str]]]:
    """{label: (its chapter, the values its answer shows)}: the key of its check cell
    (chapter_keys) and the values its solution pastes from cells tagged ``answer`` (what only a
    solution computes), less the givens its statement shows."""
    answers: dict[str, tuple[str, set[str]]] = {}
    labels = homework_labels()
    for doc in _chapters():
        nb = json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))
        every = re_ed.glue_values(nb)
        glue = re_ed.glue_values({**nb, "cells": [c for c in nb["cells"] if re_ed._is_answer(c)]})
        text = "\n".join(re_ed._source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
        for m in re.finditer(r"```\{(exercise|solution)\}[^\n]*\n(?::label: )?([\w-]+)?(.*?)\n```",
                             text, flags=re.S):
            kind, label, body = m.groups()
            label = label if kind == "exercise" else m.group(0).split("}", 1)[1].split()[0]
            if label not in labels:
                continue
            shown = {_shown(every[n.strip()], spec or "") for n, spec in GLUE.findall(body)
                     if n.strip() in every}
            values = answers.setdefault(label, (doc, set()))[1]
            if kind == "exercise":
                values.add(("given",) + tuple(shown))  # removed below
            else:
                values.update(_shown(glue[n.strip()], spec or "") for n, spec in GLUE.findall(body)
                              if n.strip() in glue)
    out = {}
    for label, (doc, values) in answers.items():
        given = {v for t in values if isinstance(t, tuple) for v in t[1:]}
        out[label] = (doc, {v for v in values if isinstance(v, str) and _distinctive(v)
                            and v not in given})
    for label in labels & set(chapter_keys.KEYS):
        doc = next(d for d in _chapters() if f"sealed=\"{label}:" in "".join(_code_cells(d)))
        out.setdefault(label, (doc, set()))[1].update(_spellings(chapter_keys.key(label)))
    return out


def test_the_homework_answers_are_found():
    # the scan below is only as good as this: every homework exercise with a numeric answer
    answers = homework_answers()
    assert len(homework_labels()) >= 30
    assert sum(1 for _, v in answers.values() if v) >= 20
    assert "1,667" in _spellings(chapter_keys.key("prefill-ex-kvbytes"))


def _page_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8", errors="ignore")
    if path.suffix == ".html":
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(raw, "html.parser")
        for tag in soup(["script", "style"]):
            tag.decompose()
        return " ".join(soup.get_text(" ").split())
    if path.suffix == ".ipynb":
        nb = json.loads(raw)
        parts = []
        for c in nb["cells"]:
            parts.append(re_ed._source(c))
            for o in c.get("outputs", []):
                parts.append(re_ed._text(o.get("text", "")))
                # text, and the glued values a notebook stores (papermill records of text)
                parts += [re_ed._text(v) for k, v in o.get("data", {}).items()
                          if k.startswith(("text/", re_ed.RECORD + "text/"))]
        return " ".join("\n".join(parts).split())
    return raw


def _number_in(spelling: str, text: str):
    return re.search(rf"(?<![\w.,]){re.escape(spelling)}(?![\w]|[.,]\d)", text)


def _pset_answers() -> set[str]:
    pytest.importorskip("otter")
    import build
    import keys

    out = set()
    for part in build.available():
        for q in keys.questions(part):
            v = keys.key(part, q, build.DEFAULT_SEED)
            out |= {s for s in _spellings(v) if len(s.replace(",", "").replace(".", "")) >= 4}
    return out


def _scan_roots():
    roots = []
    if (SITE / "index.html").exists():
        roots.append(("public", SITE))
    if (STUDENT / "html" / "index.html").exists():
        roots += [("student", STUDENT / "html"), ("student", STUDENT / "notebooks")]
    return roots


# A homework answer's spelling that the page shows for another reason, reviewed one by one (as in
# tests/test_student_edition.py's SHOWN_BY_THE_BODY); anything else found is a leak.
COINCIDENCES = {
    "decode-ex-context": {"206"},  # the Pope et al. row's 206 us of KV read; the answer is GB/s
    "kv-ex-qwen": {"104"},  # 104 GB per chip in the pipelining aside
    "counting-ex-moe": {"235B"},  # the model's total, which its name (Qwen3-235B-A22B) states
    # the full edition's design table (2 KV heads, 32 sequences: another quantity) prints 344 GB
    "counting-ex-gqa": {"344 GB"},
    "prefill-ex-ttft": {"8,192 tokens"},  # the prompt length, a given its solution quotes
    # the residual's Mixtral-on-TensorRT-LLM median, 1.57 times the estimate (a ratio of
    # latencies; the answer is rows per touched expert)
    "estimate-ex-touched": {"1.57"},
    # the public site's project solution moe-ex-5t designs with 512 experts and 512 slots; the
    # answer is tokens per GPU (about 512, where the busiest GPU's load falls below 1.05x)
    "moe-ex-imbalance": {"512"},
}


@pytest.mark.parametrize("where", ["public", "student"])
def test_no_homework_answer_is_served(where):
    """Every homework answer (chapter homework and the default seed's problem sets) against the
    pages, notebooks and search index the site serves, worked solutions included. (Planted: with
    prefill-ex-kvbytes back in the homework column, chapter 6's "About 1,667 bytes" is found on
    both sites; with _ext/homework_solutions.py and the reader's edition made to keep
    hardware-ex-h200's solution, its answers are found on the public site's page, its notebook
    and the search index.)"""
    roots = [root for w, root in _scan_roots() if w == where]
    if not roots:
        pytest.skip(f"no {where} build: `make book` / `make student` builds it")
    chapter = homework_answers()
    psets = _pset_answers()
    hits = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".html", ".ipynb", ".js") or "_static" in path.parts:
                continue
            if path.suffix == ".js" and path.name != "searchindex.js":
                continue
            text = _page_text(path)
            # a chapter's homework answers on its own page and the cheat sheet (elsewhere, and in
            # the search index's words of every page, a 3-digit number is a coincidence); the
            # problem-set keys (4 digits or more) anywhere
            for label, (doc, values) in chapter.items():
                if path.stem not in (Path(doc).name, "cheat_sheet"):
                    continue
                for v in values - COINCIDENCES.get(label, set()):
                    if _number_in(v, text):
                        hits.append(f"{path.relative_to(ROOT)}: {label} answer {v}")
            for v in psets:
                if _number_in(v, text):
                    hits.append(f"{path.relative_to(ROOT)}: a problem-set key {v}")
    assert not hits, "\n".join(hits[:40])


def test_the_public_site_shows_the_note_for_homework_and_every_other_solution():
    """Each chapter page: one note per homework exercise, a worked solution for every other.
    (Planted: the extension left out of _config.yml leaves 0 notes; sphinx-exercise's
    "dropdown" class left on the note counts it a solution.)"""
    if not (SITE / "index.html").exists():
        pytest.skip("no public build: `make book` builds it")
    from bs4 import BeautifulSoup

    homework, notes = homework_labels(), 0
    for doc in _chapters():
        nb = json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))
        text = "\n".join(re_ed._source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
        solved = re.findall(r"^```\{solution\} ([\w-]+)", text, flags=re.M)
        soup = BeautifulSoup((SITE / f"{doc}.html").read_text(encoding="utf-8"), "html.parser")
        shown = soup.select("div.solution")
        note = [d for d in soup.select("div.admonition.note.llm-homework")
                if d.get_text(" ", strip=True).endswith(re_ed.HOMEWORK_NOTE)]
        assert len(note) == len([lb for lb in solved if lb in homework]), doc
        assert len(shown) == len([lb for lb in solved if lb not in homework]), doc
        assert not any("dropdown" in d["class"] for d in note), doc
        notes += len(note)
    assert notes >= 30  # the two plans' homework, each with its worked solution in the kit


# --- the student environment ---------------------------------------------------------------------

def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


def test_the_student_requirements_pin_the_library_otter_and_the_notebooks_needs():
    """(Planted: numpy pinned to 2.4.5 in requirements-student.txt fails here.)"""
    student = ROOT / "requirements-student.txt"
    lines = [ln.split("#")[0].strip() for ln in student.read_text(encoding="utf-8").splitlines()]
    assert "-e ." in lines  # the library, from the checkout it sits in
    pins, dev = _pins(student), _pins(ROOT / "requirements.txt")
    for name in ("otter-grader", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "pyyaml",
                 "nbformat"):
        assert name in pins, name
    for name, version in pins.items():
        assert dev.get(name) == version, f"{name}=={version}, requirements.txt has {dev.get(name)}"
    for tool in ("pytest", "playwright", "mutmut", "ruff", "jupyter-book", "nbval", "sphinx"):
        assert tool not in pins, f"{tool}: a development tool, not a student's"
    assert len(pins) < len(dev) / 2


INSTALL = "pip install -r requirements-student.txt"


def test_the_guide_and_the_landing_page_give_the_one_install_line():
    for page in ("book/course_guide.md", "book/intro.md"):
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        assert INSTALL in text, page
    guide = (ROOT / "book" / "course_guide.md").read_text(encoding="utf-8")
    before = guide[guide.index("## Before the course"):guide.index("## How the exercises")]
    assert not re.search(r"[Ss]tudents[^.]*`make lab`", before)  # the authors' command


def test_the_student_edition_tells_students_to_use_it():
    index = STUDENT / "html" / "book" / "intro.html"
    if not index.exists():
        pytest.skip("no student edition: `make student` builds it")
    text = _page_text(index)
    assert INSTALL in text
