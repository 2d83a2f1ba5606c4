"""API price sheets, and what their steps reveal about a model's KV cache.

A provider's prices are data (``PRICE_SHEETS``, USD per million tokens as published on a
date, each with its source). Read against the roofline they say something about the model
behind them: output tokens (decode, memory-bound) cost several times input tokens (prefill,
compute-bound), cached input costs a fraction of fresh input, and a price step at a long
context marks where decode turns memory-bound at every batch, which reveals the KV bytes per
token (:func:`kv_bytes_from_price_step`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .units import fmt_bytes, fmt_time

__all__ = ["PriceSheet", "PRICE_SHEETS", "DEEPINFRA_LLAMA33_70B", "DEEPSEEK_FLEET_2025",
           "EPISODE_RACK", "EPISODE_OUTPUT_INPUT_RATIO", "EPISODE_PRICE_STEP",
           "kv_bytes_from_price_step", "kv_bytes_from_price_ratio"]


# ----- price sheets ----------------------------------------------------------------------------

@dataclass(frozen=True)
class PriceSheet:
    """One model's API prices, USD per million tokens, as published on ``date`` (YYYY-MM)."""

    model: str
    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None  # 5-minute cache write, where priced separately
    long_context: int | None = None  # prompt length above which the long-context prices apply
    long_input: float | None = None
    long_output: float | None = None
    date: str = ""
    source: str = ""

    @property
    def output_to_input(self) -> float:
        return self.output / self.input

    @property
    def cached_to_input(self):
        return None if self.cached_input is None else self.cached_input / self.input


PRICE_SHEETS = [
    PriceSheet("Gemini 3.1 Pro", input=2.0, output=12.0, cached_input=0.20, long_context=200_000,
               long_input=4.0, long_output=18.0, date="2026-03",
               source="glbgpt2026gemini31,laozhang2026gemini31,cloudprice2026gemini31"),
    PriceSheet("Claude Opus (4.x)", input=5.0, output=25.0, cached_input=0.50, cache_write=6.25,
               date="2026-06", source="anthropic_prompt_caching"),
    PriceSheet("GPT-5.5", input=5.0, output=30.0, cached_input=0.50, date="2026-06",
               source="morph2026openaipricing"),
    PriceSheet("GPT-5.4", input=2.5, output=15.0, cached_input=0.25, date="2026-06",
               source="morph2026openaipricing"),
]


#: Llama 3.3 70B Instruct served in FP8 by one provider [deepinfra_llama33]; the page's date
#: could not be verified, so the batching chapter treats it as an order of magnitude. Kept out of
#: ``PRICE_SHEETS`` (the frontier labs' own sheets).
DEEPINFRA_LLAMA33_70B = PriceSheet("Llama 3.3 70B Instruct (FP8, DeepInfra)", input=0.13,
                                   output=0.38, source="deepinfra_llama33")

#: One day of DeepSeek's V3/R1 service, March 2025 [deepseek2025inference]: decode units of
#: 18 H800 nodes of 8 GPUs, about 14.8k output tokens/s per node at 20-22 tokens/s per user,
#: GPUs costed at USD 2 per hour, R1 output listed at USD 2.19 per million tokens, and a
#: "theoretical" cost-profit margin of 545%.
DEEPSEEK_FLEET_2025 = {
    "decode_unit_nodes": 18,
    "gpus_per_node": 8,
    "node_output_tokens_per_s": 14.8e3,
    "user_tokens_per_s": (20.0, 22.0),
    "gpu_price_per_hour": 2.0,
    "r1_output_price_per_million": 2.19,
    "theoretical_margin": 5.45,
}

#: The episode's round version of a rack serving a sparse model at its efficient batch: about
#: 2,000 sequences at 64 steps per second [dwarkesh2026pope].
EPISODE_RACK = {"sequences": 2000, "steps_per_second": 64}

#: The episode's output/input price ratio, "3-5x" [dwarkesh2026pope].
EPISODE_OUTPUT_INPUT_RATIO = (3.0, 5.0)

#: The episode's reading of a long-context price step: a guess of 100B active parameters and 300
#: multiply-adds (600 FLOP) per byte [dwarkesh2026pope].
EPISODE_PRICE_STEP = {"active_params": 100e9, "ops_per_byte": 600}


