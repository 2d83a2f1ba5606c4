"""Roofline lower bounds for a decode or prefill step, and the limits they imply.

Every time here is a **lower bound**: the step cannot finish before its FLOPs are done at
peak rate, nor before the bytes it must move have crossed the HBM bus. The bound leaves out
communication between chips, kernel launch and scheduling overheads, imperfect overlap of
compute and memory traffic (unless ``overlap="per-op"``), activation traffic, and anything
that runs below peak (unless you pass ``compute_efficiency`` / ``memory_efficiency`` < 1).

The core inequality of the book, for a decode step of ``B`` sequences with ``S`` tokens of
context on ``n`` chips::

    t_step >= max( 2 B N_act / (n C),  (N_tot b_w + B S b_kv) / (n W) )

with the MoE refinement that only the experts the batch touches are read (see
:meth:`llmmath.models.Model.weight_params_read`).

All inputs and outputs are SI (seconds, bytes, FLOP, FLOP/s, bytes/s), and every numeric
argument broadcasts over numpy arrays: a sweep over a grid of batches and contexts is one call.

Three rules the bounds follow (and the book states where it uses them):

- **A lower bound charges each operation its cheapest valid algorithm**: MLA decodes in the
  absorbed form and prefills un-absorbed (:mod:`llmmath.models`); a step reads only the weights
  it touches; attention computes in its cache's format, never at a faster one.
- **A headline number counts every term that moves it by more than 10% for its model**, so
  attention's own FLOPs (and a sparse-attention indexer's reads and scoring) are counted by
  default (``attention_flops=True``); ``attention_flops=False`` is the episode's first
  approximation, which chapters teach and then show failing (MLA).
- **Two overlap models**, both lower bounds: ``overlap="step"`` (every byte hides behind every
  FLOP: ``max(compute, memory)``) and ``overlap="per-op"`` (each kernel overlaps only its own
  traffic: ``max(attention, kv) + max(matmul, weight)``). The critical context and the
  context-dependent critical batch exist only under the first; a conclusion that depends on
  which one holds is stated under both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._check import choice, fraction, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out

__all__ = [
    "Step",
    "memory_held",
    "fits_in_memory",
    "decode_step",
    "prefill_step",
    "critical_batch",
    "critical_context",
    "decode_balance",
    "max_batch",
    "max_context",
    "min_chips",
    "drain_time",
    "min_latency",
    "arithmetic_intensity",
    "attainable_flops",
]

OVERLAPS = ("step", "per-op")
_BOUND_NAMES = np.array(["memory", "compute"])


def _bound(compute_time, memory_time):
    is_compute = np.asarray(compute_time) >= np.asarray(memory_time)
    if is_compute.ndim == 0:
        return "compute" if is_compute else "memory"
    return _BOUND_NAMES[is_compute.view(np.uint8)]


@dataclass(frozen=True)
class Step:
    """Lower bound on one forward step (decode or prefill), SI units.

    - ``matmul_time``: the weight matmuls' FLOPs (``2 N_mm`` per token) / (n_chips x peak x
      compute_efficiency), s
    - ``attention_time``: attention's own FLOPs (QK^T and AV, and a sparse-attention indexer's
      scoring) / (n_chips x peak of the KV cache's format x compute_efficiency), s: bf16 for a
      2-byte cache, fp8 for a 1-byte one, never above the step's ``dtype`` peak; the indexer's
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
    """

    compute_time: float | np.ndarray
    weight_time: float | np.ndarray
    kv_time: float | np.ndarray
    memory_time: float | np.ndarray
    time: float | np.ndarray
    bound: str | np.ndarray
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


def _index_peak(chip, dtype):
    """The rate an indexer's fp8 scoring runs at: the fp8 peak where the chip lists one."""
    return max(chip.peak(dtype), float(chip.flops.get("fp8", 0.0)))


def _attention_peak(chip, dtype, kv_bytes):
    """The rate attention's own FLOPs run at: the arithmetic of the KV cache's format.

    Attention multiplies queries by the cached keys and values, so it computes in the cache's
    format (bf16 for a 2-byte cache, fp8 for a 1-byte one where the chip has fp8), never faster
    than the step's ``dtype``: fp4 weights do not make attention run at the fp4 peak.
    """
    fallback = chip.peak(dtype)
    bf16 = min(fallback, float(chip.flops.get("bf16", fallback)))
    fp8 = min(fallback, float(chip.flops.get("fp8", bf16)))
    return np.where(np.asarray(kv_bytes) <= 1, fp8, bf16)


def _finish(kind, overlap, mm_flops, attn_flops, idx_flops, wbytes, kvbytes, n_chips, chip, dtype,
            compute_efficiency, memory_efficiency, tokens, batch, model, kv_bytes=2):
    peak = chip.peak(dtype)
    compute_rate = n_chips * peak * compute_efficiency
    memory_rate = n_chips * chip.hbm_bandwidth * memory_efficiency
    matmul_time = mm_flops / compute_rate
    attention_time = 0.0
    if np.any(np.asarray(attn_flops) != 0):
        attention_time = attn_flops / (n_chips * _attention_peak(chip, dtype, kv_bytes) * compute_efficiency)
    if np.any(np.asarray(idx_flops) != 0):
        attention_time = attention_time + idx_flops / (n_chips * _index_peak(chip, dtype) * compute_efficiency)
    compute_time = matmul_time + attention_time
    weight_time = wbytes / memory_rate
    kv_time = kvbytes / memory_rate
    memory_time = weight_time + kv_time
    if overlap == "step":
        time = np.maximum(compute_time, memory_time)
    else:
        time = np.maximum(attention_time, kv_time) + np.maximum(matmul_time, weight_time)
    shape = np.broadcast(compute_time, memory_time, tokens, batch, n_chips).shape

    def b(x):
        if not shape:
            return _out(x)
        x = np.asarray(x, dtype=float)
        return x if x.shape == shape else np.broadcast_to(x, shape)  # read-only view, no copy

    return Step(
        compute_time=b(compute_time), weight_time=b(weight_time), kv_time=b(kv_time),
        memory_time=b(memory_time), time=b(time),
        bound=_bound(np.broadcast_to(compute_time, shape), np.broadcast_to(memory_time, shape)),
        flops=b(mm_flops + attn_flops + idx_flops), weight_bytes_read=b(wbytes), kv_bytes_read=b(kvbytes),
        tokens=b(tokens), batch=b(batch), n_chips=b(n_chips),
        kind=kind, overlap=overlap, model=model, chip=chip,
        matmul_time=b(matmul_time), attention_time=b(attention_time),
    )


def _check_step(n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency):
    """Validate the arguments every step bound shares (ValueError naming the argument)."""
    choice("overlap", overlap, OVERLAPS)
    return (n_chips_check(n_chips), positive("weight_bytes", weight_bytes),
            positive("kv_bytes", kv_bytes), fraction("compute_efficiency", compute_efficiency),
            fraction("memory_efficiency", memory_efficiency))


def decode_step(model, chip, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                dtype="bf16", overlap="step", compute_efficiency=1.0, memory_efficiency=1.0,
                attention_flops=True) -> Step:
    """Lower bound on one decode step: ``batch`` sequences each emit one token.

    ``t = max(B (2 N_mm + attn(S)) / (n C),  (N_read(B) b_w + B kv_read(S)) / (n W))``

    - ``batch`` (sequences), ``context`` (tokens already in each sequence's KV cache),
      ``n_chips`` (chips per replica), ``weight_bytes`` (bytes per weight, b_w),
      ``kv_bytes`` (bytes per KV-cache element), ``dtype`` (which peak of ``chip.flops``).
    - Compute counts ``2 x matmul_params_active`` FLOP per token plus attention's own FLOPs
      (QK^T and AV over the context, in MLA's absorbed form; a sparse-attention indexer's
      scoring at fp8). ``attention_flops=False`` drops attention's FLOPs: the episode's and
      Pope et al.'s first approximation, good for GQA at moderate context, not for MLA, whose
      attention does about as many FLOPs per cached byte as a chip's ridge point.
    - Weights read are ``model.weight_params_read(batch)``: for MoE, only the experts the
      batch touches; KV read is ``batch x model.kv_read_bytes(context)`` (with an indexer's keys).
    - The work is assumed perfectly shared by the ``n_chips`` (batch-sharded KV, sharded
      weights): communication is left out, so this is a lower bound.
    - ``overlap="step"`` lets all memory traffic overlap all compute; ``"per-op"`` lets each
      kernel overlap only its own traffic: ``max(attention, kv) + max(matmul, weight)``.
    - ``compute_efficiency`` and ``memory_efficiency`` in (0, 1] derate the peaks; 1.0 is the
      pure lower bound.
    """
    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency)
    chip.peak(dtype)  # validates dtype early, naming the chip's dtypes

    mm = batch * 2.0 * model.matmul_params_active
    attn = idx = 0.0
    if attention_flops:
        attn = batch * model.attention_flops_per_token(context)
        idx = batch * model.indexer_flops_per_token(context)
    wbytes = model.weight_params_read(batch) * weight_bytes
    kvbytes = batch * model.kv_read_bytes(context, kv_bytes)
    return _finish("decode", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, dtype,
                   compute_efficiency, memory_efficiency, batch, batch, model, kv_bytes)


