"""Roofline lower bounds for one decode or prefill step: ``Step``, ``decode_step``,
``prefill_step``, and two readings of a step (``min_latency``, ``serial_step``).

Every time is a **lower bound**: the step cannot finish before its FLOPs are done at peak rate,
nor before the bytes it must move have crossed the HBM bus. The core inequality of the book,
for a decode step of ``B`` sequences with ``S`` tokens of context on ``n`` chips::

    t_step >= max( 2 B N_act / (n C),  (N_tot b_w + B S b_kv) / (n W) )

with the MoE refinement that only the experts the batch touches are read (see
:meth:`llmmath.models.Model.weight_params_read`). The rules the bounds follow (cheapest valid
algorithm, every term over 10%, two overlap models) are in ``llmmath.roofline``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ._check import choice, fraction, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .collectives import collective_steps
from .units import fmt_time

__all__ = ["Step", "decode_step", "prefill_step", "min_latency", "serial_step"]

OVERLAPS = ("step", "per-op")


def _bound(compute_time, memory_time):
    """``"compute"`` where compute time reaches memory time, else ``"memory"`` (an array of
    names over arrays)."""
    is_compute = compute_time >= memory_time
    if type(is_compute) is bool or np.ndim(is_compute) == 0:  # two numbers: one name
        return "compute" if is_compute else "memory"
    return np.where(is_compute, "compute", "memory")


@dataclass(frozen=True)
class Step:
    """Lower bound on one forward step (decode or prefill), SI units.

    - ``matmul_time``: the weight matmuls' FLOPs (``2 N_mm`` per token) / (n_chips x peak x
      compute_efficiency), s
    - ``attention_time``: attention's own FLOPs (QK^T and AV, and a sparse-attention indexer's
      scoring) / (n_chips x peak of ``attention_dtype`` x compute_efficiency), s: bf16 by
      default whatever the cache's format, never above the step's ``dtype`` peak; the indexer's
      scoring at the fp8 peak where the chip has one; 0 with ``attention_flops=False``
    - ``compute_time``: ``matmul_time + attention_time``, s
    - ``weight_time``: weight bytes read / (n_chips x HBM bandwidth x memory_efficiency), s
    - ``kv_time``: KV-cache bytes read (and, in prefill, written) over the same bandwidth, s
    - ``memory_time``: ``weight_time + kv_time``, s
    - ``time``: the step bound, s. ``overlap="step"``: ``max(compute, memory)``, every byte
      overlapping every FLOP. ``overlap="per-op"``: each kernel overlaps only its own traffic,
      the attention kernel its KV reads and the matmuls their weight reads:
      ``max(attention, kv) + max(matmul, weight)`` (never below the ``"step"`` bound).
    - ``bound``: ``"compute"`` where ``compute_time >= memory_time``, else ``"memory"``
      (an array of strings when the inputs are arrays)
    - ``flops`` (FLOP), ``weight_bytes_read`` and ``kv_bytes_read`` (B): totals over all chips
    - ``tokens``: tokens the step produces (decode: ``batch``) or processes (prefill:
      ``batch x prompt``); ``batch`` sequences; ``n_chips`` chips serving the replica
    - ``held_per_chip``: bytes one chip holds for this step (its weights and its share of the
      KV caches), B; ``fits``: whether that is within the chip's HBM. A bound on a layout that
      does not fit is a bound on nothing: worked examples check it.
    """

    compute_time: float | np.ndarray
    weight_time: float | np.ndarray
    kv_time: float | np.ndarray
    memory_time: float | np.ndarray
    time: float | np.ndarray
    flops: float | np.ndarray
    weight_bytes_read: float | np.ndarray
    kv_bytes_read: float | np.ndarray
    tokens: float | np.ndarray
    batch: float | np.ndarray
    n_chips: float | np.ndarray
    kind: str = "decode"
    overlap: str = "step"
    model: object = field(default=None, repr=False, compare=False)
    chip: object = field(default=None, repr=False, compare=False)
    matmul_time: float | np.ndarray = 0.0
    attention_time: float | np.ndarray = 0.0
    held_per_chip: float | np.ndarray = 0.0

    @property
    def fits(self) -> bool | np.ndarray:
        """Whether ``held_per_chip`` is within one chip's HBM (a bool array over arrays)."""
        ok = np.asarray(self.held_per_chip) <= self.chip.hbm_capacity
        return bool(ok) if ok.ndim == 0 else ok

    @property
    def bound(self) -> str | np.ndarray:
        """``"compute"`` or ``"memory"``: the resource that binds (an array of them over arrays),
        read from the two times whenever asked, so it always agrees with them."""
        return _bound(self.compute_time, self.memory_time)


