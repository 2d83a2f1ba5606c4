"""The rules of thumb of chapter 10 ("From bound to estimate", book/bound_to_estimate.ipynb),
asserted over the whole chip and model catalogues and over the calibration set.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources of the expected values (worked by hand here, never read off the library): DeepGEMM's
M = 64 shapes stream FP8 weights at a median 2,250 of the H800's 3,350 GB/s
(deepseek_deepgemm), so a weight read takes 3,350 / 2,250 - 1 = 48.9% longer; FlashMLA reads
the KV cache at 3,000 of 3,350 GB/s (deepseek_flashmla); the wgmma tile has 64 rows
(nvidia_ptx_wgmma); a small NVLink SHARP all-reduce takes about 6 us in 2 steps
(nccl_nvls_latency) and a ring step 33.7 / 14 us (nccl_tests_latency); a kernel launch costs
2.65 us, 1.3 us as a CUDA-graph node (ocannl_launch_probe, hazy2025nobubbles); 9 kernels per
dense layer, 4 more per MoE layer, 9 more per MLA layer (vllm_llama_py, sglang_deepseek_v2_py).
The calibration claims hold the published rows (llmmath/data/measured_latency.csv) to what the
chapter says of them, scored with a symmetric band (measured/estimate within a factor of 1.3) and
beside the fair baseline (the bound times one constant per kind, leave one publisher out).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from claims import BF16_CHIPS, DENSE_GQA, each, from_scratch

from llmmath import chips, models
from llmmath.estimate import (
    DEFAULT_OVERHEADS,
    calibration_rows,
    calibration_score,
    estimate_step,
)

CHIPS = chips.all_chips()
MODELS = models.all_models()
DENSE = [m for m in MODELS if not m.is_moe]
BYTES = {"bf16": 2, "fp8": 1, "fp4": 0.5, "int8": 1}
ROWS = calibration_rows()

W_EXTRA = 3350 / 2250 - 1          # 0.4889: weights at DeepGEMM's small-M rate
T_LAT = 3e-6                       # one NVLink SHARP step
T_RING = 33.7e-6 / 14              # one NCCL ring step over NVLink
T_LAUNCH, T_GRAPH = 2.65e-6, 1.3e-6


def _ctx(m, s):
    return min(s, m.max_context - 1)


def _dt(c):
    """bf16, or the chip's own format where it has no bf16 peak (Rubin lists only fp4)."""
    return c.resolve_dtype("bf16")[0]


def test_the_estimate_is_never_below_the_bound_anywhere():
    # "each term zero or positive, so it can never fall below the bound": every model, chip,
    # phase, batch, chip count (and an expert-parallel split for MoE models)
    for m in MODELS:
        for c in CHIPS:
            n_list = (1, 8) if c.scale_up_bandwidth else (1,)
            for n in n_list:
                for phase in ("decode", "prefill"):
                    for B in (1, 8, 256):
                        ep = 8 if (m.is_moe and n == 8) else 1
                        e = estimate_step(m, c, B, _ctx(m, 2048), n_chips=n, phase=phase,
                                          expert_parallel=ep, dtype=_dt(c))
                        assert e.time >= e.bound.time, (m.name, c.name, n, phase, B)
                        assert all(v >= 0 for v in e.terms.values()), (m.name, c.name)


def test_kernel_efficiency_adds_half_the_weight_read_at_batch_1():
    # "a memory-bound decode step pays t_w (1/eta_w - 1) more for its weights, 49%": at batch 1
    # and a short context the kernel term is the weight read's 48.9% plus the KV read's 11.7%
    # of a few per cent; hold it to 48.9% of the weight time within 3 points, every model and
    # chip
    for m in MODELS:
        for c in CHIPS:
            e = estimate_step(m, c, 1, _ctx(m, 128), dtype=_dt(c))
            ratio = e.kernel_time / e.bound.weight_time
            assert W_EXTRA - 0.005 <= ratio <= W_EXTRA + 0.03, (m.name, c.name, ratio)


