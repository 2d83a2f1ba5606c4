"""Figures: from bound to estimate (chapter 10).

Every number drawn comes from :func:`llmmath.estimate.estimate_step` or the calibration set
(:func:`llmmath.estimate.calibration_rows`): the per-operation bound, each term the estimate adds,
and the published measurements.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from matplotlib.ticker import MaxNLocator

from ..estimate import (
    DEFAULT_OVERHEADS,
    Overheads,
    estimate_step,
)
from ..units import fmt_count, fmt_time
from .explore import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    PRECISIONS,
    check,
    chip_picker,
    dropdown,
    explorer,
    model_picker,
    steps,
)
from .explore import precision as _precision
from .figure import builder, chip_of, grid, mask, model_of
from .labels import (
    chips_label,
    fmt_batch,
    fmt_t,
    fmt_tokens,
    loglim,
    note,
    set_log,
    time_axis,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL

__all__ = ["estimate_waterfall", "calibration_scatter", "estimate_vs_batch"]

#: One colour per term of the estimate (the bound in the bound's colour).
TERM_COLOUR = {
    "bound": ROLE["bound"],
    "kernel efficiency": PALETTE["sky"],
    "grouped experts": PALETTE["green"],
    "grouped-GEMM kernel": PALETTE["green"],
    "expert-parallel replicated weights": ROLE["weights"],
    "expert load imbalance": PALETTE["vermillion"],
    "tensor-parallel all-reduce": PALETTE["purple"],
    "expert-parallel all-to-all": PALETTE["vermillion"],
    "per-layer kernel overhead": ROLE["overhead"],
    "per-step overhead": PALETTE["grey"],
}
#: Short names for a bar's row (a phone is narrow).
_SHORT = {
    "bound": "bound", "kernel efficiency": "+ kernel efficiency",
    "grouped experts": "+ grouped experts", "grouped-GEMM kernel": "+ engine MoE kernel",
    "expert-parallel replicated weights": "+ EP replicated weights",
    "expert load imbalance": "+ expert imbalance", "tensor-parallel all-reduce": "+ TP all-reduce",
    "expert-parallel all-to-all": "+ EP all-to-all",
    "per-layer kernel overhead": "+ per-layer kernels",
    "per-step overhead": "+ per-step overhead",
}
ESTIMATE_COLOUR, MEASURED_COLOUR = PALETTE["blue"], PALETTE["orange"]


def _row(row, overheads):
    """A calibration row (an index into :func:`calibration_rows` or one of its dicts), evaluated
    with ``overheads`` (None: the defaults, with the row's engine-specific coefficients)."""
    from .. import _calibration

    if isinstance(row, (bool, np.bool_)) or not isinstance(row, (int, np.integer, dict)):
        raise TypeError(f"row: got {row!r}; expected an index into "
                        "llmmath.estimate.calibration_rows() or one of its rows (a dict)")
    if not isinstance(row, dict):
        rows = _calibration.load()
        if not 0 <= int(row) < len(rows):
            raise ValueError(f"row: got {row!r}; the calibration set has rows 0 to {len(rows) - 1}")
        row = rows[int(row)]
    if overheads is None:
        overheads = DEFAULT_OVERHEADS
    if not isinstance(overheads, Overheads):
        raise TypeError(f"overheads: got {overheads!r}; expected an Overheads (llmmath.estimate)")
    return row, _calibration.evaluate(row, overheads)


def _row_title(row):
    what = {"decode": "one decode step", "prefill": f"prefill of {row['input_tokens']:,} tokens",
            "generate": (f"{row['input_tokens']:,} in, {row['output_tokens']:,} out, "
                         "whole batch")}[row["phase"]]
    engine = row["engine"].split(" (")[0]
    return (f"{row['model']} on {row['n_chips']}× {row['chip']}, {engine}\n"
            f"batch {row['batch']:,}, {what}")


def _waterfall_height(args):
    return (6.4, 4.6)


@builder(figsize=_waterfall_height)
def estimate_waterfall(p, row, overheads=None):
    """From bound to estimate to measurement for one row of the calibration set: a waterfall.

    ``row`` is an index into :func:`llmmath.estimate.calibration_rows` or one of its rows. Each
    bar starts where the previous one ended: the per-operation bound, then each term of
    :class:`llmmath.estimate.Estimate` summed over the steps the measurement spans, then the
    estimate and the published measurement as whole bars. ``overheads``: the coefficients
    (default the cited constants, with the row's engine-specific ones).
    """
    r, res = _row(row, overheads)
    ax = p.ax
    names = list(_SHORT)
    vals = [res[n] for n in names]
    measured, est, bound = r["measured_s"], res["estimate"], res["bound"]
    labels = [_SHORT[n] for n in names] + ["= estimate", "measured"]
    y = np.arange(len(labels))[::-1]
    left, acc = [], 0.0
    for v in vals:
        left.append(acc)
        acc += v
    widths = vals + [est, measured]
    lefts = left + [0.0, 0.0]
    colours = [TERM_COLOUR[n] for n in names] + [ESTIMATE_COLOUR, MEASURED_COLOUR]
    p.add(ax.barh(y, widths, left=lefts, color=colours, height=0.66, edgecolor="none"))
    top = max(measured, est)
    ax.set_xlim(0, top * 1.42)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_yticks(y, labels, fontsize=SMALL)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_formatter(lambda v, _: fmt_t(v) if v > 0 else "0")
    # whole seconds once the axis reaches a second: "1.5 s" is not a round time to read off
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True) if top * 1.42 >= 1
                               else MaxNLocator(nbins=5, steps=[1, 2, 5, 10]))
    for yi, lf, w, lab in zip(y, lefts, widths, labels, strict=True):
        if lab == "measured":
            text = f"{fmt_time(w, 3)}: {measured / est:.2f}× est."
        elif lab == "= estimate":
            text = f"{fmt_time(w, 3)} ({est / bound:.2f}× bound)"
        elif lab == "bound":
            text = fmt_time(w, 3)
        else:
            text = f"+{fmt_time(w, 2)}" if w > 0 else "0"
        p.add(ax.annotate(text, (lf + w, yi), xytext=(4, 0), textcoords="offset points",
                          ha="left", va="center", fontsize=SMALL, color=PALETTE["black"]))
    ax.set_xlabel("time of what was measured")
    ax.set_title(_row_title(r), fontsize=SMALL)
    p.numbers = {"bound": bound, "estimate": est, "measured": measured,
                 "measured_over_bound": measured / bound, "measured_over_estimate": measured / est,
                 "terms": {n: res[n] for n in names}}
    big = max(names[1:], key=lambda n: res[n])
    return (f"Horizontal waterfall for {r['model']} on {r['n_chips']} {r['chip']} "
            f"({r['engine']}, batch {r['batch']:,}): the per-operation bound of "
            f"{fmt_time(bound, 3)}, then the terms the estimate adds, the largest {big} "
            f"(+{fmt_time(res[big], 2)}), up to an estimate of {fmt_time(est, 3)}, "
            f"{est / bound:.2f} times the bound; the published measurement is "
            f"{fmt_time(measured, 3)}, {measured / bound:.2f} times the bound and "
            f"{measured / est:.2f} times the estimate.")


