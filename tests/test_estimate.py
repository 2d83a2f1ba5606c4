"""From bound to estimate (issue 17): ``llmmath.estimate`` term by term, and the calibration set.

Unit tests use a toy chip and toy models with round numbers; every expected value is worked by
hand in the comment beside it (parameter counts from the architecture, times from the formulas
of the module docstring), never read off the code. The calibration tests read
``llmmath/data/measured_latency.csv`` (published measurements, each row with its source)
and check the held-out half: the coefficients are the cited constants, not fitted to any row.
"""

import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from llmmath import _calibration, chips, models
from llmmath.chips import Chip
from llmmath.estimate import (
    DEFAULT_OVERHEADS,
    GRAPH_NODE_OVERHEAD,
    HOP_LATENCY,
    KERNEL_OVERHEAD,
    KERNELS_PER_LAYER,
    MLA_EXTRA_KERNELS,
    MOE_EXTRA_KERNELS,
    RING_HOP_LATENCY,
    SGLANG_STEP_OVERHEAD,
    STEP_OVERHEAD,
    VLLM_KERNELS_PER_LAYER,
    Overheads,
    estimate_step,
    padded_rows,
)
from llmmath.kernel_rates import (
    CONTEXT_ATTENTION_EFFICIENCY,
    CUTLASS_MOE_TFLOPS,
    DEEPGEMM_SMALL_M_TFLOPS,
    FP8_GEMM_MEMORY_EFFICIENCY,
    GEMM_EFFICIENCY_BY_ROWS,
    GEMM_MEMORY_EFFICIENCY,
    GROUPED_GEMM_EFFICIENCY,
    GROUPED_GEMM_MEMORY_EFFICIENCY,
    GROUPED_MATMUL_DERATE,
    MATMUL_EFFICIENCY,
    MEMORY_EFFICIENCY,
    MLA_ATTENTION_EFFICIENCY,
    TILE_M,
    TRITON_FUSED_MOE_TFLOPS,
)
from llmmath.models import Model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import merge_calibration  # noqa: E402  (a script, not a package)

# A chip with round numbers: 1 PFLOP/s bf16, 1 TB/s HBM, 100 GB/s per link direction.
TOY_CHIP = Chip(name="toy chip", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=1e12,
                scale_up_bandwidth=1e11, scale_up_domain=8)
# Dense toy: 2 layers, D 1024, gated MLP F 4096, 8 heads of 128 (MHA), tied vocabulary 32000.
# Per layer: attention 4 D^2 = 4,194,304; MLP 3 D F = 12,582,912; together 16,777,216.
# Two layers 33,554,432; tied embedding (also the LM head) 32000 x 1024 = 32,768,000;
# norms 2 D per layer + D = 5,120. Total 66,327,552; multiplied per token (no gather, no norms)
# 33,554,432 + 32,768,000 = 66,322,432.
TOY = Model(name="toy", n_layers=2, d_model=1024, d_ff=4096, n_heads=8, vocab_size=32000,
            tied_embeddings=True)
# Round coefficients, so every term is easy to work by hand: every bandwidth at half, the
# experts' arithmetic at the dense rate, no extra kernels for MoE or MLA layers.
ROUND = Overheads(matmul_efficiency=0.5, attention_efficiency=0.5, memory_efficiency=0.5,
                  gemm_memory_efficiency=0.5, grouped_memory_efficiency=0.5,
                  grouped_matmul_derate=1.0, mla_attention_efficiency=0.5,
                  tile_m=64, link_efficiency=1.0, topology="switch", hop_latency=1e-6,
                  kernels_per_layer=10, moe_extra_kernels=0, mla_extra_kernels=0,
                  kernel_overhead=1e-6, step_overhead=1e-3)


def test_toy_counts_are_the_hand_counts():
    assert TOY.total_params == 66_327_552
    assert TOY.matmul_params_active == 66_322_432


# ----- each constant is its cited measurement ---------------------------------------------------

def test_constants_are_the_cited_figures():
    assert TILE_M == 64                                   # wgmma m64nNk16
    assert MATMUL_EFFICIENCY["fp8"] == pytest.approx(1350 / 1978.9)   # DeepGEMM on H800
    assert MATMUL_EFFICIENCY["bf16"] == pytest.approx(740 / 989.4)    # FlashAttention-3 bf16
    assert MEMORY_EFFICIENCY == pytest.approx(3000 / 3350)            # FlashMLA 3,000 GB/s
    assert HOP_LATENCY == pytest.approx(3e-6)             # NVLS all-reduce 6 us in 2 steps
    assert RING_HOP_LATENCY == pytest.approx(33.7e-6 / 14)  # NCCL ring, 8 A100s: 2 x 7 steps
    assert SGLANG_STEP_OVERHEAD == pytest.approx(2e-3)    # SGLang's bubble per decode step
    assert GRAPH_NODE_OVERHEAD == pytest.approx(1.3e-6)   # per kernel under CUDA graphs, H100
    assert KERNELS_PER_LAYER == 9 and KERNEL_OVERHEAD == pytest.approx(2.65e-6)
    assert STEP_OVERHEAD == 0.0
    # DeepGEMM's six M = 64 dense shapes on an H800, weights streamed at TFLOP/s / (2 x 64):
    # 206, 289, 219, 336, 287, 295 TFLOP/s -> 1,609.4, 2,257.8, 1,710.9, 2,625.0, 2,242.2,
    # 2,304.7 GB/s; sorted, the 3rd and 4th are 2,242.19 and 2,257.81: median 2,250 GB/s of 3,350
    assert [m for m, _ in DEEPGEMM_SMALL_M_TFLOPS] == [64] * 6
    assert GEMM_MEMORY_EFFICIENCY == pytest.approx(2250e9 / 3350e9)
    # the experts' weights stream at the same rate (no memory-bound grouped measurement)
    assert GROUPED_GEMM_MEMORY_EFFICIENCY == GEMM_MEMORY_EFFICIENCY
    # contiguous grouped GEMMs 1,297 / 1,099 / 1,288 / 1,093 TFLOP/s: median (1,099 + 1,288) / 2
    # = 1,193.5, over the best dense shape's 1,358
    assert GROUPED_MATMUL_DERATE == pytest.approx(1193.5 / 1358)
    assert MLA_ATTENTION_EFFICIENCY == pytest.approx(660 / 989.4)   # FlashMLA, compute-bound
    # SGLang's MoE layer: router, top-k, align, GEMM 1, activation, GEMM 2, sum = 7 against a
    # dense MLP's 3; its absorbed MLA: 12 kernels against MHA's 3
    assert VLLM_KERNELS_PER_LAYER == 10   # vLLM's Llama layer, no tensor parallelism
    assert MOE_EXTRA_KERNELS == 7 - 3
    assert MLA_EXTRA_KERNELS == 12 - 3
    # aiconfigurator's moe_perf medians at 16,384 tokens (Triton fused-MoE of vLLM 0.14.0 and
    # SGLang 0.5.9; TensorRT-LLM's CUTLASS), over the H100's 989.4 / 1,978.9 TFLOP/s
    assert TRITON_FUSED_MOE_TFLOPS == {"bf16": 282.4e12, "fp8": 513.4e12}
    assert CUTLASS_MOE_TFLOPS == {"bf16": 531.0e12, "fp8": 723.1e12}
    assert GROUPED_GEMM_EFFICIENCY["triton"]["bf16"] == pytest.approx(282.4 / 989.4)
    assert GROUPED_GEMM_EFFICIENCY["triton"]["fp8"] == pytest.approx(513.4 / 1978.9)
    assert GROUPED_GEMM_EFFICIENCY["cutlass"]["bf16"] == pytest.approx(531.0 / 989.4)
    assert GROUPED_GEMM_EFFICIENCY["cutlass"]["fp8"] == pytest.approx(723.1 / 1978.9)