def _is_zero(flops) -> bool:
    """True for a Python 0.0 (no such FLOPs): an array is never tested element by element."""
    return type(flops) is float and flops == 0.0


def _index_peak(chip, peak):
    """The rate an indexer's fp8 scoring runs at: the fp8 peak where the chip lists one.

    ``peak`` is ``chip.peak(dtype)``, the step's own rate (FLOP/s).
    """
    return max(peak, float(chip.flops.get("fp8", 0.0)))


ATTENTION_DTYPES = ("bf16", "fp8")


def _attention_peak(chip, peak, attention_dtype):
    """The rate attention's own FLOPs run at: the arithmetic format ``attention_dtype``.

    The default, ``"bf16"``, is what production decode kernels do on a quantised cache: they
    dequantise K and V (or MLA's latent) to bf16 in registers and run bf16 MMAs (DeepSeek's
    FlashMLA fp8 kernel, "Deep Dive Into The FlashMLA FP8 Decoding Kernel", 2025; FlashInfer's
    and vLLM's fp8 KV caches). ``"fp8"`` is fp8 MMAs on an fp8 cache (FlashAttention-3's fp8
    path), where the chip has an fp8 peak. Never faster than the step's own ``dtype`` (whose
    rate is ``peak``): fp4 weights do not make attention run at the fp4 peak.
    """
    bf16 = min(peak, float(chip.flops.get("bf16", peak)))
    if attention_dtype == "bf16":
        return bf16
    return min(peak, float(chip.flops.get("fp8", bf16)))


def _larger(a, b):
    """The elementwise maximum; on two Python floats the first on a tie, with no numpy call."""
    if type(a) is float and type(b) is float:
        return a if a >= b else b
    return np.maximum(a, b)


def _finish(kind, overlap, mm_flops, attn_flops, idx_flops, wbytes, kvbytes, n_chips, chip, peak,
            compute_efficiency, memory_efficiency, tokens, batch, model, attention_dtype="bf16",
            held=0.0):
    """Times from FLOPs and bytes, and the :class:`Step` that holds them.

    ``peak`` is ``chip.peak(dtype)`` (FLOP/s). The same arithmetic runs on Python floats (a
    scalar step is Python floats throughout) and on arrays, which are broadcast to one shape.
    """
    compute_rate = n_chips * peak * compute_efficiency
    memory_rate = n_chips * chip.hbm_bandwidth * memory_efficiency
    matmul_time = mm_flops / compute_rate
    attention_time = 0.0
    if not _is_zero(attn_flops):
        attention_time = attn_flops / (n_chips * _attention_peak(chip, peak, attention_dtype)
                                       * compute_efficiency)
    if not _is_zero(idx_flops):
        attention_time = attention_time + idx_flops / (n_chips * _index_peak(chip, peak)
                                                       * compute_efficiency)
    compute_time = matmul_time + attention_time
    weight_time = wbytes / memory_rate
    kv_time = kvbytes / memory_rate
    memory_time = weight_time + kv_time
    if overlap == "step":
        time = _larger(compute_time, memory_time)
    else:
        time = _larger(attention_time, kv_time) + _larger(matmul_time, weight_time)
    flops = mm_flops
    for extra in (attn_flops, idx_flops):  # a pass over a large array only where there are FLOPs
        if not _is_zero(extra):
            flops = flops + extra
    if (type(compute_time) is float and type(memory_time) is float and type(tokens) is float
            and type(batch) is float and type(n_chips) is float):  # every input a Python float
        return Step(compute_time=compute_time, weight_time=weight_time, kv_time=kv_time,
                    memory_time=memory_time, time=time, flops=flops, weight_bytes_read=wbytes,
                    kv_bytes_read=kvbytes, tokens=tokens, batch=batch, n_chips=n_chips,
                    kind=kind, overlap=overlap, model=model, chip=chip,
                    matmul_time=matmul_time, attention_time=attention_time,
                    held_per_chip=held / n_chips)
    shape = np.broadcast(compute_time, memory_time, tokens, batch, n_chips).shape

    def b(x):  # one shape for every number: read-only views, no copies
        if not shape:
            return _out(x)
        x = np.asarray(x, dtype=float)
        return x if x.shape == shape else np.broadcast_to(x, shape)

    return Step(
        compute_time=b(compute_time), weight_time=b(weight_time), kv_time=b(kv_time),
        memory_time=b(memory_time), time=b(time),
        flops=b(flops), weight_bytes_read=b(wbytes), kv_bytes_read=b(kvbytes),
        tokens=b(tokens), batch=b(batch), n_chips=b(n_chips),
        kind=kind, overlap=overlap, model=model, chip=chip,
        matmul_time=b(matmul_time), attention_time=b(attention_time),
        held_per_chip=b(held / n_chips),
    )


