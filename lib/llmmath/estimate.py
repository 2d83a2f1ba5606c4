"""From bound to estimate: what one step is likely to take, not only what it cannot beat.

:func:`estimate_step` starts from the per-operation lower bound of :mod:`llmmath.step`
(``max(t_attn, t_kv) + max(t_matmul, t_weights)``, unchanged) and adds, one by one, the time the
bound leaves out. Each addition is a separate field of the result, so a reader (or a waterfall
figure) sees where the time goes:

1. ``kernel_time``: **kernel efficiency by shape.** Real kernels reach a measured fraction of the
   datasheet (:data:`.MATMUL_EFFICIENCY`, :data:`.ATTENTION_EFFICIENCY`, and for an MLA model's
   decode :data:`.MLA_ATTENTION_EFFICIENCY`); a matmul reads its weights at the bandwidth
   DeepGEMM's decode-sized GEMMs reach (:data:`.GEMM_MEMORY_EFFICIENCY`, 0.67 of the datasheet),
   attention its KV cache at FlashMLA's (:data:`.MEMORY_EFFICIENCY`, 0.90); and a matmul whose
   activations have ``R`` rows is computed in tensor-core tiles of :data:`.TILE_M` rows: ``R`` is
   padded to ``ceil(R / 64) x 64``. At batch 8 a decode matmul does the arithmetic of 64 rows,
   eight times what the bound counts. **By shape**, on the chips NVIDIA's aiconfigurator
   kernel tables cover (H100, H200, A100): a prefill step's non-expert matmuls run at the
   fraction of the peak TensorRT-LLM's GEMMs are measured to reach at the step's rows
   (:data:`.GEMM_EFFICIENCY_BY_ROWS`: 0.22-0.47 at 128 rows, where neither the weight stream nor
   the arithmetic hides the other; 0.68-0.84 at 8,192), its attention at the fraction the
   engine's context-attention kernel reaches at the prompt's length
   (:data:`.CONTEXT_ATTENTION_EFFICIENCY`: 0.24-0.30 at 1,024 tokens, about 0.5 at 16,384, not
   FlashAttention-3's best 0.75), and an fp8 matmul streams its weights at the engines'
   per-tensor fp8 rate (:data:`.FP8_GEMM_MEMORY_EFFICIENCY`, 0.55 of an H100's bandwidth), not
   DeepGEMM's 0.67. Other chips keep the best-case constants. This is the same term, not a
   new one: an achieved kernel rate, now a function of the shape instead of one number.
   ``elementwise_time``: **memory-bound elementwise kernels** of a prefill step, which the
   bound does not count: the two residual-add-and-norm kernels of every layer and the gated
   activation of each dense MLP layer, as aiconfigurator lists a Llama layer's operations
   (:data:`ADD_NORM_ELEMENTS`, :data:`GATED_ACTIVATION_ELEMENTS`), their bytes at
   :data:`.MEMORY_EFFICIENCY` of the bandwidth. Decode steps leave it out (at a few hundred
   rows it is a few per cent of a step, at most about a tenth at batch 256, and the chapter's
   from-scratch cell does not count it).
2. ``moe_time``: **grouped expert matmuls at small batch.** With ``T_b`` tokens routed ``k`` at a
   time over ``E`` experts, ``E_t = E (1 - (1 - k/E)^T_b)`` experts are touched; each reads its
   weights whole (:data:`.GROUPED_GEMM_MEMORY_EFFICIENCY`, the dense GEMMs' 0.67), and multiplies
   only ``T_b k / E_t`` rows, padded to a tile of its own, at :data:`.GROUPED_MATMUL_DERATE` of the
   dense matmul rate (DeepGEMM's grouped against its dense GEMMs). The shared
   matmuls and the experts' matmuls overlap their own weight reads separately.
   ``grouped_kernel_time``: **the engine's grouped-GEMM kernel.** Serving engines do not run
   DeepGEMM's grouped GEMMs: vLLM and SGLang run a Triton fused-MoE kernel, TensorRT-LLM a
   CUTLASS one. Their measured rates at prefill shapes (NVIDIA's aiconfigurator kernel tables,
   16,384 tokens, H100 and H200) are about half of DeepGEMM's: :data:`.GROUPED_GEMM_EFFICIENCY`,
   Triton's by default (0.285 of the bf16 peak, 0.259 of fp8's, against DeepGEMM's 0.60-0.66).
   The experts' arithmetic runs at that rate (never credited above DeepGEMM's).
   ``replicated_weight_time``: **expert parallelism's replicated weights.** With
   ``expert_parallel`` > 1 the attention and dense weights are split over a tensor-parallel group
   of ``n_chips / expert_parallel`` chips, not over all of them (data-parallel attention:
   replicated on every chip), so each chip reads ``expert_parallel`` times the bound's share,
   as :func:`llmmath.moe.expert_parallel_decode_step` counts them.
   ``imbalance_time``: **the busiest chip.** With expert parallelism the experts' arithmetic
   waits for the chip that received the most tokens: :func:`llmmath.moe.imbalance_factor` for
   uniform random routing (binomial statistics, no coefficient). A real router is less even
   (SGLang's expert rebalancing measured 1.49x more prefill and 2.54x more decode throughput
   [lmsys2025largeep]), so this is a floor of the imbalance.
3. ``comm_time``: **communication**, the partitioning chapter's latency-plus-bandwidth model
   (:mod:`llmmath.collectives`, :mod:`llmmath.parallel`): the tensor-parallel all-reduces of each
   layer and the expert-parallel all-to-alls of each MoE layer, over the scale-up links at
   :data:`LINK_EFFICIENCY` of line rate, each step paying :data:`HOP_LATENCY` on an NVSwitch
   (NVIDIA chips: 2 steps per all-reduce) or :data:`RING_HOP_LATENCY` on a ring (other chips:
   ``2 (n - 1)`` steps). In a prefill step on H100, H200 and A100 (``shape_efficiency``) the
   tensor-parallel all-reduce takes the latency TensorRT-LLM's all-reduce is measured at for
   the message's size (:data:`.ALL_REDUCE_LATENCY_MS`): at a prefill's millions of elements the
   alpha-beta model is short (128 tokens of Llama 2 70B on 4 H100s: 25.9 us measured, about
   14 us modelled).
4. ``layer_overhead_time`` and ``step_overhead_time``: **fixed costs**: :data:`KERNELS_PER_LAYER`
   kernels per layer (vLLM's count from its model file: :data:`VLLM_KERNELS_PER_LAYER`),
   :data:`MOE_EXTRA_KERNELS` more per MoE layer and
   :data:`MLA_EXTRA_KERNELS` more per layer with latent attention (counted from SGLang's
   DeepSeek-V3 model file), each costing :data:`KERNEL_OVERHEAD` to launch (or
   :data:`GRAPH_NODE_OVERHEAD` under CUDA graphs); and per step :data:`STEP_OVERHEAD` (sampling,
   scheduling, the host loop).

``time = bound.time + kernel_time + moe_time + grouped_kernel_time + replicated_weight_time +
imbalance_time + comm_time + layer_overhead_time + step_overhead_time``: every term is zero or
positive, so the estimate is never below the bound.

Every coefficient is a named module-level constant with its source (keys of references.bib);
none is fitted to a measurement. Change one by passing ``overheads=Overheads(...)`` (a small
frozen dataclass, defaults below), for example ``dataclasses.replace(DEFAULT_OVERHEADS,
kernel_overhead=0)`` to see what one term is worth; ask for what a serving engine is known to do
with :meth:`Overheads.for_engine` ("vllm", "sglang", "tensorrt-llm": :data:`ENGINE_PRESETS`).
:func:`calibration_rows` gives the published measurements the estimate is checked against
(``llmmath/data/measured_latency.csv``, described in the repository's
``data/calibration/README.md``), :func:`calibration_score` how close it comes: within a factor
of 1.3 either way, the geometric-mean error, beside the bound and a fair baseline (the bound
times one constant per kind, fitted leave one publisher out). It is good for decode steps and
short for prefill (by about a third at the median, on the engines of 2023-24, after the measured
shape efficiencies; by half before them); it is a calibrated floor, not a
bound: rows run faster than it where a term assumed too much (collectives on a TPU torus run as
a ring; Triton's rate measured on Hopper applied to a kernel tuned for A100). The chapter
(``book/bound_to_estimate.ipynb``) prints the scores and names each group of rows it misses.

Checked and not the gap: the expert-parallel all-to-all. DeepEP's intranode kernels move
153-158 GB/s of the ~160 GB/s an H800's NVLink reaches [deepseek_deepep], above the
:data:`LINK_EFFICIENCY` used here, so the alpha-beta all-to-all is if anything long; its
low-latency RDMA kernels (EP8, 128 tokens, top-8, hidden 7,168: dispatch 77 us, combine
114 us) are faster than the alpha-beta time at the 50 GB/s NIC (128 and 257 us), which counts
all routed bytes as crossing it. No calibration row uses RDMA between nodes. FlashMLA publishes
only its peak rates, none at small batch, so the peak fractions stand for MLA decode.

Checked and not the gap at small batch: the grouped kernel's weight bandwidth. The same
aiconfigurator tables time vLLM 0.14.0's Triton fused-MoE at 1 to 16 tokens on an H100 (bf16,
Qwen3-235B-A22B's experts: 0.118 ms for the 8 experts one token reaches, 1.63 ms for all 128 at
16 tokens): 2,560 to 2,970 GB/s of weights, above the 0.67 of 3,350 GB/s used here, so MoE decode
estimates that fall short at small batch do not fall short for the kernel's bandwidth. The
routing and permutation kernels (``moe_align_block_size``, the activation, the top-k sum) are
inside the measured fused-MoE time, hence inside :data:`.GROUPED_GEMM_EFFICIENCY` at prefill; the
router GEMM and top-k selection are not timed there and count only as launches
(:data:`MOE_EXTRA_KERNELS`). The measured rate falls as the per-GPU expert width narrows with
tensor parallelism (Qwen3-235B-A22B in fp8 on SGLang: 855 TFLOP/s at tp 1, 325 at tp 8); one
median per format leaves that in its spread (183 to 617 TFLOP/s in bf16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ._check import choice, fraction, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .collectives import NCCL_NVLINK_EFFICIENCY, STEP_LATENCIES
from .kernel_rates import (
    ATTENTION_EFFICIENCY,
    FP8_GEMM_MEMORY_EFFICIENCY,
    GEMM_MEMORY_EFFICIENCY,
    GROUPED_GEMM_EFFICIENCY,
    GROUPED_GEMM_MEMORY_EFFICIENCY,
    GROUPED_MATMUL_DERATE,
    MATMUL_EFFICIENCY,
    MEMORY_EFFICIENCY,
    MLA_ATTENTION_EFFICIENCY,
    TILE_M,
    measured_all_reduce_time,
    rates_by_shape,
)
from .moe import imbalance_factor as _imbalance_factor
from .parallel import expert_parallel_comm_time, tensor_parallel_comm_time
from .step import decode_step, prefill_step
from .units import fmt_time

__all__ = [
    "LINK_EFFICIENCY",
    "HOP_LATENCY",
    "RING_HOP_LATENCY",
    "KERNELS_PER_LAYER",
    "VLLM_KERNELS_PER_LAYER",
    "MOE_EXTRA_KERNELS",
    "MLA_EXTRA_KERNELS",
    "KERNEL_OVERHEAD",
    "GRAPH_NODE_OVERHEAD",
    "ADD_NORM_ELEMENTS",
    "GATED_ACTIVATION_ELEMENTS",
    "STEP_OVERHEAD",
    "SGLANG_STEP_OVERHEAD",
    "ENGINE_PRESETS",
    "ENGINES",
    "PHASES",
    "Overheads",
    "DEFAULT_OVERHEADS",
    "Estimate",
    "padded_rows",
    "estimate_step",
    "calibration_rows",
    "calibration_score",
]

#: Bus bandwidth NCCL reaches over NVLink line rate, about 370 of 450 GB/s [nccl_nvlink_busbw]
#: (:data:`llmmath.collectives.NCCL_NVLINK_EFFICIENCY`).
LINK_EFFICIENCY = NCCL_NVLINK_EFFICIENCY

#: Fixed cost of one collective step on an NVSwitch: NVLink SHARP all-reduce of a small message
#: on H100s, about 6 us for its two steps [nccl_nvls_latency]
#: (:data:`llmmath.collectives.STEP_LATENCIES`). Used for NVIDIA chips, whose scale-up domain
#: is an NVSwitch (topology "switch": an all-reduce is 2 steps).
HOP_LATENCY = STEP_LATENCIES["NVLink SHARP step (H100, NCCL)"][0]

#: Fixed cost of one step of a ring collective: NCCL's ring all-reduce of a tiny message over 8
#: A100s on NVLink, 33.7 us for its 2 x 7 steps [nccl_tests_latency]. Used for chips whose
#: scale-up network is not a switch with in-network reduction (AMD's Infinity Fabric mesh, TPU
#: tori): topology "ring", an all-reduce over n chips is 2 (n - 1) steps. An assumption for
#: those chips (no like-for-like measurement is cited): the library's only measured ring step.
RING_HOP_LATENCY = STEP_LATENCIES["NVLink ring step (A100, NCCL)"][0]

#: Kernels one decoder layer launches when norms, rotary embedding and residual adds are fused
#: into their neighbours, counted here from the layer's operations (recount for your engine):
#: input norm, QKV projection, attention (rotary embedding and KV write fused in), output
#: projection, all-reduce fused with the residual add and the next norm, gate/up projection,
#: activation, down projection, and the second all-reduce with its residual: 9. The count of a
#: dense layer with multi-head (or grouped-query) attention; an MoE or MLA layer adds
#: :data:`MOE_EXTRA_KERNELS` and :data:`MLA_EXTRA_KERNELS`.
KERNELS_PER_LAYER = 9

#: Kernels a dense Llama layer launches in vLLM without tensor parallelism, counted from its model
#: file (``LlamaDecoderLayer.forward``, the version stored at commit 0035bdf2) [vllm_llama_py]:
#: input RMSNorm (fused with the residual add), QKV projection, rotary embedding, KV-cache write,
#: attention, output projection, post-attention RMSNorm (fused add), gate/up projection,
#: activation (``SiluAndMul``), down projection: 10. With tensor parallelism each of the two
#: ``RowParallelLinear`` layers (output and down projections) adds an all-reduce kernel: 12.
#: ``llmmath._calibration.overheads_for`` uses it for rows served by vLLM.
VLLM_KERNELS_PER_LAYER = 10

#: Kernels an MoE layer launches beyond a dense MLP's three (gate/up, activation, down), counted
#: from SGLang's DeepSeek-V3 model file (``DeepseekV2MoE.forward_normal``, tensor-parallel
#: experts, the version stored at commit 00114aef) [sglang_deepseek_v2_py]: router GEMM
#: (``MoEGate``), top-k selection (``select_experts``, one fused kernel assumed), then the fused
#: MoE it calls: ``moe_align_block_size``, grouped GEMM 1 (gate/up), activation, grouped GEMM 2
#: (down) and the sum over the top-k (``moe_sum_reduce``), the kernel names of SGLang's Triton
#: fused-MoE path (its source not re-read here): 7 kernels where a dense MLP has 3, so 4 more.
#: The shared expert is fused into the routed experts' GEMMs there (one more expert per token),
#: so it adds none. Not counted:
#: the activation-quantisation kernel an FP8 block-scaled GEMM needs before it unless fused
#: (DeepGEMM leaves FP8 casting to the caller [deepseek_deepgemm]).
MOE_EXTRA_KERNELS = 4

#: Kernels multi-head latent attention launches beyond multi-head attention's three (QKV
#: projection, attention, output projection), counted from the same file's absorbed decode path
#: (``forward_absorb_prepare`` and ``forward_absorb_core``) [sglang_deepseek_v2_py]: the fused
#: q/kv down projection, the q and kv latent norms, the q up projection, the batched matmul that
#: absorbs W_UK into the query, rotary embedding, two concatenations (query and key with their
#: rotary parts), the KV-cache write, attention, the batched matmul with W_UV, and the output
#: projection: 12 kernels where MHA has 3 (rotary and KV write fused), so 9 more.
MLA_EXTRA_KERNELS = 9

#: Time one kernel adds beyond its own work when many short kernels run back to back: the host
#: enqueues a kernel launch in about 2.6-2.8 us (measured over chains of 8 to 117 kernels,
#: [ocannl_launch_probe]); a decode step's kernels are too short to hide it.
KERNEL_OVERHEAD = 2.65e-6

#: Time one kernel adds when the step is replayed as a CUDA graph: about 1.3 us per kernel on an
#: H100 even with CUDA graphs, the launch and teardown between kernels during which no weights
#: load (Hazy Research's measurement while building a Llama-1B megakernel [hazy2025nobubbles]).
#: Pass it as ``Overheads(kernel_overhead=GRAPH_NODE_OVERHEAD)`` for an engine that replays
#: CUDA graphs. (The first version used 0.58 us per graph node, measured on a laptop GPU
#: [ocannl_launch_probe]: an H100-class measurement replaces it.)
GRAPH_NODE_OVERHEAD = 1.3e-6

#: Activation elements one token's memory-bound elementwise kernels read and write in one
#: layer, per unit of width, as NVIDIA's aiconfigurator models a Llama layer on TensorRT-LLM
#: [nvidia_aiconfigurator_llama] (``LLAMAModel``: ``ElementWise("context_add_norm_1", L, 2h,
#: 2h)`` and ``context_add_norm_2`` the same, each ``dim_in + dim_out`` elements per token; and
#: ``context_act_gate`` with ``2 F / tp`` in and ``F / tp`` out): each of the two fused
#: residual-add-and-norm kernels reads the residual and the sublayer's output and writes the new
#: residual and the normalised input, 4 ``d_model`` elements (:data:`ADD_NORM_ELEMENTS`, two per
#: layer); the gated activation reads the gate and up projections and writes their product, 3
#: ``d_ff / tp`` (:data:`GATED_ACTIVATION_ELEMENTS`; 2 for a plain GELU MLP, one in and one out).
#: The bound counts none of these bytes (it reads weights and KV cache only); at a prefill step's
#: thousands of rows they are a few per cent of the step (Llama 2 7B, 2,048 tokens: 8.6 GB over
#: the 32 layers, about 2.9 ms on an H100). The experts' own activation is inside the fused-MoE
#: rate (:data:`.GROUPED_GEMM_EFFICIENCY`), so an MoE layer pays the two add-norms only.
ADD_NORM_ELEMENTS = 4
#: Elements per token the gated activation moves per ``d_ff / tp``: the gate and up projections
#: read, their product written (see :data:`ADD_NORM_ELEMENTS`).
GATED_ACTIVATION_ELEMENTS = 3

#: Fixed cost per step outside the layers: the host loop that samples the next tokens, updates
#: the batch and launches the step. SGLang measured a GPU bubble of about 2 ms before every
#: decode step of a CUDA-graph replay (Qwen2.5-32B, TP4, batch 64) [sglang_decode_bubble]; a C++
#: runtime spends less. Default: zero (TensorRT-LLM's C++ session loop; pass
#: :data:`SGLANG_STEP_OVERHEAD` for SGLang's Python scheduler).
STEP_OVERHEAD = 0.0

#: SGLang's host time per decode step, about 2 ms [sglang_decode_bubble]: pass it as
#: ``Overheads(step_overhead=SGLANG_STEP_OVERHEAD)`` for a step served by SGLang.
SGLANG_STEP_OVERHEAD = 2e-3

#: Serving engines with a preset (:meth:`Overheads.for_engine`): what each is known to do that
#: the defaults (a fused C++ engine: :data:`KERNELS_PER_LAYER` kernels, no host time per step)
#: do not. vLLM launches its Llama layer's kernels unfused, plus an all-reduce kernel after each
#: of its two row-parallel projections under tensor parallelism (:data:`VLLM_KERNELS_PER_LAYER`,
#: counted from its model file [vllm_llama_py]); SGLang's Python scheduler costs
#: :data:`SGLANG_STEP_OVERHEAD` per step [sglang_decode_bubble]; TensorRT-LLM (and NVIDIA NIM,
#: which serves through it) runs its experts in CUTLASS grouped GEMMs, not Triton's fused MoE
#: (:data:`.GROUPED_GEMM_EFFICIENCY`), and is otherwise the defaults. All three replay decode
#: steps as CUDA graphs unless told not to: vLLM's ``enforce_eager`` defaults to False
#: [vllm_engine_args], SGLang captures graphs unless ``--disable-cuda-graph``
#: [sglang_server_args], TensorRT-LLM's PyTorch backend
#: builds a ``CudaGraphConfig`` by default, "enabled for batches that consist of decoding
#: requests only" [trtllm_llm_args]. A prefill step launches its kernels (none of the three
#: graphs a whole prefill step).
ENGINE_PRESETS = {
    "vllm": {"kernels_per_layer": VLLM_KERNELS_PER_LAYER, "tp_extra_kernels": 2},
    "sglang": {"step_overhead": SGLANG_STEP_OVERHEAD},
    "tensorrt-llm": {"grouped_kernel": "cutlass"},
}
#: The engine names :meth:`Overheads.for_engine` accepts.
ENGINES = tuple(ENGINE_PRESETS)

#: The band the estimate chapter and its calibration figure call "within": the estimate differs
#: from a measurement by at most this fraction of it (measured/estimate between 1/1.3 and 1/0.7).
CALIBRATION_BAND = 0.3

#: DeepEP's intranode (NVLink) kernels on H800s: 153 to 158 GB/s measured, against about 160 GB/s
#: that NVLink reaches on that GPU [deepseek_deepep].
DEEPEP_INTRANODE_BANDWIDTH = (153e9, 158e9)
H800_NVLINK_BANDWIDTH = 160e9

#: The two phases a step can be in.
PHASES = ("decode", "prefill")

#: Collective topologies an estimate can assume
#: (a subset of :data:`llmmath.collectives.TOPOLOGIES`).
TOPOLOGIES = ("switch", "ring")


@dataclass(frozen=True)
class Overheads:
    """The coefficients of :func:`estimate_step`, each defaulting to its cited module constant.

    - ``matmul_efficiency``: achievable fraction of the matmul peak; ``None`` takes
      :data:`.MATMUL_EFFICIENCY` for the step's ``dtype`` (bf16's for a format not listed)
    - ``attention_efficiency``, ``memory_efficiency``: achievable fractions of the attention
      FLOP rate and of HBM bandwidth for the KV-cache reads, in (0, 1];
      ``mla_attention_efficiency``: the attention FLOP rate of an MLA model's decode
      (:data:`.MLA_ATTENTION_EFFICIENCY`)
    - ``gemm_memory_efficiency``: fraction of HBM bandwidth a matmul reads its weights at
      (:data:`.GEMM_MEMORY_EFFICIENCY`); ``grouped_memory_efficiency``: the same for the experts'
      grouped matmuls (:data:`.GROUPED_GEMM_MEMORY_EFFICIENCY`); ``grouped_matmul_derate``: the
      experts' arithmetic rate relative to a dense matmul's (:data:`.GROUPED_MATMUL_DERATE`);
      ``grouped_matmul_efficiency``: fraction of the matmul peak the engine's grouped-expert
      kernel reaches; ``None`` takes ``grouped_kernel``'s measured fraction for the step's
      ``dtype`` (:data:`.GROUPED_GEMM_EFFICIENCY`: "triton", the fused MoE of vLLM and SGLang, the
      default; "cutlass", TensorRT-LLM's)
    - ``routing_imbalance``: with expert parallelism, pace the experts' arithmetic by the busiest
      chip under uniform random routing (:func:`llmmath.moe.imbalance_factor`); ``False`` leaves
      it out
    - ``shape_efficiency``: in a prefill step on a chip the measured tables cover (H100, H200,
      A100), run the non-expert matmuls at the engine GEMMs' measured fraction of the peak for
      the step's rows (:data:`.GEMM_EFFICIENCY_BY_ROWS`) and attention at the engine kernel's
      fraction for the prompt length (:data:`.CONTEXT_ATTENTION_EFFICIENCY`), instead of the
      best-case constants; an explicit ``matmul_efficiency`` still wins for the matmuls; and
      with ``dtype="fp8"`` on H100 and H200 read the non-expert weights at the engines' fp8
      GEMMs' measured bandwidth (:data:`.FP8_GEMM_MEMORY_EFFICIENCY`), in both phases.
      ``False`` keeps the constants everywhere
    - ``tile_m``: rows of one tensor-core tile (``R``, the activation operand's rows, is padded
      to a multiple of it)
    - ``link_efficiency``: fraction of the scale-up line rate collectives reach, in (0, 1]
    - ``topology``: how the collectives run, "switch" or "ring" (:mod:`llmmath.collectives`);
      ``None`` takes "switch" for NVIDIA chips (an NVSwitch domain) and "ring" for the others
    - ``hop_latency``: seconds per collective step; ``None`` takes :data:`HOP_LATENCY` on a
      switch and :data:`RING_HOP_LATENCY` on a ring
    - ``kernels_per_layer``, ``kernel_overhead``: kernels per dense layer and seconds each adds;
      ``moe_extra_kernels``: more per MoE layer, ``mla_extra_kernels``: more per layer of a
      model with multi-head latent attention
    - ``step_overhead``: seconds per step outside the layers (sampling, scheduling)
    - ``tp_extra_kernels``: more kernels per layer when the layer is tensor-parallel (an engine
      that launches its all-reduces as kernels of their own)
    - ``cuda_graphs``: decode steps are replayed as CUDA graphs, each kernel costing
      ``graph_node_overhead`` (:data:`GRAPH_NODE_OVERHEAD`) instead of ``kernel_overhead``;
      prefill steps always launch their kernels
    - ``engine``: the serving engine the coefficients describe (a label; ``None``: no engine
      named, the defaults). :meth:`for_engine` sets it with the engine's preset.

    ``Overheads()`` (:data:`DEFAULT_OVERHEADS`) is a fused engine without CUDA graphs or host
    time; ``Overheads.for_engine("vllm")`` is vLLM with its defaults.
    """

    matmul_efficiency: float | None = None
    attention_efficiency: float = ATTENTION_EFFICIENCY
    mla_attention_efficiency: float = MLA_ATTENTION_EFFICIENCY
    memory_efficiency: float = MEMORY_EFFICIENCY
    gemm_memory_efficiency: float = GEMM_MEMORY_EFFICIENCY
    grouped_memory_efficiency: float = GROUPED_GEMM_MEMORY_EFFICIENCY
    grouped_matmul_derate: float = GROUPED_MATMUL_DERATE
    grouped_matmul_efficiency: float | None = None
    grouped_kernel: str = "triton"
    routing_imbalance: bool = True
    shape_efficiency: bool = True
    tile_m: int = TILE_M
    link_efficiency: float = LINK_EFFICIENCY
    topology: str | None = None
    hop_latency: float | None = None
    kernels_per_layer: int = KERNELS_PER_LAYER
    moe_extra_kernels: int = MOE_EXTRA_KERNELS
    mla_extra_kernels: int = MLA_EXTRA_KERNELS
    kernel_overhead: float = KERNEL_OVERHEAD
    step_overhead: float = STEP_OVERHEAD
    tp_extra_kernels: int = 0
    cuda_graphs: bool = False
    graph_node_overhead: float = GRAPH_NODE_OVERHEAD
    engine: str | None = None

    @classmethod
    def for_engine(cls, engine: str, cuda_graphs: bool = True, base: Overheads | None = None,
                   **changes) -> Overheads:
        """The coefficients for a serving engine: ``engine`` one of :data:`ENGINES` ("vllm",
        "sglang", "tensorrt-llm"), its preset (:data:`ENGINE_PRESETS`) applied to ``base``
        (default :data:`DEFAULT_OVERHEADS`), decode steps as CUDA graphs unless
        ``cuda_graphs=False`` (the engines' default is on), then any field in ``changes``.

        >>> Overheads.for_engine("vllm").kernels_per_layer
        10
        """
        choice("engine", engine, ENGINES)
        if not isinstance(cuda_graphs, bool):
            raise ValueError(f"cuda_graphs: got {cuda_graphs!r}; expected True or False")
        base = DEFAULT_OVERHEADS if base is None else base
        if not isinstance(base, Overheads):
            raise TypeError(f"base: got {base!r}; expected an Overheads (llmmath.estimate)")
        return replace(base, **{**ENGINE_PRESETS[engine], "engine": engine,
                                "cuda_graphs": cuda_graphs, **changes})

    def __post_init__(self):
        if self.matmul_efficiency is not None:
            fraction("matmul_efficiency", self.matmul_efficiency)
        fraction("attention_efficiency", self.attention_efficiency)
        fraction("mla_attention_efficiency", self.mla_attention_efficiency)
        fraction("memory_efficiency", self.memory_efficiency)
        fraction("gemm_memory_efficiency", self.gemm_memory_efficiency)
        fraction("grouped_memory_efficiency", self.grouped_memory_efficiency)
        fraction("grouped_matmul_derate", self.grouped_matmul_derate)
        if self.grouped_matmul_efficiency is not None:
            fraction("grouped_matmul_efficiency", self.grouped_matmul_efficiency)
        choice("grouped_kernel", self.grouped_kernel, tuple(GROUPED_GEMM_EFFICIENCY))
        if not isinstance(self.routing_imbalance, bool):
            raise ValueError(f"routing_imbalance: got {self.routing_imbalance!r}; expected True "
                             "or False")
        if not isinstance(self.shape_efficiency, bool):
            raise ValueError(f"shape_efficiency: got {self.shape_efficiency!r}; expected True "
                             "or False")
        positive("tile_m", self.tile_m, integer=True, maximum=4096)
        fraction("link_efficiency", self.link_efficiency)
        if self.topology is not None:
            choice("topology", self.topology, TOPOLOGIES)
        if self.hop_latency is not None:
            positive("hop_latency", self.hop_latency, allow_zero=True)
        positive("kernels_per_layer", self.kernels_per_layer, allow_zero=True, integer=True)
        positive("moe_extra_kernels", self.moe_extra_kernels, allow_zero=True, integer=True)
        positive("mla_extra_kernels", self.mla_extra_kernels, allow_zero=True, integer=True)
        positive("kernel_overhead", self.kernel_overhead, allow_zero=True)
        positive("step_overhead", self.step_overhead, allow_zero=True)
        positive("tp_extra_kernels", self.tp_extra_kernels, allow_zero=True, integer=True)
        positive("graph_node_overhead", self.graph_node_overhead, allow_zero=True)
        if not isinstance(self.cuda_graphs, bool):
            raise ValueError(f"cuda_graphs: got {self.cuda_graphs!r}; expected True or False")
        if self.engine is not None:
            choice("engine", self.engine, ENGINES)


#: The cited defaults.
DEFAULT_OVERHEADS = Overheads()


@dataclass(frozen=True)
class Estimate:
    """One step's estimate, SI units (seconds), term by term.

    - ``bound``: the per-operation lower bound (a :class:`llmmath.step.Step`), unchanged
    - ``kernel_time``: achievable kernel rates and tile padding of the matmuls' rows
    - ``elementwise_time``: memory-bound elementwise kernels (add-norms, activation) of a
      prefill step; 0 in decode
    - ``moe_time``: grouped expert matmuls (few rows per touched expert, each padded); 0 for dense
    - ``grouped_kernel_time``: the experts' arithmetic at the engine kernel's measured rate
      (:data:`.GROUPED_GEMM_EFFICIENCY`) instead of DeepGEMM's; 0 for dense
    - ``replicated_weight_time``: with expert parallelism, each chip reading the attention and
      dense weights its tensor-parallel group holds (``ep`` times the bound's share); 0 without
    - ``imbalance_time``: with expert parallelism, the busiest chip's extra expert arithmetic under
      uniform random routing; 0 without
    - ``tp_comm_time``, ``ep_comm_time``: tensor-parallel all-reduces and expert-parallel
      all-to-alls, latency plus bandwidth; ``comm_time`` their sum
    - ``layer_overhead_time``: kernels per layer times the fixed cost of each
    - ``step_overhead_time``: sampling and scheduling, once per step
    - ``time``: the estimate, ``bound.time`` plus every term above; never below the bound
    - ``phase``: "decode" or "prefill"; ``overheads``: the coefficients used
    """

    bound: object
    kernel_time: float | np.ndarray
    elementwise_time: float | np.ndarray
    moe_time: float | np.ndarray
    grouped_kernel_time: float | np.ndarray
    replicated_weight_time: float | np.ndarray
    imbalance_time: float | np.ndarray
    tp_comm_time: float | np.ndarray
    ep_comm_time: float | np.ndarray
    comm_time: float | np.ndarray
    layer_overhead_time: float | np.ndarray
    step_overhead_time: float | np.ndarray
    time: float | np.ndarray
    phase: str = "decode"
    overheads: Overheads = field(default=DEFAULT_OVERHEADS, repr=False)

    @property
    def terms(self) -> dict:
        """The waterfall from bound to estimate: name -> seconds, in the order they add."""
        return {"bound": self.bound.time, "kernel efficiency": self.kernel_time,
                "elementwise kernels": self.elementwise_time,
                "grouped experts": self.moe_time,
                "grouped-GEMM kernel": self.grouped_kernel_time,
                "expert-parallel replicated weights": self.replicated_weight_time,
                "expert load imbalance": self.imbalance_time,
                "tensor-parallel all-reduce": self.tp_comm_time,
                "expert-parallel all-to-all": self.ep_comm_time,
                "per-layer kernel overhead": self.layer_overhead_time,
                "per-step overhead": self.step_overhead_time}


def padded_rows(tokens, tile_m=TILE_M):
    """Rows a matmul over ``tokens`` rows computes in tiles of ``tile_m``: ``ceil(T / m) x m``.

    ``padded_rows(1) == 64``, ``padded_rows(64) == 64``, ``padded_rows(65) == 128``. A fractional
    count (an expected number of tokens per expert) is padded the same way.
    """
    t = positive("tokens", tokens)
    m = positive("tile_m", tile_m, integer=True, maximum=4096)
    if type(t) is float:
        return math.ceil(t / m) * m
    return _out(np.ceil(np.asarray(t) / m) * m)


def estimate_step(model, chip, batch, context, n_chips=1, phase="decode", weight_bytes=2,
                  kv_bytes=2, dtype="bf16", expert_parallel=1, activation_bytes=2,
                  overheads=DEFAULT_OVERHEADS) -> Estimate:
    """An estimate of one step: the per-operation lower bound plus each cited overhead.

    - ``phase="decode"``: ``batch`` sequences each emit one token with ``context`` tokens
      already in their KV caches (the bound is :func:`llmmath.roofline.decode_step`).
    - ``phase="prefill"``: ``batch`` sequences each prefill ``context`` tokens with nothing
      cached before (:func:`llmmath.roofline.prefill_step` with ``prompt=context``).
    - ``n_chips`` serve the replica: attention and dense layers are tensor-parallel over
      ``n_chips / expert_parallel`` chips (an all-reduce after attention and one after the MLP);
      with ``expert_parallel`` > 1 the MoE layers are spread over that many chips and exchange
      tokens by two all-to-alls (dispatch, combine) per MoE layer. ``expert_parallel`` must
      divide ``n_chips``.
    - ``weight_bytes``, ``kv_bytes``, ``dtype`` as in the bounds; ``activation_bytes`` per
      number sent in the collectives.
    - ``overheads``: an :class:`Overheads` with the coefficients (default: the cited constants).

    Returns an :class:`Estimate`; ``estimate.time >= estimate.bound.time`` always. Arrays
    broadcast (``context=np.arange(...)`` gives every step of a generation at once), except
    ``n_chips`` and ``expert_parallel`` where the collectives run on a ring (chips other than
    NVIDIA's, or ``Overheads(topology="ring")``): a ring's step count takes one chip count.

    What it still leaves out: routing imbalance beyond uniform random routing (hot experts),
    overlap of communication with compute (two-batch overlap), speculative decoding, and a
    serving engine's queueing.
    """
    choice("phase", phase, PHASES)
    if not isinstance(overheads, Overheads):
        raise TypeError(f"overheads: got {overheads!r}; expected an Overheads (llmmath.estimate)")
    batch = positive("batch", batch)
    n = n_chips_check(n_chips)
    ep = n_chips_check(expert_parallel, "expert_parallel")
    activation_bytes = positive("activation_bytes", activation_bytes, maximum=8)
    if np.any(np.asarray(ep) > np.asarray(n)) or np.any(np.mod(np.asarray(n), np.asarray(ep)) != 0):
        raise ValueError(
            f"expert_parallel: got {expert_parallel!r}; it must divide n_chips={n_chips!r}")
    if phase == "decode":
        step = decode_step(model, chip, batch, context, n_chips=n, weight_bytes=weight_bytes,
                           kv_bytes=kv_bytes, dtype=dtype, overlap="per-op")
        tokens = np.asarray(batch, dtype=float)
    else:
        step = prefill_step(model, chip, batch, context, n_chips=n, weight_bytes=weight_bytes,
                            kv_bytes=kv_bytes, dtype=dtype, overlap="per-op")
        tokens = np.asarray(batch, dtype=float) * np.asarray(positive("context", context))
    o = overheads
    ce = o.matmul_efficiency or MATMUL_EFFICIENCY.get(dtype, MATMUL_EFFICIENCY["bf16"])
    me, ae = o.memory_efficiency, o.attention_efficiency
    if phase == "decode" and model.kv_lora_rank is not None:
        ae = o.mla_attention_efficiency
    shared_ce = ce
    if o.shape_efficiency and phase == "prefill":
        # kernel efficiency by shape: the engines' measured rates at this step's rows and prompt
        by_rows, by_length = rates_by_shape(chip, tokens, context, dtype,
                                             model.kv_lora_rank is not None)
        if o.matmul_efficiency is None and by_rows is not None:
            shared_ce = by_rows
        if by_length is not None:
            ae = by_length
    gme, xme = o.gemm_memory_efficiency, o.grouped_memory_efficiency
    if (o.shape_efficiency and dtype == "fp8" and chip.name in FP8_GEMM_MEMORY_EFFICIENCY
            and gme == GEMM_MEMORY_EFFICIENCY):  # an explicit gemm_memory_efficiency wins
        gme = FP8_GEMM_MEMORY_EFFICIENCY[chip.name]
    table = GROUPED_GEMM_EFFICIENCY[o.grouped_kernel]
    ge = o.grouped_matmul_efficiency or table.get(dtype, table["bf16"])

    mm, w = np.asarray(step.matmul_time), np.asarray(step.weight_time)
    attn, kv = np.asarray(step.attention_time), np.asarray(step.kv_time)
    # the experts' share of the matmul FLOPs and of the weight bytes
    if model.is_moe:
        expert_flop_share = (model.n_moe_layers * model.experts_per_token * model.expert_params
                             / model.matmul_params_active)
        touched = model.experts_touched(tokens)
        expert_bytes = model.n_moe_layers * touched * model.expert_params * np.asarray(weight_bytes)
        expert_w_share = expert_bytes / np.asarray(step.weight_bytes_read)
    else:
        expert_flop_share, touched, expert_w_share = 0.0, None, 0.0
    shared_mm, expert_mm = mm * (1.0 - expert_flop_share), mm * expert_flop_share
    shared_w, expert_w = w * (1.0 - expert_w_share), w * expert_w_share

    pad = np.ceil(tokens / o.tile_m) * o.tile_m / tokens
    attn_part = np.maximum(attn / ae, kv / me)
    shared_c = shared_mm * pad / shared_ce
    expert_c = expert_mm / ce
    t_kernel = attn_part + np.maximum(shared_c + expert_c, w / gme)
    kernel_time = np.maximum(t_kernel - np.asarray(step.time), 0.0)

    if model.is_moe:
        rows = tokens * model.experts_per_token / touched           # rows per touched expert
        expert_pad = np.ceil(rows / o.tile_m) * o.tile_m / rows
        deepgemm = expert_c * expert_pad / o.grouped_matmul_derate
        shared_part = np.maximum(shared_c, shared_w / gme)
        t_moe = attn_part + shared_part + np.maximum(deepgemm, expert_w / xme)
        moe_time = np.maximum(t_moe - t_kernel, 0.0)
        # the engine's grouped kernel, never credited above DeepGEMM's rate; its measured rate
        # (at >= 512 tokens per expert) already holds its own tiling, so it is not padded again
        engine = np.maximum(deepgemm, expert_mm / ge)
        t_engine = attn_part + shared_part + np.maximum(engine, expert_w / xme)
        grouped_kernel_time = t_engine - t_moe
        # expert parallel: the non-expert weights are split over a tensor-parallel group of
        # n / ep chips, not over all n, so each chip reads ep times the bound's share
        rep_part = np.maximum(shared_c, shared_w * np.asarray(ep) / gme)
        t_rep = attn_part + rep_part + np.maximum(engine, expert_w / xme)
        replicated_time = t_rep - t_engine
        # expert parallel: the busiest chip sets the pace of the experts' arithmetic
        if o.routing_imbalance and np.any(np.asarray(ep) > 1):
            lam = np.where(np.asarray(ep) > 1, np.asarray(_imbalance_factor(
                tokens / np.asarray(ep), ep, model.experts_per_token)), 1.0)
        else:
            lam = 1.0
        t_imb = attn_part + rep_part + np.maximum(engine * lam, expert_w / xme)
        imbalance_time = t_imb - t_rep
    else:
        moe_time = 0.0 * kernel_time
        grouped_kernel_time = replicated_time = imbalance_time = moe_time

    tp = np.asarray(n) / np.asarray(ep)
    # memory-bound elementwise kernels over one data-parallel shard's tokens: the add-norms of
    # every layer (one for a parallel block), the activation of each dense MLP layer (split
    # over the tensor-parallel group), at the bandwidth a memory-bound kernel reaches
    add_norms = 1 if model.parallel_block else 2
    act = GATED_ACTIVATION_ELEMENTS if model.gated_mlp else 2
    elements = (model.n_layers * add_norms * ADD_NORM_ELEMENTS * model.d_model
                + (model.n_layers - model.n_moe_layers) * act * model.d_ff / tp)
    elementwise = (tokens / np.asarray(ep) * elements * activation_bytes
                   / (chip.hbm_bandwidth * me)) + 0.0 * kernel_time
    if phase == "decode":  # decode keeps the chapter's count (see ADD_NORM_ELEMENTS)
        elementwise = 0.0 * elementwise
    bw = chip.scale_up_bandwidth
    if bw is None:
        if np.any(np.asarray(n) > 1):
            raise ValueError(f"chip: {chip.name!r} lists no scale_up_bandwidth; communication "
                             "between its chips cannot be estimated (use n_chips=1)")
        bw = 1.0
    bw = bw * o.link_efficiency
    topology = o.topology or ("switch" if getattr(chip, "vendor", "") == "NVIDIA" else "ring")
    hop = o.hop_latency
    if hop is None:
        hop = HOP_LATENCY if topology == "switch" else RING_HOP_LATENCY
    if topology == "ring":  # ring step counts take one chip count
        tp = n_chips_check(_out(tp), "n_chips", single=True)
        ep = n_chips_check(ep, "expert_parallel", single=True)
    tp_comm = np.asarray(tensor_parallel_comm_time(model, tokens, tp, bw, activation_bytes,
                                                   hop_latency=hop, topology=topology))
    if (o.shape_efficiency and phase == "prefill" and topology == "switch"
            and o.hop_latency is None and o.link_efficiency == LINK_EFFICIENCY):
        # the engine's all-reduce as measured at this message size, where the table has the
        # chip and the chip count (the alpha-beta time elsewhere)
        tp_b, tok_b = np.broadcast_arrays(np.asarray(tp, dtype=float),
                                          np.asarray(tokens, dtype=float))
        tp_comm = np.array(np.broadcast_to(tp_comm, tp_b.shape), dtype=float)
        for size in np.unique(tp_b[tp_b > 1]):
            sel = tp_b == size
            one = measured_all_reduce_time(chip, int(size),
                                           tok_b[sel] * model.d_model * activation_bytes)
            if one is not None:
                tp_comm[sel] = model.n_layers * (1 if model.parallel_block else 2) * one
    if model.is_moe and np.any(np.asarray(ep) > 1):
        ep_comm = np.asarray(expert_parallel_comm_time(model, tokens, ep, bw, activation_bytes,
                                                       hop_latency=hop, topology=topology))
    else:
        ep_comm = 0.0 * tp_comm
    kernels = model.n_layers * o.kernels_per_layer
    if model.is_moe:
        kernels += model.n_moe_layers * o.moe_extra_kernels
    if model.kv_lora_rank is not None:
        kernels += model.n_layers * o.mla_extra_kernels
    kernels = kernels + np.where(np.asarray(tp) > 1, model.n_layers * o.tp_extra_kernels, 0)
    graphs = o.cuda_graphs and phase == "decode"
    per_kernel = o.graph_node_overhead if graphs else o.kernel_overhead
    layer_overhead = kernels * per_kernel + 0.0 * kernel_time
    step_overhead = o.step_overhead + 0.0 * kernel_time
    comm = tp_comm + ep_comm
    time = (np.asarray(step.time) + kernel_time + elementwise + moe_time + grouped_kernel_time
            + replicated_time + imbalance_time + comm + layer_overhead + step_overhead)
    return Estimate(bound=step, kernel_time=_out(kernel_time),
                    elementwise_time=_out(elementwise), moe_time=_out(moe_time),
                    grouped_kernel_time=_out(grouped_kernel_time),
                    replicated_weight_time=_out(replicated_time),
                    imbalance_time=_out(imbalance_time),
                    tp_comm_time=_out(tp_comm), ep_comm_time=_out(ep_comm), comm_time=_out(comm),
                    layer_overhead_time=_out(layer_overhead),
                    step_overhead_time=_out(step_overhead),
                    time=_out(time), phase=phase, overheads=o)


def calibration_rows() -> list[dict]:
    """The calibration set: published measured latencies, each with the bound and the estimate.

    One dict per row, in file order: the CSV's columns (``model``, ``catalogue_model``, ``chip``,
    ``n_chips``, ``tp``, ``ep``, ``batch``, ``input_tokens``, ``output_tokens``, ``phase``,
    ``measured_s``, ``engine``, ``source`` (a references.bib key), ``split`` ("fit" or "test":
    the held-out half) ...), plus ``"terms"`` (term name -> seconds, as
    :attr:`Estimate.terms`, summed over the steps the measurement spans), ``"bound_s"`` and
    ``"estimate_s"``. A row's ``phase`` is "decode" (one step), "prefill" (one step) or
    "generate" (a whole static batch: one prefill, then ``output_tokens - 1`` decode steps).
    Engine-specific coefficients (SGLang's host time per step, CUDA-graph replay, vLLM's kernel
    count) are applied as the data README says.
    """
    from . import _calibration

    out = []
    for row in _calibration.load():
        res = _calibration.evaluate(row)
        terms = {name: res[name] for name in _calibration.TERMS}
        out.append({**row, "terms": terms, "bound_s": res["bound"], "estimate_s": res["estimate"]})
    return out


def calibration_score(split: str | None = None, overheads: Overheads = DEFAULT_OVERHEADS) -> dict:
    """How close the estimate, the fair baseline and the bound come to the calibration set.

    ``{(phase, kind): {"estimate": Score, "baseline": Score, "bound": Score}}``, phase "decode",
    "prefill", "generate" or "all", kind "dense", "moe" or "all". A ``Score`` has ``n``,
    ``within`` (rows with measured/predicted between 1/1.3 and 1.3), ``share``, ``gm_error``
    (``exp(mean |ln(measured/predicted)|)``) and ``median_ratio``. The baseline is the bound times
    one constant per kind fitted leave-one-publisher-out (each row's constant from the other
    sources' rows); the estimate fits nothing. ``split="test"`` scores the held-out sources only.
    """
    from . import _calibration

    if split is not None:
        choice("split", split, ("fit", "test"))
    return _calibration.score(split=split, overheads=overheads)


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("bound_to_estimate", "a calibrated estimate (not a bound)",
               r"t_\text{est} = t_\text{bound} + \Delta_\text{kernel} + \Delta_\text{MoE} "
               r"+ \Delta_\text{comm} + L k_\ell t_\text{launch} + t_\text{host}",
               "Llama 3 70B, 8 H100s, B = 1, S = 4,096",
               lambda lm: lm.estimate_step(lm.model("Llama-3-70B"), lm.chip("H100-SXM"), 1, 4096,
                                           n_chips=8).time, fmt_time,
               by_formula=lambda lm: (
                   (e := lm.estimate_step(lm.model("Llama-3-70B"), lm.chip("H100-SXM"), 1, 4096,
                                          n_chips=8)).bound.time
                   + e.kernel_time + e.moe_time + e.comm_time
                   + 80 * lm.estimate.KERNELS_PER_LAYER * lm.estimate.KERNEL_OVERHEAD
                   + lm.estimate.STEP_OVERHEAD)),
)