def prefill_step(model, chip, batch, prompt, n_chips=1, weight_bytes=2, kv_bytes=2,
                 dtype="bf16", past=0, compute_efficiency=1.0, memory_efficiency=1.0,
                 attention_flops=True, overlap="step") -> Step:
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
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency)
    chip.peak(dtype)

    tokens = batch * prompt
    mm = tokens * 2.0 * model.matmul_params_active
    attn = idx = 0.0
    if attention_flops:
        attn = batch * model.prefill_attention_flops(prompt, past)
        idx = batch * model.prefill_indexer_flops(prompt, past)
    wbytes = model.weight_params_read(tokens) * weight_bytes
    written = model.kv_cache_bytes(past + prompt, kv_bytes) - model.kv_cache_bytes(past, kv_bytes)
    kvbytes = batch * (written + model.kv_read_bytes(past, kv_bytes))
    return _finish("prefill", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, dtype,
                   compute_efficiency, memory_efficiency, tokens, batch, model, kv_bytes)


# ----- balance points ------------------------------------------------------------------------

def _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops):
    """Seconds one sequence adds to a decode step on one chip at peak: (matmul, attention, KV read).

    No argument checks and no context cap: the balance solvers below evaluate it beyond the
    model's window to find where (or whether) the lines cross.
    """
    C, W = chip.peak(dtype), chip.hbm_bandwidth
    context = np.asarray(context, dtype=float)
    mm = 2.0 * model.matmul_params_active / C
    attn = 0.0 * context
    if attention_flops:
        a, i = model._decode_flops(context)
        attn = a / _attention_peak(chip, dtype, kv_bytes) + i / _index_peak(chip, dtype)
    return mm, attn, model._read_bytes(context, kv_bytes) / W