@each("chip", CHIPS, ids=lambda c: c.name)
def test_tile_padding_is_free_in_decode_up_to_batch_64(chip):
    # "the padded matmul hides under its own weight read at every decode batch up to 64":
    # 64 padded rows do 128 FLOP per weight; with arithmetic at eta_mm (>= 0.68) of C and weights
    # at 2,250/3,350 of W the ratio 128 eta_w W / (eta_mm C b_w) stays below 1 on every chip and
    # format, so computing 64 rows or exactly B rows gives the same estimate
    exact = dataclasses.replace(DEFAULT_OVERHEADS, tile_m=1)
    for dtype in chip.flops:
        b = BYTES[dtype]
        for m in DENSE:
            for B in (1, 8, 64):
                kw = dict(weight_bytes=b, kv_bytes=b, dtype=dtype)
                padded = estimate_step(m, chip, B, _ctx(m, 1024), **kw)
                unpadded = estimate_step(m, chip, B, _ctx(m, 1024), overheads=exact, **kw)
                assert padded.time == pytest.approx(unpadded.time, rel=1e-12), (m.name, dtype, B)


def test_fixed_costs_are_kernels_times_launch():
    # "9 kernels per layer at 2.65 us each is 1.91 ms per step for an 80-layer model (0.94 ms
    # with CUDA graphs)": 80 x 9 x 2.65 us = 1.908 ms; x 1.3 us = 0.936 ms. MoE layers add 4,
    # latent attention 9 per layer; the cost is the same at every batch.
    assert 80 * 9 * T_LAUNCH == pytest.approx(1.908e-3)
    assert 80 * 9 * T_GRAPH == pytest.approx(0.936e-3)
    graph = dataclasses.replace(DEFAULT_OVERHEADS, kernel_overhead=T_GRAPH)
    for m in MODELS:
        kernels = 9 * m.n_layers + (4 * m.n_moe_layers if m.is_moe else 0)
        kernels += 9 * m.n_layers if m.kv_lora_rank is not None else 0
        for B in (1, 512):
            e = estimate_step(m, chips.get("H100-SXM"), B, _ctx(m, 1024))
            assert e.layer_overhead_time == pytest.approx(kernels * T_LAUNCH, rel=1e-12), m.name
            g = estimate_step(m, chips.get("H100-SXM"), B, _ctx(m, 1024), overheads=graph)
            assert g.layer_overhead_time == pytest.approx(kernels * T_GRAPH, rel=1e-12), m.name


def test_all_reduces_at_batch_1_are_their_latency():
    # "at batch 1 their bytes are nothing and their latency is everything": on 8 chips of a
    # switch (NVIDIA) 2 steps of 3 us per all-reduce, on a ring (the others) 2 x 7 steps of
    # 2.41 us; n_ar all-reduces per layer (2, or 1 for a parallel block). The bytes (D x 2 per
    # token) add under 5% on links of 400 GB/s or more each way; on the H800's 200 GB/s under
    # 10%: MT-NLG's 40,960 B all-reduce, 2 x 7/8 x 40,960 B at 200 GB/s x 370/450 (NCCL's bus
    # efficiency) = 0.436 us on 6 us of latency, 7.3%.
    for c in CHIPS:
        if not c.scale_up_bandwidth:
            continue
        per = 2 * T_LAT if c.vendor == "NVIDIA" else 14 * T_RING
        bytes_share = 0.05 if c.scale_up_bandwidth >= 400e9 else 0.10
        for m in DENSE:
            n_ar = 1 if m.parallel_block else 2
            e = estimate_step(m, c, 1, _ctx(m, 1024), n_chips=8, dtype=_dt(c))
            hand = m.n_layers * n_ar * per
            assert hand <= e.tp_comm_time <= (1 + bytes_share) * hand, (m.name, c.name)


def test_the_estimate_can_reorder_chips_the_bound_ranks():
    # "the bound says eight MI300X serve Llama 3 70B at batch 1 faster than eight H100s; the
    # estimate, with 14 ring steps per all-reduce, says the opposite". By hand: MI300X's
    # 5.3 TB/s against the H100's 3.35 puts its bound ahead; 160 all-reduces x 14 x 2.41 us =
    # 5.4 ms of ring latency against 160 x 6 us = 0.96 ms puts its estimate behind.
    llama, h100, mi = models.get("Llama-3-70B"), chips.get("H100-SXM"), chips.get("MI300X")
    a, b = estimate_step(llama, h100, 1, 4096, n_chips=8), estimate_step(llama, mi, 1, 4096,
                                                                          n_chips=8)
    assert b.bound.time < a.bound.time and b.time > a.time
    assert b.tp_comm_time == pytest.approx(160 * 14 * T_RING, rel=0.05)


