"""Figures: decode."""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from matplotlib.patches import Patch

from ..cost import chip_hour_price, cost_per_million_tokens, tokens_per_second_per_user
from ..roofline import (
    batch_sweep,
    critical_batch,
    critical_context,
    decode_step,
    fits_in_memory,
    speculative_step,
    speculative_tokens_per_step,
)
from ..roofline import max_context as _maxctx
from ..units import fmt_count, fmt_time, fmt_usd
from .common import decode_at, fit_numbers, max_batch_at, set_time_lines, time_lines_setup
from .explore import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    PRECISIONS,
    chip_picker,
    dropdown,
    explorer,
    fit_rows,
    model_picker,
    or_dash,
    steps,
)
from .explore import precision as _precision
from .figure import builder, chip_of, grid, log_interp, mask, model_of, new_axes, try_value
from .labels import (
    chips_label,
    fmt_batch,
    fmt_n,
    fmt_t,
    fmt_tokens,
    loglim,
    set_log,
    settle_legend,
    with_notes,
)
from .style import NOFIT, PALETTE, ROLE, SMALL, house_style

__all__ = ["decode_time_vs_batch", "decode_time_vs_context", "regime_map",
           "speculative_gain_vs_batch"]


def _decode_time_vs_batch_setup(p):
    time_lines_setup(p)
    set_log(p.ax, x=fmt_batch, y=fmt_t)
    p.ax.set_xlabel("batch B (sequences)")
    p.ax.set_ylabel("decode step time, lower bound (s)")