def _first_root(g, kinks, shape):
    """First S >= 0 where the piecewise-linear g (g(0) < 0, kinks at ``kinks``) reaches 0.

    Exact on each linear piece; NaN where g stays negative for every S.
    """
    pts = [0.0] + sorted(float(k) for k in kinks)
    root = np.full(shape, np.nan)
    for lo, hi in zip(pts[:-1], pts[1:], strict=True):
        g_lo, g_hi = g(lo), g(hi)
        hit = np.isnan(root) & (g_hi >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            root = np.where(hit, lo - g_lo * (hi - lo) / (g_hi - g_lo), root)
    last = pts[-1]
    g_last = g(last)
    slope = g(last + 1.0) - g_last  # the last piece runs on forever
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.where(np.isnan(root) & (slope > 0), last - g_last / slope, root)
    return root


def decode_balance(model, chip, context, kv_bytes=2, dtype="bf16", attention_flops=True):
    """Per sequence, at a batch that amortises the weights: KV-read time over compute time.

    ``kv_read(S) / W`` over ``(2 N_mm + attn(S)) / C`` (attention's FLOPs, and an indexer's,
    counted unless ``attention_flops=False``). Above 1 the step is memory-bound at every batch
    (whole-step overlap); :func:`critical_context` is where it reaches 1.
    """
    context = positive("context", context, allow_zero=True)
    kv_bytes = positive("kv_bytes", kv_bytes)
    model._context(context)
    mm, attn, kv = _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops)
    return _out(kv / (mm + attn))


def critical_context(model, chip, kv_bytes=2, dtype="bf16", attention_flops=True, overlap="step"):
    """Context (tokens) beyond which decode is memory-bound at **any** batch (whole-step overlap).

    Per sequence and step, reading its KV cache takes ``kv_read(S)/W``; computing its token
    takes ``(2 N_mm + attn(S))/C``. Weights are amortised over the batch, so once the KV read
    outgrows the compute no batch makes the step compute-bound. For dense attention without
    attention FLOPs (``attention_flops=False``, the episode's approximation)
    ``S* = 2 N_mm W / (C b_kv)``. Counting attention FLOPs moves it out, a little for GQA and
    a lot for MLA (about 242 FLOP per cached byte, near a chip's ridge point); an indexer's key
    reads (DeepSeek-V3.2) bring it back in. Windows and top-k caps are exact: the balance is
    piecewise linear in S and solved piece by piece.

    The corner exists only under ``overlap="step"``. Under ``"per-op"`` the matmuls overlap
    only the weight reads, which the batch amortises at any context (the step is then
    ``max(attention, kv) + max(matmul, weight)``), so there is no critical context: a
    ValueError says so.

    Raises ValueError when the crossing never happens: every layer's reads are capped below the
    balance, or attention does more FLOPs per cached byte than the chip's FLOP/byte. The result
    may exceed ``model.max_context``; then no supported context makes decode memory-bound at
    every batch.
    """
    kv_bytes = positive("kv_bytes", kv_bytes)
    choice("overlap", overlap, OVERLAPS)
    chip.peak(dtype)
    if overlap == "per-op":
        raise ValueError(
            "overlap: got 'per-op'; under the per-operation bound the matmuls pair only with the "
            "weight reads, which a large enough batch amortises at every context, so there is no "
            "critical context (the weights-only critical batch holds at any context)")

    def gap(S):  # seconds of KV read minus seconds of compute, per sequence
        mm, attn, kv = _per_sequence_decode(model, chip, S, kv_bytes, dtype, attention_flops)
        return kv - mm - attn

    kinks = [k for k in (model.sparse_attention_topk,
                         model.sliding_window if model.n_sliding_layers else None) if k]
    root = _first_root(gap, kinks, np.shape(kv_bytes))
    if np.any(np.isnan(root)):
        per_pair = model._attention_flops_per_context_token
        kvb = float(np.max(kv_bytes))
        elem = model.kv_elements_per_token_per_layer * kvb
        ridge = float(_attention_peak(chip, dtype, kvb)) / chip.hbm_bandwidth  # attention's own ridge
        if attention_flops and per_pair / elem >= ridge and not model.has_indexer:
            why = (f"attention does {per_pair / elem:.0f} FLOP per cached byte, at or above "
                   f"{chip.name}'s {ridge:.0f} FLOP/byte at the arithmetic it runs in, so KV reads "
                   "never outgrow compute")
        else:
            why = ("its KV reads per step are capped (sliding window / sparse top-k) below the bytes "
                   "that balance one token's compute")
        raise ValueError(f"model {model.name!r} on {chip.name}: {why}; decode never becomes "
                         "memory-bound at every batch, so there is no critical context")
    return _out(root)


