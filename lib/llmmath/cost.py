"""Throughput and cost per token from a step bound.

A step of ``n`` chips that takes ``t`` seconds and yields ``T`` tokens costs
``n t p / T`` dollars per token at ``p`` dollars per chip-second. Pope et al. (2022, §4.4)
measure the same thing in chip-seconds per token, ``n t / T``, which is proportional to
operating cost and inversely proportional to MFU. Because the step times are lower bounds,
these throughputs are upper bounds and these costs lower bounds.

Dividing the decode bound by the batch turns the weight fetch into a hyperbola in B (the
weights are shared) and leaves compute and KV traffic as flat floors per token, so the cost
per token falls with batch until the chips' memory is full.

Prompt caching and memory tiers live in :mod:`llmmath.memory`, API price sheets in
:mod:`llmmath.prices`; their names are re-exported here, where the book first used them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import scalar_or_array as _out
from ._solve import bisect
from ._summary import SummaryRow
from .roofline import Step, decode_step, fits_in_memory, prefill_step
from .units import fmt_usd

__all__ = [
    "ASSUMED_PRICE_PER_CHIP_HOUR",
    "chip_hour_price",
    "price_per_chip_second",
    "tokens_per_second",
    "tokens_per_second_per_chip",
    "tokens_per_second_per_user",
    "chip_seconds_per_token",
    "cost_per_token",
    "cost_per_million_tokens",
    "chip_hours_cost",
    "chip_hours_cost_per_million_tokens",
    "Frontier",
    "latency_cost_frontier",
    "FastMode",
    "fast_mode",
    "InputOutputCost",
    "input_output_cost",
    "chunked_prefill_tokens",
]


# ----- throughput and cost per token -----------------------------------------------------------

#: USD per chip-hour assumed where neither the caller nor the catalogue gives a price (figures
#: and explorers flag it in their titles; the cost functions themselves never assume one).
ASSUMED_PRICE_PER_CHIP_HOUR = 2.0


def chip_hour_price(chip, price_per_chip_hour=None) -> tuple[float, str]:
    """USD per chip-hour to charge for ``chip``, and a note when it is an assumption.

    The caller's ``price_per_chip_hour`` if given, else the catalogue's ``chip.price_per_hour``,
    else :data:`ASSUMED_PRICE_PER_CHIP_HOUR` with a note such as ``"assumed $2/chip-h"``.
    The one rule figures and explorers use.
    """
    if price_per_chip_hour is not None:
        return float(positive("price_per_chip_hour", price_per_chip_hour)), ""
    if chip.price_per_hour is not None:
        return float(chip.price_per_hour), ""
    return ASSUMED_PRICE_PER_CHIP_HOUR, f"assumed ${ASSUMED_PRICE_PER_CHIP_HOUR:g}/chip-h"


def price_per_chip_second(chip, price_per_chip_hour=None):
    """USD per chip-second: ``price_per_chip_hour`` / 3600, else ``chip``'s catalogue price.

    Unlike :func:`chip_hour_price` (figures), a chip with no price is an error, not an assumption.
    """
    if price_per_chip_hour is not None:
        return positive("price_per_chip_hour", price_per_chip_hour) / 3600.0
    if chip is None or getattr(chip, "price_per_hour", None) is None:
        name = getattr(chip, "name", "?")
        raise ValueError(f"price_per_chip_hour: got None and chip {name!r} has no price_per_hour; "
                         "pass a price in USD per chip-hour")
    return chip.price_per_hour / 3600.0


def tokens_per_second(step: Step):
    """Tokens per second of one replica: ``tokens / time`` (an upper bound,
    since time is a lower bound)."""
    return _out(np.asarray(step.tokens) / np.asarray(step.time))


def tokens_per_second_per_chip(step: Step):
    """Tokens per second per chip: ``tokens / (time x n_chips)``."""
    return _out(np.asarray(step.tokens) / (np.asarray(step.time) * np.asarray(step.n_chips)))


def tokens_per_second_per_user(step: Step):
    """Decode speed each sequence sees: ``1 / time`` (one token per sequence per step)."""
    return _out(1.0 / np.asarray(step.time))


def chip_seconds_per_token(step: Step):
    """Pope et al.'s cost metric: ``n_chips x time / tokens`` (chip-seconds per token)."""
    return _out(np.asarray(step.n_chips) * np.asarray(step.time) / np.asarray(step.tokens))


