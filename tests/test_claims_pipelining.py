"""The rules of thumb of chapter 8 ("Pipelining: capacity across the slow network",
book/pipelining.ipynb), asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources: the episode (dwarkesh2026pope) for t_up/t_out = (1/8) k layers 2 and for
c_mem = N_tot b_w/(E P) + b S b_kv/E, with the replicated weights of data-parallel attention,
N_repl b_w / P, added (issue 31); Huang et al. 2019 and Narayanan et al. 2021
(narayanan2021megatron) for the GPipe/1F1B bubble (p-1)/(m+p-1) and interleaving's 1/v; Qi et al.
2024 (qi2024zerobubble) for ZB-H1's (p-1)(T_F + T_B - T_W). Expected values below are derived by
hand from those formulas, never read off the library.
"""

from __future__ import annotations

import math

import pytest
from claims import each, from_scratch, glued, glued_number

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
    # the export-limited H800 (200 GB/s NVLink over 50 GB/s InfiniBand, philisun_h800 and
    # DeepSeek-V3 Sec. 3.2.2) is 4 times: named apart, as the prose must
    assert chips.get("H800").scale_up_bandwidth / chips.get("H800").scale_out_bandwidth == 4
    ratios = [c.scale_up_bandwidth / c.scale_out_bandwidth for c in GPUS if c.name != "H800"]
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
    # bf16: 17.12e9 x 2 B replicated + 653.9e9 x 2 B / 8 = 197.7 GB per GPU of one stage's weights;
    # room 80 GB - 64 x 4096 x 70,272 B / 8 = 77.70 GB -> ceil(2.54) = 3 stages
    assert pp.stages_to_fit(ds, h100, 64, 4096, 8) == 3
    assert pp.stages_to_fit(ds, h100, 64, 4096, 8, weight_bytes=1) == 2  # 98.9 / 77.7 -> 2
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
    # pipeline_per_chip(n_tot, n_repl, b_w, kv_per_seq, micro_batch, chips_per_stage, stages) and
    # bubble(stages, micro_batches) against llmmath.pipeline over every catalogue model (dense:
    # n_repl = 0; MoE: everything but the routed experts; a sliding-window model's cache enters
    # through kv_per_seq).
    from llmmath.pipeline import bubble_fraction, pipeline_memory
    for m in models.all_models():
        n_repl = (m.total_params - m.n_moe_layers * m.n_experts * m.expert_params
                  if m.is_moe else 0)
        for S in sorted({1024, min(32768, m.max_context)}):
            for P in (1, 2, 4, 16):
                for b_w in (2, 1):
                    lib = pipeline_memory(m, 64, S, 8, P, weight_bytes=b_w).total
                    got = ns["pipeline_per_chip"](m.total_params, n_repl, b_w,
                                                  m.kv_cache_bytes(S), 64, 8, P)
                    assert got == pytest.approx(lib, rel=1e-12), (m.name, S, P, b_w)
    for P in (1, 2, 4, 16, 64):
        for mb in (1, 8, 64, 512):
            assert ns["bubble"](P, mb) == pytest.approx(bubble_fraction(P, mb), rel=1e-12)


# ----- the worked examples, by hand against the glued numbers (corrections v2, issue 31) -------

from pathlib import Path  # noqa: E402

_NB = Path(__file__).resolve().parents[1] / "book" / "pipelining.ipynb"
_UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9,
          "TB": 1e12, "%": 1e-2, "x": 1.0, "×": 1.0, "": 1.0}


def _glued(name):
    return glued(_NB, name)


def _same(name, expected):
    """A glued number equals ``expected`` to the digits it prints (half a unit of the last)."""
    value, rel = glued_number(_NB, name, _UNITS)
    assert expected == pytest.approx(value, rel=rel), (name, _glued(name), expected)


# DeepSeek-V3 [hf_deepseek_v3]: 671,026,419,200 parameters; 58 MoE layers of 256 routed experts of
# 3 x 7168 x 2048; 129,280 x 7168 input embedding; 61 layers of MLA cache, 512 + 64 values (bf16
# 70,272 B a token; FlashMLA's fp8 row 656 B, 40,016 B a token). H100: 1,978.9 TFLOP/s fp8,
# 989.4 bf16, 3.35 TB/s, 80 GB, 50 GB/s scale-out.
_EXP = 3 * 7168 * 2048
_TOT, _ROUTED, _EMB = 671_026_419_200, 58 * 256 * _EXP, 129_280 * 7168
_REPL = _TOT - _ROUTED                               # 17,117,648,384
_NMM = _TOT - 58 * 248 * _EXP - _EMB - (2 * 61 * 7168 + 7168)


def test_eq_8_2_by_hand():
    # N_repl b_w / n_pp + (N_tot - N_repl) b_w / (n_st n_pp) + B_mu S b_kv / n_st, bf16, 4 x 8
    rep, rout, kv = _REPL * 2 / 4, _ROUTED * 2 / 32, 64 * 4096 * 70272 / 8
    _same("mem_rep4", rep)
    _same("mem_w4", rep + rout)                      # 49.4 GB, not 671e9 x 2 / 32 = 41.9 GB
    _same("mem_kv", kv)
    _same("mem_tot4", rep + rout + kv)               # 51.7 GB
    _same("mem_w1", _REPL * 2 + _ROUTED * 2 / 8)
    # the chapter's hand count, from the typed 17.1e9 and 671e9
    _same("hand_rep4", 17.1e9 * 2 / 4)
    _same("hand_rout4", (671e9 - 17.1e9) * 2 / 32)
    _same("hand_w4", 17.1e9 * 2 / 4 + (671e9 - 17.1e9) * 2 / 32)
    assert rep + rout + kv <= 80e9                   # 4 stages fit an H100