def _decode_work(model, scored, context, attention_flops):
    """(matmul, attention, indexer) FLOPs of ``scored`` tokens, each attending over ``context``
    cached tokens (already checked): ``2 N_mm`` per token, plus attention's own FLOPs (and a
    sparse-attention indexer's) unless ``attention_flops`` is False."""
    mm = scored * 2.0 * model.matmul_params_active
    if not attention_flops:
        return mm, 0.0, 0.0
    attn, idx = model._decode_flops(context)
    return mm, scored * attn, scored * idx if model.has_indexer else 0.0


def _prefill_work(model, batch, prompt, past, attention_flops):
    """(matmul, attention, indexer) FLOPs of prefilling ``prompt`` tokens after ``past`` cached
    ones for each of ``batch`` sequences (arguments already checked)."""
    mm = batch * prompt * 2.0 * model.matmul_params_active
    if not attention_flops:
        return mm, 0.0, 0.0
    attn = batch * model._prefill_attention_flops(prompt, past)
    idx = batch * model._prefill_indexer_flops(prompt, past) if model.has_indexer else 0.0
    return mm, attn, idx


def _check_step(n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency,
                attention_dtype="bf16"):
    """Validate the arguments every step bound shares (ValueError naming the argument)."""
    choice("overlap", overlap, OVERLAPS)
    choice("attention_dtype", attention_dtype, ATTENTION_DTYPES)
    return (n_chips_check(n_chips), positive("weight_bytes", weight_bytes),
            positive("kv_bytes", kv_bytes), fraction("compute_efficiency", compute_efficiency),
            fraction("memory_efficiency", memory_efficiency))