def test_padded_rows():
    assert padded_rows(1) == 64
    assert padded_rows(64) == 64
    assert padded_rows(65) == 128
    assert padded_rows(2.5) == 64
    assert padded_rows(100, tile_m=128) == 128
    np.testing.assert_array_equal(padded_rows(np.array([1, 64, 129])), [64, 64, 192])


# ----- each term by hand -------------------------------------------------------------------------

def test_decode_terms_by_hand_dense_one_chip():
    # batch 8, context 0 (no KV, no attention FLOPs), bf16 weights, one chip.
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, overheads=ROUND)
    # bound: matmul 8 x 2 x 66,322,432 / 1e15 = 1.06116e-6 s; weights 66,327,552 x 2 / 1e12
    # = 1.326551e-4 s; per-op bound max(0, 0) + max(matmul, weights) = 1.326551e-4 s.
    assert e.bound.time == pytest.approx(1.32655104e-4)
    # kernel: matmul rows padded 8 -> 64 and at half the peak: 1.06116e-6 x 8 / 0.5 = 1.6979e-5;
    # weights at half the bandwidth 2.653102e-4 s, which is larger; term = 2.653102e-4 - bound.
    assert e.kernel_time == pytest.approx(1.32655104e-4)
    assert e.moe_time == 0.0
    assert e.comm_time == 0.0                          # one chip: nothing to all-reduce
    assert e.layer_overhead_time == pytest.approx(2 * 10 * 1e-6)   # 2 layers x 10 kernels x 1 us
    assert e.step_overhead_time == pytest.approx(1e-3)
    assert e.elementwise_time == 0.0                   # counted in prefill steps only
    assert e.time == pytest.approx(2 * 1.32655104e-4 + 2e-5 + 1e-3)
    assert e.overheads is ROUND            # the coefficients used travel with the result


def test_one_chip_needs_no_scale_up_link():
    # a chip with no scale-up figure: one chip communicates nothing, so the step is the one
    # above (bound 1.32655104e-4 s, kernel term as much again, 20 kernels x 1 us, 1 ms per step)
    alone = dataclasses.replace(TOY_CHIP, name="no links", scale_up_bandwidth=None,
                                scale_up_domain=None)
    e = estimate_step(TOY, alone, batch=8, context=0, overheads=ROUND)
    assert e.comm_time == 0.0
    assert e.time == pytest.approx(2 * 1.32655104e-4 + 2e-5 + 1e-3)
    # two of them would have to all-reduce over links it does not list: refused, saying why
    with pytest.raises(ValueError, match=r"^chip: 'no links' lists no scale_up_bandwidth; "
                                         r"communication between its chips cannot be estimated "
                                         r"\(use n_chips=1\)$"):
        estimate_step(TOY, alone, batch=8, context=0, n_chips=2, overheads=ROUND)


def test_gemm_weight_reads_at_their_own_bandwidth():
    # the same step with the matmuls' weights read at a quarter of the bandwidth (KV at half):
    # 1.326551e-4 / 0.25 = 5.306204e-4 s; the kernel term is that minus the bound, 3.979653e-4 s.
    o = dataclasses.replace(ROUND, gemm_memory_efficiency=0.25)
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, overheads=o)
    assert e.kernel_time == pytest.approx(3.9796531e-4)


def test_padding_makes_a_small_batch_compute_bound_kernel():
    # batch 8 on a chip with little compute: 1e12 FLOP/s, 1 TB/s. Bound: matmul
    # 8 x 2 x 66,322,432 / 1e12 = 1.061159e-3 s; weights 1.326551e-4 s; bound 1.061159e-3 s.
    slow = dataclasses.replace(TOY_CHIP, name="slow toy", flops={"bf16": 1e12})
    e = estimate_step(TOY, slow, batch=8, context=0, overheads=ROUND)
    assert e.bound.time == pytest.approx(1.06115891e-3)
    # padded to 64 rows at half the peak: 1.061159e-3 x 8 / 0.5 = 1.697854e-2 s.
    assert e.bound.time + e.kernel_time == pytest.approx(1.69785426e-2)


def test_tensor_parallel_all_reduce_by_hand():
    # two chips: per layer 2 all-reduces of 8 tokens x 1024 x 2 B = 16,384 B per chip.
    # One all-reduce on a switch: 2 steps x 1 us + 2 x (1/2) x 16,384 / 1e11 = 2.16384e-6 s;
    # 2 layers x 2 = 4 of them: 8.65536e-6 s.
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, n_chips=2, overheads=ROUND)
    assert e.tp_comm_time == pytest.approx(8.65536e-6)
    assert e.ep_comm_time == 0.0
    assert e.comm_time == pytest.approx(8.65536e-6)
    # one byte per activation halves the message, 8,192 B: 2 x 1 us + 2 x (1/2) x 8,192 / 1e11
    # = 2.08192e-6 s per all-reduce, x 4 = 8.32768e-6 s
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, n_chips=2, activation_bytes=1,
                      overheads=ROUND)
    assert e.tp_comm_time == pytest.approx(8.32768e-6)


# MoE toy: the dense toy's attention with 4 experts of width 1024, 1 per token, in both layers.
# One expert 3 x 1024 x 1024 = 3,145,728; routed 4 per layer. Multiplied per token: attention
# 2 x 4,194,304 = 8,388,608, one expert per layer 6,291,456, routers 2 x (1025 x 4) = 8,200,
# embedding 32,768,000: 47,456,264.
TOY_MOE = Model(name="toy moe", n_layers=2, d_model=1024, d_ff=4096, n_heads=8, vocab_size=32000,
                tied_embeddings=True, n_experts=4, experts_per_token=1, d_ff_expert=1024)


def test_ring_all_reduce_by_hand():
    # 8 chips on a ring (the default for a chip that is not NVIDIA's): one all-reduce of
    # 8 x 1024 x 2 = 16,384 B is 2 x 7 = 14 steps x 1 us + 2 x (7/8) x 16,384 / 1e11
    # = 1.4e-5 + 2.8672e-7 = 1.428672e-5 s; 4 of them (2 layers x 2): 5.714688e-5 s.
    ring = dataclasses.replace(ROUND, topology=None)
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, n_chips=8, overheads=ring)
    assert e.tp_comm_time == pytest.approx(5.714688e-5)
    # the same on a switch: 2 steps x 1 us + the same bandwidth time, x 4 = 9.146880e-6 s
    switch = dataclasses.replace(ROUND, topology="switch")
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, n_chips=8, overheads=switch)
    assert e.tp_comm_time == pytest.approx(9.14688e-6)
    # an NVIDIA chip defaults to the switch and its NVLS step latency (3 us)
    h100 = chips.get("H100-SXM")
    e = estimate_step(TOY, h100, batch=8, context=0, n_chips=8,
                      overheads=Overheads(link_efficiency=1.0))
    assert e.tp_comm_time == pytest.approx(4 * (2 * 3e-6 + 2 * 7 / 8 * 16384 / 450e9))
    # a chip described by a class of the reader's own, with no vendor field, is not taken as
    # NVIDIA's: the ring, as for TOY_CHIP above
    e = estimate_step(TOY, _Board(), batch=8, context=0, n_chips=8, overheads=ring)
    assert e.tp_comm_time == pytest.approx(5.714688e-5)


class _Board:
    """TOY_CHIP's figures in a plain class (not llmmath's Chip): no ``vendor`` attribute."""

    name = "board"
    flops = {"bf16": 1e15}
    hbm_bandwidth = 1e12
    scale_up_bandwidth = 1e11

    def peak(self, dtype="bf16"):
        return self.flops[dtype]