@builder(setup=_decode_time_vs_batch_setup)
def decode_time_vs_batch(p, model, chip, batches=None, context=4096, n_chips=1, weight_bytes=2,
                         kv_bytes=2, dtype="bf16", overlap="step", mark_batch=None):
    """Decode step lower bound and its parts (compute, weight reads, KV reads) against batch.

    Annotates the weight-read floor, the critical batch B* (the knee, where compute overtakes
    memory) and greys out batches whose KV caches do not fit in ``n_chips`` chips' HBM.
    ``mark_batch`` puts a labelled point on the bound. Log-log; ``batches`` default 1..4096.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    ctx, cnote = model.cap_context(context)
    B = grid(batches, 1, 4096)
    sweep = batch_sweep(model, chip, B, ctx, n_chips=n_chips, weight_bytes=weight_bytes,
                        kv_bytes=kv_bytes, dtype=dt, overlap=overlap)
    s = sweep.step
    ys = set_time_lines(p, B, s)
    ax = p.ax
    ax.set_xlim(B.min(), B.max())
    ax.set_ylim(*loglim(np.concatenate([np.ravel(y) for y in ys]), pad=1.3))
    floor = sweep.floor
    p.hline(floor, f"weight-read floor: {fmt_t(floor)}", color=ROLE["weights"], x=0.01, ha="left",
               va="top")
    mb, need = sweep.max_batch, sweep.min_chips
    if mb is None or mb < 1:
        p.note(f"does not fit: weights + 1 sequence need {need} × {chip.name}", loc=(0.98, 0.03),
                  ha="right")
    elif mb < B.max():
        p.nofit(max(mb, B.min()), B.max(), f"KV does not fit (B > {mb:,})")
    bstar = sweep.critical_batch
    if bstar is not None and B.min() <= bstar <= B.max():
        p.vline(bstar, f"critical\nB* = {bstar:,.0f}", y=0.6)
    with p.marking():
        if mark_batch is not None:
            m = decode_at(model, chip, float(mark_batch), ctx, n_chips, weight_bytes, kv_bytes, dt,
                        overlap)
            p.point(float(mark_batch), m.time, f"B={float(mark_batch):g}: "
                                               f"{fmt_t(m.time)}, {m.bound}-bound")
            price, _ = chip_hour_price(chip)
            p.numbers = {"step_time": m.time, "bound": m.bound,
                         "tokens_per_second": float(mark_batch) / m.time,
                         "tokens_per_second_per_user": tokens_per_second_per_user(m),
                         "compute_time": m.compute_time, "weight_time": m.weight_time,
                         "kv_time": m.kv_time, "price_per_chip_hour": price,
                         "cost_per_million": cost_per_million_tokens(m, price)}
    ax.set_title(with_notes(f"{model.name} on {chips_label(n_chips, chip)}, context {fmt_n(ctx)}",
                        dnote, cnote))
    p.numbers.update(critical_batch=bstar, floor=floor, max_batch=mb)
    if mark_batch is not None:
        p.numbers.update(fit_numbers(model, chip, ctx, n_chips, weight_bytes, kv_bytes,
                                     mark_batch, mb))
    return f"Log-log plot of {sweep.describe()}."


def _decode_time_vs_context_setup(p):
    time_lines_setup(p)
    set_log(p.ax, x=lambda v: fmt_count(v, 2), y=fmt_t)
    p.ax.set_xlabel("context S (tokens in the KV cache)")
    p.ax.set_ylabel("decode step time, lower bound (s)")


@builder(setup=_decode_time_vs_context_setup)
def decode_time_vs_context(p, model, chip, batch=64, contexts=None, n_chips=1, weight_bytes=2,
                           kv_bytes=2, dtype="bf16", overlap="step", mark_context=None):
    """Decode step lower bound and its parts against context length at a fixed batch.

    Annotates the crossover context where KV reads overtake weight reads, the context where the
    step turns memory-bound, the critical context S* (memory-bound at any batch) and greys out
    contexts whose KV caches do not fit. ``contexts`` default 128..max_context.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    top = model.max_context or 1 << 20
    S = grid(contexts, 128, top)
    if model.max_context:
        S = S[S <= model.max_context]
        if S.size == 0:
            raise ValueError(f"contexts: none within {model.name}'s "
                             f"max_context {model.max_context}")
    s = decode_at(model, chip, float(batch), S, n_chips, weight_bytes, kv_bytes, dt, overlap)
    ys = set_time_lines(p, S, s)
    ax = p.ax
    ax.set_xlim(S.min(), S.max())
    ax.set_ylim(*loglim(np.concatenate([np.ravel(y) for y in ys]), pad=1.3))
    mc = try_value(_maxctx, model, chip, float(batch), n_chips=n_chips, weight_bytes=weight_bytes,
              kv_bytes=kv_bytes)
    if mc is not None and mc < S.max():
        p.nofit(max(mc, S.min()), S.max(), "KV does not fit")
    cross = log_interp(S, s.kv_time, s.weight_time)
    if cross is not None:
        p.vline(cross, f"S = {fmt_count(cross, 2)}:\nKV = weights", color=ROLE["kv"], y=0.6)
    flip = log_interp(S, s.memory_time, s.compute_time)
    if flip is not None and (cross is None or abs(math.log(flip / cross)) > 0.3):
        p.vline(flip, f"memory-bound\nfrom S = {fmt_count(flip, 2)}", y=0.35)
    sstar = try_value(critical_context, model, chip, kv_bytes=kv_bytes, dtype=dt)
    if sstar is not None and S.min() <= sstar <= S.max():
        p.vline(sstar, f"critical\nS* = {fmt_count(sstar, 2)}", color=ROLE["capacity"],
                   y=0.97)
    with p.marking():
        if mark_context is not None:
            m = decode_at(model, chip, float(batch), float(mark_context), n_chips, weight_bytes,
                        kv_bytes, dt, overlap)
            p.point(float(mark_context), m.time, f"S={fmt_tokens(float(mark_context))}: "
                                                 f"{fmt_t(m.time)}")
            p.numbers = {"step_time": m.time, "bound": m.bound}
    ax.set_title(with_notes(f"{model.name} on {chips_label(n_chips, chip)}, "
                            f"batch {float(batch):g}", dnote))
    p.numbers.update(crossover_context=cross, critical_context=sstar, max_context=mc)
    xs = (f"KV reads overtake weight reads at about {fmt_count(cross, 2)} tokens"
          if cross else "KV reads stay below weight reads over this range")
    return (f"Log-log plot of the decode step time lower bound of {model.name} on "
            f"{chips_label(n_chips, chip)} at batch {float(batch):g} against context "
            f"{fmt_tokens(S[0])} to {fmt_tokens(S[-1])} tokens: {xs}; "
            f"at {fmt_tokens(S[-1])} tokens "
            f"the step takes {fmt_t(s.time[-1])}.")


def _regime_map_setup(p):
    ax = p.ax
    set_log(ax, x=fmt_batch, y=lambda v: fmt_count(v, 2))
    ax.set_xlabel("batch B (sequences)")
    ax.set_ylabel("context S (tokens)")
    ax.grid(False)
    p.mesh = None
    ax.legend(handles=[Patch(color="#a6d3f0", label="compute-bound"),
                       Patch(color="#f5d08a", label="memory-bound"),
                       Patch(color=NOFIT, label="does not fit in HBM")],
              loc="upper right", framealpha=0.9, frameon=True)


