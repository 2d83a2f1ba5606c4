"""Training compute, time, utilisation and memory; compute-optimal and over-trained token counts.

- Training FLOPs: ``6 N_act D`` (forward 2, backward 4 FLOP per parameter per token;
  Kaplan et al. 2020), ``8 N_act D`` when every activation is recomputed in the backward pass.
  Attention's context-dependent FLOPs are left out, as in the published totals.
- MFU (model FLOPs utilisation) counts only the model's FLOPs, never recomputation:
  ``MFU = f N tokens / (n C t)`` with ``f = 6`` for training and ``f = 2`` for inference
  (Pope et al. 2022).
- Compute-optimal data: ``D ~ 20 N`` (Hoffmann et al. 2022).

A ``model`` argument may be a :class:`~llmmath.models.Model` (its ``active_params`` are used) or
a plain parameter count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._check import choice, fraction, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .units import fmt_bytes, fmt_count, fmt_flops

__all__ = [
    "training_flops",
    "training_time",
    "mfu",
    "inference_mfu",
    "MemoryPerParam",
    "training_memory_per_param",
    "training_memory",
    "compute_optimal_tokens",
    "compute_optimal_model",
    "overtraining_factor",
]

CHINCHILLA_TOKENS_PER_PARAM = 20.0


def _params(model, which="active_params"):
    if hasattr(model, which):
        return float(getattr(model, which))
    return positive("model (parameter count)", model)


def training_flops(model, tokens, recompute=False):
    """Training FLOPs: ``6 N_act D``, or ``8 N_act D`` with full activation recomputation.

    ``tokens`` is D; N_act is the model's ``active_params`` (embeddings included, as in the
    published totals such as GPT-3's 3.14e23 FLOP).
    """
    tokens = positive("tokens", tokens)
    per = 8.0 if recompute else 6.0
    return _out(per * _params(model) * tokens)


def training_time(model, tokens, chip, n_chips, mfu, dtype="bf16"):
    """Wall-clock seconds to train on ``tokens``: ``6 N_act D / (n C MFU)``.

    ``mfu`` is model FLOPs utilisation, which already excludes recomputation, so the time does
    not depend on whether activations are recomputed (a run that recomputes reaches a lower MFU).
    """
    n_chips = n_chips_check(n_chips)
    mfu = fraction("mfu", mfu)
    return _out(training_flops(model, tokens) / (n_chips * chip.peak(dtype) * mfu))


def mfu(model, tokens, time, chip, n_chips=1, dtype="bf16", flops_per_param=6):
    """Model FLOPs utilisation of a reported run: ``f N tokens / (n C t)``.

    ``flops_per_param`` is 6 for training (forward + backward) and 2 for inference
    (see :func:`inference_mfu`). A result above 1 means the reported figures are impossible on
    that hardware.
    """
    tokens = positive("tokens", tokens)
    time = positive("time", time)
    n_chips = n_chips_check(n_chips)
    flops_per_param = positive("flops_per_param", flops_per_param)
    return _out(flops_per_param * _params(model) * tokens / (n_chips * chip.peak(dtype) * time))


#: Published training runs, as their papers report them. Llama 3.1 405B [llama3_herd] (Table 4;
#: the model card's GPU-hours [meta_llama31_modelcard]): 3.8e25 FLOP on 15.6T tokens, 8-way
#: tensor and 16-stage pipeline parallelism, 16M-token steps of 2,048 sequences of 8,192 tokens,
#: and three configurations as (GPUs, bf16 FLOP/s per GPU, MFU); the context was extended from
#: 8k to 128k tokens over the last 800B tokens of pre-training.
LLAMA3_405B_TRAINING = {
    "flops": 3.8e25, "tokens": 15.6e12, "gpu_hours": 30.84e6, "long_context_tokens": 800e9,
    "tensor_parallel": 8, "pipeline_parallel": 16,
    "sequences_per_step": 2048, "sequence_length": 8192,
    "configs": ((8192, 430e12, 0.43), (16384, 400e12, 0.41), (16384, 380e12, 0.38)),
}
#: PaLM 540B [chowdhery2022palm]: 46.2% MFU (57.8% HFU), 2,527.2 zettaFLOP on 780B tokens, 1,200
#: hours on 6,144 TPU v4 chips then 336 hours on 3,072, as (hours, chips), on 2,048-token
#: sequences; and its estimate of
#: GPT-3's MFU, 21.3%.
PALM_540B_TRAINING = {
    "sequence_length": 2048, "gpt3_mfu_estimate": 0.213, "mfu": 0.462, "hfu": 0.578,
    "flops": 2527.2e21, "tokens": 780e9,
    "phases": ((1200, 6144), (336, 3072)),
}
#: DeepSeek-V3 [deepseek_v3]: 2.788M H800 GPU-hours in all, 2.664M of them pre-training on 14.8T
#: tokens (180K GPU-hours per trillion tokens) at a 4,096-token sequence length, on 2,048 GPUs
#: with 16-stage pipeline and 64-way expert parallelism.
DEEPSEEK_V3_TRAINING = {
    "sequence_length": 4096, "gpu_hours_per_trillion_tokens": 180e3, "gpu_hours": 2.788e6,
    "pretraining_gpu_hours": 2.664e6, "tokens": 14.8e12, "gpus": 2048,
    "pipeline_parallel": 16, "expert_parallel": 64,
}
#: Megatron-LM's 1-trillion-parameter GPT [narayanan2021megatron]: 3,072 A100s, 8-way tensor and
#: 64-way pipeline parallelism, a global batch of 3,072 sequences, 163 TFLOP/s per GPU.
MEGATRON_1T_TRAINING = {
    "gpus": 3072, "tensor_parallel": 8, "pipeline_parallel": 64, "global_batch": 3072,
    "flops_per_gpu": 163e12,
}


#: Korthikanti et al.'s 530B-parameter GPT on 2,240 A100s [korthikanti2022reducing] (abstract):
#: 54.2% MFU with selective recomputation and sequence parallelism against 42.1% with full
#: recomputation, the first reported as 29% faster.
KORTHIKANTI2022_530B = {"gpus": 2240, "params": 530e9, "mfu_selective": 0.542, "mfu_full": 0.421,
                        "speedup": 0.29}


#: PaLM 540B served on 64 TPU v4 chips with 2,048-token prompts, Pope et al. 2022 Table 2
#: [pope2022efficiently]: per row the batch, the tokens each sequence processes (its prompt in
#: prefill, 64 generated tokens in decode), the bytes per weight (int8 or bf16), the measured
#: seconds for the whole row and the MFU the paper reports. tests/test_pope2022.py rebuilds
#: each MFU with :func:`inference_mfu`.
POPE2022_N_CHIPS = 64
POPE2022_PROMPT = 2048
#: Pope et al.'s headline decode latency (abstract: "29ms per token" at batch 64 with int8
#: weights) and the share of all HBM their Table 1 reserves for the KV cache (30%)
#: [pope2022efficiently].
POPE2022_LOW_LATENCY_PER_TOKEN = 29e-3
#: With batch-sharded multiquery attention, contexts of 8,192 and 32,768 tokens (batch 512 and
#: 128) spend 8% to 31% of decode time in attention [pope2022efficiently], as
#: ((context, batch), ...) and (low, high) shares.
POPE2022_ATTENTION_SHARE = {"cases": ((8192, 512), (32768, 128)), "share": (0.08, 0.31)}
POPE2022_KV_MEMORY_FRACTION = 0.30
POPE2022_TABLE2 = {
    "low-latency prefill": {"batch": 1, "tokens": 2048, "weight_bytes": 1, "seconds": 0.29,
                            "mfu": 0.43},
    "low-latency decode": {"batch": 64, "tokens": 64, "weight_bytes": 1, "seconds": 1.82,
                           "mfu": 0.14},
    "high-throughput prefill": {"batch": 512, "tokens": 2048, "weight_bytes": 2, "seconds": 85.2,
                                "mfu": 0.76},
    "high-throughput decode": {"batch": 512, "tokens": 64, "weight_bytes": 2, "seconds": 6.0,
                               "mfu": 0.33},
}


def inference_mfu(model, tokens, time, chip, n_chips=1, dtype="bf16"):
    """Inference MFU as Pope et al. (2022) define it: ``2 N tokens / (n C t)``.

    ``tokens`` are the tokens processed (prefill: batch x prompt) or generated (decode:
    batch x steps) in ``time`` seconds.
    """
    return mfu(model, tokens, time, chip, n_chips=n_chips, dtype=dtype, flops_per_param=2)


@dataclass(frozen=True)
class MemoryPerParam:
    """Bytes of training state per parameter (activations excluded)."""

    weights: float
    gradients: float
    master_weights: float
    optimizer_states: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.master_weights + self.optimizer_states


OPTIMIZER_STATES = {"adam": 2, "adamw": 2, "sgd-momentum": 1, "sgd": 0}  # fp32 tensors per param


def training_memory_per_param(optimizer="adam", mixed_precision=True) -> MemoryPerParam:
    """Bytes per parameter of weights, gradients, fp32 master copy and optimiser state.

    Mixed-precision Adam: bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + Adam m and v
    8 = **16 B**. Pure fp32 Adam: 4 + 4 + 0 + 8 = 16 B as well. SGD with momentum keeps one
    fp32 state (4 B), plain SGD none.
    """
    choice("optimizer", optimizer, list(OPTIMIZER_STATES))
    states = 4.0 * OPTIMIZER_STATES[optimizer]
    if mixed_precision:
        return MemoryPerParam(weights=2.0, gradients=2.0, master_weights=4.0,
                              optimizer_states=states)
    return MemoryPerParam(weights=4.0, gradients=4.0, master_weights=0.0, optimizer_states=states)


def training_memory(model, optimizer="adam", mixed_precision=True):
    """Bytes of training state for all parameters: ``N_tot x bytes per param`` (no activations)."""
    per = training_memory_per_param(optimizer, mixed_precision).total
    return per * _params(model, "total_params")


def compute_optimal_tokens(model, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """Compute-optimal training tokens, ``D = 20 N`` (Hoffmann et al. 2022).

    N is ``active_params`` (Chinchilla fitted dense models, whose active and total counts are
    equal; for MoE this is the convention that matches ``6 N_act D``, and only a rough guide).
    """
    tokens_per_param = positive("tokens_per_param", tokens_per_param)
    return _out(tokens_per_param * _params(model))


def compute_optimal_model(compute, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """(params, tokens) that spend ``compute`` FLOP compute-optimally: ``C = 6 N D`` with
    ``D = 20 N``.

    ``N = sqrt(C / (6 x 20))``, ``D = 20 N``.
    """
    compute = positive("compute", compute)
    tokens_per_param = positive("tokens_per_param", tokens_per_param)
    n = np.sqrt(compute / (6.0 * tokens_per_param))
    return _out(n), _out(tokens_per_param * n)


def overtraining_factor(model, tokens, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """How many times the compute-optimal token count a run used: ``D / (20 N)``."""
    tokens = positive("tokens", tokens)
    return _out(tokens / compute_optimal_tokens(model, tokens_per_param))


# ----- attention in training, activations, sharded state, data-parallel traffic ---------------
# Added for "Training compute, time and utilisation". Sources: Korthikanti et al. 2022 (activation
# bytes per layer), Rajbhandari et al. 2020 (ZeRO stages), Chowdhery et al. 2022 (MFU).

__all__ += [
    "attention_training_flops_per_token", "attention_training_share", "ACTIVATION_RECOMPUTE",
    "activation_bytes_per_token_per_layer", "activation_memory", "zero_memory_per_chip",
    "min_training_chips", "dp_gradient_sync_time", "dp_compute_time", "dp_critical_tokens",
    "mfu_from_chip_hours", "chip_hours", "compute_chip_hours",
]


def _model_object(model, name="model"):
    if not hasattr(model, "prefill_attention_flops"):
        raise TypeError(f"{name}: got {model!r}; expected an llmmath Model (from llmmath.models), "
                        "not a plain parameter count")
    return model


def attention_training_flops_per_token(model, sequence_length):
    """Attention-kernel FLOPs (QK^T and AV) per trained token, forward and backward, all layers.

    A causal sequence of ``sequence_length`` tokens costs
    ``prefill_attention_flops(sequence_length)`` forward; the backward pass costs twice that (the
    same rule as for matmuls), so per token
    ``3 x prefill_attention_flops(sequence_length) / sequence_length``, about
    ``6 L n_q d_h S / 2`` for a dense GQA model (the ``/2`` is causality). Not in ``6 N_act D``;
    sliding windows and sparse attention cap it as in serving. A sparse-attention indexer's FLOPs
    are left out.
    """
    model = _model_object(model)
    # within the model's context
    sequence_length = model.check_context(positive("sequence_length", sequence_length),
                                     "sequence_length")
    return _out(3.0 * np.asarray(model.prefill_attention_flops(sequence_length)) / sequence_length)


def attention_training_share(model, sequence_length):
    """Attention's share of training FLOPs per token: ``a / (6 N_act + a)``, ``a`` as above."""
    a = attention_training_flops_per_token(model, sequence_length)
    return _out(np.asarray(a) / (6.0 * float(model.active_params) + np.asarray(a)))


