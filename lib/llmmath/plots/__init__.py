"""Figure builders with one house style. Every chapter figure comes from here.

Each builder takes the model, chip and workload as arguments (a chip or model by name or
object) and returns a :class:`BookFigure`, so a reader can rebuild any
figure for their own hardware; given ``ax=`` it draws into that Axes instead. The house style
(``llmmath.plots.style``) is applied by the builders themselves: readable on a phone, a
colour-blind-safe palette (Okabe and Ito 2008) with one colour per role, an opaque white
background that stays legible in the site's dark mode, labelled axes with units, log axes where
a quantity spans decades, and annotations on the point the text talks about.

Every figure a builder returns has:

- ``fig.alt_text``: one sentence saying what the figure shows, with its key numbers;
- ``fig.numbers``: those numbers (dict), computed by the calls the drawing uses;
- ``fig.update(**changes)``: redraw the same figure with some arguments changed, in place
  (used by :mod:`llmmath.widgets` and :mod:`llmmath.frames`).

Inside the library all quantities are SI; axes show human units through :mod:`llmmath.units`.
Where a chip lacks the requested ``dtype`` a builder uses :meth:`~llmmath.chips.Chip.resolve_dtype`
and says so in the title; a context beyond the model's window is capped by
:meth:`~llmmath.models.Model.cap_context`; prices come from :func:`~llmmath.cost.chip_hour_price`.

Layout: ``style`` (palette, roles, rcParams), ``labels`` (tick formatters, label placement),
``figure`` (``BookFigure``, the ``builder`` decorator, ``render_rgba``), and one module per
figure family: ``hardware``, ``counting``, ``decode``, ``cost``, ``kv``, ``prefill``,
``parallel``, ``moe``, ``pipeline``, ``partition``, ``estimate``, ``training``, ``lifetime``,
``tradeoffs``.
"""

from __future__ import annotations

from .cost import cost_vs_batch, latency_cost_frontier
from .counting import (
                       attention_crossover,
                       attention_flops_share,
                       kv_per_token,
                       param_breakdown,
                       param_parts,
)
from .decode import (
                       decode_time_vs_batch,
                       decode_time_vs_context,
                       regime_map,
                       speculative_gain_vs_batch,
)
from .estimate import calibration_scatter, estimate_vs_batch, estimate_waterfall
from .figure import BookFigure, render_rgba
from .hardware import (
                       capacity_vs_bandwidth,
                       chip_balance,
                       flops_vs_bandwidth,
                       matmul_on_roofline,
                       matmul_throughput_vs_batch,
                       roofline,
                       roofline_measured,
                       roofline_of_this_machine,
)
from .kv import kv_balance_vs_context, kv_vs_context
from .labels import label_si
from .lifetime import (
                       lifetime_cost_vs_params,
                       loss_gap_vs_overtraining,
                       overtraining_map,
                       overtraining_vs_decode_efficiency,
)
from .moe import all_to_all_vs_chips, domain_capacity, ep_memory_per_chip, imbalance_vs_chips
from .parallel import memory_per_chip, moe_weights_vs_batch
from .partition import (
                       collective_time_vs_bytes,
                       ffn_layouts_vs_tokens,
                       latency_cost_vs_chips,
                       tp_step_vs_chips,
)
from .pipeline import (
                       boundary_ratio_vs_layers,
                       bubble_vs_microbatches,
                       decode_latency_vs_stages,
                       pipeline_memory_vs_stages,
                       pipeline_schedule,
)
from .prefill import (
                       cache_cost_vs_lifetime,
                       io_cost_ratio_vs_batch,
                       prefill_time_vs_prompt,
                       prefill_vs_decode_per_token,
                       price_step_vs_context,
                       tier_drain_times,
)
from .style import (
                       CYCLE,
                       KIND_COLOUR,
                       NOFIT,
                       PALETTE,
                       PHONE,
                       ROLE,
                       STYLE,
                       chip_colour,
                       house_style,
                       model_colour,
                       offscreen,
                       series_colour,
                       setup_notebook,
)
from .tradeoffs import (
                       checkpoint_memory_vs_depth,
                       hold_time_by_tier,
                       recompute_intensity_vs_ridge,
                       store_vs_recompute,
)
from .training import (
                       attention_share_vs_seq,
                       dp_sync_vs_tokens,
                       training_time_vs_chips,
                       zero_memory_vs_chips,
)

__all__ = [
    # house style and figures
    "PALETTE", "CYCLE", "ROLE", "KIND_COLOUR", "NOFIT", "STYLE", "PHONE", "series_colour",
    "chip_colour", "model_colour",
    "house_style", "setup_notebook", "offscreen", "label_si",
    "render_rgba", "BookFigure",
    # chips and the roofline
    "chip_balance", "roofline", "matmul_on_roofline", "flops_vs_bandwidth", "capacity_vs_bandwidth",
    "matmul_throughput_vs_batch", "roofline_measured", "roofline_of_this_machine",
    # counting a transformer
    "param_parts", "param_breakdown", "kv_per_token", "attention_flops_share",
    "attention_crossover",
    # decode and prefill bounds
    "decode_time_vs_batch", "decode_time_vs_context", "prefill_time_vs_prompt",
    # batching and cost
    "cost_vs_batch", "latency_cost_frontier", "regime_map", "speculative_gain_vs_batch",
    # KV cache
    "kv_vs_context", "kv_balance_vs_context",
    # prefill against decode, API prices, memory tiers
    "prefill_vs_decode_per_token", "io_cost_ratio_vs_batch", "price_step_vs_context",
    "tier_drain_times", "cache_cost_vs_lifetime",
    # mixture of experts, pipelines, training
    "moe_weights_vs_batch", "memory_per_chip", "training_time_vs_chips",
    # chapter 11: training compute
    "attention_share_vs_seq", "zero_memory_vs_chips", "dp_sync_vs_tokens",
    # chapter 7: experts across a scale-up domain
    "domain_capacity", "all_to_all_vs_chips", "imbalance_vs_chips", "ep_memory_per_chip",
    # chapter 8: pipelining
    "pipeline_schedule", "bubble_vs_microbatches", "pipeline_memory_vs_stages",
    "decode_latency_vs_stages", "boundary_ratio_vs_layers",
    # chapter 9: partitioning a model
    "collective_time_vs_bytes", "tp_step_vs_chips", "ffn_layouts_vs_tokens",
    "latency_cost_vs_chips",
    # chapter 10: from bound to estimate
    "estimate_waterfall", "calibration_scatter", "estimate_vs_batch",
    # chapter 12: over-training beyond compute-optimal
    "lifetime_cost_vs_params", "overtraining_vs_decode_efficiency", "overtraining_map",
    "loss_gap_vs_overtraining",
    # chapter 13: spending memory to save compute
    "store_vs_recompute", "recompute_intensity_vs_ridge", "checkpoint_memory_vs_depth",
    "hold_time_by_tier",
]
