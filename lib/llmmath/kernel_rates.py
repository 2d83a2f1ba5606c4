"""Measured kernel rates: the fraction of a chip's datasheet that real kernels reach, by shape.

A bound assumes every matmul at the peak and every byte at the datasheet bandwidth; kernels do
not. This module holds the measured fractions, each a named constant with its source:
best-case matmul and attention rates (FlashAttention-3, DeepGEMM), rates by shape from NVIDIA's
aiconfigurator kernel tables (GEMMs by rows, context attention by prompt length, fp8 weight
streaming), the bandwidth decode-sized GEMMs reach, and the grouped expert GEMMs of the engines.
:mod:`llmmath.estimate` charges them to an inference step and :mod:`llmmath.layout` to a training
step, through one lookup (:func:`rates_by_shape`).
"""

from __future__ import annotations

import numpy as np

from . import chips as _chips
from ._check import n_chips as _n_chips
from ._check import positive

__all__ = [
    "TILE_M",
    "MATMUL_EFFICIENCY",
    "ATTENTION_EFFICIENCY",
    "GEMM_EFFICIENCY_BY_ROWS",
    "CONTEXT_ATTENTION_EFFICIENCY",
    "MLA_ATTENTION_EFFICIENCY",
    "MEMORY_EFFICIENCY",
    "DEEPGEMM_SMALL_M_TFLOPS",
    "GEMM_MEMORY_EFFICIENCY",
    "FP8_GEMM_MEMORY_EFFICIENCY",
    "GROUPED_GEMM_MEMORY_EFFICIENCY",
    "GROUPED_MATMUL_DERATE",
    "TRITON_FUSED_MOE_TFLOPS",
    "GROUPED_GEMM_TOKENS",
    "CUTLASS_MOE_TFLOPS",
    "GROUPED_GEMM_EFFICIENCY",
    "ALL_REDUCE_ELEMENTS",
    "ALL_REDUCE_LATENCY_MS",
    "rates_by_shape",
    "measured_all_reduce_time",
]

#: Rows of one tensor-core tile: Hopper's warpgroup matmul instruction is ``m64nNk16``
#: (``wgmma.mma_async``, PTX ISA [nvidia_ptx_wgmma]), so a matmul's ``R`` rows are computed in
#: multiples of 64; fewer rows waste the rest of the tile.
TILE_M = 64

#: Achievable fraction of the datasheet matmul peak, by compute format: DeepGEMM's FP8 GEMMs
#: reach up to 1,350 of 1,979 TFLOP/s on an H800/H100-class die [deepseek_deepgemm]; the best
#: measured bf16 kernel, FlashAttention-3's forward, 740 of 989 [shah2024flashattention3]
#: (``llmmath.chips.MEASURED_H100``). A format not listed uses the bf16 fraction.
MATMUL_EFFICIENCY = {
    "fp8": _chips.MEASURED_H100["fp8_gemm"] / 1978.9e12,
    "bf16": _chips.MEASURED_H100["bf16_matmul"] / 989.4e12,
}

#: Achievable fraction of the bf16 peak for attention's own FLOPs: FlashAttention-3's 740 of
#: 989 TFLOP/s on an H100 SXM [shah2024flashattention3].
ATTENTION_EFFICIENCY = _chips.MEASURED_H100["bf16_matmul"] / 989.4e12

