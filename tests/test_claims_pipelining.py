"""The rules of thumb of chapter 8 ("Pipelining, and why it is not wise for serving",
book/pipelining.ipynb), asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources: the episode (dwarkesh2026pope) for t_up/t_out = (1/8) k layers 2 and for
c_mem = N_tot b_w/(E P) + b S b_kv/E; Huang et al. 2019 and Narayanan et al. 2021
(narayanan2021megatron) for the GPipe/1F1B bubble (p-1)/(m+p-1) and interleaving's 1/v; Qi et al.
2024 (qi2024zerobubble) for ZB-H1's (p-1)(T_F + T_B - T_W). Expected values below are derived by
hand from those formulas, never read off the library.
"""

from __future__ import annotations

import math

import pytest
from claims import each, from_scratch

from llmmath import chips, models
from llmmath import pipeline as pp

CHIPS = chips.all_chips()
MODELS = models.all_models()
GPUS = [c for c in CHIPS if c.vendor != "Google" and c.scale_up_bandwidth and c.scale_out_bandwidth]
STAGES = [1, 2, 4, 8, 16]


def _ctx(model, s):
    return min(s, model.max_context or s)


# Claim: "the catalogue's GPUs carry 9 to 18 times more per GPU over scale-up than over scale-out".
@pytest.mark.whole_catalogue
def test_gpu_scale_up_over_scale_out_is_9_to_18():
    ratios = [c.scale_up_bandwidth / c.scale_out_bandwidth for c in GPUS]
    assert len(ratios) >= 8
    assert round(min(ratios)) == 9 and round(max(ratios)) == 18


# Claim: "for every MoE model routing >= 4 experts and every GPU, 3 layers per stage or fewer keep
# the rack boundary off the critical path" (2 k L W_out/W_up >= 1 with W_up/W_out <= 18.1:
# L >= 18.1/8).
@each("model", [m for m in MODELS if (m.experts_per_token or 0) >= 4],
                         ids=lambda m: m.name)
@each("chip", GPUS, ids=lambda c: c.name)
def test_few_layers_per_stage_suffice_for_moe(model, chip):
    need = pp.min_layers_per_stage(model, chip)
    assert need <= 3
    assert pp.boundary_ratio(model, chip, need) >= 1.0
    if need > 1:
        assert pp.boundary_ratio(model, chip, need - 1) < 1.0
    # the episode's 1/8: k >= 4 and 1 layer give 2 x 4 / 8 = 1
    assert 2 * model.experts_per_token * 1 / 8 >= 1


# Claim: "weights per chip fall as 1/n_pp; the KV cache per chip does not change with n_pp"
# (m = n_pp micro-batches in flight), for every model, short and long context.
@each("model", MODELS, ids=lambda m: m.name)
@each("context", [4096, 131072])
def test_weights_divide_cache_does_not(model, context):
    S = _ctx(model, context)
    one = pp.pipeline_memory(model, 16, S, 8, 1)
    for P in STAGES:
        mem = pp.pipeline_memory(model, 16, S, 8, P)
        assert mem.weights == pytest.approx(one.weights / P, rel=1e-12)
        assert mem.kv == pytest.approx(16 * model.kv_cache_bytes(S) / 8, rel=1e-12)
        assert mem.batch_in_flight == 16 * P


# Claim: "stages_to_fit is the fewest stages that fit, and infinite exactly when one micro-batch's
# cache share B_mu S b_kv / n_st fills the chip" (every model, every chip).
@each("model", MODELS, ids=lambda m: m.name)
@each("chip", CHIPS, ids=lambda c: c.name)
def test_stages_to_fit_is_the_fewest_that_fit(model, chip):
    S = _ctx(model, 32768)
    for b in (1, 16, 64):
        P = pp.stages_to_fit(model, chip, b, S, 8)
        share = b * model.kv_cache_bytes(S) / 8
        if share >= chip.hbm_capacity:
            assert P == math.inf
            continue
        assert P >= 1 and P == int(P)
        assert pp.pipeline_memory(model, b, S, 8, P).total <= chip.hbm_capacity * (1 + 1e-12)
        if P > 1:
            assert pp.pipeline_memory(model, b, S, 8, P - 1).total > chip.hbm_capacity


