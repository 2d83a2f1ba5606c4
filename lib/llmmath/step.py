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
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ._check import MAX_BYTES_PER_ELEMENT, MAX_CHIPS, choice, fraction, positive
from ._check import SCALAR_TYPES as _SCALAR
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from .chips import Chip
from .models import Model

__all__ = ["Step", "decode_step", "prefill_step", "min_latency", "serial_step"]

OVERLAPS = ("step", "per-op")
_INF = float("inf")
_BOUND_NAMES = np.array(["memory", "compute"])


def _bound(compute_time, memory_time):
    if type(compute_time) is float and type(memory_time) is float:
        return "compute" if compute_time >= memory_time else "memory"
    is_compute = np.asarray(compute_time) >= np.asarray(memory_time)
    if is_compute.ndim == 0:
        return "compute" if is_compute else "memory"
    return np.take(_BOUND_NAMES, is_compute.view(np.uint8))


class _Pending:
    """The two time arrays a :class:`Step`'s ``bound`` is read from, until it is first read."""

    __slots__ = ("compute_time", "memory_time")

    def __init__(self, compute_time, memory_time):
        self.compute_time, self.memory_time = compute_time, memory_time


class _BoundField:
    """``Step.bound``: over arrays, worked out from the step's times when first read.

    Over a grid the names are a step's largest array (28 bytes a point, 8 for a time) and a
    third of a sweep's time, and most sweeps (every figure) read only times. ``_finish`` stores
    the two time arrays (:class:`_Pending`); the first read compares them, keeps the names and
    returns them, so the value read is the one computed eagerly before. A data descriptor: the
    dataclass ``__init__`` (``object.__setattr__``) stores through it; a frozen step still
    refuses assignment; ``==``, ``repr`` and ``dataclasses.replace`` read it like any field.
    """

    def __init__(self, doc):
        self.__doc__ = doc  # what the API reference shows for Step.bound

    def __get__(self, step, owner=None):
        if step is None:  # no class-level default: bound stays a required field
            raise AttributeError("bound")
        value = step.__dict__["_bound"]
        if type(value) is _Pending:
            value = _bound(value.compute_time, value.memory_time)
            step.__dict__["_bound"] = value
        return value

    def __set__(self, step, value):
        step.__dict__["_bound"] = value


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
    bound: str | np.ndarray = _BoundField(  # required: the descriptor has no class default
        '``"compute"`` or ``"memory"``: the resource that binds (an array of them over arrays)')
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


def _all_floats(*values) -> bool:
    """True when every value is a Python float: the scalar fast path applies."""
    for v in values:
        if type(v) is not float:
            return False
    return True


def _is_zero(flops) -> bool:
    """True for a Python 0.0 (no such FLOPs); an array is never tested element by element."""
    return type(flops) is float and flops == 0.0


def _attention_rate(chip, peak, kv_bytes):
    """:func:`_attention_peak` for a Python float ``kv_bytes``: the same rate, no builtin call.

    ``min(a, b)`` is written ``b if b < a else a``: the same result (the first on a tie).
    """
    rate = float(chip.flops.get("bf16", peak))
    rate = rate if rate < peak else peak
    if kv_bytes <= 1:
        fp8 = float(chip.flops.get("fp8", rate))
        rate = fp8 if fp8 < peak else peak
    return rate