def test_ring_takes_one_chip_count_at_a_time():
    # a ring's step count, 2 (n - 1), is worked out for one n at a time (the estimate's
    # docstring): an array of chip counts is refused up front, naming n_chips
    ring = dataclasses.replace(ROUND, topology="ring")
    with pytest.raises(TypeError, match=r"^n_chips: got an array of shape \(2,\); this function "
                                        r"takes one number at a time"):
        estimate_step(TOY, TOY_CHIP, batch=8, context=0, n_chips=np.array([2, 4]), overheads=ring)


def test_chip_counts_broadcast_term_by_term_on_a_switch():
    # on a switch an array of chip counts gives every term per count, as one call per count
    # does: dense and MoE, and a dense model asked for expert parallelism (it has no experts,
    # so no all-to-all at any count)
    h100 = chips.get("H100-SXM")
    for model, counts, ep in ((TOY, [1, 2, 4, 8], 1), (TOY_MOE, [1, 2, 4, 8], 1),
                              (TOY, [2, 4, 8], 2)):
        e = estimate_step(model, h100, batch=8, context=128, n_chips=np.array(counts),
                          expert_parallel=ep)
        for i, n in enumerate(counts):
            one = estimate_step(model, h100, batch=8, context=128, n_chips=n, expert_parallel=ep)
            for term, value in e.terms.items():
                assert value[i] == pytest.approx(one.terms[term], rel=1e-12, abs=1e-18), (
                    model.name, n, term)
        assert np.all(e.ep_comm_time == 0.0)     # dense, or experts all on each chip (EP 1)


def test_moe_toy_counts_are_the_hand_counts():
    assert TOY_MOE.expert_params == 3_145_728
    assert TOY_MOE.matmul_params_active == 47_456_264


def test_grouped_experts_by_hand():
    # batch 8 on the slow chip (1e12 FLOP/s): compute matters. Experts touched per layer by 8
    # tokens routed 1 of 4: 4 (1 - (3/4)^8) = 3.599548; each multiplies 8 / 3.599548 = 2.222501
    # rows, padded to 64: 28.7962 times the FLOPs. Expert FLOPs in the bound: 8 x 2 x 2 x
    # 3,145,728 / 1e12 = 1.006633e-4 s; at half the peak 2.013266e-4; padded 5.797449e-3 s.
    # Expert weights read: 2 layers x 3.599548 x 3,145,728 x 2 B / 1e12 / 0.5 = 9.058103e-5 s.
    # Shared matmul FLOPs: (47,456,264 - 6,291,456) x 2 x 8 / 1e12 = 6.586369e-4 s, padded to
    # 64 rows at half the peak: 1.053819e-2 s (above its weight reads).
    # No KV at context 0. kernel step: max(shared + experts unpadded, all weights)
    # = 1.053819e-2 + 2.013266e-4 = 1.073952e-2; grouped: 1.053819e-2 + 5.797449e-3 = 1.633564e-2.
    slow = dataclasses.replace(TOY_CHIP, name="slow toy", flops={"bf16": 1e12})
    e = estimate_step(TOY_MOE, slow, batch=8, context=0, overheads=ROUND)
    assert e.bound.time + e.kernel_time == pytest.approx(1.073952e-2, rel=1e-5)
    assert e.moe_time == pytest.approx(1.633564e-2 - 1.073952e-2, rel=1e-4)


def test_grouped_experts_at_their_own_rates_by_hand():
    # as above, with the experts' arithmetic at half the dense rate and their weights read at a
    # quarter of the bandwidth. Expert compute, padded: 5.797449e-3 / 0.5 = 1.1594898e-2 s;
    # expert weights: 9.058103e-5 x 0.5 / 0.25 = 1.8116206e-4 s (smaller). Grouped step:
    # 1.053819e-2 + 1.1594898e-2 = 2.2133088e-2; the kernel step is unchanged (its weight reads
    # at gemm_memory_efficiency 0.5 stay below its compute), 1.073952e-2; the term is 1.1393568e-2.
    slow = dataclasses.replace(TOY_CHIP, name="slow toy", flops={"bf16": 1e12})
    o = dataclasses.replace(ROUND, grouped_matmul_derate=0.5, grouped_memory_efficiency=0.25)
    e = estimate_step(TOY_MOE, slow, batch=8, context=0, overheads=o)
    assert e.bound.time + e.kernel_time == pytest.approx(1.073952e-2, rel=1e-5)
    assert e.moe_time == pytest.approx(1.1393568e-2, rel=1e-4)


def test_grouped_gemm_kernel_by_hand():
    # A prefill of 4,096 tokens on the slow chip: every expert is touched (4 of 4) with 1,024
    # rows each, a multiple of the 64-row tile, so nothing is padded. Expert FLOPs in the bound:
    # 4,096 x 2 layers x 1 expert x 3,145,728 x 2 / 1e12 = 5.1539607552e-2 s; at DeepGEMM's rate
    # (half the peak here) 1.03079215e-1 s; at the engine kernel's (a quarter) 2.06158430e-1 s,
    # far above the experts' weight reads. The term is the difference, 1.03079215e-1 s.
    slow = dataclasses.replace(TOY_CHIP, name="slow toy", flops={"bf16": 1e12})
    o = dataclasses.replace(ROUND, grouped_matmul_efficiency=0.25)
    kw = dict(batch=1, context=4096, phase="prefill")
    e = estimate_step(TOY_MOE, slow, overheads=o, **kw)
    assert e.moe_time == pytest.approx(0.0, abs=1e-12)  # nothing padded, derate 1
    assert e.grouped_kernel_time == pytest.approx(1.03079215e-1, rel=1e-6)
    # the default is Triton fused-MoE's bf16 rate, 282.4 of 989.4 TFLOP/s
    d = estimate_step(TOY_MOE, slow, overheads=dataclasses.replace(
        ROUND, grouped_matmul_efficiency=None), **kw)
    assert d.grouped_kernel_time == pytest.approx(5.1539607552e-2 * (989.4 / 282.4 - 2),
                                                  rel=1e-5)
    # a kernel credited above DeepGEMM's rate (0.5 here) adds nothing: never below the bound
    fast = dataclasses.replace(ROUND, grouped_matmul_efficiency=0.9)
    assert estimate_step(TOY_MOE, slow, overheads=fast, **kw).grouped_kernel_time == 0.0
    # batch 8 in decode: 2.2 rows per expert, padded to 64 at DeepGEMM's rate (5.797449e-3 s,
    # test_grouped_experts_by_hand) is longer than the unpadded arithmetic at the engine's
    # measured rate (1.006633e-4 / 0.25 = 4.026532e-4 s), whose tiling is inside its
    # measurement: the term is zero, not the padding counted twice
    assert estimate_step(TOY_MOE, slow, batch=8, context=0,
                         overheads=o).grouped_kernel_time == 0.0
    # dense models have no experts: the term is zero
    assert estimate_step(TOY, slow, overheads=o, **kw).grouped_kernel_time == 0.0


def test_expert_parallel_replicated_weights_by_hand():
    # The MoE toy on 2 chips with expert parallelism 2 (tensor parallelism 1: each chip holds
    # all of attention, routers and the tied embedding). Batch 1, context 0: one expert touched
    # per layer. Non-expert weights read: 47,456,264 - 2 x 3,145,728 = 41,164,808 multiplied
    # per token, plus norms 2 x 2 x 1,024 + 1,024 = 5,120: 41,169,928 x 2 B = 82,339,856 B.
    # The bound spreads them over both chips: 41,169,928 B each, at half of 1 TB/s 8.2339856e-5 s;
    # each chip really reads all of them: 1.64679712e-4 s. The expert part is the same in both
    # (and the shared arithmetic, about 1e-5 s padded, stays below the reads): the term is
    # 8.2339856e-5 s.
    o = dataclasses.replace(ROUND, grouped_matmul_efficiency=0.5, routing_imbalance=False)
    e = estimate_step(TOY_MOE, TOY_CHIP, batch=1, context=0, n_chips=2, expert_parallel=2,
                      overheads=o)
    assert e.replicated_weight_time == pytest.approx(8.2339856e-5, rel=1e-6)
    # tensor parallelism over both chips splits them: nothing replicated
    t = estimate_step(TOY_MOE, TOY_CHIP, batch=1, context=0, n_chips=2, overheads=o)
    assert t.replicated_weight_time == 0.0