def test_eq_8_3_by_hand():
    # t_step: the whole model on one stage's 8 H100s, fp8 weights and fp8 cache, B_mu = 64,
    # S = 4,096, each GPU reading what it holds: the replicated weights less the input
    # embedding, its 8 embedding rows, its 32 expert slots (each reached by any of 64 tokens x 8
    # among 256 with probability 1 - (1 - 8/256)^64), and 8 sequences' caches.
    touched = 1 - (1 - 8 / 256) ** 64
    read = _REPL - _EMB + 8 * 7168 + 32 * 58 * _EXP * touched + 8 * 4096 * 40016
    t_mem = read / 3.35e12
    t_comp = 8 * 2 * _NMM / 1978.9e12 + 8 * 4096 * 61 * 128 * 2 * 1088 / 989.4e12
    assert t_mem > t_comp
    _same("lat_step", t_mem)
    # it is a hypothetical: those 8 GPUs would hold 17.1 GB + 32 x 58 x 44.04 MB + the cache
    held = _REPL + 32 * 58 * _EXP + 8 * 4096 * 40016
    _same("lat_held", held)
    assert held > 80e9 and _glued("lat_fits") == "does not fit"
    # (n_pp - 1) hops of t_lat + 64 x 7168 x 2 B / 50 GB/s, and t_lat for the tokens' return
    hop_bw = 64 * 7168 * 2 / 50e9
    _same("hop_bw", hop_bw)
    for name, lat in (("lat_meas", 77e-6), ("lat_ep", 3e-3)):
        _same(name, t_mem + 3 * (lat + hop_bw) + lat)
    _same("lat_meas_pct", (3 * (77e-6 + hop_bw) + 77e-6) / t_mem)
    _same("ep_20_30", 20e-3 + 3 * 3e-3 + 3e-3)       # the episode's step, hops without bytes
    # the same 32 GPUs as one group in the same layout: 8 slots each, 2 sequences each
    read32 = _REPL - _EMB + 2 * 7168 + 8 * 58 * _EXP * touched + 2 * 4096 * 40016
    _same("lat_wide", read32 / 3.35e12)
    _same("wide_held", _REPL + 8 * 58 * _EXP + 2 * 4096 * 40016)


def test_one_stage_has_no_hops():
    ds, h100 = models.get("DeepSeek-V3"), chips.get("H100-SXM")
    one = pp.pipeline_decode(ds, h100, 64, 4096, 8, 1, hop_latency=1.0)
    assert one.hops == 0 and one.token_latency == one.step.time
    two = pp.pipeline_decode(ds, h100, 64, 4096, 8, 2, hop_latency=1.0)
    assert two.hops == 1 and two.token_latency == pytest.approx(
        two.step.time + (1.0 + 64 * 7168 * 2 / 50e9) + 1.0)


def test_interleaving_divides_the_idle_time_by_v():
    # ((P-1)/v) / (m + (P-1)/v) at P = 16, m = 64, v = 4: 3.75/67.75 = 5.5%, not 15/79/4 = 4.75%
    _same("il64", 3.75 / 67.75)
    _same("b16_64_v4", 15 / 79 / 4)
    _same("il_act", 1 + 15 / 64)                     # Korthikanti et al.: 1 + (p-1)/(p v)


def test_megatron_hfu_and_mfu_by_hand():
    # 163 TFLOP/s of 312: 52.2% in the paper's count 96 B s l h^2 (1 + s/6h + V/16lh), four passes;
    # the model's three: 72 (1 + s/6h) + 6V/(lh), h = 25,600, l = 128, s = 2,048, V = 51,200
    hfu = 163 / 312
    four = 96 * (1 + 2048 / (6 * 25600)) + 6 * 51200 / (128 * 25600)
    three = 72 * (1 + 2048 / (6 * 25600)) + 6 * 51200 / (128 * 25600)
    mfu = hfu * three / four
    _same("meg_hfu", hfu)
    _same("meg_mfu", mfu)                            # 39%
    ceiling = 1 - 63 / (512 + 63)                    # 1F1B bubble, 64 stages, 512 micro-batches
    _same("meg_ceiling", ceiling)
    _same("meg_rest", mfu / ceiling)
    _same("meg_hfu_rest", hfu / ceiling)
    _same("meg_recompute", 1 - three / four)


def test_llama3_mfu_as_computed_and_as_printed():
    _same("l3_mfu16k", 400e12 / 989.4e12)            # 40.4% of the dense bf16 peak
    _same("l3_printed16k", 0.41)                     # Meta's Table 4
    _same("l3_mfu8k", 430e12 / 989.4e12)


def test_dense_layers_per_stage_on_gb200():
    # k = 1 for a dense model: 2 x 1 x L/n_pp x (50/900) >= 1 needs 9 layers on GB200
    _same("l405_min_layers_gb200", math.ceil(900 / 50 / 2))