# ----- reading a price step --------------------------------------------------------------------

def kv_bytes_from_price_step(active_params, context, ops_per_byte):
    """KV bytes per token at which a decode step's KV traffic equals its compute at ``context``.

    At large batch the weights are amortised, so per sequence and step the KV read
    ``S b_kv / W`` balances the compute ``2 N_act / C`` when ``b_kv = 2 N_act / (R S)``, with
    ``R = C / W`` the chip's FLOP per byte. Read backwards, a price step at context ``S`` (the
    provider's crossover) reveals ``b_kv``. The episode's ``N_act / (300 S)`` is this with
    ``R = 600`` FLOP/byte (300 multiply-adds per byte): a Blackwell GPU in fp8 (GB200: 625).
    It is the inverse of :func:`llmmath.roofline.critical_context` for dense attention
    (:func:`llmmath.roofline.implied_kv_bytes_per_token` takes the ratio from a chip).
    """
    n = positive("active_params", active_params)
    s = positive("context", context)
    r = positive("ops_per_byte", ops_per_byte)
    return _out(2.0 * n / (r * s))


def kv_bytes_from_price_ratio(active_params, context, ops_per_byte, price_ratio, overlap="step"):
    """KV bytes per token at which long-context decode costs ``price_ratio`` x short-context decode.

    A price step says more than where cost starts rising: it says by how much (Gemini 3.1 Pro's
    output price rises 1.5x past 200k tokens). At large batch one sequence's step costs, per
    unit of ``2 N_act / C``, ``max(1, x)`` under whole-step overlap and ``1 + x`` under
    per-operation overlap, with ``x = S b_kv R / (2 N_act)`` the KV read time over the compute
    time (attention's own FLOPs left out). Setting that cost to ``price_ratio`` at ``S``:

    - ``overlap="step"``: ``x = price_ratio``, so ``b_kv = price_ratio x 2 N_act / (R S)``
      (``price_ratio = 1`` is :func:`kv_bytes_from_price_step`: the step sits at the corner);
    - ``overlap="per-op"``: ``x = price_ratio - 1``: ``b_kv = (price_ratio - 1) x 2 N_act / (R S)``
      (no corner: the cost rises from the first token of context).

    The two bracket what a real engine, between the two overlaps, implies.
    """
    b = kv_bytes_from_price_step(active_params, context, ops_per_byte)
    ratio = positive("price_ratio", price_ratio)
    choice("overlap", overlap, ("step", "per-op"))
    if np.any(np.asarray(ratio) < 1):
        raise ValueError(f"price_ratio: got {float(np.min(ratio)):g}; a price step is >= 1 "
                         "(the long-context price over the short-context one)")
    if overlap == "step":
        return _out(np.asarray(b) * ratio)
    if np.any(np.asarray(ratio) == 1):
        raise ValueError("price_ratio: got 1 under overlap='per-op'; without a corner a flat price "
                         "implies no KV bytes at all (give a ratio > 1)")
    return _out(np.asarray(b) * (ratio - 1.0))


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("prefill_prices", "KV bytes read from a price step",
               r"b_\text{kv} = \frac{2 N_\text{act}}{I^* S}\ \text{at the step}",
               "100B active, step at 200k tokens, I* = 600",
               lambda lm: lm.prices.kv_bytes_from_price_step(100e9, 200_000, 600), fmt_bytes,
               by_formula=lambda lm: 2 * 100e9 / (600 * 200_000)),
    SummaryRow("prefill_prices", "cache tier knee (hold vs read)",
               r"\text{cost} = b\, p_\text{tier} \max\left(\frac{t}{M_\text{tier}}, "
               r"\frac{1}{W_\text{tier}}\right):\ \text{knee at}\ "
               r"t = M_\text{tier} / W_\text{tier}",
               "a 30 TB flash drive's drain time",
               lambda lm: lm.memory.MEMORY_TIERS["flash"].drain_time, fmt_time,
               by_formula=lambda lm: (f := lm.memory.MEMORY_TIERS["flash"]).capacity
               / f.bandwidth),
)