def test_expert_load_imbalance_by_hand():
    # The MoE toy on the slow chip (1e12 FLOP/s), 2 chips, expert parallelism 2, batch 2 at
    # context 0: 2 assignments (top-1) over 2 chips. Busiest chip, product of binomial marginals
    # (llmmath.moe.expected_max_load): F(0) = 1/4, F(1) = 3/4, F(2) = 1, so
    # E[max] = (1 - 1/16) + (1 - 9/16) = 1.375 against a mean of 1: factor 1.375.
    # Experts touched per layer 4 (1 - (3/4)^2) = 1.75, rows each 2 / 1.75, padded to 64: x 56.
    # Expert FLOPs in the bound: 2 tokens x 2 layers x 2 x 3,145,728 / (2 chips x 1e12)
    # = 1.2582912e-5 s; at half the peak, padded: 1.40928614e-3 s (their weights, 2 x 1.75 x
    # 3,145,728 x 2 B / 2e12 / 0.5 = 2.2e-5 s, are less). The busiest chip takes 0.375 more:
    # 5.2848230e-4 s.
    slow = dataclasses.replace(TOY_CHIP, name="slow toy", flops={"bf16": 1e12})
    o = dataclasses.replace(ROUND, grouped_matmul_efficiency=0.5)
    e = estimate_step(TOY_MOE, slow, batch=2, context=0, n_chips=2, expert_parallel=2,
                      overheads=o)
    assert e.imbalance_time == pytest.approx(5.2848230e-4, rel=1e-5)
    off = dataclasses.replace(o, routing_imbalance=False)
    assert estimate_step(TOY_MOE, slow, batch=2, context=0, n_chips=2, expert_parallel=2,
                         overheads=off).imbalance_time == 0.0
    # no expert parallelism: no chip is busier than another
    assert estimate_step(TOY_MOE, slow, batch=2, context=0, n_chips=2,
                         overheads=o).imbalance_time == 0.0


def test_kernel_count_differs_by_layer_type():
    # TOY_MOE: 2 layers, both MoE: 2 x 10 + 2 x 3 extra = 26 kernels x 1 us
    o = dataclasses.replace(ROUND, moe_extra_kernels=3, mla_extra_kernels=5)
    e = estimate_step(TOY_MOE, TOY_CHIP, batch=8, context=0, overheads=o)
    assert e.layer_overhead_time == pytest.approx(26e-6)
    # the dense toy pays neither extra: 2 x 10 kernels
    e = estimate_step(TOY, TOY_CHIP, batch=8, context=0, overheads=o)
    assert e.layer_overhead_time == pytest.approx(20e-6)
    # DeepSeek-V3 with the cited counts: 61 layers, the first 3 dense (first_k_dense_replace),
    # 58 MoE; MLA in all 61: 61 x 9 + 58 x 4 + 61 x 9 = 1,330 kernels, at 1.3 us under CUDA
    # graphs 1.729 ms
    dsv3 = models.get("DeepSeek-V3")
    assert (dsv3.n_layers, dsv3.n_moe_layers) == (61, 58)
    e = estimate_step(dsv3, chips.get("H200"), batch=1, context=512, n_chips=8, weight_bytes=1,
                      dtype="fp8", overheads=Overheads(kernel_overhead=GRAPH_NODE_OVERHEAD))
    assert e.layer_overhead_time == pytest.approx(1330 * 1.3e-6)


def test_mla_decode_attention_at_flashmla_rate():
    # DeepSeek-V3 on a chip with little compute (1e12 FLOP/s, 1 TB/s): at batch 64 and context
    # 4096 its absorbed attention (about 242 FLOP per cached byte) is compute-bound, far above
    # its KV reads and all the matmuls (their weights read once for 64 tokens). With every other
    # coefficient 1 and no padding, halving only the MLA rate adds exactly one attention time.
    slow = dataclasses.replace(TOY_CHIP, name="slow toy", flops={"bf16": 1e12})
    ones = Overheads(matmul_efficiency=1.0, attention_efficiency=1.0, memory_efficiency=1.0,
                     gemm_memory_efficiency=1.0, grouped_memory_efficiency=1.0,
                     grouped_matmul_derate=1.0, mla_attention_efficiency=0.5, tile_m=1,
                     kernels_per_layer=0, moe_extra_kernels=0, mla_extra_kernels=0,
                     kernel_overhead=0.0, step_overhead=0.0)
    dsv3 = models.get("DeepSeek-V3")
    e = estimate_step(dsv3, slow, batch=64, context=4096, overheads=ones)
    assert e.bound.attention_time > e.bound.kv_time          # attention is compute-bound here
    assert e.kernel_time == pytest.approx(e.bound.attention_time, rel=1e-9)
    # prefill runs the un-absorbed form: the MLA rate does not apply there
    e = estimate_step(dsv3, slow, batch=1, context=512, phase="prefill", overheads=ones)
    assert e.kernel_time == pytest.approx(0.0, abs=1e-15)


def test_expert_parallel_all_to_all_by_hand():
    # 8 tokens over 2 chips, EP 2 (no tensor parallelism left): per MoE layer a dispatch and a
    # combine, each an all-to-all of 8 x 1 x 1024 x 2 / 2 = 8,192 B per chip: 1 step x 1 us +
    # (1/2) x 8,192 / 1e11 = 1.04096e-6 s; 2 layers x 2 = 4.16384e-6 s.
    e = estimate_step(TOY_MOE, TOY_CHIP, batch=8, context=0, n_chips=2, expert_parallel=2,
                      overheads=ROUND)
    assert e.ep_comm_time == pytest.approx(4.16384e-6)
    assert e.tp_comm_time == 0.0
    # one byte per activation: 4,096 B per chip, 1 us + (1/2) x 4,096 / 1e11 = 1.02048e-6 s,
    # x 4 = 4.08192e-6 s
    e = estimate_step(TOY_MOE, TOY_CHIP, batch=8, context=0, n_chips=2, expert_parallel=2,
                      activation_bytes=1, overheads=ROUND)
    assert e.ep_comm_time == pytest.approx(4.08192e-6)


def test_expert_parallel_all_to_all_on_a_ring_by_hand():
    # EP 4 on a ring (chapter 9: n - 1 steps; bytes cross floor(n^2 / 4) / n = 1 link on
    # average for n = 4): 8 x 1 x 1024 x 2 / 4 = 4,096 B per chip, 3 x 1 us + 1 x 4,096 / 1e11
    # = 3.04096e-6 s per all-to-all, 2 per layer x 2 layers = 1.216384e-5 s.
    # (A switch would take 1 us + (3/4) x 4,096 / 1e11 per all-to-all: 4.12288e-6 s in all.)
    ring = dataclasses.replace(ROUND, topology="ring")
    e = estimate_step(TOY_MOE, TOY_CHIP, batch=8, context=0, n_chips=4, expert_parallel=4,
                      overheads=ring)
    assert e.ep_comm_time == pytest.approx(1.216384e-5)
    assert e.tp_comm_time == 0.0      # n / EP = 1 chip per tensor-parallel group


