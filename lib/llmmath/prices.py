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

from ._check import positive
from ._check import scalar_or_array as _out

__all__ = ["PriceSheet", "PRICE_SHEETS", "kv_bytes_from_price_step"]


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
