"""The student edition (`make student`, issue 15): what it serves leaks no answer, and each blank
student notebook runs top to bottom in a fresh kernel.

What the student edition serves: the site in _build/student/html (its pages, its `_sources/`
downloads, its search index) and the notebooks in _build/student/notebooks. The answers it must not
hold are collected from the full edition (book/): the text of every `{solution}` block, and the
values the page would show for every glued name that only solutions paste, per chapter. The
tests skip, saying why, when `_build/student` is absent, except under LLMMATH_REQUIRE_STUDENT=1
(set by `make student`), where they fail. The tagging rules that keep the edition leak-free are
checked on the sources themselves in tests/test_reader_edition.py, with no build needed.
"""

from __future__ import annotations

import html
import json
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from llmmath import book
from scripts import reader_edition as re_ed

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "_build" / "student"
SITE, NOTEBOOKS = STUDENT / "html", STUDENT / "notebooks"

REQUIRED = os.environ.get("LLMMATH_REQUIRE_STUDENT") == "1"
if not (SITE / "index.html").exists() or not NOTEBOOKS.is_dir():
    if REQUIRED:
        raise RuntimeError("LLMMATH_REQUIRE_STUDENT=1 but _build/student has no site or notebooks: "
                           "`make student` builds them")
    pytest.skip("no student edition in _build/student: run `make student` to build and test it",
                allow_module_level=True)

DOCS = [doc for doc, _ in re_ed.toc_pages(ROOT)]
NB_DOCS = [doc for doc in DOCS if (ROOT / f"{doc}.ipynb").exists()]


# --- what the full edition holds as answers ----------------------------------------------------

def _solutions(text: str) -> list[str]:
    """Bodies of the `{solution}` blocks in MyST markdown, at any depth."""
    return re_ed.solution_bodies(text)


def _markdown(doc: str) -> list[str]:
    path = ROOT / f"{doc}.ipynb"
    if path.exists():
        nb = json.loads(path.read_text(encoding="utf-8"))
        return [re_ed._source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
    return [(ROOT / f"{doc}.md").read_text(encoding="utf-8")]


def _shown(bundle: dict, spec: str) -> str:
    """A glued value as the page shows it (a format spec such as ``:.1f`` applied)."""
    plain = re_ed._text(bundle.get("text/plain", "")).strip()
    if plain[:1] in "'\"" and plain[-1:] == plain[:1]:
        plain = plain[1:-1]
    if spec:
        try:
            return format(float(plain), spec)
        except ValueError:
            pass
    return plain


GLUE_USE = re.compile(r"\{glue(?::\w*)?\}`([^`:]+)(?::([^`]*))?`")


def _distinctive(value: str) -> bool:
    """Worth scanning for: at least three digits ("1.37 TB", "5,400"), so that a coincidence with
    an ordinary number of the page ("8", "64") is not taken for a leak."""
    return sum(ch.isdigit() for ch in value) >= 3


def _phrase(text: str) -> str | None:
    """The longest run of plain words in a solution (roles, math and markup stripped): a phrase
    that identifies the solution's text wherever it is served."""
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " | ", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " | ", text, flags=re.S)
    runs = re.findall(r"(?:[A-Za-z][A-Za-z'-]*[ \n]+){8,}[A-Za-z][A-Za-z'-]*", text)
    return " ".join(max(runs, key=len).split()) if runs else None


def _secrets() -> dict[str, dict]:
    """Per document: solution phrases and the values only solutions show."""
    out = {}
    for doc in DOCS:
        cells = _markdown(doc)
        sol_text = [s for c in cells for s in _solutions(c)]
        public = "\n".join(re_ed.strip_solutions(c) for c in cells)
        glue = {}
        if (ROOT / f"{doc}.ipynb").exists():
            source = (ROOT / f"{doc}.ipynb").read_text(encoding="utf-8")
            glue = re_ed.glue_values(json.loads(source))
        public_names = {m.group(1).strip() for m in GLUE_USE.finditer(public)}
        public_values = {_shown(glue[n], "") for n in public_names if n in glue}
        public_plain = " ".join(public.split())
        values, names = set(), set()
        for body in sol_text:
            for m in GLUE_USE.finditer(body):
                name, spec = m.group(1).strip(), m.group(2) or ""
                if name in public_names or name not in glue:
                    continue
                names.add(name)
                v = _shown(glue[name], spec)
                if _distinctive(v) and v not in public_values and v not in public_plain:
                    values.add(v)
        phrases = {p for p in map(_phrase, sol_text) if p and p not in public_plain}
        out[doc] = {"values": values, "names": names, "phrases": phrases,
                    "n_solutions": len(sol_text)}
    return out