def _finish_scalar(kind, overlap, mm_flops, attn_flops, idx_flops, wbytes, kvbytes, n_chips, chip,
                   peak, compute_efficiency, memory_efficiency, tokens, batch, model, kv_bytes):
    """:func:`_finish` for Python floats: the same arithmetic in the same order, no numpy call.

    The :class:`Step` is built without the dataclass ``__init__`` (a frozen dataclass writes
    each of its 18 fields through ``object.__setattr__``): its instance dictionary is filled
    directly, and the result equals ``Step(**fields)`` (every field is given).
    """
    # max(a, b) is written ``b if b > a else a``: the same result (the first on a tie)
    memory_rate = n_chips * chip.hbm_bandwidth * memory_efficiency
    matmul_time = mm_flops / (n_chips * peak * compute_efficiency)
    attention_time = 0.0
    flops = mm_flops
    if attn_flops != 0.0:
        attention_time = attn_flops / (n_chips * _attention_rate(chip, peak, kv_bytes)
                                       * compute_efficiency)
        flops = flops + attn_flops
    if idx_flops != 0.0:
        attention_time = attention_time + idx_flops / (n_chips * _index_peak(chip, peak)
                                                       * compute_efficiency)
        flops = flops + idx_flops
    compute_time = matmul_time + attention_time
    weight_time = wbytes / memory_rate
    kv_time = kvbytes / memory_rate
    memory_time = weight_time + kv_time
    if overlap == "step":
        time = memory_time if memory_time > compute_time else compute_time
    else:
        time = ((kv_time if kv_time > attention_time else attention_time)
                + (weight_time if weight_time > matmul_time else matmul_time))
    step = object.__new__(Step)
    d = step.__dict__  # one store per field: faster than building a dict and copying it
    d["compute_time"] = compute_time
    d["weight_time"] = weight_time
    d["kv_time"] = kv_time
    d["memory_time"] = memory_time
    d["time"] = time
    d["_bound"] = "compute" if compute_time >= memory_time else "memory"  # see _BoundField
    d["flops"] = flops
    d["weight_bytes_read"] = wbytes
    d["kv_bytes_read"] = kvbytes
    d["tokens"] = tokens
    d["batch"] = batch
    d["n_chips"] = n_chips
    d["kind"] = kind
    d["overlap"] = overlap
    d["model"] = model
    d["chip"] = chip
    d["matmul_time"] = matmul_time
    d["attention_time"] = attention_time
    return step


def _index_peak(chip, peak):
    """The rate an indexer's fp8 scoring runs at: the fp8 peak where the chip lists one.

    ``peak`` is ``chip.peak(dtype)``, the step's own rate (FLOP/s).
    """
    return max(peak, float(chip.flops.get("fp8", 0.0)))


def _attention_peak(chip, peak, kv_bytes):
    """The rate attention's own FLOPs run at: the arithmetic of the KV cache's format.

    Attention multiplies queries by the cached keys and values, so it computes in the cache's
    format (bf16 for a 2-byte cache, fp8 for a 1-byte one where the chip has fp8), never faster
    than the step's ``dtype`` (whose rate is ``peak``): fp4 weights do not make attention run
    at the fp4 peak.
    """
    fallback = peak
    bf16 = min(fallback, float(chip.flops.get("bf16", fallback)))
    fp8 = min(fallback, float(chip.flops.get("fp8", bf16)))
    if type(kv_bytes) is float:  # scalar fast path
        return fp8 if kv_bytes <= 1 else bf16
    return np.where(np.asarray(kv_bytes) <= 1, fp8, bf16)