def _scatter_setup(p):
    ax = p.ax
    set_log(ax, x=fmt_t, y=fmt_t)
    ax.set_xlabel("estimate of the measured time")
    ax.set_ylabel("measured time")


#: One colour per serving engine in the calibration figure (an engine without a preset grey).
ENGINE_COLOUR = {"vllm": PALETTE["blue"], "sglang": PALETTE["vermillion"],
                 "tensorrt-llm": PALETTE["green"], None: PALETTE["grey"]}
_ENGINE_NAME = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM",
                None: "other engines"}


@builder(setup=_scatter_setup)
def calibration_scatter(p, overheads=None):
    """Every row of the calibration set: the estimate (x) against the measurement (y), log-log.

    Colour: the serving engine (``ENGINE_COLOUR``); marker: dense (circle) or MoE
    (triangle); filled: a held-out (``test``) source, hollow: a source looked at while choosing
    terms. The solid diagonal is "measured = estimate", the shaded band "within a factor of 1.3
    either way" (``llmmath._calibration.WITHIN_FACTOR``); a point above the band took longer than
    estimated. ``overheads``: the coefficients (default the cited constants, with each row's
    engine preset).
    """
    from .. import _calibration

    o = DEFAULT_OVERHEADS if overheads is None else overheads
    if not isinstance(o, Overheads):
        raise TypeError(f"overheads: got {overheads!r}; expected an Overheads (llmmath.estimate)")
    rows = [(r, _calibration.evaluate(r, o)) for r in _calibration.load()]
    ax = p.ax
    est = np.array([e["estimate"] for _, e in rows])
    meas = np.array([r["measured_s"] for r, _ in rows])
    f = _calibration.WITHIN_FACTOR
    lo, hi = min(est.min(), meas.min()) / 2, max(est.max(), meas.max()) * 2
    diag = np.geomspace(lo, hi, 16)
    band = p.add(ax.fill_between(diag, diag / f, diag * f, color=PALETTE["grey"], alpha=0.16,
                                 lw=0, zorder=0, label=f"within {f:g}× either way"))
    note(band, legend=True)
    guide = p.add(ax.plot(diag, diag, ls="-", color=ROLE["reference"], lw=1.0,
                          label="measured = estimate")[0])
    note(guide, guide=True)
    engines = [_calibration.engine_of(r) for r, _ in rows]
    for engine in ENGINE_COLOUR:
        for kind, marker in (("dense", "o"), ("moe", "^")):
            for split in ("test", "fit"):
                sel = [i for i, (r, _) in enumerate(rows) if engines[i] == engine
                       and r["kind"] == kind and r["split"] == split]
                if not sel:
                    continue
                colour = ENGINE_COLOUR[engine]
                p.add(ax.scatter(est[sel], meas[sel], s=40, marker=marker, linewidths=1.3,
                                 zorder=4, edgecolors=colour,
                                 facecolors=colour if split == "test" else "white"))
    # the legend says what colour, shape and fill mean once each, not once per combination
    from matplotlib.lines import Line2D

    handles = [band, guide]
    handles += [Line2D([], [], ls="", marker="s", ms=7, color=ENGINE_COLOUR[e],
                       label=_ENGINE_NAME[e]) for e in ENGINE_COLOUR if e in engines]
    handles += [Line2D([], [], ls="", marker="o", ms=7, mfc="white", color="black",
                       label="dense"),
                Line2D([], [], ls="", marker="^", ms=7, mfc="white", color="black", label="MoE"),
                Line2D([], [], ls="", marker="o", ms=7, color="black",
                       label="filled: held-out source")]
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    keep = ("1 ms", "10 ms", "0.1 s", "1 s", "10 s", "1 min", "10 min")
    time_axis(ax, lo, hi, keep=keep, axis="x")
    time_axis(ax, lo, hi, keep=keep, axis="y")
    p.add(ax.legend(handles=handles, loc="upper left"))
    ratio = meas / est
    inside = (ratio >= 1 / f) & (ratio <= f)
    dense = np.array([r["kind"] == "dense" for r, _ in rows])
    p.numbers = {
        "rows": len(rows), "sources": len({r["source"] for r, _ in rows}),
        "within": int(inside.sum()), "dense_within": int((inside & dense).sum()),
        "moe_within": int((inside & ~dense).sum()), "dense_rows": int(dense.sum()),
        "moe_rows": int((~dense).sum()),
        "median_over_estimate": float(np.median(ratio)),
        "max_over_estimate": float(ratio.max()), "min_over_estimate": float(ratio.min()),
    }
    ax.set_title("Published latencies against the estimate")
    n = p.numbers
    return (f"Log-log scatter of {n['rows']} published latencies from {n['sources']} sources, "
            f"the estimate on the x axis and the measurement on the y axis, coloured by serving "
            f"engine, circles dense and triangles MoE: {n['within']} lie within a factor of "
            f"{f:g} of the diagonal (dense {n['dense_within']} of {n['dense_rows']}, MoE "
            f"{n['moe_within']} of {n['moe_rows']}); the median measurement is "
            f"{n['median_over_estimate']:.2f} times its estimate, the extremes "
            f"{n['min_over_estimate']:.2f} and {n['max_over_estimate']:.2f}.")