# Answer values the chapter body itself shows, by design, outside any answer cell: a warm-up that
# asks the reader to read a number off a table or a printed line of the chapter, or a coincidence
# with an unrelated number of the page. Each is reviewed; anything else found is a leak.
SHOWN_BY_THE_BODY = {
    "book/hardware": {"15.9"},  # the body prints I at batch 16; hardware-ex-b16 asks to place it
    # 206 us of KV read in the Pope et al. row (decode-ex-moe asks for GB/s)
    "book/decode_roofline": {"206"},
    "book/kv_cache": {"104"},  # 104 GB per chip in the pipelining aside (kv-ex-pipeline)
    "book/prefill_prices": {"285 MB/s"},  # the disk row of the memory-tier table
    # the domain table lists the B300 rack's HBM (moe-ex-rack); gpt-oss's "(1.00 D)" expert width;
    # the References cell prints the H100 datasheet entry as the bibliography does, whose note
    # gives NVLink's 900 GB/s, the GB200 scale-up figure one solution quotes (moe-ex-tworacks)
    # ... and the capacity table's "564B" for 8 x H200 is not moe-ex-imbalance's 564 tokens
    "book/moe_rack": {"20.7 TB", "1.00", "900 GB/s", "564"},
}


def _checked_secrets():
    out = _secrets()
    for doc, allowed in SHOWN_BY_THE_BODY.items():
        assert allowed <= out[doc]["values"], (
            f"{doc}: {allowed - out[doc]['values']} no longer an answer value: "
            "drop it from SHOWN_BY_THE_BODY")
        out[doc]["values"] -= allowed
    return out


SECRETS = _checked_secrets()


def test_the_full_edition_has_answers_to_look_for():
    n_sol = sum(s["n_solutions"] for s in SECRETS.values())
    n_val = sum(len(s["values"]) for s in SECRETS.values())
    chapters = [f"book/{c}" for c in book.chapters(ROOT / "_toc.yml")]
    assert n_sol >= 6 * len(chapters), "fewer solutions than the chapter standard's six a chapter"
    assert n_val >= 100, f"only {n_val} answer values collected: the collection is broken"
    assert all(SECRETS[d]["values"] for d in chapters), "a chapter with no answer value to scan for"


# --- what the student edition serves -----------------------------------------------------------

def _plain(text: str) -> str:
    """Served text as a reader sees it: tags dropped, entities decoded, spaces collapsed."""
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", text, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text)).replace("\u202f", " ").replace("\xa0", " ")
    return " ".join(text.split())