@builder(figsize=(6.4, 4.4), setup=_regime_map_setup)
def regime_map(p, model, chip, n_chips=1, batches=None, contexts=None, weight_bytes=2, kv_bytes=2,
               dtype="bf16"):
    """The (batch, context) plane coloured compute-bound vs memory-bound (decode, step overlap).

    Draws the critical-batch curve B*(S) and the critical context S*, and greys out configurations
    whose weights and KV caches do not fit in ``n_chips`` chips' HBM.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    B = grid(batches, 1, 16384, n=90, integer=False)
    S = grid(contexts, 128, model.max_context or 1 << 20, n=70, integer=False)
    s = decode_at(model, chip, B[None, :], S[:, None], n_chips, weight_bytes, kv_bytes, dt, "step")
    cat = np.where(np.asarray(s.compute_time) >= np.asarray(s.memory_time), 1.0, 0.0)
    fits = fits_in_memory(model, chip, B[None, :], S[:, None], n_chips=n_chips,
                          weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    ax = p.ax
    cmap = mpl.colors.ListedColormap(["#f5d08a", "#a6d3f0", NOFIT])
    p.add(ax.pcolormesh(B, S, cat, cmap=cmap, vmin=-0.5, vmax=2.5, shading="nearest",
                           rasterized=True, zorder=0))
    cat = np.where(fits, cat, 2.0)
    # what does not fit, drawn over the grid as one smooth region right of the largest batch
    # that fits at each context (grid cells would give it a staircase edge)
    s_fine = np.geomspace(S.min(), S.max(), 240)
    most = np.array([max_batch_at(model, chip, sc, n_chips, weight_bytes, kv_bytes) or 0.0
                     for sc in s_fine], dtype=float)
    p.add(ax.fill_betweenx(s_fine, np.clip(most, B.min(), B.max()), B.max(), color=NOFIT,
                           lw=0, zorder=0.5))
    ax.set_xlim(B.min(), B.max())
    ax.set_ylim(S.min(), S.max())
    sstar = try_value(critical_context, model, chip, kv_bytes=kv_bytes, dtype=dt)
    below = S[S < sstar * 0.999] if sstar else S
    bcurve = []
    for sc in below:
        b = try_value(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt,
                      context=float(sc),
                 kv_bytes=kv_bytes)
        bcurve.append(b if b is not None else np.nan)
    bx, by = mask(np.asarray(bcurve, float), below)
    room = np.interp(np.log(by), np.log(s_fine), most) if by.size else by
    inside = (bx >= B.min()) & (bx <= B.max()) & (bx <= room)  # not through "does not fit"
    if inside.any():
        p.add(ax.plot(bx[inside], by[inside], color=ROLE["total"], lw=2, label="B*(S)")[0])
        j = int(np.nonzero(inside)[0][0])
        p.add(ax.annotate("critical batch B*(S)", (bx[j], by[j]), xytext=(6, 6),
                          textcoords="offset points", fontsize=SMALL))
    if sstar is not None and S.min() <= sstar <= S.max():
        p.hline(sstar, f"critical context S* = {fmt_count(sstar, 2)}", color=ROLE["capacity"],
                x=0.01,
                   ha="left", va="bottom")
    ax.set_title(with_notes(f"Decode regime: {model.name} on {chips_label(n_chips, chip)}", dnote))
    b0 = try_value(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt,
                   context=float(S.min()),
              kv_bytes=kv_bytes)
    p.numbers = {"critical_context": sstar, "critical_batch_short": b0}
    frac = float(np.mean(cat == 1))
    sp = (f"beyond the critical context of {fmt_count(sstar, 2)} "
          "tokens it is memory-bound at any batch"
          if sstar else "KV reads never dominate compute")
    return (f"Map of the (batch, context) plane for {model.name} on {chips_label(n_chips, chip)}, "
            f"coloured compute-bound ({frac:.0%} of the plotted grid) or memory-bound, grey where "
            "it does not fit in HBM: decode is compute-bound right of the critical-batch curve"
            + (f" (B* about {b0:,.0f} at short context)" if b0 else "") + f"; {sp}.")


def speculative_gain_vs_batch(model, chip, draft_tokens=(1, 3, 7), acceptance=0.8, batches=None,
                              context=1024, n_chips=1, weight_bytes=2, kv_bytes=2, dtype="bf16"):
    """Speed-up per user of speculative decoding over plain decoding, against batch.

    For each ``k`` in ``draft_tokens``: tokens per second per user of
    :func:`llmmath.roofline.speculative_step` (``k`` drafts, each accepted with probability
    ``acceptance``) divided by that of :func:`llmmath.roofline.decode_step` at the same batch.
    Drafting itself is free here (an upper bound on the gain). While ``B (k+1)`` is below the
    critical batch the verify step costs about one memory-bound step, so the gain is the expected
    tokens per step; once the step turns compute-bound, rejected drafts waste FLOPs and the gain
    falls below 1 (the same ratio is the cost-per-token saving, since chips and batch are fixed).
    """
    ks = [int(k) for k in np.atleast_1d(draft_tokens)]
    B = np.asarray(batches, float) if batches is not None else np.logspace(0, np.log10(8192), 80)
    fig, ax = new_axes((6.4, 4.0))
    colors = [ROLE["compute"], ROLE["weights"], ROLE["kv"], PALETTE["purple"], PALETTE["sky"]]
    base = decode_step(model, chip, B, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype)
    gains = {}
    with house_style():
        for k, col in zip(ks, colors, strict=False):
            s = speculative_step(model, chip, B, context, k, acceptance, n_chips=n_chips,
                                 weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dtype)
            g = (np.asarray(s.tokens) / np.asarray(s.time)) / (B / np.asarray(base.time))
            gains[k] = g
            ideal = float(speculative_tokens_per_step(k, acceptance))
            ax.plot(B, g, color=col, label=f"γ = {k} drafts ({ideal:.2f} tokens/step)")
        ax.axhline(1.0, color=PALETTE["black"], lw=1.0, ls=":")
        ax.text(0.01, 1.0, " no gain", transform=ax.get_yaxis_transform(), ha="left", va="bottom",
                fontsize=SMALL)
        set_log(ax, x=fmt_batch)
        ax.set_xlim(B.min(), B.max())
        top = max(float(np.max(g)) for g in gains.values())
        ax.set_ylim(0, top * 1.25)
        ax.set_xlabel("batch B (sequences)")
        ax.set_ylabel("speed per user vs plain decoding (×)")
        ax.set_title(with_notes(f"Speculative decoding: {model.name} on "
                                f"{chips_label(n_chips, chip)}, acceptance {acceptance:g}"))
        ax.legend(loc="upper right")
    k0 = ks[-1]
    fig.alt_text = ("Speed-up per user of speculative decoding over plain decoding for "
                    f"{model.name} on {chips_label(n_chips, chip)} against batch {B[0]:g} to "
                    f"{B[-1]:g}, acceptance {acceptance:g}: with γ = {k0} drafts the gain is "
                    f"{gains[k0][0]:.2f}× at batch 1 and {gains[k0][-1]:.2f}× at batch {B[-1]:g}; "
                    "every curve falls once the verify step turns compute-bound.")
    settle_legend(ax)
    return fig


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="batch", sweep=BATCHES)
def decode_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096,
                    precision="bf16 weights, bf16 KV", n_chips=8):
    """Decode step bound vs batch; pick model, chip, precision, chips; move batch and context."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "precision": dropdown("precision", list(PRECISIONS), precision),
        "n_chips": dropdown("chips", CHIP_COUNTS, n_chips),
        "batch": steps("batch", BATCHES, batch), "context": steps("context", CONTEXTS, context),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        wb, kvb, dt = _precision(c, v["precision"])
        ctx, _ = m.cap_context(v["context"])
        return decode_time_vs_batch, dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"],
                                          weight_bytes=wb, kv_bytes=kvb, dtype=dt,
                                          mark_batch=v["batch"])

    return controls, figure, _decode_readout


def _decode_readout(n):
    price = n["price_per_chip_hour"]
    return [("step time (lower bound)", fmt_time(n["step_time"])), ("bound", n["bound"]),
            ("tokens/s (replica)", fmt_count(n["tokens_per_second"])),
            ("tokens/s per user", f"{n['tokens_per_second_per_user']:,.1f}"),
            (f"$/Mtok at {fmt_usd(price)}/chip-h", fmt_usd(n["cost_per_million"])),
            ("compute / weights / KV", " / ".join(fmt_time(n[k]) for k in (
                "compute_time", "weight_time", "kv_time"))),
            ("critical batch B*", or_dash(n.get("critical_batch"), lambda x: f"{x:,.0f}")),
            *fit_rows(n)]