def cost_per_token(step: Step, price_per_chip_hour=None):
    """USD per token: ``n t p / T``, with ``p`` in USD per chip-hour (default: the chip's price).

    ValueError when no price is given and the step's chip has none.
    """
    return _out(chip_seconds_per_token(step)
                * price_per_chip_second(step.chip, price_per_chip_hour))


def cost_per_million_tokens(step: Step, price_per_chip_hour=None):
    """USD per million tokens: ``1e6 x cost_per_token``."""
    return _out(1e6 * np.asarray(cost_per_token(step, price_per_chip_hour)))


def chip_hours_cost(chip_hours, chip, price_per_chip_hour=None):
    """USD for ``chip_hours`` of ``chip`` at :func:`chip_hour_price` (the caller's price, else
    the catalogue's, else the assumed one)."""
    chip_hours = positive("chip_hours", chip_hours)
    price, _ = chip_hour_price(chip, price_per_chip_hour)
    return _out(chip_hours * price)


def chip_hours_cost_per_million_tokens(chip_hours, tokens, chip, price_per_chip_hour=None):
    """USD per million ``tokens`` when producing them takes ``chip_hours`` of ``chip``:
    :func:`chip_hours_cost` / tokens x 1e6."""
    tokens = positive("tokens", tokens)
    return _out(chip_hours_cost(chip_hours, chip, price_per_chip_hour) / tokens * 1e6)


# ----- latency against cost --------------------------------------------------------------------

@dataclass(frozen=True)
class Frontier:
    """A latency-cost sweep over batch (arrays of one shape, SI units).

    - ``batch`` (sequences), ``step_time`` (s, lower bound)
    - ``tokens_per_second_per_user``: ``1 / step_time`` (each sequence gets one token per step)
    - ``tokens_per_second``: ``batch / step_time`` for the replica
    - ``cost_per_million_tokens`` (USD), ``bound`` ("compute"/"memory")
    - ``fits``: whether weights + KV caches fit in the replica's HBM (x ``memory_fraction``)
    """

    batch: np.ndarray
    step_time: np.ndarray
    tokens_per_second_per_user: np.ndarray
    tokens_per_second: np.ndarray
    cost_per_million_tokens: np.ndarray
    bound: np.ndarray
    fits: np.ndarray


def latency_cost_frontier(model, chip, batches, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                          dtype="bf16", price_per_chip_hour=None, overlap="step",
                          compute_efficiency=1.0, memory_efficiency=1.0, memory_fraction=1.0):
    """Decode speed per user against cost per token as the batch grows.

    Each point is a :func:`~llmmath.roofline.decode_step` bound: per-user speed ``1/t``,
    replica throughput ``B/t`` and ``$/Mtok = 1e6 n t p / B``. Points whose memory
    (``N_tot b_w + B kv_held(S)``) exceeds ``n M x memory_fraction`` are kept but flagged
    ``fits=False``.
    """
    batches = np.atleast_1d(positive("batches", batches))
    context = positive("context", context, allow_zero=True, single=True)  # one context per frontier
    step = decode_step(model, chip, batches, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, overlap=overlap,
                       compute_efficiency=compute_efficiency, memory_efficiency=memory_efficiency)
    fits = fits_in_memory(model, chip, batches, context, n_chips=n_chips, weight_bytes=weight_bytes,
                          kv_bytes=kv_bytes, memory_fraction=memory_fraction)
    t = np.asarray(step.time)
    return Frontier(
        batch=np.asarray(step.batch), step_time=t,
        tokens_per_second_per_user=1.0 / t,
        tokens_per_second=np.asarray(step.batch) / t,
        cost_per_million_tokens=np.atleast_1d(cost_per_million_tokens(step, price_per_chip_hour)),
        bound=np.atleast_1d(step.bound),
        fits=np.broadcast_to(fits, t.shape).copy(),
    )