#: Measured fraction of the datasheet matmul peak reached by a serving engine's dense GEMMs, by the
#: activation operand's rows ``M`` (the tokens of a prefill step), from NVIDIA's aiconfigurator
#: kernel tables [nvidia_aiconfigurator_gemm] (snapshot commit 095f58a5, ``gemm_perf.parquet`` under
#: ``systems/data/<gpu>/`` ``gemm/trtllm/<version>/``: TensorRT-LLM's ``Linear`` layer timed under
#: CUDA-graph replay, 1.3.0rc10 on H100 and H200 SXM, 1.0.0 on A100 SXM 80GB). Each value is the
#: median of ``2 M N K / (latency x peak)`` over the 114 weight shapes with ``N`` and ``K`` from
#: 1,024 to 16,384 and ``N K >= 2^24`` (the widths of 7B-and-larger models' projections over their
#: tensor-parallel ranks), peaks 989.4 (bf16) and 1,978.9 (fp8) TFLOP/s on H100/H200, 312 on A100.
#: fp8 is per-tensor with a static activation scale: the table's dynamic-scale fp8 GEMM minus the
#: same version's measured scale computation
#: (``quantize/trtllm/1.3.0rc10/computescale_perf.parquet``, as aiconfigurator derives
#: ``fp8_static``). Between two listed ``M`` the fraction is interpolated in ``log2 M``, outside
#: them it is the end value; the A100 table stops at 8,192 rows. Half the spread (25th to 75th
#: percentile over shapes) is about 0.03 of the peak at ``M >= 1,024``, up to 0.07 at 256. Used for
#: a prefill step's non-expert matmuls on these chips (``Overheads(shape_efficiency=False)`` keeps
#: :data:`MATMUL_EFFICIENCY`): at ``M = 128`` the GEMM is neither weight-bound nor compute-bound and
#: reaches 0.22-0.47 of the peak, where the single best-case constant says 0.68-0.75; at ``M >=
#: 4,096`` TensorRT-LLM's bf16 GEMMs reach 0.80, a little above FlashAttention-3's 0.75. Decode
#: keeps the constants: at ``M <= 64`` the bf16 tables agree with the bound's weight stream at
#: :data:`GEMM_MEMORY_EFFICIENCY` within 8% on these shapes.
GEMM_EFFICIENCY_BY_ROWS = {
    "H100-SXM": {
        "bf16": ((64, 0.152), (128, 0.295), (256, 0.524), (512, 0.720), (1024, 0.758),
                 (2048, 0.784), (4096, 0.797), (8192, 0.808), (16384, 0.808)),
        "fp8": ((64, 0.115), (128, 0.222), (256, 0.378), (512, 0.516), (1024, 0.577),
                (2048, 0.622), (4096, 0.655), (8192, 0.682), (16384, 0.684)),
    },
    "H200": {
        "bf16": ((64, 0.200), (128, 0.382), (256, 0.608), (512, 0.734), (1024, 0.765),
                 (2048, 0.785), (4096, 0.789), (8192, 0.799), (16384, 0.801)),
        "fp8": ((64, 0.142), (128, 0.265), (256, 0.428), (512, 0.531), (1024, 0.580),
                (2048, 0.623), (4096, 0.656), (8192, 0.685), (16384, 0.692)),
    },
    "A100-SXM-80GB": {
        "bf16": ((64, 0.272), (128, 0.465), (256, 0.623), (512, 0.696), (1024, 0.799),
                 (2048, 0.823), (4096, 0.838), (8192, 0.840)),
    },
}

#: Measured fraction of the bf16 peak reached by a serving engine's context (prefill) attention
#: kernel, by prompt length ``S`` (tokens per sequence), from the same tables
#: [nvidia_aiconfigurator_gemm] (``context_attention_perf.parquet`` under ``systems/data/<gpu>/``
#: ``attention/trtllm/<version>/``, TensorRT-LLM's attention op under CUDA-graph replay, the same
#: versions as :data:`GEMM_EFFICIENCY_BY_ROWS`): the median, over batches of 1 to 64 sequences and
#: every head configuration with head dimension 128 and at least 8 query heads (bf16 activations and
#: KV cache, no sliding window), of the causal attention FLOPs ``2 h d S (S + 1) B`` (the count of
#: :meth:`llmmath.models.Model.prefill_attention_flops`) over ``latency x peak``. Interpolated in
#: ``log2 S`` like the GEMMs. The engines' kernels reach 0.24-0.30 of the peak at 1,024 tokens and
#: about 0.5 at 16,384, where FlashAttention-3's best is 0.75 (:data:`ATTENTION_EFFICIENCY`) and
#: FlashAttention-2 reached about 0.35 on an H100 [shah2024flashattention3]; a short prompt's
#: attention is a few microseconds per layer whatever its FLOPs. Used for a prefill step's attention
#: on these chips, except with multi-head latent attention (head dimension 192: not in the tables).
CONTEXT_ATTENTION_EFFICIENCY = {
    "H100-SXM": ((128, 0.029), (256, 0.071), (512, 0.141), (1024, 0.239), (2048, 0.334),
                 (4096, 0.419), (8192, 0.479), (16384, 0.514)),
    "H200": ((128, 0.033), (256, 0.075), (512, 0.147), (1024, 0.246), (2048, 0.330),
             (4096, 0.412), (8192, 0.472), (16384, 0.508)),
    "A100-SXM-80GB": ((128, 0.058), (256, 0.115), (512, 0.197), (1024, 0.295), (2048, 0.371),
                      (4096, 0.424), (8192, 0.455), (16384, 0.473)),
}


