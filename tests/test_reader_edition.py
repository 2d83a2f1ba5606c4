"""The reader's notebook edition (scripts/reader_edition.py): each transformation on small
hand-written inputs, then over the real chapters."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("reader_edition", ROOT / "scripts/reader_edition.py")
re_ed = importlib.util.module_from_spec(_spec)
sys.modules["reader_edition"] = re_ed  # dataclasses look their module up
_spec.loader.exec_module(re_ed)

BIB = """
@article{smith2020,
  title = {A {Study} of Things},
  author = {Smith, Jane and Doe, John and Roe, Richard},
  year = {2020},
  journal = {J. Things},
  url = {https://example.org/smith}
}
@misc{acme2021, title = {Widget Datasheet}, author = {{ACME Corp}}, year = {2021}}
@misc{two2019, title = {Pairs}, author = {Ann Lee and Bo Kim}, year = {2019}}
"""


def _book():
    book = re_ed.Book(ROOT, [("book/ch", "4")])
    book.bib = re_ed.parse_bib(BIB)
    book.titles = {"book/ch": "The chapter", "book/other": "Another page"}
    book.labels = {
        "fig-a": re_ed.Target("figure", "book/ch", "4.2"),
        "eq-a": re_ed.Target("equation", "book/ch", "4.3"),
        "ex-a": re_ed.Target("exercise", "book/ch", "4.1", "Warm-up"),
        "sec-a": re_ed.Target("section", "book/ch", "4.5", "Where it bends"),
    }
    return book


def _ctx(**glue):
    ctx = re_ed.Context(_book(), "book/ch")
    ctx.glue = {k: {"text/plain": v} for k, v in glue.items()}
    return ctx


# --- hand-written inputs --------------------------------------------------------------------

def test_bib_author_year():
    bib = re_ed.parse_bib(BIB)
    assert re_ed.cite_parts(bib["smith2020"]) == ("Smith *et al.*", "2020")
    assert re_ed.cite_parts(bib["acme2021"]) == ("ACME Corp", "2021")
    assert re_ed.cite_parts(bib["two2019"]) == ("Lee and Kim", "2019")
    assert re_ed.reference_entry(bib["smith2020"]) == (
        "Jane Smith, John Doe, Richard Roe (2020). *A Study of Things*. J. Things. "
        "<https://example.org/smith>")


def test_glue_roles():
    ctx = _ctx(t="5.19 ms", x="3.14159", price="$2.00")
    assert re_ed.transform_roles("takes {glue:}`t` here", ctx) == "takes 5.19 ms here"
    assert re_ed.transform_roles("pi is {glue:text}`x:.1f`", ctx) == "pi is 3.1"
    # a dollar sign would open math in Jupyter: escaped
    assert re_ed.transform_roles("costs {glue:}`price`", ctx) == r"costs \$2.00"
    # inline code is left alone
    assert re_ed.transform_roles("`{glue:}`", ctx) == "`{glue:}`"
    with pytest.raises(KeyError, match="missing"):
        re_ed.transform_roles("{glue:}`missing`", ctx)


def test_cite_roles_link_to_references():
    ctx = _ctx()
    assert re_ed.transform_roles("as {cite}`smith2020,acme2021` show", ctx) == (
        "as [[ACME Corp, 2021](#References), [Smith *et al.*, 2020](#References)] show")
    assert (re_ed.transform_roles("{cite:t}`two2019` say", ctx)
            == "Lee and Kim [[2019](#References)] say")
    assert ctx.cited == ["smith2020", "acme2021", "two2019"]
    cell = re_ed.references_cell(ctx)
    assert cell["source"].startswith("## References\n\n- ACME Corp (2021). *Widget Datasheet*.")


def test_reference_roles():
    ctx = _ctx()
    assert re_ed.transform_roles("{numref}`fig-a` and {eq}`eq-a`", ctx) == "Fig. 4.2 and (4.3)"
    assert re_ed.transform_roles("{numref}`Figure %s <fig-a>`", ctx) == "Figure 4.2"
    assert re_ed.transform_roles("{ref}`ex-a`, {ref}`sec-a`", ctx) == "Exercise 4.1, Where it bends"
    assert re_ed.transform_roles("{ref}`this one <sec-a>`", ctx) == "this one"
    assert re_ed.transform_roles("{doc}`other`", ctx) == "Another page"
    with pytest.raises(KeyError, match="nowhere"):
        re_ed.transform_roles("{numref}`nowhere`", ctx)
    with pytest.raises(ValueError, match="unknownrole"):
        re_ed.transform_roles("{unknownrole}`x`", ctx)


def test_labelled_math_gets_its_number():
    ctx = _ctx()
    assert re_ed.transform_markdown("$$\nx = 1\n$$ (eq-a)", ctx) == "$$\nx = 1\n\\tag{4.3}\n$$"
    src = "```{math}\n:label: eq-a\ny = 2\n```"
    assert re_ed.transform_markdown(src, ctx) == "$$\ny = 2\n\\tag{4.3}\n$$"


def test_admonition_dropdown_exercise_solution():
    ctx = _ctx(v="42")
    src = ":::{admonition} Learning goals\n:class: tip\nKnow {glue:}`v`.\n:::"
    assert re_ed.transform_markdown(src, ctx) == (
        "<blockquote>\n\n**Learning goals**\n\nKnow 42.\n\n</blockquote>")
    assert re_ed.transform_markdown(":::{note}\nHi.\n:::", ctx) == (
        "<blockquote>\n\n**Note**\n\nHi.\n\n</blockquote>")
    assert re_ed.transform_markdown(":::{dropdown} Reveal\nIt.\n:::", ctx) == (
        "<details>\n<summary>Reveal</summary>\n\nIt.\n\n</details>")
    ex = "```{exercise} Warm-up\n:label: ex-a\n\nDo it.\n```"
    assert re_ed.transform_markdown(ex, ctx) == "#### Exercise 4.1 (Warm-up)\n\nDo it."
    sol = "```{solution} ex-a\n:class: dropdown\n\nDone.\n```"
    assert re_ed.transform_markdown(sol, ctx) == (
        "<details>\n<summary>Solution to Exercise 4.1 (Warm-up)</summary>\n\nDone.\n\n</details>")
    ctx.student = True
    assert re_ed.transform_markdown("Before.\n\n" + sol, ctx) == "Before."


def test_targets_removed_headings_numbered_code_fences_kept():
    ctx = _ctx()
    src = "(sec-a)=\n## Where it bends\n\n```python\n{glue:}`not_a_role`\n```"
    assert re_ed.transform_markdown(src, ctx, ["4.5"]) == (
        "## 4.5. Where it bends\n\n```python\n{glue:}`not_a_role`\n```")


def test_toc_numbering_runs_on_across_numbered_parts(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: A\n    numbered: true\n"
        "    chapters:\n      - file: book/a\n      - file: book/b\n  - caption: B\n"
        "    numbered: true\n    chapters:\n      - file: book/c\n  - caption: App\n"
        "    chapters:\n      - file: book/d\n")
    assert re_ed.read_toc(tmp_path) == [("book/intro", None), ("book/a", "1"), ("book/b", "2"),
                                        ("book/c", "3"), ("book/d", None)]


def test_student_flag_drops_answer_cells_and_keeps_the_rest():
    book = _book()
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
        {"cell_type": "code", "metadata": {"tags": ["answer"]}, "outputs": [], "source": "a = 1",
         "execution_count": 1},
        {"cell_type": "code", "metadata": {"tags": ["remove-input"]}, "outputs": [],
         "source": "b = 2", "execution_count": 2},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    reader = re_ed.transform_notebook(nb, re_ed.Context(book, "book/ch"))
    student = re_ed.transform_notebook(nb, re_ed.Context(book, "book/ch"), student=True)
    sources = [re_ed._source(c) for c in reader["cells"]]
    assert sources[0] == "# Title" and "a = 1" in sources and "b = 2" in sources
    assert reader["cells"][1]["id"] == "reader-install"
    assert reader["cells"][-1]["metadata"]["jupyter"]["source_hidden"] is True
    assert "a = 1" not in [re_ed._source(c) for c in student["cells"]]


# --- the real chapters ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebooks")
    paths = re_ed.build(out)
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in paths}


def test_every_chapter_notebook_is_written(edition):
    expected = {p.name for p in (ROOT / "book").glob("*.ipynb")}
    assert set(edition) == expected


LEFTOVERS = [r"\{glue", r"\{(cite|numref|eq|ref|doc)(:[a-z]+)?\}`", r"```\{", r"^\s*:::",
             r"^\([\w:.-]+\)=\s*$"]


def test_no_myst_left_in_any_markdown_cell(edition):
    for name, nb in edition.items():
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = re_ed._source(cell)
            for pat in LEFTOVERS:
                assert not re.search(pat, text, re.M), f"{name}: {pat!r} left in: {text[:300]}"


def test_every_glue_placeholder_got_its_value(edition):
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        src = json.loads(path.read_text(encoding="utf-8"))
        values = re_ed.glue_values(src)
        names = re.findall(r"\{glue(?::\w*)?\}`([^`:]+)", json.dumps(
            [re_ed._source(c) for c in src["cells"] if c["cell_type"] == "markdown"]))
        assert set(names) <= set(values), f"{path.name}: glued names without a stored value"
        prose = json.dumps([re_ed._source(c) for c in edition[path.name]["cells"]])
        for name in set(names):
            shown = re_ed.escape_md(re_ed._text(values[name]["text/plain"]))
            assert json.dumps(shown)[1:-1] in prose, f"{path.name}: value of {name!r} not shown"


def test_code_cells_outputs_and_widget_state_kept(edition):
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        src = json.loads(path.read_text(encoding="utf-8"))
        new = edition[path.name]
        old_code = [c for c in src["cells"] if c["cell_type"] == "code"]
        new_code = [c for c in new["cells"]
                    if c["cell_type"] == "code" and c.get("id") != "reader-install"]
        assert [c["source"] for c in old_code] == [c["source"] for c in new_code]
        assert [len(c["outputs"]) for c in old_code] == [len(c["outputs"]) for c in new_code]
        assert new["metadata"].get("widgets") == src["metadata"].get("widgets")
        assert (new["cells"][[c["cell_type"] for c in new["cells"]].index("code")]["id"]
                == "reader-install")


def _html_numbers(html_dir: Path) -> dict:
    found = {}
    for page in html_dir.glob("book/*.html"):
        s = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<figure[^>]*id="([^"]+)".*?<span class="caption-number">Fig\. '
                             r'([\d.]+) </span>', s, re.S):
            found[m.group(1)] = ("figure", m.group(2))
        for m in re.finditer(r'<span class="eqno">\(([\d.]+)\)<a class="headerlink" '
                             r'href="#equation-([^"]+)"', s):
            found[m.group(2)] = ("equation", m.group(1))
        for m in re.finditer(r'id="([^"]+)">\s*<p class="admonition-title"><span class='
                             r'"caption-number">Exercise ([\d.]+) </span>', s):
            found[m.group(1)] = ("exercise", m.group(2))
    return found


def test_numbers_agree_with_the_built_site():
    """The edition computes numbers by the site's rules; where a build exists, compare."""
    html = ROOT / "_build" / "html"
    if not (html / "index.html").exists():
        pytest.skip("no _build/html: run `make book` to compare numbers with the site")
    book = re_ed.load_book(ROOT)
    found = _html_numbers(html)
    checked = 0
    for label, t in book.labels.items():
        if t.kind in ("figure", "equation", "exercise"):
            assert found.get(label) == (t.kind, t.number), (
                f"{label}: {t} vs site {found.get(label)}")
            checked += 1
    assert checked >= 50
    for doc, _ in book.docs:
        if not (ROOT / f"{doc}.ipynb").exists():
            continue
        s = (html / f"{doc}.html").read_text(encoding="utf-8")
        s = s[s.find("<article"):]
        site = [(m.group(1) or "").rstrip(".") for m in re.finditer(
            r'<h[1-6]>(?:<span class="section-number">([\d.]+)\s*</span>)?', s)]
        mine = [n for nums in book.numbers[doc]["headings"] for n in nums]
        assert site == mine, f"{doc}: section numbers differ from the site"


# --- the student edition's rules, on the sources (issue 15; no build needed) --------------------

def test_strip_solutions_keeps_everything_else_verbatim():
    src = ("Intro {glue:}`a`.\n\n```{exercise} Q\n:label: ex-a\n\nAsk.\n```\n\n"
           "```{solution} ex-a\n:class: dropdown\n\nKey {glue:}`b`.\n```\n\n"
           "::::{admonition} Box\n```{solution} ex-a\nNested.\n```\nKept.\n::::\n\n"
           "```python\nx = 1\n```")
    out = re_ed.strip_solutions(src)
    assert "Key" not in out and "Nested" not in out and "{solution}" not in out
    assert out == ("Intro {glue:}`a`.\n\n```{exercise} Q\n:label: ex-a\n\nAsk.\n```\n\n"
                   "::::{admonition} Box\nKept.\n::::\n\n```python\nx = 1\n```")


def test_student_source_refuses_prose_that_needs_an_answer_cell():
    nb = {"cells": [
        {"cell_type": "code", "metadata": {"tags": ["remove-input", re_ed.ANSWER_TAG]},
         "source": "glue('k', '42')", "execution_count": 1, "outputs": [
             {"output_type": "display_data", "metadata": {"scrapbook": {"name": "k"}},
              "data": {re_ed.RECORD + "text/plain": "'42'"}}]},
        {"cell_type": "markdown", "metadata": {}, "source": "Given {glue:}`k`."},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    with pytest.raises(ValueError, match="'k'"):
        re_ed.student_source(nb, "book/ch")
    nb["cells"][1]["source"] = "```{solution} ex-a\nIt is {glue:}`k`.\n```"
    out = re_ed.student_source(nb, "book/ch")
    assert [c["cell_type"] for c in out["cells"]] == ["markdown"]  # emptied, kept in step
    assert re_ed._source(out["cells"][0]) == ""


def test_student_config_marks_the_title_and_hides_solutions():
    cfg = re_ed.student_config((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert re.search(r"(?m)^title: .*\(student edition\)$", cfg)
    assert re.search(r"(?m)^\s+logo:\n\s+text: .*\(student edition\)$", cfg)
    assert re.search(r"(?m)^  config:\n    hide_solutions: true\n", cfg)


def _sources_with_solutions():
    for doc, _ in re_ed.load_book(ROOT).docs:
        if (ROOT / f"{doc}.ipynb").exists():
            yield doc, json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))


def _solution_refs(text):
    sol, pub = set(), set()

    def walk(block, inside):
        if isinstance(block, re_ed.Directive):
            inside = inside or block.name == "solution"
            (sol if inside else pub).update(re_ed._glue_refs(block.arg))
            if block.name.startswith("glue"):
                (sol if inside else pub).add(block.arg)
            for b in re_ed.parse_blocks(block.body):
                walk(b, inside)
        elif isinstance(block, str):
            (sol if inside else pub).update(re_ed._glue_refs(block))
    for b in re_ed.parse_blocks(text):
        walk(b, False)
    return sol, pub


def test_values_only_solutions_show_are_computed_only_in_answer_cells():
    """The rule that keeps the student edition leak-free: a glued value that only solution blocks
    paste comes from a cell tagged `answer` (hidden, and dropped from the student edition)."""
    checked = 0
    for doc, nb in _sources_with_solutions():
        sol, pub = set(), set()
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                s, p = _solution_refs(re_ed._source(cell))
                sol, pub = sol | s, pub | p
        answer_only = sol - pub
        for cell in nb["cells"]:
            tags = cell.get("metadata", {}).get("tags", [])
            assert not {"answer-cell", "solution"} & set(tags), f"{doc}: use the one tag 'answer'"
            names = {o.get("metadata", {}).get("scrapbook", {}).get("name")
                     for o in cell.get("outputs", [])} - {None}
            if re_ed.ANSWER_TAG in tags:
                assert cell["cell_type"] == "code" and set(tags) & set(re_ed.HIDDEN_INPUT_TAGS), (
                    f"{doc}: an answer cell must be a code cell whose input the site hides")
                checked += len(names & answer_only)
            elif names & answer_only:
                raise AssertionError(f"{doc}: {sorted(names & answer_only)} are pasted only in "
                                     f"solutions but glued in a cell not tagged 'answer'")
    assert checked >= 100  # the answer values of ten chapters and the exam bank


def test_check_cells_ship_blank():
    """A check cell holds a blank (`my_answer = None`), never the answer filled in."""
    n = 0
    for doc, nb in _sources_with_solutions():
        for cell in nb["cells"]:
            src = re_ed._source(cell)
            if cell["cell_type"] != "code" or "check(" not in src:
                continue
            for lhs, rhs in re.findall(r"(?m)^(my_\w+)\s*=\s*([^#\n]*)", src):
                assert rhs.strip() in ("None", "..."), f"{doc}: {lhs} = {rhs.strip()} filled in"
                n += 1
    assert n >= 10


def test_student_edition_of_every_chapter_has_no_solution_and_no_answer_cell(tmp_path):
    paths = re_ed.build(tmp_path, student=True)
    assert paths
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            assert re_ed.ANSWER_TAG not in cell.get("metadata", {}).get("tags", [])
            assert "Solution to Exercise" not in re_ed._source(cell), f"{path.name}: a solution"
    site = re_ed.build_student_site(tmp_path / "site")
    assert {p.name for p in site} >= {"course_guide.md", "exam_bank.ipynb", "hardware.ipynb"}
    for p in site:
        assert "{solution}" not in p.read_text(encoding="utf-8"), f"{p.name}: a solution block"


def test_course_guide_refers_to_exercises_that_exist_and_covers_every_chapter():
    """The course guide assigns exercises by label (class, homework, exam): each label must name an
    exercise of the book, and every numbered chapter of _toc.yml must be in its plans."""
    book = re_ed.load_book(ROOT)
    guide = (ROOT / "book" / "course_guide.md").read_text(encoding="utf-8")
    labels = re.findall(r"\{ref\}`([^`<>]+)`", guide)
    assert len(labels) >= 60
    missing = [lb for lb in labels if lb not in book.labels or book.labels[lb].kind != "exercise"]
    assert not missing, f"course_guide.md refers to exercises that do not exist: {missing}"
    for doc, chapter in book.docs:
        if chapter:
            assert f"{{doc}}`{Path(doc).name}`" in guide, (
                f"chapter {chapter} ({doc}) not in the plans")
    exam = {lb for lb, t in book.labels.items()
            if t.doc == "book/exam_bank" and t.kind == "exercise"}
    assert exam and exam <= set(labels), (
        f"exam bank questions the guide does not list: {exam - set(labels)}")
