"""Spending memory to save compute: store or recompute, in serving and in training.

The book's recurring trade (chapter 13), one function per decision:

- **The KV cache** stores what a model could recompute. Without it, every decode step would run
  the forward pass again over the whole context to rebuild each layer's keys and values: a
  prefill of ``S + 1`` tokens instead of a decode step that reads ``S b_kv`` bytes
  (:func:`store_or_recompute`). Rebuilding one cached byte costs ``2 N_mm / b_kv`` FLOP
  (:func:`recompute_intensity`), thousands of times a chip's ridge point ``C / W``, so storing
  wins by that factor once the recompute shows in the step time; below the context
  :func:`recompute_crossover` (about ``B* / B - 1`` tokens) the recompute hides behind the
  weight read and costs no time at all.
- **Activation checkpointing** recomputes what training could store
  (:func:`checkpoint_price`): the memory of :func:`llmmath.training.activation_memory`, with the
  FLOPs each choice adds (selective: attention's forward core again; full: the whole forward,
  8 instead of 6 FLOP per parameter per token). **Reversible layers** (RevNets, Reformer) rebuild
  each layer's input from its output, so the activations held stop growing with depth.
- **Prompt caching** holds a prefix's KV cache in a memory tier for as long as holding it costs
  less than recomputing it (:func:`max_hold_time`).
- :func:`summary_bounds` lists every bound the book derives, with one worked number each, from
  the library's own functions (the closing table of the book).

SI units inside: seconds, bytes, FLOP, FLOP/s, USD.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._solve import bisect

__all__ = [
    "StoreOrRecompute",
    "store_or_recompute",
    "recompute_intensity",
    "recompute_crossover",
    "CHECKPOINT_SCHEMES",
    "CheckpointPrice",
    "checkpoint_price",
    "max_hold_time",
    "Bound",
    "summary_bounds",
]


# ----- the KV cache: store or recompute -------------------------------------------------------

@dataclass(frozen=True)
class StoreOrRecompute:
    """One decode step with the KV cache (``store``) and without it (``recompute``), SI units.

    - ``store``: :func:`~llmmath.roofline.decode_step` at ``context`` (reads the cache);
    - ``recompute``: :func:`~llmmath.roofline.prefill_step` of ``context + 1`` tokens (rebuilds
      every layer's keys and values of the context, then attends with the new token);
    - ``extra_flops``: FLOPs the recompute adds per step, all sequences (FLOP);
    - ``saved_bytes``: KV-cache bytes the recompute does not read (B);
    - ``time_ratio``: recompute step bound over store step bound.
    """

    store: object
    recompute: object
    extra_flops: float | np.ndarray
    saved_bytes: float | np.ndarray
    time_ratio: float | np.ndarray


def store_or_recompute(model, chip, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                       dtype="bf16") -> StoreOrRecompute:
    """A decode step that reads the KV cache beside one that recomputes it (lower bounds).

    Recomputing a layer's keys and values needs that layer's input for every context token, which
    needs every earlier layer: a model without a cache runs a prefill of the ``context`` tokens
    plus the new one each step. Per sequence the recompute adds about ``2 N_mm S`` FLOP (plus
    attention's ``S^2`` term) and saves ``S b_kv`` bytes of reads. The recompute step is the
    library's prefill bound, which writes the rebuilt cache once; a pass that discarded it layer by
    layer would save those writes, which never matter past :func:`recompute_crossover`.
    ``context`` must leave room for one more token in the model's window. Broadcasts over
    ``batch`` and ``context``.
    """
    from .step import decode_step, prefill_step

    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    model._context(context + 1.0, "context + 1 (the context and the new token)")
    kw = dict(n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dtype)
    store = decode_step(model, chip, batch, context, **kw)
    recompute = prefill_step(model, chip, batch, context + 1.0, **kw)
    extra = np.asarray(recompute.flops) - np.asarray(store.flops)
    ratio = np.asarray(recompute.time) / np.asarray(store.time)
    return StoreOrRecompute(store, recompute, _out(extra), _out(store.kv_bytes_read), _out(ratio))


def recompute_intensity(model, kv_bytes=2):
    """FLOP spent to rebuild one byte of KV cache: ``2 N_mm / b_kv`` (FLOP per byte).

    A token's keys and values cost its forward pass through the layers below them, ``2 N_mm``
    FLOP, and occupy ``b_kv`` bytes (:meth:`~llmmath.models.Model.kv_bytes_per_token`). Reading a
    byte back takes the time of ``R = C / W`` FLOP (the chip's ridge point), so recomputing beats
    reading only where this intensity is below ``R``: never, for any catalogue model (it is in the
    tens to hundreds of thousands). Attention's own FLOPs, left out, only raise it.
    """
    kv_bytes = positive("kv_bytes", kv_bytes)
    return _out(2.0 * float(model.matmul_params_active)
                / np.asarray(model.kv_bytes_per_token(kv_bytes)))


def recompute_crossover(model, chip, batch=1, n_chips=1, weight_bytes=2, kv_bytes=2, dtype="bf16"):
    """Longest context (tokens) a decode step could recompute instead of reading, at no cost in
    time.

    The context ``S`` where the recompute pass (a prefill of ``S + 1`` tokens per sequence,
    :func:`store_or_recompute`), its cache writes aside, takes as long as the step with the cache.
    Below it the step is memory-bound on its weight read and the recompute hides in idle FLOPs;
    above it the recompute makes the step longer, by up to :func:`recompute_intensity` over
    ``C / W``. For a dense model, ignoring the KV and attention terms, ``2 B N (S + 1) / C = N b_w
    / W`` gives ``S = B* / B - 1``: recomputing is free while ``B (S + 1)`` tokens stay below the
    critical batch. A mixture of experts at small batch has almost nothing free: the ``B (S + 1)``
    recomputed tokens touch experts the cached step never reads. 0 when the cached step is already
    compute-bound; ``inf`` if the window ends first. One configuration at a time (no arrays).
    """
    from .step import decode_step, prefill_step

    batch = positive("batch", batch, single=True)
    n_chips = n_chips_check(n_chips, single=True)
    weight_bytes = positive("weight_bytes", weight_bytes, single=True)
    kv_bytes = positive("kv_bytes", kv_bytes, single=True)
    kw = dict(n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dtype)

    def gap(s):  # the recompute pass's time, its cache writes aside, over the cached step's
        pre = prefill_step(model, chip, batch, s + 1.0, **kw)
        return (max(pre.compute_time, pre.weight_time)
                - decode_step(model, chip, batch, s, **kw).time)

    lo, hi = 0.0, float(model.max_context) - 1.0
    g_lo = gap(lo)
    if g_lo > 0:  # equal at S = 0 (the same one-token pass) unless compute-bound
        return 0.0
    g_hi = gap(hi)
    if g_hi < 0:
        return math.inf
    return bisect(gap, lo, hi, f_lo=g_lo, f_hi=g_hi, atol=1e-6, rtol=1e-6, max_iter=100)


# ----- training: checkpointing and reversible layers ------------------------------------------

#: What each scheme keeps per token per layer, and what it recomputes
#: (see :func:`checkpoint_price`).
CHECKPOINT_SCHEMES = ("none", "selective", "full", "reversible")


@dataclass(frozen=True)
class CheckpointPrice:
    """Activation memory and training FLOPs of one recomputation scheme, SI units.

    - ``activation_bytes``: activations held for the backward pass, all layers (B);
    - ``flops``: FLOPs the hardware does per step over ``tokens`` (FLOP), recomputation included;
    - ``model_flops``: FLOPs the model needs (``6 N_act D`` plus attention), what MFU counts (FLOP);
    - ``overhead``: ``flops / model_flops - 1``, the fraction of extra arithmetic.
    """

    scheme: str
    activation_bytes: float | np.ndarray
    flops: float | np.ndarray
    model_flops: float | np.ndarray
    overhead: float | np.ndarray


def checkpoint_price(model, tokens, sequence_length, recompute="none") -> CheckpointPrice:
    """Memory held and FLOPs paid for ``tokens`` tokens in flight under a recomputation scheme.

    With ``a`` attention's forward FLOPs (QK^T and AV) and ``N`` the active parameters, per token:

    - ``"none"``: keep everything, ``34 D + 5 n_q S`` bytes per layer (Korthikanti et al. 2022);
      ``6 N + 3a`` FLOP;
    - ``"selective"``: drop the attention scores and recompute them in the backward pass,
      ``34 D`` bytes per layer; ``6 N + 4a`` FLOP (attention's forward core runs twice);
    - ``"full"``: keep each layer's input only, ``2 D`` bytes per layer; the forward pass runs
      twice: ``8 N + 4a`` FLOP;
    - ``"reversible"``: reversible residual layers (RevNet, Reformer) rebuild each layer's input
      from its output during the backward pass, so only the last layer's two residual streams are
      kept, ``4 D`` bytes per token whatever the depth; the forward pass runs twice, as for
      ``"full"``.

    Every scheme also needs the working set of the one layer being differentiated, left out here
    (as in :func:`llmmath.training.activation_memory`, which gives the first three memories).
    """
    from .training import activation_memory, attention_training_flops_per_token

    tokens = positive("tokens", tokens)
    choice("recompute", recompute, CHECKPOINT_SCHEMES)
    attn_fwd = np.asarray(attention_training_flops_per_token(model, sequence_length)) / 3.0 * tokens
    n = float(model.active_params)
    model_flops = 6.0 * n * tokens + 3.0 * attn_fwd
    if recompute == "reversible":
        held = 4.0 * model.d_model * np.asarray(tokens)
    else:
        held = np.asarray(activation_memory(model, tokens, sequence_length, recompute))
    extra = {"none": 0.0, "selective": attn_fwd, "full": 2.0 * n * tokens + attn_fwd,
             "reversible": 2.0 * n * tokens + attn_fwd}[recompute]
    flops = model_flops + extra
    return CheckpointPrice(recompute, _out(held), _out(flops), _out(model_flops),
                           _out(flops / model_flops - 1.0))


# ----- prompt caching: how long a prefix is worth holding --------------------------------------

def max_hold_time(model, chip, tier, prompt=8192, n_chips=1, weight_bytes=2, kv_bytes=2,
                  dtype="bf16", price_per_chip_hour=None):
    """Seconds a prompt's KV cache can wait in ``tier`` before holding it costs more than
    recomputing.

    Recomputing costs the prefill's chip time per prompt token times the chip price
    (:func:`~llmmath.cost.cost_per_token` of :func:`~llmmath.roofline.prefill_step`); holding
    ``b`` bytes per token for ``t`` seconds and reading them back costs ``b p max(t / M, 1 / W)``
    (:func:`llmmath.memory.cache_cost`). They are equal at ``t = c_prefill M / (b p)``; 0 if
    reading the bytes back alone costs more than recomputing them. ``b`` is the cache bytes per
    token the prompt actually holds (sliding windows cap it). Prices are floors on both sides.
    """
    from .cost import cost_per_token
    from .step import prefill_step

    prompt = positive("prompt", prompt)
    step = prefill_step(model, chip, 1, prompt, n_chips=n_chips, weight_bytes=weight_bytes,
                        kv_bytes=kv_bytes, dtype=dtype)
    remat = np.asarray(cost_per_token(step, price_per_chip_hour))
    b = np.asarray(model.kv_cache_bytes(prompt, kv_bytes)) / prompt
    t = np.where(b * tier.read_price >= remat, 0.0, remat / (b * tier.hold_price))
    return _out(t)


# ----- the book's bounds, one row each ---------------------------------------------------------

@dataclass(frozen=True)
class Bound:
    """One row of the book's summary table: a bound, its formula, its chapter and one number."""

    chapter: str  # the chapter's document name, e.g. "03_decode_roofline"
    bound: str  # what it bounds, in words
    formula: str  # LaTeX, in the book's notation
    example: str  # the worked case, in words
    value: float  # the example's number, SI units
    shown: str  # the number as the table prints it


# The summary table's words, in reading order: chapter, what is bounded, the formula (LaTeX, the
# book's notation) and the worked case; summary_bounds() computes each row's number for exactly
# that case. Words only (checked by reading the table in chapter 13), kept apart from the
# arithmetic that the tests check by hand; not in __all__ (the API page would print it whole).
SUMMARY_ROWS = (
    ("01_hardware", "ridge point (FLOP per byte)",
     r"I^* = C / W",
     "H100, bf16"),
    ("01_hardware", "HBM drain time",
     r"t_\text{drain} = M / W",
     "H100"),
    ("02_counting", "forward FLOPs per token",
     r"2 N_\text{act}\ (+\ \text{attention})",
     "Llama 3 70B, no context"),
    ("02_counting", "KV bytes per token",
     r"b_\text{kv} = 2 L n_{kv} d_h \times \text{bytes}",
     "Llama 3 70B, bf16"),
    ("03_decode_roofline", "decode step",
     r"\max\left(\frac{2 B N_\text{act}}{n C}, "
     r"\frac{N_\text{tot} b_w + B S b_\text{kv}}{n W}\right)",
     "Llama 3 70B, 8 H100s, B = 64, S = 4,096"),
    ("03_decode_roofline", "minimum latency per token",
     r"N_\text{tot} b_w / (n W)",
     "Llama 3 70B, 8 H100s"),
    ("04_batching_cost", "critical batch",
     r"B^* = I^* \frac{b_w}{2} \frac{N_\text{tot}}{N_\text{act}}",
     "DeepSeek-V3, H100, fp8"),
    ("04_batching_cost", "cost floor per token",
     r"2 N_\text{act}\, p / C\ \text{per token}",
     "Llama 3 70B, H100 at its catalogue price"),
    ("05_kv_cache", "critical context",
     r"S^* = \frac{2 N_\text{act}}{I^* b_\text{kv}}",
     "Llama 3 70B, H100, bf16 cache"),
    ("05_kv_cache", "largest batch that fits",
     r"B_\text{max} = \frac{n M - N_\text{tot} b_w}{S b_\text{kv}}",
     "Llama 3 70B, 8 H100s, S = 8,192"),
    ("06_prefill_prices", "KV bytes read from a price step",
     r"b_\text{kv} = \frac{2 N_\text{act}}{I^* S}\ \text{at the step}",
     "100B active, step at 200k tokens, I* = 600"),
    ("06_prefill_prices", "cache tier knee (hold vs read)",
     r"\text{cost} = b\, p \max\left(t / M,\ 1 / W\right)",
     "a 30 TB flash drive's drain time"),
    ("07_moe_rack", "total parameters one scale-up domain holds",
     r"N_\text{tot} \le n_\text{dom} M / b_w",
     "GB200 NVL72, fp8 weights"),
    ("08_pipelining", "pipeline bubble",
     r"f_\text{bubble} = \frac{n_\text{pp} - 1}{m + n_\text{pp} - 1}",
     "4 stages, 16 micro-batches"),
    ("09_partitioning", "all-reduce (bandwidth term)",
     r"2 \frac{n - 1}{n} \frac{Q}{W_\text{up}}",
     "1 GB over 8 H100s on NVLink"),
    ("10_bound_to_estimate", "estimate over the bound",
     r"t_\text{est} = t_\text{bound} + \Delta_\text{kernel} + \Delta_\text{MoE} "
     r"+ \Delta_\text{comm} + L k_\ell t_\text{launch} + t_\text{host}",
     "Llama 3 70B, 8 H100s, B = 1, S = 4,096"),
    ("11_training_compute", "training compute",
     r"6 N_\text{act} D_\text{pre}",
     "Llama 3.1 405B, 15.6T tokens"),
    ("11_training_compute", "training state",
     r"b_\text{state} N_\text{tot}, \ b_\text{state} = 16",
     "Llama 3.1 405B, mixed-precision Adam"),
    ("11_training_compute", "per-chip batch that hides the gradient sync",
     r"T^* = \frac{n - 1}{n} \frac{b_g}{3} \frac{C}{W_\text{out}} "
     r"\frac{N_\text{tot}}{N_\text{act}}",
     "Llama 3 70B, 1,024 H100s, scale-out"),
    ("12_overtraining", "equalise pre-training, RL and inference compute",
     r"6 N_\text{act} D_\text{pre} \approx C_\text{RL} \approx 2 N_\text{act} D_\text{inf}",
     "Llama 3 70B's 15T tokens against 20 per parameter"),
    ("13_memory_for_compute", "FLOPs to rebuild a cached byte",
     r"I_\text{rb} = 2 N_\text{mm} / b_\text{kv} \gg I^*",
     "Llama 3 70B, bf16 cache"),
    ("13_memory_for_compute", "context recomputed for free",
     r"S_\text{free} \approx B^* / B - 1",
     "Llama 3 70B, 8 H100s, B = 1"),
    ("13_memory_for_compute", "full checkpointing's compute price",
     r"8 N_\text{act} D_\text{pre}\ \text{vs}\ 6 N_\text{act} D_\text{pre}",
     "Llama 3.1 405B, 8k sequences"),
    ("13_memory_for_compute", "longest worthwhile hold of a prompt cache",
     r"t_\text{hold} = \frac{c_\text{pre} M}{b_\text{kv}\, p}",
     "Llama 3 70B prefix on 8 H100s, held in DRAM"),
)


def summary_bounds() -> list[Bound]:
    """Every bound the book derives, one row each, with a number computed by the library.

    The examples use catalogue entries (an H100, Llama 3 70B, Llama 3.1 405B, DeepSeek-V3, a GB200
    rack) at bf16 unless a row says otherwise. Chapter 12's row states its rule with the
    compute-optimal count of the ``training`` module.
    """
    from . import capacity, chips, memory, models, moe, parallel, pipeline, prices, training
    from .balance import critical_batch, critical_context
    from .estimate import estimate_step
    from .step import decode_step, min_latency
    from .units import fmt_bytes, fmt_count, fmt_si, fmt_time, fmt_usd

    h100, gb200 = chips.get("H100-SXM"), chips.get("GB200")
    l70, l405, ds = (models.get("Llama-3-70B"), models.get("Llama-3.1-405B"),
                     models.get("DeepSeek-V3"))
    v = {}  # bound -> (its number, as the table prints it)

    r = h100.ops_per_byte("bf16")
    v["ridge point (FLOP per byte)"] = r, f"{r:,.0f} FLOP/byte"
    d = capacity.drain_time(h100)
    v["HBM drain time"] = d, fmt_time(d)
    f = l70.flops_per_token(0)
    v["forward FLOPs per token"] = f, fmt_si(f, "FLOP")
    b = l70.kv_bytes_per_token(2)
    v["KV bytes per token"] = b, fmt_bytes(b)
    t = decode_step(l70, h100, 64, 4096, n_chips=8).time
    v["decode step"] = t, fmt_time(t)
    t = min_latency(l70, h100, n_chips=8)
    v["minimum latency per token"] = t, fmt_time(t)
    bs = critical_batch(ds, h100, weight_bytes=1, dtype="fp8")
    v["critical batch"] = bs, f"{bs:,.0f} sequences"
    c = moe.compute_cost_per_million_tokens(l70.matmul_params_active, h100)
    v["cost floor per token"] = c, f"{fmt_usd(c)} per million tokens"
    s = critical_context(l70, h100)
    v["critical context"] = s, f"{s:,.0f} tokens"
    mb = capacity.max_batch(l70, h100, context=8192, n_chips=8)
    v["largest batch that fits"] = mb, f"{mb:,.0f} sequences"
    kb = prices.kv_bytes_from_price_step(100e9, 200_000, 600)
    v["KV bytes read from a price step"] = kb, fmt_bytes(kb)
    flash = memory.MEMORY_TIERS["flash"]
    v["cache tier knee (hold vs read)"] = flash.drain_time, fmt_time(flash.drain_time)
    n_max = moe.max_total_params(gb200, weight_bytes=1)
    v["total parameters one scale-up domain holds"] = n_max, f"{fmt_count(n_max)} parameters"
    bub = pipeline.bubble_fraction(4, 16)
    v["pipeline bubble"] = bub, f"{bub:.1%}"
    ar = parallel.all_reduce_time(1e9, 8, h100.scale_up_bandwidth)
    v["all-reduce (bandwidth term)"] = ar, fmt_time(ar)
    e = estimate_step(l70, h100, 1, 4096, n_chips=8)
    v["estimate over the bound"] = e.time, fmt_time(e.time)
    fl = training.training_flops(l405, 15.6e12)
    v["training compute"] = fl, f"{fl:.2e} FLOP"
    st = training.training_memory(l405)
    v["training state"] = st, fmt_bytes(st)
    tt = training.dp_critical_tokens(l70, h100, 1024, "scale_out")
    v["per-chip batch that hides the gradient sync"] = tt, f"{fmt_count(tt)} tokens"
    ot = training.overtraining_factor(l70, 15e12)
    v["equalise pre-training, RL and inference compute"] = ot, f"{ot:.1f}x compute-optimal"
    ri = recompute_intensity(l70)
    v["FLOPs to rebuild a cached byte"] = ri, f"{fmt_count(ri)} FLOP/byte"
    sx = recompute_crossover(l70, h100, batch=1, n_chips=8)
    v["context recomputed for free"] = sx, f"{sx:,.0f} tokens"
    cp = checkpoint_price(l405, 8192, 8192, "full")
    v["full checkpointing's compute price"] = cp.overhead, f"+{cp.overhead:.0%} FLOPs"
    ht = max_hold_time(l70, h100, memory.MEMORY_TIERS["DRAM"], n_chips=8)
    v["longest worthwhile hold of a prompt cache"] = ht, fmt_time(ht)
    return [Bound(chapter, bound, formula, example, float(v[bound][0]), v[bound][1])
            for chapter, bound, formula, example in SUMMARY_ROWS]