def _by_size(points, size):
    """A measured efficiency at ``size`` (rows or tokens, already checked) from ``points``,
    ``((size, fraction), ...)`` in increasing size: linear in ``log2 size`` between two points,
    the end value outside them (the tables' own range; nothing extrapolated)."""
    xs = np.log2([p[0] for p in points])
    return np.interp(np.log2(np.asarray(size, dtype=float)), xs, [p[1] for p in points])


def rates_by_shape(chip, rows, sequence_length, dtype="bf16", latent_attention=False):
    """The measured kernel rates by shape, the one lookup :func:`.estimate_step` (prefill) and
    :func:`llmmath.layout.step_time` (training) share: ``(matmul, attention)``, the fraction of
    the peak a dense GEMM of ``rows`` activation rows reaches (:data:`GEMM_EFFICIENCY_BY_ROWS`;
    a format the chip's table lacks reads its bf16 curve) and the fraction a causal attention
    over ``sequence_length`` tokens reaches (:data:`CONTEXT_ATTENTION_EFFICIENCY`), each None
    where the tables do not cover the chip, and the attention None for multi-head latent
    attention (``latent_attention``: head dimension 192, not in the tables)."""
    if not isinstance(chip, _chips.Chip):
        raise ValueError(f"chip must be a Chip (llmmath.chip(name)), got {chip!r}")
    rows = positive("rows", rows)
    sequence_length = positive("sequence_length", sequence_length)
    if not isinstance(dtype, str):
        raise ValueError(f"dtype must be a format name such as 'bf16' or 'fp8', got {dtype!r}")
    gemm = GEMM_EFFICIENCY_BY_ROWS.get(chip.name)
    matmul = _by_size(gemm.get(dtype, gemm["bf16"]), rows) if gemm else None
    attention = None
    if chip.name in CONTEXT_ATTENTION_EFFICIENCY and not latent_attention:
        attention = _by_size(CONTEXT_ATTENTION_EFFICIENCY[chip.name], sequence_length)
    return matmul, attention


#: Achievable fraction of the bf16 peak for multi-head latent attention's decode FLOPs (the
#: absorbed form, scores and values in the latent): FlashMLA's dense decoding kernel, 660 of 989
#: TFLOP/s compute-bound on an H800 SXM5 [deepseek_flashmla]. Used in decode for models with
#: MLA; their prefill (un-absorbed, ordinary attention) uses :data:`ATTENTION_EFFICIENCY`.
MLA_ATTENTION_EFFICIENCY = _chips.MEASURED_H100["mla_decode_flops"] / 989.4e12

#: Achievable fraction of HBM bandwidth for attention's KV-cache reads: FlashMLA's decoding
#: kernel reads at up to 3,000 of 3,350 GB/s on an H800 SXM5 [deepseek_flashmla] (0.90; applied
#: to every chip, H200 included). Weight reads by matmuls use :data:`GEMM_MEMORY_EFFICIENCY`.
MEMORY_EFFICIENCY = _chips.MEASURED_H100["hbm_read"] / 3350e9

#: DeepGEMM's published small-M dense FP8 GEMMs on an H800 (3,350 GB/s HBM, 1,979 TFLOP/s FP8)
#: [deepseek_deepgemm]: (M, TFLOP/s) of the six DeepSeek-V3 shapes with M = 64 rows, in the
#: README's order. The README's own "memory bandwidth" column counts every operand's bytes
#: (activations and outputs too); the time per *weight* byte, which is what the bound's weight
#: term counts, follows from the FLOP rate: an FP8 weight (1 byte) does 2 M FLOP, so the
#: weights stream at ``TFLOP/s / (2 M)`` bytes/s (M 64, 206 TFLOP/s: 1,609 GB/s). Only M = 64:
#: at 128 FLOP per weight byte these shapes sit far below the H800's ridge (1,979 / 3.35 = 590
#: FLOP/byte), so their time is the weight stream's; the M = 128 shapes (256 FLOP/byte) already
#: spend part of their time on arithmetic, which the estimate counts separately.
DEEPGEMM_SMALL_M_TFLOPS = ((64, 206e12), (64, 289e12), (64, 219e12), (64, 336e12),
                           (64, 287e12), (64, 295e12))

