"""The rules of thumb of chapter 7 ("Mixture of experts across a rack", book/moe_rack.ipynb),
asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources: the episode (dwarkesh2026pope) for "scale-out is about 8x slower than scale-up", "one rack
bounds the size of an expert layer", "256 experts on 64 of 72 GPUs" and "B* ~ 300 x sparsity";
DeepSeek's inference overview (deepseek2025inference) for its layouts; chip datasheets (each
chip's source) for the bandwidths and capacities.
"""

from __future__ import annotations

import numpy as np
import pytest
from claims import each, from_scratch

from llmmath import chips, models, moe
from llmmath.roofline import critical_batch

CHIPS = chips.all_chips()
MOE = [m for m in models.all_models() if m.is_moe]
NETWORKED = [c for c in CHIPS if c.scale_up_bandwidth and c.scale_out_bandwidth]
GPUS = [c for c in NETWORKED if c.vendor in ("NVIDIA", "AMD")]


# Claim: "leaving the scale-up domain costs about an order of magnitude in bandwidth per chip: 9 to
# 18 times on the catalogue's GPUs, 32 to 96 times on TPUs" (ratios: 450/50, 900/50, ...).
def test_scale_out_is_about_an_order_of_magnitude_slower():
    assert GPUS and len(NETWORKED) > len(GPUS)
    for c in GPUS:
        assert 8 <= moe.scale_up_over_scale_out(c) <= 20, c.name
    for c in NETWORKED:
        assert moe.scale_up_over_scale_out(c) >= 8, c.name


# Claim: "an expert layer does not cross a domain": for every MoE model and every chip with both
# network figures, an EP group of two domains has a slower all-to-all per layer than one domain,
# at every batch the chapter uses (16 to 1,024 tokens per chip).
@each("chip", NETWORKED, ids=lambda c: c.name)
def test_crossing_the_domain_slows_the_all_to_all(chip):
    d = chip.scale_up_domain
    for m in MOE:
        for t in (16, 128, 1024):
            inside = moe.expert_all_to_all(m, t, d, chip).time
            across = moe.expert_all_to_all(m, t, 2 * d, chip).time
            assert across > inside, (m.name, t)


# Claim: "B* is about the ridge times the sparsity": the closed form (C/W)(b_w/2) N_tot/N_act is
# within 12% of the library's exact critical batch for every MoE model on every bf16 chip (the
# exact one counts matmul parameters only and the experts a batch actually touches).
def test_critical_batch_is_ridge_times_sparsity():
    for m in MOE:
        for c in CHIPS:
            if "bf16" not in c.flops:
                continue
            ratio = critical_batch(m, c) / moe.critical_batch_for_sparsity(c, m.sparsity)
            assert 1.0 <= ratio <= 1.12, (m.name, c.name, ratio)


# Claim: "placement needs ceil((E + r)/n) slots per chip; with E + r not a multiple of n, chips
# idle" (the episode's 256 experts on 64 of 72 GPUs), for every MoE model and EP degree.
def test_placement_covers_every_slot():
    for m in MOE:
        for n in (8, 16, 32, 64, 72, 144, 256, 288):
            for r in (0, 32):
                p = moe.expert_placement(m, n, redundant_experts=r)
                assert p.chips_used * p.experts_per_chip >= m.n_experts + r
                assert (p.chips_used - 1) * p.experts_per_chip < m.n_experts + r
                assert p.idle_chips >= 0 and p.chips_used <= n
                if (m.n_experts + r) % n == 0:
                    assert p.idle_chips == 0 and p.spare_slots == 0


# Claim: "more chips make the busiest chip's excess worse, more tokens per chip make it smaller",
# for uniform top-k routing at every k of the catalogue's MoE models.
def test_imbalance_grows_with_chips_and_shrinks_with_tokens():
    ns = np.array([8, 16, 72, 144, 288])
    for k in sorted({m.experts_per_token for m in MOE}):
        for t in (16, 128, 1024):
            f = moe.imbalance_factor(t, ns, k)
            assert np.all(np.diff(f) > 0) and np.all(f > 1)
        g = moe.imbalance_factor(np.array([16, 128, 1024]), 144, k)
        assert np.all(np.diff(g) < 0)


# Claim: "the largest MoE of the catalogue does not fit one 8-GPU H100 or A100 node even in fp8,
# and fits every 72-chip rack with over half its HBM left for the KV cache".
def test_domains_against_the_largest_moe():
    biggest = max(MOE, key=lambda m: m.total_params)
    for c in CHIPS:
        if c.scale_up_domain == 8 and c.hbm_capacity <= 80e9:
            assert biggest.total_params > moe.max_total_params(c, weight_bytes=1), c.name
        if c.scale_up_domain == 72:
            assert biggest.total_params < moe.max_total_params(
                c, weight_bytes=1, kv_fraction=0.5), c.name


# Claim: "the compute-bound cost of a token depends on N_act, not N_tot": two models with the
# same active parameters cost the same at the compute floor, and the bound is linear in N_act.
def test_cost_floor_depends_on_active_only():
    c = chips.get("H100-SXM")
    a = moe.compute_cost_per_million_tokens(37e9, c)
    assert moe.compute_cost_per_million_tokens(74e9, c) == pytest.approx(2 * a)
    for m in MOE:
        n_act = moe.max_active_params(c, moe.compute_cost_per_million_tokens(m.active_params, c))
        assert n_act == pytest.approx(m.active_params)


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # moe_bounds(n_dom, M, C, W, $/h, $/Mtok, sparsity) against llmmath.moe for every chip with a
    # scale-up domain, every dtype it lists, priced chips for the active bound, every MoE sparsity.
    from llmmath import moe
    widths = {"bf16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
    sparsities = sorted({m.sparsity for m in models.all_models() if m.is_moe})
    checked = 0
    for c in chips.all_chips():
        if not c.scale_up_domain:
            continue
        for dtype, peak in c.flops.items():
            b = widths[dtype]
            for s in sparsities:
                n_tot, n_act, b_star = ns["moe_bounds"](c.scale_up_domain, c.hbm_capacity, peak,
                                                        c.hbm_bandwidth, c.price_per_hour or 1.0,
                                                        0.10, s, b_w=b, kv_share=0.3, eff=0.6)
                assert n_tot == pytest.approx(moe.max_total_params(c, weight_bytes=b,
                                                                   kv_fraction=0.3),
                                              rel=1e-12), (c.name, dtype)
                assert n_act == pytest.approx(moe.max_active_params(
                    c, 0.10, dtype=dtype, compute_efficiency=0.6,
                    price_per_chip_hour=c.price_per_hour or 1.0),
                    rel=1e-12), (c.name, dtype)
                assert b_star == pytest.approx(moe.critical_batch_for_sparsity(
                    c, s, weight_bytes=b, dtype=dtype), rel=1e-12), (c.name, dtype, s)
                checked += 1
    assert checked > 50
