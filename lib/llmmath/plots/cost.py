"""Figures: cost."""

from __future__ import annotations

import math

import numpy as np

from .. import chips as _chips
from ..cost import chip_hour_price, cost_per_million_tokens, tokens_per_second_per_user
from ..cost import latency_cost_frontier as _frontier
from ..roofline import critical_batch
from ..units import fmt_count, fmt_time, fmt_usd
from .common import decode_at, fit_numbers, fits_at, max_batch_at
from .explore import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    chip_picker,
    dropdown,
    explorer,
    fit_rows,
    model_picker,
    or_dash,
    slider,
    steps,
    toggle,
)
from .figure import builder, chip_of, grid, mask, model_of, try_value
from .labels import (
    chips_label,
    fmt_batch,
    fmt_n,
    fmt_usd_round,
    loglim,
    set_log,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL

__all__ = ["cost_vs_batch", "latency_cost_frontier"]


def _cost_vs_batch_setup(p):
    ax = p.ax
    p.l_w, = ax.plot([], [], color=ROLE["weights"], lw=1.5, ls="--", label="weights / B")
    p.l_c, = ax.plot([], [], color=ROLE["compute"], lw=1.5, ls="--", label="compute")
    p.l_kv, = ax.plot([], [], color=ROLE["kv"], lw=1.5, ls="--", label="KV reads")
    p.l_tot, = ax.plot([], [], color=ROLE["cost"], lw=2.8, label="cost (lower bound)", zorder=3)
    ax.legend(loc="upper right")
    set_log(ax, x=fmt_batch, y=fmt_usd_round)
    ax.set_xlabel("batch B (sequences)")
    ax.set_ylabel("cost per million output tokens (USD)")


@builder(setup=_cost_vs_batch_setup)
def cost_vs_batch(p, model, chip, price_per_chip_hour=None, batches=None, context=4096, n_chips=1,
                  weight_bytes=2, kv_bytes=2, dtype="bf16", overlap="step", mark_batch=None):
    """USD per million output tokens against batch (log-log) and its parts.

    The weight-read share is a hyperbola ``n t_w p / B``; compute and KV reads are flat floors
    per token. Annotates the floor, the critical batch B* and the memory limit ``max_batch``,
    where the curve stops. ``price_per_chip_hour`` defaults to the chip's rental price (or
    ``cost.ASSUMED_PRICE_PER_CHIP_HOUR``, flagged in the title).
    """
    dt, dnote = chip.resolve_dtype(dtype)
    ctx, cnote = model.cap_context(context)
    price, pnote = chip_hour_price(chip, price_per_chip_hour)
    B = grid(batches, 1, 4096)
    mb, need = fits_at(model, chip, ctx, n_chips, weight_bytes, kv_bytes)
    if mb is not None and B.min() < mb < B.max():
        B = np.unique(np.append(B, float(mb)))  # the curve ends exactly at the memory limit
    s = decode_at(model, chip, B, ctx, n_chips, weight_bytes, kv_bytes, dt, overlap)
    cost = np.asarray(cost_per_million_tokens(s, price))
    per_second = cost / np.asarray(s.time)  # USD/Mtok per second of step: splits cost into parts
    parts = {"w": per_second * s.weight_time, "c": per_second * s.compute_time,
             "kv": per_second * s.kv_time, "t": cost}
    ok = B <= (mb if mb is not None else 0)
    fits = bool(ok.any())
    keep = ok if fits else np.ones_like(ok)
    for line, key in ((p.l_w, "w"), (p.l_c, "c"), (p.l_kv, "kv"), (p.l_tot, "t")):
        line.set_data(*mask(B[keep], parts[key][keep]))
    p.l_tot.set_alpha(1.0 if fits else 0.35)
    ax = p.ax
    ax.set_xlim(B.min(), B.max())
    ax.set_ylim(*loglim(np.concatenate([parts[q][keep] for q in parts]), pad=1.4))
    floor = float(max(parts["c"][keep][-1], parts["kv"][keep][-1]))
    p.hline(floor, f"floor {fmt_usd(floor)}/Mtok", color=ROLE["cost"], x=0.01, ha="left", va="top",
               ls=":")
    best = None
    limit = None
    if not fits:
        p.note(f"does not fit: needs at least {need} × {chip.name}\n(curve shown faded)")
    else:
        i = int(np.nonzero(ok)[0][-1])
        best = float(parts["t"][i])
        if mb < B.max():
            p.nofit(max(mb, B.min()), B.max(), "HBM full")
            limit = i
            # the curve and the marked limit end at the largest batch that fits, not at the
            # last grid point below it: one memory limit in the figure
            at_mb = decode_at(model, chip, float(mb), ctx, n_chips, weight_bytes, kv_bytes, dt,
                            overlap)
            best = float(cost_per_million_tokens(at_mb, price))
    bstar = try_value(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt, context=ctx,
                 kv_bytes=kv_bytes)
    if bstar is not None and B.min() <= bstar <= B.max():
        p.vline(bstar, f"B* = {bstar:,.0f}", y=0.55)
    if limit is not None:
        p.add(ax.plot([float(mb)], [best], "o", ms=7, mfc=ROLE["capacity"], mec="white", mew=1.5,
                      zorder=5, label=f"memory limit B = {mb:,}: {fmt_usd(best)}/Mtok")[0])
        ax.legend(loc="upper right")
    mark = None
    with p.marking():
        if mark_batch is not None:
            m = decode_at(model, chip, float(mark_batch), ctx, n_chips, weight_bytes, kv_bytes, dt,
                        overlap)
            mark = float(cost_per_million_tokens(m, price))
            p.point(float(mark_batch), mark, f"B={float(mark_batch):g}: {fmt_usd(mark)}/Mtok",
                       offset=(8, 8), ha="left")
            p.numbers = {"step_time": m.time, "bound": m.bound, "cost_per_million": mark,
                            "tokens_per_second": float(mark_batch) / m.time,
                            "tokens_per_second_per_user": tokens_per_second_per_user(m)}
    ax.set_title(with_notes(f"{model.name} on {chips_label(n_chips, chip)} at "
                        f"{fmt_usd(price)}/chip-hour, context {fmt_n(ctx)}", dnote, cnote, pnote))
    p.numbers.update(floor=floor, critical_batch=bstar, max_batch=mb, cost_at_max_batch=best)
    if mark_batch is not None:
        p.numbers.update(fit_numbers(model, chip, ctx, n_chips, weight_bytes, kv_bytes,
                                     mark_batch, mb))
    tail = (f"the cheapest batch that fits ({mb:,}) costs {fmt_usd(best)}" if best is not None
            else f"the model does not fit on {chips_label(n_chips, chip)}")
    return (f"Log-log plot of the lower-bound cost per million output tokens of {model.name} on "
            f"{chips_label(n_chips, chip)} against batch: the weight-read share falls as 1/B "
            f"toward a floor of {fmt_usd(floor)} set by compute and KV reads; {tail}.")


def _latency_cost_frontier_setup(p):
    ax = p.ax
    p.l, = ax.plot([], [], "-", color=ROLE["cost"], lw=1.8, zorder=2)
    p.p_fit, = ax.plot([], [], "o", color=ROLE["cost"], ms=6, mec="white", label="fits in HBM",
                       zorder=3)
    p.p_nofit, = ax.plot([], [], "o", mfc="white", mec=PALETTE["grey"], ms=6,
                            label="does not fit", zorder=3)
    ax.legend(loc="upper left")  # slow and dear at once never happens: that corner stays empty
    set_log(ax, x=lambda v: f"{v:g}", y=fmt_usd_round)
    ax.set_xlabel("decode speed per user (tokens/s)")
    ax.set_ylabel("cost per million output tokens (USD)")


@builder(setup=_latency_cost_frontier_setup)
def latency_cost_frontier(p, model, chip, batches=None, context=4096, n_chips=1,
                          price_per_chip_hour=None,
                          weight_bytes=2, kv_bytes=2, dtype="bf16", overlap="step",
                          mark_batch=None):
    """Tokens/s per user (x) against $/Mtok (y) as the batch grows; points labelled with batch.

    The figure of :func:`llmmath.cost.latency_cost_frontier` (same name, same arguments and
    ``price_per_chip_hour``): that function returns the sweep, this one draws it.

    Points whose weights and KV caches do not fit are drawn hollow. ``batches`` default 1, 2, 4 ...
    4096.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    ctx, cnote = model.cap_context(context)
    price, pnote = chip_hour_price(chip, price_per_chip_hour)
    B = grid(batches if batches is not None else 2.0 ** np.arange(13), 1, 4096)
    f = _frontier(model, chip, B, ctx, n_chips=n_chips, weight_bytes=weight_bytes,
                  kv_bytes=kv_bytes, dtype=dt, price_per_chip_hour=price, overlap=overlap)
    x, y = f.tokens_per_second_per_user, f.cost_per_million_tokens
    p.l.set_data(*mask(x, y))
    p.p_fit.set_data(*mask(x[f.fits], y[f.fits]))
    p.p_nofit.set_data(*mask(x[~f.fits], y[~f.fits]))
    ax = p.ax
    ax.set_xlim(*loglim(x, pad=1.6))
    ax.set_ylim(*loglim(y, pad=1.6))
    labelled = [i for i, b in enumerate(B) if math.log(b, 4) % 1 < 1e-9 or i == len(B) - 1]
    cands = [(-5, 4, "right", "bottom"), (5, 4, "left", "bottom"), (5, -4, "left", "top"),
             (-5, -4, "right", "top")]
    for i in labelled:
        p.label(x[i], y[i], f"B={B[i]:g}", cands, color="#333333", fontsize=SMALL, box=False)
    with p.marking():
        if mark_batch is not None:
            g = _frontier(model, chip, float(mark_batch), ctx, n_chips=n_chips,
                          weight_bytes=weight_bytes,
                          kv_bytes=kv_bytes, dtype=dt, price_per_chip_hour=price, overlap=overlap)
            p.point(float(g.tokens_per_second_per_user[0]), float(g.cost_per_million_tokens[0]),
                       f"B={float(mark_batch):g}", offset=(-12, -16))
            p.numbers = {"step_time": float(g.step_time[0]), "bound": str(g.bound[0]),
                            "cost_per_million": float(g.cost_per_million_tokens[0]),
                            "tokens_per_second": float(g.tokens_per_second[0]),
                            "tokens_per_second_per_user": float(g.tokens_per_second_per_user[0])}
            mb = max_batch_at(model, chip, ctx, n_chips, weight_bytes, kv_bytes)
            p.numbers.update(max_batch=mb, **fit_numbers(model, chip, ctx, n_chips, weight_bytes,
                                                         kv_bytes, mark_batch, mb))
    ax.set_title(with_notes(f"Latency vs cost: {model.name} on {chips_label(n_chips, chip)}, "
                        f"context {fmt_n(ctx)}", dnote, cnote, pnote))
    return (f"Log-log plot of cost per million output tokens against decode speed per user for "
            f"{model.name} on {chips_label(n_chips, chip)}, batch {B[0]:g} to {B[-1]:g}: from "
            f"{x[0]:.0f} tokens/s at {fmt_usd(y[0])}/Mtok (batch {B[0]:g}) to {x[-1]:.3g} tokens/s "
            f"at {fmt_usd(y[-1])}/Mtok (batch {B[-1]:g}).")


# ----- the chapter's explorer --------------------------------------------------------------------

_VIEWS = {"cost vs batch": cost_vs_batch, "latency vs cost": latency_cost_frontier}


@explorer(main="batch", sweep=BATCHES)
def batching_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096, n_chips=8,
                      price_per_chip_hour=None, view="cost vs batch"):
    """Cost per million tokens vs batch, or the latency-cost frontier; set the chip-hour price."""
    p0, _ = chip_hour_price(_chips.get(chip), price_per_chip_hour)
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "n_chips": dropdown("chips", CHIP_COUNTS, n_chips),
        "price": slider("$/chip-h", p0, 0.25, 10.0, 0.25, ".2f"),
        "view": toggle(list(_VIEWS), view),
        "batch": steps("batch", BATCHES, batch), "context": steps("context", CONTEXTS, context),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        ctx, _ = m.cap_context(v["context"])
        return _VIEWS[v["view"]], dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"],
                                       price_per_chip_hour=v["price"], mark_batch=v["batch"])

    return controls, figure, _batching_readout


def _batching_readout(n):
    rows = [("step time (lower bound)", fmt_time(n["step_time"])), ("bound", n["bound"]),
            ("tokens/s per user", f"{n['tokens_per_second_per_user']:,.1f}"),
            ("tokens/s (replica)", fmt_count(n["tokens_per_second"])),
            ("$/Mtok (lower bound)", fmt_usd(n["cost_per_million"]))]
    if "floor" in n:
        rows.append(("cost floor", or_dash(n.get("floor"), fmt_usd)))
    return rows + fit_rows(n)