#: Achievable fraction of HBM bandwidth for a matmul's weight reads at decode-sized M: the median
#: weight-streaming rate of :data:`DEEPGEMM_SMALL_M_TFLOPS` (of 1,609, 2,258, 1,711, 2,625,
#: 2,242 and 2,305 GB/s the 3rd and 4th: 2,242 and 2,258, median 2,250 GB/s) over the H800's
#: 3,350 GB/s: 0.67, where FlashMLA's attention kernel reaches 0.90. Applied to every chip (an
#: H100-class measurement; no like-for-like one is cited for the others).
GEMM_MEMORY_EFFICIENCY = (
    float(np.median([t / (2 * m) for m, t in DEEPGEMM_SMALL_M_TFLOPS])) / 3350e9)

#: Fraction of HBM bandwidth at which a serving engine's per-tensor fp8 GEMM streams its weights
#: at decode-sized ``M`` (1, 8 and 16 rows), from the same aiconfigurator tables as
#: :data:`GEMM_EFFICIENCY_BY_ROWS` [nvidia_aiconfigurator_gemm] (TensorRT-LLM 1.3.0rc10, static
#: activation scale, the 114 shapes with ``N K >= 2^24``): the median of
#: ``N K / (latency x bandwidth)``: 0.553 of an H100's 3,350 GB/s (25th-75th percentile 0.46 to
#: 0.63), 0.479 of an H200's 4,800 GB/s (0.38 to 0.57). DeepGEMM's block-scaled kernels reach
#: 0.67 (:data:`GEMM_MEMORY_EFFICIENCY`); the same tables' bf16 GEMMs reach 0.73 (H100), 0.67
#: (H200) and 0.69 (A100), so bf16 keeps the constant. Used with ``dtype="fp8"`` on these chips
#: (in both phases) unless ``Overheads(shape_efficiency=False)`` or an explicit
#: ``gemm_memory_efficiency``.
FP8_GEMM_MEMORY_EFFICIENCY = {"H100-SXM": 0.553, "H200": 0.479}

#: Achievable fraction of HBM bandwidth for the experts' grouped matmuls at few tokens per
#: expert: the dense rate, :data:`GEMM_MEMORY_EFFICIENCY`. DeepGEMM's smallest published grouped
#: GEMMs (masked layout, 4 groups of 256 rows: 932 and 815 TFLOP/s [deepseek_deepgemm]) do 512
#: FLOP per weight byte, near the H800's ridge of 590, so their time is not a weight-streaming
#: time and would count the arithmetic twice here; no memory-bound grouped measurement is
#: published there. Their arithmetic rate enters through :data:`GROUPED_MATMUL_DERATE`.
GROUPED_GEMM_MEMORY_EFFICIENCY = GEMM_MEMORY_EFFICIENCY

#: Grouped matmuls' arithmetic rate relative to the best dense one in the same library on the same
#: GPU: DeepGEMM's contiguous-layout grouped GEMMs (4 and 8 groups, the prefill layout) reach
#: 1,297, 1,099, 1,288 and 1,093 TFLOP/s, median 1,193.5, against 1,358 for its best dense
#: shape (M 4096, N 7168, K 16384) [deepseek_deepgemm]: 0.879. Multiplies the matmul
#: efficiency of the experts' arithmetic.
GROUPED_MATMUL_DERATE = ((1099e12 + 1288e12) / 2) / 1358e12

#: Measured rates of the grouped-expert kernels that serving engines run at prefill shapes, from
#: NVIDIA's aiconfigurator kernel database [nvidia_aiconfigurator_moe] (snapshot commit 095f58a5,
#: ``aic-core/src/aiconfigurator_core/systems/data/{h100_sxm,h200_sxm}/moe/<engine>/<version>/
#: moe_perf.parquet``): the fused-MoE layer (token alignment, the two grouped GEMMs, activation,
#: the top-k sum; router GEMM and top-k left out) timed under CUDA-graph replay, routing balanced
#: (every expert the same tokens), no expert parallelism. Each value is the median of the rate
#: ``6 d_model d_ff_expert k T / (tp x latency)`` at the largest measured batch, T = 16,384 tokens
#: (at least 512 per expert: the compute-bound end), over the expert shapes of Qwen3-30B-A3B,
#: Qwen3-235B-A22B, Mixtral 8x7B and DeepSeek-V3 at expert tensor parallelism 1, 2, 4 and 8,
#: on H100 and H200 SXM (the same datasheet peak). Triton ``fused_moe`` (vLLM 0.14.0's
#: ``vllm_fused_moe`` and SGLang 0.5.9's ``sglang_fused_moe_triton``, the default MoE kernel of
#: both on Hopper): bf16 282.4 TFLOP/s (60 cases, 183 to 617), fp8 with 128 x 128 block scales
#: (the format of the published FP8 MoE checkpoints) 513.4 TFLOP/s (56 cases, 286 to 1,084).
#: The rate falls as the per-GPU expert width ``d_ff_expert / tp`` narrows (SGLang, fp8,
#: Qwen3-235B-A22B on H100: 855 TFLOP/s at tp 1, 325 at tp 8), which a single median leaves
#: in its spread.
TRITON_FUSED_MOE_TFLOPS = {"bf16": 282.4e12, "fp8": 513.4e12}