def _notebook_text(path: Path) -> str:
    """Every source and every text output of a notebook (decoded, not JSON-escaped)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        parts.append(re_ed._source(cell))
        for out in cell.get("outputs", []):
            parts.append(re_ed._text(out.get("text", "")))
            for mime, data in out.get("data", {}).items():
                if mime.startswith(("text/", "application/papermill")):
                    parts.append(_plain(re_ed._text(data)) if "html" in mime else re_ed._text(data))
    return " ".join(" ".join(parts).split())


def _occurs(value: str, text: str) -> bool:
    """`value` in `text` as a whole number: "326" is not found inside "5356.3610326"."""
    return re.search(r"(?<![\d.,])" + re.escape(value) + r"(?!\d|[.,]\d)", text) is not None


def _served(doc: str) -> dict[str, str]:
    """What the student edition serves for one document: {where: text}."""
    name = Path(doc).name
    found = {}
    page = SITE / f"{doc}.html"
    assert page.exists(), f"the student site has no page for {doc}"
    found[str(page.relative_to(STUDENT))] = _plain(page.read_text(encoding="utf-8"))
    for src in (SITE / "_sources" / "book").glob(f"{name}.*"):
        text = (_notebook_text(src) if src.suffix == ".ipynb"
                else " ".join(src.read_text(encoding="utf-8").split()))
        found[str(src.relative_to(STUDENT))] = text
    nb = NOTEBOOKS / f"{name}.ipynb"
    if (ROOT / f"{doc}.ipynb").exists():
        assert nb.exists(), f"no student notebook for {doc}"
        found[str(nb.relative_to(STUDENT))] = _notebook_text(nb)
    return found


@pytest.mark.parametrize("doc", DOCS)
def test_no_solution_and_no_answer_value_is_served(doc):
    secrets = SECRETS[doc]
    for where, text in _served(doc).items():
        for phrase in secrets["phrases"]:
            assert phrase not in text, f"{where}: solution text served: {phrase!r}"
        leaked = sorted(v for v in secrets["values"] if _occurs(v, text))
        assert not leaked, f"{where}: answer values served: {leaked[:10]}"
        assert "Solution to Exercise" not in text, f"{where}: a solution heading is served"


def test_pages_have_no_solution_nodes_and_sources_are_the_student_notebooks():
    for page in SITE.rglob("*.html"):
        s = page.read_text(encoding="utf-8")
        assert 'class="solution' not in s, f"{page}: a sphinx-exercise solution node"
    for doc in NB_DOCS:
        name = Path(doc).name
        served = SITE / "_sources" / "book" / f"{name}.ipynb"
        assert served.read_bytes() == (NOTEBOOKS / f"{name}.ipynb").read_bytes(), (
            f"{served}: the download is not the student notebook")


def test_search_index_has_no_solution():
    index = (SITE / "searchindex.js").read_text(encoding="utf-8")
    assert "Solution to" not in index
    everything = " ".join(_plain(index).split())
    for doc, secrets in SECRETS.items():
        for phrase in secrets["phrases"]:
            assert phrase not in everything, f"searchindex.js: solution text of {doc}: {phrase!r}"


WORD = re.compile(r"[A-Za-z]{4,}")


def _solution_only_stems() -> set[str]:
    """Words (as the search index stems them) that the full edition uses only inside solutions:
    not in any page's other prose, any kept cell's code or output, the library's docstrings (the
    API page) or references.bib (the bibliography)."""
    from sphinx.search.en import SearchEnglish

    stem = SearchEnglish({}).stem
    any_word = re.compile(r"[a-z]+")

    def stems(text):  # every word of the public text, however short ("trade-offs" -> "off")
        return {stem(w) for w in set(any_word.findall(text.lower()))}
    sol, public = set(), set()
    for doc in DOCS:
        for cell in _markdown(doc):
            for body in _solutions(cell):
                sol |= {stem(w) for w in set(WORD.findall(body.lower()))}
            public |= stems(re_ed.strip_solutions(cell))
        if (ROOT / f"{doc}.ipynb").exists():
            for cell in json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))["cells"]:
                if cell["cell_type"] == "code" and not re_ed._is_answer(cell):
                    public |= stems(re_ed._source(cell))
                    for out in cell.get("outputs", []):
                        public |= stems(re_ed._text(out.get("text", "")))
                        data = out.get("data", {}).items()
                        public |= stems(" ".join(re_ed._text(v) for k, v in data
                                                 if k in ("text/plain", "text/markdown")))
    for path in [*sorted((ROOT / "lib" / "llmmath").rglob("*.py")), ROOT / "references.bib",
                 ROOT / "_config.yml"]:
        public |= stems(path.read_text(encoding="utf-8"))
    return sol - public


def test_search_index_has_no_word_only_solutions_use():
    """The search index holds stemmed words, not phrases: a word that only solutions use (there
    are dozens: "deduct", "rebalanc", "hopeless") must not be among its terms."""
    only = _solution_only_stems()
    assert len(only) >= 20, "too few solution-only words to make this check meaningful"
    s = (SITE / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(s[s.index("(") + 1:s.rindex(")")])
    terms = set(index["terms"]) | set(index.get("titleterms", {}))
    leaked = sorted(only & terms)
    assert not leaked, f"searchindex.js: words only solutions use: {leaked[:20]}"


def test_check_cells_are_blank_and_answer_cells_gone():
    for doc in NB_DOCS:
        nb = json.loads((NOTEBOOKS / f"{Path(doc).name}.ipynb").read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            tags = cell.get("metadata", {}).get("tags", [])
            assert re_ed.ANSWER_TAG not in tags, f"{doc}: an answer cell in the student notebook"
            src = re_ed._source(cell)
            if cell["cell_type"] == "code" and "check(" in src:
                for lhs, rhs in re.findall(r"(?m)^(my_\w+)\s*=\s*([^#\n]*)", src):
                    assert rhs.strip() in ("None", "..."), f"{doc}: {lhs} filled in: {rhs!r}"
                shown = " ".join(re_ed._text(o.get("text", "")) for o in cell.get("outputs", []))
                assert "right" not in shown.split(), f"{doc}: a check cell shows a verdict"
        glued = set(re_ed.glue_values(nb))
        stored = sorted(glued & SECRETS[doc]["names"])
        assert not stored, f"{doc}: values only solutions paste are stored: {stored}"


# --- each blank student notebook runs in a fresh kernel --------------------------------------

def _run(path: str) -> tuple[str, float, str | None]:
    """Execute one notebook in a fresh kernel: (name, seconds, None when it ran, else the error)."""
    import time

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        NotebookClient(nb, timeout=60, kernel_name="python3",
                       resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    except Exception as exc:  # noqa: BLE001 - reported with the notebook's name
        error = f"{Path(path).name}: {type(exc).__name__}: {str(exc)[-800:]}"
    else:
        error = None
    return Path(path).name, round(time.perf_counter() - start, 1), error


def _blanked(doc: str) -> bool:
    """The student edition changes this notebook's code: answer cells dropped or checks blank.
    (A notebook it leaves alone, such as the catalogues, is the reader's edition, run by nbval.)"""
    nb = json.loads((ROOT / f"{doc}.ipynb").read_text(encoding="utf-8"))
    return any(re_ed._is_answer(c) or (c["cell_type"] == "code" and "check(" in re_ed._source(c))
               for c in nb["cells"])


def test_every_student_notebook_runs_top_to_bottom_in_a_fresh_kernel():
    assert {p.stem for p in NOTEBOOKS.glob("*.ipynb")} == {Path(d).name for d in NB_DOCS}
    paths = [str(NOTEBOOKS / f"{Path(d).name}.ipynb") for d in NB_DOCS if _blanked(d)]
    assert len(paths) >= 11  # the chapters with answer cells or check cells
    # two kernels at a time: the CI machine has two cores
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        runs = list(pool.map(_run, paths))
    # what each run cost, for deciding where `make student` runs (measured, not asserted)
    (STUDENT / "run_seconds.json").write_text(json.dumps({n: t for n, t, _ in runs}, indent=1))
    errors = [e for _, _, e in runs if e]
    assert not errors, "\n".join(errors)
