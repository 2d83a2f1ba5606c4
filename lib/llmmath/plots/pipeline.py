"""Figures: pipeline parallelism (chapter 8). Each
builder draws what :mod:`llmmath.pipeline` returns."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter

from ..pipeline import (
    bubble_fraction,
    pipeline_decode,
    pipeline_memory,
    schedule_timeline,
    stage_group_step,
)
from ..units import fmt_bytes, fmt_percent, fmt_time
from .explore import (
    CHIP_COUNTS,
    CONTEXTS,
    chip_picker,
    dropdown,
    explorer,
    model_picker,
    or_dash,
    steps,
)
from .figure import builder, chip_of, grid, mask, model_of
from .labels import fmt_b, fmt_n, fmt_t, loglim, set_log, with_notes
from .style import CYCLE, PALETTE, ROLE, model_colour

__all__ = ["pipeline_schedule", "bubble_vs_microbatches", "pipeline_memory_vs_stages",
           "decode_latency_vs_stages", "boundary_ratio_vs_layers"]

_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B"}


def _schedule_setup(p):
    ax = p.ax
    ax.set_xlabel("time (forward passes of one micro-batch on one stage)")
    ax.set_ylabel("pipeline stage")
    ax.grid(False)


def _schedule_size(values):
    return (6.4, 1.6 + 0.42 * float(values.get("stages", 4)))


@builder(figsize=_schedule_size, setup=_schedule_setup)
def pipeline_schedule(p, stages=4, micro_batches=8, schedule="1f1b", forward=1.0, backward=2.0):
    """Gantt chart of one synchronous training step: each stage's forwards and backwards in time.

    Drawn from ``llmmath.pipeline.schedule_timeline`` (a simulation, not a picture): white
    gaps are the bubble. The title gives the idle share, which equals
    ``llmmath.pipeline.bubble_fraction`` ``(P-1)/(m+P-1)`` for GPipe and 1F1B.
    """
    P, m = int(stages), int(micro_batches)
    ops = schedule_timeline(P, m, schedule, forward, backward)
    ax = p.ax
    colours = {"F": PALETTE["sky"], "B": PALETTE["blue"]}
    for kind in ("F", "B"):
        for s in range(P):
            bars = [(start, dur) for st, start, dur, k, _ in ops if st == s and k == kind]
            if bars:
                ax.broken_barh(bars, (s - 0.4, 0.8), facecolors=colours[kind], edgecolor="white",
                               lw=0.8)
    end = max(start + dur for _, start, dur, _, _ in ops)
    idle = 1.0 - m * (forward + backward) / end
    ax.set_xlim(0, end)
    ax.set_ylim(P - 0.5, -0.5)
    ax.set_yticks(range(P))
    ax.set_yticklabels([f"{s + 1}" for s in range(P)])
    name = _NAMES.get(schedule, schedule)
    ax.set_title(f"{name}: {P} stages, {m} micro-batches, idle {fmt_percent(idle, 2)}\n"
                 "light: forward, dark: backward, white: bubble")
    p.numbers = {"idle": idle, "makespan": end, "formula": bubble_fraction(P, m, schedule)}
    return (f"Timeline of one {name} training step over {P} pipeline stages and {m} micro-batches: "
            "forwards ripple down the stages, backwards (twice as long) ripple back up, and each "
            f"stage idles {fmt_percent(idle, 2)} of the {end:g} time units, at the start and at "
            "the end of the step.")


def _bubble_setup(p):
    ax = p.ax
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set_xlabel("micro-batches per training step m (count)")
    ax.set_ylabel("idle share of each stage")


_CURVES = (("1f1b", 1, "GPipe and 1F1B"), ("interleaved", 2, "interleaved 1F1B, v = 2"),
           ("interleaved", 4, "interleaved 1F1B, v = 4"), ("zb-h1", 1, "zero bubble ZB-H1"))


@builder(setup=_bubble_setup)
def bubble_vs_microbatches(p, stages=16, micro_batches=None, mark_micro_batches=None):
    """Pipeline bubble (idle share per stage) against micro-batches per step for four schedules.

    ``llmmath.pipeline.bubble_fraction`` at equal forward, input-backward and weight-backward
    times; ZB-H2's zero bubble is the x axis. ``micro_batches`` default 1 .. 256.
    """
    P = float(stages)
    m = grid(micro_batches if micro_batches is not None else 2.0 ** np.arange(0, 9), 1, 256)
    ax = p.ax
    values = {}
    for i, (sch, v, label) in enumerate(_CURVES):
        y = np.asarray(bubble_fraction(P, m, sch, virtual_stages=v)) * np.ones_like(m)
        values[label] = y
        p.add(ax.plot(m, y, "o-", color=CYCLE[i], ms=4, label=label)[0])
    ax.set_xlim(m.min() / 1.3, m.max() * 1.3)
    ax.set_ylim(0, 1.0)
    p.add(ax.legend(loc="upper right"))
    with p.marking():
        if mark_micro_batches is not None:
            mm = float(mark_micro_batches)
            f = float(bubble_fraction(P, mm, "1f1b"))
            p.point(mm, f, f"m={mm:g}: {fmt_percent(f, 2)} idle")
            p.numbers = {"bubble_1f1b": f}
    ax.set_title(f"Pipeline bubble with P = {P:g} stages")
    ten = float(np.ceil(9 * (P - 1)))
    p.numbers.update(micro_batches_for_10pct=ten)
    first = values["GPipe and 1F1B"]
    return (f"Plot of the idle share of each of {P:g} pipeline stages against micro-batches per "
            f"step: GPipe and 1F1B fall from {fmt_percent(first[0], 2)} at {m[0]:g} micro-batch to "
            f"{fmt_percent(first[-1], 2)} at {m[-1]:g}; interleaving divides the bubble by v and "
            "ZB-H1 by about three.")


def _memory_setup(p):
    ax = p.ax
    p.l_w, = ax.plot([], [], "o-", color=ROLE["weights"], label="weights")
    p.l_kv, = ax.plot([], [], "o-", color=ROLE["kv"], label="KV cache")
    p.l_t, = ax.plot([], [], "-", color=ROLE["total"], lw=3, alpha=0.55, label="total")
    ax.legend(loc="lower center", ncol=3)
    set_log(ax, y=fmt_b)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(r"pipeline stages $n_\mathrm{pp}$ (count)")
    ax.set_ylabel("HBM per chip (bytes)")


def _decode_numbers(model, chip, micro_batch, context, chips_per_stage, stages, micro_batches,
                    hop_latency):
    """Pipelined decode at ``stages`` (bf16 where the chip has it), hops over the chip's
    scale-out network (else an eighth of its scale-up or HBM bandwidth), and the 1F1B bubble."""
    m_used = stages if micro_batches is None else micro_batches
    dt, _ = chip.resolve_dtype("bf16")
    bw = chip.scale_out_bandwidth or (chip.scale_up_bandwidth or chip.hbm_bandwidth) / 8
    d = pipeline_decode(model, chip, micro_batch, context, chips_per_stage, stages,
                        micro_batches=m_used, hop_latency=hop_latency, dtype=dt,
                        scale_out_bandwidth=bw)
    return {"hop_latency": hop_latency, "token_latency": d.token_latency,
            "utilisation": d.utilisation, "tokens_per_second_per_chip": d.throughput_per_chip,
            "bubble": bubble_fraction(stages, m_used)}


@builder(setup=_memory_setup, marked=("hop_latency",))
def pipeline_memory_vs_stages(p, model, chip, chips_per_stage=8, micro_batch=64, context=4096,
                              micro_batches=None, stages=None, weight_bytes=2, kv_bytes=2,
                              mark_stages=None, hop_latency=None):
    """HBM per chip against pipeline stages: weights fall as 1/P, the KV cache does not.

    ``llmmath.pipeline.pipeline_memory`` with ``micro_batches`` m in flight (default
    ``m = P`` at every P, the fewest that keep the stages busy; a fixed m shades the stages
    that then idle). Marks the first P that fits the chip and, at ``mark_stages``, the memory
    per chip and the 1F1B training bubble for that many micro-batches. With ``hop_latency``
    (seconds per hop between stages), ``fig.numbers`` also gives pipelined decode at the marked
    P (``llmmath.pipeline.pipeline_decode``: token latency, utilisation, tokens/s per chip).
    """
    ctx, cnote = model.cap_context(context)
    P = grid(stages if stages is not None else 2.0 ** np.arange(0, 7), 1, 64)
    E = float(chips_per_stage)
    m = None if micro_batches is None else float(micro_batches)
    mem = pipeline_memory(model, float(micro_batch), ctx, E, P, m, weight_bytes, kv_bytes)
    w, kv, tot = (np.broadcast_to(x, P.shape) for x in (mem.weights, mem.kv, mem.total))
    p.l_w.set_data(*mask(P, w))
    p.l_kv.set_data(*mask(P, kv))
    p.l_t.set_data(*mask(P, tot))
    ax = p.ax
    ax.set_xlim(P.min() / 1.3, P.max() * 1.3)
    everything = np.concatenate([w, kv, tot, [chip.hbm_capacity]])
    ax.set_ylim(everything.min() / 5.0, everything.max() * 2.0)
    p.hline(chip.hbm_capacity, f"{chip.name} HBM: {fmt_b(chip.hbm_capacity)}",
            color=ROLE["capacity"], x=0.99, ha="right", ls="-")
    if m is not None and P.max() > m:
        p.nofit(max(m, P.min()) * 1.15, P.max() * 1.3, "")
    fit = P[tot <= chip.hbm_capacity]
    pfit = float(fit[0]) if fit.size else None
    if pfit is not None and pfit > P.min():
        p.vline(pfit, f"fits from\n{pfit:g} stages", color=ROLE["capacity"], y=0.55)
    with p.marking():
        if mark_stages is not None:
            mp = float(mark_stages)
            mm = pipeline_memory(model, float(micro_batch), ctx, E, mp, m, weight_bytes, kv_bytes)
            mb = mp if m is None else m
            bub = float(bubble_fraction(mp, mb, "1f1b"))
            p.point(mp, float(mm.total), f"{mp:g} stages: {fmt_b(float(mm.total))},\nbubble "
                                         f"{fmt_percent(bub, 2)}")
            p.numbers = {"weights": float(mm.weights), "kv": float(mm.kv), "total": float(mm.total),
                         "batch_in_flight": float(mm.batch_in_flight), "bubble_1f1b": bub,
                         "hbm_capacity": chip.hbm_capacity,
                         "fits": float(mm.total) <= chip.hbm_capacity,
                         "chips_total": chips_per_stage * mark_stages}
            if hop_latency is not None:
                p.numbers.update(_decode_numbers(model, chip, micro_batch, ctx, chips_per_stage,
                                                 mark_stages, micro_batches, hop_latency))
    in_flight = "" if m is None else f", m = {m:g}"
    idle = "" if m is None or P.max() <= m else ("\nshaded: fewer micro-batches "
                                                 "than stages, stages idle")
    ax.set_title(with_notes(f"{model.name}: {E:g} chips/stage, micro-batch "
                            f"{float(micro_batch):g}{in_flight}, S = {fmt_n(ctx)}", cnote) + idle)
    p.numbers.update(fits_from=pfit)
    kv_text = (f"the KV cache per chip stays at {fmt_b(kv[0])}" if m is None else
               f"the KV cache per chip falls from {fmt_b(kv[0])} to {fmt_b(kv[-1])} only because "
               f"the {m:g} micro-batches no longer fill the stages")
    return (f"Log-log plot of HBM per chip against pipeline stages for {model.name} with {E:g} "
            f"chips per stage: weights per chip fall from {fmt_b(w[0])} as 1/P while {kv_text}; "
            + (f"the total fits a {chip.name} from P = {pfit:g}." if pfit else
               f"the total never fits a {chip.name} in this range."))


def _latency_setup(p):
    ax = p.ax
    set_log(ax, y=fmt_t)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(r"pipeline stages $n_\mathrm{pp}$ (count)")
    ax.set_ylabel("time between a sequence's tokens (s)")


@builder(setup=_latency_setup)
def decode_latency_vs_stages(p, model, chip, chips_per_stage=8, micro_batch=64, context=4096,
                             hop_latencies=(0.0, 77e-6, 3e-3), stages=None, weight_bytes=2,
                             kv_bytes=2, dtype="bf16", mark_stages=None):
    """Per-token decode latency against pipeline stages, for several hop latencies.

    Solid lines: ``llmmath.pipeline.pipeline_decode`` (the step of the whole model on
    ``chips_per_stage`` chips at batch ``micro_batch``, plus ``P - 1`` hops and the sampled
    tokens' return). Dashed: the same chips, ``chips_per_stage x P``, as one scale-up group in
    the same layout serving the micro-batch (``llmmath.pipeline.stage_group_step``, if one domain
    could hold them): more bandwidth per token, where pipelining adds none.
    """
    ctx, cnote = model.cap_context(context)
    dt, dnote = chip.resolve_dtype(dtype)
    P = grid(stages if stages is not None else 2.0 ** np.arange(0, 7), 1, 64)
    E, b = float(chips_per_stage), float(micro_batch)
    ax = p.ax
    ys = []
    for i, lat in enumerate(hop_latencies):
        d = pipeline_decode(model, chip, b, ctx, E, P, hop_latency=float(lat),
                            weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
        y = np.asarray(d.token_latency) * np.ones_like(P)
        ys.append(y)
        p.add(ax.plot(*mask(P, y), "o-", color=CYCLE[i], ms=4,
                      label=f"pipeline, hop latency {fmt_t(float(lat)) if lat else '0'}")[0])
    wide = np.asarray(stage_group_step(model, chip, b, ctx, E * P, weight_bytes=weight_bytes,
                                       kv_bytes=kv_bytes, dtype=dt).time) * np.ones_like(P)
    ys.append(wide)
    p.add(ax.plot(*mask(P, wide), "--", color=ROLE["reference"],
                  label=f"one group of {E:g} × P chips")[0])
    ax.set_xlim(P.min() / 1.3, P.max() * 1.3)
    ax.set_ylim(*loglim(np.concatenate(ys), pad=2.0))
    p.add(ax.legend(loc="lower left"))
    base = float(stage_group_step(model, chip, b, ctx, E, weight_bytes=weight_bytes,
                                  kv_bytes=kv_bytes, dtype=dt).time)
    with p.marking():
        if mark_stages is not None:
            mp = float(mark_stages)
            d = pipeline_decode(model, chip, b, ctx, E, mp, hop_latency=float(hop_latencies[-1]),
                                weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
            p.point(mp, float(d.token_latency), f"{mp:g} stages: {fmt_t(float(d.token_latency))}")
            p.numbers = {"token_latency": float(d.token_latency)}
    ax.set_title(with_notes(f"{model.name}, {E:g} × {chip.name}/stage, micro-batch {b:g}",
                            cnote, dnote))
    p.numbers.update(step=base, wide_last=float(wide[-1]))
    return ("Log-log plot of the time between a sequence's tokens against pipeline stages for "
            f"{model.name} on {chip.name}: with no hop latency the pipeline stays at the "
            f"{fmt_t(base)} step of {E:g} chips, a few-millisecond hop adds to it at every stage, "
            f"while the same chips as one group would fall to {fmt_t(float(wide[-1]))} at P = "
            f"{P[-1]:g}.")


def _boundary_setup(p):
    ax = p.ax
    set_log(ax, x=lambda v: f"{v:g}", y=lambda v: f"{v:g}")
    ax.set_xlabel("layers per pipeline stage (count)")
    ax.set_ylabel("scale-up time / scale-out time")


@builder(setup=_boundary_setup)
def boundary_ratio_vs_layers(p, model_list, chip, n_layers=None):
    """Inside-stage scale-up time over boundary scale-out time, per token, against layers per stage.

    ``llmmath.pipeline.boundary_ratio`` for each model on ``chip``: lines ``2 k L bw_out/bw_up``.
    Above 1 the boundary between racks is not the bottleneck.
    """
    from ..pipeline import boundary_ratio, min_layers_per_stage

    L = grid(n_layers if n_layers is not None else [1, 2, 4, 8, 16, 32, 61], 1, 128)
    ax = p.ax
    ys = []
    for m in model_list:
        y = np.asarray(boundary_ratio(m, chip, L)) * np.ones_like(L)
        ys.append(y)
        k = m.experts_per_token or 1
        p.add(ax.plot(L, y, "o-", color=model_colour(m), ms=4, label=f"{m.name} (k = {k})")[0])
    ax.set_xlim(L.min() / 1.3, L.max() * 1.3)
    ax.set_ylim(*loglim(np.concatenate(ys + [np.array([1.0])]), pad=2.0))
    # labelled in the legend: the models' lines cross 1 all along the axis, so a label on the
    # line would cover one of them
    p.add(ax.axhline(1.0, color=ROLE["reference"], ls="--", lw=1.2, zorder=1,
                     label="above 1: boundary not the bottleneck"))
    p.add(ax.legend(loc="upper left"))
    ratio = chip.scale_up_bandwidth / chip.scale_out_bandwidth
    ax.set_title(f"Stage boundary on {chip.name}: scale-up {ratio:.0f}× scale-out")
    need = {m.name: min_layers_per_stage(m, chip) for m in model_list}
    p.numbers = {"min_layers": need, "up_over_out": ratio}
    most = max(need.values())
    return ("Log-log plot of scale-up time inside a pipeline stage over scale-out time at its "
            f"boundary against layers per stage on {chip.name}, whose scale-up link is {ratio:.0f} "
            f"times its scale-out link: every model shown crosses 1 by {most:g} layers per stage.")


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="stages", sweep=[1, 2, 4, 8, 16, 32, 64])
def pipeline_explorer(model="DeepSeek-V3", chip="H100-SXM", stages=4, chips_per_stage=8,
                      context=4096, micro_batch=64, micro_batches="P", hop_latency=77e-6):
    """Pipelined serving and training on one figure: HBM per chip against stages P (weights fall
    as 1/P, the KV cache of the P micro-batches in flight does not), with the decode latency,
    throughput per chip and the 1F1B training bubble for the same P and m in the panel."""
    m_options = [("= P", "P")] + [(str(m), m) for m in (1, 2, 4, 8, 16, 32, 64, 128)]
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "chips_per_stage": dropdown("chips/stage", CHIP_COUNTS, chips_per_stage),
        "micro_batch": steps("micro-batch b", [1, 4, 16, 64, 256, 1024], micro_batch),
        "micro_batches": dropdown("micro-batches m", m_options, micro_batches),
        "context": steps("context", CONTEXTS, context),
        "stages": steps("stages P", [1, 2, 4, 8, 16, 32, 64], stages),
    }

    def figure(v):
        m = model_of(v["model"])
        ctx, _ = m.cap_context(v["context"])
        mb = None if v["micro_batches"] == "P" else v["micro_batches"]
        return pipeline_memory_vs_stages, dict(
            model=m, chip=chip_of(v["chip"]), chips_per_stage=v["chips_per_stage"],
            micro_batch=v["micro_batch"], context=ctx, micro_batches=mb,
            mark_stages=v["stages"], hop_latency=hop_latency)

    return controls, figure, _pipeline_readout


def _pipeline_readout(n):
    return [("weights per chip", fmt_bytes(n["weights"])), ("KV per chip", fmt_bytes(n["kv"])),
            ("total per chip", fmt_bytes(n["total"])), ("chip HBM", fmt_bytes(n["hbm_capacity"])),
            ("fits", "yes" if n["fits"] else "no"),
            ("fits from P", or_dash(n.get("fits_from"), lambda x: f"{x:g}")),
            ("sequences in flight", f"{n['batch_in_flight']:,.0f}"),
            ("chips in total", f"{n['chips_total']:,}"),
            (f"token latency ({fmt_time(n['hop_latency'])} hops)", fmt_time(n["token_latency"])),
            ("stage utilisation (decode)", f"{n['utilisation']:.0%}"),
            ("tokens/s per chip", f"{n['tokens_per_second_per_chip']:,.0f}"),
            ("training bubble (1F1B)", f"{n['bubble']:.0%}")]
