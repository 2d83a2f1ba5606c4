"""Balance points of a decode step: where compute time meets memory time.

``critical_batch`` (the batch that amortises the weight reads), ``critical_context``
(the context beyond which no batch makes decode compute-bound), ``decode_balance`` (KV-read
time over compute time per sequence) and ``implied_kv_bytes_per_token`` (the critical
context read backwards). Chip count cancels in all of them.
"""

from __future__ import annotations

import numpy as np

from ._check import choice, positive
from ._check import scalar_or_array as _out
from .step import ATTENTION_DTYPES, OVERLAPS, _attention_peak, _index_peak

__all__ = ["critical_batch", "critical_context", "decode_balance", "implied_kv_bytes_per_token"]

def _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops,
                         attention_dtype="bf16"):
    """Seconds one sequence adds to a decode step on one chip at peak: (matmul, attention, KV read).

    No argument checks and no context cap: the balance solvers below evaluate it beyond the
    model's window to find where (or whether) the lines cross.
    """
    C, W = chip.peak(dtype), chip.hbm_bandwidth
    context = context if type(context) is float else np.asarray(context, dtype=float)
    mm = 2.0 * model.matmul_params_active / C
    attn = 0.0 * context
    if attention_flops:
        a, i = model._decode_flops(context)
        attn = a / _attention_peak(chip, C, attention_dtype) + i / _index_peak(chip, C)
    return mm, attn, model._read_bytes(context, kv_bytes) / W


def _first_root(g, kinks, shape):
    """First S >= 0 where the piecewise-linear g (g(0) < 0, kinks at ``kinks``) reaches 0.

    Exact on each linear piece; NaN where g stays negative for every S.
    """
    def at(S):  # numpy floats: a flat piece divides into inf or NaN instead of raising
        return np.asarray(g(S), dtype=float)

    pts = [0.0] + sorted(float(k) for k in kinks)
    root = np.full(shape, np.nan)
    for lo, hi in zip(pts[:-1], pts[1:], strict=True):
        g_lo, g_hi = at(lo), at(hi)
        hit = np.isnan(root) & (g_hi >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            root = np.where(hit, lo - g_lo * (hi - lo) / (g_hi - g_lo), root)
    last = pts[-1]
    g_last = at(last)
    slope = at(last + 1.0) - g_last  # the last piece runs on forever
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.where(np.isnan(root) & (slope > 0), last - g_last / slope, root)
    return root


def decode_balance(model, chip, context, kv_bytes=2, dtype="bf16", attention_flops=True,
                   attention_dtype="bf16"):
    """Per sequence, at a batch that amortises the weights: KV-read time over compute time.

    ``kv_read(S) / W`` over ``(2 N_mm + attn(S)) / C`` (attention's FLOPs, and an indexer's,
    counted unless ``attention_flops=False``). Above 1 the step is memory-bound at every batch
    (whole-step overlap); :func:`critical_context` is where it reaches 1.
    """
    context = positive("context", context, allow_zero=True)
    kv_bytes = positive("kv_bytes", kv_bytes)
    model.check_context(context)
    choice("attention_dtype", attention_dtype, ATTENTION_DTYPES)
    mm, attn, kv = _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops,
                                        attention_dtype)
    return _out(kv / (mm + attn))