# Claim: "a pipeline never makes a token faster than its n_st chips would, and never matches the
# same n_st n_pp chips in one group; with free hops and m = n_pp its throughput per chip equals an
# n_st-chip replica's" (every model, every chip with a scale-out figure).
@each("model", MODELS, ids=lambda m: m.name)
@each("chip", [c for c in CHIPS if c.scale_out_bandwidth], ids=lambda c: c.name)
def test_latency_neutral_at_best(model, chip):
    dt, _ = chip.resolve_dtype("bf16")
    S = _ctx(model, 4096)
    base = pp.stage_group_step(model, chip, 64, S, 8, dtype=dt)  # the layout's own step
    for P in (2, 4, 8):
        d = pp.pipeline_decode(model, chip, 64, S, 8, P, hop_latency=77e-6, dtype=dt)
        assert d.token_latency > base.time
        group = pp.stage_group_step(model, chip, 64, S, 8 * P, dtype=dt)
        assert d.token_latency > group.time
        free = pp.pipeline_decode(model, chip, 64, S, 8, P, dtype=dt, scale_out_bandwidth=1e30)
        assert free.throughput_per_chip == pytest.approx(64 / base.time / 8, rel=1e-9)


# Claim: "under 10% bubble needs m >= 9 (n_pp - 1)" (GPipe, 1F1B): (P-1)(1-0.1)/0.1 = 9 (P-1).
@each("P", [2, 3, 4, 8, 16, 32, 64, 128])
def test_ten_percent_bubble_needs_nine_per_stage(P):
    assert pp.micro_batches_for_bubble(P, 0.10) == 9 * (P - 1)
    assert pp.bubble_fraction(P, 9 * (P - 1)) == pytest.approx(0.10)


# Claims: "interleaving divides the bubble by v; ZB-H1 cuts it to a third at equal times".
@each("P", [2, 4, 8, 16, 64])
@each("m", [1, 8, 64, 512])
def test_interleaving_and_zero_bubble(P, m):
    for v in (2, 4):
        f = pp.bubble_fraction(P, m, "interleaved", virtual_stages=v)
        assert f == pytest.approx((P - 1) / (v * m + P - 1))  # idle time (P-1)/v per unit of work
    zb = pp.bubble_fraction(P, m, "zb-h1")
    assert zb == pytest.approx((P - 1) / (3 * m + P - 1))              # bubble (P-1)(1+1-1) vs 3m
    assert zb < pp.bubble_fraction(P, m, "1f1b") or P == 1
    assert pp.bubble_fraction(P, m, "zb-h2") == 0.0


# The chapter's worked examples (specific claims of its prose and takeaways).
def test_chapter_examples():
    ds, h100, gb200 = models.get("DeepSeek-V3"), chips.get("H100-SXM"), chips.get("GB200")
    # bf16: 1.342 TB of weights; room per 8-GPU stage 640 GB - 64 x 4096 x 70,272 B = 621.6 GB -> 3
    assert pp.stages_to_fit(ds, h100, 64, 4096, 8) == 3
    assert pp.stages_to_fit(ds, h100, 64, 4096, 8, weight_bytes=1) == 2  # 671 GB / 621.6 GB -> 2
    assert pp.stages_to_fit(ds, gb200, 64, 4096, 72) == 1
    l405 = models.get("Llama-3.1-405B")
    # 16 x 131,072 x 516,096 B / 8 = 135 GB > 80 GB: no number of stages
    assert pp.stages_to_fit(l405, h100, 16, 131072, 8) == math.inf
    # GPipe/1F1B at 16 stages: 15/31, 15/79, 15/271
    assert pp.bubble_fraction(16, 16) == pytest.approx(15 / 31)
    assert pp.bubble_fraction(16, 64) == pytest.approx(15 / 79)
    assert pp.bubble_fraction(16, 256) == pytest.approx(15 / 271)


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # pipeline_per_chip(n_tot, b_w, kv_per_seq, micro_batch, chips_per_stage, stages) and
    # bubble(stages, micro_batches) against llmmath.pipeline over every catalogue model
    # (dense and MoE; a sliding-window model's cache enters through kv_per_seq).
    from llmmath.pipeline import bubble_fraction, pipeline_memory
    for m in models.all_models():
        for S in sorted({1024, min(32768, m.max_context)}):
            for P in (1, 2, 4, 16):
                for b_w in (2, 1):
                    lib = pipeline_memory(m, 64, S, 8, P, weight_bytes=b_w).total
                    got = ns["pipeline_per_chip"](m.total_params, b_w, m.kv_cache_bytes(S), 64,
                                                  8, P)
                    assert got == pytest.approx(lib, rel=1e-12), (m.name, S, P, b_w)
    for P in (1, 2, 4, 16, 64):
        for mb in (1, 8, 64, 512):
            assert ns["bubble"](P, mb) == pytest.approx(bubble_fraction(P, mb), rel=1e-12)
