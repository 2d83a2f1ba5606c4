"""The rules of thumb of chapter 6 ("Prefill vs decode, and what API prices reveal",
book/prefill_prices.ipynb), asserted over the whole chip and model catalogue.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.
Sources: the episode (dwarkesh2026pope) for the price-step and memory-tier arguments; the
memory-tier figures and API prices are cited in lib/llmmath/cost.py and
_bibparts/prefill_prices.bib.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from claims import DENSE_GQA, each, from_scratch, glued, glued_number

from llmmath import chips, cost, memory, models, prices
from llmmath.cost import chunked_prefill_tokens, input_output_cost
from llmmath.memory import (
    MemoryTier,
    cache_cost,
    cache_hold_cost,
    cheapest_tier,
    memory_tiers,
    tier_crossover,
)
from llmmath.prices import kv_bytes_from_price_step
from llmmath.roofline import critical_batch, critical_context, decode_step, min_chips, prefill_step
from llmmath.units import hour, minute

MODELS = models.all_models()
CHIPS = chips.all_chips()
PAIRS = [(m, c) for m in MODELS for c in CHIPS]
IDS = [f"{m.name}@{c.name}" for m, c in PAIRS]


def _dtype(c):
    """bf16 where the chip has it; Rubin lists only fp4 (then 0.5-byte weights and KV)."""
    return ("bf16", 2) if "bf16" in c.flops else ("fp4", 0.5)


def _kw(m, c, batch=1, context=0):
    dt, b = _dtype(c)
    n = min_chips(m, c, batch=batch, context=context, weight_bytes=b, kv_bytes=b)
    return dict(n_chips=n, weight_bytes=b, kv_bytes=b, dtype=dt)


# Claim: "prefill of a long prompt is compute-bound": a single prompt of the model's full context,
# and any prompt longer than the critical batch (in tokens) by 20%, on every chip.
@each("m,c", PAIRS, ids=IDS)
def test_long_prefill_is_compute_bound(m, c):
    kw = _kw(m, c, context=m.max_context)
    assert prefill_step(m, c, 1, m.max_context, **kw).bound == "compute"
    b_star = critical_batch(m, c, weight_bytes=kw["weight_bytes"], dtype=kw["dtype"])
    p = min(math.ceil(1.2 * b_star), m.max_context)
    assert prefill_step(m, c, 1, p, **kw).bound == "compute", (p, b_star)


# Claim: "a prompt much shorter than the critical batch is memory-bound, like decode".
@each("m,c", PAIRS, ids=IDS)
def test_short_prefill_is_memory_bound(m, c):
    kw = _kw(m, c, context=16)
    b_star = critical_batch(m, c, weight_bytes=kw["weight_bytes"], dtype=kw["dtype"])
    p = max(1, math.floor(0.5 * b_star))
    assert prefill_step(m, c, 1, p, **kw).bound == "memory"


# Claim: "decode at small batch is memory-bound" (batch 1 to 8, any supported context).
@each("m,c", PAIRS, ids=IDS)
def test_small_batch_decode_is_memory_bound(m, c):
    kw = _kw(m, c, batch=8, context=m.max_context)
    S = np.array([128, 2048, m.max_context], dtype=float)
    for b in (1, 2, 4, 8):
        assert np.all(decode_step(m, c, b, S, **kw).bound == "memory")


# Claim: "output tokens cost more than input tokens at every batch below the critical batch, the
# ratio falls as the decode batch grows, and no batch makes output much cheaper than input":
# decode at context 4096 (or the model's maximum), a 2048-token prompt.
@each("m,c", PAIRS, ids=IDS)
def test_output_costs_more_than_input(m, c):
    S, P = min(4096, m.max_context), min(2048, m.max_context)
    kw = _kw(m, c, batch=1024, context=S)
    B = np.array([1, 8, 32, 128, 512, 1024], dtype=float)
    r = np.asarray(input_output_cost(m, c, P, B, S, price_per_chip_hour=1.0, **kw).output_to_input)
    assert np.all(np.diff(r) <= 1e-12), r
    assert np.all(r >= 0.95), r
    below = B[B < 0.95 * critical_batch(m, c, weight_bytes=kw["weight_bytes"], dtype=kw["dtype"])]
    assert below.size >= 3  # batches 1, 8, 32 at least
    assert np.all(r[: below.size] > 1.0), r
    # at batch 1 output costs at least 50x input: a lone decode step reads all weights for one token
    assert r[0] > 50, r[0]


# Claim: "at the critical batch (short context), output costs no more than input: the ratio falls to
# about 1, and below 1 where a long prompt makes prefill pay for quadratic attention".
@each("m,c", PAIRS, ids=IDS)
def test_ratio_at_most_one_at_critical_batch(m, c):
    kw = _kw(m, c, batch=1, context=128)
    try:
        S = min(128.0, 0.5 * critical_context(m, c, kv_bytes=kw["kv_bytes"], dtype=kw["dtype"]))
    # capped reads (DeepSeek-V3.2's sparse attention): no critical context at all
    except ValueError:
        S = 128.0
    b = critical_batch(m, c, weight_bytes=kw["weight_bytes"], dtype=kw["dtype"], context=S,
                       kv_bytes=kw["kv_bytes"])
    P = min(m.max_context, math.ceil(2 * b))  # a prompt long enough for prefill to be compute-bound
    r = input_output_cost(m, c, P, b, S, price_per_chip_hour=1.0, **kw)
    assert r.prefill.bound == "compute"
    assert 0.25 <= r.output_to_input <= 1.1, r.output_to_input


# Claim: the episode's b_kv = N_act / (300 S): 100B active and a 200k crossover give 1,667 bytes.
def test_episode_price_step_number():
    assert kv_bytes_from_price_step(100e9, 200e3, 600) == pytest.approx(1666.67, rel=1e-4)


# Claim (ch6): the 1.5x step at 200k read under both overlaps: "somewhere from about 0.8 to 2.5 kB".
# Whole step: cost max(1, x) = 1.5 -> x = 1.5 -> b = 1.5 x 2e11 / (600 x 2e5) = 2,500 B; per-op:
# 1 + x = 1.5 -> b = 0.5 x 2e11 / 1.2e8 = 833 B (issue 11: "about 0.8 kB rather than 1.6-2.4 kB").
def test_price_step_under_both_overlaps():
    from llmmath.prices import kv_bytes_from_price_ratio
    assert kv_bytes_from_price_ratio(100e9, 200e3, 600, 1.5, "step") == pytest.approx(2500)
    assert kv_bytes_from_price_ratio(100e9, 200e3, 600, 1.5, "per-op") == pytest.approx(
        833.33, rel=1e-4)
    assert kv_bytes_from_price_ratio(100e9, 200e3, 600, 1.0, "step") == pytest.approx(
        1666.67, rel=1e-4)
    with pytest.raises(ValueError, match="price_ratio"):
        kv_bytes_from_price_ratio(100e9, 200e3, 600, 0.9)
    # and the reading matches the bound: a model with those bytes costs 1.5x at 200k under per-op
    # (R = 600 is a chip with C/W = 600; compute 2 N_act / C against KV S b / W per sequence)
    x = 200e3 * 833.33 * 600 / (2 * 100e9)
    assert 1 + x == pytest.approx(1.5, rel=1e-4)


# Claim: "its 300 is multiply-adds per byte: about 600 FLOP per byte, a Blackwell GPU in fp8".
@each("name", ["B200", "GB200", "B300"])
def test_600_flop_per_byte_is_blackwell_fp8(name):
    assert chips.get(name).ops_per_byte("fp8") == pytest.approx(600, rel=0.1)


# kv_bytes_from_price_step is the inverse of critical_context for dense (uncapped) attention.
DENSE_ATTN = [m for m in MODELS if not m.n_sliding_layers and not m.sparse_attention_topk]


@each("m", DENSE_ATTN, ids=[m.name for m in DENSE_ATTN])
@each("c", [c for c in CHIPS if "bf16" in c.flops], ids=lambda c: c.name)
def test_price_step_inverts_critical_context(m, c):
    # the episode's first approximation (no attention FLOPs), which the price-step reading uses
    s = critical_context(m, c, kv_bytes=2, attention_flops=False)
    b = kv_bytes_from_price_step(m.matmul_params_active, s, c.ops_per_byte("bf16"))
    assert b == pytest.approx(m.kv_bytes_per_token(2), rel=1e-9)


# Claim: drain times order the tiers, HBM ~20 ms (10-50 ms on every chip), DRAM about a second,
# flash minutes to tens of minutes, disk about a day (episode: ~20 ms, 1-10 s, ~1 min, ~1 h).
def test_tier_drain_times_ordering():
    d = [t.drain_time for t in memory_tiers()]
    assert [t.name for t in memory_tiers()] == ["HBM", "DRAM", "flash", "disk"]
    assert all(a < b for a, b in zip(d[:-1], d[1:], strict=True))
    hbm, dram, flash, disk = d
    assert 0.1 <= dram <= 10
    assert 1 * minute <= flash <= 1 * hour
    assert 1 * hour <= disk <= 72 * hour


@each("c", CHIPS, ids=lambda c: c.name)
def test_hbm_drain_time_is_tens_of_ms(c):
    assert 0.010 <= c.drain_time <= 0.050


# Claim: "HBM is never the cheapest place for a cache to wait" (every priced chip), and the
# cheapest tier is DRAM for seconds, flash for a 5-minute cache, disk for a day.
@each("c", [c for c in CHIPS if c.price_per_hour], ids=lambda c: c.name)
def test_hbm_never_cheapest(c):
    hbm = MemoryTier.from_chip(c)
    assert tier_crossover(hbm, memory.MEMORY_TIERS["DRAM"]) == 0.0
    T = np.logspace(-3, 6, 50)
    assert not np.any(cheapest_tier(T, [hbm] + memory_tiers()[1:]) == "HBM")


def test_cheapest_tier_by_lifetime():
    assert cheapest_tier(1.0) == "DRAM"
    assert cheapest_tier(5 * minute) == "flash"
    assert cheapest_tier(24 * hour) == "disk"
    # the flash/disk boundary falls near an hour (the episode's 1-hour cache), within a factor of 3
    t = tier_crossover(memory.MEMORY_TIERS["flash"], memory.MEMORY_TIERS["disk"])
    assert hour / 3 <= t <= 3 * hour


def test_cache_cost_is_a_roofline_in_lifetime():
    for t in memory_tiers():
        below = cache_cost(1.0, t.drain_time / 10, t)
        assert below == pytest.approx(cache_cost(1.0, t.drain_time / 100, t))  # flat
        above = cache_cost(1.0, 10 * t.drain_time, t)
        # the episode's formula
        assert above == pytest.approx(cache_hold_cost(1.0, 10 * t.drain_time, t))


# Claim: "holding a prompt's KV in flash for 5 minutes and reading it back costs less than half of
# recomputing it for every model on every priced chip, and a tenth or less for most pairs"
# (prefill of a 4096-token prompt or the model's maximum, lower bound, at the chip's price).
def test_flash_cache_beats_recompute():
    ratios = []
    for m, c in PAIRS:
        if not c.price_per_hour:
            continue
        P = min(4096, m.max_context)
        kw = _kw(m, c, context=P)
        remat = cost.cost_per_token(prefill_step(m, c, 1, P, **kw))
        store = cache_cost(m.kv_bytes_per_token(kw["kv_bytes"]), 5 * minute,
                           memory.MEMORY_TIERS["flash"])
        ratios.append(remat / store)
    ratios = np.array(ratios)
    assert np.all(ratios > 2), ratios.min()
    assert np.mean(ratios >= 10) >= 0.8, np.mean(ratios >= 10)


# Claim: the API price sheets quoted charge 5-6x for output and 0.1x for cached input.
@each("p", prices.PRICE_SHEETS, ids=lambda p: p.model)
def test_price_sheets(p):
    assert 5.0 <= p.output_to_input <= 6.0
    assert p.cached_to_input == pytest.approx(0.1)


# Claim: chunked prefill finds free compute in every memory-bound decode step, none in a
# compute-bound one.
@each("m,c", PAIRS, ids=IDS)
def test_chunked_prefill_room(m, c):
    S = min(4096, m.max_context)
    kw = _kw(m, c, batch=8, context=S)
    assert chunked_prefill_tokens(m, c, 8, S, **kw) > 0
    # per-op overlap frees each kernel's own idle FLOPs: never more than whole-step overlap, and
    # some for every MHA/GQA model (MLA's attention kernel is compute-bound on low-ridge chips)
    per_op = chunked_prefill_tokens(m, c, 8, S, overlap="per-op", **kw)
    assert 0 <= per_op <= chunked_prefill_tokens(m, c, 8, S, **kw) * (1 + 1e-12)
    assert per_op > 0 or m.attention_kind == "MLA"
    b = critical_batch(m, c, weight_bytes=kw["weight_bytes"], dtype=kw["dtype"])
    kw0 = _kw(m, c, batch=2 * b, context=1)
    assert chunked_prefill_tokens(m, c, 2 * b, 0, **kw0) == 0
    assert chunked_prefill_tokens(m, c, 2 * b, 0, overlap="per-op", **kw0) == 0


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    from llmmath.roofline import prefill_step
    for m in DENSE_GQA:
        for P in sorted({512, min(4096, m.max_context), min(8192, m.max_context)}):
            lib = prefill_step(m, chips.get("H100-SXM"), 1, P, n_chips=8).compute_time
            got = ns["prefill_compute_time"](P, m.matmul_params_active, m.n_layers, m.n_heads,
                                             m.head_dim, chips.get("H100-SXM").peak("bf16"),
                                             n_chips=8)
            assert got == pytest.approx(lib, rel=1e-9), (m.name, P)


# ----- the worked numbers, by hand against the glued prose (corrections v2) -------------------

_NB = Path(__file__).resolve().parents[1] / "book" / "prefill_prices.ipynb"
_UNITS = {"ms": 1e-3, "µs": 1e-6, "s": 1.0, "k": 1e3, "B": 1.0, "bytes": 1.0, "GB/s": 1e9, "": 1.0}


def _glued(name):
    return glued(_NB, name)


def _value(name):
    """A glued number in SI: "41.9 ms" -> 0.0419, "64 GB/s" -> 6.4e10, "231" -> 231."""
    return glued_number(_NB, name, _UNITS)[0]


def test_chunked_prefill_free_tokens_under_both_overlaps():
    # Llama 3 70B on 8 H100s (989.4 TFLOP/s, 3.35 TB/s each), batch 64 at 4,096 tokens, bf16.
    # Weights read: 70,553,706,496 parameters less the 128,256 x 8,192 embedding table, plus 64
    # gathered rows; matmul parameters that less the (2 x 80 + 1) x 8,192 norm weights,
    # 69,501,714,432; attention 4 x 80 x 64 x 128 per cached token; KV 327,680 B per token.
    C, W, B, S = 8 * 989.4e12, 8 * 3.35e12, 64, 4096
    n_read = 70_553_706_496 - 128_256 * 8192
    n_mm = n_read - (2 * 80 + 1) * 8192
    t_w = 2 * (n_read + B * 8192) / W
    t_kv = B * S * 327_680 / W
    t_mm = B * 2 * n_mm / C
    t_attn = B * 4 * 80 * 64 * 128 * S / C
    whole = ((t_w + t_kv) / (t_mm + t_attn) - 1) * B   # ~380: every FLOP overlaps every byte
    per_op = (t_w / t_mm - 1) * B                      # ~231: only the matmuls' idle FLOPs
    m, c = models.get("Llama-3-70B"), chips.get("H100-SXM")
    assert chunked_prefill_tokens(m, c, B, S, n_chips=8) == pytest.approx(whole, rel=1e-6)
    assert chunked_prefill_tokens(m, c, B, S, n_chips=8, overlap="per-op") == pytest.approx(
        per_op, rel=1e-6)
    assert _value("chunk64") == pytest.approx(whole, abs=0.5)
    assert _value("chunk64_perop") == pytest.approx(per_op, abs=0.5)
    assert per_op < 0.65 * whole


def test_deepseek_recompute_exercise_runs_on_a_layout_that_fits():
    # Ex. "Why cached input is about 10x cheaper": 16 H100s hold 16 x 80 = 1,280 GB; DeepSeek-V3's
    # bf16 weights are 2 x 671.03e9 = 1,342 GB (do not fit), its fp8 weights 671 GB (fit)
    ds, h100 = models.get("DeepSeek-V3"), chips.get("H100-SXM")
    assert 2 * 671.03e9 > 16 * 80e9 > 671.03e9
    assert not prefill_step(ds, h100, 1, 8192, n_chips=16).fits
    fp8 = prefill_step(ds, h100, 1, 8192, n_chips=16, weight_bytes=1, dtype="fp8")
    assert fp8.fits
    assert _value("ex_remat_ds") == pytest.approx(cost.cost_per_million_tokens(fp8), rel=0.005)


def test_a_host_cache_reaches_a_gpu_at_pcie_rate():
    # H100 datasheet: PCIe Gen5 128 GB/s both ways, 64 GB/s into the GPU. An 8,192-token prefix
    # of Llama 3 70B (8,192 x 327,680 B = 2.684 GB) from 16 DDR5-5200 modules (16 x 41.6 =
    # 665.6 GB/s): 2.684e9 / 64e9 = 41.9 ms into one GPU, 2.684e9 / 512e9 = 5.24 ms into eight
    prefix = 8192 * 327_680
    assert _value("pcie_bw") == pytest.approx(128e9 / 2, rel=1e-9)
    assert _value("fetch_pcie_1") == pytest.approx(prefix / 64e9, rel=0.005)
    assert _value("fetch_pcie_8") == pytest.approx(prefix / (8 * 64e9), rel=0.005)
    assert _value("dram_server_bw") == pytest.approx(16 * 5200e6 * 8, rel=0.005)
    # every off-GPU tier is capped by the link, the GPU's own HBM is not
    for t in memory_tiers():
        assert (t.link_bandwidth is None) == (t.name == "HBM")
        if t.link_bandwidth is not None:
            assert memory.fetch_bandwidth(t, devices=1000) == pytest.approx(64e9)