def _finish(kind, overlap, mm_flops, attn_flops, idx_flops, wbytes, kvbytes, n_chips, chip, peak,
            compute_efficiency, memory_efficiency, tokens, batch, model, kv_bytes=2):
    """Times from FLOPs and bytes, and the :class:`Step` that holds them.

    ``peak`` is ``chip.peak(dtype)`` (FLOP/s). Python floats in, Python floats out with no numpy
    call (the scalar fast path); anything else is broadcast to one shape.
    """
    if _all_floats(mm_flops, attn_flops, idx_flops, wbytes, kvbytes, n_chips, tokens, batch,
                   kv_bytes):
        return _finish_scalar(kind, overlap, mm_flops, attn_flops, idx_flops, wbytes, kvbytes,
                              n_chips, chip, peak, compute_efficiency, memory_efficiency, tokens,
                              batch, model, kv_bytes)
    larger = np.maximum
    compute_rate = n_chips * peak * compute_efficiency
    memory_rate = n_chips * chip.hbm_bandwidth * memory_efficiency
    matmul_time = mm_flops / compute_rate
    attention_time = 0.0
    if not _is_zero(attn_flops):
        attention_time = attn_flops / (n_chips * _attention_peak(chip, peak, kv_bytes)
                                       * compute_efficiency)
    if not _is_zero(idx_flops):
        attention_time = attention_time + idx_flops / (n_chips * _index_peak(chip, peak)
                                                       * compute_efficiency)
    compute_time = matmul_time + attention_time
    weight_time = wbytes / memory_rate
    kv_time = kvbytes / memory_rate
    memory_time = weight_time + kv_time
    if overlap == "step":
        time = larger(compute_time, memory_time)
    else:
        time = larger(attention_time, kv_time) + larger(matmul_time, weight_time)
    flops = mm_flops
    for extra in (attn_flops, idx_flops):  # a pass over a large array only where there are FLOPs
        if not _is_zero(extra):
            flops = flops + extra
    shape = np.broadcast(compute_time, memory_time, tokens, batch, n_chips).shape

    def b(x):
        if not shape:
            return _out(x)
        x = np.asarray(x, dtype=float)
        return x if x.shape == shape else np.broadcast_to(x, shape)  # read-only view, no copy

    return Step(
        compute_time=b(compute_time), weight_time=b(weight_time), kv_time=b(kv_time),
        memory_time=b(memory_time), time=b(time),
        bound=_Pending(np.broadcast_to(compute_time, shape), np.broadcast_to(memory_time, shape))
        if shape else _bound(compute_time, memory_time),
        flops=b(flops), weight_bytes_read=b(wbytes), kv_bytes_read=b(kvbytes),
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
                attention_flops=True, kv_replicas=1) -> Step:
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
      weights): communication is left out, so this is a lower bound. ``kv_replicas`` copies of
      each cached byte (KV sharded by head past the KV heads, or MLA's latent under head-parallel
      tensor parallelism: ``parallel.kv_replicas``) multiply the KV reads.
    - ``overlap="step"`` lets all memory traffic overlap all compute; ``"per-op"`` lets each
      kernel overlap only its own traffic: ``max(attention, kv) + max(matmul, weight)``.
    - ``compute_efficiency`` and ``memory_efficiency`` in (0, 1] derate the peaks; 1.0 is the
      pure lower bound.
    """
    if (type(batch) in _SCALAR and type(context) in _SCALAR and type(n_chips) in _SCALAR
            and type(weight_bytes) in _SCALAR and type(kv_bytes) in _SCALAR
            and type(compute_efficiency) in _SCALAR and type(memory_efficiency) in _SCALAR
            and type(kv_replicas) in _SCALAR and type(model) is Model and type(chip) is Chip
            and type(dtype) is str and type(overlap) is str):
        step = _decode_scalar(model, chip, batch, context, n_chips, weight_bytes, kv_bytes, dtype,
                              overlap, compute_efficiency, memory_efficiency, attention_flops,
                              kv_replicas)
        if step is not None:
            return step
    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency)
    peak = chip.peak(dtype)  # validates dtype early, naming the chip's dtypes
    context = model._context(context)  # within the model's window

    mm = batch * 2.0 * model.matmul_params_active
    attn = idx = 0.0
    if attention_flops:
        attn, idx = model._decode_flops(context)  # attention_flops_per_token, indexer_flops_...
        attn = batch * attn
        idx = batch * idx if model.has_indexer else 0.0
    wbytes = model.weight_params_read(batch) * weight_bytes
    kvbytes = batch * model._read_bytes(context, kv_bytes)  # kv_read_bytes, checked above
    kv_replicas = positive("kv_replicas", kv_replicas)
    if not (type(kv_replicas) is float and kv_replicas == 1.0):  # x 1.0 would copy a whole grid
        kvbytes = kvbytes * kv_replicas
    return _finish("decode", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, peak,
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
    if (type(batch) in _SCALAR and type(prompt) in _SCALAR and type(past) in _SCALAR
            and type(n_chips) in _SCALAR and type(weight_bytes) in _SCALAR
            and type(kv_bytes) in _SCALAR and type(compute_efficiency) in _SCALAR
            and type(memory_efficiency) in _SCALAR and type(model) is Model
            and type(chip) is Chip and type(dtype) is str and type(overlap) is str):
        step = _prefill_scalar(model, chip, batch, prompt, n_chips, weight_bytes, kv_bytes, dtype,
                               past, compute_efficiency, memory_efficiency, attention_flops,
                               overlap)
        if step is not None:
            return step
    batch = positive("batch", batch)
    prompt = positive("prompt", prompt)
    past = positive("past", past, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency)
    peak = chip.peak(dtype)

    tokens = batch * prompt
    mm = tokens * 2.0 * model.matmul_params_active
    attn = idx = 0.0
    if attention_flops:
        attn = batch * model.prefill_attention_flops(prompt, past)
        idx = batch * model.prefill_indexer_flops(prompt, past) if model.has_indexer else 0.0
    wbytes = model.weight_params_read(tokens) * weight_bytes
    written = model.kv_cache_bytes(past + prompt, kv_bytes) - model.kv_cache_bytes(past, kv_bytes)
    kvbytes = batch * (written + model.kv_read_bytes(past, kv_bytes))
    return _finish("prefill", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, peak,
                   compute_efficiency, memory_efficiency, tokens, batch, model, kv_bytes)


class _ModelNumbers(NamedTuple):
    """The numbers of a model the scalar fast paths read (see :func:`_scalar_constants`)."""

    n_mm: float  # matmul_params_active
    attn_per_pair: float  # _attention_flops_per_context_token
    kv_elements: float  # kv_elements_per_token_per_layer
    n_global: int
    n_sliding: int
    window: int | None  # sliding_window
    topk: int | None  # sparse_attention_topk
    has_indexer: bool
    index_flops_per_pair: float
    index_key_bytes: float | None
    max_context: int | None
    is_moe: bool
    params_every_step: float  # _params_read_by_every_step
    vocab: int
    d_model: int
    tied: bool  # tied_embeddings
    n_experts: int
    experts_per_token: int
    n_moe_layers: int
    expert_params: float
    log_miss: float | None  # log P(an expert is missed by one token), None if k >= E (or dense)
    total_params: float


def _scalar_constants(model):
    """The numbers of ``model`` the scalar fast paths read, as one named tuple kept on the model.

    Read from the model's own attributes (no formula of its own here), computed once per model
    and stored in the instance dictionary as ``functools.cached_property`` does (a model is
    frozen; ``Model.replace`` makes a new one): one lookup instead of a dozen attribute reads
    and property calls per call.
    """
    found = model.__dict__.get("_scalar_constants")
    if found is None:
        found = _ModelNumbers(
            model.matmul_params_active, model._attention_flops_per_context_token,
            model.kv_elements_per_token_per_layer, model._n_global, model.n_sliding_layers,
            model.sliding_window, model.sparse_attention_topk, model.has_indexer,
            model._index_flops_per_pair, model.index_key_bytes, model.max_context,
            model.is_moe, model._params_read_by_every_step, model.vocab_size, model.d_model,
            model.tied_embeddings, model.n_experts, model.experts_per_token,
            model.n_moe_layers, model.expert_params,
            # as Model._experts_touched takes it
            math.log1p(-model.experts_per_token / model.n_experts)
            if 0 < model.experts_per_token < model.n_experts else None,
            model.total_params)
        model.__dict__["_scalar_constants"] = found
    return found


def _read_spans(k, context):
    """``Model._spans(context, read=True)`` for a Python float, from :func:`_scalar_constants`:
    the same operations in the same order (tests/test_scalar_path.py checks them equal)."""
    n_global, n_sliding, window, topk = k.n_global, k.n_sliding, k.window, k.topk
    held_global = context
    if topk is not None:
        held_global = topk if topk < context else context  # min(context, topk)
    sliding = (window if window < context else context) if n_sliding else 0.0
    return n_global * held_global + n_sliding * sliding


def _weights_read(model, k, tokens):
    """``Model._weight_params_read(tokens)`` for a Python float, from :func:`_scalar_constants`:
    the same operations in the same order (an MoE model whose every token uses every expert
    asks the model itself)."""
    vocab = k.vocab
    rows = 0.0 if k.tied else (vocab if vocab < tokens else tokens) * k.d_model
    if not k.is_moe:  # dense
        return k.params_every_step + rows + 0.0
    log_miss = k.log_miss
    if log_miss is None:  # every expert every token: the model's rule gives a numpy float
        return float(model._weight_params_read(tokens))
    touched = k.n_experts * -math.expm1(tokens * log_miss)
    return k.params_every_step + rows + k.n_moe_layers * touched * k.expert_params


def _weights_read_and_slope(model, k, tokens):
    """``(Model._weight_params_read(tokens), Model._weight_params_read_slope(tokens))`` for a
    Python float, as :func:`_weights_read`: one call per step of a Newton iteration."""
    vocab, width = k.vocab, k.d_model
    if k.tied:  # tied: no embedding rows read
        rows = slope = 0.0
    else:
        rows = (vocab if vocab < tokens else tokens) * width
        slope = width if tokens < vocab else 0.0
    if not k.is_moe:  # dense
        return k.params_every_step + rows + 0.0, slope
    log_miss = k.log_miss
    if log_miss is None:  # every expert every token
        return float(model._weight_params_read(tokens)), slope
    E, x = k.n_experts, tokens * log_miss
    return (k.params_every_step + rows + k.n_moe_layers * (E * -math.expm1(x)) * k.expert_params,
            slope + k.n_moe_layers * (-E * log_miss * math.exp(x)) * k.expert_params)


def _decode_scalar(model, chip, batch, context, n_chips, weight_bytes, kv_bytes, dtype, overlap,
                   compute_efficiency, memory_efficiency, attention_flops, kv_replicas):
    """:func:`decode_step` for scalar arguments that pass every check, else None.

    The checks are those of the checked path, as plain comparisons on Python floats: NaN fails
    every one of them. None sends the caller down the checked path, which says what is wrong,
    so an error is raised by one code path only. The arithmetic is the checked path's, in the
    same order, so the numbers are the same to the last bit (tests/test_scalar_path.py).
    """
    try:  # the callers checked the types against SCALAR_TYPES
        B, S, n, wb, kb = (float(batch), float(context), float(n_chips), float(weight_bytes),
                           float(kv_bytes))
        ce, me, kr = float(compute_efficiency), float(memory_efficiency), float(kv_replicas)
    except OverflowError:  # an int past 1e308
        return None
    peak = chip.flops.get(dtype)
    k = _scalar_constants(model)
    top = k.max_context
    if not (0.0 < B < _INF and 0.0 <= S < _INF and (top is None or S <= top)
            and 0.0 < n <= MAX_CHIPS and n.is_integer()
            and 0.0 < wb <= MAX_BYTES_PER_ELEMENT and 0.0 < kb <= MAX_BYTES_PER_ELEMENT
            and 0.0 < ce <= 1.0 and 0.0 < me <= 1.0 and 0.0 < kr < _INF
            and peak is not None and overlap in OVERLAPS):
        return None
    # Model._decode_flops and Model._read_bytes on floats, sharing one span
    spans = _read_spans(k, S)
    mm = B * 2.0 * k.n_mm
    attn = idx = 0.0
    indexer = k.has_indexer
    if attention_flops:
        attn = B * (spans * k.attn_per_pair)
        if indexer:
            idx = B * (k.n_global * S * k.index_flops_per_pair)
    kv = spans * k.kv_elements * kb
    if indexer:
        kv = kv + k.n_global * S * k.index_key_bytes
    return _finish_scalar("decode", overlap, mm, attn, idx, _weights_read(model, k, B) * wb,
                          B * kv * kr, n, chip, float(peak), ce, me, B, B, model, kb)


def _prefill_scalar(model, chip, batch, prompt, n_chips, weight_bytes, kv_bytes, dtype, past,
                    compute_efficiency, memory_efficiency, attention_flops, overlap):
    """:func:`prefill_step` for scalar arguments that pass every check, else None (as
    :func:`_decode_scalar`)."""
    try:  # the callers checked the types against SCALAR_TYPES
        B, P, past, n = float(batch), float(prompt), float(past), float(n_chips)
        wb, kb = float(weight_bytes), float(kv_bytes)
        ce, me = float(compute_efficiency), float(memory_efficiency)
    except OverflowError:  # an int past 1e308
        return None
    peak = chip.flops.get(dtype)
    k = _scalar_constants(model)
    top = k.max_context
    tokens = B * P
    end = past + P
    if not (0.0 < B < _INF and 0.0 < P < _INF and 0.0 <= past and 0.0 < tokens < _INF
            and end < _INF and (top is None or end <= top)
            and 0.0 < n <= MAX_CHIPS and n.is_integer()
            and 0.0 < wb <= MAX_BYTES_PER_ELEMENT and 0.0 < kb <= MAX_BYTES_PER_ELEMENT
            and 0.0 < ce <= 1.0 and 0.0 < me <= 1.0
            and peak is not None and overlap in OVERLAPS):
        return None
    mm = tokens * 2.0 * k.n_mm
    attn = idx = 0.0
    indexer = k.has_indexer
    if attention_flops:
        attn = B * model._prefill_attention_flops(P, past)
        if indexer:  # Model.prefill_indexer_flops, unchecked
            idx = B * (k.n_global * model._prefill_pairs(P, past, None) * k.index_flops_per_pair)
    # Model.kv_cache_bytes at past + prompt and at past, unchecked, then kv_read_bytes at past
    # (Model._spans(c, read=False): every token held, sliding layers up to their window)
    elements, n_global, n_sliding, window = k.kv_elements, k.n_global, k.n_sliding, k.window
    sliding_end = (window if window < end else end) if n_sliding else 0.0  # min(end, window)
    held_end = (n_global * end + n_sliding * sliding_end) * elements * kb
    if indexer:
        held_end = held_end + k.n_global * end * (k.index_key_bytes or 0.0)
    if past == 0.0:  # nothing cached: held and read at past are 0.0, and x - 0.0 + 0.0 is x
        kvbytes = B * held_end
    else:
        sliding_past = (window if window < past else past) if n_sliding else 0.0
        held_past = (n_global * past + n_sliding * sliding_past) * elements * kb
        read_past = _read_spans(k, past) * elements * kb
        if indexer:
            held_past = held_past + k.n_global * past * (k.index_key_bytes or 0.0)
            read_past = read_past + k.n_global * past * k.index_key_bytes
        kvbytes = B * ((held_end - held_past) + read_past)
    return _finish_scalar("prefill", overlap, mm, attn, idx, _weights_read(model, k, tokens) * wb,
                          kvbytes, n, chip, float(peak), ce, me, tokens, B, model, kb)


def min_latency(model, chip, n_chips=1, weight_bytes=2, dtype="bf16"):
    """Fastest possible decode step (s): batch 1, no context, weights read once.

    ``t_min = max(2 N_mm / (n C), N_read(1) b_w / (n W))``. For a dense model that is the
    episode's floor ``N_tot b_w / (n W)`` (the untied input embedding contributes one row);
    for MoE only the shared weights and the ``k`` experts one token uses are read.
    """
    return decode_step(model, chip, batch=1, context=0, n_chips=n_chips,
                       weight_bytes=weight_bytes, dtype=dtype).time


def serial_step(step: Step) -> Step:
    """The same step with **no** overlap of compute and memory traffic: ``t = compute + memory``.

    Real kernels overlap imperfectly, most of all near the ridge point, so a measured step lies
    between ``step.time`` (the lower bound, ``max``) and this pessimistic estimate (the sum),
    which is at most twice the bound, exactly twice where compute and memory times are equal
    (at the critical batch). Every other field is kept.
    """
    t = np.asarray(step.compute_time) + np.asarray(step.memory_time)
    return dataclasses.replace(step, time=_out(t) if t.ndim == 0 else t, overlap="none")