def critical_context(model, chip, kv_bytes=2, dtype="bf16", attention_flops=True, overlap="step",
                     attention_dtype="bf16"):
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
    every batch. ``attention_dtype`` is the arithmetic attention runs in (bf16 by default, as
    decode kernels dequantise an fp8 cache; see :func:`llmmath.roofline.decode_step`).
    """
    kv_bytes = positive("kv_bytes", kv_bytes)
    choice("overlap", overlap, OVERLAPS)
    choice("attention_dtype", attention_dtype, ATTENTION_DTYPES)
    chip.peak(dtype)
    if overlap == "per-op":
        raise ValueError(
            "overlap: got 'per-op'; under the per-operation bound the matmuls pair only with the "
            "weight reads, which a large enough batch amortises at every context, so there is no "
            "critical context (the weights-only critical batch holds at any context)")

    def gap(S):  # seconds of KV read minus seconds of compute, per sequence
        mm, attn, kv = _per_sequence_decode(model, chip, S, kv_bytes, dtype, attention_flops,
                                            attention_dtype)
        return kv - mm - attn

    kinks = [k for k in (model.sparse_attention_topk,
                         model.sliding_window if model.n_sliding_layers else None) if k]
    root = _first_root(gap, kinks, np.shape(kv_bytes))
    if np.any(np.isnan(root)):
        per_pair = model._attention_flops_per_context_token
        kvb = float(np.max(kv_bytes))
        elem = float(model.kv_row_bytes(kvb))
        # attention's own ridge
        ridge = float(_attention_peak(chip, chip.peak(dtype), attention_dtype)) / chip.hbm_bandwidth
        if attention_flops and per_pair / elem >= ridge and not model.has_indexer:
            why = (f"attention does {per_pair / elem:.0f} FLOP per cached byte, at or above "
                   f"{chip.name}'s {ridge:.0f} FLOP/byte at the arithmetic it runs in, so KV reads "
                   "never outgrow compute")
        else:
            why = ("its KV reads per step are capped (sliding window / sparse top-k) below the "
                   "bytes "
                   "that balance one token's compute")
        raise ValueError(f"model {model.name!r} on {chip.name}: {why}; decode never becomes "
                         "memory-bound at every batch, so there is no critical context")
    return _out(root)


def critical_batch(model, chip, weight_bytes=2, dtype="bf16", context=0, kv_bytes=2,
                   attention_flops=True, overlap="step", attention_dtype="bf16"):
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
    choice("attention_dtype", attention_dtype, ATTENTION_DTYPES)
    model.check_context(context)
    W = chip.hbm_bandwidth
    mm, attn, kv = _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops,
                                        attention_dtype)
    if overlap == "per-op":
        attn, kv = 0.0 * attn, 0.0 * kv
    denom = (mm + attn - kv) * W  # bytes of slack per sequence
    if (denom <= 0) if type(denom) is float else np.any(denom <= 0):
        try:
            s_star = critical_context(model, chip, kv_bytes=np.max(kv_bytes), dtype=dtype,
                                      attention_flops=attention_flops,
                                      attention_dtype=attention_dtype)
            where = f" ({s_star:,.0f} tokens)"
        except ValueError:
            where = ""
        raise ValueError(
            f"context: got {float(np.max(context)):g} tokens; at or beyond the critical context of "
            f"{model.name} on {chip.name}{where} decode is memory-bound at every batch, so there "
            "is no "
            "critical batch"
        )
    if not model.is_moe and model.tied_embeddings:  # weights read do not depend on the batch
        return _out(model.weight_params_read(1e-9) * weight_bytes / denom)
    return _out(_weight_balance(model, denom, weight_bytes))


def _weight_balance(model, denom, weight_bytes):
    """The batch B where ``denom B = b_w N_read(B)``: Newton's method from above.

    ``h(B) = denom B - b_w N_read(B)`` is convex (``N_read`` is concave: embedding rows stop at
    the vocabulary, experts saturate) with ``h <= 0`` at the shared weights' batch and
    ``h >= 0`` at ``hi = N_tot b_w / denom``. Newton steps from ``hi`` then decrease
    monotonically to the root, reaching float precision in a few steps; iteration stops when a
    step no longer moves B. Python floats stay Python floats (the model's read and its slope
    take them without numpy).
    """
    B = model.total_params * weight_bytes / denom
    scalar = type(B) is float
    for _ in range(100):
        h = denom * B - weight_bytes * model._weight_params_read(B)
        slope = denom - weight_bytes * model._weight_params_read_slope(B)
        if scalar:
            new = B - h / slope if h > 0 and slope > 0 else B
            moved = new < B
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                new = np.where((h > 0) & (slope > 0), B - h / slope, B)
            moved = np.any(new < B)
        if not moved:
            return B
        B = new
    return B


def implied_kv_bytes_per_token(active_params, chip, critical_context, dtype="bf16"):
    """KV bytes per token (all layers, ``b_kv``) that put the critical context at a given value.

    ``critical_context`` is that value (tokens).

    The inverse of :func:`critical_context` for dense attention: ``b_kv = 2 N_act W / (C S*)``.
    It is how the book reads architecture out of a price step: if a provider's cost turns
    memory-bound at every batch beyond ``S*`` tokens, a model with ``active_params`` active
    (matmul) parameters on ``chip`` at ``dtype`` must cache about this many bytes per token.
    The episode's form ``N_act / (300 S)`` is this with ``C/W = 600`` FLOP/byte.
    """
    n = positive("active_params", active_params)
    s = positive("critical_context", critical_context)
    return _out(2.0 * n * chip.hbm_bandwidth / (chip.peak(dtype) * s))
