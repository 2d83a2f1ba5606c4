"""The rules of thumb of chapter 13 ("Spending memory to save compute",
book/memory_for_compute.ipynb), asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Expected values are derived by hand: a cached byte costs 2 N_mm / b_kv FLOP to rebuild and the time
of C / W FLOP to read; a recompute of the context hides behind the weight read while B (S + 1)
tokens stay below the critical batch, so S_free ~ B*/B - 1; full recomputation adds one forward
pass, 2 N + a on top of 3 (2 N + a), exactly a third (Korthikanti et al. 2022 count the memory);
reversible layers (Gomez et al. 2017) keep two streams of width D at the top, 4 D bytes per token
in bf16, against 2 D L for full recomputation.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from claims import BOOK, each, from_scratch

from llmmath import book, chips, memory, models
from llmmath import tradeoffs as tr
from llmmath.balance import critical_batch
from llmmath.tradeoffs import recompute_crossover

CHIPS = chips.all_chips()
MODELS = models.all_models()
DENSE = [m for m in MODELS if not m.is_moe and not m.n_sliding_layers]
BF16 = [c for c in CHIPS if "bf16" in c.flops]
RIDGE_MAX = max(c.ops_per_byte(d) for c in CHIPS for d in c.flops)
H100 = chips.get("H100-SXM")


# Claim: "every model needs at least ten times the highest ridge point of any catalogue chip, at any
# precision, to rebuild one cached byte": storing always beats recomputing per byte.
@each("m", MODELS, ids=lambda m: m.name)
def test_rebuilding_a_byte_costs_far_more_than_reading_it(m):
    i_rb = 2 * m.matmul_params_active / m.kv_bytes_per_token(2)
    assert tr.recompute_intensity(m) == pytest.approx(i_rb, rel=1e-12)
    assert i_rb > 10 * RIDGE_MAX


# Claim: "quantising the cache to fp8 about doubles I_rb" (exactly, except where part of the
# cache, a sparse-attention indexer's keys, is fp8 already); "fewer KV heads make each byte dearer
# to rebuild".
@each("m", MODELS, ids=lambda m: m.name)
def test_smaller_caches_are_dearer_per_byte(m):
    ratio = tr.recompute_intensity(m, kv_bytes=1) / tr.recompute_intensity(m)
    if not m.has_indexer:  # an fp8 MLA row keeps its bf16 RoPE key and scales: 1,152 / 656 B
        assert ratio == pytest.approx(2 if m.kv_lora_rank is None else 1152 / 656, rel=1e-12)
    assert 1.6 < ratio <= 2
    if m.kv_lora_rank is None and m.n_kv_heads < m.n_heads:
        mha = m.replace(n_kv_heads=m.n_heads)
        assert tr.recompute_intensity(m) > tr.recompute_intensity(mha)


# Claim: "the longest context a step can recompute for free is about B*/B - 1" (dense models, every
# chip with a bf16 peak; the exact solve adds the KV reads and attention, within 10%).
@each("c", BF16, ids=lambda c: c.name)
def test_free_context_is_critical_batch_over_batch_minus_one(c):
    for m in DENSE:
        for batch in (1, 4, 16):
            hand = critical_batch(m, c) / batch - 1
            got = tr.recompute_crossover(m, c, batch=batch)
            if hand > 4:
                assert got == pytest.approx(hand, rel=0.10), (m.name, batch)
            if hand < 0:  # the cached step is already compute-bound: nothing is free
                assert got == 0.0, (m.name, batch)


# Claim: "past S_free the recompute is slower, and the gap grows with the context" (dense models;
# a mixture of experts plateaus first, memory-bound on the experts its recompute touches).
@each("m", MODELS, ids=lambda m: m.name)
def test_recompute_ratio_grows_past_the_free_context(m):
    for batch in (1, 64):
        s_free = tr.recompute_crossover(m, H100, batch=batch, n_chips=8)
        top = m.max_context - 1
        S = np.unique(np.clip(np.geomspace(max(2 * s_free, 16), top, 8).round(), 1, top))
        ratio = tr.store_or_recompute(m, H100, batch, S, n_chips=8).time_ratio
        assert np.all(ratio > 1), (m.name, batch)
        if not m.is_moe:
            assert np.all(np.diff(ratio) > 0), (m.name, batch)
        else:
            assert ratio[-1] > ratio[0], (m.name, batch)


# Claim: "for a mixture of experts at batch 1 nothing is free: the recomputed tokens touch experts
# the cached step never reads" (every MoE model, every chip with a bf16 peak).
@each("m", [m for m in MODELS if m.is_moe], ids=lambda m: m.name)
def test_moe_recompute_is_never_free_at_batch_one(m):
    for c in BF16:
        assert tr.recompute_crossover(m, c, batch=1) < 1, c.name


# Claim: "full recomputation costs exactly a third more FLOPs, whatever the model"; "selective
# recomputation is cheap in FLOPs" (a few per cent, at most about a tenth, at the 8k-token sequences
# of pre-training, where the model allows them) and saves the bytes that grow with S.
@each("m", MODELS, ids=lambda m: m.name)
def test_checkpointing_prices(m):
    S = min(8192, m.max_context)
    full = tr.checkpoint_price(m, S, S, "full")
    assert full.overhead == pytest.approx(1 / 3, rel=1e-12)
    sel = tr.checkpoint_price(m, S, S, "selective")
    assert 0 < sel.overhead < 0.12, m.name
    none = tr.checkpoint_price(m, S, S, "none")
    saving = none.activation_bytes / sel.activation_bytes
    assert saving == pytest.approx((34 * m.d_model + 5 * m.n_heads * S) / (34 * m.d_model),
                                   rel=1e-12)


# Claim: "reversible layers keep 4D bytes per token whatever the depth, L/2 times less than full
# recomputation, at the same FLOP price".
@each("m", MODELS, ids=lambda m: m.name)
def test_reversible_memory(m):
    S = min(4096, m.max_context)
    rev = tr.checkpoint_price(m, S, S, "reversible")
    full = tr.checkpoint_price(m, S, S, "full")
    assert rev.activation_bytes == pytest.approx(4 * m.d_model * S, rel=1e-12)
    assert full.activation_bytes / rev.activation_bytes == pytest.approx(m.n_layers / 2, rel=1e-12)
    assert rev.flops == pytest.approx(full.flops, rel=1e-12)
    deep = tr.checkpoint_price(m.replace(n_layers=2 * m.n_layers), S, S, "reversible")
    assert deep.activation_bytes == rev.activation_bytes


# Claim: "the 5-minute and 1-hour caches on sale belong in DRAM or on flash": for every model with a
# prefix prefilled on H100s, DRAM beats recomputing for longer than 5 minutes and flash for longer
# than an hour; and recomputing beats holding in HBM within an hour.
@each("m", MODELS, ids=lambda m: m.name)
def test_hold_times_by_tier(m):
    prompt = min(8192, m.max_context)
    t = {name: tr.max_hold_time(m, H100, tier, prompt=prompt, n_chips=8)
         for name, tier in memory.MEMORY_TIERS.items()}
    assert t["DRAM"] > 300, (m.name, t)
    assert t["flash"] > 3600, (m.name, t)
    assert t["HBM"] < 3600, (m.name, t)
    assert t["HBM"] < t["DRAM"] < t["flash"] < t["disk"]


# Claim (student34 E7): "for DeepSeek-V3 in fp8 on 8 H200s (its 671 GB of weights do not fit 8
# H100s) S_free is 0 tokens at batch 1 and 0 at batch 64": the configuration fits (671 GB / 8 =
# 84 GB of 141 GB), the 8-H100 one it replaced does not (84 GB of 80 GB), and nothing is free.
def test_the_moe_free_recompute_example_fits_and_is_zero():
    from llmmath.step import decode_step
    ds, h200 = models.get("DeepSeek-V3"), chips.get("H200")
    kw = dict(n_chips=8, weight_bytes=1, dtype="fp8")
    assert decode_step(ds, h200, 64, 4096, **kw).fits
    assert not decode_step(ds, H100, 1, 0, **kw).fits
    for batch in (1, 64):
        assert recompute_crossover(ds, h200, batch=batch, **kw) < 0.5


# Every worked configuration of the chapter and of its summary table fits its chips (Step.fits):
# Llama 3 70B on 8 H100s in bf16 (the cached and recomputed steps at 4k and 8k, batch 1 and 64,
# the 8k prompt prefilled for the hold time); Llama 3.1 405B at 128k tokens, 4 sequences on
# 8 H200s (811 GB of bf16 weights do not fit 8 x 80 GB); DeepSeek-V3's 8k prefix prefilled in
# bf16 on 24 H100s (1.34 TB / 24 = 56 GB each), where a compute-bound prefill costs the same
# chip-seconds per token as on any other count.
def test_the_worked_configurations_fit():
    from llmmath.step import decode_step, prefill_step
    l70, l405, ds = (models.get(n) for n in ("Llama-3-70B", "Llama-3.1-405B", "DeepSeek-V3"))
    h200 = chips.get("H200")
    for batch, ctx in ((1, 4096), (1, 8000), (64, 4096), (1, 0)):
        assert decode_step(l70, H100, batch, ctx, n_chips=8).fits, (batch, ctx)
    assert prefill_step(l70, H100, 1, 8192, n_chips=8).fits
    assert prefill_step(l70, H100, 1, 4097, n_chips=8).fits
    r = tr.store_or_recompute(l405, h200, 4, 131071, n_chips=8)
    assert r.store.fits and r.recompute.fits
    assert not decode_step(l405, H100, 1, 0, n_chips=8).fits
    assert prefill_step(ds, H100, 1, 8192, n_chips=24).fits
    assert not prefill_step(ds, H100, 1, 8192, n_chips=8).fits
    hbm = memory.MEMORY_TIERS["HBM"]
    assert tr.max_hold_time(ds, H100, hbm, n_chips=24) == pytest.approx(
        tr.max_hold_time(ds, H100, hbm, n_chips=8), rel=1e-9)


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # step_store, step_recompute and free_context against llmmath (attention FLOPs off, as the cell
    # leaves them out) over every dense catalogue model without sliding windows, on H100 and B200,
    # at batches 1, 8 and 64.
    from llmmath.roofline import decode_step, prefill_step
    for m in models.all_models():
        if m.is_moe or m.n_sliding_layers:
            continue
        b_kv = m.kv_bytes_per_token(2)
        for c in (chips.get("H100-SXM"), chips.get("B200")):
            peak, bw = c.peak("bf16"), c.hbm_bandwidth
            for batch in (1, 8, 64):
                for ctx in (0, 100, 1000, min(4000, m.max_context - 1)):
                    n_read = m.weight_params_read(batch)
                    got = ns["step_store"](m.matmul_params_active, n_read, 2, b_kv, batch, ctx,
                                           peak, bw)
                    lib = decode_step(m, c, batch, ctx, attention_flops=False).time
                    assert got == pytest.approx(lib, rel=1e-9), (m.name, c.name, batch, ctx)
                    n_read = m.weight_params_read(batch * (ctx + 1))
                    got = ns["step_recompute"](m.matmul_params_active, n_read, 2, b_kv, batch,
                                               ctx, peak, bw)
                    lib = prefill_step(m, c, batch, ctx + 1, attention_flops=False).time
                    assert got == pytest.approx(lib, rel=1e-9), (m.name, c.name, batch, ctx)
                # the library's crossover counts attention's FLOPs too: a few per cent at most
                free = ns["free_context"](m.matmul_params_active, m.weight_params_read(batch), 2,
                                          b_kv, batch, peak, bw)
                lib = recompute_crossover(m, c, batch=batch)
                if free > 1:
                    assert free == pytest.approx(lib, rel=0.05), (m.name, c.name, batch)
                else:
                    assert lib < 1.5, (m.name, c.name, batch)


# The book in one table (issue 36, review N-M10/N-H3): its chapter column is a short link, "Ch. N"
# with N the chapter's place in _toc.yml, and no value prints in e-notation ("3.80e+25").
_E_NOTATION = re.compile(r"\d[eE][+-]?\d")


def summary_table_problems(markdown: str, chapters: list[str]) -> list[str]:
    """What is wrong with the rendered summary table (its MyST markdown), as short strings."""
    rows = [r for r in markdown.splitlines() if r.startswith("|")][2:]  # past header and rule
    problems = [f"e-notation: {r[:70]!r}" for r in rows if _E_NOTATION.search(r)]
    for r in rows:
        m = re.match(r"\| \{doc\}`Ch\.\u00a0(\d+) <(\w+)>` \|", r)
        if not m or chapters.index(m[2]) + 1 != int(m[1]):
            problems.append(f"chapter cell is not 'Ch. N' in book order: {r[:50]!r}")
    return problems if rows else ["no rows"]


def _summary_markdown() -> str:
    cells = json.loads((BOOK / "memory_for_compute.ipynb").read_text(encoding="utf-8"))["cells"]
    (cell,) = [c for c in cells
               if c["cell_type"] == "code" and "summary_bounds(" in "".join(c["source"])]
    (out,) = [o for o in cell["outputs"] if "text/markdown" in o.get("data", {})]
    return "".join(out["data"]["text/markdown"])


def test_the_book_in_one_table_reads_short():
    assert summary_table_problems(_summary_markdown(), book.chapters()) == []


@pytest.mark.parametrize("plant, old, new", [
    ("e-notation", "38 YFLOP", "3.80e+25 FLOP"),
    ("full title", "{doc}`Ch.\u00a0{n} <memory_for_compute>`", "{doc}`memory_for_compute`"),
    ("wrong number", "{doc}`Ch.\u00a0{n} <memory_for_compute>`",
     "{doc}`Ch.\u00a0{n_before} <memory_for_compute>`"),
])
def test_a_planted_long_summary_row_is_found(plant, old, new):
    n = book.chapters().index("memory_for_compute") + 1  # its place in _toc.yml
    old, new = (x.replace("{n}", str(n)).replace("{n_before}", str(n - 1)) for x in (old, new))
    page = _summary_markdown()
    assert old in page, plant
    assert summary_table_problems(page.replace(old, new), book.chapters()), plant
