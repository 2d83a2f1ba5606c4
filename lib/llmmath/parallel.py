"""Communication and memory when one model spans many chips.

Collective times follow Pope et al. (2022, App. A.1) for a bandwidth-bound network: an
all-gather over ``n`` chips whose output is ``D`` bytes per chip takes ``D/bw (n-1)/n``; a
reduce-scatter the same with ``D`` the (larger) per-chip input; an all-reduce is both, twice
the time. ``bw`` is the per-chip, one-direction bandwidth (``Chip.scale_up_bandwidth``).
Latency per hop and topology effects are left out, so every time here is a lower bound.

All sizes in bytes, bandwidths in bytes/s, times in seconds; arguments broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out

__all__ = [
    "all_gather_time",
    "reduce_scatter_time",
    "all_reduce_time",
    "all_to_all_time",
    "tensor_parallel_comm_time",
    "expert_parallel_comm_time",
    "PipelineMemory",
    "pipeline_memory_per_chip",
    "scaleup_vs_scaleout_ratio",
    "FFN_LAYOUTS",
    "ffn_comm_time",
]


def _frac(n):
    return (n - 1.0) / n


def all_gather_time(bytes_per_chip_out, n, bandwidth):
    """All-gather: every chip ends with the full ``D`` bytes: ``T = D/bw x (n-1)/n``."""
    d = positive("bytes_per_chip_out", bytes_per_chip_out, allow_zero=True)
    n = positive("n", n)
    bw = positive("bandwidth", bandwidth)
    return _out(d / bw * _frac(n))


def reduce_scatter_time(bytes_per_chip_in, n, bandwidth):
    """Reduce-scatter of ``D`` input bytes per chip into ``D/n`` each: ``T = D/bw x (n-1)/n``."""
    d = positive("bytes_per_chip_in", bytes_per_chip_in, allow_zero=True)
    n = positive("n", n)
    bw = positive("bandwidth", bandwidth)
    return _out(d / bw * _frac(n))


def all_reduce_time(bytes_per_chip, n, bandwidth):
    """All-reduce = reduce-scatter + all-gather: ``T = 2 D/bw x (n-1)/n``."""
    return _out(2.0 * np.asarray(reduce_scatter_time(bytes_per_chip, n, bandwidth)))


def all_to_all_time(bytes_per_chip, n, bandwidth):
    """All-to-all: each chip sends the ``(n-1)/n`` of its ``D`` bytes meant for others: ``T = D/bw x (n-1)/n``."""
    d = positive("bytes_per_chip", bytes_per_chip, allow_zero=True)
    n = positive("n", n)
    bw = positive("bandwidth", bandwidth)
    return _out(d / bw * _frac(n))


def tensor_parallel_comm_time(model, tokens, n_chips, bandwidth, activation_bytes=2):
    """Megatron-style (1D) tensor-parallel communication for one forward pass over ``tokens``.

    Each layer all-reduces its ``tokens x D`` activations after attention and after the MLP
    (one all-reduce per layer for a parallel attention/MLP block, as in PaLM):
    ``T = L x n_ar x 2 (T D b_a)/bw x (n-1)/n``. For decode, ``tokens`` is the batch.
    """
    n_chips = n_chips_check(n_chips)
    tokens = positive("tokens", tokens)
    activation_bytes = positive("activation_bytes", activation_bytes)
    per_layer = 1 if model.parallel_block else 2
    t = all_reduce_time(tokens * model.d_model * activation_bytes, n_chips, bandwidth)
    return _out(model.n_layers * per_layer * np.asarray(t))


def expert_parallel_comm_time(model, tokens, n_chips, bandwidth, activation_bytes=2):
    """Expert-parallel all-to-all time for one forward pass over ``tokens`` (all MoE layers).

    Tokens are spread evenly, ``tokens/n`` per chip; each is sent to its ``k`` experts
    (dispatch) and the ``k`` results come back (combine):
    per layer ``2 x all_to_all(tokens k D b_a / n)``, times the number of MoE layers.
    Uniform routing is assumed; a hot expert makes it slower. Zero for a dense model.
    """
    tokens = positive("tokens", tokens)
    n_chips = n_chips_check(n_chips)
    activation_bytes = positive("activation_bytes", activation_bytes)
    if not model.is_moe:
        return _out(0.0 * tokens * n_chips)
    per_chip = tokens * model.experts_per_token * model.d_model * activation_bytes / n_chips
    return _out(model.n_moe_layers * 2.0 * np.asarray(all_to_all_time(per_chip, n_chips, bandwidth)))


@dataclass(frozen=True)
class PipelineMemory:
    """HBM per chip (bytes) with ``expert_parallel`` chips per stage and ``pipeline_stages`` stages."""

    weights: float | np.ndarray
    kv: float | np.ndarray
    total: float | np.ndarray
    batch_in_flight: float | np.ndarray


def pipeline_memory_per_chip(model, micro_batch, context, expert_parallel, pipeline_stages,
                             weight_bytes=2, kv_bytes=2):
    """Memory per chip for pipelined decode (the episode's capacity argument).

    Keeping ``P`` stages busy needs ``P`` micro-batches of ``b`` sequences in flight, so
    ``c = (N_tot b_w + P b kv_held(S)) / (E P) = N_tot b_w / (E P) + b kv_held(S) / E``:
    pipelining divides the weights by ``P`` but **not** the KV cache.
    """
    micro_batch = positive("micro_batch", micro_batch)
    E = positive("expert_parallel", expert_parallel)
    P = positive("pipeline_stages", pipeline_stages)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    w = model.total_params * weight_bytes / (E * P)
    kv = micro_batch * model.kv_cache_bytes(context, kv_bytes) / E
    return PipelineMemory(_out(w), _out(kv), _out(w + kv), _out(P * micro_batch))


def scaleup_vs_scaleout_ratio(experts_per_token, layers_per_stage, scale_out_over_up=1 / 8):
    """Scale-up (inside a rack) over scale-out (between racks) time for a pipeline cut.

    Per token, each of the stage's layers all-to-alls ``k`` activation copies out and back
    over scale-up; one activation crosses the stage boundary over scale-out. With scale-out
    ``1/8`` of scale-up (the episode's figure):
    ``t_up / t_out = (bw_out / bw_up) x k x layers_per_stage x 2``. At >= 1 the cut between
    racks is not the bottleneck. ``experts_per_token`` may be a Model (dense counts as 1).
    """
    if hasattr(experts_per_token, "experts_per_token"):
        experts_per_token = experts_per_token.experts_per_token or 1
    k = positive("experts_per_token", experts_per_token)
    layers = positive("layers_per_stage", layers_per_stage)
    r = positive("scale_out_over_up", scale_out_over_up)
    return _out(r * k * layers * 2.0)


FFN_LAYOUTS = ("1d-ws", "2d-ws", "wg-x", "wg-xy", "wg-xyz", "wg-opt")


def ffn_comm_time(layout, tokens, d_model, d_ff, n_chips, bandwidth, activation_bytes=2,
                  weight_bytes=2, axes=None, x=None):
    """Communication time of one feed-forward layer under Pope et al. (2022) layouts (§3.2, App. A.2).

    ``tokens`` is ``B L`` (batch x sequence length in the pass), ``E = d_model``, ``F = d_ff``,
    ``bw`` per-chip bandwidth; activations are ``b_a`` and weights ``b_w`` bytes/element.

    - ``"1d-ws"`` (Megatron, shard F): ``2 T E b_a / bw``, independent of chip count.
    - ``"2d-ws"`` (``E_x F_yz``): ``(2 T b_a / bw)(E/X + F/(YZ))``; with ``x=None`` at the
      optimum ``X = sqrt(n E / F)``: ``4 T b_a sqrt(E F) / (sqrt(n) bw)``, which is
      ``8 T E b_a / (sqrt(n) bw)`` for ``F = 4E``.
    - ``"wg-x"``, ``"wg-xy"``, ``"wg-xyz"`` (weight-gathered over ``N`` = X, XY or XYZ chips):
      ``2 E F b_w N / (n bw) + 2 T E b_a / (N bw)``; ``axes=(X, Y, Z)`` (default: a cube).
    - ``"wg-opt"``: the best ``N = sqrt(T n b_a / (F b_w))``, giving
      ``4 E sqrt(T F b_a b_w) / (sqrt(n) bw)`` (``4 E sqrt(T F) b / (sqrt(n) bw)`` at equal bytes).

    Compute overlap is ignored; choose WS for few tokens (decode) and WG for many (prefill).
    """
    choice("layout", layout, FFN_LAYOUTS)
    T = positive("tokens", tokens)
    E = positive("d_model", d_model)
    F = positive("d_ff", d_ff)
    n = n_chips_check(n_chips)
    bw = positive("bandwidth", bandwidth)
    ba = positive("activation_bytes", activation_bytes)
    bw_w = positive("weight_bytes", weight_bytes)
    if layout == "1d-ws":
        return _out(2.0 * T * E * ba / bw * np.ones_like(n))
    if layout == "2d-ws":
        if x is None:
            return _out(4.0 * T * ba * np.sqrt(E * F) / (np.sqrt(n) * bw))
        x = positive("x", x)
        return _out(2.0 * T * ba / bw * (E / x + F / (n / x)))
    if layout == "wg-opt":
        return _out(4.0 * E * np.sqrt(T * F * ba * bw_w) / (np.sqrt(n) * bw))
    if axes is None:
        side = np.cbrt(n)
        if np.any(np.abs(side - np.round(side)) > 1e-9):
            raise ValueError(f"axes: n_chips={n!r} is not a cube; pass axes=(X, Y, Z) for layout {layout!r}")
        axes = (side, side, side)
    X, Y, Z = (positive(f"axes[{i}]", a) for i, a in enumerate(axes))
    if np.any(np.abs(np.asarray(X) * Y * Z - n) > 1e-9 * np.asarray(n)):
        raise ValueError(f"axes: got {axes!r}; X*Y*Z must equal n_chips={n!r}")
    N = {"wg-x": X, "wg-xy": X * Y, "wg-xyz": X * Y * Z}[layout]
    return _out(2.0 * E * F * bw_w * N / (n * bw) + 2.0 * T * E * ba / (N * bw))