def test_shape_efficiencies_are_the_table_medians():
    # aiconfigurator's TensorRT-LLM tables (commit 095f58a5): medians over the 114 shapes with
    # N K >= 2^24, transcribed at a few points; each curve rises with M or S, never above 1
    assert GEMM_EFFICIENCY_BY_ROWS["H100-SXM"]["bf16"][1] == (128, 0.295)
    assert GEMM_EFFICIENCY_BY_ROWS["H100-SXM"]["fp8"][-1] == (16384, 0.684)
    assert GEMM_EFFICIENCY_BY_ROWS["A100-SXM-80GB"]["bf16"][-1] == (8192, 0.840)
    assert CONTEXT_ATTENTION_EFFICIENCY["H100-SXM"][3] == (1024, 0.239)
    assert FP8_GEMM_MEMORY_EFFICIENCY == {"H100-SXM": 0.553, "H200": 0.479}
    curves = [c for d in GEMM_EFFICIENCY_BY_ROWS.values() for c in d.values()]
    for curve in curves + list(CONTEXT_ATTENTION_EFFICIENCY.values()):
        sizes, fracs = zip(*curve, strict=True)
        assert list(sizes) == sorted(sizes) and all(0 < f <= 1 for f in fracs)
        assert all(b >= a for a, b in zip(fracs, fracs[1:], strict=False))
    # every table names a catalogue chip (a misspelt name would silently apply nowhere)
    for name in (*GEMM_EFFICIENCY_BY_ROWS, *CONTEXT_ATTENTION_EFFICIENCY,
                 *FP8_GEMM_MEMORY_EFFICIENCY):
        assert chips.get(name).name == name


# A toy chip under a name the tables cover: the measured fractions apply, the numbers stay round
# (10 TFLOP/s bf16, 20 fp8, 1 TB/s): little compute, so a prefill is compute-bound.
AS_H100 = dataclasses.replace(TOY_CHIP, name="H100-SXM", flops={"bf16": 1e13, "fp8": 2e13})


def test_prefill_kernels_at_the_measured_rate_for_their_shape_by_hand():
    # TOY, 3 prompts of 128 tokens: M = 384 rows, S = 128. Bound: matmul 384 x 2 x 66,322,432
    # / 1e13 = 5.0935628e-3 s; attention 2 layers x 2 x 8 heads x 128 x 128 x 129 x 3 / 1e13 =
    # 2.0289946e-5 s; KV written 384 x 2 layers x 2 x 1024 x 2 B / 1e12 = 3.145728e-6 s.
    o = dataclasses.replace(ROUND, matmul_efficiency=None)
    e = estimate_step(TOY, AS_H100, batch=3, context=128, phase="prefill", overheads=o)
    assert e.bound.matmul_time == pytest.approx(5.0935628e-3)
    assert e.bound.attention_time == pytest.approx(2.0289946e-5)
    # matmuls: 384 rows lie between the table's 256 (0.524) and 512 (0.720), log2 384 = 8.58496:
    # 0.524 + 0.196 x 0.584963 = 0.6386527 of the peak: 5.0935628e-3 / 0.6386527 = 7.975482e-3 s
    # (weights 1.3265510e-4 / 0.5 are less); attention at S = 128: 0.029 of the peak,
    # 2.0289946e-5 / 0.029 = 6.996533e-4 s (KV write 3.145728e-6 / 0.5 less).
    assert e.bound.time + e.kernel_time == pytest.approx(7.975482e-3 + 6.996533e-4, rel=1e-6)
    # without the shape term: FlashAttention-3's 740 of 989.4 for the matmuls, ROUND's 0.5 for
    # attention: 5.0935628e-3 x 989.4 / 740 + 2.0289946e-5 / 0.5 = 6.810230e-3 + 4.057989e-5
    flat = estimate_step(TOY, AS_H100, batch=3, context=128, phase="prefill",
                         overheads=dataclasses.replace(o, shape_efficiency=False))
    assert flat.bound.time + flat.kernel_time == pytest.approx(6.810230e-3 + 4.057989e-5,
                                                               rel=1e-6)
    # an explicit matmul_efficiency wins for the matmuls; attention keeps its measured rate
    mine = estimate_step(TOY, AS_H100, batch=3, context=128, phase="prefill", overheads=ROUND)
    assert mine.bound.time + mine.kernel_time == pytest.approx(
        5.0935628e-3 / 0.5 + 6.996533e-4, rel=1e-6)


def test_shape_term_stays_where_the_tables_are():
    o = dataclasses.replace(ROUND, matmul_efficiency=None)
    off = dataclasses.replace(o, shape_efficiency=False)
    # a chip the tables do not cover: nothing changes
    for phase in ("prefill", "decode"):
        on_t = estimate_step(TOY, TOY_CHIP, batch=3, context=128, phase=phase, overheads=o)
        off_t = estimate_step(TOY, TOY_CHIP, batch=3, context=128, phase=phase, overheads=off)
        assert on_t.time == off_t.time
    # a bf16 decode step keeps the constants (the tables agree with them at decode M)
    on_d = estimate_step(TOY, AS_H100, batch=8, context=128, overheads=o)
    off_d = estimate_step(TOY, AS_H100, batch=8, context=128, overheads=off)
    assert on_d.time == off_d.time
    # latent attention (head dimension 192) is not in the attention tables: with the matmul
    # rate given, the prefill of DeepSeek-V3 is the same with and without the shape term
    dsv3 = models.get("DeepSeek-V3")
    mine = dataclasses.replace(ROUND, matmul_efficiency=0.5)
    a = estimate_step(dsv3, AS_H100, batch=1, context=1024, phase="prefill", overheads=mine)
    b = estimate_step(dsv3, AS_H100, batch=1, context=1024, phase="prefill",
                      overheads=dataclasses.replace(mine, shape_efficiency=False))
    assert a.time == b.time


def test_fp8_weights_stream_at_the_engines_fp8_rate_by_hand():
    # TOY in fp8 (1 B per weight), batch 8, no context, on a chip named H200 (1 TB/s): the
    # weights, 66,327,552 B / 1e12 = 6.6327552e-5 s, stream at 0.479 of it: 1.3847088e-4 s,
    # far above the matmuls (64 padded rows x 2 x 66,322,432 / 2e15 at 0.68: 6.2e-6 s).
    as_h200 = dataclasses.replace(AS_H100, name="H200", flops={"bf16": 1e15, "fp8": 2e15})
    o = dataclasses.replace(ROUND, matmul_efficiency=None,
                            gemm_memory_efficiency=GEMM_MEMORY_EFFICIENCY)
    e = estimate_step(TOY, as_h200, batch=8, context=0, weight_bytes=1, dtype="fp8",
                      overheads=o)
    assert e.bound.time + e.kernel_time == pytest.approx(1.3847088e-4, rel=1e-6)
    # bf16 keeps DeepGEMM's 0.67 there: 2 x 6.6327552e-5 / 0.6716418 = 1.9751e-4 s
    e = estimate_step(TOY, as_h200, batch=8, context=0, overheads=o)
    assert e.bound.time + e.kernel_time == pytest.approx(2 * 6.6327552e-5 / (2250 / 3350),
                                                         rel=1e-6)
    # an explicit gemm_memory_efficiency wins (ROUND's 0.5): 6.6327552e-5 / 0.5
    e = estimate_step(TOY, as_h200, batch=8, context=0, weight_bytes=1, dtype="fp8",
                      overheads=dataclasses.replace(ROUND, matmul_efficiency=None))
    assert e.bound.time + e.kernel_time == pytest.approx(1.32655104e-4, rel=1e-6)


def test_prefill_counts_batch_times_prompt_rows():
    # prefill of 64 tokens on 2 chips: two all-reduces per layer, as in decode, now of
    # 64 x 1024 x 2 = 131,072 B each: 2 steps x 1 us + 2 x (1/2) x 131,072 / 1e11 = 3.31072e-6 s;
    # 2 layers x 2 = 4 of them: 1.324288e-5 s.
    e = estimate_step(TOY, TOY_CHIP, batch=1, context=64, n_chips=2, phase="prefill",
                      overheads=ROUND)
    assert e.tp_comm_time == pytest.approx(1.324288e-5)
    assert e.phase == "prefill"
    # 64 rows fill one tile exactly: the matmuls are not padded, only derated (x 1/0.5)
    assert e.bound.matmul_time < e.bound.weight_time / 2   # still weight-bound at half bandwidth
    assert e.kernel_time == pytest.approx(e.bound.time)    # weights at half the bandwidth


