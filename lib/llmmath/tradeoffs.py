"""Spending memory to save compute: store or recompute, in serving and in training.

The book's recurring trade (the memory-for-compute chapter), one function per decision:

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
from ._summary import SummaryRow
from .units import fmt_count, fmt_time

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
    model.check_context(context + 1.0, "context + 1 (the context and the new token)")
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
    """One row of the book's summary table: a bound, its formula, its chapter and one number.

    ``value`` is the library's number; ``by_formula`` the printed formula evaluated by hand on
    the same inputs (``nan`` where a row declares none). ``adds`` names what the library adds
    to the formula where the two differ by more than half a per cent; ``printed`` is then both
    numbers and the term, otherwise ``shown``.
    """

    chapter: str  # the chapter's document name, e.g. "decode_roofline"
    bound: str  # what it bounds, in words
    formula: str  # LaTeX, in the book's notation
    example: str  # the worked case, in words
    value: float  # the example's number, SI units
    shown: str  # the number as the table prints it
    by_formula: float = math.nan  # the printed formula on the example's inputs, SI units
    adds: str = ""  # what the library's value adds to the formula, if they differ
    shown_by_formula: str = ""  # ``by_formula`` as the table prints it

    @property
    def printed(self) -> str:
        """The table's text: ``shown``, or both numbers and the added term where they differ."""
        if not self.adds:
            return self.shown
        return (f"{self.shown} (the formula alone: {self.shown_by_formula}; the library adds "
                f"{self.adds})")


def summary_bounds(chapters: list[str] | None = None) -> list[Bound]:
    """Every bound the book derives, one row each, with a number computed by the library.

    Each physics module declares the rows of the chapter whose physics it holds (``SUMMARY``, a
    tuple of rows: chapter, bound, formula, worked case, how to compute and print its number,
    and the printed formula evaluated by hand); this gathers them from every module the package
    finds. ``chapters``, the chapters' document names in the book's order, orders the table
    (each chapter's rows in the order its module declares them); without it, rows come in the
    order of the modules.
    The examples use catalogue entries (an H100, Llama 3 70B, Llama 3.1 405B, DeepSeek-V3, a
    GB200 rack) at bf16 unless a row says otherwise.
    """
    import importlib

    import llmmath

    rows = [row for name in llmmath.physics_modules()
            for row in getattr(importlib.import_module(f"llmmath.{name}"), "SUMMARY", ())]
    if chapters is not None:
        order = {c: i for i, c in enumerate(chapters)}
        missing = sorted({r.chapter for r in rows} - set(order))
        if missing:
            raise ValueError(f"chapters: {missing} declare summary rows but are not in "
                             f"chapters={list(chapters)}")
        rows.sort(key=lambda r: order[r.chapter])  # stable: a chapter's rows keep their order
    out = []
    for r in rows:
        value = float(r.value(llmmath))
        by = math.nan if r.by_formula is None else float(r.by_formula(llmmath))
        out.append(Bound(r.chapter, r.bound, r.formula, r.example, value, r.shown(value), by,
                         r.adds, r.shown(by) if r.by_formula is not None else ""))
    return out


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("memory_for_compute", "FLOPs to rebuild a cached byte",
               r"I_\text{rb} = 2 N_\text{mm} / b_\text{kv} \gg I^*", "Llama 3 70B, bf16 cache",
               lambda lm: recompute_intensity(lm.model("Llama-3-70B")),
               lambda i: f"{fmt_count(i)} FLOP/byte",
               by_formula=lambda lm: 2 * (m := lm.model("Llama-3-70B")).matmul_params_active
               / m.kv_bytes_per_token(2)),
    SummaryRow("memory_for_compute", "context recomputed for free",
               r"S_\text{free} \approx B^* / B - 1,\ B^* = I^* b_w / 2\ \text{(dense)}",
               "Llama 3 70B, 8 H100s, B = 1",
               lambda lm: recompute_crossover(lm.model("Llama-3-70B"), lm.chip("H100-SXM"), batch=1,
                                              n_chips=8), lambda s: f"{s:,.0f} tokens",
               by_formula=lambda lm: lm.chip("H100-SXM").ops_per_byte("bf16") * 2 / 2 / 1 - 1),
    SummaryRow("memory_for_compute", "full checkpointing's compute price",
               r"8 N_\text{act} D_\text{pre}\ \text{vs}\ 6 N_\text{act} D_\text{pre}",
               "Llama 3.1 405B, 8k sequences",
               lambda lm: checkpoint_price(lm.model("Llama-3.1-405B"), 8192, 8192, "full").overhead,
               lambda o: f"+{o:.0%} FLOPs",
               by_formula=lambda lm: 8 / 6 - 1),
    SummaryRow("memory_for_compute", "longest worthwhile hold of a prompt cache",
               r"t_\text{hold} = \frac{c_\text{pre} M_\text{tier}}{b_\text{kv}\, p_\text{tier}},\ "
               r"c_\text{pre} = \frac{2 N_\text{mm} + a (P + 1)/2}{C}\, p",
               "Llama 3 70B, 8,192-token prefix on 8 H100s, held in DRAM",
               lambda lm: max_hold_time(lm.model("Llama-3-70B"), lm.chip("H100-SXM"),
                                        lm.memory.MEMORY_TIERS["DRAM"], n_chips=8), fmt_time,
               by_formula=lambda lm: (
                   (2 * (m := lm.model("Llama-3-70B")).matmul_params_active
                    + 4 * m.n_heads * m.head_dim * m.n_layers * (8192 + 1) / 2)
                   / (c := lm.chip("H100-SXM")).peak("bf16") * c.price_per_hour / 3600
                   * (t := lm.memory.MEMORY_TIERS["DRAM"]).capacity
                   / (m.kv_bytes_per_token(2) * t.price_per_hour / 3600))),
)
