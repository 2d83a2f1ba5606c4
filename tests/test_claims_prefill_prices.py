"""The rules of thumb of chapter 6 ("Prefill vs decode, and what API prices reveal",
book/prefill_prices.ipynb), asserted over the whole chip and model catalogue.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.
Sources: the episode (dwarkesh2026pope) for the price-step and memory-tier arguments; the
memory-tier figures and API prices are cited in lib/llmmath/cost.py and
_bibparts/prefill_prices.bib.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from claims import DENSE_GQA, each, from_scratch

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
    b = critical_batch(m, c, weight_bytes=kw["weight_bytes"], dtype=kw["dtype"])
    kw0 = _kw(m, c, batch=2 * b, context=1)
    assert chunked_prefill_tokens(m, c, 2 * b, 0, **kw0) == 0


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