@dataclass(frozen=True)
class FastMode:
    """A faster tier served by shrinking the batch on the same chips (decode lower bounds).

    - ``batch``: the operating batch; ``fast_batch``: the (real-valued) batch whose step is
      ``speedup`` times shorter (``nan`` when ``speedup > max_speedup``)
    - ``price_ratio``: cost per token at ``fast_batch`` / at ``batch``; on fixed chips it is
      ``(batch / fast_batch) / speedup``
    - ``max_speedup``: step time at ``batch`` / at batch 1: no batch makes a user faster
    """

    batch: float
    speedup: float
    fast_batch: float
    price_ratio: float
    max_speedup: float


def fast_mode(model, chip, batch, speedup, context, n_chips=1, weight_bytes=2, kv_bytes=2,
              dtype="bf16", overlap="step"):
    """Sell ``speedup`` times the per-user speed by running a smaller batch on the same replica.

    Speed per user is ``1 / t(B)`` and cost per token ``n p t(B) / B``; ``t`` grows with ``B``, so
    the fast batch solves ``t(B_f) = t(B) / speedup`` (bisection in log B). The price ratio is
    ``(t(B_f) / B_f) / (t(B) / B)``. Beyond ``max_speedup = t(B) / t(1)`` only more chips per
    replica, lower precision or speculative decoding help.
    """
    batch = positive("batch", batch, single=True)
    speedup = positive("speedup", speedup, single=True)
    context = positive("context", context, allow_zero=True, single=True)
    weight_bytes = positive("weight_bytes", weight_bytes, single=True)
    kv_bytes = positive("kv_bytes", kv_bytes, single=True)
    kw = dict(n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dtype,
              overlap=overlap)
    t0 = decode_step(model, chip, batch, context, **kw).time
    t1 = decode_step(model, chip, 1.0, context, **kw).time
    max_speedup = t0 / t1
    if speedup > max_speedup * (1 + 1e-12) or speedup < 1:
        return FastMode(batch, speedup, float("nan"), float("nan"), max_speedup)
    target = t0 / speedup

    def excess(logb):  # the step time at batch e^logb over the target: rises with the batch
        return decode_step(model, chip, np.exp(logb), context, **kw).time - target

    # t(1) - target: at most 0 but for the 1e-12 slack above, where the fast batch is 1
    f_lo = t1 - target
    bf = 1.0 if f_lo >= 0 else float(np.exp(bisect(excess, 0.0, float(np.log(batch)), f_lo=f_lo,
                                                   f_hi=t0 - target, max_iter=100)))
    tf = decode_step(model, chip, bf, context, **kw).time
    return FastMode(batch, speedup, bf, (tf / bf) / (t0 / batch), max_speedup)


# ----- input (prefill) and output (decode) tokens ----------------------------------------------

@dataclass(frozen=True)
class InputOutputCost:
    """Cost of input (prefill) and output (decode) tokens, USD per million tokens."""

    input_per_million: float | np.ndarray
    output_per_million: float | np.ndarray
    output_to_input: float | np.ndarray  # output price / input price
    prefill: Step
    decode: Step


def input_output_cost(model, chip, prompt, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                      dtype="bf16", price_per_chip_hour=None, prefill_batch=1,
                      compute_efficiency=1.0, memory_efficiency=1.0):
    """Lower-bound $/Mtok for input tokens (prefill) and output tokens (decode).

    Input: ``prefill_batch`` prompts of ``prompt`` tokens each in one pass
    (:func:`~llmmath.roofline.prefill_step`); output: a decode step of ``batch`` sequences at
    ``context`` tokens (:func:`~llmmath.roofline.decode_step`). Prefill is compute-bound and
    decode memory-bound, so output costs several times input: the ratio API prices show.
    """
    prefill_batch = positive("prefill_batch", prefill_batch)
    pre = prefill_step(model, chip, prefill_batch, prompt, n_chips=n_chips,
                       weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, compute_efficiency=compute_efficiency,
                       memory_efficiency=memory_efficiency)
    dec = decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                      kv_bytes=kv_bytes, dtype=dtype, compute_efficiency=compute_efficiency,
                      memory_efficiency=memory_efficiency)
    i = cost_per_million_tokens(pre, price_per_chip_hour)
    o = cost_per_million_tokens(dec, price_per_chip_hour)
    return InputOutputCost(i, o, _out(np.asarray(o) / np.asarray(i)), pre, dec)