def decode_step(model, chip, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                dtype="bf16", overlap="step", compute_efficiency=1.0, memory_efficiency=1.0,
                attention_flops=True, kv_replicas=1, attention_dtype="bf16") -> Step:
    """Lower bound on one decode step: ``batch`` sequences each emit one token.

    ``t = max(B (2 N_mm + attn(S)) / (n C),  (N_read(B) b_w + B kv_read(S)) / (n W))``

    - ``batch`` (sequences), ``context`` (tokens already in each sequence's KV cache),
      ``n_chips`` (chips per replica), ``weight_bytes`` (bytes per weight, b_w),
      ``kv_bytes`` (bytes per KV-cache element), ``dtype`` (which peak of ``chip.flops``).
    - Compute counts ``2 x matmul_params_active`` FLOP per token plus attention's own FLOPs
      (QK^T and AV over the context, in MLA's absorbed form; a sparse-attention indexer's
      scoring at fp8). Attention computes in ``attention_dtype``: ``"bf16"`` by default, what
      decode kernels do on an fp8 cache (they dequantise it), or ``"fp8"``.
      ``attention_flops=False`` drops attention's FLOPs: the episode's and Pope et al.'s first
      approximation, good for GQA at moderate context, not for MLA, whose attention does about
      as many FLOPs per cached byte as a chip's ridge point.
    - Weights read are ``model.weight_params_read(batch)``: for MoE, only the experts the
      batch touches; KV read is ``batch x model.kv_read_bytes(context)`` (with an indexer's keys).
    - The work is assumed perfectly shared by the ``n_chips`` (batch-sharded KV, sharded
      weights): communication is left out, so this is a lower bound. ``kv_replicas`` copies of
      each cached byte (KV sharded by head past the KV heads, or MLA's latent under head-parallel
      tensor parallelism: ``parallel.kv_replicas``) multiply the KV reads.
    - ``overlap="step"`` lets all memory traffic overlap all compute; ``"per-op"`` lets each
      kernel overlap only its own traffic: ``max(attention, kv) + max(matmul, weight)``.
    - ``compute_efficiency`` and ``memory_efficiency`` in (0, 1] derate the peaks; 1.0 is the
      pure lower bound.
    """
    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency,
        attention_dtype)
    peak = chip.peak(dtype)  # validates dtype early, naming the chip's dtypes
    context = model.check_context(context)  # within the model's window

    mm, attn, idx = _decode_work(model, batch, context, attention_flops)
    wbytes = model.weight_params_read(batch) * weight_bytes
    kvbytes = batch * model._read_bytes(context, kv_bytes)  # kv_read_bytes, checked above
    kv_replicas = positive("kv_replicas", kv_replicas)
    held = batch * model._held_bytes(context, kv_bytes)
    if not (type(kv_replicas) is float and kv_replicas == 1.0):  # x 1.0 would copy a whole grid
        kvbytes = kvbytes * kv_replicas
        held = held * kv_replicas
    held = model.total_params * weight_bytes + held
    return _finish("decode", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, peak,
                   compute_efficiency, memory_efficiency, batch, batch, model, attention_dtype,
                   held)


def prefill_step(model, chip, batch, prompt, n_chips=1, weight_bytes=2, kv_bytes=2,
                 dtype="bf16", past=0, compute_efficiency=1.0, memory_efficiency=1.0,
                 attention_flops=True, overlap="step", attention_dtype="bf16") -> Step:
    """Lower bound on prefilling ``prompt`` new tokens for each of ``batch`` sequences.

    ``t = max(B (P 2 N_mm + attn(P, past)) / (n C),
    (N_read(B P) b_w + B (kv_held(past+P) - kv_held(past)) + B kv_read(past)) / (n W))``

    - The weights are read once for the whole pass (all ``batch x prompt`` tokens share
      them): for MoE, ``weight_params_read(batch * prompt)``.
    - The KV cache of the new tokens is written once; the ``past`` tokens already cached
      (prompt caching, multi-turn chat) are read once.
    - Attention FLOPs (causal, see :meth:`llmmath.models.Model.prefill_attention_flops`: MLA
      in its cheaper un-absorbed form) and an indexer's scoring are included by default: at
      long prompts they stop being small.
    - Short prompts are memory-bound, like decode; long ones are compute-bound.

    Other arguments as in :func:`decode_step`; ``tokens`` in the result is ``batch x prompt``.
    """
    batch = positive("batch", batch)
    prompt = positive("prompt", prompt)
    past = positive("past", past, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency,
        attention_dtype)
    peak = chip.peak(dtype)
    past = model.check_context(past, "past")
    model.check_context(past + prompt, "past + prompt")  # checked once, here

    tokens = positive("batch x prompt", batch * prompt)  # finite: no overflow of the product
    mm, attn, idx = _prefill_work(model, batch, prompt, past, attention_flops)
    wbytes = model._weight_params_read(tokens) * weight_bytes
    written = model._held_bytes(past + prompt, kv_bytes) - model._held_bytes(past, kv_bytes)
    kvbytes = batch * (written + model._read_bytes(past, kv_bytes))
    held = model.total_params * weight_bytes + batch * model._held_bytes(past + prompt, kv_bytes)
    return _finish("prefill", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, peak,
                   compute_efficiency, memory_efficiency, tokens, batch, model, attention_dtype,
                   held)


