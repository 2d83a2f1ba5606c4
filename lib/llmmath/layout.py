"""Laying out a training run: a layout's memory per chip and time per step, and a planner.

A :class:`Layout` splits ``n = dp x tp x pp x cp`` chips four ways (data, tensor, pipeline and
context parallel) and folds expert parallelism ``ep`` into the chips of one pipeline stage.
:func:`memory_per_chip` counts what each chip holds, :func:`step_time` what one optimizer step
costs, :func:`plan` ranks every layout that fits, :func:`explain` says why the winner wins, and
:func:`checkpoint_interval` / :func:`goodput` price the failures of a long run.

Conventions and assumptions (each one named where it is used):

- **Expert parallelism folds into a stage.** The ``ep`` chips that share a layer's experts are
  drawn from the ``tp x cp x dp`` chips of one pipeline stage, and experts are not tensor-split
  (expert tensor parallelism 1): Megatron-Core builds a separate expert grid ``etp x ep x edp x
  pp`` over the same chips and only asks that ``etp x ep x pp`` divide the world size
  [megatron_parallel_state]; DeepSeek-V3's EP64 at TP1 sits inside its 128-way data
  parallelism [deepseek_v3]. Expert weights are ZeRO-sharded over the ``tp cp dp / ep``
  chips that hold the same experts (Megatron's expert data-parallel group).
- **Stages.** Memory: every stage holds ``1/pp`` of the parameters (``first_stage_layers``
  layers' activations on the first where the layout fixes it, else ``L / pp``). Time: each rank
  holds whole layers (:class:`Layout`'s end-stage counts, else the even split), the last also
  the LM head (``6 V D`` per token, never recomputed); the pipeline runs at its slowest rank,
  and the ``stages`` term is that rank's excess over the mean. The input embedding is a lookup
  (no FLOPs). Real runs move a layer off the end stages to pay for them, as Llama 3 did
  [llama3_herd].
- **Memory-bound kernels** (``elementwise``): the bytes Korthikanti et al. count as stored and
  that no matmul writes (:data:`KORTHIKANTI_ELEMENTWISE`), moved :data:`ELEMENTWISE_PASSES`
  times at the chip's HBM bandwidth times :data:`llmmath.kernel_rates.MEMORY_EFFICIENCY`; the
  ``S x S`` scores only with ``fused_attention=False``.
- **Activations** are Korthikanti et al.'s per-layer bytes
  (:func:`llmmath.training.activation_bytes_per_token_per_layer`): with sequence parallelism
  all of them divide by ``tp``; without it the ``10 D`` of layer norms and dropout stay whole
  (:data:`KORTHIKANTI_REPLICATED`); full recomputation keeps ``2 D`` per token whatever ``tp``
  (their Table 2). Context parallelism divides the tokens. The first stage holds the most
  micro-batches (:data:`IN_FLIGHT`); the transient working set of the layer being recomputed,
  the logits and the communication buffers are left out.
- **Compute** runs at cited kernel rates, by shape where measured. On the chips NVIDIA's
  aiconfigurator tables cover (H100 SXM, H200, A100 SXM 80GB) the dense matmuls run at the
  fraction of the peak TensorRT-LLM's GEMMs reach at the micro-batch's rows
  (:data:`llmmath.kernel_rates.GEMM_EFFICIENCY_BY_ROWS`) and attention at the fraction its
  context-attention kernel reaches at the sequence length
  (:data:`llmmath.kernel_rates.CONTEXT_ATTENTION_EFFICIENCY`). These are **inference-engine
  kernels**, timed forward only, used here for the training GEMMs of the same shapes: the
  forward ``X W`` and the backward ``dY W^T`` have the micro-batch's ``T`` tokens as rows and
  the chip's weight shard as ``N`` and ``K``; the weight gradient ``X^T dY`` contracts over
  those ``T`` tokens and is charged the same rate (the tables have no axis for it); attention's
  backward pass is charged its forward kernel's rate. Elsewhere, and for the experts' grouped
  matmuls, the best-case constants: :data:`llmmath.kernel_rates.MATMUL_EFFICIENCY`
  (FlashAttention-3's 740 of 989 TFLOP/s in bf16 on an H100), the experts additionally at
  :data:`llmmath.kernel_rates.GROUPED_MATMUL_DERATE`, attention at
  :data:`llmmath.kernel_rates.ATTENTION_EFFICIENCY`. Selective recomputation re-runs attention's
  forward, full recomputation the whole forward.
- **Overlap** (:data:`OVERLAP`): tensor-parallel collectives, expert all-to-alls and pipeline
  sends are not overlapped with compute; the context-parallel K/V exchange hides behind the same
  layer's attention arithmetic (ring attention's design) and only its excess counts; the
  data-parallel gradient sync overlaps the last micro-batch's backward pass (gradients are final
  only then), and only its excess counts (``dp_overlap=False``: all of it); the Adam update
  (:data:`ADAM_BYTES_PER_PARAM` per parameter it updates, at HBM speed) follows it.
- **ZeRO-3 / FSDP gathers per micro-batch** (:data:`ZERO3_COLLECTIVES`): PyTorch's FULL_SHARD
  "unshards (via all-gather) before the forward, reshards after the forward, unshards before the
  backward computation, and reshards after the backward computation. For gradients, it
  synchronizes and shards them (via reduce-scatter) after the backward computation"
  [pytorch_fsdp_api]: every micro-batch pays two all-gathers of the chip's weight shard and a
  reduce-scatter of its gradients (ZeRO's stage 3 counts the same three per step, 1.5 times an
  all-reduce, Sec. 7.2.2 [rajbhandari2020zero]); without resharding after the forward
  (``reshard_after_forward=False``, SHARD_GRAD_OP, Llama 3's "we do not reshard after forward
  computation" [llama3_herd]) one all-gather. They overlap the same micro-batch's arithmetic:
  FSDP issues the next unit's all-gather while the current one computes (BACKWARD_PRE "overlaps
  the next all-gather and the current gradient computation"), so per micro-batch only their
  excess over its compute counts; the first unit's gather, which nothing precedes, is left out.
- **Tensor-parallel links** run at NCCL's measured share of the chip's NVLink line rate
  (:data:`llmmath.collectives.NCCL_NVLINK_EFFICIENCY_BY_CHIP`: A100's 230 of 300 GB/s), else
  H100's (:data:`llmmath.estimate.LINK_EFFICIENCY`).

SI units; one configuration per call (arrays are refused by name) except the checkpoint
formulas, which broadcast.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .collectives import NCCL_NVLINK_EFFICIENCY_BY_CHIP, collective_time
from .estimate import HOP_LATENCY, LINK_EFFICIENCY
from .kernel_rates import (
    ATTENTION_EFFICIENCY,
    GROUPED_MATMUL_DERATE,
    MATMUL_EFFICIENCY,
    MEMORY_EFFICIENCY,
    rates_by_shape,
)
from .moe import expert_all_to_all
from .parallel import tensor_parallel_layer_comm_time
from .pipeline import SCHEDULES, bubble_fraction, hop_time
from .training import (
    ACTIVATION_RECOMPUTE,
    activation_bytes_per_token_per_layer,
    attention_training_flops_per_token,
    dp_gradient_sync_time,
    training_flops,
    zero_memory_per_chip,
)
from .units import fmt_bytes, fmt_time

__all__ = [
    "KORTHIKANTI_REPLICATED",
    "KORTHIKANTI_ELEMENTWISE",
    "ELEMENTWISE_PASSES",
    "ADAM_BYTES_PER_PARAM",
    "IN_FLIGHT",
    "ZERO3_COLLECTIVES",
    "OVERLAP",
    "LLAMA3_INTERRUPTIONS",
    "LLAMA3_CHECKPOINT",
    "Layout",
    "Cluster",
    "check_layout",
    "MemoryBreakdown",
    "memory_per_chip",
    "StepBreakdown",
    "step_time",
    "PlanEntry",
    "plan",
    "explain",
    "checkpoint_interval",
    "goodput",
]

#: Bytes per token per layer, in units of D, that tensor parallelism without sequence
#: parallelism leaves whole on every chip (layer-norm inputs and dropout): the ``10`` of
#: ``s b h (10 + 24/t + 5 a s/(h t))``, Korthikanti et al. 2022, Table 2
#: [korthikanti2022reducing].
KORTHIKANTI_REPLICATED = 10.0

#: Of Korthikanti et al.'s ``34 D + 5 n_q S`` bytes per token per layer (Sec. 4.1 lists them
#: tensor by tensor [korthikanti2022reducing]), those written by kernels that are not matmuls,
#: as ``(per D, per n_q S)``: the two layer-norm inputs (the residual sums, 4 D), the two
#: layer-norm outputs (4 D), the two dropout masks (2 D), which are the ``10 D`` of
#: :data:`KORTHIKANTI_REPLICATED`, and the GeLU output (``8 D``, that is ``2 d_ff`` bytes; the
#: code takes the model's MLP width); with unfused attention also the softmax output, its dropout
#: mask and the dropout output, ``5 n_q S``. The other ``16 D`` (Q, K, V, the attention context
#: and the first MLP matmul's output) are matmul outputs, whose writes the measured GEMM rates
#: already include.
KORTHIKANTI_ELEMENTWISE = (18.0, 5.0)

#: HBM passes over each elementwise tensor in one training step, by pass (a hand count, not a
#: measurement): the forward writes it and its consumer reads it (2); the backward reads the
#: saved tensor and the incoming gradient and writes the outgoing one, tensors of the same size
#: (3); a recomputed forward repeats the 2. Intermediates Korthikanti does not store (bias adds,
#: fp32 softmax copies) are left out, so the traffic is a lower bound.
ELEMENTWISE_PASSES = {"forward": 2.0, "backward": 3.0}

#: Bytes mixed-precision Adam moves per parameter it updates: it reads the 16-bit gradient (2)
#: and the fp32 master weight, momentum and variance (12), and writes the three back (12) and the
#: 16-bit weight (2): 28. The 16 bytes it holds per parameter are Rajbhandari et al.'s (ZeRO,
#: Sec. 3.1 [rajbhandari2020zero]); each is read and written once per step, the gradient only
#: read, the bf16 weight only written.
ADAM_BYTES_PER_PARAM = 28.0

#: Micro-batches whose activations the first stage holds at the peak, by schedule, with ``p``
#: stages, ``m`` micro-batches per step and ``v`` chunks per chip: GPipe keeps all ``m``
#: [huang2019gpipe]; 1F1B at most ``p`` [narayanan2021megatron]; interleaved 1F1B ``p`` times
#: ``1 + (p-1)/(p v)`` (Korthikanti et al. 2022, Sec. 4.2.3 [korthikanti2022reducing]); ZB-H1
#: no more than 1F1B, ZB-H2 up to ``2p - 1`` (Qi et al. 2024, Sec. 2 [qi2024zerobubble]);
#: DualPipe ``p + 1`` (DeepSeek-V3, Table 2, "Activation" [deepseek_v3]).
IN_FLIGHT = {
    "gpipe": lambda p, m, v: m,
    "1f1b": lambda p, m, v: min(p, m),
    "interleaved": lambda p, m, v: min(p, m) * (1.0 + (p - 1.0) / (p * v)),
    "zb-h1": lambda p, m, v: min(p, m),
    "zb-h2": lambda p, m, v: min(2.0 * p - 1.0, m),
    "dualpipe": lambda p, m, v: min(p + 1.0, m),
}

#: ZeRO-3/FSDP collectives per micro-batch, each moving the chip's weight (or gradient) shard
#: over its data-parallel group, half an all-reduce's traffic each ([pytorch_fsdp_api]; module
#: docstring): all-gathers with and without resharding after the forward, and reduce-scatters.
ZERO3_COLLECTIVES = {"all_gathers": {True: 2, False: 1}, "reduce_scatters": 1}

#: What hides behind what in :func:`step_time` (the stated assumption, one line per term).
OVERLAP = {
    "tp": "not overlapped: each all-reduce (or reduce-scatter/all-gather) waits for its matmul",
    "ep": "not overlapped: dispatch and combine sit between the router and the experts",
    "pp": "not overlapped: one send per micro-batch, chunk and direction",
    "cp": "overlapped with the same layer's attention arithmetic; only the excess counts",
    "dp": "overlapped with the last micro-batch's backward pass, only the excess counts "
          "(Layout.dp_overlap=False: not overlapped, all of it counts); ZeRO-3: each micro-batch's "
          "gathers and reduce-scatter overlap that micro-batch's compute (FSDP's prefetch)",
    "elementwise": "not overlapped: memory-bound kernels between the matmuls",
    "optimizer": "not overlapped: after the gradient sync, before the next step",
    "stages": "the slowest pipeline rank sets the pace; the others wait",
}

#: Llama 3 405B's pre-training on up to 16K H100s, a 54-day snapshot: 466 job interruptions,
#: 47 planned and 419 unexpected, and more than 90% effective training time (Dubey et al. 2024,
#: Sec. 3.3.4 and Table 5 [llama3_herd]).
LLAMA3_INTERRUPTIONS = {"days": 54, "interruptions": 466, "planned": 47, "unexpected": 419,
                        "gpus": 16384, "effective_training_time": 0.90}

#: Llama 3's checkpoints [llama3_herd], Sec. 3.3.1: "ranging from 1 MB to 4 GB per GPU", and the
#: storage "sustains 2 TB/s": with 4 GB on each of its 16,384 GPUs, a checkpoint takes at most
#: 16,384 x 4 GB / 2 TB/s.
LLAMA3_CHECKPOINT = {"bytes_per_gpu_max": 4e9, "storage_bandwidth": 2e12}


def _whole(name, value, top=None):
    v = positive(name, value, integer=True, single=True, maximum=top)
    return int(v)


@dataclass(frozen=True)
class Layout:
    """How a training run splits its chips: degrees ``dp``, ``tp``, ``pp``, ``ep``, ``cp``.

    ``zero_stage`` 0-3 (ZeRO over the data-parallel chips), ``micro_batch`` sequences per
    micro-batch, ``virtual_stages`` model chunks per chip (interleaved schedule only),
    ``schedule`` one of :data:`llmmath.pipeline.SCHEDULES`, ``recompute`` one of "none",
    "selective", "full", and ``sequence_parallel`` (Korthikanti et al.'s split of the layer
    norms and dropout over the tensor-parallel chips). ``n_chips = dp tp pp cp``; ``ep`` folds
    into a stage's ``tp cp dp`` chips (module docstring).

    What the software does, for :func:`step_time`: ``fused_attention`` (True: one attention
    kernel, FlashAttention-style [dao2022flashattention], never writes the ``n_q S x S`` scores to
    HBM; False: Megatron-LM's 2021-22 path, a batched matmul, a fused scale-mask-softmax, dropout
    and a second batched matmul, each writing its ``S x S`` tensor), ``dp_overlap`` (whether the
    data-parallel gradient sync overlaps the backward pass), ``reshard_after_forward`` (ZeRO-3
    only: True, FSDP's FULL_SHARD, gathers the weights again for the backward; False,
    SHARD_GRAD_OP, keeps them from the forward to the backward [pytorch_fsdp_api]), and
    ``first_stage_layers`` /
    ``last_stage_layers`` (transformer layers on the first and last pipeline rank, as Llama 3
    moved one off each end to pay for the embedding and the LM head [llama3_herd]; None: the
    even split, ``L/pp`` rounded up on the first ranks).
    """

    dp: int
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    zero_stage: int = 1
    micro_batch: int = 1
    virtual_stages: int = 1
    schedule: str = "1f1b"
    recompute: str = "selective"
    sequence_parallel: bool = True
    fused_attention: bool = True
    dp_overlap: bool = True
    reshard_after_forward: bool = True
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None

    def __post_init__(self):
        for name in ("dp", "tp", "pp", "ep", "cp", "micro_batch", "virtual_stages"):
            _whole(name, getattr(self, name), 1e7)
        if not isinstance(self.zero_stage, int) or isinstance(self.zero_stage, bool):
            raise TypeError(f"zero_stage: got {self.zero_stage!r}; expected 0, 1, 2 or 3")
        choice("zero_stage", self.zero_stage, [0, 1, 2, 3])
        choice("schedule", self.schedule, SCHEDULES)
        choice("recompute", self.recompute, list(ACTIVATION_RECOMPUTE))
        for name in ("sequence_parallel", "fused_attention", "dp_overlap",
                     "reshard_after_forward"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: got {getattr(self, name)!r}; expected True or False")
        for name in ("first_stage_layers", "last_stage_layers"):
            if getattr(self, name) is not None:
                _whole(name, getattr(self, name), 1e6)
                if self.pp < 2:
                    raise ValueError(f"{name}: got {getattr(self, name)}; a layer count for an "
                                     f"end stage needs pp >= 2, not pp={self.pp}")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages: got {self.virtual_stages}; more than one chunk "
                             f"per chip needs schedule='interleaved', not {self.schedule!r}")

    @property
    def n_chips(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    def __str__(self):
        parts = [f"DP{self.dp}", f"TP{self.tp}", f"PP{self.pp}"]
        parts += [f"EP{self.ep}"] if self.ep > 1 else []
        parts += [f"CP{self.cp}"] if self.cp > 1 else []
        sched = self.schedule + (f" v{self.virtual_stages}" if self.virtual_stages > 1 else "")
        return (" ".join(parts) + f", ZeRO-{self.zero_stage}, micro-batch {self.micro_batch}, "
                f"{sched}, {self.recompute} recompute")


@dataclass(frozen=True)
class Cluster:
    """The machine a run lays out on: ``n_chips`` of ``chip`` in scale-up domains of
    ``scale_up_size`` (default ``chip.scale_up_domain``) joined by a scale-out network of
    ``scale_out_bandwidth`` bytes/s per chip, one direction (default the chip's)."""

    chip: object
    n_chips: int
    scale_up_size: int | None = None
    scale_out_bandwidth: float | None = None

    def __post_init__(self):
        n_chips_check(self.n_chips, single=True)
        size = self.scale_up_size if self.scale_up_size is not None else \
            (self.chip.scale_up_domain or 1)
        object.__setattr__(self, "scale_up_size", _whole("scale_up_size", size, 1e7))
        bw = self.scale_out_bandwidth if self.scale_out_bandwidth is not None else \
            self.chip.scale_out_bandwidth
        if bw is None and self.n_chips > self.scale_up_size:
            raise ValueError(f"scale_out_bandwidth: chip {self.chip.name!r} lists none and "
                             f"{self.n_chips} chips exceed one domain of {self.scale_up_size}; "
                             "pass one (bytes/s)")
        object.__setattr__(self, "scale_out_bandwidth",
                           positive("scale_out_bandwidth", bw if bw is not None else 1.0,
                                    single=True))
        if not self.chip.scale_up_bandwidth:
            raise ValueError(f"chip: {self.chip.name!r} lists no scale_up_bandwidth")

    def network_chip(self, domain=None):
        """The chip as the collectives see it here: this cluster's domain and scale-out."""
        return dataclasses.replace(self.chip, scale_out_bandwidth=self.scale_out_bandwidth,
                                   scale_up_domain=int(domain or self.scale_up_size))


def _expert_params(model):
    """Routed-expert parameters of all MoE layers (0 for a dense model)."""
    return float(model.n_moe_layers * model.n_experts * model.expert_params) if model.is_moe \
        else 0.0


def check_layout(model, layout, n_chips, global_batch=None, sequence_length=None):
    """Whether ``layout`` can run ``model`` on ``n_chips``; returns the micro-batches per step
    (``global_batch / (dp micro_batch)``, or None without a batch). ValueError naming
    ``layout`` (or the argument) and what failed otherwise:

    ``dp tp pp cp = n_chips``; heads and MLP width divide by ``tp``; at least one layer per
    chunk (``L >= pp v``); experts divide by ``ep`` and ``ep`` divides ``tp cp dp``
    (Megatron-Core's folding, module docstring; ``ep = 1`` for a dense model); the sequence
    divides by ``cp``; the global batch (sequences) by ``dp micro_batch``.
    """
    if not isinstance(layout, Layout):
        raise TypeError(f"layout: got {layout!r}; expected an llmmath.layout.Layout")
    n = int(n_chips_check(n_chips, single=True))
    bad = []
    if layout.n_chips != n:
        bad.append(f"dp tp pp cp = {layout.n_chips}, not n_chips={n}")
    if model.n_heads % layout.tp:
        bad.append(f"{model.n_heads} heads do not divide by tp={layout.tp}")
    if (not model.is_moe or model.n_dense_layers) and model.d_ff % layout.tp:
        bad.append(f"MLP width {model.d_ff} does not divide by tp={layout.tp}")
    if model.n_layers < layout.pp * layout.virtual_stages:
        bad.append(f"{model.n_layers} layers cannot fill pp x virtual_stages = "
                   f"{layout.pp * layout.virtual_stages} chunks")
    ends = [x for x in (layout.first_stage_layers, layout.last_stage_layers) if x is not None]
    if ends and layout.pp > 2 and model.n_layers - sum(ends) < layout.pp - 2:
        bad.append(f"{model.n_layers} layers leave fewer than one per middle stage after "
                   f"first/last stage layers {ends}")
    if ends and layout.pp == 2 and len(ends) == 2 and sum(ends) != model.n_layers:
        bad.append(f"first + last stage layers {ends} are not the {model.n_layers} layers")
    if ends and max(ends) > model.n_layers:
        bad.append(f"an end stage cannot hold {max(ends)} of {model.n_layers} layers")
    if layout.schedule == "dualpipe" and layout.pp % 2:
        bad.append(f"DualPipe needs an even pp, not pp={layout.pp}")
    if layout.ep > 1 and not model.is_moe:
        bad.append(f"ep={layout.ep} on a dense model (it has no experts)")
    if model.is_moe and model.n_experts % layout.ep:
        bad.append(f"{model.n_experts} experts do not divide by ep={layout.ep}")
    if (layout.tp * layout.cp * layout.dp) % layout.ep:
        bad.append(f"ep={layout.ep} does not divide a stage's tp cp dp = "
                   f"{layout.tp * layout.cp * layout.dp} chips")
    if bad:
        raise ValueError(f"layout: {layout} does not fit {model.name}: " + "; ".join(bad))
    if sequence_length is not None:
        s = positive("sequence_length", sequence_length, integer=True, single=True)
        model.check_context(s, "sequence_length")
        if s % layout.cp:
            raise ValueError(f"sequence_length: got {s:g}; it must divide by cp={layout.cp}")
    if global_batch is None:
        return None
    b = positive("global_batch", global_batch, integer=True, single=True, maximum=1e9)
    per = layout.dp * layout.micro_batch
    if b % per:
        raise ValueError(f"global_batch: got {b:g} sequences; it must divide by dp x "
                         f"micro_batch = {per} ({layout})")
    if layout.schedule == "dualpipe" and layout.pp > 1 and (b // per) % 2:
        raise ValueError(f"global_batch: got {b:g} sequences, {b // per:g} micro-batches per "
                         f"replica; DualPipe feeds half from each end and needs an even number "
                         f"({layout})")
    return int(b // per)


@dataclass(frozen=True)
class MemoryBreakdown:
    """HBM per chip of the busiest (first) pipeline stage, bytes.

    ``states``: weights, gradients and optimizer states under ZeRO
    (:func:`llmmath.training.zero_memory_per_chip`: dense and expert parameters, each sharded
    over its own data-parallel group); ``weights``: the bf16 weights a chip keeps between
    steps (part of ``states``; 0 under ZeRO-3, which gathers them layer by layer, except with
    ``reshard_after_forward=False``, whose gathered stage weights are added to ``states``);
    ``activations``: micro-batches in flight times their stored activations;
    ``in_flight``: those micro-batches; ``total``: states + activations.
    """

    states: float
    weights: float
    activations: float
    in_flight: float
    total: float

    def fits(self, chip, memory_fraction=1.0) -> bool:
        """Whether ``total`` fits ``memory_fraction`` of the chip's HBM."""
        f = positive("memory_fraction", memory_fraction, maximum=1.0, single=True)
        return bool(self.total <= f * chip.hbm_capacity)


def _shards(model, layout):
    """(params per chip, ZeRO group) for the dense part and for the routed experts.

    DualPipe puts two stages on each chip, stage ``i`` and stage ``pp - 1 - i`` ("2x"
    parameters, DeepSeek-V3 Table 2 [deepseek_v3]), so each stage lives on twice the chips: a
    chip holds ``2/pp`` of the layers, and the two holders of a stage join its data-parallel
    group (its gradients are summed over both, its optimizer states sharded over both)."""
    n_exp = _expert_params(model)
    two = 2 if layout.schedule == "dualpipe" and layout.pp > 1 else 1
    dense = two * (float(model.total_params) - n_exp) / (layout.tp * layout.pp)
    group = two * layout.dp * layout.cp
    experts = two * n_exp / (layout.ep * layout.pp)
    expert_group = two * layout.tp * layout.cp * layout.dp // layout.ep
    return (dense, group), (experts, expert_group)


def memory_per_chip(model, layout, sequence_length, global_batch=None, optimizer="adam",
                    mixed_precision=True) -> MemoryBreakdown:
    """Bytes per chip of the first pipeline stage (see :class:`MemoryBreakdown`).

    States: ``zero_memory_per_chip(N_dense / (tp pp), dp cp) + zero_memory_per_chip(N_exp /
    (ep pp), tp cp dp / ep)``. Activations: ``(L / pp) x in_flight x (micro_batch S / cp) x a``
    with ``a`` Korthikanti et al.'s bytes per token per layer at ``recompute``, divided by ``tp``
    as the module docstring says, and ``in_flight`` from :data:`IN_FLIGHT` (with
    ``global_batch`` None, enough micro-batches to fill the pipeline; GPipe needs the batch).
    """
    s = positive("sequence_length", sequence_length, integer=True, single=True)
    m = check_layout(model, layout, layout.n_chips, global_batch, s)
    if m is None:
        if layout.schedule == "gpipe":
            raise ValueError("global_batch: GPipe holds every micro-batch of the step; pass "
                             "the global batch (sequences)")
        m = 2 * layout.pp * layout.virtual_stages
    (dense, group), (experts, egroup) = _shards(model, layout)
    z = layout.zero_stage
    states = float(zero_memory_per_chip(dense, group, z, optimizer, mixed_precision))
    if experts:
        states += float(zero_memory_per_chip(experts, egroup, z, optimizer, mixed_precision))
    weight_bytes = 2.0 if mixed_precision else 4.0
    weights = 0.0 if z == 3 else (dense + experts) * weight_bytes
    if z == 3 and not layout.reshard_after_forward:
        # kept gathered from a micro-batch's forward to its backward: with micro-batches in
        # flight on every chunk (1F1B), the stage's whole 16-bit weights, beside the shards
        weights = (dense + experts) * weight_bytes
        states += weights
    # a fused attention kernel never stores the n_q S x S scores (FlashAttention keeps the output
    # and one statistic per row [dao2022flashattention]): without recomputation it holds what
    # selective recomputation keeps, Korthikanti et al.'s 34 D
    kept = "selective" if layout.recompute == "none" and layout.fused_attention else \
        layout.recompute
    a = float(activation_bytes_per_token_per_layer(model, s, kept))
    if layout.recompute != "full":
        if layout.sequence_parallel:
            a /= layout.tp
        else:
            whole = KORTHIKANTI_REPLICATED * model.d_model
            a = whole + (a - whole) / layout.tp
    flight = float(IN_FLIGHT[layout.schedule](layout.pp, m, layout.virtual_stages))
    first = layout.first_stage_layers or model.n_layers / layout.pp
    acts = first * flight * layout.micro_batch * s / layout.cp * a
    return MemoryBreakdown(states, weights, acts, flight, states + acts)


@dataclass(frozen=True)
class StepBreakdown:
    """One optimizer step of a layout, seconds per term (see :func:`step_time`).

    ``compute`` (every chip's share of the step's arithmetic, recomputation included),
    ``tp``, ``ep``, ``pp`` (sends), ``cp`` (exposed K/V exchange), ``bubble``, ``dp`` (exposed
    gradient sync; ``dp_total`` before overlap), ``elementwise`` (memory-bound kernels: norms,
    dropout, residuals, activation, and the softmax with unfused attention), ``stages`` (the
    slowest pipeline rank's excess over the mean rank, times the micro-batches: uneven layers and
    the LM head on the last rank), ``optimizer`` (the Adam update), ``time`` the step;
    ``micro_batches``, ``bubble_fraction``; ``model_flops`` (6 N_act D plus attention, no
    recomputation) and ``mfu = model_flops / (time n C)``; ``hardware_flops`` (the recomputed
    forward of the layers included, not of the LM head) and ``hfu``, the same over the hardware
    FLOPs (what Megatron-LM and BLOOM report).
    """

    compute: float
    tp: float
    ep: float
    pp: float
    cp: float
    bubble: float
    dp: float
    dp_total: float
    time: float
    micro_batches: int
    bubble_fraction: float
    model_flops: float
    mfu: float
    hardware_flops: float
    hfu: float
    elementwise: float = 0.0
    stages: float = 0.0
    optimizer: float = 0.0

    def terms(self) -> dict:
        """The additive terms of ``time``, by name."""
        return {"compute": self.compute, "elementwise": self.elementwise, "tp": self.tp,
                "ep": self.ep, "pp": self.pp, "cp": self.cp, "stages": self.stages,
                "bubble": self.bubble, "dp": self.dp, "optimizer": self.optimizer}


def _stage_layers(model, layout):
    """Transformer layers on each pipeline rank, first to last: the end ranks' counts where the
    layout fixes them, the rest split as evenly as whole layers allow (the first ranks take the
    extra one)."""
    f, last = layout.first_stage_layers, layout.last_stage_layers
    fixed = [x for x in (f, last) if x is not None]
    k = layout.pp - len(fixed)
    q, r = divmod(model.n_layers - sum(fixed), k) if k else (0, 0)
    middle = [q + 1 if i < r else q for i in range(k)]
    return ([f] if f is not None else []) + middle + ([last] if last is not None else [])


def _elementwise_bytes(model, layout, sequence_length):
    """HBM bytes per token per layer on one chip that a step's elementwise kernels move:
    :data:`KORTHIKANTI_ELEMENTWISE` (the ``10 D`` over ``tp`` with sequence parallelism, the MLP
    activation ``2 d_ff`` over ``tp``, the ``5 n_q S`` over ``tp`` only with unfused attention)
    times :data:`ELEMENTWISE_PASSES` (the recomputed forward adds a forward pass: all of it under
    full recomputation, the attention part under selective)."""
    tp = layout.tp
    if model.is_moe:
        shared = model.n_shared_experts * (model.d_ff_shared or model.d_ff_expert) \
            if model.n_shared_experts else 0
        width = (model.n_dense_layers * model.d_ff + model.n_moe_layers
                 * (model.experts_per_token * model.d_ff_expert + shared)) / model.n_layers
    else:
        width = model.d_ff
    norms = KORTHIKANTI_REPLICATED * model.d_model / (tp if layout.sequence_parallel else 1)
    mlp = 2.0 * width / tp
    scores = 0.0 if layout.fused_attention else \
        KORTHIKANTI_ELEMENTWISE[1] * model.n_heads * sequence_length / tp
    fwd, bwd = ELEMENTWISE_PASSES["forward"], ELEMENTWISE_PASSES["backward"]
    once = fwd + bwd
    if layout.recompute == "full":
        return (norms + mlp + scores) * (once + fwd)
    if layout.recompute == "selective":
        return (norms + mlp) * once + scores * (once + fwd)
    return (norms + mlp + scores) * once


def _kv_elements_training(model):
    """K and V numbers per token per layer that context parallelism moves: MLA's keys and
    values are expanded per head in training (its un-absorbed form), others 2 n_kv d_h."""
    if model.kv_lora_rank is not None:
        return model.n_heads * (model.qk_nope_head_dim + model.qk_rope_head_dim
                                + model.v_head_dim)
    return model.kv_elements_per_token_per_layer


def step_time(model, layout, cluster, global_batch, sequence_length, dtype="bf16",
              matmul_efficiency=None, attention_efficiency=None, link_efficiency=None,
              hop_latency=None, activation_bytes=2, grad_bytes=2) -> StepBreakdown:
    """Seconds per optimizer step of ``layout`` on ``cluster`` (a :class:`StepBreakdown`).

    ``global_batch`` sequences of ``sequence_length`` tokens, ``m = global_batch / (dp b)``
    micro-batches of ``b = micro_batch`` per data-parallel replica. Per chip:

    - compute: ``D (6 N_act + a) / n`` FLOP for ``D`` tokens and ``a``
      (:func:`~llmmath.training.attention_training_flops_per_token`), plus the recomputed
      forward (``a/3`` selective, ``2 N_act + a/3`` full); dense matmuls at
      ``matmul_efficiency``, by default the measured rate at the micro-batch's ``b S / cp``
      rows on the chips :data:`llmmath.kernel_rates.GEMM_EFFICIENCY_BY_ROWS` covers, else
      :data:`llmmath.kernel_rates.MATMUL_EFFICIENCY`; routed experts at ``matmul_efficiency`` (or
      the constant) times :data:`llmmath.kernel_rates.GROUPED_MATMUL_DERATE`; attention at
      ``attention_efficiency``, by default the measured rate at ``sequence_length``
      (:data:`llmmath.kernel_rates.CONTEXT_ATTENTION_EFFICIENCY`, not for latent attention) else
      :data:`llmmath.kernel_rates.ATTENTION_EFFICIENCY` (module docstring: inference kernels
      used for training shapes);
    - per micro-batch and stage (``L/pp`` layers, ``T = b S / cp`` tokens), with passes
      ``r = 2`` (forward, backward; 3 with full recomputation): tensor-parallel collectives
      ``r (L/pp) x`` :func:`~llmmath.parallel.tensor_parallel_layer_comm_time` of ``T`` tokens
      over scale-up at ``link_efficiency`` (default :data:`llmmath.estimate.LINK_EFFICIENCY`)
      with ``hop_latency`` per step (default :data:`llmmath.estimate.HOP_LATENCY`);
      expert all-to-all ``r (L_moe/pp) x`` :func:`~llmmath.moe.expert_all_to_all` of ``T/tp``
      tokens per chip over ``ep`` chips; pipeline sends ``2 v`` hops of ``T D b_a / tp`` bytes
      (:func:`~llmmath.pipeline.hop_time`) over scale-out; context parallelism ``(r + 1)``
      all-gathers (or reduce-scatters) of the sequence's K/V per layer, less the layer's
      attention time;
    - the bubble: ``busy f / (1 - f)``, ``f`` = :func:`~llmmath.pipeline.bubble_fraction`;
    - data parallelism: :func:`~llmmath.training.dp_gradient_sync_time` of the dense shard over
      ``dp cp`` chips plus the experts' over their group, less the last micro-batch's backward.

    ``time = m (slowest rank's time + pp) / (1 - f) + dp + optimizer``, split into the additive
    :meth:`StepBreakdown.terms` (compute, elementwise, tp, ep, cp at the mean rank; ``stages``
    the slowest rank's excess). :data:`OVERLAP` states what hides behind what. Load imbalance
    between experts and kernel launch overheads are left out.
    """
    if not isinstance(cluster, Cluster):
        raise TypeError(f"cluster: got {cluster!r}; expected an llmmath.layout.Cluster")
    s = positive("sequence_length", sequence_length, integer=True, single=True)
    b = positive("global_batch", global_batch, integer=True, single=True, maximum=1e9)
    m = check_layout(model, layout, cluster.n_chips, b, s)
    chip = cluster.chip
    peak = chip.peak(dtype)
    # fp8 training keeps attention and the output head in 16 bits: "we maintain the original
    # precision (e.g., BF16 or FP32) for ... the output head, MoE gating modules, normalization
    # operators, and attention operators" (DeepSeek-V3, Sec. 3.3.1 [deepseek_v3])
    high = dtype == "fp8" and "bf16" in chip.flops
    peak_hi = chip.peak("bf16") if high else peak
    eff_m = MATMUL_EFFICIENCY.get(dtype, MATMUL_EFFICIENCY["bf16"]) \
        if matmul_efficiency is None else \
        positive("matmul_efficiency", matmul_efficiency, maximum=1.0, single=True)
    eff_a = ATTENTION_EFFICIENCY if attention_efficiency is None else \
        positive("attention_efficiency", attention_efficiency, maximum=1.0, single=True)
    link = NCCL_NVLINK_EFFICIENCY_BY_CHIP.get(chip.name, LINK_EFFICIENCY) \
        if link_efficiency is None else \
        positive("link_efficiency", link_efficiency, maximum=1.0, single=True)
    lat = HOP_LATENCY if hop_latency is None else \
        positive("hop_latency", hop_latency, allow_zero=True, single=True)
    ab = positive("activation_bytes", activation_bytes, maximum=8, single=True)
    positive("grad_bytes", grad_bytes, maximum=8, single=True)
    tp, pp, cp, ep, v = layout.tp, layout.pp, layout.cp, layout.ep, layout.virtual_stages
    n = layout.n_chips
    t_mb = layout.micro_batch * s / cp  # tokens of one micro-batch on one context shard
    # kernel rates by shape: a dense GEMM's rows are the micro-batch's tokens (module docstring)
    by_rows, by_length = rates_by_shape(chip, t_mb, s, dtype, model.kv_lora_rank is not None)
    eff_dense = float(by_rows) if matmul_efficiency is None and by_rows is not None else eff_m
    if attention_efficiency is None and by_length is not None:
        eff_a = float(by_length)
    dom = cluster.scale_up_size
    up = chip.scale_up_bandwidth * link
    out = cluster.scale_out_bandwidth

    # per micro-batch, per chip, per transformer layer (t_mb tokens, the work split over tp)
    tokens = b * s
    L = model.n_layers
    attn = float(attention_training_flops_per_token(model, s))
    n_act = float(model.active_params)
    n_exp_act = (float(model.n_moe_layers * model.experts_per_token * model.expert_params)
                 if model.is_moe else 0.0)
    head = float(model.vocab_size * model.d_model)  # the output projection (LM head)
    n_layer = (n_act - n_exp_act - model.embedding_params - model.lm_head_params) / L
    again = 1.0 / 3.0 if layout.recompute == "full" else 0.0  # forward = 1/3 of 6N
    again_attn = 0.0 if layout.recompute == "none" else 1.0 / 3.0
    flops_dense = 6.0 * n_layer * (1.0 + again)
    flops_exp = 6.0 * n_exp_act / L * (1.0 + again)
    flops_attn = attn / L * (1.0 + again_attn)
    per_chip = t_mb / tp
    c_layer = per_chip * (flops_dense / (peak * eff_dense)
                          + flops_exp / (peak * eff_m * GROUPED_MATMUL_DERATE)
                          + flops_attn / (peak_hi * eff_a))
    # the LM head: 6 V D per token at the dense rate, never recomputed (Narayanan et al. 2021,
    # appendix: the logit layer is not part of the recomputed forward); the input embedding is a
    # lookup, no FLOPs
    c_head = per_chip * 6.0 * head / (
        peak_hi * (MATMUL_EFFICIENCY["bf16"] if high else eff_dense))
    e_layer = _elementwise_bytes(model, layout, s) * t_mb / (chip.hbm_bandwidth * MEMORY_EFFICIENCY)
    model_flops = float(training_flops(model, tokens)) + attn * tokens

    passes = 3.0 if layout.recompute == "full" else 2.0
    tp_layer = 0.0
    if tp > 1:
        bw = up if tp <= dom else out  # tensor parallelism is the innermost group
        tp_layer = passes * float(tensor_parallel_layer_comm_time(
            model, t_mb, tp, bw, ab, hop_latency=lat))
    ep_layer = 0.0
    if ep > 1:
        a2a = expert_all_to_all(model, t_mb / tp, ep, cluster.network_chip(), domain=min(ep, dom),
                                dispatch_bytes=ab, combine_bytes=ab)
        ep_layer = passes * model.n_moe_layers / L * float(a2a.time)
    t_pp = 0.0
    if pp > 1:
        bw = out if n > dom else up
        t_pp = 2.0 * v * float(hop_time(t_mb / tp, model.d_model, bw, 0.0, ab))
    cp_layer = 0.0
    if cp > 1:
        bw = up if tp * cp <= dom else out  # context parallelism comes next (Megatron's order)
        kv = layout.micro_batch * s * _kv_elements_training(model) * ab / min(tp, model.n_kv_heads
                                                                             or model.n_heads)
        per_layer = (passes + 1.0) * float(collective_time("all-gather", kv, cp, bw,
                                                           hop_latency=lat))
        attn_layer = flops_attn * t_mb / tp / (peak_hi * eff_a)
        cp_layer = max(0.0, per_layer - attn_layer)

    # the pipeline runs at its slowest rank: layers per rank, the LM head on the last
    layer_total = c_layer + e_layer + tp_layer + ep_layer + cp_layer
    ranks = _stage_layers(model, layout)
    slowest = max(k * layer_total + (c_head if i == pp - 1 else 0.0)
                  for i, k in enumerate(ranks))
    mean = (L * layer_total + c_head) / pp
    compute = m * (L * c_layer + c_head) / pp
    stages = m * (slowest - mean)
    busy = m * (slowest + t_pp)
    f = float(bubble_fraction(pp, m, layout.schedule, v)) if pp > 1 else 0.0
    bubble = busy * f / (1.0 - f)

    # data parallelism: each shard's gradients over its own group. ZeRO 0-2: one all-reduce's
    # traffic per step, after the last backward; ZeRO-3: ZERO3_COLLECTIVES per micro-batch, each
    # half an all-reduce's traffic, behind that micro-batch's compute (module docstring)
    (dense, group), (experts, egroup) = _shards(model, layout)
    all_reduce = 0.0
    for params, g in ((dense, group), (experts, egroup)):
        if params and g > 1:
            per_domain = max(1, min(g, dom // tp))
            network = "scale_out" if n > dom else "scale_up"
            all_reduce += float(dp_gradient_sync_time(params, cluster.network_chip(per_domain),
                                                      g, network, grad_bytes, 0))
    if layout.zero_stage == 3:
        z3 = ZERO3_COLLECTIVES
        per_mb = all_reduce / 2.0 * (z3["all_gathers"][layout.reshard_after_forward]
                                     + z3["reduce_scatters"])
        dp_total = m * per_mb
        hidden = compute / m if layout.dp_overlap else 0.0
        dp = m * max(0.0, per_mb - hidden)
    else:
        dp_total = all_reduce
        last_backward = compute / m * 2.0 / 3.0 if layout.dp_overlap else 0.0
        dp = max(0.0, dp_total - last_backward)
    # the optimizer step: Adam touches ADAM_BYTES_PER_PARAM per parameter it updates, at HBM speed
    updated = sum(p / (g if layout.zero_stage >= 1 else 1)
                  for p, g in ((dense, group), (experts, egroup)) if p)
    optimizer = updated * ADAM_BYTES_PER_PARAM / (chip.hbm_bandwidth * MEMORY_EFFICIENCY)
    time = busy + bubble + dp + optimizer
    # hardware FLOPs: the model FLOPs plus the recomputed forward of the layers (not the head)
    hardware_flops = model_flops + tokens * (6.0 * (n_layer * L + n_exp_act) * again
                                             + attn * again_attn)
    return StepBreakdown(compute, m * L / pp * tp_layer, m * L / pp * ep_layer, m * t_pp,
                         m * L / pp * cp_layer, bubble, dp, dp_total, time, m, f, model_flops,
                         model_flops / (time * n * peak), hardware_flops,
                         hardware_flops / (time * n * peak),
                         elementwise=m * L / pp * e_layer, stages=stages, optimizer=optimizer)


@dataclass(frozen=True)
class PlanEntry:
    """One candidate of :func:`plan`: its ``layout``, ``memory`` and ``step``."""

    layout: Layout
    memory: MemoryBreakdown
    step: StepBreakdown


def _divisors(n, top):
    return [d for d in range(1, int(min(n, top)) + 1) if n % d == 0]


def _candidates(model, cluster, global_batch, sequence_length):
    """Every layout the planner tries: tp a power of two within a scale-up domain, pp up to 64
    (a divisor of the chips left), cp up to 16 powers of two, ep a power of two dividing the
    experts, micro-batches of 1, 2, 4, ZeRO 1 or 3, 1F1B or interleaved (2 or 4 chunks), every
    recomputation."""
    n = cluster.n_chips
    pow2 = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    out = []
    for tp in [t for t in pow2 if t <= cluster.scale_up_size and model.n_heads % t == 0]:
        for cp in [c for c in pow2 if c <= 16 and sequence_length % c == 0]:
            if n % (tp * cp):
                continue
            for pp in _divisors(n // (tp * cp), min(64, model.n_layers)):
                dp = n // (tp * cp * pp)
                eps = [e for e in pow2 if model.is_moe and e <= model.n_experts
                       and model.n_experts % e == 0 and (tp * cp * dp) % e == 0] or [1]
                scheds = [("1f1b", 1)] + ([("interleaved", 2), ("interleaved", 4)]
                                          if pp > 1 else [])
                for ep in eps:
                    for mb in (1, 2, 4):
                        if global_batch % (dp * mb):
                            continue
                        for sched, v in scheds:
                            if model.n_layers < pp * v:
                                continue
                            for z in (1, 3):
                                for rc in ("none", "selective", "full"):
                                    out.append(Layout(dp=dp, tp=tp, pp=pp, ep=ep, cp=cp,
                                                      zero_stage=z, micro_batch=mb,
                                                      virtual_stages=v, schedule=sched,
                                                      recompute=rc))
    return out


def plan(model, cluster, global_batch, sequence_length, critical_batch_tokens=None,
         layouts=None, dtype="bf16", memory_fraction=1.0) -> list:
    """Every layout that fits, fastest first: a list of :class:`PlanEntry`.

    ``layouts`` defaults to every candidate layout (tensor parallelism never leaves a scale-up
    domain). ``critical_batch_tokens`` is the batch beyond which more data parallelism stops
    buying progress per token (McCandlish et al. 2018's critical batch [mccandlish2018empirical],
    which grows as the loss falls; no value is assumed here): a global batch above it is
    refused, so the data-parallel degree stays at most ``B_crit / (S micro_batch)``. A layout
    fits when :func:`memory_per_chip` is within ``memory_fraction`` of the chip's HBM. Ties in
    time go to the smaller memory. Empty when nothing fits.
    """
    if not isinstance(cluster, Cluster):
        raise TypeError(f"cluster: got {cluster!r}; expected an llmmath.layout.Cluster")
    b = positive("global_batch", global_batch, integer=True, single=True, maximum=1e9)
    s = positive("sequence_length", sequence_length, integer=True, single=True)
    model.check_context(s, "sequence_length")
    if critical_batch_tokens is not None:
        crit = positive("critical_batch_tokens", critical_batch_tokens, single=True)
        if b * s > crit:
            raise ValueError(f"critical_batch_tokens: the global batch of {b * s:,.0f} tokens "
                             f"exceeds it ({crit:,.0f}); lower global_batch")
    positive("memory_fraction", memory_fraction, maximum=1.0, single=True)
    if layouts is None:
        layouts = _candidates(model, cluster, int(b), int(s))
    found = []
    for lay in layouts:
        try:
            mem = memory_per_chip(model, lay, s, b)
        except ValueError:
            continue  # this layout cannot run this model or batch
        if not mem.fits(cluster.chip, memory_fraction):
            continue
        if lay.n_chips != cluster.n_chips:
            continue
        found.append(PlanEntry(lay, mem, step_time(model, lay, cluster, b, s, dtype)))
    found.sort(key=lambda e: (e.step.time, e.memory.total))
    return found


def _family(lay):
    return (lay.tp, lay.pp, lay.cp, lay.ep)


def explain(plan) -> str:
    """Why the first entry of a :func:`plan` wins: its step, its largest terms, and the best
    layout of another parallel shape (tp, pp, cp, ep) with the terms where it loses most."""
    if not isinstance(plan, (list, tuple)) or not all(isinstance(e, PlanEntry) for e in plan):
        raise TypeError(f"plan: got {plan!r:.80}; expected the list of PlanEntry plan() returns")
    if not plan:
        return "No layout fits: every candidate needs more memory than a chip has."
    best = plan[0]
    st = best.step
    terms = sorted(st.terms().items(), key=lambda kv: -kv[1])
    lines = [f"Best: {best.layout}: {fmt_time(st.time)} per step, MFU {st.mfu:.1%}, "
             f"{fmt_bytes(best.memory.total)} per chip.",
             "Its time: " + ", ".join(f"{k} {fmt_time(v)}" for k, v in terms if v > 0) + "."]
    other = next((e for e in plan[1:] if _family(e.layout) != _family(best.layout)), None)
    if other is not None:
        diff = {k: other.step.terms()[k] - v for k, v in st.terms().items()}
        worst = sorted(diff.items(), key=lambda kv: -kv[1])[:2]
        lines.append(f"Next shape: {other.layout}: {fmt_time(other.step.time)} "
                     f"({other.step.time / st.time - 1:+.1%}), losing most on "
                     + " and ".join(f"{k} (+{fmt_time(d)})" for k, d in worst if d > 0) + ".")
    return "\n".join(lines)


# ----- failures: how often to checkpoint, and what is left for training -----------------------

def checkpoint_interval(mtbf, checkpoint_time, method="daly"):
    """Compute time between checkpoints that minimises the expected wall-clock time, seconds.

    ``method="young"``: Young 1974's first-order ``sqrt(2 delta M)`` [young1974first];
    ``"daly"`` (default): Daly 2006's higher-order estimate [daly2006higher],
    ``sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 + (delta/(2M))/9] - delta`` for ``delta < 2M``,
    else ``M``. ``mtbf`` M is the job's mean time between interruptions (seconds),
    ``checkpoint_time`` delta the time to write one checkpoint.
    """
    M = positive("mtbf", mtbf)
    d = positive("checkpoint_time", checkpoint_time)
    choice("method", method, ("young", "daly"))
    young = np.sqrt(2.0 * d * M)
    if method == "young":
        return _out(young)
    x = d / (2.0 * M)
    daly = young * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    return _out(np.where(d < 2.0 * M, daly, M))


def goodput(interval, checkpoint_time, mtbf, restart_time=0.0):
    """Share of wall-clock time spent on training that is kept, in (0, 1].

    Daly 2006's complete model [daly2006higher] with Poisson interruptions of mean ``mtbf`` M:
    each segment of ``interval`` tau of compute plus a ``checkpoint_time`` delta write, redone
    after an interruption that costs ``restart_time`` R, takes ``M e^{R/M} (e^{(tau+delta)/M}
    - 1)`` on average, so ``goodput = tau / (M e^{R/M} (e^{(tau+delta)/M} - 1))``; without
    failures (``M`` to infinity) ``tau / (tau + delta)``.
    """
    tau = positive("interval", interval)
    d = positive("checkpoint_time", checkpoint_time)
    M = positive("mtbf", mtbf)
    R = positive("restart_time", restart_time, allow_zero=True)
    with np.errstate(over="ignore"):  # an hour-long restart on a minute's MTBF: goodput 0
        return _out(tau / (M * np.exp(R / M) * np.expm1((tau + d) / M)))


def _llama3_mtbf():
    """Llama 3's mean time between unexpected interruptions, seconds."""
    li = LLAMA3_INTERRUPTIONS
    return li["days"] * 86400.0 / li["unexpected"]


def _llama3_checkpoint_time():
    """The longest a Llama 3 checkpoint can take (every GPU writing its most), seconds."""
    c = LLAMA3_CHECKPOINT
    return LLAMA3_INTERRUPTIONS["gpus"] * c["bytes_per_gpu_max"] / c["storage_bandwidth"]


#: This chapter's row of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("training_layout", "checkpoint interval (Young)",
               r"\tau^* = \sqrt{2\,\delta\,T_\text{int}}",
               "Llama 3 405B: 419 unexpected interruptions in 54 days, 4 GB per GPU at 2 TB/s",
               lambda lm: lm.layout.checkpoint_interval(_llama3_mtbf(), _llama3_checkpoint_time(),
                                                        "young"),
               fmt_time,
               by_formula=lambda lm: float(np.sqrt(2 * _llama3_checkpoint_time()
                                                   * _llama3_mtbf()))),
)
