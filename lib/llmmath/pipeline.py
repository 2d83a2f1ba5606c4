"""Pipeline parallelism: what splitting a model's layers into stages buys and costs.

A pipeline cuts the ``L`` layers into ``P`` stages of ``L/P`` layers; each stage runs on its own
group of ``E`` chips (the chips per stage: an expert- or tensor-parallel group inside one
scale-up domain), and activations cross from one stage to the next over the scale-out network.

**Inference.** Stage ``j`` works on one micro-batch of ``b`` sequences while stage ``j+1`` works
on the previous one. With ``m >= P`` micro-batches in flight no stage idles, and

- a token still passes through every layer in order, so its latency is the decode step of the
  whole model on ``E`` chips at batch ``b`` plus the hops: ``P - 1`` boundaries carry the
  micro-batch's activations and the sampled tokens return to the first stage (a message whose
  cost is its latency); pipelining never makes a token faster than an ``E``-chip group that held
  the whole model would;
- weights per chip fall as ``1/P``, but the ``m b`` sequences in flight each leave ``1/P`` of
  their KV cache on each stage, so the cache per chip is ``m b kv(S) / (E P)``, which at
  ``m = P`` is ``b kv(S) / E`` whatever ``P`` is. For an MoE the cache divides by ``E`` only
  under data-parallel attention, which replicates the non-expert weights ``N_repl`` on every chip
  of a stage: ``c_mem = N_repl b_w/P + (N_tot - N_repl) b_w/(E P) + b S b_kv/E`` (the episode's
  form has ``N_repl = 0``, right for a dense model under tensor parallelism).

**Training.** A synchronous step must finish every micro-batch's forward and backward before the
optimizer updates the weights, so each step starts with an empty pipeline and ends draining it:
the *bubble*. With ``m`` micro-batches per step and per-micro-batch stage times ``t_F`` (forward),
``t_B`` (backward for the inputs) and ``t_W`` (backward for the weights), the idle share of each
stage is ``bubble / (bubble + m (t_F + t_B + t_W))`` with bubble

- GPipe (Huang et al. 2019) and 1F1B (Narayanan et al. 2021): ``(P-1)(t_F + t_B + t_W)``, so
  ``(P-1)/(m+P-1)``;
- interleaved 1F1B with ``v`` chunks per chip (Narayanan et al. 2021): ``(P-1)(t_F+t_B+t_W)/v``;
- zero-bubble ZB-H1 (Qi et al. 2024): ``(P-1)(t_F + t_B - t_W)``, a third of 1F1B's at equal
  times; ZB-H2 (same paper): zero, for about twice 1F1B's activation memory;
- DualPipe (DeepSeek-V3, Table 2): ``(P/2 - 1)(t_F + 2 t_B - t_W)``, micro-batches fed from
  both ends of the pipeline, each chip holding two stages (twice the parameters) and ``P + 1``
  micro-batches' activations.

Every time here is a lower bound: hop latency is an argument (default 0), link contention,
stage imbalance and the optimizer step are left out. SI units; arguments broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._check import choice, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .moe import expert_parallel_decode_step
from .parallel import PipelineMemory, _replicated_params, scaleup_vs_scaleout_ratio
from .roofline import decode_step

__all__ = [
    "SCHEDULES",
    "HOP_LATENCIES",
    "bubble_fraction",
    "micro_batches_for_bubble",
    "schedule_timeline",
    "pipeline_memory",
    "stages_to_fit",
    "hop_time",
    "PipelineDecode",
    "stage_group_step",
    "pipeline_decode",
    "boundary_ratio",
    "min_layers_per_stage",
]

#: Training schedules :func:`bubble_fraction` knows.
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "dualpipe")

#: Hop latencies a chapter can quote, seconds, with where each comes from.
HOP_LATENCIES = {
    # DeepEP's low-latency kernels, H800 + ConnectX-7 400 Gb/s InfiniBand, 128 tokens of 7168
    # values, FP8 dispatch to 8 of the experts over 8 GPUs on other nodes: a measured cross-node
    # exchange of one decode micro-batch's activations (docs/legacy.md, "Low-latency kernels").
    "measured cross-node dispatch (DeepEP, EP8)": (77e-6, "deepseek_deepep"),
    # The same table at 256 GPUs: the slowest dispatch it lists.
    "measured cross-node dispatch (DeepEP, EP256)": (194e-6, "deepseek_deepep"),
    # The episode's guess for a rack hop, which it says may be off by 10x.
    "the episode's guess": (3e-3, "dwarkesh2026pope"),
}


#: The episode's decode step on one scale-up domain, which four 3 ms hops turn into its "20 to 30
#: ms" [dwarkesh2026pope].
EPISODE_DECODE_STEP = 20e-3

#: The micro-batch DeepEP's low-latency benchmark sends: 128 tokens of 7,168 values
#: (DeepSeek-V3's width) [deepseek_deepep].
DEEPEP_LOW_LATENCY_TOKENS = 128

def _stages(stages, name="stages"):
    return positive(name, stages, integer=True, maximum=1e6)


def _one(name, value):
    """A scalar, for the functions that simulate one configuration (TypeError for an array)."""
    if type(value) is not float:
        raise TypeError(f"{name}: got an array {value!r}; schedule_timeline simulates one "
                        "configuration, pass a single number")
    return value


def bubble_fraction(stages, micro_batches, schedule="1f1b", virtual_stages=1,
                    forward=1.0, backward_input=1.0, backward_weight=1.0):
    """Idle share of each pipeline stage in one synchronous training step.

    ``stages`` P, ``micro_batches`` m per step, ``schedule`` one of :data:`SCHEDULES`,
    ``virtual_stages`` v (model chunks per chip, interleaved only). ``forward``,
    ``backward_input`` and ``backward_weight`` are one micro-batch's stage times t_F, t_B, t_W
    in any unit (default 1 each: a backward pass twice a forward, as in 6ND).

    ``bubble / (bubble + m (t_F + t_B + t_W))``; bubble ``(P-1)(t_F+t_B+t_W)`` for GPipe and
    1F1B (giving ``(P-1)/(m+P-1)``), divided by ``v`` for interleaved 1F1B,
    ``(P-1)(t_F + t_B - t_W)`` for ZB-H1 (never below 0), 0 for ZB-H2, and
    ``(P/2 - 1)(t_F + 2 t_B - t_W)`` for DualPipe (``P`` even, never below 0).

    DualPipe's is DeepSeek-V3's Table 2 [deepseek_v3], ``(PP/2 - 1)(F&B + B - 3W)``, whose ``B``
    is a *full* backward chunk (``t_B + t_W`` here: with that reading its ZB1P row,
    ``(PP-1)(F + B - 2W)``, is Qi et al.'s ZB-H1 above) and ``F&B`` two mutually overlapped
    forward and backward chunks, taken as ``t_F + t_B + t_W``: the overlap hides each chunk's
    communication behind the other's arithmetic, and the arithmetic of the two still adds up.
    """
    P = _stages(stages)
    m = positive("micro_batches", micro_batches, integer=True)
    choice("schedule", schedule, SCHEDULES)
    v = positive("virtual_stages", virtual_stages, integer=True)
    tf = positive("forward", forward)
    tb = positive("backward_input", backward_input)
    tw = positive("backward_weight", backward_weight, allow_zero=True)
    work = m * (tf + tb + tw)
    if schedule in ("gpipe", "1f1b"):
        bubble = (P - 1.0) * (tf + tb + tw)
    elif schedule == "interleaved":
        bubble = (P - 1.0) * (tf + tb + tw) / v
    elif schedule == "zb-h1":
        bubble = (P - 1.0) * np.maximum(tf + tb - tw, 0.0)
    elif schedule == "dualpipe":
        if np.any(np.asarray(P) % 2):
            raise ValueError(f"stages: got {stages!r}; DualPipe feeds both ends of the pipeline "
                             "and needs an even number of stages")
        bubble = (P / 2.0 - 1.0) * np.maximum(tf + 2.0 * tb - tw, 0.0)
    else:
        bubble = 0.0 * P
    return _out(bubble / (bubble + work))


def micro_batches_for_bubble(stages, bubble, schedule="1f1b", virtual_stages=1):
    """Fewest whole micro-batches per step that keep the GPipe/1F1B/interleaved bubble <=
    ``bubble``.

    From ``(P-1)/(v m + P-1) <= f``: ``m >= (P-1)(1-f)/(v f)``; 1 for a single stage.
    ``bubble`` is a fraction in (0, 1).
    """
    P = _stages(stages)
    f = positive("bubble", bubble)
    if np.any(np.asarray(f) >= 1):
        raise ValueError(f"bubble: got {bubble!r}; allowed values are in (0, 1)")
    choice("schedule", schedule, ("gpipe", "1f1b", "interleaved"))
    v = (positive("virtual_stages", virtual_stages, integer=True) if schedule == "interleaved"
         else 1.0)
    m = np.ceil((P - 1.0) * (1.0 - f) / (v * f) - 1e-9)
    return _out(np.maximum(m, 1.0))


def schedule_timeline(stages, micro_batches, schedule="1f1b", forward=1.0, backward=2.0):
    """Every operation of one training step, simulated: a list of
    ``(stage, start, duration, kind, micro_batch)`` with kind ``"F"`` or ``"B"``.

    Each stage runs its operations in the schedule's order, each as soon as its input is ready:
    a forward needs the previous stage's forward of the same micro-batch, a backward the next
    stage's backward (the last stage: its own forward). ``"gpipe"``: all forwards, then all
    backwards; ``"1f1b"``: ``P-j-1`` warm-up forwards on stage ``j``, then one forward, one
    backward, and the remaining backwards. Used to draw the schedule and to check
    :func:`bubble_fraction` against an independent simulation.
    """
    P = int(_one("stages", _stages(stages)))
    m = int(_one("micro_batches",
                 positive("micro_batches", micro_batches, integer=True, maximum=4096)))
    choice("schedule", schedule, ("gpipe", "1f1b"))
    tf = _one("forward", positive("forward", forward))
    tb = _one("backward", positive("backward", backward))
    if P > 64:
        raise ValueError(f"stages: got {P}; the timeline draws at most 64")
    orders = []
    for s in range(P):
        if schedule == "gpipe":
            order = [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
        else:
            w = min(P - s - 1, m)
            order = [("F", j) for j in range(w)]
            for i in range(m - w):
                order += [("F", w + i), ("B", i)]
            order += [("B", j) for j in range(m - w, m)]
        orders.append(order)
    done: dict = {}
    free = [0.0] * P
    pos = [0] * P
    out = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(P):
            while pos[s] < len(orders[s]):
                kind, j = orders[s][pos[s]]
                dep = (("F", s - 1, j) if s > 0 else None) if kind == "F" else \
                      (("B", s + 1, j) if s < P - 1 else ("F", s, j))
                if dep is not None and dep not in done:
                    break
                start = max(free[s], done[dep] if dep is not None else 0.0)
                dur = tf if kind == "F" else tb
                done[(kind, s, j)] = start + dur
                free[s] = start + dur
                out.append((s, start, dur, kind, j))
                pos[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("schedule_timeline: the schedule deadlocked")
    return out


def pipeline_memory(model, micro_batch, context, chips_per_stage, stages, micro_batches=None,
                    weight_bytes=2, kv_bytes=2, replicated_params=None):
    """HBM per chip when ``stages`` P stages of ``chips_per_stage`` E chips hold ``micro_batches``
    m micro-batches of ``micro_batch`` b sequences at ``context`` S tokens (default ``m = P``,
    the fewest that keep every stage busy).

    Weights ``N_repl b_w / P + (N_tot - N_repl) b_w / (E P)``; KV ``m b kv(S) / (E P)``, each
    stage holding its ``1/P`` of every in-flight sequence's cache. At ``m = P`` the KV term is
    ``b kv(S) / E``: independent of P. ``N_repl`` (``replicated_params``) is what every chip of a
    stage holds whole: by default an MoE's non-expert weights (data-parallel attention with
    expert parallelism, the layout under which each chip keeps whole caches of its own sequences,
    so that the cache divides by E) and 0 for a dense model (tensor parallelism); pass 0 to
    divide every weight. Returns :class:`llmmath.parallel.PipelineMemory`
    (``batch_in_flight = m b``; ``replicated_weights = N_repl b_w / P``).
    """
    b = positive("micro_batch", micro_batch)
    E = n_chips_check(chips_per_stage, "chips_per_stage")
    P = _stages(stages)
    m = P if micro_batches is None else positive("micro_batches", micro_batches, integer=True)
    wb = positive("weight_bytes", weight_bytes)
    kb = positive("kv_bytes", kv_bytes)
    repl = _replicated_params(model, replicated_params)
    rep = repl * wb / P
    w = rep + (model.total_params - repl) * wb / (E * P)
    kv = m * b * np.asarray(model.kv_cache_bytes(context, kb)) / (E * P)
    return PipelineMemory(_out(w), _out(kv), _out(w + kv), _out(m * b * np.ones_like(w)),
                          _out(rep * np.ones_like(w)))


def stages_to_fit(model, chip, micro_batch, context, chips_per_stage, weight_bytes=2, kv_bytes=2,
                  memory_fraction=1.0, replicated_params=None):
    """Fewest stages P for which weights plus the caches of P micro-batches fit every chip.

    ``N_repl b_w/P + (N_tot - N_repl) b_w/(E P) + b kv(S)/E <= mu M`` gives
    ``P >= (N_repl b_w + (N_tot - N_repl) b_w/E) / (mu M - b kv(S)/E)`` (``mu``:
    ``memory_fraction``; ``N_repl`` as in :func:`pipeline_memory`); ``inf`` when one
    micro-batch's cache share alone, ``b kv(S)/E``, fills the chip: no number of stages helps then
    (shrink the micro-batch or add chips per stage).
    """
    b = positive("micro_batch", micro_batch)
    E = n_chips_check(chips_per_stage, "chips_per_stage")
    wb = positive("weight_bytes", weight_bytes)
    kb = positive("kv_bytes", kv_bytes)
    f = positive("memory_fraction", memory_fraction, maximum=1.0)
    repl = _replicated_params(model, replicated_params)
    room = f * chip.hbm_capacity - b * np.asarray(model.kv_cache_bytes(context, kb)) / E
    weights = repl * wb + (model.total_params - repl) * wb / E
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(room > 0, np.ceil(weights / np.where(room > 0, room, 1.0) - 1e-9), np.inf)
    return _out(np.maximum(need, 1.0))


def hop_time(tokens, d_model, bandwidth, latency=0.0, activation_bytes=2):
    """One stage-to-stage hop: ``latency + tokens d_model b_a / bandwidth`` seconds.

    ``tokens`` is the micro-batch (one token per sequence in decode), ``bandwidth`` the
    per-chip scale-out bandwidth, one direction, when the boundary crosses racks.
    """
    t = positive("tokens", tokens)
    d = positive("d_model", d_model)
    bw = positive("bandwidth", bandwidth)
    lat = positive("latency", latency, allow_zero=True)
    ba = positive("activation_bytes", activation_bytes)
    return _out(lat + t * d * ba / bw)


@dataclass(frozen=True)
class PipelineDecode:
    """A pipelined decode: P stages of E chips, m micro-batches of b sequences in flight (SI).

    - ``stage_time``: one stage's share of the step, ``step(b, E chips) / P``, s
    - ``hop_time``: one boundary crossing of the activations, s; ``hops``: such crossings per
      token (``P - 1``); the sampled tokens' return to the first stage adds ``hop_latency``
      (``P > 1``)
    - ``token_latency``: time between one sequence's tokens:
      ``step + (P - 1) hop_time + hop_latency`` (``step`` alone for ``P = 1``), s
    - ``cycle``: time for the pipeline to emit one token for every in-flight sequence, s:
      ``max(token_latency, m x stage_time)``
    - ``throughput``: tokens/s of the pipeline, ``m b / cycle``; ``throughput_per_chip``
    - ``utilisation``: busy share of each stage, ``m stage_time / cycle``
    - ``memory``: :class:`~llmmath.parallel.PipelineMemory` per chip; ``n_chips = E P``;
      ``step``: the unpipelined step on E chips (a :class:`~llmmath.step.Step`: ``step.fits``
      says whether those E chips could hold the model alone)
    """

    stage_time: float | np.ndarray
    hop_time: float | np.ndarray
    hops: float | np.ndarray
    token_latency: float | np.ndarray
    cycle: float | np.ndarray
    throughput: float | np.ndarray
    throughput_per_chip: float | np.ndarray
    utilisation: float | np.ndarray
    memory: PipelineMemory
    n_chips: float | np.ndarray
    step: object = None


def stage_group_step(model, chip, batch, context, chips_per_stage, weight_bytes=2, kv_bytes=2,
                     dtype="bf16", replicated_params=None):
    """The decode step of the whole model on one stage's ``E`` chips at ``batch``: the ``t_step``
    of a pipeline, which its stages share (each takes ``1/P`` of it).

    The layout is :func:`pipeline_memory`'s, and the step reads what that layout holds: with an
    MoE's default ``replicated_params`` (data-parallel attention and expert parallelism) it is
    :func:`llmmath.moe.expert_parallel_decode_step` (every chip reads the non-expert weights);
    with ``replicated_params=0`` (or a dense model) :func:`llmmath.roofline.decode_step`, every
    weight divided by ``E``. Other counts are refused (ValueError): the two layouts are the ones
    a step is defined for.
    """
    E = n_chips_check(chips_per_stage, "chips_per_stage")
    if replicated_params is not None:
        r = positive("replicated_params", replicated_params, allow_zero=True)
        if np.any(np.asarray(r) != 0):
            raise ValueError(f"replicated_params: got {replicated_params!r}; a pipelined step is "
                             "defined for the default layout (None) or every weight divided (0)")
    if model.is_moe and replicated_params is None:
        return expert_parallel_decode_step(model, chip, batch, context, E,
                                           weight_bytes=weight_bytes, kv_bytes=kv_bytes,
                                           dtype=dtype)
    return decode_step(model, chip, batch, context, n_chips=E, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype)


def pipeline_decode(model, chip, micro_batch, context, chips_per_stage, stages, micro_batches=None,
                    hop_latency=0.0, weight_bytes=2, kv_bytes=2, dtype="bf16", activation_bytes=2,
                    scale_out_bandwidth=None, replicated_params=None):
    """Lower bound on pipelined decode (see the module docstring).

    The step is :func:`stage_group_step`: the whole model on ``chips_per_stage`` chips at batch
    ``micro_batch`` (for an MoE, the experts that micro-batch touches; under the default layout
    every chip also reads the replicated non-expert weights), split evenly over ``stages``. Each
    of the ``P - 1`` boundaries moves ``micro_batch x d_model`` activations over
    ``scale_out_bandwidth`` (default the chip's) after ``hop_latency`` seconds, and the sampled
    tokens return to the first stage in ``hop_latency`` (their bytes are negligible):
    ``t_token = t_step + (P - 1) t_hop + t_lat`` for ``P > 1``, ``t_step`` for one stage.
    ``micro_batches`` in flight defaults to ``stages``. Stages are assumed balanced (the LM
    head and embeddings really sit on the end stages) and hops overlap other micro-batches'
    compute.
    """
    b = positive("micro_batch", micro_batch)
    E = n_chips_check(chips_per_stage, "chips_per_stage")
    P = _stages(stages)
    m = P if micro_batches is None else positive("micro_batches", micro_batches, integer=True)
    lat = positive("hop_latency", hop_latency, allow_zero=True)
    bw = scale_out_bandwidth if scale_out_bandwidth is not None else chip.scale_out_bandwidth
    if bw is None:
        if np.any(np.asarray(P) > 1):
            raise ValueError(f"scale_out_bandwidth: chip {chip.name!r} "
                             "lists none; pass one (bytes/s)")
        bw = 1.0
    bw = positive("scale_out_bandwidth", bw)
    step = stage_group_step(model, chip, b, context, E, weight_bytes=weight_bytes,
                            kv_bytes=kv_bytes, dtype=dtype, replicated_params=replicated_params)
    stage = np.asarray(step.time) / P
    hops = np.asarray(P) - 1.0
    hop = np.asarray(hop_time(b, model.d_model, bw, lat, activation_bytes))
    ret = np.where(np.asarray(P) > 1, np.asarray(lat), 0.0)
    latency = np.asarray(step.time) + hops * hop + ret
    cycle = np.maximum(latency, m * stage)
    tput = m * b / cycle
    mem = pipeline_memory(model, b, context, E, P, m, weight_bytes, kv_bytes, replicated_params)
    return PipelineDecode(_out(stage), _out(hop * np.ones_like(stage)),
                          _out(hops * np.ones_like(stage)),
                          _out(latency), _out(cycle), _out(tput), _out(tput / (E * P)),
                          _out(m * stage / cycle), mem, _out(E * P * np.ones_like(stage)), step)


def _ratio_of(chip):
    up, out = chip.scale_up_bandwidth, chip.scale_out_bandwidth
    if not up or not out:
        raise ValueError(f"chip: {chip.name!r} lists no scale-up or no scale-out bandwidth; "
                         "use parallel.scaleup_vs_scaleout_ratio with your own ratio")
    return out / up


def boundary_ratio(model, chip, layers_per_stage):
    """Scale-up time inside a stage over scale-out time at its boundary, per token, on ``chip``.

    Inside: each MoE layer sends ``k`` activation copies out and back (``2 k D`` bytes per token
    over scale-up); at the boundary one activation (``D`` bytes) crosses scale-out:
    ``t_up/t_out = 2 k layers (bw_out / bw_up)``, the episode's rule with the chip's own
    bandwidths instead of its 1/8. At >= 1 the cut between racks is not the bottleneck. A dense
    model counts ``k = 1`` (its tensor-parallel all-reduces move more, so the ratio only grows).
    """
    return scaleup_vs_scaleout_ratio(model, layers_per_stage, scale_out_over_up=_ratio_of(chip))


def min_layers_per_stage(model, chip):
    """Fewest whole layers per stage for which :func:`boundary_ratio` reaches 1 on ``chip``."""
    k = model.experts_per_token or 1
    return float(math.ceil(1.0 / (2.0 * k * _ratio_of(chip)) - 1e-9))


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("pipelining", "pipeline bubble",
               r"f_\text{bubble} = \frac{n_\text{pp} - 1}{m + n_\text{pp} - 1}",
               "4 stages, 16 micro-batches",
               lambda lm: lm.pipeline.bubble_fraction(4, 16), lambda f: f"{f:.1%}",
               by_formula=lambda lm: (4 - 1) / (16 + 4 - 1)),
)