def test_terms_add_to_the_estimate():
    e = estimate_step(models.get("Mixtral-8x7B"), chips.get("H100-SXM"), batch=32, context=2048,
                      n_chips=2, weight_bytes=1, kv_bytes=1, dtype="fp8")
    assert sum(e.terms.values()) == pytest.approx(e.time)
    assert list(e.terms)[0] == "bound"
    ep = estimate_step(models.get("DeepSeek-V3"), chips.get("H200"), batch=1024, context=2048,
                       n_chips=8, expert_parallel=8, weight_bytes=1, kv_bytes=1, dtype="fp8")
    assert sum(ep.terms.values()) == pytest.approx(ep.time)
    assert list(ep.terms) == list(_calibration.TERMS)


def test_overheads_zero_gives_the_bound_with_efficiency_one():
    none = Overheads(matmul_efficiency=1.0, attention_efficiency=1.0, memory_efficiency=1.0,
                     gemm_memory_efficiency=1.0, grouped_memory_efficiency=1.0,
                     grouped_matmul_derate=1.0, mla_attention_efficiency=1.0,
                     tile_m=1, link_efficiency=1.0, hop_latency=0.0, kernels_per_layer=0,
                     moe_extra_kernels=0, mla_extra_kernels=0,
                     kernel_overhead=0.0, step_overhead=0.0)
    e = estimate_step(models.get("Llama-3-70B"), chips.get("H100-SXM"), batch=64, context=4096,
                      overheads=none)
    assert e.time == pytest.approx(e.bound.time)


def test_arrays_broadcast():
    ctx = np.array([0.0, 1024.0, 4096.0])
    e = estimate_step(models.get("Llama-3-8B"), chips.get("H200"), batch=16, context=ctx, n_chips=2)
    assert np.shape(e.time) == (3,)
    for i, c in enumerate(ctx):
        one = estimate_step(models.get("Llama-3-8B"), chips.get("H200"), batch=16, context=c,
                            n_chips=2)
        assert e.time[i] == pytest.approx(one.time)


def test_bad_input_is_refused_by_name():
    m, c = models.get("Llama-3-8B"), chips.get("H100-SXM")
    with pytest.raises(ValueError, match="phase"):
        estimate_step(m, c, 1, 128, phase="generate")
    with pytest.raises(ValueError, match="expert_parallel"):
        estimate_step(m, c, 1, 128, n_chips=4, expert_parallel=3)
    with pytest.raises(TypeError, match="overheads"):
        estimate_step(m, c, 1, 128, overheads={"step_overhead": 0})
    with pytest.raises(ValueError, match="memory_efficiency"):
        Overheads(memory_efficiency=1.5)
    with pytest.raises(ValueError, match="tile_m"):
        Overheads(tile_m=0)
    with pytest.raises(ValueError, match="topology"):
        Overheads(topology="torus")


# (field, a bad value, what the message says is allowed)
BAD_OVERHEADS = [
    ("matmul_efficiency", 1.5, "in (0, 1]"),
    ("attention_efficiency", 0.0, "in (0, 1]"),
    ("mla_attention_efficiency", 1.5, "in (0, 1]"),
    ("memory_efficiency", 1.5, "in (0, 1]"),
    ("gemm_memory_efficiency", 0.0, "in (0, 1]"),
    ("grouped_memory_efficiency", 2.0, "in (0, 1]"),
    ("grouped_matmul_derate", 1.2, "in (0, 1]"),
    ("grouped_matmul_efficiency", 1.5, "in (0, 1]"),
    ("routing_imbalance", 1, "True or False"),
    ("shape_efficiency", "yes", "True or False"),
    ("tile_m", 0, "> 0"),
    ("tile_m", 2.5, "a whole number"),
    ("tile_m", 4097, "at most 4096"),
    ("link_efficiency", 0.0, "in (0, 1]"),
    ("topology", "torus", "['switch', 'ring']"),
    ("hop_latency", -1e-6, ">= 0"),
    ("kernels_per_layer", -1, ">= 0"),
    ("kernels_per_layer", 9.5, "a whole number"),
    ("moe_extra_kernels", -1, ">= 0"),
    ("moe_extra_kernels", 3.5, "a whole number"),
    ("mla_extra_kernels", -1, ">= 0"),
    ("mla_extra_kernels", 2.5, "a whole number"),
    ("kernel_overhead", -1e-6, ">= 0"),
    ("step_overhead", -1e-3, ">= 0"),
]


@pytest.mark.parametrize("field, bad, allowed", BAD_OVERHEADS,
                         ids=[f"{f}={b}" for f, b, _ in BAD_OVERHEADS])
def test_each_bad_coefficient_is_refused_by_name(field, bad, allowed):
    with pytest.raises(ValueError) as info:
        Overheads(**{field: bad})
    message = str(info.value)
    assert message.startswith(f"{field}: got "), message
    assert allowed in message, message


def test_tile_rows_are_limited_in_padded_rows_too():
    with pytest.raises(ValueError, match=r"^tile_m: got 4097; allowed values are at most 4096$"):
        padded_rows(8, tile_m=4097)
    assert padded_rows(8, tile_m=4096) == 4096     # the limit itself is a tile


def test_activation_bytes_are_at_most_eight():
    # fp64, 8 bytes, is the widest number format (as weight_bytes and kv_bytes)
    m, c = models.get("Llama-3-8B"), chips.get("H100-SXM")
    with pytest.raises(ValueError, match=r"^activation_bytes: got 9; allowed values are at most "
                                         r"8$"):
        estimate_step(m, c, 1, 128, n_chips=2, activation_bytes=9)
    estimate_step(m, c, 1, 128, n_chips=2, activation_bytes=8)


# ----- never below the bound ---------------------------------------------------------------------

@pytest.mark.parametrize("name", models.names())
def test_never_below_the_bound_over_the_catalogue(name):
    model = models.get(name)
    for chip_name in ("H100-SXM", "H200", "B200", "MI300X"):
        chip = chips.get(chip_name)
        dtype = "fp8" if "fp8" in chip.flops else "bf16"
        for phase, ctx in (("decode", np.array([0.0, 512.0, 4096.0])),
                           ("prefill", np.array([1.0, 128.0, 4096.0]))):
            ctx = np.minimum(ctx, model.max_context or 1e9)
            for batch in (1, 8, 256):
                for n in (1, 8):
                    e = estimate_step(model, chip, batch, ctx, n_chips=n, phase=phase,
                                      weight_bytes=1, kv_bytes=1, dtype=dtype)
                    assert np.all(np.asarray(e.time) >= np.asarray(e.bound.time)), (
                        chip_name, phase, batch, n)
                    for term, value in e.terms.items():
                        assert np.all(np.asarray(value) >= 0), term


# ----- the calibration set -----------------------------------------------------------------------

# The calibration set ships inside the package (llmmath/data, package data), so an installed
# copy (make compat) reads the same rows.
ROOT = Path(__file__).resolve().parents[1]
ROWS = _calibration.load()
RESULTS = [(_row, _calibration.evaluate(_row)) for _row in ROWS]
COLUMNS = {"split", "kind", "model", "catalogue_model", "chip", "n_chips", "tp", "ep", "pp",
           "precision", "weight_bytes", "kv_bytes", "dtype", "batch", "input_tokens",
           "output_tokens", "phase", "measured_s", "measured_as", "engine", "engine_version",
           "source", "url", "table"}


def _within(measured, estimate, tol=0.30):
    """|estimate - measured| <= tol x measured."""
    return abs(estimate - measured) <= tol * measured


