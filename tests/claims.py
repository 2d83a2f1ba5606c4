"""``each``: one test per claim, over a list of cases (``from claims import each``).

A chapter's claim ("batch 1 is memory-bound on every chip") holds over the whole catalogue. As
one pytest item per chip x model pair it was most of the suite's items and collection time; as
one test that runs every case and reports every failing case in one message it says the same
and costs one item.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import json
import re
from pathlib import Path

import pytest

from llmmath import chips, models


def _label(value) -> str:
    if isinstance(value, tuple):
        return "-".join(_label(v) for v in value)
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else repr(value)


def each(argnames, values, ids=None):
    """Decorator: the test runs once over every case of ``values``, like ``parametrize``, and
    fails once, listing every failing case by its id (stack it for a product of lists).

    ``argnames``, ``values`` and ``ids`` (a list, or a function of one value) as in
    ``pytest.mark.parametrize``. A case that calls ``pytest.skip`` is counted as skipped; if
    every case skips, the test skips.
    """
    names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else argnames
    values = list(values)
    if ids is None:
        labels = [_label(v) for v in values]
    elif callable(ids):  # as pytest does: the function names each argument of a case
        labels = [str(ids(v)) if len(names) == 1 else "-".join(str(ids(x)) for x in v)
                  for v in values]
    else:
        labels = [str(i) for i in ids]
    if len(labels) != len(values):
        raise ValueError(f"each: {len(values)} values but {len(labels)} ids")
    if not values:
        raise ValueError(f"each: no cases for {argnames!r}: a claim over nothing tests nothing")

    def decorate(fn):
        target = getattr(fn, "_each_target", fn)
        dims = [(names, list(zip(values, labels, strict=True)))] + getattr(fn, "_each_dims", [])

        def test():
            failures, skipped, cases = [], 0, 0
            for combo in itertools.product(*(cases_ for _, cases_ in dims)):
                kwargs, label = {}, []
                for (dim_names, _), (value, tag) in zip(dims, combo, strict=True):
                    if len(dim_names) == 1:
                        kwargs[dim_names[0]] = value
                    else:
                        kwargs.update(zip(dim_names, value, strict=True))
                    label.append(tag)
                cases += 1
                try:
                    target(**kwargs)
                except pytest.skip.Exception:
                    skipped += 1
                except Exception as exc:  # noqa: BLE001 - every failing case is reported
                    text = str(exc).strip().splitlines()
                    first = " / ".join(text[:3])[:400] if text else ""
                    failures.append(f"[{'-'.join(label)}] {type(exc).__name__}: {first}")
            if failures:
                pytest.fail(f"{len(failures)} of {cases} cases fail:\n" + "\n".join(failures),
                            pytrace=False)
            if skipped == cases:
                pytest.skip(f"all {cases} cases skipped")

        # not functools.wraps: pytest would read the wrapped function's arguments as fixtures
        test.__name__, test.__qualname__ = target.__name__, target.__qualname__
        test.__doc__, test.__module__ = target.__doc__, target.__module__
        test._each_target, test._each_dims = target, dims
        return test

    return decorate


# ----- a chapter's from-scratch cell ------------------------------------------------------------
# The chapter standard (CONTRIBUTING.md) asks each chapter for one visible cell, tagged
# ``from-scratch``, of at most 15 lines of plain Python that computes the chapter's core quantity;
# its claims file checks it against the library with ``from_scratch(__file__)``.

FROM_SCRATCH_TAG = "from-scratch"
BOOK = Path(__file__).resolve().parents[1] / "book"


def tagged_cells(notebook: Path, tag: str = FROM_SCRATCH_TAG) -> list[dict]:
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    return [c for c in cells if tag in c.get("metadata", {}).get("tags", [])]


def chapter_of(test_file) -> str:
    """The chapter a claims file checks, from its name: ``test_claims_<chapter>.py``."""
    return Path(test_file).stem.removeprefix("test_claims_")


def from_scratch(test_file) -> dict:
    """Run the chapter's from-scratch cell alone, in a fresh namespace (so it cannot lean on
    hidden cells), and return the names it defined."""
    chapter = chapter_of(test_file)
    (cell,) = tagged_cells(BOOK / f"{chapter}.ipynb")
    namespace = {"__name__": f"from_scratch_{chapter}"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile("".join(cell["source"]), f"{chapter}:from-scratch", "exec"), namespace)
    return namespace


@functools.cache
def _glue_table(notebook: Path) -> dict[str, str]:
    """Every name an executed notebook glued, with the text it glued (its committed outputs)."""
    table = {}
    for cell in json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                table[name] = out["data"]["application/papermill.record/text/plain"].strip("'\"")
    return table


def glued(notebook: Path, name: str) -> str:
    """The text the chapter ``notebook`` glues under ``name`` (KeyError if it glues none)."""
    return _glue_table(Path(notebook))[name]


def glued_number(notebook: Path, name: str, units: dict[str, float]) -> tuple[float, float]:
    """A glued number in SI units, and the relative error its printed digits allow (half a unit
    of the last digit): "19.8 ms" -> (0.0198, 0.0025) with ``units["ms"] = 1e-3``. Thousands
    separators and a leading "$" are dropped; a unit missing from ``units`` is an error."""
    text = glued(notebook, name).replace(",", "").replace("$", "").strip()
    m = re.fullmatch(r"([0-9.]+) ?(\S*)", text)
    assert m, (name, text)
    digits, unit = m.groups()
    last = 10.0 ** -(len(digits.split(".")[1]) if "." in digits else 0)
    return float(digits) * units[unit], 0.5 * last / float(digits) + 1e-12


# catalogue subsets the from-scratch checks sweep (read after tests/conftest.py's sentinels)
DENSE_GQA = [m for m in models.all_models() if not m.is_moe and m.kv_lora_rank is None
             and not m.n_sliding_layers and m.sparse_attention_topk is None]
BF16_CHIPS = [c for c in chips.all_chips() if "bf16" in c.flops]


def config_of(m) -> dict:
    """A model's shape under the names the from-scratch cells use."""
    return dict(L=m.n_layers, D=m.d_model, F=m.d_ff, V=m.vocab_size, n_q=m.n_heads,
                n_kv=m.n_kv_heads, d_h=m.head_dim, gated=m.gated_mlp)