#: Tokens per MoE layer at which :data:`TRITON_FUSED_MOE_TFLOPS` and :data:`CUTLASS_MOE_TFLOPS`
#: were taken: the largest batch of the measured tables [nvidia_aiconfigurator_moe].
GROUPED_GEMM_TOKENS = 16384

#: The same median for TensorRT-LLM 1.3.0rc10's CUTLASS MoE (``moe_torch_flow_cutlass``), same
#: shapes, chips and batch [nvidia_aiconfigurator_moe]: bf16 531.0 TFLOP/s (30 cases, 184 to
#: 806), fp8 with one scale per tensor 723.1 TFLOP/s (30 cases, 194 to 1,458; with 128 x 128
#: block scales it is 362.2, 26 cases).
CUTLASS_MOE_TFLOPS = {"bf16": 531.0e12, "fp8": 723.1e12}

#: Fraction of the datasheet matmul peak the experts' grouped GEMMs reach in an engine at prefill
#: shapes, by kernel and compute format: :data:`TRITON_FUSED_MOE_TFLOPS` and
#: :data:`CUTLASS_MOE_TFLOPS` over the H100 SXM peaks (989.4 bf16, 1,978.9 fp8 TFLOP/s). Triton:
#: 0.285 bf16, 0.259 fp8; CUTLASS: 0.537 and 0.365. DeepGEMM's grouped GEMMs reach 0.60 to 0.66
#: (:data:`MATMUL_EFFICIENCY` x :data:`GROUPED_MATMUL_DERATE`), about twice the engine kernels.
#: The default (``Overheads(grouped_matmul_efficiency=None)``) is Triton's, the kernel vLLM and
#: SGLang run; a format not listed uses bf16's.
GROUPED_GEMM_EFFICIENCY = {
    "triton": {"bf16": TRITON_FUSED_MOE_TFLOPS["bf16"] / 989.4e12,
               "fp8": TRITON_FUSED_MOE_TFLOPS["fp8"] / 1978.9e12},
    "cutlass": {"bf16": CUTLASS_MOE_TFLOPS["bf16"] / 989.4e12,
                "fp8": CUTLASS_MOE_TFLOPS["fp8"] / 1978.9e12},
}


#: Message sizes (bf16 elements per chip, ``2^8`` to ``2^28``) at which
#: :data:`ALL_REDUCE_LATENCY_MS` was measured.
ALL_REDUCE_ELEMENTS = tuple(2**k for k in range(8, 29))