def test_calibration_set_is_complete_and_sourced():
    assert len(ROWS) >= 30
    assert COLUMNS <= set(ROWS[0])
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    for r in ROWS:
        assert f"{{{r['source']},\n" in bib, r["source"]
        assert r["url"].startswith("https://")
        models.get(r["catalogue_model"])     # every row is on a catalogue model
        chips.get(r["chip"])
        assert r["tp"] * r["ep"] * r["pp"] == r["n_chips"]
    kinds = {(r["kind"], r["phase"]) for r in ROWS}
    assert {("dense", "prefill"), ("moe", "prefill"), ("dense", "decode")} <= kinds


def test_split_is_the_fixed_rule():
    # the first six sources were all looked at: fit; a source added later is fit or test as a
    # whole, by the first hex digit of the SHA-256 of its key (0-7 fit), fixed before any row
    import hashlib

    for r in ROWS:
        if r["source"] in merge_calibration.ORIGINAL_SOURCES:
            assert r["split"] == "fit", r["source"]
        else:
            digit = hashlib.sha256(r["source"].encode()).hexdigest()[0]
            assert r["split"] == ("fit" if digit in "01234567" else "test"), r["source"]
    # pinned by hand: sha256("pope2022efficiently") starts with 0, "chitty2024..." with a
    assert merge_calibration.split_of("pope2022efficiently") == "fit"
    assert merge_calibration.split_of("chitty2024llminferencebench") == "test"
    assert {r["split"] for r in ROWS} == {"fit", "test"}


def test_every_source_has_its_readme_entry():
    readme = (ROOT / "data" / "calibration" / "README.md").read_text(encoding="utf-8")
    assert not sorted(k for k in {r["source"] for r in ROWS} if f"`{k}`" not in readme)


def test_package_csv_is_the_merge_of_its_transcriptions():
    # the rows a reader loads are exactly the transcriptions (with their split), nothing edited
    assert merge_calibration.main(["--check"]) == 0


@pytest.mark.parametrize("script", sorted(
    (ROOT / "data" / "calibration" / "transcriptions").glob("*_check.py")), ids=lambda p: p.stem)
def test_every_transcription_recomputes_from_what_its_source_printed(script):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "lib")}, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_calibration_conversions_by_hand():
    # TensorRT-LLM v0.9.0, H200 FP8, LLaMA 7B, batch 896, 128 in / 128 out, 20,618 out tok/s/GPU
    # on 1 GPU: the static batch took 896 x 128 / 20,618 = 5.5625 s.
    first = ROWS[0]
    assert (first["batch"], first["input_tokens"], first["output_tokens"]) == (896, 128, 128)
    assert first["measured_s"] == pytest.approx(896 * 128 / 20618, rel=1e-6)


def test_engine_specific_coefficients_are_the_cited_ones():
    sg = [r for r in ROWS if r["engine"].startswith("SGLang")]
    assert sg and all(_calibration.overheads_for(r).step_overhead == SGLANG_STEP_OVERHEAD
                      for r in sg)
    trt = [r for r in ROWS if r["engine"].startswith(("TensorRT", "NVIDIA NIM"))]
    assert trt and all(_calibration.engine_of(r) == "tensorrt-llm" for r in trt)
    assert all(_calibration.overheads_for(r).step_overhead == 0.0 for r in trt)
    # vLLM rows: 10 kernels per dense layer counted from its Llama file, 2 more (the all-reduces
    # of the output and down projections) when tensor-parallel
    vl = [r for r in ROWS if r["engine"].startswith("vLLM")]
    assert {r["tp"] for r in vl} >= {1, 4}
    for r in vl:
        o = _calibration.overheads_for(r)
        assert (o.engine, o.kernels_per_layer, o.tp_extra_kernels) == ("vllm", 10, 2)
    assert all(_calibration.overheads_for(r).kernels_per_layer == KERNELS_PER_LAYER
               for r in ROWS if not r["engine"].startswith("vLLM"))
    # rows whose engine replayed CUDA graphs (as published) replay their decode steps
    for r in ROWS:
        assert _calibration.overheads_for(r).cuda_graphs == ("cuda graph" in r["engine"].lower())


def test_engine_presets_are_public_and_change_what_their_engine_does():
    vllm, sglang, trt = (Overheads.for_engine(e) for e in ("vllm", "sglang", "tensorrt-llm"))
    assert vllm.engine == "vllm" and vllm.cuda_graphs and not DEFAULT_OVERHEADS.cuda_graphs
    assert sglang.step_overhead == SGLANG_STEP_OVERHEAD and trt.step_overhead == 0.0
    assert Overheads.for_engine("vllm", cuda_graphs=False).cuda_graphs is False
    assert Overheads.for_engine("vllm", step_overhead=1e-3).step_overhead == 1e-3
    m, c = models.get("Llama-3-70B"), chips.get("H100-SXM")
    step = {name: estimate_step(m, c, 8, 2048, n_chips=8, overheads=o)
            for name, o in (("vllm", vllm), ("trt", trt), ("vllm eager",
                            Overheads.for_engine("vllm", cuda_graphs=False)))}
    # vLLM under TP8: 80 layers x 12 kernels, each a graph node in decode
    assert step["vllm"].layer_overhead_time == pytest.approx(80 * 12 * GRAPH_NODE_OVERHEAD)
    assert step["trt"].layer_overhead_time == pytest.approx(80 * 9 * GRAPH_NODE_OVERHEAD)
    assert step["vllm eager"].layer_overhead_time == pytest.approx(80 * 12 * KERNEL_OVERHEAD)
    # one chip: no all-reduce kernels; a prefill step launches its kernels even under graphs
    one = estimate_step(m, c, 1, 2048, n_chips=1, phase="prefill", overheads=vllm)
    assert one.layer_overhead_time == pytest.approx(80 * 10 * KERNEL_OVERHEAD)
    # SGLang's host time per step
    sg = estimate_step(m, c, 8, 2048, n_chips=8, overheads=sglang)
    assert sg.step_overhead_time == pytest.approx(SGLANG_STEP_OVERHEAD)
    # TensorRT-LLM's experts run in CUTLASS grouped GEMMs, vLLM's and SGLang's in Triton's
    assert (trt.grouped_kernel, vllm.grouped_kernel, sglang.grouped_kernel) == (
        "cutlass", "triton", "triton")
    mx = models.get("Mixtral-8x7B")
    slow, fast = (estimate_step(mx, c, 1, 4096, n_chips=2, phase="prefill", overheads=o)
                  for o in (vllm, trt))
    # a compute-bound prefill: the experts' arithmetic at 0.285 of peak against 0.537
    assert slow.grouped_kernel_time > fast.grouped_kernel_time > 0


@pytest.mark.parametrize("kw, match", [
    (dict(engine="vlm"), "engine: got 'vlm'.*did you mean 'vllm'"),
    (dict(engine="vllm", cuda_graphs="yes"), "cuda_graphs: got 'yes'"),
    (dict(engine="vllm", grouped_kernel="deepgem"), "grouped_kernel: got 'deepgem'"),
])
def test_engine_preset_rejects_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        Overheads.for_engine(**kw)


def test_estimate_never_below_bound_on_any_row():
    for r, res in RESULTS:
        assert res["estimate"] >= res["bound"], r


def test_fit_sources_within_30_percent_for_most_rows():
    """On the sources looked at while the terms were chosen, most rows land within a factor of
    1.3 of the estimate, and more than the bound's. (The held-out sources' score is the
    chapter's; this is the check that a change to the terms does not undo the fit.)"""
    fit = [(r, res) for r, res in RESULTS if r["split"] == "fit"]
    hits = [1 / 1.3 <= r["measured_s"] / res["estimate"] <= 1.3 for r, res in fit]
    bound_hits = [1 / 1.3 <= r["measured_s"] / res["bound"] <= 1.3 for r, res in fit]
    assert sum(hits) / len(hits) > 0.5, f"{sum(hits)} of {len(hits)} fit rows within 1.3x"
    assert sum(hits) > 2 * sum(bound_hits)