# ----- the calibration set ----------------------------------------------------------------------

def _ratio(r):
    return r["measured_s"] / r["estimate_s"]


def _inside(x):
    """Within a factor of 1.3 either way (the chapter's symmetric band)."""
    return 1 / 1.3 <= x <= 1.3


SCORE = calibration_score()
HELD = calibration_score(split="test")


def test_the_bound_is_below_every_published_measurement():
    # a lower bound must be: measured / bound >= 1 on every row
    assert all(r["measured_s"] > r["bound_s"] for r in ROWS)


def test_the_estimate_beats_the_fair_baseline_overall_and_held_out():
    # "the estimate beats the fair baseline over the whole set ... and on the held-out sources
    # alone": more rows within 1.3x and a smaller geometric-mean error, in both
    for sc in (SCORE, HELD):
        est, base = sc[("all", "all")]["estimate"], sc[("all", "all")]["baseline"]
        assert est.within > base.within and est.gm_error < base.gm_error
    # and the bound alone is within on almost nothing
    assert SCORE[("all", "all")]["bound"].share < 0.05


def test_good_for_decode_weak_for_prefill():
    # "decode steps are where it is good"; prefill "mostly short", below the 80% target, but
    # (since the elementwise kernels and the measured all-reduce, issue 32) ahead of the scaled
    # bound: 18 of 29 within against its 11
    dec, pre = SCORE[("decode", "all")], SCORE[("prefill", "all")]
    assert dec["estimate"].share > 0.6 and dec["estimate"].gm_error < 1.3
    assert dec["estimate"].share > dec["baseline"].share
    assert pre["estimate"].share < 0.8 and pre["estimate"].median_ratio > 1.1
    assert pre["estimate"].within > pre["baseline"].within
    assert pre["estimate"].gm_error < pre["baseline"].gm_error
    short = [r for r in ROWS if r["phase"] == "prefill" and _ratio(r) > 1]
    assert len(short) > 0.5 * sum(r["phase"] == "prefill" for r in ROWS)


def test_moe_error_below_the_baseline_and_targets_not_met():
    # "MoE rows ... whose error is still well below the baseline's"; "the targets this chapter
    # set itself, four in five rows within in each phase and kind, are not met"
    moe = SCORE[("all", "moe")]
    assert moe["estimate"].gm_error < moe["baseline"].gm_error
    groups = [v["estimate"].share for (phase, kind), v in SCORE.items()
              if phase in ("decode", "prefill") and kind in ("dense", "moe")]
    assert min(groups) < 0.8


def test_the_residual_groups_are_as_the_chapter_says():
    def rows(**kw):
        return [r for r in ROWS if all(r[k] == v for k, v in kw.items())]

    # TensorRT-LLM's first-token latencies on H100 are all long, the most at 128 tokens
    trt = [r for r in rows(phase="prefill", chip="H100-SXM", kind="dense")
           if r["source"].startswith("nvidia_trtllm_perf")]
    assert trt and all(_ratio(r) > 1.0 for r in trt)
    assert max(trt, key=_ratio)["input_tokens"] == 128
    # LLM-Inference-Bench's MI300X first tokens are many times the estimate; AMD's own table
    # for the same chip lands near it
    mi = rows(source="chitty2024llminferencebench", chip="MI300X", phase="prefill")
    assert mi and all(_ratio(r) > 5 for r in mi)
    amd = rows(source="rocm_vllm_devdocker_mi300x")
    assert _inside(np.median([_ratio(r) for r in amd]))
    # SGLang 0.4.1's DeepSeek-V3 rows are all above the band; vLLM's nightly
    # Mixtral rows are within the band: the gap follows the engine
    assert all(_ratio(r) > 1.3 for r in rows(source="sglang_v041post2_dsv3"))
    vl = rows(source="vllm_nightly_latency", catalogue_model="Mixtral-8x7B")
    assert len(vl) == 2 and all(_inside(_ratio(r)) for r in vl)
    # estimates above the measurement: Pope et al.'s TPU decode and vLLM PR 3240's tuned Mixtral
    assert min(_ratio(r) for r in rows(source="pope2022efficiently", phase="decode")) < 1 / 1.3
    assert min(_ratio(r) for r in rows(source="vllm_pr3240_a100_tp2")) < 1 / 1.3