#: Measured latency (ms) of a serving engine's tensor-parallel all-reduce of a bf16 message of
#: :data:`ALL_REDUCE_ELEMENTS` elements on 2, 4 and 8 GPUs of one NVLink domain, from NVIDIA's
#: aiconfigurator tables [nvidia_aiconfigurator_allreduce] (snapshot commit 095f58a5,
#: ``systems/data/<gpu>/comm/`` ``trtllm/<version>/`` ``custom_allreduce_perf.parquet``:
#: TensorRT-LLM's own all-reduce, 1.3.0rc10 on H100 and H200 SXM, 1.0.0 on A100 SXM 80GB, the size
#: the engine's model definition passes, ``tokens x hidden``), printed to 1 ns. The chapter's
#: alpha-beta model (:mod:`llmmath.collectives`: 2 NVLink SHARP steps of 3 us plus the bytes at 0.82
#: of the NVLink line rate) is near it at a decode step's few thousand elements (the table: 2.7-3.8
#: us on H100) but short at a prefill step's millions: 128 tokens of an 8,192-wide model on 4 H100s
#: (1,048,576 elements) take 25.9 us measured, about 14 us in the alpha-beta model; 2,048 tokens
#: (16,777,216 elements) 174 us, against 142 us.
ALL_REDUCE_LATENCY_MS = {
    "H100-SXM": {
        2: (0.002665, 0.002655, 0.002764, 0.002870, 0.002796, 0.002980, 0.003010, 0.003040,
            0.003285, 0.003859, 0.004620, 0.006161, 0.009360, 0.016889, 0.038340, 0.080784,
            0.143897, 0.254900, 0.471014, 0.884075, 1.703273),
        4: (0.002888, 0.002924, 0.003068, 0.003114, 0.003201, 0.003258, 0.003437, 0.003673,
            0.004265, 0.005472, 0.007845, 0.012942, 0.025864, 0.040047, 0.064146, 0.099972,
            0.174426, 0.324723, 0.613011, 1.180557, 2.305817),
        8: (0.003373, 0.003536, 0.003768, 0.003599, 0.003608, 0.003837, 0.004197, 0.004814,
            0.006395, 0.010243, 0.017558, 0.026019, 0.035195, 0.051927, 0.079020, 0.122395,
            0.197349, 0.323459, 0.575853, 1.088697, 2.106644),
    },
    "H200": {
        2: (0.002719, 0.002712, 0.002778, 0.002812, 0.002795, 0.002840, 0.002855, 0.002995,
            0.003120, 0.003625, 0.004327, 0.005966, 0.009176, 0.016582, 0.034542, 0.070526,
            0.136452, 0.246270, 0.465824, 0.889410, 1.700973),
        4: (0.002904, 0.002977, 0.003107, 0.003114, 0.003122, 0.003176, 0.003217, 0.003576,
            0.004172, 0.005409, 0.007693, 0.012842, 0.022014, 0.035947, 0.057932, 0.096997,
            0.172380, 0.319657, 0.611745, 1.183605, 2.316150),
        8: (0.003020, 0.003183, 0.003500, 0.003521, 0.003528, 0.003543, 0.003873, 0.004595,
            0.006437, 0.010130, 0.017673, 0.025932, 0.030376, 0.048472, 0.077654, 0.121977,
            0.195135, 0.317253, 0.563023, 1.054669, 2.042524),
    },
    "A100-SXM-80GB": {
        2: (0.003820, 0.003840, 0.003963, 0.004198, 0.004680, 0.005110, 0.004895, 0.005100,
            0.005192, 0.006154, 0.007844, 0.011561, 0.047647, 0.054303, 0.080865, 0.128911,
            0.225935, 0.391598, 0.750909, 1.432320, 2.781205),
        4: (0.003994, 0.004035, 0.004239, 0.004710, 0.006011, 0.006318, 0.006011, 0.006031,
            0.007342, 0.009370, 0.013865, 0.023112, 0.048261, 0.069949, 0.112548, 0.185518,
            0.291389, 0.549151, 1.003991, 1.926810, 3.723786),
        8: (0.004588, 0.004588, 0.004782, 0.006062, 0.007997, 0.008376, 0.008356, 0.009001,
            0.011725, 0.016282, 0.028252, 0.083220, 0.053586, 0.075858, 0.128799, 0.216822,
            0.374456, 0.603412, 1.173699, 2.175877, 4.229816),
    },
}


def measured_all_reduce_time(chip, n_chips, nbytes):
    """Seconds of one tensor-parallel all-reduce of ``nbytes`` of activations (counted as bf16
    elements, ``nbytes / 2``) on ``n_chips`` chips of ``chip``, from the measured table
    :data:`ALL_REDUCE_LATENCY_MS`: log-log interpolation between two measured sizes, the smallest
    size's latency below the table, and above it the largest size's latency scaled with the
    bytes (the bandwidth regime). ``None`` where the table has no such chip or chip count (use
    the alpha-beta model of :mod:`llmmath.collectives` there); 0 on one chip."""
    if not isinstance(chip, _chips.Chip):
        raise ValueError(f"chip must be a Chip (llmmath.chip(name)), got {chip!r}")
    n = _n_chips(n_chips, single=True)
    nbytes = positive("nbytes", nbytes)
    if n == 1:
        return 0.0 * np.asarray(nbytes) if np.ndim(nbytes) else 0.0
    curve = ALL_REDUCE_LATENCY_MS.get(chip.name, {}).get(n)
    if curve is None:
        return None
    x = np.log2(np.asarray(nbytes, dtype=float) / 2.0)
    xs = np.log2(ALL_REDUCE_ELEMENTS)
    t = 2.0 ** np.interp(x, xs, np.log2(curve)) * 1e-3
    above = 2.0 ** (x - xs[-1]) * curve[-1] * 1e-3
    t = np.where(x > xs[-1], above, t)
    return float(t) if np.ndim(t) == 0 else t