def _fmt(x):
    arr = np.asarray(x)
    return f"{float(arr.flat[0]):.4g}"


def critical_batch(model, chip, weight_bytes=2, dtype="bf16", context=0, kv_bytes=2,
                   attention_flops=True, overlap="step"):
    """Batch (sequences) at which a decode step's compute time equals its memory time.

    Solves ``B (2 N_mm + attn(S)) / C = (N_read(B) b_w + B kv_read(S)) / W`` for B (chip count
    cancels). With ``context=0`` and a dense model this is ``(C b_w / 2W) (N_read / N_mm)``,
    about ``ops_per_byte x b_w / 2``: the weights-only critical batch. For MoE the weights read
    grow with the batch (more experts touched), so the equation is solved self-consistently:
    the result tends to ``ops_per_byte x b_w / 2 x N_tot / N_act`` (the episode's "300 x
    sparsity") when the batch touches every expert. Below it decode is memory-bound (weights
    not yet amortised); above it compute-bound. Returned as a real number, not rounded.

    ``overlap="per-op"``: the matmuls pair with the weight reads alone, so the batch at which
    the matmuls turn compute-bound is the weights-only one at every context
    (``B 2 N_mm / C = N_read(B) b_w / W``); the attention kernel stays wherever its own FLOPs
    and KV reads put it.

    Raises ValueError (``overlap="step"``) when ``context >= critical_context(...)``: decode is
    then memory-bound at every batch.
    """
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    context = positive("context", context, allow_zero=True)
    choice("overlap", overlap, OVERLAPS)
    model._context(context)
    W = chip.hbm_bandwidth
    mm, attn, kv = _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops)
    if overlap == "per-op":
        attn, kv = 0.0 * attn, 0.0 * kv
    denom = (mm + attn - kv) * W  # bytes of slack per sequence
    if np.any(denom <= 0):
        try:
            s_star = critical_context(model, chip, kv_bytes=np.max(kv_bytes), dtype=dtype,
                                      attention_flops=attention_flops)
            where = f" ({s_star:,.0f} tokens)"
        except ValueError:
            where = ""
        raise ValueError(
            f"context: got {float(np.max(context)):g} tokens; at or beyond the critical context of "
            f"{model.name} on {chip.name}{where} decode is memory-bound at every batch, so there is no "
            "critical batch"
        )
    denom, weight_bytes = np.broadcast_arrays(np.asarray(denom, float), np.asarray(weight_bytes, float))
    floor_params = model.weight_params_read(1e-9)  # weights read by any step (shared part)
    lo = floor_params * weight_bytes / denom
    hi = model.total_params * weight_bytes / denom
    if not model.is_moe and model.tied_embeddings:  # weights read do not depend on the batch
        return _out(lo)
    # h(B) = denom B - b_w N_read(B) is convex with h(lo) <= 0 <= h(hi): bisect in log space.
    llo, lhi = np.log(lo), np.log(np.maximum(hi, lo * (1 + 1e-12)))
    for _ in range(80):
        mid = 0.5 * (llo + lhi)
        B = np.exp(mid)
        neg = denom * B - weight_bytes * model.weight_params_read(B) < 0
        llo, lhi = np.where(neg, mid, llo), np.where(neg, lhi, mid)
    return _out(np.exp(0.5 * (llo + lhi)))


# ----- memory capacity -----------------------------------------------------------------------

def memory_held(model, batch, context, weight_bytes=2, kv_bytes=2):
    """Bytes a replica holds: every weight (all experts) plus ``batch`` KV caches of ``context`` tokens.

    ``N_tot b_w + B kv_held(S)`` (sliding-window layers cap at their window).
    """
    batch = positive("batch", batch, allow_zero=True)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    return _out(model.total_params * np.asarray(weight_bytes, dtype=float)
                + batch * model.kv_cache_bytes(context, kv_bytes))