def test_no_measurement_is_below_the_bound():
    # a measured time under a lower bound would be a bug in the bound (or in the row)
    for r, res in RESULTS:
        assert r["measured_s"] >= res["bound"], (r["model"], r["chip"], r["phase"])


def test_public_calibration_rows_are_the_evaluated_rows():
    # the reader's accessor (package data, no repository path) gives the same rows and numbers
    from llmmath.estimate import calibration_rows
    pub = calibration_rows()
    assert len(pub) == len(RESULTS)
    for p, (r, res) in zip(pub, RESULTS, strict=True):
        assert p["measured_s"] == r["measured_s"] and p["split"] == r["split"]
        assert p["bound_s"] == res["bound"] and p["estimate_s"] == res["estimate"]
        assert sum(p["terms"].values()) == pytest.approx(p["estimate_s"], rel=1e-12)


def test_score_is_symmetric_and_geometric():
    # measured/predicted of 1.3 and 1/1.3 are both inside; 1.31 and 1/1.31 both outside
    s = _calibration._score([1.3, 1.0, 1.31, 1.0], [1.0, 1.3, 1.0, 1.31])
    assert (s.n, s.within) == (4, 2)
    # |ln| of the four ratios: ln 1.3 twice, ln 1.31 twice; geometric mean error sqrt(1.3 x 1.31)
    assert s.gm_error == pytest.approx((1.3 * 1.31) ** 0.5)
    assert _calibration._score([2.0], [1.0]).median_ratio == 2.0


def test_fair_baseline_never_sees_its_own_source():
    rows = [dict(source=s, kind=k, measured_s=m) for s, k, m in
            (("a", "dense", 2.0), ("a", "dense", 2.0), ("b", "dense", 8.0), ("c", "moe", 3.0))]
    base = _calibration.scaled_bound(rows, [1.0, 1.0, 1.0, 1.0])
    # source a's rows get b's constant (8), b's get a's (2); c has no other MoE source: every
    # other source's rows, geometric mean of 2, 2, 8 = 3.17
    assert base[:3] == pytest.approx([8.0, 8.0, 2.0])
    assert base[3] == pytest.approx((2 * 2 * 8) ** (1 / 3))
    with pytest.raises(ValueError, match="leave-one-out"):
        _calibration.scaled_bound(rows[:2], [1.0, 1.0])
    # two pages of one publisher are one source for leave-one-out
    assert _calibration.publisher("nvidia_trtllm_perf_v090") == "nvidia"
    assert _calibration.publisher("nvidia_nim_llm_benchmarks") == "nvidia"
    assert _calibration.publisher("lmsys_gpt_oss_2025") == "sglang"
    keys = ("nvidia_a", "nvidia_b", "vllm_c")
    pages = [dict(r, source=s) for r, s in zip(rows[:3], keys, strict=True)]
    assert _calibration.scaled_bound(pages, [1.0] * 3)[0] == pytest.approx(8.0)


def test_calibration_score_groups_and_rejects_a_bad_split():
    from llmmath.estimate import calibration_score

    sc = calibration_score()
    assert sc[("all", "all")]["estimate"].n == len(ROWS)
    assert sum(sc[(p, "all")]["estimate"].n for p in ("decode", "prefill", "generate")
               if (p, "all") in sc) == len(ROWS)
    with pytest.raises(ValueError, match="split: got 'held-out'"):
        calibration_score(split="held-out")


# ----- prefill terms of issue 32 (prefill helper): elementwise kernels, the measured all-reduce ---

def test_prefill_elementwise_kernels_by_hand():
    # TOY prefill, batch 1, 128 tokens, one chip: per token 2 layers x 2 add-norms x 4 x 1,024
    # = 16,384 elements plus 2 dense MLP layers x 3 x 4,096 = 24,576: 40,960 elements x 2 B x 128
    # tokens = 10,485,760 B at half of 1e12 B/s = 2.097152e-5 s
    e = estimate_step(TOY, TOY_CHIP, batch=1, context=128, phase="prefill", overheads=ROUND)
    assert e.elementwise_time == pytest.approx(2.097152e-5)
    # on 2 chips the activation's 3 x 4,096 is split (2 x 3 x 2,048 = 12,288), the add-norms
    # are not: 28,672 x 2 x 128 / 5e11 = 1.4680064e-5 s
    e2 = estimate_step(TOY, TOY_CHIP, batch=1, context=128, n_chips=2, phase="prefill",
                       overheads=ROUND)
    assert e2.elementwise_time == pytest.approx(1.4680064e-5)
    assert e.terms["elementwise kernels"] == e.elementwise_time


def test_measured_all_reduce_time_is_the_table():
    from llmmath.kernel_rates import measured_all_reduce_time
    h100 = chips.get("H100-SXM")
    # aiconfigurator, TensorRT-LLM 1.3.0rc10 custom all-reduce on 4 H100s: 1,048,576 bf16
    # elements (2,097,152 B) in 0.025864 ms; 16,777,216 elements in 0.174426 ms
    assert measured_all_reduce_time(h100, 4, 2 * 2**20) == pytest.approx(25.864e-6)
    assert measured_all_reduce_time(h100, 4, 2 * 2**24) == pytest.approx(174.426e-6)
    # halfway (in log2) between 2^20 and 2^21 elements: the geometric mean of 25.864 and 40.047 us
    assert measured_all_reduce_time(h100, 4, 2 * 2**20.5) == pytest.approx(
        (25.864e-6 * 40.047e-6) ** 0.5)
    # below the table: its first latency (256 elements, 2.888 us); above it: scaled with the
    # bytes from the last (2^28 elements, 2.305817 ms), so 2^29 elements take 4.611634 ms
    assert measured_all_reduce_time(h100, 4, 2.0) == pytest.approx(2.888e-6)
    assert measured_all_reduce_time(h100, 4, 2 * 2**29) == pytest.approx(4.611634e-3)
    assert measured_all_reduce_time(h100, 1, 1e6) == 0.0
    assert measured_all_reduce_time(h100, 16, 1e6) is None            # no such chip count
    assert measured_all_reduce_time(chips.get("MI300X"), 4, 1e6) is None  # no such chip
    with pytest.raises(ValueError, match="nbytes"):
        measured_all_reduce_time(h100, 4, -1.0)
    with pytest.raises(ValueError, match="chip"):
        measured_all_reduce_time("H100-SXM", 4, 1.0)


def test_prefill_all_reduce_uses_the_measured_table():
    # Llama 2 70B, 128 tokens on 4 H100s: 80 layers x 2 all-reduces of 128 x 8,192 = 1,048,576
    # elements, 25.864 us each (the table): 4.13824 ms; decode keeps the alpha-beta model, and
    # an explicit hop latency or Overheads(shape_efficiency=False) restores it in prefill too
    m, h100 = models.get("LLaMA-2-70B"), chips.get("H100-SXM")
    e = estimate_step(m, h100, 1, 128, n_chips=4, phase="prefill")
    assert e.tp_comm_time == pytest.approx(160 * 25.864e-6)
    # the same with chip counts as an array, term by term
    ea = estimate_step(m, h100, 1, 128, n_chips=np.array([4, 8]), phase="prefill")
    assert ea.tp_comm_time[0] == pytest.approx(160 * 25.864e-6)
    assert ea.tp_comm_time[1] == pytest.approx(160 * 35.195e-6)   # 8 GPUs: 0.035195 ms
    off = estimate_step(m, h100, 1, 128, n_chips=4, phase="prefill",
                        overheads=dataclasses.replace(DEFAULT_OVERHEADS, shape_efficiency=False))
    assert off.tp_comm_time < e.tp_comm_time
