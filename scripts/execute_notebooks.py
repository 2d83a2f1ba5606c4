"""Execute book notebooks in place, deterministically (`make execute`).

Each notebook runs top to bottom in a fresh kernel from its own folder, with widget state
stored (so saved widgets render in the static site) and without timings. Random widget model
ids are then replaced by ids derived from the notebook path and their order, so re-executing
an unchanged notebook gives a byte-identical file: `git diff --exit-code book/` after
`make execute` is a staleness check.

Usage: python scripts/execute_notebooks.py [notebook.ipynb ...]   (default: every book/*.ipynb)
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60  # per cell; nbclient can stall on widget cells (nbclient#312): keep it short
ID_RE = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")


def _stable_ids(nb: nbformat.NotebookNode, rel: str) -> nbformat.NotebookNode:
    """Replace random widget model ids (32 hex) with uuid5(path, i), i in a deterministic order.

    The order is a breadth-first walk from the widget views in the outputs (cell order) through
    the references each saved model makes to others ("IPY_MODEL_<id>", keys sorted), so it does
    not depend on the random ids themselves.
    """
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    models = state.get("state", {})
    order: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json", {})
            if view.get("model_id") in models and view["model_id"] not in order:
                order.append(view["model_id"])
    i = 0
    while i < len(order):
        text = json.dumps(models[order[i]], sort_keys=True)
        for m in ID_RE.finditer(text):
            if m.group(0) in models and m.group(0) not in order:
                order.append(m.group(0))
        i += 1
    rest = [k for k in models if k not in order]
    rest.sort(key=lambda k: ID_RE.sub("", json.dumps(models[k], sort_keys=True)))
    order += rest
    mapping = {old: uuid.uuid5(uuid.NAMESPACE_URL, f"roofline-book/{rel}/{n}").hex
               for n, old in enumerate(order)}
    text = ID_RE.sub(lambda m: mapping.get(m.group(0), m.group(0)), nbformat.writes(nb))
    return nbformat.reads(text, as_version=4)


def _clean(nb: nbformat.NotebookNode) -> None:
    """Drop metadata that changes between runs without meaning anything."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.metadata.pop("collapsed", None)
            cell.metadata.pop("scrolled", None)
    nb.metadata.pop("papermill", None)
    widgets = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json")
    if widgets is not None:
        # Sort state by model id so the saved metadata has a stable order.
        widgets["state"] = dict(sorted(widgets.get("state", {}).items()))


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=TIMEOUT_S,
        kernel_name="python3",
        store_widget_state=True,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    _clean(nb)
    rel = path.resolve().relative_to(ROOT).as_posix()
    nb = _stable_ids(nb, rel)
    # Keep cell ids stable across runs too (nbformat may add random ones to old notebooks).
    for i, cell in enumerate(nb.cells):
        if "id" in cell:
            cell["id"] = cell["id"] if re.fullmatch(r"[a-z0-9-]{1,64}", cell["id"] or "") else (
                f"cell-{i}")
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    # the lab's measuring calls replay the committed reference run (llmmath.measure), so the
    # committed lab shows the same numbers whichever machine executes it
    os.environ.setdefault("LLMMATH_LAB_REPLAY", "1")
    paths = [Path(p) for p in argv] or sorted((ROOT / "book").glob("*.ipynb"))
    for p in paths:
        seconds = execute(p)
        print(f"executed {p} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