#: Bytes per token per layer of stored activations in 16-bit, in units of the width D (the
#: constant) plus a term in n_heads x sequence_length (the attention scores and softmax),
#: Korthikanti et al. 2022, Table 2 (no tensor or sequence parallelism, dropout masks of 1 byte
#: included).
ACTIVATION_RECOMPUTE = {"none": (34.0, 5.0), "selective": (34.0, 0.0), "full": (2.0, 0.0)}


def activation_bytes_per_token_per_layer(model, sequence_length, recompute="none"):
    """Bytes of activations one layer keeps per token for the backward pass (16-bit activations).

    Korthikanti et al. 2022 for a GPT layer (4D MLP, multi-head attention, dropout):
    ``34 D + 5 n_q S`` with nothing recomputed; ``34 D`` with *selective* recomputation (the
    attention scores, which grow with S, are recomputed); ``2 D`` with *full* recomputation (only
    the layer's input is kept; the whole forward pass is run again in the backward). Layers with
    SwiGLU, GQA or experts differ by tens of percent; FlashAttention-style kernels never store
    the ``5 n_q S`` term, so they behave as ``selective`` here.
    """
    model = _model_object(model)
    sequence_length = model.check_context(positive("sequence_length", sequence_length),
                                     "sequence_length")
    choice("recompute", recompute, list(ACTIVATION_RECOMPUTE))
    per_d, per_hs = ACTIVATION_RECOMPUTE[recompute]
    return _out(per_d * model.d_model + per_hs * model.n_heads * sequence_length)