def chunked_prefill_tokens(model, chip, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                           dtype="bf16", overlap="step"):
    """Prompt tokens a memory-bound decode step could also prefill without getting longer (bound).

    A decode step of ``batch`` sequences at ``context`` tokens leaves FLOPs idle while it waits on
    memory; chunked prefill fills them with prompt tokens, each charged what a decode token
    costs: its ``2 N_mm`` matmul FLOPs, ``t_mm / B``, and its attention over ``S`` cached tokens,
    ``t_attn / B`` (about a chunk token's own attention over an ``S``-token prefix). How many fit
    depends on which FLOPs may overlap which bytes (``overlap``, as in
    :func:`~llmmath.roofline.decode_step`):

    - ``"step"``: every FLOP may overlap every byte. The step lasts ``t = max(t_compute,
      t_memory)`` and computes for ``t_compute = t_mm + t_attn``: the gap holds
      ``(t / t_compute - 1) B`` tokens.
    - ``"per-op"``: each kernel overlaps only its own traffic. The matmuls' idle time (while they
      read the weights) holds the chunk's matmuls and the attention kernel's (while it reads the
      KV cache) its attention: ``min(t_w / t_mm - 1, t_kv / t_attn - 1) B`` tokens, never more
      than under ``"step"``. For GQA the matmul kernels bind: ``(t_w / t_mm - 1) B``.

    0 where the step (or, per-op, either kernel) is already compute-bound. Leaves out the
    chunk's own KV writes.
    """
    choice("overlap", overlap, ("step", "per-op"))
    s = decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                    kv_bytes=kv_bytes, dtype=dtype)
    if overlap == "step":
        ratio = np.asarray(s.time) / np.asarray(s.compute_time)
    else:
        ratio = np.asarray(s.weight_time) / np.asarray(s.matmul_time)
        attn = np.asarray(s.attention_time)
        with np.errstate(divide="ignore", invalid="ignore"):  # no attention FLOPs: no limit
            attn_ratio = np.where(attn > 0, np.asarray(s.kv_time) / attn, np.inf)
        ratio = np.minimum(ratio, attn_ratio)
    return _out(np.maximum(ratio - 1.0, 0.0) * np.asarray(s.batch))


# ----- the long-context price step read as a roofline crossover ------------------------------

def kv_to_compute_ratio(context, active_params, kv_bytes_per_token, ops_per_byte):
    """Per sequence at a batch that amortises the weights: KV-read time over compute time per
    output token, ``S b_kv W^-1 / (2 N_act C^-1) = S b_kv R / (2 N_act)`` (``R = C / W``)."""
    context = np.asarray(context, dtype=float)
    return _out(context * kv_bytes_per_token * ops_per_byte / (2.0 * active_params))


def price_step_context(active_params, kv_bytes_per_token, ops_per_byte):
    """Context where :func:`kv_to_compute_ratio` reaches 1: ``S = 2 N_act / (R b_kv)``; beyond
    it cost per output token grows with context (where a long-context price step belongs)."""
    return _out(2.0 * active_params / (kv_bytes_per_token * ops_per_byte))


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("batching_cost", "critical batch",
               r"B^* = I^* \frac{b_w}{2} \frac{N_\text{tot}}{N_\text{mm}}",
               "DeepSeek-V3, H100, fp8 (every expert touched at this batch)",
               lambda lm: lm.critical_batch(lm.model("DeepSeek-V3"), lm.chip("H100-SXM"),
                                            weight_bytes=1, dtype="fp8"),
               lambda b: f"{b:,.0f} sequences",
               by_formula=lambda lm: lm.chip("H100-SXM").ops_per_byte("fp8") * 1 / 2
               * (m := lm.model("DeepSeek-V3")).total_params / m.matmul_params_active),
    SummaryRow("batching_cost", "cost floor per token",
               r"2 N_\text{mm}\, p / C\ \text{per token}",
               "Llama 3 70B, H100 at its catalogue price",
               lambda lm: lm.moe.compute_cost_per_million_tokens(
                   lm.model("Llama-3-70B").matmul_params_active, lm.chip("H100-SXM")),
               lambda c: f"{fmt_usd(c)} per million tokens",
               by_formula=lambda lm: 1e6 * 2 * lm.model("Llama-3-70B").matmul_params_active
               * ((c := lm.chip("H100-SXM")).price_per_hour / 3600) / c.peak("bf16")),
)
