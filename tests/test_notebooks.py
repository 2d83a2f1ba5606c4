"""The committed notebooks are executed, complete and deterministic enough for nbval.

nbval (run over book/) re-executes every notebook and compares its outputs; these tests check
what nbval cannot: that the stored state is the one the book renders.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llmmath import book

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def _code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def test_there_are_notebooks():
    assert NOTEBOOKS, "book/ has no notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executed_top_to_bottom_in_a_fresh_kernel(path):
    cells = _code_cells(_load(path))
    counts = [c["execution_count"] for c in cells]
    assert None not in counts, f"{path.name}: unexecuted cells; run `make execute`"
    assert counts == list(range(1, len(cells) + 1)), (f"{path.name}: execution "
                                                      f"counts {counts} are not 1..n")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_errors_and_no_unstable_text(path):
    for cell in _code_cells(_load(path)):
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{path.name}: an error output is stored"
            assert out.get("name") != "stderr", (f"{path.name}: stderr stored: "
                                                 f"{''.join(out.get('text', ''))[:200]}")
            text = (json.dumps(out.get("data", {}).get("text/plain", ""))
                    + json.dumps(out.get("text", "")))
            assert not re.search(r" at 0x[0-9a-f]{6,}", text), (
                f"{path.name}: a memory address in an output")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_widget_view_has_saved_state(path):
    nb = _load(path)
    state = nb.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
    views = [o["data"][VIEW]["model_id"] for c in _code_cells(nb) for o in c.get("outputs", [])
             if VIEW in o.get("data", {})]
    missing = [v for v in views if v not in state]
    assert not missing, (f"{path.name}: widget views without saved "
                         f"state (blank in the book): {missing}")
    refs = set(re.findall(r"IPY_MODEL_([0-9a-f]{32})", json.dumps(state)))
    assert refs <= set(state), f"{path.name}: saved widgets refer to models that were not saved"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_figures_have_alt_text(path):
    for cell in _code_cells(_load(path)):
        if any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
            assert len(alt) > 20, (f"{path.name}: a figure cell without alt text: "
                                   f"{''.join(cell['source'])[:80]}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_in_table_of_contents(path):
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert f"book/{path.stem}" in toc, f"{path.name} is not in _toc.yml"


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "book").glob("*.md")),
                         ids=lambda p: p.name)
def test_no_tab_where_tex_was_meant(path):
    # A caption or entry written through a non-raw Python string turns "\times" and "\text" into a
    # tab and "imes"/"ext" (Fig 4.2's caption once read "300<tab>imes sparsity").
    if path.suffix == ".md":
        texts = [path.read_text(encoding="utf-8")]
    else:
        nb = _load(path)
        texts = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
        texts += list(_strings([c.get("metadata", {}) for c in nb["cells"]]))
    bad = [t[max(0, t.index("\t") - 40):t.index("\t") + 10] for t in texts if "\t" in t]
    assert not bad, f"{path.name}: tab characters in prose or captions: {bad[:3]}"


CHAPTER_NOTEBOOKS = [ROOT / "book" / f"{c}.ipynb" for c in book.chapters(ROOT / "_toc.yml")]


def _unlabelled_display_math(markdown: str) -> list[str]:
    """Display equations ($$ ... $$) outside exercises and solutions that carry no (label)."""
    found, fences, opened = [], [], None
    for line in markdown.split("\n"):
        s = line.strip()
        fence = re.match(r"^(`{3,}|:{3,})\{?([a-z-]*)\}?", s)
        if opened is None and fence:
            if fences and s == fences[-1][0]:
                fences.pop()
            elif fence.group(2):
                fences.append((fence.group(1), fence.group(2) in ("exercise", "solution")))
        elif s.startswith("$$") and opened is None and not (len(s) > 4 and s.endswith("$$")):
            opened = s
        elif opened is not None and s.startswith("$$"):
            if not re.match(r"^\$\$\s*\(eq-[\w-]+\)$", s) and not any(e for _, e in fences):
                found.append(opened + " ... " + s)
            opened = None
    return found


def test_unlabelled_display_math_is_found():
    assert _unlabelled_display_math("text\n$$\nx = 1\n$$\n") == ["$$ ... $$"]
    assert _unlabelled_display_math("$$\nx = 1\n$$ (eq-hardware-1)\n") == []
    assert _unlabelled_display_math("```{solution} ex\n$$\nx\n$$\n```\n") == []


@pytest.mark.parametrize("path", CHAPTER_NOTEBOOKS, ids=lambda p: p.name)
def test_every_display_equation_is_numbered(path):
    # Readers and instructors cite equations by number: (4.2), not "the second display in 4.1".
    markdown = "\n".join("".join(c["source"]) for c in _load(path)["cells"]
                         if c["cell_type"] == "markdown")
    assert not _unlabelled_display_math(markdown), f"{path.name}: label each as $$ (eq-chN-K)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_glue_key_is_glued_once(path):
    """A key glued twice shows the later value wherever the earlier was meant (myst-nb warns,
    and the strict build fails; this finds it without a build)."""
    keys = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            keys += re.findall(r"\bglue\(\s*[\"']([\w-]+)[\"']", "".join(cell["source"]))
    twice = sorted({k for k in keys if keys.count(k) > 1})
    assert not twice, f"{path.name}: glued more than once: {twice}"
