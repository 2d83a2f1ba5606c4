"""Communication and memory when one model spans many chips.

Collective times follow Pope et al. (2022, App. A.1) for a bandwidth-bound network: an
all-gather over ``n`` chips whose output is ``D`` bytes per chip takes ``D/bw (n-1)/n``; a
reduce-scatter the same with ``D`` the (larger) per-chip input; an all-reduce is both, twice
the time. ``bw`` is the per-chip, one-direction bandwidth (``Chip.scale_up_bandwidth``).
By default latency per step and topology are left out, so every time is a lower bound: the
defaults ``hop_latency=0``, ``topology="switch"`` and ``algorithm=None`` (the topology's own, direct
on a switch) are Pope et al.'s bandwidth-only model (App. A.1). Pass ``hop_latency`` (measured
values in :data:`llmmath.collectives.STEP_LATENCIES`), ``topology`` and ``algorithm`` (ring, tree,
one-shot: :data:`llmmath.collectives.ALGORITHMS`) to add the alpha-beta model of
:mod:`llmmath.collectives`; a headline that uses them says which it used.

All sizes in bytes, bandwidths in bytes/s, times in seconds; arguments broadcast.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .collectives import collective_steps, collective_time
from .units import fmt_time

__all__ = [
    "all_gather_time",
    "reduce_scatter_time",
    "all_reduce_time",
    "all_to_all_time",
    "tensor_parallel_layer_comm_time",
    "tensor_parallel_comm_time",
    "expert_parallel_comm_time",
    "KV_SHARDINGS",
    "KV_SHARD_CHOICES",
    "kv_replicas",
    "ShardedDecode",
    "sharded_decode",
    "best_tensor_parallel",
    "ring_optimal_chips",
    "PipelineMemory",
    "pipeline_memory_per_chip",
    "scaleup_vs_scaleout_ratio",
    "FFN_LAYOUTS",
    "ffn_comm_time",
]


def _frac(n):
    return (n - 1.0) / n


def _collective(kind, name, d, n, bandwidth, hop_latency, topology, dims, algorithm=None):
    d = positive(name, d, allow_zero=True)
    n = positive("n_chips", n)
    bw = positive("bandwidth", bandwidth)
    if (topology == "switch" and dims is None and algorithm is None
            and type(hop_latency) in (int, float) and hop_latency == 0):
        f = _frac(n)  # Pope et al.'s bandwidth-only time: the default, exactly as before
        return _out(d / bw * (2.0 * f if kind == "all-reduce" else f))
    return collective_time(kind, d, n, bw, hop_latency=hop_latency, topology=topology, dims=dims,
                           algorithm=algorithm)


def all_gather_time(bytes_per_chip_out, n_chips, bandwidth, hop_latency=0.0, topology="switch",
                    dims=None, algorithm=None):
    """All-gather: every chip ends with the full ``D`` bytes: ``T = D/bw x (n-1)/n``.

    With ``hop_latency`` (s per step), ``topology`` (``"switch"``, ``"ring"``, ``"torus"``
    with sides ``dims``) and ``algorithm`` (default the topology's own) the fixed costs of
    :func:`llmmath.collectives.collective_time` are added.
    """
    return _collective("all-gather", "bytes_per_chip_out", bytes_per_chip_out, n_chips, bandwidth,
                       hop_latency, topology, dims, algorithm)


def reduce_scatter_time(bytes_per_chip_in, n_chips, bandwidth, hop_latency=0.0, topology="switch",
                        dims=None, algorithm=None):
    """Reduce-scatter of ``D`` input bytes per chip into ``D/n`` each: ``T = D/bw x (n-1)/n``
    (plus per-step latency as in :func:`all_gather_time`)."""
    return _collective("reduce-scatter", "bytes_per_chip_in", bytes_per_chip_in, n_chips, bandwidth,
                       hop_latency, topology, dims, algorithm)


def all_reduce_time(bytes_per_chip, n_chips, bandwidth, hop_latency=0.0, topology="switch",
                    dims=None, algorithm=None):
    """All-reduce = reduce-scatter + all-gather:
    ``T = 2 D/bw x (n-1)/n`` (plus per-step latency). ``algorithm="tree"`` or ``"one-shot"``
    changes both terms (:mod:`llmmath.collectives`)."""
    return _collective("all-reduce", "bytes_per_chip", bytes_per_chip, n_chips, bandwidth,
                       hop_latency, topology, dims, algorithm)


def all_to_all_time(bytes_per_chip, n_chips, bandwidth, hop_latency=0.0, topology="switch",
                    dims=None, algorithm=None):
    """All-to-all: each chip sends the ``(n-1)/n`` of its ``D`` bytes meant for others:
    ``T = D/bw x (n-1)/n`` through a switch (more on a ring or torus, where bytes cross several
    links)."""
    return _collective("all-to-all", "bytes_per_chip", bytes_per_chip, n_chips, bandwidth,
                       hop_latency, topology, dims, algorithm)


def tensor_parallel_layer_comm_time(model, tokens, n_chips, bandwidth, activation_bytes=2,
                                    hop_latency=0.0, topology="switch", dims=None,
                                    algorithm=None):
    """Megatron-style (1D) tensor-parallel communication of **one layer** over ``tokens``:
    ``n_ar`` all-reduces of ``T D b_a`` bytes, ``n_ar = 1`` for a parallel attention/MLP block
    (PaLM), else 2 (after attention and after the MLP). Collective model as in
    :func:`all_reduce_time` (defaults: Pope et al.'s bandwidth-only switch)."""
    n_chips = n_chips_check(n_chips)
    tokens = positive("tokens", tokens)
    activation_bytes = positive("activation_bytes", activation_bytes)
    per_layer = 1 if model.parallel_block else 2
    t = all_reduce_time(tokens * model.d_model * activation_bytes, n_chips, bandwidth,
                        hop_latency=hop_latency, topology=topology, dims=dims, algorithm=algorithm)
    return _out(per_layer * np.asarray(t))


def tensor_parallel_comm_time(model, tokens, n_chips, bandwidth, activation_bytes=2,
                              hop_latency=0.0, topology="switch", dims=None, algorithm=None):
    """Megatron-style (1D) tensor-parallel communication for one forward pass over ``tokens``.

    Each layer all-reduces its ``tokens x D`` activations after attention and after the MLP
    (one all-reduce per layer for a parallel attention/MLP block, as in PaLM):
    ``T = L n_ar [sigma t_lat + phi T D b_a / bw]``, ``phi = 2(n-1)/n`` and ``sigma`` the
    all-reduce's steps on ``topology`` with ``algorithm`` (see :mod:`llmmath.collectives`). The
    ``L n_ar`` all-reduces are sequential (each waits for the matmul before it, and the next
    layer waits for it), so their fixed costs ``L n_ar sigma t_lat`` add whatever the batch.
    For decode, ``tokens`` is the batch.
    """
    t = tensor_parallel_layer_comm_time(model, tokens, n_chips, bandwidth, activation_bytes,
                                        hop_latency, topology, dims, algorithm)
    return _out(model.n_layers * np.asarray(t))


def expert_parallel_comm_time(model, tokens, n_chips, bandwidth, activation_bytes=2,
                              hop_latency=0.0, topology="switch", dims=None):
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
    t = all_to_all_time(per_chip, n_chips, bandwidth, hop_latency=hop_latency, topology=topology,
                        dims=dims)
    return _out(model.n_moe_layers * 2.0 * np.asarray(t))


@dataclass(frozen=True)
class PipelineMemory:
    """HBM per chip (bytes) with ``expert_parallel`` (or ``chips_per_stage``) chips per stage and
    ``stages`` stages: ``weights`` (all of them, ``replicated_weights`` included), ``kv``,
    ``total``; ``batch_in_flight`` sequences; ``replicated_weights`` the part of ``weights``
    every chip of a stage holds whole (``N_repl b_w / n_pp``)."""

    weights: float | np.ndarray
    kv: float | np.ndarray
    total: float | np.ndarray
    batch_in_flight: float | np.ndarray
    replicated_weights: float | np.ndarray = 0.0


def _replicated_params(model, replicated_params=None):
    """Parameters every chip of a stage (or an expert-parallel group) holds whole, ``N_repl``.

    ``None`` gives the layout the book uses for each kind of model: for an MoE, data-parallel
    attention with expert parallelism, where everything but the routed experts is replicated
    (``N_tot - L_moe E N_exp``: attention, dense layers, shared experts, routers, embeddings;
    it is this layout that lets each chip keep whole caches of its own sequences, so that the
    cache divides by the chips); for a dense model, tensor parallelism, where every weight
    divides (0). Pass a count to choose another layout (0: every weight divides).
    """
    if replicated_params is None:
        if model.is_moe:
            return float(model.total_params
                         - model.n_moe_layers * model.n_experts * model.expert_params)
        return 0.0
    r = positive("replicated_params", replicated_params, allow_zero=True)
    if np.any(np.asarray(r) > model.total_params):
        raise ValueError(f"replicated_params: got {replicated_params!r}; at most the model's "
                         f"{model.total_params:,} parameters")
    return r


def pipeline_memory_per_chip(model, micro_batch, context, expert_parallel, stages,
                             weight_bytes=2, kv_bytes=2, replicated_params=None):
    """Memory per chip for pipelined decode (the episode's capacity argument).

    Keeping ``P`` stages busy needs ``P`` micro-batches of ``b`` sequences in flight, so with
    ``E`` chips per stage::

        c = N_repl b_w / P + (N_tot - N_repl) b_w / (E P) + b kv_held(S) / E

    ``N_repl`` (``replicated_params``, default: an MoE's non-expert
    weights under data-parallel attention, 0 for a dense model) is held whole by every chip of
    a stage; the rest divides over the ``E P`` chips. Pipelining divides the weights by ``P``
    but **not** the KV cache.
    """
    micro_batch = positive("micro_batch", micro_batch)
    E = positive("expert_parallel", expert_parallel)
    P = positive("stages", stages)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    repl = _replicated_params(model, replicated_params)
    rep = repl * weight_bytes / P
    w = rep + (model.total_params - repl) * weight_bytes / (E * P)
    kv = micro_batch * model.kv_cache_bytes(context, kv_bytes) / E
    return PipelineMemory(_out(w), _out(kv), _out(w + kv), _out(P * micro_batch),
                          _out(rep + 0.0 * w))


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
                  weight_bytes=2, axes=None, x=None, n_mats=2):
    """Communication time of one feed-forward layer under Pope et al. (2022) layouts (§3.2, App.
    A.2).

    ``tokens`` is ``T_b`` (batch x sequence length in the pass), ``D = d_model``, ``F = d_ff``,
    ``bw`` per-chip bandwidth; activations are ``b_a`` and weights ``b_w`` bytes/element;
    ``n_mats`` the layer's ``D x F`` weight matrices, which only the weight gathers move. Its
    default, 2 (``W_in``, ``W_out``), is what Pope et al.'s closed forms assume; a gated MLP
    (SwiGLU, GeGLU: PaLM, Llama) has 3 (``Model.gated_mlp``).

    - ``"1d-ws"`` (Megatron, shard F): ``2 T D b_a / bw``, independent of chip count.
    - ``"2d-ws"`` (``D_x F_yz``): ``(2 T b_a / bw)(D/X + F/(YZ))``; with ``x=None`` at the
      optimum ``X = sqrt(n D / F)``: ``4 T b_a sqrt(D F) / (sqrt(n) bw)``, which is
      ``8 T D b_a / (sqrt(n) bw)`` for ``F = 4D``.
    - ``"wg-x"``, ``"wg-xy"``, ``"wg-xyz"`` (weight-gathered over ``n_wg`` = X, XY or XYZ chips):
      each chip keeps ``1/n`` of every matrix and all-gathers ``n_wg/n`` of them before the layer,
      ``n_mats D F b_w n_wg / (n bw)``; the tokens split ``n_wg`` ways, and each chip's
      ``T/n_wg`` tokens are all-gathered in and reduce-scattered out over the other ``n/n_wg``
      chips, ``2 T D b_a / (n_wg bw)`` (the ``(k-1)/k`` factors taken as 1, as Pope et al. do);
      ``axes=(X, Y, Z)`` (default: a cube).
    - ``"wg-opt"``: the best ``n_wg = sqrt(2 T n b_a / (n_mats F b_w))``, giving
      ``2 D sqrt(2 n_mats T F b_a b_w) / (sqrt(n) bw)`` (``4 D sqrt(T F b_a b_w) / (sqrt(n) bw)``
      for two matrices).

    The weight-stationary terms are Pope et al.'s two-matrix forms whatever ``n_mats`` is: a
    gated MLP's gate also passes through 2D's first reduce-scatter, which they leave out.
    Compute overlap is ignored; choose WS for few tokens (decode) and WG for many (prefill).
    """
    choice("layout", layout, FFN_LAYOUTS)
    T = positive("tokens", tokens)
    D = positive("d_model", d_model)
    F = positive("d_ff", d_ff)
    n = n_chips_check(n_chips)
    bw = positive("bandwidth", bandwidth)
    ba = positive("activation_bytes", activation_bytes)
    bw_w = positive("weight_bytes", weight_bytes)
    mats = positive("n_mats", n_mats, integer=True)
    if layout == "1d-ws":
        return _out(2.0 * T * D * ba / bw * np.ones_like(n))
    if layout == "2d-ws":
        if x is None:
            return _out(4.0 * T * ba * np.sqrt(D * F) / (np.sqrt(n) * bw))
        x = positive("x", x)
        return _out(2.0 * T * ba / bw * (D / x + F / (n / x)))
    if layout == "wg-opt":
        return _out(2.0 * D * np.sqrt(2.0 * mats * T * F * ba * bw_w) / (np.sqrt(n) * bw))
    if axes is None:
        side = np.cbrt(n)
        if np.any(np.abs(side - np.round(side)) > 1e-9):
            raise ValueError(f"axes: n_chips={n!r} is not a cube; pass "
                             f"axes=(X, Y, Z) for layout {layout!r}")
        axes = (side, side, side)
    X, Y, Z = (positive(f"axes[{i}]", a) for i, a in enumerate(axes))
    if np.any(np.abs(np.asarray(X) * Y * Z - n) > 1e-9 * np.asarray(n)):
        raise ValueError(f"axes: got {axes!r}; X*Y*Z must equal n_chips={n!r}")
    n_wg = {"wg-x": X, "wg-xy": X * Y, "wg-xyz": X * Y * Z}[layout]
    return _out(mats * D * F * bw_w * n_wg / (n * bw) + 2.0 * T * D * ba / (n_wg * bw))


#: Ways to split the KV cache over the chips of a tensor-parallel group (Pope et al. §3.3).
KV_SHARDINGS = ("batch", "head", "sequence")
#: What :func:`sharded_decode` accepts: a layout, or ``"auto"`` (the cheaper of head and batch).
KV_SHARD_CHOICES = ("auto",) + KV_SHARDINGS


def _kv_groups(model):
    """KV heads that can go to different chips: the KV heads, or 1 for MLA (one shared latent)."""
    return 1 if model.kv_lora_rank is not None else model.n_kv_heads


def kv_replicas(model, batch, n_chips, kv_shard="batch"):
    """How many times the KV cache is read per step across ``n_chips``, relative to one copy.

    - ``"head"``: each chip keeps the KV heads of its query heads; with more chips than KV
      heads ``g`` (1 for MQA and MLA) every head is stored ``n/g`` times: ``max(1, n/g)``.
    - ``"batch"``: each chip keeps whole sequences; with fewer sequences than chips some chips
      hold none and the busiest holds ``ceil(B/n)``: ``n ceil(B/n) / B``.
    - ``"sequence"``: each chip keeps ``1/n`` of every sequence's tokens: 1.
    """
    choice("kv_shard", kv_shard, KV_SHARDINGS)
    n = n_chips_check(n_chips)
    batch = positive("batch", batch)
    if kv_shard == "head":
        return _out(np.maximum(1.0, np.asarray(n) / _kv_groups(model))
                    * np.ones_like(np.asarray(batch)))
    if kv_shard == "batch":
        return _out(np.asarray(n) * np.ceil(np.asarray(batch) / n) / batch)
    return _out(np.ones_like(np.asarray(n * batch, dtype=float)))


def _kv_comm_per_layer(model, by, batch, n, bw, activation_bytes, hop_latency, topology, dims,
                       algorithm=None):
    """Attention's own resharding per layer: batch sharding all-to-alls the queries out and the
    attention outputs back (``2 x all_to_all(B n_q d_h b_a / n)``); sequence sharding gathers
    every query to every chip and reduce-scatters the partial outputs (an all-reduce of
    ``B n_q d_h b_a``); head sharding needs nothing beyond the tensor-parallel all-reduces."""
    q = batch * model.n_heads * model.head_dim * activation_bytes
    if by == "head":
        return 0.0 * q
    if by == "batch":
        return 2.0 * np.asarray(all_to_all_time(q / n, n, bw, hop_latency, topology, dims))
    return np.asarray(all_reduce_time(q, n, bw, hop_latency, topology, dims, algorithm))


@dataclass(frozen=True)
class ShardedDecode:
    """One decode step of a tensor-parallel replica, SI units.

    - ``step``: the lower bound (:func:`~llmmath.roofline.decode_step`) on ``n`` chips,
      the KV reads multiplied by ``kv_replicas``
    - ``tp_comm``: the layers' tensor-parallel all-reduces, s; ``tp_latency``: their fixed costs
      alone, ``L n_ar sigma t_lat`` (sequential, so they add whatever the batch); ``kv_comm``:
      attention's resharding for the KV layout used, s; ``comm`` = ``tp_comm + kv_comm``
    - ``kv_shard``: the KV layout used (``"auto"`` resolved; an array of names where batch or
      context is an array)
    - ``time``: ``step.time + comm``, communication not overlapped (what a step costs when each
      all-reduce waits for the matmul before it); ``time_overlapped``: ``max(step.time, comm)``
    - ``weights_per_chip``, ``kv_per_chip``: HBM per chip, B; ``fits``: both within one chip's HBM
    - ``n_chips``, ``batch``; ``chip_seconds_per_token`` = ``n time / B``
    """

    step: object
    tp_comm: float | np.ndarray
    tp_latency: float | np.ndarray
    kv_shard: str | np.ndarray
    kv_comm: float | np.ndarray
    comm: float | np.ndarray
    time: float | np.ndarray
    time_overlapped: float | np.ndarray
    kv_replicas: float | np.ndarray
    weights_per_chip: float | np.ndarray
    kv_per_chip: float | np.ndarray
    fits: bool | np.ndarray
    n_chips: float | np.ndarray
    batch: float | np.ndarray

    @property
    def chip_seconds_per_token(self):
        return _out(np.asarray(self.n_chips) * np.asarray(self.time) / np.asarray(self.batch))

    @property
    def tokens_per_second(self):
        return _out(np.asarray(self.batch) / np.asarray(self.time))


def sharded_decode(model, chip, batch, context, n_chips, hop_latency=0.0, topology="switch",
                   dims=None,
                   kv_shard="auto", weight_bytes=2, kv_bytes=2, activation_bytes=2, dtype="bf16",
                   bandwidth=None, attention_flops=True, algorithm=None):
    """Decode step of ``model`` split over ``n_chips`` by 1D (Megatron) tensor parallelism, with
    its communication: the bound of :func:`~llmmath.roofline.decode_step` plus
    ``L n_ar`` all-reduces of ``B D b_a`` bytes and attention's resharding, each paying
    ``hop_latency`` per step on ``topology`` with ``algorithm`` (for the all-reduces; default
    the topology's own). The collective defaults (no latency, a switch) are Pope et al.'s
    bandwidth-only model (App. A.1): pass measured values to price small messages.

    ``kv_shard`` is one of :data:`KV_SHARDINGS`, or ``"auto"`` (the default): of head and batch
    sharding, the one whose step (``time``) is shorter, among those that fit in HBM (head on a
    tie). That is the rule "shard by head while ``n <= n_kv``": there head sharding reads one
    copy and exchanges nothing, so batch sharding can only add. Beyond ``n_kv`` batch sharding
    wins when the cache copies head sharding reads (``n/n_kv``) cost more than its two
    all-to-alls per layer, which needs ``B >= n`` (fewer sequences than chips read copies
    either way). ``ShardedDecode.kv_shard`` says which was used.

    ``bandwidth`` defaults to ``chip.scale_up_bandwidth``. Scalar ``n_chips`` for ring and torus
    topologies (step counts differ per count); ``batch`` and ``context`` broadcast.
    """
    choice("kv_shard", kv_shard, KV_SHARD_CHOICES)
    if kv_shard == "auto":
        kw = dict(hop_latency=hop_latency, topology=topology, dims=dims, weight_bytes=weight_bytes,
                  kv_bytes=kv_bytes, activation_bytes=activation_bytes, dtype=dtype,
                  bandwidth=bandwidth, attention_flops=attention_flops, algorithm=algorithm)
        head = sharded_decode(model, chip, batch, context, n_chips, kv_shard="head", **kw)
        by_batch = sharded_decode(model, chip, batch, context, n_chips, kv_shard="batch", **kw)
        fh, fb = np.asarray(head.fits), np.asarray(by_batch.fits)
        use_head = (fh & ~fb) | ((fh == fb) & (np.asarray(head.time) <= np.asarray(by_batch.time)))
        if use_head.ndim == 0:
            return head if bool(use_head) else by_batch
        parts = {}
        for f in dataclasses.fields(ShardedDecode):
            if f.name == "step":
                continue
            a, b = getattr(head, f.name), getattr(by_batch, f.name)
            parts[f.name] = np.where(use_head, a, b)
        parts["fits"] = np.asarray(parts["fits"], dtype=bool)
        for name in ("tp_comm", "tp_latency", "kv_comm", "comm", "time", "time_overlapped",
                     "kv_replicas", "weights_per_chip", "kv_per_chip", "n_chips", "batch"):
            parts[name] = _out(parts[name])
        step = _decode_step_for(model, chip, batch, context, n_chips, weight_bytes, kv_bytes,
                                dtype, attention_flops, parts["kv_replicas"])
        return ShardedDecode(step=step, **parts)

    n = n_chips_check(n_chips)
    batch = positive("batch", batch)
    bw = chip.scale_up_bandwidth if bandwidth is None else bandwidth
    if bw is None:
        raise ValueError(f"bandwidth: chip {chip.name!r} lists "
                         "no scale_up_bandwidth; pass bandwidth=")
    bw = positive("bandwidth", bw)
    kv_bytes = positive("kv_bytes", kv_bytes)
    r = kv_replicas(model, batch, n, kv_shard)
    step = _decode_step_for(model, chip, batch, context, n, weight_bytes, kv_bytes, dtype,
                            attention_flops, r)
    if np.all(np.asarray(n) == 1):
        tp = kv = lat = 0.0 * np.asarray(step.time)
    else:
        tp = np.asarray(tensor_parallel_comm_time(model, batch, n, bw, activation_bytes,
                                                  hop_latency, topology, dims, algorithm))
        kv = model.n_layers * _kv_comm_per_layer(model, kv_shard, batch, n, bw, activation_bytes,
                                                 hop_latency, topology, dims, algorithm)
        n_ar = model.n_layers * (1 if model.parallel_block else 2)
        sigma = np.asarray(collective_steps("all-reduce", n, topology, dims, algorithm))
        lat = n_ar * sigma * positive("hop_latency", hop_latency, allow_zero=True) \
            * np.ones_like(np.asarray(step.time))
    comm = tp + kv
    t = np.asarray(step.time)
    w = model.total_params * weight_bytes / np.asarray(n)
    kvc = (np.asarray(batch) * model.kv_cache_bytes(context, kv_bytes) * np.asarray(r)
           / np.asarray(n))
    return ShardedDecode(step, _out(tp), _out(lat), kv_shard, _out(kv), _out(comm), _out(t + comm),
                         _out(np.maximum(t, comm)),
                         _out(r), _out(w), _out(kvc), (w + kvc) <= chip.hbm_capacity, _out(n),
                         _out(batch))


def _decode_step_for(model, chip, batch, context, n, weight_bytes, kv_bytes, dtype,
                     attention_flops, replicas):
    from .roofline import decode_step

    return decode_step(model, chip, batch, context, n_chips=n, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, attention_flops=attention_flops,
                       kv_replicas=replicas)


def best_tensor_parallel(model, chip, batch, context, chip_counts=None, **kwargs):
    """The chip count in ``chip_counts`` (default 1, 2, 4, ... up to the chip's scale-up domain,
    at most 1024) with the fastest :func:`sharded_decode` step among those that fit in HBM.

    Returns ``(n_best, {n: ShardedDecode})``; ``n_best`` is None when no candidate fits.
    Beyond ``n_best`` the communication a doubling adds outweighs the compute and memory time
    it removes.
    """
    batch = positive("batch", batch)
    if type(batch) is not float:
        raise TypeError(f"batch: got an array {batch!r}; best_tensor_parallel takes one batch")
    context = positive("context", context, allow_zero=True)
    if type(context) is not float:
        raise TypeError(f"context: got an array {context!r}; "
                        "best_tensor_parallel takes one context")
    if chip_counts is None:
        top = min(chip.scale_up_domain or 8, 1024)
        chip_counts = [2 ** i for i in range(int(math.log2(top)) + 1)]
    runs = {int(n_chips_check(n, "chip_counts")):
            sharded_decode(model, chip, batch, context, n, **kwargs)
            for n in chip_counts}
    fitting = [n for n, r in runs.items() if bool(r.fits)]
    best = min(fitting, key=lambda n: runs[n].time) if fitting else None
    return best, runs


def ring_optimal_chips(model, chip, batch, context, hop_latency=33.7e-6 / 14, weight_bytes=2,
                       kv_bytes=2, dtype="bf16"):
    """The tensor-parallel degree beyond which more chips slow a decode step on a **ring**, when the
    all-reduces' latency dominates their bandwidth (small batches):

    ``t(n) = t_1 / n + L n_ar 2 (n - 1) alpha``  is smallest at
    ``n* = sqrt(t_1 / (2 L n_ar alpha))``,

    with ``t_1`` the single-chip step bound (:func:`~llmmath.roofline.decode_step` with one chip,
    capacity ignored), ``L n_ar`` the all-reduces per step and ``alpha`` the per-step latency
    (default: the NVLink ring step of :data:`llmmath.collectives.STEP_LATENCIES`, one
    measurement of NCCL's ring on 8 A100s over one channel, ``nccl_tests_latency``).
    A continuous value: round to a count the hardware offers. On a switch the latency term does
    not grow with ``n`` and there is no such optimum (the step only approaches ``2 L n_ar alpha``).
    """
    from .roofline import decode_step

    alpha = positive("hop_latency", hop_latency)
    t1 = np.asarray(decode_step(model, chip, batch, context, n_chips=1, weight_bytes=weight_bytes,
                                kv_bytes=kv_bytes, dtype=dtype).time)
    n_ar = model.n_layers * (1 if model.parallel_block else 2)
    return _out(np.sqrt(t1 / (2.0 * n_ar * alpha)))


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("partitioning", "all-reduce (bandwidth term)",
               r"2 \frac{n - 1}{n} \frac{Q}{W_\text{up}}", "1 GB over 8 H100s on NVLink",
               lambda lm: lm.parallel.all_reduce_time(1e9, 8,
                                                     lm.chip("H100-SXM").scale_up_bandwidth),
               fmt_time,
               by_formula=lambda lm: 2 * 7 / 8 * 1e9 / lm.chip("H100-SXM").scale_up_bandwidth),
)
