"""Figures: spending memory to save compute (chapter 13)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from .. import chips as _chips
from ..memory import memory_tiers
from ..tradeoffs import (
    CHECKPOINT_SCHEMES,
    checkpoint_price,
    max_hold_time,
    recompute_crossover,
    recompute_intensity,
    store_or_recompute,
)
from ..units import fmt_bytes, fmt_count, fmt_si, fmt_time
from .explore import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    chip_picker,
    explorer,
    model_picker,
    or_dash,
    steps,
)
from .figure import as_list, builder, chip_of, model_of
from .labels import (
    chips_label,
    fmt_b,
    fmt_t,
    fmt_tokens,
    loglim,
    place,
    set_log,
    time_axis,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL, TIER_COLOUR

__all__ = ["store_vs_recompute", "recompute_intensity_vs_ridge", "checkpoint_memory_vs_depth",
           "hold_time_by_tier"]


# ----- the KV cache: a decode step with and without it --------------------------------------------

def _store_setup(p):
    ax = p.ax
    p.l_store, = ax.plot([], [], color=ROLE["kv"], lw=2.5, label="read the KV cache (decode step)")
    p.l_rec, = ax.plot([], [], color=ROLE["compute"], lw=2.5, ls="--",
                       label="recompute it (prefill of S + 1 tokens)")
    set_log(ax, x=lambda v: fmt_count(v, 2), y=fmt_t)
    ax.set_xlabel("context S (tokens)")
    ax.set_ylabel("time per decode step (s)")


@builder(setup=_store_setup)
def store_vs_recompute(p, model, chip, batch=1, n_chips=1, contexts=None, weight_bytes=2,
                       kv_bytes=2, dtype="bf16", mark_context=None):
    """Lower bound on a decode step against context, reading the KV cache or recomputing it.

    Both from :func:`llmmath.tradeoffs.store_or_recompute`; the dot marks
    :func:`llmmath.tradeoffs.recompute_crossover`, the longest context recomputed at no cost in
    time. ``contexts`` default 16 .. the model's window minus one.
    """
    m, c = model_of(model), chip_of(chip)
    dt, dnote = c.resolve_dtype(dtype)
    top = float(m.max_context) - 1.0
    S = (np.asarray(contexts, dtype=float) if contexts is not None
         else np.unique(np.geomspace(16, top, 48).round()))
    S = S[S <= top]
    r = store_or_recompute(m, c, batch, S, n_chips=n_chips, weight_bytes=weight_bytes,
                           kv_bytes=kv_bytes, dtype=dt)
    ts, tr = np.asarray(r.store.time), np.asarray(r.recompute.time)
    p.l_store.set_data(S, ts)
    p.l_rec.set_data(S, tr)
    ax = p.ax
    ax.set_xlim(S.min(), S.max())
    ax.set_ylim(*loglim(np.concatenate([ts, tr]), pad=1.6))
    sx = recompute_crossover(m, c, batch=batch, n_chips=n_chips, weight_bytes=weight_bytes,
                             kv_bytes=kv_bytes, dtype=dt)
    ratio_end = float(tr[-1] / ts[-1])
    if S.min() <= sx <= S.max():
        tx = float(store_or_recompute(m, c, batch, sx, n_chips=n_chips, weight_bytes=weight_bytes,
                                      kv_bytes=kv_bytes, dtype=dt).store.time)
        p.point(sx, tx, f"free up to S = {sx:,.0f}", color=PALETTE["black"], offset=(8, -12),
                ha="left")
    p.add(ax.legend(loc="upper left"))
    with p.marking():
        if mark_context is not None:
            sm = min(float(mark_context), top)
            rm = store_or_recompute(m, c, batch, sm, n_chips=n_chips, weight_bytes=weight_bytes,
                                    kv_bytes=kv_bytes, dtype=dt)
            p.point(sm, float(rm.recompute.time),
                    f"S = {fmt_tokens(sm, 3)}: recompute {float(rm.time_ratio):,.3g}×",
                    color=ROLE["compute"])
            p.numbers = {"store": float(rm.store.time), "recompute": float(rm.recompute.time),
                         "ratio": float(rm.time_ratio), "context": sm,
                         "extra_flops": rm.extra_flops, "saved_bytes": rm.saved_bytes}
    ax.set_title(with_notes(f"{m.name} on {chips_label(n_chips, c)}, batch {batch:g}", dnote))
    p.numbers.update(crossover=sx, ratio_at_end=ratio_end,
                     recompute_intensity=recompute_intensity(m), ridge=c.ops_per_byte(dt))
    return (f"Log-log plot of the decode step's lower bound against context for {m.name} on "
            f"{n_chips:g} {c.name} at batch {batch:g}: reading the KV cache stays near "
            f"{fmt_time(ts[0], 2)} and grows slowly; recomputing the context every step costs "
            f"nothing extra up to about {sx:,.0f} tokens, then grows in proportion to the context, "
            f"to {ratio_end:,.0f} times the cached step at {fmt_tokens(S[-1], 3)} tokens.")


# ----- FLOPs to rebuild a byte against the chips' ridge points -----------------------------------

def _intensity_height(args):
    n = len(as_list(args.get("model_list"), None) or [])
    return (6.4, max(3.2, 0.34 * n + 1.6))


@builder(figsize=_intensity_height)
def recompute_intensity_vs_ridge(p, model_list, chip_list=None, kv_bytes=2):
    """FLOP to rebuild one KV byte (``2 N_mm / b_kv``) per model, beside the chips' ridge points.

    Horizontal bars on a log axis; dashed lines at the lowest and highest ridge point ``C / W`` of
    ``chip_list`` (default the catalogue, every precision). Recomputing a byte beats reading it
    only left of the ridge line.
    """
    ms = [model_of(m) for m in as_list(model_list, None)]
    cs = ([chip_of(c) for c in as_list(chip_list, None)] if chip_list is not None
          else _chips.all_chips())
    ax = p.ax
    vals = np.array([float(recompute_intensity(m, kv_bytes)) for m in ms])
    order = np.argsort(vals)
    y = np.arange(len(ms))
    p.add(ax.barh(y, vals[order], color=ROLE["compute"], height=0.62))
    ax.set_yticks(y, [ms[i].name for i in order], fontsize=SMALL)
    ridges = {(c.name, d): c.ops_per_byte(d) for c in cs for d in c.flops}
    (lo_key, lo), (hi_key, hi) = (min(ridges.items(), key=lambda kv: kv[1]),
                                  max(ridges.items(), key=lambda kv: kv[1]))
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_count(v, 2)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo / 3, vals.max() * 6)
    ax.set_ylim(-0.7, len(ms) - 0.3)
    ax.grid(axis="y", visible=False)
    for v, key, ls, word in ((lo, lo_key, ":", "lowest"), (hi, hi_key, "--", "highest")):
        p.add(ax.axvline(v, color=ROLE["reference"], ls=ls, lw=1.5,
                         label=f"{word} ridge point C/W: {v:,.0f} ({key[0]}, {key[1]})"))
    p.add(ax.legend(loc="lower right"))
    for yi, i in zip(y, order, strict=True):
        def make(cand, yi=yi, v=vals[i]):
            dx, ha, col = cand
            return ax.annotate(f"{v / hi:,.0f}×", (v, yi), xytext=(dx, 0),
                               textcoords="offset points", ha=ha, va="center", fontsize=SMALL,
                               color=col)
        p.add(place(ax, make, [(4, "left", "black"), (-4, "right", "white")]))
    ax.set_xlabel(f"FLOP to rebuild one cached byte ({kv_bytes:g}-byte KV)")
    ax.set_title("FLOP to rebuild a cached byte, against the chips' ridge points\n"
                 "(beside each bar: times the highest ridge point)")
    p.numbers = {"intensity": {ms[i].name: float(vals[i]) for i in order}, "ridge_low": lo,
                 "ridge_high": hi, "min_over_high_ridge": float(vals.min() / hi)}
    return ("Horizontal bar chart, log scale, of the FLOPs needed to rebuild one byte of KV cache "
            f"for {len(ms)} models, from {fmt_count(vals.min(), 2)} ({ms[order[0]].name}) to "
            f"{fmt_count(vals.max(), 2)} ({ms[order[-1]].name}) FLOP per byte, beside the chips' "
            f"ridge points from {lo:,.0f} to {hi:,.0f} FLOP per byte: every bar ends at least "
            f"{vals.min() / hi:,.0f} times past the highest ridge point.")


# ----- training: activation memory against depth ---------------------------------------------

_SCHEME_STYLE = {"none": (PALETTE["vermillion"], "-"), "selective": (PALETTE["orange"], "-."),
                 "full": (PALETTE["blue"], "--"), "reversible": (PALETTE["green"], "-")}


def _depth_setup(p):
    set_log(p.ax, x=lambda v: f"{v:,.0f}", y=fmt_b)
    p.ax.set_xlabel("layers L (count)")
    p.ax.set_ylabel("activations held (bytes)")


@builder(setup=_depth_setup)
def checkpoint_memory_vs_depth(p, model, tokens, sequence_length, chip=None):
    """Activation memory held for the backward pass against depth, for each recomputation scheme.

    The model's layers are varied with its width fixed (:func:`llmmath.tradeoffs.checkpoint_price`);
    the legend gives each scheme's extra FLOPs. ``chip`` draws its HBM as a line.
    """
    m = model_of(model)
    ax = p.ax
    L = np.unique(np.geomspace(4, 256, 24).round())
    out, over = {}, {}
    for s in CHECKPOINT_SCHEMES:
        y = np.array([float(checkpoint_price(m.replace(n_layers=int(n)), tokens, sequence_length, s)
                            .activation_bytes) for n in L])
        over[s] = float(checkpoint_price(m, tokens, sequence_length, s).overhead)
        col, ls = _SCHEME_STYLE[s]
        out[s] = y
        p.add(ax.plot(L, y, color=col, ls=ls, lw=2.3, label=f"{s}: +{over[s]:.0%} FLOPs")[0])
    ax.set_xlim(L.min(), L.max())
    allv = np.concatenate(list(out.values()))
    lo, hi = loglim(allv, pad=2.0)
    if chip is not None:
        c = chip_of(chip)
        p.hline(c.hbm_capacity, f"one {c.name}: {fmt_bytes(c.hbm_capacity)}",
                color=ROLE["capacity"], x=0.99, ha="right")
        lo, hi = min(lo, c.hbm_capacity / 2), max(hi, c.hbm_capacity * 2)
    ax.set_ylim(lo, hi * 8)
    p.add(ax.legend(loc="upper left", ncol=2))
    here = {s: float(checkpoint_price(m, tokens, sequence_length, s).activation_bytes)
            for s in CHECKPOINT_SCHEMES}
    n_seq = tokens / sequence_length
    ax.set_title(f"{m.name}'s width, " + (f"one {sequence_length:,.0f}-token sequence" if n_seq == 1
                 else f"{fmt_count(n_seq)} × {sequence_length:,.0f}-token sequences"))
    p.numbers.update(at_model=here, overhead=over)
    return (f"Log-log plot of activation memory against depth for a model as wide as {m.name}, "
            f"{fmt_tokens(tokens, 3)} tokens in flight: keeping everything, selective and full "
            f"recomputation grow in proportion to the layers (at the model's own {m.n_layers} "
            f"layers {fmt_bytes(here['none'])}, {fmt_bytes(here['selective'])} and "
            f"{fmt_bytes(here['full'])}); reversible layers stay flat at "
            f"{fmt_bytes(here['reversible'])}. Full and reversible cost "
            f"{over['full']:.0%} more FLOPs, selective {over['selective']:.1%}.")


# ----- prompt caching: how long a prefix is worth holding -------------------------------------

@builder(figsize=(6.4, 3.9))
def hold_time_by_tier(p, model, chip, prompt=8192, n_chips=1, tiers=None,
                      lifetimes=(("5 min", 300.0), ("1 h", 3600.0))):
    """Longest time each memory tier can hold a prompt's KV cache before recomputing is cheaper.

    :func:`llmmath.tradeoffs.max_hold_time` per tier (horizontal bars, log axis); the top axis
    marks the cache lifetimes API price sheets sell.
    """
    m, c = model_of(model), chip_of(chip)
    ts = list(tiers) if tiers is not None else memory_tiers()
    ax = p.ax
    y = np.arange(len(ts))
    t = np.array([float(max_hold_time(m, c, tier, prompt=prompt, n_chips=n_chips)) for tier in ts])
    cols = TIER_COLOUR * 3
    p.add(ax.barh(y, np.maximum(t, 1e-3), color=cols[:len(ts)], height=0.6))
    ax.set_yticks(y, [tier.name for tier in ts], fontsize=SMALL)
    lo = max(min(t[t > 0].min() if (t > 0).any() else 1.0, min(v for _, v in lifetimes)) / 5, 1e-3)
    hi = max(t.max(), max(v for _, v in lifetimes)) * 30
    ax.set_xlim(lo, hi)
    time_axis(ax, lo, hi, keep=("1 s", "1 min", "1 h", "1 day", "1 week"))
    ax.set_ylim(len(ts) - 0.4, -0.6)
    top = p.add(ax.secondary_xaxis("top"))
    top.set_xticks([v for _, v in lifetimes], [n for n, _ in lifetimes], color=ROLE["cost"],
                   fontsize=SMALL)
    top.xaxis.set_minor_formatter(NullFormatter())
    top.tick_params(axis="x", which="minor", length=0)
    top.tick_params(axis="x", which="major", length=8, width=1.5, color=ROLE["cost"])
    for yi, ti in zip(y, t, strict=True):
        def make(cand, yi=yi, ti=ti):
            dx, ha, col = cand
            return ax.annotate(fmt_time(ti) if ti > 0 else "never", (max(ti, lo), yi),
                               xytext=(dx, 0), textcoords="offset points", ha=ha, va="center",
                               fontsize=SMALL, color=col)
        p.add(place(ax, make, [(4, "left", "black"), (-4, "right", "white")]))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("longest hold before recomputing is cheaper")
    ax.set_title(f"{m.name}, {fmt_tokens(prompt, 3)}-token prefix, prefill on "
                 f"{chips_label(n_chips, c)}", pad=24)
    p.numbers = {tier.name: float(ti) for tier, ti in zip(ts, t, strict=True)}
    return (f"Horizontal bar chart, log scale, of how long a {m.name} prompt cache can be held in "
            "each memory tier before holding it costs more than recomputing it on "
            f"{c.name}: " + ", ".join(f"{tier.name} {fmt_time(ti)}"
                                      for tier, ti in zip(ts, t, strict=True))
            + "; the top axis marks the 5-minute and 1-hour cache lifetimes of API price sheets.")


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="context", sweep=CONTEXTS)
def tradeoff_explorer(model="Llama-3-70B", chip="H100-SXM", batch=1, context=4096, n_chips=8):
    """Store or recompute (chapter 13): a decode step that reads its KV cache beside one that
    recomputes the context, against context; the panel gives both bounds, the extra FLOPs, the
    bytes saved, the context recomputed for free and the FLOPs per rebuilt byte."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "batch": steps("batch B", BATCHES, batch),
        "n_chips": steps("chips n", CHIP_COUNTS, n_chips),
        "context": steps("context", CONTEXTS, context),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        ctx = min(float(v["context"]), float(m.max_context) - 1.0)
        return store_vs_recompute, dict(model=m, chip=c, batch=v["batch"], n_chips=v["n_chips"],
                                        dtype=dt, mark_context=ctx)

    return controls, figure, _tradeoff_readout


def _tradeoff_readout(n):
    return [("context used", f"{n['context']:,.0f} tokens"),
            ("step, reading the cache", fmt_time(n["store"])),
            ("step, recomputing it", fmt_time(n["recompute"])),
            ("recompute / read", f"{n['ratio']:,.3g}×"),
            ("extra FLOPs per step", fmt_si(n["extra_flops"], "FLOP")),
            ("KV bytes not read", fmt_bytes(n["saved_bytes"])),
            ("free recompute up to", or_dash(n["crossover"], lambda x: f"{x:,.0f} tokens")),
            ("FLOP per rebuilt byte", f"{n['recompute_intensity']:,.0f}"),
            ("chip ridge C/W", f"{n['ridge']:,.0f} FLOP/byte")]
