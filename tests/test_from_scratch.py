"""Each chapter's from-scratch cell (tag ``from-scratch``) agrees with the library over the catalogue.

CHAPTER_STANDARD item 9: one visible cell of at most 15 lines of plain Python (no ``llmmath``)
computes the chapter's core quantity. This file finds the cell by its tag, runs it alone in a fresh
namespace (so it cannot lean on hidden cells), and hands the namespace to the chapter's check below.

To add a chapter: tag its cell ``from-scratch`` and register a check with ``@check("NN_slug")``;
the check receives the names the cell defined and asserts agreement with the library over every
catalogue entry the cell claims to cover. A tagged cell with no check, or a check with no cell,
fails ``test_every_cell_has_a_check``.
"""

import contextlib
import io
import json
from pathlib import Path

import pytest

from llmmath import chips, models
from llmmath.roofline import arithmetic_intensity, attainable_flops

BOOK = Path(__file__).resolve().parent.parent / "book"
TAG = "from-scratch"
MAX_LINES = 15
HIDING_TAGS = {"remove-input", "hide-input", "remove-cell", "hide-cell"}
CHECKS = {}


def check(stem):
    def register(fn):
        CHECKS[stem] = fn
        return fn
    return register


def tagged_cells(path):
    cells = json.loads(path.read_text())["cells"]
    return [c for c in cells if TAG in c.get("metadata", {}).get("tags", [])]


def chapters_with_cells():
    return sorted(p.stem for p in BOOK.glob("*.ipynb") if tagged_cells(p))


def run_cell(stem):
    (cell,) = tagged_cells(BOOK / f"{stem}.ipynb")
    namespace = {"__name__": f"from_scratch_{stem}"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile("".join(cell["source"]), f"{stem}:from-scratch", "exec"), namespace)
    return cell, namespace


def test_every_cell_has_a_check():
    assert set(chapters_with_cells()) == set(CHECKS), (
        "a from-scratch cell without a check here, or a check without its cell")


# ----- the checks, one per chapter ----------------------------------------------------------

@check("01_hardware")
def _ch1(ns):
    # matmul_time(B, d_in, d_out, peak_flops, bandwidth, bytes_per_value) against the library's
    # roofline, for every chip and dtype of the catalogue, small and large batches, two shapes.
    matmul_time = ns["matmul_time"]
    width = {"bf16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
    for chip in chips.all_chips():
        for dtype, peak in chip.flops.items():
            b = width[dtype]
            for batch in (1, 16, 300, 4096):
                for d_in, d_out in ((8192, 8192), (4096, 14336)):
                    i = arithmetic_intensity(batch, d_in, d_out, bytes_per_element=b)
                    lib = 2 * batch * d_in * d_out / attainable_flops(chip, i, dtype)
                    got = matmul_time(batch, d_in, d_out, peak, chip.hbm_bandwidth, b)
                    assert got == pytest.approx(lib, rel=1e-9), (chip.name, dtype, batch)
            assert peak / chip.hbm_bandwidth == pytest.approx(chip.ops_per_byte(dtype), rel=1e-12)


@check("02_counting")
def _ch2(ns):
    # dense_params(L, D, F, V, n_q, n_kv, d_h, gated, tied) leaves out norms and biases, which
    # are under 0.01% of every dense model in the catalogue: hold it to 0.05% of total_params.
    dense_params = ns["dense_params"]
    dense = [m for m in models.all_models() if not m.is_moe and m.kv_lora_rank is None]
    assert len(dense) >= 5
    for m in dense:
        got = dense_params(m.n_layers, m.d_model, m.d_ff, m.vocab_size, m.n_heads, m.n_kv_heads,
                           m.head_dim, gated=m.gated_mlp, tied=m.tied_embeddings)
        assert got == pytest.approx(m.total_params, rel=5e-4), m.name
        assert got <= m.total_params, m.name  # it only leaves things out


# ----- the tests (after the checks, so that parametrize sees every registered chapter) -----

@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_cell_is_short_plain_and_visible(stem):
    cells = tagged_cells(BOOK / f"{stem}.ipynb")
    assert len(cells) == 1, f"{stem}: exactly one cell is tagged {TAG!r}"
    cell = cells[0]
    source = "".join(cell["source"])
    assert cell["cell_type"] == "code"
    assert len(source.strip().splitlines()) <= MAX_LINES
    assert "llmmath" not in source and "import" not in source, "plain Python: no imports"
    assert not HIDING_TAGS & set(cell["metadata"].get("tags", [])), "the reader must see it"


@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_from_scratch_agrees_with_the_library(stem):
    _, namespace = run_cell(stem)
    CHECKS[stem](namespace)