def fits_in_memory(model, chip, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                   memory_fraction=1.0):
    """Whether :func:`memory_held` fits in ``n_chips`` chips' HBM x ``memory_fraction``.

    The one "fits in HBM" rule: figures, explorers, :func:`~llmmath.cost.latency_cost_frontier`
    and :func:`min_chips` use it. A bool for scalar inputs, a bool array for arrays.
    """
    n_chips = n_chips_check(n_chips)
    memory_fraction = fraction("memory_fraction", memory_fraction)
    held = memory_held(model, batch, context, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    ok = np.asarray(held) <= np.asarray(n_chips) * chip.hbm_capacity * memory_fraction
    return bool(ok) if ok.ndim == 0 else ok


def _weights_fit(model, chip, n_chips, weight_bytes, memory_fraction):
    budget = n_chips * chip.hbm_capacity * memory_fraction
    weights = model.total_params * weight_bytes
    if np.any(weights > budget):
        need = np.ceil(weights / (chip.hbm_capacity * memory_fraction))
        raise ValueError(
            f"n_chips: got {float(np.min(n_chips)):g}; the {model.name} weights alone "
            f"({float(np.max(weights)) / 1e9:.4g} GB at {float(np.max(weight_bytes)):g} B/weight) do not fit; "
            f"at least {int(np.max(need))} x {chip.name} are needed (memory_fraction={float(np.min(memory_fraction)):g})"
        )
    return budget - weights


def max_batch(model, chip, context, n_chips=1, weight_bytes=2, kv_bytes=2, memory_fraction=1.0):
    """Largest whole batch whose weights and KV caches fit in ``n_chips`` chips' HBM.

    ``B_max = floor((n M f - N_tot b_w) / kv_held(S))`` with ``M`` the chip capacity and
    ``f = memory_fraction`` (leave room for activations and fragmentation). All experts of an
    MoE model are stored. Returns 0 when the weights fit but not even one sequence's KV.
    Raises ValueError naming the minimum chip count when the weights alone do not fit.
    """
    context = positive("context", context)
    n_chips = n_chips_check(n_chips)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    memory_fraction = fraction("memory_fraction", memory_fraction)
    free = _weights_fit(model, chip, n_chips, weight_bytes, memory_fraction)
    per_seq = model.kv_cache_bytes(context, kv_bytes)
    b = np.floor(free / per_seq * (1 + 1e-12))
    return int(b) if np.ndim(b) == 0 else b.astype(np.int64)


def max_context(model, chip, batch, n_chips=1, weight_bytes=2, kv_bytes=2, memory_fraction=1.0,
                kv_fraction=None, kv_replicas=1):
    """Longest context (whole tokens) at which ``batch`` sequences' KV caches fit.

    The KV budget is ``n M f - N_tot b_w`` (what the weights leave), or, with
    ``kv_fraction`` given, ``kv_fraction x n M`` (a fixed share of all HBM for KV, as in
    Pope et al. 2022 Table 1, which reserves 30%). ``kv_replicas`` is how many copies of each
    KV byte are stored: sharding a single multiquery KV head over attention heads replicates it
    on every chip (``kv_replicas=n_chips``); batch sharding stores one copy (1).
    Solves ``batch x kv_replicas x kv_held(S) = budget`` for S; sliding-window layers cap.
    Raises ValueError if the weights do not fit, or if every layer is windowed so the KV cache
    stops growing (any context fits). The result is a memory limit only: it may exceed the
    model's ``max_context``.
    """
    batch = positive("batch", batch)
    n_chips = n_chips_check(n_chips)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    kv_replicas = positive("kv_replicas", kv_replicas)
    memory_fraction = fraction("memory_fraction", memory_fraction)
    if kv_fraction is None:
        budget = _weights_fit(model, chip, n_chips, weight_bytes, memory_fraction)
    else:
        budget = fraction("kv_fraction", kv_fraction) * n_chips * chip.hbm_capacity
    elem = model.kv_elements_per_token_per_layer * kv_bytes
    # An indexer's keys (a fixed format) ride on the global layers: count them in elements.
    idx = (model.index_key_bytes or 0.0) / elem
    target = budget / (batch * kv_replicas * elem)  # layer-tokens held per sequence
    n_global = model.n_layers - model.n_sliding_layers
    w = model.sliding_window or 0
    if model.has_indexer:
        s = target / (n_global * (1.0 + idx) + model.n_sliding_layers)
        s_long = (target - model.n_sliding_layers * w) / (n_global * (1.0 + idx))
        s = np.where(s <= w, s, s_long) if model.n_sliding_layers else s
    elif n_global == 0:
        if np.any(target >= model.n_sliding_layers * w):
            raise ValueError(
                f"model {model.name!r}: every layer uses a {w}-token window, so the KV cache stops "
                "growing and any context fits"
            )
        s = target / model.n_sliding_layers
    else:
        s_short = target / model.n_layers  # every layer still below its window
        s_long = (target - model.n_sliding_layers * w) / n_global
        s = np.where(s_short <= w, s_short, s_long) if model.n_sliding_layers else s_short
    s = np.floor(np.asarray(s) * (1 + 1e-12))
    return int(s) if s.ndim == 0 else s.astype(np.int64)


def min_chips(model, chip, batch=0, context=0, weight_bytes=2, kv_bytes=2, memory_fraction=1.0):
    """Fewest chips whose HBM holds the weights plus ``batch`` KV caches of ``context`` tokens.

    ``n_min = ceil((N_tot b_w + B kv_held(S)) / (M f))``.
    """
    memory_fraction = fraction("memory_fraction", memory_fraction)
    need = memory_held(model, batch, context, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    n = np.maximum(np.ceil(need / (chip.hbm_capacity * memory_fraction) * (1 - 1e-12)), 1)
    return int(n) if np.ndim(n) == 0 else n.astype(np.int64)


def drain_time(chip):
    """Seconds to read a chip's whole HBM once: ``M / W`` (about 20 ms on most HBM parts)."""
    return chip.drain_time


def min_latency(model, chip, n_chips=1, weight_bytes=2, dtype="bf16"):
    """Fastest possible decode step (s): batch 1, no context, weights read once.

    ``t_min = max(2 N_mm / (n C), N_read(1) b_w / (n W))``. For a dense model that is the
    episode's floor ``N_tot b_w / (n W)`` (the untied input embedding contributes one row);
    for MoE only the shared weights and the ``k`` experts one token uses are read.
    """
    return decode_step(model, chip, batch=1, context=0, n_chips=n_chips,
                       weight_bytes=weight_bytes, dtype=dtype).time


# ----- the classic roofline ------------------------------------------------------------------

def arithmetic_intensity(m, k, n, bytes_per_element=2, weight_bytes=None, output_bytes=None):
    """FLOP per byte of an (m x k) @ (k x n) matmul that reads both inputs and writes the output once.

    ``I = 2 m k n / (m k b_in + k n b_w + m n b_out)``; ``weight_bytes`` and
    ``output_bytes`` default to ``bytes_per_element``. With ``m`` = tokens, ``k = n = D`` and
    ``m << D`` it is about ``2m / b_w``: one multiply-add per weight per token.
    """
    m = positive("m", m)
    k = positive("k", k)
    n = positive("n", n)
    b_in = positive("bytes_per_element", bytes_per_element)
    b_w = b_in if weight_bytes is None else positive("weight_bytes", weight_bytes)
    b_out = b_in if output_bytes is None else positive("output_bytes", output_bytes)
    return _out(2.0 * m * k * n / (m * k * b_in + k * n * b_w + m * n * b_out))


def attainable_flops(chip, intensity, dtype="bf16"):
    """Roofline: FLOP/s reachable at ``intensity`` FLOP/byte: ``min(C, I x W)``."""
    intensity = positive("intensity", intensity)
    return _out(np.minimum(chip.peak(dtype), intensity * chip.hbm_bandwidth))


# ----- element-wise operations and the matmul knee ------------------------------------------

def elementwise_intensity(flops_per_element=1, inputs=2, outputs=1, bytes_per_element=2):
    """FLOP per byte of an elementwise op over vectors (``z = x + y`` by default).

    ``I = f / ((inputs + outputs) b)``: each element does ``flops_per_element`` FLOP and reads
    ``inputs`` and writes ``outputs`` values of ``bytes_per_element`` bytes, each exactly once.
    ``z = x + y`` in bf16 is 1 FLOP per 6 bytes; a copy (``inputs=1, outputs=1``) with 0 FLOP is the
    pure bandwidth test (pass ``flops_per_element`` > 0 to place it on a roofline).
    """
    f = positive("flops_per_element", flops_per_element)
    n_in = positive("inputs", inputs, allow_zero=True)
    n_out = positive("outputs", outputs, allow_zero=True)
    b = positive("bytes_per_element", bytes_per_element)
    moved = (n_in + n_out) * b
    if np.any(np.asarray(moved) <= 0):
        raise ValueError("inputs, outputs: at least one operand must be read or written")
    return _out(f / moved)


def matmul_ridge_batch(chip, k, n, dtype="bf16", bytes_per_element=2, weight_bytes=None,
                       output_bytes=None):
    """Rows ``m`` (tokens) at which an (m x k) @ (k x n) matmul reaches ``chip``'s ridge point.

    Solves ``arithmetic_intensity(m, k, n, ...) = chip.ops_per_byte(dtype)`` for ``m``:
    ``m = R k n b_w / (2 k n - R (k b_in + n b_out))`` with ``R`` the ridge (FLOP/byte). For
    ``k, n >> R`` it is about ``R b_w / 2``: the batch that amortises each weight read. Below it
    the matmul is memory-bound, above it compute-bound. Returns ``inf`` where the matmul never
    reaches the ridge (the activations alone carry too many bytes: ``k`` or ``n`` too small).
    """
    k = positive("k", k)
    n = positive("n", n)
    b_in = positive("bytes_per_element", bytes_per_element)
    b_w = b_in if weight_bytes is None else positive("weight_bytes", weight_bytes)
    b_out = b_in if output_bytes is None else positive("output_bytes", output_bytes)
    ridge = chip.ops_per_byte(dtype)
    denom = 2.0 * k * n - ridge * (k * b_in + n * b_out)
    with np.errstate(divide="ignore"):
        m = np.where(denom > 0, ridge * k * n * b_w / np.where(denom > 0, denom, 1.0), np.inf)
    return _out(m)


__all__ += ["elementwise_intensity", "matmul_ridge_batch"]


# ----- reading the critical context backwards ------------------------------------------------

def implied_kv_bytes_per_token(active_params, chip, critical_context, dtype="bf16"):
    """KV bytes per token (all layers, ``b_kv``) that put the critical context at ``critical_context``.

    The inverse of :func:`critical_context` for dense attention: ``b_kv = 2 N_act W / (C S*)``.
    It is how the book reads architecture out of a price step: if a provider's cost turns
    memory-bound at every batch beyond ``S*`` tokens, a model with ``active_params`` active
    (matmul) parameters on ``chip`` at ``dtype`` must cache about this many bytes per token.
    The episode's form ``N_act / (300 S)`` is this with ``C/W = 600`` FLOP/byte.
    """
    n = positive("active_params", active_params)
    s = positive("critical_context", critical_context)
    return _out(2.0 * n * chip.hbm_bandwidth / (chip.peak(dtype) * s))


__all__ += ["implied_kv_bytes_per_token"]


# ----- speculative decoding and multi-token prediction ---------------------------------------
# "Batching trades latency for token cost" (book/04_batching_cost.ipynb): the second lever on
# speed (speculative decoding / multi-token prediction) and a no-overlap twin of a step bound.

def speculative_tokens_per_step(draft_tokens, acceptance):
    """Expected tokens one sequence emits per verification step with ``k`` drafted tokens.

    Each drafted token is accepted with probability ``acceptance`` (alpha), independently, until
    the first rejection; the verifying pass always yields one token of its own (the correction,
    or the bonus token after k acceptances). The expectation is ``(1 - alpha^(k+1)) / (1 - alpha)``
    (Leviathan et al. 2023, eq. 1): ``1`` at ``k = 0``, ``k + 1`` at ``alpha = 1``.
    """
    k = positive("draft_tokens", draft_tokens, allow_zero=True, integer=True)
    a = np.asarray(positive("acceptance", acceptance, allow_zero=True), dtype=float)
    if np.any(a > 1):
        raise ValueError(f"acceptance: got {float(np.max(a)):g}; allowed values are in [0, 1]")
    with np.errstate(divide="ignore", invalid="ignore"):
        geo = (1.0 - a ** (k + 1)) / (1.0 - a)
    return _out(np.where(a >= 1.0, k + 1.0, geo))


def speculative_step(model, chip, batch, context, draft_tokens, acceptance=1.0, n_chips=1,
                     weight_bytes=2, kv_bytes=2, dtype="bf16", overlap="step",
                     compute_efficiency=1.0, memory_efficiency=1.0, attention_flops=True) -> Step:
    """Lower bound on one verification step of speculative decoding (or multi-token prediction).

    Each of ``batch`` sequences carries ``k = draft_tokens`` drafted tokens; one forward pass
    scores all ``k + 1`` positions at once:

    ``t = max(B (k+1) (2 N_mm + attn(S)) / (n C),  (N_read(B (k+1)) b_w + B kv_read(S)) / (n W))``

    The weights are read once for all ``B (k+1)`` tokens and each sequence's KV cache once for
    its ``k + 1`` queries. For a dense model, while ``B (k+1)`` stays below the critical batch
    the step costs about one memory-bound decode step. For MoE it does not: the ``B (k+1)``
    tokens route to more experts than ``B`` would, so the verify step reads more weight bytes
    (DeepSeek-V3 at batch 1 with one draft: 1.54x), and attention's FLOPs grow with ``k + 1``. ``tokens`` is ``B x speculative_tokens_per_step(k,
    acceptance)``: the expected tokens emitted, so :func:`llmmath.cost.tokens_per_second` and
    :func:`llmmath.cost.cost_per_token` apply unchanged. Left out: the cost of drafting (a small
    draft model's own steps, or an MTP head's extra layer) and the KV of the ``k + 1`` new
    positions (a few tokens next to ``S``). ``draft_tokens=0`` is :func:`decode_step`.
    """
    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency)
    chip.peak(dtype)
    k = positive("draft_tokens", draft_tokens, allow_zero=True, integer=True)
    per_seq = speculative_tokens_per_step(k, acceptance)
    scored = batch * (k + 1.0)
    mm = scored * 2.0 * model.matmul_params_active
    attn = idx = 0.0
    if attention_flops:
        attn = scored * model.attention_flops_per_token(context)
        idx = scored * model.indexer_flops_per_token(context)
    wbytes = model.weight_params_read(scored) * weight_bytes
    kvbytes = batch * model.kv_read_bytes(context, kv_bytes)
    return _finish("decode", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, dtype,
                   compute_efficiency, memory_efficiency, batch * np.asarray(per_seq), batch, model,
                   kv_bytes)


def serial_step(step: Step) -> Step:
    """The same step with **no** overlap of compute and memory traffic: ``t = compute + memory``.

    Real kernels overlap imperfectly, most of all near the ridge point, so a measured step lies
    between ``step.time`` (the lower bound, ``max``) and this pessimistic estimate (the sum),
    which is at most twice the bound, exactly twice where compute and memory times are equal
    (at the critical batch). Every other field is kept.
    """
    import dataclasses

    t = np.asarray(step.compute_time) + np.asarray(step.memory_time)
    return dataclasses.replace(step, time=_out(t) if t.ndim == 0 else t, overlap="none")


__all__ += ["speculative_tokens_per_step", "speculative_step", "serial_step"]


def speculative_critical_batch(model, chip, draft_tokens, context=0, weight_bytes=2, kv_bytes=2,
                               dtype="bf16", attention_flops=True):
    """Batch (sequences) at which a verify step with ``k`` drafts turns compute-bound.

    Solves ``B (k+1) 2 N_mm / C = (N_read(B (k+1)) b_w + B kv_read(S)) / W`` for B (bisection in
    log B; chip count cancels). Below it speculative decoding gains its full expected tokens per
    step; above it rejected drafts cost FLOPs. ``B (k+1)`` at this batch lies between the
    weights-only critical batch and ``critical_batch(..., context=S)``. ValueError if the verify
    step is memory-bound at every batch (the KV reads outgrow the compute).
    """
    k = positive("draft_tokens", draft_tokens, allow_zero=True, integer=True)

    def gap(logb):
        s = speculative_step(model, chip, np.exp(logb), context, k, 1.0, weight_bytes=weight_bytes,
                             kv_bytes=kv_bytes, dtype=dtype, attention_flops=attention_flops)
        return s.compute_time - s.memory_time

    lo, hi = np.log(1e-6), np.log(1e12)
    if gap(hi) < 0:
        raise ValueError(f"context: {model.name} on {chip.name} stays memory-bound at every batch "
                         f"with {k:g} drafts at {float(context):g} tokens")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gap(mid) < 0:
            lo = mid
        else:
            hi = mid
    return float(np.exp(0.5 * (lo + hi)))


__all__ += ["speculative_critical_batch"]


# ----- a decode sweep over batch (what a figure or an explorer shows) ------------------------

@dataclass(frozen=True)
class BatchSweep:
    """Decode step bounds over a sweep of batches at one context, with the points a figure marks.

    - ``batch`` (array), ``step`` (the :class:`Step` over ``batch``), ``context`` (tokens)
    - ``floor`` (s): the weight-read time at the smallest batch, the floor of the step time
    - ``critical_batch``: :func:`critical_batch`, None where decode stays memory-bound
    - ``max_batch``: :func:`max_batch`, None where the weights alone do not fit
    - ``min_chips``: :func:`min_chips` for the weights plus one sequence

    :meth:`describe` says what the sweep shows in one sentence, with these numbers (alt text).
    """

    model: object
    chip: object
    n_chips: float
    dtype: str
    context: float
    batch: np.ndarray
    step: Step
    floor: float
    critical_batch: float | None
    max_batch: int | None
    min_chips: int

    def describe(self) -> str:
        from .units import fmt_count, fmt_time

        n = float(self.n_chips)
        chips = f"{n:g}x {self.chip.name}" if n != 1 else self.chip.name
        ctx = float(self.context)
        ctx_s = f"{ctx:,.0f}" if ctx < 1e6 else fmt_count(ctx, 3)
        b0, b1 = self.batch[0], self.batch[-1]
        bs = (f"the critical batch B* is about {self.critical_batch:,.0f}" if self.critical_batch
              else "decode stays memory-bound at every batch")
        return (f"the decode step time lower bound of {self.model.name} on {chips} at {ctx_s} tokens "
                f"of context against batch {b0:g} to {b1:g}: compute, weight-read and KV-read "
                f"times; weight reads set a floor of {fmt_time(self.floor, 2)}, {bs}, and at batch "
                f"{b1:g} the step takes {fmt_time(float(self.step.time[-1]), 2)}")


def _or_none(fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if value is not None and np.all(np.isfinite(value)) else None


def batch_sweep(model, chip, batches, context, n_chips=1, weight_bytes=2, kv_bytes=2, dtype="bf16",
                overlap="step") -> BatchSweep:
    """:func:`decode_step` over ``batches`` at ``context`` with the floor, the critical batch, the
    largest batch that fits and the chips the weights need (see :class:`BatchSweep`)."""
    batch = np.asarray(batches, dtype=float)
    step = decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, overlap=overlap)
    mb = _or_none(max_batch, model, chip, max(context, 1.0), n_chips=n_chips,
                  weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    need = min_chips(model, chip, batch=1, context=context, weight_bytes=weight_bytes,
                     kv_bytes=kv_bytes)
    bstar = _or_none(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dtype,
                     context=context, kv_bytes=kv_bytes)
    return BatchSweep(model, chip, n_chips, dtype, context, batch, step,
                      float(np.ravel(step.weight_time)[0]), bstar, mb, need)
