"""Speculative decoding and multi-token prediction: the second lever on speed.

"Batching trades latency for token cost" (book/batching_cost.ipynb): a verify step scores
``gamma + 1`` positions per sequence (``gamma = draft_tokens``) for about the weight reads of one
decode step of a dense model (more for a mixture of experts at small batch). Expected tokens
per step (``speculative_tokens_per_step``), the verify step's bound
(``speculative_step``) and the batch at which it turns compute-bound
(``speculative_critical_batch``).
"""

from __future__ import annotations

import numpy as np

from ._check import positive
from ._check import scalar_or_array as _out
from ._solve import bisect
from .step import Step, _check_step, _decode_work, _finish

__all__ = ["speculative_tokens_per_step", "speculative_step", "speculative_critical_batch"]

#: DeepSeek-V3's multi-token prediction in serving: the second token is accepted 85% to 90% of the
#: time, for about 1.8 times the decoding speed (tokens per second) [deepseek_v3].
DEEPSEEK_V3_MTP_ACCEPTANCE = (0.85, 0.90)
DEEPSEEK_V3_MTP_SPEEDUP = 1.8


def speculative_tokens_per_step(draft_tokens, acceptance):
    """Expected tokens one sequence emits per verification step with ``gamma`` drafted tokens.

    Each drafted token is accepted with probability ``q = acceptance``, independently, until
    the first rejection; the verifying pass always yields one token of its own (the correction,
    or the bonus token after gamma acceptances). The expectation is
    ``(1 - q^(gamma+1)) / (1 - q)`` (Leviathan et al. 2023, eq. 1, who call ``q`` alpha): ``1``
    at ``gamma = 0``, ``gamma + 1`` at ``q = 1``.
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
                     compute_efficiency=1.0, memory_efficiency=1.0, attention_flops=True,
                     attention_dtype="bf16") -> Step:
    """Lower bound on one verification step of speculative decoding (or multi-token prediction).

    Each of ``batch`` sequences carries ``gamma = draft_tokens`` drafted tokens; one forward
    pass scores all ``gamma + 1`` positions at once:

    ``t = max(B (gamma+1) (2 N_mm + attn(S)) / (n C),
    (N_read(B (gamma+1)) b_w + B kv_read(S)) / (n W))``

    The weights are read once for all ``B (gamma+1)`` tokens and each sequence's KV cache once
    for its ``gamma + 1`` queries. For a dense model, while ``B (gamma+1)`` stays below the
    critical batch the step costs about one memory-bound decode step. For MoE it does not: the
    ``B (gamma+1)`` tokens route to more experts than ``B`` would, so the verify step reads more
    weight bytes (DeepSeek-V3 at batch 1 with one draft: 1.54x), and attention's FLOPs grow with
    ``gamma + 1``. ``N_read`` routes the drafted tokens independently (uniform routing, as
    :meth:`~llmmath.models.Model.weight_params_read`); a sequence's adjacent tokens tend to pick
    the same experts, so for MoE this is an upper estimate of the verify step's weight reads.
    ``tokens`` is ``B x speculative_tokens_per_step(gamma, acceptance)``: the expected tokens
    emitted, so :func:`llmmath.cost.tokens_per_second` and :func:`llmmath.cost.cost_per_token`
    apply unchanged. Left out: the cost of drafting (a small
    draft model's own steps, or an MTP head's extra layer) and the KV of the ``gamma + 1`` new
    positions (a few tokens next to ``S``). ``draft_tokens=0`` is :func:`decode_step`;
    ``attention_dtype`` as there.
    """
    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    n_chips, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency,
        attention_dtype)
    peak = chip.peak(dtype)
    k = positive("draft_tokens", draft_tokens, allow_zero=True, integer=True)
    per_seq = speculative_tokens_per_step(k, acceptance)
    scored = batch * (k + 1.0)
    context = model.check_context(context)
    mm, attn, idx = _decode_work(model, scored, context, attention_flops)
    wbytes = model.weight_params_read(scored) * weight_bytes
    kvbytes = batch * model.kv_read_bytes(context, kv_bytes)
    held = model.total_params * weight_bytes + batch * model.kv_cache_bytes(context, kv_bytes)
    return _finish("decode", overlap, mm, attn, idx, wbytes, kvbytes, n_chips, chip, peak,
                   compute_efficiency, memory_efficiency, batch * np.asarray(per_seq), batch, model,
                   attention_dtype, held)


def speculative_critical_batch(model, chip, draft_tokens, context=0, weight_bytes=2, kv_bytes=2,
                               dtype="bf16", attention_flops=True):
    """Batch (sequences) at which a verify step with ``gamma`` drafts turns compute-bound.

    Solves ``B (gamma+1) 2 N_mm / C = (N_read(B (gamma+1)) b_w + B kv_read(S)) / W`` for B
    (bisection in log B; chip count cancels; ``gamma = draft_tokens``). Below it speculative
    decoding gains its full expected tokens per step; above it rejected drafts cost FLOPs.
    ``B (gamma+1)`` at this batch lies between the
    weights-only critical batch and ``critical_batch(..., context=S)``. ValueError if the verify
    step is memory-bound at every batch (the KV reads outgrow the compute).
    """
    k = positive("draft_tokens", draft_tokens, allow_zero=True, integer=True, single=True)
    context = model.check_context(positive("context", context, allow_zero=True, single=True))
    weight_bytes = positive("weight_bytes", weight_bytes, single=True)
    kv_bytes = positive("kv_bytes", kv_bytes, single=True)

    def gap(logb):
        s = speculative_step(model, chip, np.exp(logb), context, k, 1.0, weight_bytes=weight_bytes,
                             kv_bytes=kv_bytes, dtype=dtype, attention_flops=attention_flops)
        return s.compute_time - s.memory_time

    lo, hi = np.log(1e-6), np.log(1e12)
    g_hi = gap(hi)
    if g_hi < 0:
        raise ValueError(f"context: {model.name} on {chip.name} stays memory-bound at every batch "
                         f"with {k:g} drafts at {float(context):g} tokens")
    return float(np.exp(bisect(gap, lo, hi, f_hi=g_hi, max_iter=200)))