def _vs_batch_setup(p):
    ax = p.ax
    set_log(ax, x=fmt_batch, y=fmt_t)
    ax.set_xlabel("batch B (sequences per step)")
    ax.set_ylabel("time per step (s)")


@builder(setup=_vs_batch_setup)
def estimate_vs_batch(p, model, chip, context=4096, n_chips=1, phase="decode", weight_bytes=2,
                      kv_bytes=2, dtype="bf16", expert_parallel=1, overheads=None, batches=None,
                      mark_batch=None):
    """The estimate of one step against batch, term by term, beside the per-operation bound.

    Lines: the bound, the estimate (their sum with every term), and each term of
    :class:`llmmath.estimate.Estimate` that is not zero somewhere on the sweep. ``batches``
    default 1 .. 4,096; ``mark_batch`` marks one batch with its estimate over the bound.
    ``phase="prefill"``: ``batch`` prompts of ``context`` tokens each.
    """
    m, c = model_of(model), chip_of(chip)
    o = DEFAULT_OVERHEADS if overheads is None else overheads
    dt, dnote = c.resolve_dtype(dtype)
    ctx, cnote = m.cap_context(context)
    B = grid(batches, 1, 4096, n=40)
    kw = dict(n_chips=n_chips, phase=phase, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
              dtype=dt, expert_parallel=expert_parallel, overheads=o)
    # the marked batch first: where it cannot be estimated, that is the error to report
    em = estimate_step(m, c, float(mark_batch), ctx, **kw) if mark_batch is not None else None
    e = estimate_step(m, c, B, ctx, **kw)
    ax = p.ax
    shown = [np.asarray(e.time) * np.ones_like(B)]
    p.add(ax.plot(*mask(B, e.time * np.ones_like(B)), color=ESTIMATE_COLOUR, lw=2.8,
                  label="estimate (bound + every term)")[0])
    for name, value in e.terms.items():
        v = np.asarray(value, dtype=float) * np.ones_like(B)
        if not np.any(v > 0):
            continue
        label = "step bound" if name == "bound" else name
        p.add(ax.plot(*mask(B, v), color=TERM_COLOUR[name], lw=2.8 if name == "bound" else 1.9,
                      ls="-" if name == "bound" else "--", label=label)[0])
        shown.append(v)
    ax.set_xlim(B.min(), B.max())
    ax.set_ylim(*loglim(np.concatenate(shown), pad=1.6, min_decades=2.0))
    p.add(ax.legend(loc="upper left"))
    ratio = np.asarray(e.time) / np.asarray(e.bound.time)
    with p.marking():
        if mark_batch is not None:
            r = float(em.time / em.bound.time)
            p.point(float(mark_batch), float(em.time),
                    f"B = {fmt_count(float(mark_batch), 3)}: {fmt_time(float(em.time), 2)},\n"
                    f"{r:.2f}× the bound", color=ESTIMATE_COLOUR)
            p.numbers = {"estimate": float(em.time), "bound": float(em.bound.time), "ratio": r,
                         **{k: float(v) for k, v in em.terms.items()},
                         "terms": {k: float(v) for k, v in em.terms.items()},
                         "tokens_per_second_per_chip": float(mark_batch) / float(em.time) / n_chips,
                         "expert_parallel": expert_parallel, "is_moe": m.is_moe}
    what = "decode step" if phase == "decode" else f"prefill of {fmt_count(ctx, 3)}-token prompts"
    ax.set_title(with_notes(f"{m.name} on {chips_label(n_chips, c)}, {what}"
                            + (f", context {fmt_tokens(ctx, 3)}" if phase == "decode" else ""),
                            dnote, cnote))
    p.numbers.update(ratio_min=float(ratio.min()), ratio_max=float(ratio.max()))
    return (f"Log-log plot of the estimated {what} time against batch for {m.name} on "
            f"{chips_label(n_chips, c)}: the estimate lies {ratio.min():.2f} to "
            f"{ratio.max():.2f} times above the per-operation bound, with each term it adds "
            "drawn as its own dashed line.")