def min_latency(model, chip, n_chips=1, weight_bytes=2, dtype="bf16", hop_latency=0.0,
                topology="switch"):
    """Fastest possible decode step (s): batch 1, no context, weights read once.

    ``t_min = max(2 N_mm / (n C), N_read(1) b_w / (n W)) + L n_ar sigma t_lat``.

    The first term is the roofline floor. For a dense model it is the episode's floor
    ``N_tot b_w / (n W)`` (the untied input embedding contributes one row); for MoE only the
    shared weights and the ``k`` experts one token uses are read.

    The second term is the fixed latency of tensor parallelism, 0 by default (``hop_latency=0``:
    the pure roofline). With the ``n_chips`` chips splitting every layer, each layer all-reduces
    its activations ``n_ar`` times (2: after attention and after the MLP; 1 for a parallel
    attention/MLP block, PaLM), one after another: the next layer cannot start before the sum
    is known, so ``L n_ar`` all-reduces run in sequence. Each takes ``sigma`` steps
    (:func:`llmmath.collectives.collective_steps`: 2 through a switch, ``2 (n - 1)`` on a ring;
    0 on one chip) of ``hop_latency`` seconds each (measured values with their sources in
    :data:`llmmath.collectives.STEP_LATENCIES`: about 3 us a step for NCCL's NVLink SHARP
    all-reduce on H100s, ``nccl_nvls_latency``; 2.4 us a step for its ring on eight A100s,
    ``nccl_tests_latency``). Assumed: the latency does not overlap the weight reads (the next
    layer's weights could stream during an all-reduce only up to what on-chip caches hold).
    A batch-1 all-reduce's bandwidth time (``2 (n-1)/n D b_a / W_up``, tens of ns) is left out.
    """
    t = decode_step(model, chip, batch=1, context=0, n_chips=n_chips,
                    weight_bytes=weight_bytes, dtype=dtype).time
    alpha = positive("hop_latency", hop_latency, allow_zero=True)
    steps = collective_steps("all-reduce", n_chips, topology)  # validates topology and n_chips
    if type(alpha) is float and alpha == 0.0:
        return t
    n_ar = 1 if model.parallel_block else 2
    return _out(t + model.n_layers * n_ar * np.asarray(steps) * alpha)


def serial_step(step: Step) -> Step:
    """The same step with **no** overlap of compute and memory traffic: ``t = compute + memory``.

    Real kernels overlap imperfectly, most of all near the ridge point, so a measured step lies
    between ``step.time`` (the lower bound, ``max``) and this pessimistic estimate (the sum),
    which is at most twice the bound, exactly twice where compute and memory times are equal
    (at the critical batch). Every other field is kept.
    """
    t = np.asarray(step.compute_time) + np.asarray(step.memory_time)
    return dataclasses.replace(step, time=_out(t) if t.ndim == 0 else t, overlap="none")


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("decode_roofline", "decode step",
               r"\max\left(\frac{B (2 N_\text{mm} + a S)}{n C}, "
               r"\frac{N_\text{read} b_w + B S b_\text{kv}}{n W}\right)",
               "Llama 3 70B, 8 H100s, B = 64, S = 4,096",
               lambda lm: lm.decode_step(lm.model("Llama-3-70B"), lm.chip("H100-SXM"), 64, 4096,
                                         n_chips=8).time, fmt_time,
               by_formula=lambda lm: max(
                   64 * (2 * (m := lm.model("Llama-3-70B")).matmul_params_active
                         + 4 * m.n_heads * m.head_dim * m.n_layers * 4096)
                   / (8 * (c := lm.chip("H100-SXM")).peak("bf16")),
                   (m.weight_params_read(64) * 2 + 64 * 4096 * m.kv_bytes_per_token(2))
                   / (8 * c.hbm_bandwidth))),
    SummaryRow("decode_roofline", "minimum latency per token",
               r"t_\text{min} = N_\text{read} b_w / (n W)",
               "Llama 3 70B, 8 H100s",
               lambda lm: lm.step.min_latency(lm.model("Llama-3-70B"), lm.chip("H100-SXM"),
                                              n_chips=8), fmt_time,
               by_formula=lambda lm: lm.model("Llama-3-70B").weight_params_read(1) * 2
               / (8 * lm.chip("H100-SXM").hbm_bandwidth)),
)