def activation_memory(model, tokens, sequence_length, recompute="none"):
    """Bytes of activations held for ``tokens`` tokens in flight (sequences of
    ``sequence_length``), all layers."""
    tokens = positive("tokens", tokens)
    per = activation_bytes_per_token_per_layer(model, sequence_length, recompute)
    return _out(model.n_layers * tokens * np.asarray(per))


def _zero_stage(name, value):
    """A ZeRO stage: one of the integers 0, 1, 2, 3 (not an array, not a boolean)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: got {value!r}; expected one of the integers 0, 1, 2, 3")
    return int(choice(name, int(value), [0, 1, 2, 3]))


def zero_memory_per_chip(model, n_chips, zero_stage=0, optimizer="adam", mixed_precision=True):
    """Training state per chip (bytes, activations excluded) with ZeRO sharding over ``n_chips``.

    Rajbhandari et al. 2020: stage 0 replicates everything (plain data parallelism); stage 1
    shards the optimiser state (fp32 master and Adam's m, v); stage 2 also the gradients; stage 3
    (FSDP) also the weights. With mixed-precision Adam and N_tot parameters per replica:
    16 N, 4 N + 12 N/n, 2 N + 14 N/n, 16 N/n.
    """
    n = n_chips_check(n_chips)
    zero_stage = _zero_stage("zero_stage", zero_stage)
    m = training_memory_per_param(optimizer, mixed_precision)
    params = _params(model, "total_params")
    opt = m.master_weights + m.optimizer_states
    kept, sharded = {0: (m.total, 0.0), 1: (m.weights + m.gradients, opt),
                     2: (m.weights, m.gradients + opt), 3: (0.0, m.total)}[zero_stage]
    return _out(params * (kept + sharded / np.asarray(n)))


def min_training_chips(model, chip, activation_bytes=0.0, optimizer="adam", mixed_precision=True):
    """Fewest chips whose HBM holds the training state plus ``activation_bytes``, fully sharded.

    ``ceil((bytes_per_param x N_tot + activations) / M)``: ZeRO-3/FSDP or any layout that splits
    every byte evenly. Buffers, fragmentation and the communication workspace are left out, so
    real runs need more.
    """
    activation_bytes = positive("activation_bytes", activation_bytes, allow_zero=True)
    need = training_memory(model, optimizer, mixed_precision) + activation_bytes
    if isinstance(need, float):
        return int(math.ceil(need / chip.hbm_capacity))
    return np.ceil(need / chip.hbm_capacity)  # one count per entry of an array of activations


_NETWORKS = ("scale_up", "scale_out")
#: How a hierarchical all-reduce runs its scale-up phase (reduce-scatter inside each domain,
#: then all-gather) against its scale-out phase: "overlapped" (NCCL's rings and trees stream
#: chunks through the NVLink and network hops at once, so the slower phase sets the time) or
#: "serial" (one phase after the other, as a naive reduce-scatter / all-reduce / all-gather).
SCALE_UP_PHASES = ("overlapped", "serial")


def _network_bandwidth(chip, network):
    choice("network", network, list(_NETWORKS))
    bw = getattr(chip, f"{network}_bandwidth")
    if not bw:
        raise ValueError(f"network: {chip.name} has no {network} bandwidth in the catalogue; "
                         "allowed: one of "
                         f"{[n for n in _NETWORKS if getattr(chip, f'{n}_bandwidth')]}")
    return float(bw)


def dp_gradient_sync_time(model, chip, n_chips, network="scale_out", grad_bytes=2, zero_stage=0,
                          nics_per_domain=None, scale_up_phase="overlapped"):
    """Seconds to synchronise one step's gradients across ``n_chips`` data-parallel replicas.

    Bandwidth only (the per-hop latency is left out), ``Q = N_tot b_g`` bytes of gradients:

    - ``network="scale_up"``: one ring over all ``n`` chips on the scale-up links,
      ``2 (n-1)/n Q / W_up`` (:func:`llmmath.parallel.all_reduce_time`);
    - ``network="scale_out"`` (the default): the ``n`` chips fill scale-up domains of
      ``n_dom`` chips (``chip.scale_up_domain``; one domain of ``n`` if fewer), and the
      all-reduce is hierarchical. Inside each domain the gradient is reduce-scattered and
      finally all-gathered over the scale-up links, ``2 (n_dom-1)/n_dom Q / W_up``; across
      domains each domain's ``nics_per_domain`` scale-out ports carry an equal share,
      ``2 (n - n_dom)/n Q / (n_nic W_out)``. ``nics_per_domain`` defaults to ``n_dom``: the
      catalogue's ``W_out`` is per chip (DGX/HGX H100 nodes have one 400 Gb/s ConnectX-7 NIC per
      GPU [nvidia_h100_datasheet]), and NCCL builds one ring or tree channel per NIC, splitting
      the data across them over NVLink [nccl_multi_nic]; 1 is a node whose whole gradient leaves
      through one port.
      ``scale_up_phase="overlapped"`` (NCCL's pipelined rings and trees) takes the larger of the
      two phases, ``"serial"`` their sum.

    ZeRO-3/FSDP instead all-gathers the weights twice (forward and backward) and
    reduce-scatters the gradients: 1.5 times the traffic (``zero_stage=3``). Stages 0-2 move
    what an all-reduce does.
    """
    from .parallel import all_reduce_time

    n = n_chips_check(n_chips)
    grad_bytes = positive("grad_bytes", grad_bytes)
    zero_stage = _zero_stage("zero_stage", zero_stage)
    choice("scale_up_phase", scale_up_phase, SCALE_UP_PHASES)
    bw = _network_bandwidth(chip, network)
    q = _params(model, "total_params") * grad_bytes
    dom = float(chip.scale_up_domain or 1)
    if nics_per_domain is not None:
        nics_per_domain = positive("nics_per_domain", nics_per_domain, integer=True,
                                   maximum=dom)
    if network == "scale_up":
        t = np.asarray(all_reduce_time(q, n, bw))
    else:
        d = np.minimum(np.asarray(n, dtype=float), dom)  # chips per domain
        nics = d if nics_per_domain is None else np.minimum(nics_per_domain, d)
        t_out = 2.0 * (np.asarray(n) - d) / np.asarray(n) * q / (nics * bw)
        t_up = 2.0 * (d - 1.0) / d * q / float(chip.scale_up_bandwidth or math.inf)
        t = np.maximum(t_out, t_up) if scale_up_phase == "overlapped" else t_out + t_up
    return _out(t * (1.5 if zero_stage == 3 else 1.0))


def dp_compute_time(model, chip, tokens_per_chip, mfu=1.0, dtype="bf16"):
    """Seconds of forward and backward compute for ``tokens_per_chip`` tokens:
    ``6 N_act T / (C MFU)``."""
    tokens_per_chip = positive("tokens_per_chip", tokens_per_chip)
    mfu = fraction("mfu", mfu)
    return _out(6.0 * _params(model) * tokens_per_chip / (chip.peak(dtype) * mfu))


def dp_critical_tokens(model, chip, n_chips, network="scale_out", grad_bytes=2, mfu=1.0,
                       dtype="bf16", zero_stage=0, nics_per_domain=None,
                       scale_up_phase="overlapped"):
    """Tokens per chip per step below which the gradient sync cannot hide behind compute.

    Setting ``6 N_act T / (C MFU)`` equal to :func:`dp_gradient_sync_time` gives, across
    domains of ``n_dom`` chips with a scale-out port per chip (the default),
    ``T* = (b_g / 3) (N_tot / N_act) C MFU max((n - n_dom) / (n n_dom W_out),
    (n_dom - 1) / (n_dom W_up))`` (``scale_up_phase="serial"``: the sum): the chip's
    FLOP-to-network ratio times the sparsity, as the critical batch of decode is ``C/W`` times
    the sparsity. One port per domain (``nics_per_domain=1``) multiplies the scale-out term by
    ``n_dom``; ``network="scale_up"`` gives ``(n-1)/n (b_g/3) (C/W_up) (N_tot/N_act)``.
    ``mfu = 1`` (the default) is the most demanding case; a slower step hides more traffic.
    """
    mfu = fraction("mfu", mfu)
    t = np.asarray(dp_gradient_sync_time(model, chip, n_chips, network, grad_bytes, zero_stage,
                                         nics_per_domain, scale_up_phase))
    return _out(t * chip.peak(dtype) * mfu / (6.0 * _params(model)))


def mfu_from_chip_hours(compute, chip_hours, chip, dtype="bf16"):
    """MFU implied by a run's model FLOPs and its chip-hours: ``F / (chip_hours x 3600 x C)``.

    Chip-hours that include restarts, evaluation and idle time give a lower figure than the
    MFU measured over the steady steps.
    """
    compute = positive("compute", compute)
    chip_hours = positive("chip_hours", chip_hours)
    return _out(compute / (chip_hours * 3600.0 * chip.peak(dtype)))


def chip_hours(n_chips, time):
    """Chip-hours a run of ``time`` seconds on ``n_chips`` chips occupies: ``n t / 3600``."""
    n_chips = n_chips_check(n_chips)
    time = positive("time", time)
    return _out(n_chips * time / 3600.0)


def compute_chip_hours(compute, chip, mfu, dtype="bf16"):
    """Chip-hours to do ``compute`` FLOPs on ``chip`` at utilisation ``mfu``:
    ``F / (C MFU) / 3600`` (the inverse of :func:`mfu_from_chip_hours`)."""
    compute = positive("compute", compute)
    mfu = fraction("mfu", mfu)
    return _out(compute / (chip.peak(dtype) * mfu) / 3600.0)

#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("training_compute", "training compute", r"6 N_\text{act} D_\text{pre}",
               "Llama 3.1 405B, 15.6T tokens",
               lambda lm: lm.training_flops(lm.model("Llama-3.1-405B"), 15.6e12),
               lambda f: fmt_flops(f),
               by_formula=lambda lm: 6 * lm.model("Llama-3.1-405B").active_params * 15.6e12),
    SummaryRow("training_compute", "training state",
               r"b_\text{state} N_\text{tot}, \ b_\text{state} = 16",
               "Llama 3.1 405B, mixed-precision Adam",
               lambda lm: lm.training.training_memory(lm.model("Llama-3.1-405B")), fmt_bytes,
               by_formula=lambda lm: 16 * lm.model("Llama-3.1-405B").total_params),
    SummaryRow("training_compute", "per-chip batch that hides the gradient sync",
               r"T^* = \frac{n - n_\text{dom}}{n} \frac{b_g}{3} "
               r"\frac{C}{n_\text{dom} W_\text{out}} \frac{N_\text{tot}}{N_\text{act}}",
               "Llama 3 70B, 1,024 H100s, a 400 Gb/s NIC per GPU",
               lambda lm: lm.training.dp_critical_tokens(lm.model("Llama-3-70B"),
                                                         lm.chip("H100-SXM"), 1024, "scale_out"),
               lambda t: f"{fmt_count(t)} tokens",
               by_formula=lambda lm: (1024 - 8) / 1024 * 2 / 3
               * (c := lm.chip("H100-SXM")).peak("bf16") / (8 * c.scale_out_bandwidth)
               * (m := lm.model("Llama-3-70B")).total_params / m.active_params),
)
