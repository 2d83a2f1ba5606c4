"""Figures: laying out a training run (the chapter after training compute).

Every number drawn comes from :mod:`llmmath.layout`: a layout's memory per chip
(:func:`~llmmath.layout.memory_per_chip`), its step term by term
(:func:`~llmmath.layout.step_time`), the planner's ranking (:func:`~llmmath.layout.plan`), the
checkpoint interval and goodput, and the published runs as :mod:`llmmath.published_runs`
reproduces them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from ..layout import (
    Cluster,
    Layout,
    checkpoint_interval,
    goodput,
    memory_per_chip,
    plan,
    step_time,
)
from ..published_runs import published_runs
from ..units import fmt_bytes, fmt_percent, fmt_time
from .explore import chip_picker, dropdown, explorer, model_picker, steps
from .figure import builder, chip_of, model_of
from .labels import fmt_b, fmt_t, set_log, time_axis, with_notes
from .style import PALETTE, ROLE, SMALL

__all__ = ["layout_memory", "layout_step_waterfall", "plan_top_layouts", "runs_utilisation",
           "goodput_vs_interval"]

#: One colour per term of a training step (the ideal in the bound's colour).
TERM_COLOUR = {
    "ideal": ROLE["bound"], "compute": PALETTE["sky"], "tp": PALETTE["purple"],
    "ep": PALETTE["vermillion"], "pp": PALETTE["ochre"], "cp": PALETTE["ochre"],
    "bubble": PALETTE["grey"], "dp": PALETTE["green"],
}
#: What each term is called on a phone-width axis.
TERM_NAME = {
    "ideal": "model FLOPs at peak", "compute": "+ kernel rates, recompute",
    "tp": "+ tensor-parallel comm.", "ep": "+ expert all-to-all", "pp": "+ pipeline sends",
    "cp": "+ context exchange", "bubble": "+ pipeline bubble", "dp": "+ exposed gradient sync",
}
STEP_COLOUR, PUBLISHED_COLOUR = PALETTE["blue"], PALETTE["orange"]


def _default_layout(layout):
    if layout is None:
        return Layout(dp=64, tp=8, pp=2)
    if not isinstance(layout, Layout):
        raise TypeError(f"layout: got {layout!r}; expected an llmmath.layout.Layout")
    return layout


def short(layout) -> str:
    """A layout in a few characters: ``TP8 PP16 DP64 v4, Z1, sel.`` (v: chunks per chip of an
    interleaved schedule, mb: sequences per micro-batch, Z: the ZeRO stage, rc.: recompute)."""
    parts = [f"TP{layout.tp}", f"PP{layout.pp}"]
    parts += [f"CP{layout.cp}"] if layout.cp > 1 else []
    parts += [f"EP{layout.ep}"] if layout.ep > 1 else []
    parts += [f"DP{layout.dp}"]
    parts += [f"v{layout.virtual_stages}"] if layout.virtual_stages > 1 else []
    parts += [f"mb{layout.micro_batch}"] if layout.micro_batch > 1 else []
    rc = {"none": "no rc.", "selective": "sel.", "full": "full rc."}[layout.recompute]
    return " ".join(parts) + f", Z{layout.zero_stage}, {rc}"


# ----- memory per chip by ZeRO stage -------------------------------------------------------

@builder()
def layout_memory(p, model, chip, layout=None, sequence_length=8192, global_batch=None):
    """HBM per chip of a layout's first pipeline stage, one stacked bar per ZeRO stage 0-3: the
    bf16 weights kept between steps, the gradients and optimiser states, and the activations of
    the micro-batches in flight (:func:`llmmath.layout.memory_per_chip`), against the chip's
    HBM. ``layout`` default DP64 TP8 PP2 (1,024 chips)."""
    m, c = model_of(model), chip_of(chip)
    lay = _default_layout(layout)
    ax = p.ax
    mems = [memory_per_chip(m, dataclasses.replace(lay, zero_stage=z), sequence_length,
                            global_batch) for z in (0, 1, 2, 3)]
    x = np.arange(4)
    w = np.array([mm.weights for mm in mems])
    s = np.array([mm.states for mm in mems]) - w
    a = np.array([mm.activations for mm in mems])
    parts = (("bf16 weights kept", ROLE["weights"]),
             ("gradients, optimiser states", PALETTE["purple"]), ("activations", PALETTE["sky"]))
    bottom = np.zeros(4)
    for v, (_, colour) in zip((w, s, a), parts, strict=True):
        # unlabelled bars, a legend of patches: a redraw leaves no stale container behind
        p.add(ax.bar(x, v, 0.62, bottom=bottom, color=colour))
        bottom = bottom + v
    total = w + s + a
    top = max(total.max(), c.hbm_capacity)
    for xi, t in zip(x, total, strict=True):
        p.add(ax.annotate(fmt_bytes(t, 3), (xi, t), xytext=(0, 3), textcoords="offset points",
                          ha="center", va="bottom", fontsize=SMALL))
    hbm = p.add(ax.axhline(c.hbm_capacity, color=ROLE["capacity"], ls="--", lw=1.5))
    ax.set_xticks(x, ["ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"])
    ax.set_xlim(-0.6, 3.6)
    ax.set_ylim(0, top * 1.45)
    ax.yaxis.set_major_formatter(lambda v, _: fmt_b(v) if v > 0 else "0")
    ax.set_ylabel("HBM per chip (bytes)")
    ax.grid(axis="x", visible=False)
    hbm.set_label(f"{c.name} HBM, {fmt_bytes(c.hbm_capacity)}")
    p.add(ax.legend(handles=[Patch(color=col, label=lab) for lab, col in parts] + [hbm],
                    loc="upper right"))
    degrees = short(lay).split(",")[0]
    ax.set_title(f"{m.name}, {degrees}, {lay.recompute} recompute, S = {sequence_length:,}",
                 fontsize=SMALL)
    fits = [bool(t <= c.hbm_capacity) for t in total]
    p.numbers = {"total": {z: float(t) for z, t in enumerate(total)},
                 "activations": float(a[0]), "in_flight": float(mems[0].in_flight),
                 "fits": dict(enumerate(fits))}
    fit_list = [f"ZeRO-{z}" for z, f in enumerate(fits) if f]
    return (f"Stacked bars of HBM per chip for {m.name} laid out as {lay} at sequences of "
            f"{sequence_length:,} tokens: {fmt_bytes(total[0])} without sharding, "
            f"{fmt_bytes(total[1])} with ZeRO-1, {fmt_bytes(total[2])} with ZeRO-2 and "
            f"{fmt_bytes(total[3])} with ZeRO-3, of which {fmt_bytes(a[0])} are activations in "
            f"every bar; against {fmt_bytes(c.hbm_capacity)} of {c.name} HBM "
            + (f"{', '.join(fit_list)} fit." if fit_list else "none fits."))


# ----- one step, term by term --------------------------------------------------------------

def _waterfall_size(args):
    return (6.4, 4.6)


@builder(figsize=_waterfall_size)
def layout_step_waterfall(p, model, chip, layout=None, global_batch=2048, sequence_length=8192,
                          mfu=None):
    """One optimizer step of ``layout`` as a waterfall (:func:`llmmath.layout.step_time`): the
    model's FLOPs at the chips' peak, then what kernel rates and recomputation add, then each
    communication term that is not hidden (:data:`llmmath.layout.OVERLAP`), the pipeline
    bubble and the exposed gradient sync, summing to the step; its MFU is the first bar over the
    step. ``mfu`` (a published one) adds the step time that MFU implies. ``layout`` default DP64
    TP8 PP2; the cluster is ``layout.n_chips`` of ``chip`` with its own networks."""
    m, c = model_of(model), chip_of(chip)
    lay = _default_layout(layout)
    dt, dnote = c.resolve_dtype("bf16")
    cl = Cluster(c, lay.n_chips)
    st = step_time(m, lay, cl, global_batch, sequence_length, dtype=dt)
    mem = memory_per_chip(m, lay, sequence_length, global_batch)
    ideal = st.model_flops / (lay.n_chips * c.peak(dt))
    terms = st.terms()
    names = ["ideal", "compute", "tp"] + (["ep"] if m.is_moe else []) + ["pp", "cp", "bubble",
                                                                           "dp"]
    vals = [ideal, terms["compute"] - ideal] + [terms[k] for k in names[2:]]
    labels = [TERM_NAME[k] for k in names] + ["= step"]
    widths, lefts, acc = [], [], 0.0
    for v in vals:
        lefts.append(acc)
        widths.append(v)
        acc += v
    widths.append(st.time)
    lefts.append(0.0)
    colours = [TERM_COLOUR[k] for k in names] + [STEP_COLOUR]
    published_mfu = mfu
    if published_mfu is not None:
        pub = ideal / float(published_mfu)
        labels.append("published MFU")
        widths.append(pub)
        lefts.append(0.0)
        colours.append(PUBLISHED_COLOUR)
    ax = p.ax
    y = np.arange(len(labels))[::-1]
    p.add(ax.barh(y, widths, left=lefts, color=colours, height=0.66, edgecolor="none"))
    ax.set_xlim(0, max(widths) * 1.55)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_yticks(y, labels, fontsize=SMALL)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 5, 10]))  # round times
    ax.xaxis.set_major_formatter(lambda v, _: fmt_t(v) if v > 0 else "0")
    for yi, lf, wd, lab in zip(y, lefts, widths, labels, strict=True):
        if lab == "= step":
            text = f"{fmt_time(wd, 3)}: MFU {fmt_percent(st.mfu, 3)}"
        elif lab == "published MFU":
            text = f"{fmt_time(wd, 3)}: MFU {fmt_percent(float(published_mfu), 3)}"
        elif lab == TERM_NAME["ideal"]:
            text = fmt_time(wd, 3)
        else:
            text = f"+{fmt_time(wd, 2)}" if wd > 0 else "0"
        p.add(ax.annotate(text, (lf + wd, yi), xytext=(4, 0), textcoords="offset points",
                          ha="left", va="center", fontsize=SMALL, color=PALETTE["black"]))
    ax.set_xlabel("time per optimizer step")
    fits = mem.fits(c)
    ax.set_title(with_notes(f"{m.name} on {lay.n_chips:,} {c.name}: {short(lay)}",
                            f"{fmt_bytes(mem.total)} per chip"
                            + ("" if fits else ": does not fit"), dnote), fontsize=SMALL)
    p.numbers = {"time": st.time, "ideal": ideal, "mfu": st.mfu, "hfu": st.hfu,
                 "memory": mem.total, "fits": fits, "micro_batches": st.micro_batches,
                 "terms": dict(terms), "bubble_fraction": st.bubble_fraction,
                 "hbm": c.hbm_capacity}
    big = max(names[1:], key=lambda k: vals[names.index(k)])
    pub_text = (f"; the published MFU of {fmt_percent(float(published_mfu), 3)} implies "
                f"{fmt_time(ideal / float(published_mfu), 3)}" if published_mfu else "")
    return (f"Horizontal waterfall of one training step of {m.name} on {lay.n_chips:,} "
            f"{c.name} laid out as {lay}: the model's FLOPs at peak take {fmt_time(ideal, 3)}, "
            f"the largest addition is {TERM_NAME[big].lstrip('+ ')} "
            f"(+{fmt_time(vals[names.index(big)], 2)}), and the step is {fmt_time(st.time, 3)}, "
            f"an MFU of {fmt_percent(st.mfu, 3)}{pub_text}.")


# ----- the planner's best layouts ----------------------------------------------------------

#: Layouts :func:`plan_top_layouts` draws.
TOP = 8


def _plan_size(args):
    return (6.4, 2.6 + 0.42 * (TOP + (1 if args.get("layout") else 0)))


@builder(figsize=_plan_size)
def plan_top_layouts(p, model, chip, n_chips=1024, global_batch=1024, sequence_length=8192,
                     layout=None):
    """The planner's ``TOP`` (8) fastest layouts that fit (:func:`llmmath.layout.plan`), one
    stacked bar of step-time terms each, labelled with its MFU; ``layout`` (a published
    :class:`~llmmath.layout.Layout`) adds its bar at the bottom, whether or not it fits."""
    published = layout
    m, c = model_of(model), chip_of(chip)
    cl = Cluster(c, int(n_chips))
    entries = plan(m, cl, global_batch, sequence_length)
    if not entries:
        raise ValueError(f"n_chips: no layout of {m.name} fits {int(n_chips):,} {c.name}")
    rows = [(short(e.layout), e.step, True) for e in entries[:TOP]]
    if published is not None:
        st = step_time(m, published, cl, global_batch, sequence_length)
        fits = memory_per_chip(m, published, sequence_length, global_batch).fits(c)
        rows.append(("published: " + short(published), st, fits))
    ax = p.ax
    y = np.arange(len(rows))[::-1]
    names = ["compute", "tp", "ep", "pp", "cp", "bubble", "dp"]
    left = np.zeros(len(rows))
    handles = []
    for k in names:
        v = np.array([st.terms()[k] for _, st, _ in rows])
        if not np.any(v > 0):
            continue
        label = "compute" if k == "compute" else TERM_NAME[k].lstrip("+ ")
        p.add(ax.barh(y, v, left=left, color=TERM_COLOUR[k], height=0.66))
        handles.append(Patch(color=TERM_COLOUR[k], label=label))
        left += v
    for yi, (_, st, fits) in zip(y, rows, strict=True):
        p.add(ax.annotate(f"MFU {fmt_percent(st.mfu, 3)}" + ("" if fits else ", no fit"),
                          (st.time, yi), xytext=(4, 0), textcoords="offset points", ha="left",
                          va="center", fontsize=SMALL))
    ax.set_yticks(y, [r[0] for r in rows], fontsize=SMALL)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlim(0, left.max() * 1.6)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 5, 10]))  # round times
    ax.xaxis.set_major_formatter(lambda v, _: fmt_t(v) if v > 0 else "0")
    ax.set_xlabel("time per optimizer step")
    p.add(ax.legend(handles=handles, loc="lower right", ncol=2))
    ax.set_title(f"{m.name} on {int(n_chips):,} {c.name}, {global_batch:,} × "
                 f"{sequence_length:,} tokens", fontsize=SMALL)
    best = entries[0]
    p.numbers = {"best": str(best.layout), "best_time": best.step.time, "best_mfu": best.step.mfu,
                 "n_fit": len(entries), "mfus": [st.mfu for _, st, _ in rows]}
    pub = ""
    if published is not None:
        st = rows[-1][1]
        p.numbers.update(published_time=st.time, published_mfu=st.mfu)
        pub = (f"; the published layout {published} is estimated at {fmt_time(st.time, 3)} "
               f"(MFU {fmt_percent(st.mfu, 3)})")
    return (f"Stacked horizontal bars of step time, term by term, for the {len(rows)} fastest "
            f"of the {len(entries):,} layouts of {m.name} that fit {int(n_chips):,} {c.name}: "
            f"the best, {best.layout}, takes {fmt_time(best.step.time, 3)} per step (MFU "
            f"{fmt_percent(best.step.mfu, 3)}), and the MFUs shown run from "
            f"{fmt_percent(min(p.numbers['mfus']), 3)} to "
            f"{fmt_percent(max(p.numbers['mfus']), 3)}{pub}.")


# ----- the published runs ------------------------------------------------------------------

def _runs_size(args):
    runs = args["rows"] if args["rows"] is not None else published_runs()
    return (6.4, 1.9 + 0.42 * sum("skip" not in r for r in runs))


@builder(figsize=_runs_size)
def runs_utilisation(p, rows=None, band=0.05):
    """Each published run, one row: the utilisation its authors printed and this chapter's
    estimate (MFU against MFU, HFU against HFU) joined by a line, the gap in points at the
    right, bold where it is more than ``band`` (5 points). ``rows`` default
    ``llmmath.published_runs.published_runs()``; runs that cannot be modelled are named in the
    alt text."""
    runs = published_runs() if rows is None else rows
    done = [r for r in runs if "skip" not in r]
    if not done:
        raise ValueError("runs: no run could be modelled")
    pub = np.array([r["published"] for r in done])
    est = np.array([r["estimate"] for r in done])
    ax = p.ax
    y = np.arange(len(done))[::-1]
    for yi, a, b in zip(y, pub, est, strict=True):
        p.add(ax.plot([a, b], [yi, yi], color=ROLE["reference"], lw=1.5, zorder=2)[0])
    p.add(ax.plot(pub, y, "o", ms=8, color=PUBLISHED_COLOUR, mec="white", zorder=4,
                  ls="", label="published")[0])
    p.add(ax.plot(est, y, "D", ms=7, color=STEP_COLOUR, mec="white", zorder=4, ls="",
                  label="estimate")[0])
    hi = max(pub.max(), est.max())
    lo = min(pub.min(), est.min())
    ax.set_xlim(max(0.0, lo - 0.05), hi + 0.16)
    ax.set_ylim(-0.6, len(done) - 0.4)
    for yi, a, b in zip(y, pub, est, strict=True):
        gap = (b - a) * 100
        p.add(ax.annotate(f"{gap:+.1f} pt", (max(a, b), yi), xytext=(8, 0),
                          textcoords="offset points", ha="left", va="center", fontsize=SMALL,
                          fontweight="bold" if abs(b - a) > band + 1e-12 else "normal"))
    ax.set_yticks(y, [f"{_run_label(r['run'])} ({r['kind'].split()[0]})" for r in done],
                  fontsize=SMALL)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v * 100:.0f}%")
    ax.set_xlabel("utilisation (share of the chips' bf16 peak)")
    p.add(ax.legend(loc="lower right"))
    within = int(np.sum(np.abs(est - pub) <= band + 1e-12))
    ax.set_title("Published training runs: report and estimate", fontsize=SMALL)
    skipped = [r for r in runs if "skip" in r]
    p.numbers = {"runs": len(done), "within": within, "skipped": len(skipped),
                 "median_gap": float(np.median(est - pub)), "max_gap": float(np.max(est - pub)),
                 "min_gap": float(np.min(est - pub))}
    skip = ("; not modelled: " + ", ".join(f"{r['run']} ({r['skip'][:60]})" for r in skipped)
            if skipped else "")
    return (f"Dot plot of {len(done)} published training runs, one row each, the published "
            f"utilisation beside this chapter's estimate (MFU against MFU, HFU against HFU): "
            f"{within} lie within {band * 100:g} points, the estimate runs "
            f"{np.median(est - pub) * 100:.1f} points above the report in the median "
            f"({np.min(est - pub) * 100:+.1f} to {np.max(est - pub) * 100:+.1f}){skip}.")


def _run_label(run):
    """'megatron-1008b' -> 'Megatron 1008b', 'llama3-405b-8k-8192gpu' -> 'Llama 3 8k 8192'."""
    if run.startswith("llama3"):
        parts = run.split("-")
        return f"Llama 3 {parts[2].upper()}, {int(parts[3].removesuffix('gpu')):,} GPUs"
    head, _, rest = run.partition("-")
    return {"megatron": "Megatron", "palm": "PaLM", "opt": "OPT", "bloom": "BLOOM",
            "deepseek": "DeepSeek"}.get(head, head) + (f" {rest.upper()}" if rest else "")


# ----- failures: goodput against the checkpoint interval -----------------------------------

def _goodput_setup(p):
    ax = p.ax
    set_log(ax, x=fmt_t)
    ax.set_xlabel("compute between checkpoints τ")
    ax.set_ylabel("goodput (share of wall-clock time kept)")


@builder(setup=_goodput_setup)
def goodput_vs_interval(p, mtbf, checkpoint_time, restart_time=0.0, intervals=None):
    """Goodput (:func:`llmmath.layout.goodput`) against the compute time between checkpoints,
    with Young's and Daly's intervals (:func:`llmmath.layout.checkpoint_interval`) marked.
    ``intervals`` default a tenth of the checkpoint time to three MTBFs."""
    tau = (np.geomspace(checkpoint_time / 10, 3 * mtbf, 200) if intervals is None
           else np.asarray(intervals, dtype=float))
    g = np.asarray(goodput(tau, checkpoint_time, mtbf, restart_time))
    ax = p.ax
    p.add(ax.plot(tau, g, color=ROLE["compute"], lw=2.5, label="goodput")[0])
    young = float(checkpoint_interval(mtbf, checkpoint_time, "young"))
    daly = float(checkpoint_interval(mtbf, checkpoint_time, "daly"))
    g_young = float(goodput(young, checkpoint_time, mtbf, restart_time))
    g_daly = float(goodput(daly, checkpoint_time, mtbf, restart_time))
    best = float(g.max())
    p.point(daly, g_daly, f"Daly: {fmt_time(daly, 2)}, {fmt_percent(g_daly, 3)}",
            color=PALETTE["vermillion"])
    p.add(ax.plot([young], [g_young], "s", ms=6, color=PALETTE["green"], mec="white",
                  label=f"Young: {fmt_time(young, 2)}, {fmt_percent(g_young, 3)}")[0])
    ax.set_xlim(tau.min(), tau.max())
    time_axis(ax, tau.min(), tau.max(), keep=("1 s", "10 s", "1 min", "10 min", "1 h", "10 h",
                                              "1 day"), axis="x")
    ax.set_ylim(max(0.0, g.min() - 0.05), 1.0)
    ax.yaxis.set_major_formatter(lambda v, _: f"{v * 100:.0f}%")
    p.add(ax.legend(loc="lower center"))
    ax.set_title(f"MTBF {fmt_time(mtbf, 3)}, checkpoint {fmt_time(checkpoint_time, 2)}"
                 + (f", restart {fmt_time(restart_time, 2)}" if restart_time else ""),
                 fontsize=SMALL)
    p.numbers = {"young": young, "daly": daly, "goodput_young": g_young, "goodput_daly": g_daly,
                 "goodput_best": best}
    return (f"Goodput against the compute time between checkpoints, log x axis, for a mean time "
            f"between failures of {fmt_time(mtbf, 3)} and checkpoints of "
            f"{fmt_time(checkpoint_time, 2)}: it rises while checkpoints cost more than the work "
            f"they save and falls when failures lose more than a checkpoint costs, peaking near "
            f"{fmt_percent(best, 3)} at Daly's interval of {fmt_time(daly, 2)} "
            f"({fmt_percent(g_daly, 3)}); Young's {fmt_time(young, 2)} gives "
            f"{fmt_percent(g_young, 3)}.")


# ----- the chapter's explorer ----------------------------------------------------------------

TP_DEGREES = [1, 2, 4, 8]
PP_DEGREES = [1, 2, 4, 8, 16, 32, 64]
CP_DEGREES = [1, 2, 4, 8, 16]
LAYOUT_CHIPS = [64, 256, 1024, 2048, 4096, 8192, 16384]


@explorer(main="stages", sweep=PP_DEGREES)
def layout_explorer(model="Llama-3-70B", chip="H100-SXM", n_chips=4096, tensor_parallel=8,
                    stages=16, context_parallel=1, zero_stage=1, recompute="selective",
                    global_batch=2048, sequence_length=8192):
    """Laying out a training run: one step's waterfall for the layout the controls set
    (``dp = n_chips / (tp pp cp)``), its MFU, memory per chip and whether it fits."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "n_chips": steps("chips n", LAYOUT_CHIPS, n_chips),
        "tensor_parallel": steps("TP", TP_DEGREES, tensor_parallel),
        "stages": steps("PP", PP_DEGREES, stages),
        "context_parallel": steps("CP", CP_DEGREES, context_parallel),
        "zero_stage": dropdown("ZeRO", [0, 1, 2, 3], zero_stage),
        "recompute": dropdown("recompute", ["none", "selective", "full"], recompute),
        "global_batch": steps("batch (seq.)", [256, 512, 1024, 2048, 4096], global_batch),
        "sequence_length": steps("S", [2048, 4096, 8192, 32768, 131072], sequence_length),
    }

    def figure(v):
        n, tp_, pp_, cp_ = (int(v[k]) for k in ("n_chips", "tensor_parallel", "stages",
                                                "context_parallel"))
        if n % (tp_ * pp_ * cp_):
            raise ValueError(f"n_chips: {n:,} chips do not divide by tp pp cp = "
                             f"{tp_ * pp_ * cp_}")
        lay = Layout(dp=n // (tp_ * pp_ * cp_), tp=tp_, pp=pp_, cp=cp_,
                     zero_stage=int(v["zero_stage"]), recompute=v["recompute"],
                     schedule="1f1b")
        return layout_step_waterfall, dict(model=model_of(v["model"]), chip=chip_of(v["chip"]),
                                           layout=lay, global_batch=int(v["global_batch"]),
                                           sequence_length=int(v["sequence_length"]))

    return controls, figure, _layout_readout


def _layout_readout(n):
    rows = [("step time", fmt_time(n["time"])), ("MFU", fmt_percent(n["mfu"], 3)),
            ("HFU", fmt_percent(n["hfu"], 3)),
            ("micro-batches per step", f"{n['micro_batches']:,}"),
            ("bubble fraction", fmt_percent(n["bubble_fraction"], 3))]
    rows += [(f"+ {k}", fmt_time(t)) for k, t in n["terms"].items() if k != "compute" and t > 0]
    rows += [("memory per chip", fmt_bytes(n["memory"])),
             ("fits in HBM", "yes" if n["fits"] else f"no: {fmt_bytes(n['hbm'])} per chip")]
    return rows