def test_a_calibrated_floor_not_a_strict_bound():
    # some rows ran faster than the estimate by more than the band, and they are the ones the
    # chapter names (a ring on a torus, a kernel rate from another GPU) or engines beyond them
    fast = [r for r in ROWS if _ratio(r) < 1 / 1.3]
    assert fast
    assert {r["source"] for r in fast} & {"pope2022efficiently", "vllm_pr3240_a100_tp2"}


def test_the_mi300x_reversal_rests_on_the_ring():
    # "were the mesh to all-reduce in two steps like a switch, the H100s would no longer be
    # faster": the reversal is the ring's 14 steps, not the chips
    from llmmath.estimate import Overheads

    llama, h100, mi = models.get("Llama-3-70B"), chips.get("H100-SXM"), chips.get("MI300X")
    a = estimate_step(llama, h100, 1, 4096, n_chips=8)
    b = estimate_step(llama, mi, 1, 4096, n_chips=8, overheads=Overheads(topology="switch"))
    assert b.time < a.time


def test_the_worked_configurations_fit():
    # the chapter's worked steps hold their weights and caches (Step.fits): the NIM step (Llama 3
    # 70B in fp8 on 2 H100s), Llama 3 70B on 8 H100s and on 8 MI300X in bf16, DeepSeek-V3 in fp8
    # on 8 H200s at batch 8 and 32 (671 GB / 8 = 84 GB of 141 GB each)
    from llmmath.step import decode_step
    llama, ds = models.get("Llama-3-70B"), models.get("DeepSeek-V3")
    h100, h200, mi = chips.get("H100-SXM"), chips.get("H200"), chips.get("MI300X")
    assert decode_step(llama, h100, 1, 1500, n_chips=2, weight_bytes=1, kv_bytes=1,
                       dtype="fp8").fits
    for c in (h100, mi):
        assert decode_step(llama, c, 64, 4096, n_chips=8).fits, c.name
    for batch in (8, 32):
        assert decode_step(ds, h200, batch, 4096, n_chips=8, weight_bytes=1, kv_bytes=1,
                           dtype="fp8").fits


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # estimate(t_mm, t_w, t_attn, t_kv, tokens, layers, n, d_model, link_bw, ar_per_layer):
    # (bound, estimate) of a dense decode step from the per-operation bound's four times, against
    # estimate_step for every dense MHA/GQA model of the catalogue on every NVIDIA chip (a switch:
    # the cell's 2-step all-reduce) in bf16, one chip and eight, small and large batches. The
    # cell writes the cited fractions as the sources print them (740/989.4, 3,000/3,350,
    # 2,250/3,350); the library derives the last from DeepGEMM's six shapes: hold to 1e-6.
    from llmmath.estimate import LINK_EFFICIENCY, estimate_step
    from llmmath.roofline import decode_step
    fn = ns["estimate"]
    nvidia = [c for c in BF16_CHIPS if c.vendor == "NVIDIA" and c.scale_up_bandwidth]
    assert len(nvidia) >= 3
    for m in DENSE_GQA:
        for c in nvidia:
            for n in (1, 8):
                for B, S in ((1, 1024), (8, 4096), (200, 2048)):
                    S = min(S, m.max_context - 1)
                    s = decode_step(m, c, B, S, n_chips=n, overlap="per-op")
                    lib = estimate_step(m, c, B, S, n_chips=n)
                    bound, est = fn(s.matmul_time, s.weight_time, s.attention_time, s.kv_time,
                                    B, m.n_layers, n, m.d_model,
                                    c.scale_up_bandwidth * LINK_EFFICIENCY,
                                    ar_per_layer=1 if m.parallel_block else 2)
                    assert bound == pytest.approx(lib.bound.time, rel=1e-12), (m.name, c.name)
                    assert est == pytest.approx(lib.time, rel=1e-6), (m.name, c.name, n, B)