# ----- the chapter's explorer --------------------------------------------------------------------

EP_DEGREES = [1, 2, 4, 8, 16, 32, 64, 72]
#: The explorer's engine menu: its label -> the preset's name (None: the defaults).
ENGINE_CHOICES = {"none named": None, "vLLM": "vllm", "SGLang": "sglang",
                  "TensorRT-LLM": "tensorrt-llm"}


@explorer(main="batch", sweep=BATCHES)
def estimate_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096, n_chips=8,
                      expert_parallel=1, precision="bf16 weights, bf16 KV"):
    """From bound to estimate (chapter 10): one decode step's estimate against batch, term by
    term, beside the per-operation bound; the panel gives every term at the marked batch, the
    estimate over the bound and the tokens per second it implies. The engine picks its public
    preset (:meth:`llmmath.estimate.Overheads.for_engine`); a checkbox replays the step as a
    CUDA graph (the cost per kernel of a graph node instead of a launch)."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "precision": dropdown("precision", list(PRECISIONS), precision),
        "n_chips": steps("chips n", CHIP_COUNTS, n_chips),
        "expert_parallel": steps("EP degree", EP_DEGREES, expert_parallel),
        "context": steps("context", CONTEXTS, context),
        "engine": dropdown("engine", list(ENGINE_CHOICES), "none named"),
        "cuda_graphs": check("CUDA graphs", False),
        "batch": steps("batch B", BATCHES, batch),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        wb, kvb, dt = _precision(c, v["precision"])
        ctx = min(float(v["context"]), float(m.max_context) - 1.0)
        engine = ENGINE_CHOICES[v["engine"]]
        o = (dataclasses.replace(DEFAULT_OVERHEADS, cuda_graphs=v["cuda_graphs"]) if engine is None
             else Overheads.for_engine(engine, cuda_graphs=v["cuda_graphs"]))
        return estimate_vs_batch, dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"],
                                       weight_bytes=wb, kv_bytes=kvb, dtype=dt,
                                       expert_parallel=v["expert_parallel"] if m.is_moe else 1,
                                       overheads=o, mark_batch=v["batch"])

    return controls, figure, _estimate_readout


def _estimate_readout(n):
    rows = [("per-operation bound", fmt_time(n["bound"]))]
    rows += [(f"+ {name}", fmt_time(t)) for name, t in n["terms"].items() if name != "bound"]
    return rows + [("estimate", fmt_time(n["estimate"])),
                   ("estimate / bound", f"{n['ratio']:.2f}×"),
                   ("tokens/s per chip (estimate)", fmt_count(n["tokens_per_second_per_chip"])),
                   ("expert-parallel degree",
                    f"{n['expert_parallel']}" + ("" if n["is_moe"] else " (dense model)"))]
