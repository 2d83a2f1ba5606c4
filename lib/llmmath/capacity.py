"""Memory capacity: what a replica holds, whether it fits, and the limits HBM sets.

``memory_held`` and ``fits_in_memory`` (the one "fits in HBM" rule), the largest batch
(``max_batch``) and context (``max_context``) that fit, the fewest chips that hold a
configuration (``min_chips``) and the time to read a chip's HBM once (``drain_time``).
All experts of an MoE model are stored.
"""

from __future__ import annotations

import numpy as np

from ._check import MAX_CHIPS, fraction, positive, whole_count
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow

__all__ = ["memory_held", "fits_in_memory", "max_batch", "max_context", "min_chips", "drain_time"]

def memory_held(model, batch, context, weight_bytes=2, kv_bytes=2):
    """Bytes a replica holds: every weight (all experts) plus ``batch`` KV caches of ``context``.

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
            f"n_chips, weight_bytes, memory_fraction: got n_chips={float(np.min(n_chips)):g}; "
            f"the {model.name} weights alone "
            f"({float(np.max(weights)) / 1e9:.4g} GB at {float(np.max(weight_bytes)):g} B/weight) "
            f"do not fit; at least {int(np.max(need))} x {chip.name} are needed "
            f"(memory_fraction={float(np.min(memory_fraction)):g})"
        )
    return budget - weights


def max_batch(model, chip, context, n_chips=1, weight_bytes=2, kv_bytes=2, memory_fraction=1.0):
    """Largest whole batch whose weights and KV caches fit in ``n_chips`` chips' HBM.

    ``B_max = floor((n M mu - N_tot b_w) / kv_held(S))`` with ``M`` the chip capacity and
    ``mu = memory_fraction`` (leave room for activations and fragmentation). All experts of an
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
    return whole_count(b, "context, n_chips, weight_bytes, kv_bytes, memory_fraction", "the batch")


def max_context(model, chip, batch, n_chips=1, weight_bytes=2, kv_bytes=2, memory_fraction=1.0,
                kv_fraction=None, kv_replicas=1):
    """Longest context (whole tokens) at which ``batch`` sequences' KV caches fit.

    The KV budget is ``n M mu - N_tot b_w`` (what the weights leave), or, with
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
    elem = model.kv_row_bytes(kv_bytes)
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
    return whole_count(s, "batch, n_chips, weight_bytes, kv_bytes, memory_fraction, kv_fraction, "
                       "kv_replicas", "the context")


def min_chips(model, chip, batch=0, context=0, weight_bytes=2, kv_bytes=2, memory_fraction=1.0):
    """Fewest chips whose HBM holds the weights plus ``batch`` KV caches of ``context`` tokens.

    ``n_min = ceil((N_tot b_w + B kv_held(S)) / (M mu))``.
    """
    memory_fraction = fraction("memory_fraction", memory_fraction)
    need = memory_held(model, batch, context, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    n = np.maximum(np.ceil(need / (chip.hbm_capacity * memory_fraction) * (1 - 1e-12)), 1)
    if np.any(n > MAX_CHIPS):
        raise ValueError(
            f"batch, context, weight_bytes, kv_bytes, memory_fraction: {model.name} would need "
            f"{float(np.max(n)):.3g} x {chip.name}, more chips than any machine ({MAX_CHIPS:,})")
    return whole_count(n, "batch, context, weight_bytes, kv_bytes, memory_fraction", "the chips")


def drain_time(chip):
    """Seconds to read a chip's whole HBM once: ``M / W`` (about 20 ms on most HBM parts)."""
    return chip.drain_time


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("kv_cache", "critical context", r"S^* = \frac{2 N_\text{mm}}{I^* b_\text{kv} - a}",
               "Llama 3 70B, H100, bf16 cache",
               lambda lm: lm.critical_context(lm.model("Llama-3-70B"), lm.chip("H100-SXM")),
               lambda s: f"{s:,.0f} tokens",
               by_formula=lambda lm: 2 * (m := lm.model("Llama-3-70B")).matmul_params_active
               / (lm.chip("H100-SXM").ops_per_byte("bf16") * m.kv_bytes_per_token(2)
                  - 4 * m.n_heads * m.head_dim * m.n_layers)),
    SummaryRow("kv_cache", "largest batch that fits",
               r"B_\text{max} = \left\lfloor\frac{n M - N_\text{tot} b_w}{S b_\text{kv}}"
               r"\right\rfloor",
               "Llama 3 70B, 8 H100s, S = 8,192",
               lambda lm: lm.max_batch(lm.model("Llama-3-70B"), lm.chip("H100-SXM"), context=8192,
                                       n_chips=8), lambda b: f"{b:,.0f} sequences",
               by_formula=lambda lm: ((8 * lm.chip("H100-SXM").hbm_capacity
                                       - (m := lm.model("Llama-3-70B")).total_params * 2)
                                      // (8192 * m.kv_bytes_per_token(2)))),
)
