"""Figures: prefill."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from ..cost import (
    chip_hour_price,
    cost_per_million_tokens,
    input_output_cost,
    kv_to_compute_ratio,
    price_step_context,
)
from ..memory import cache_cost, memory_tiers
from ..roofline import critical_batch, decode_step, prefill_step
from ..units import fmt_count, fmt_time, fmt_usd
from .common import fits_at, set_time_lines, time_lines_setup
from .explore import CHIP_COUNTS, chip_picker, dropdown, explorer, model_picker, or_dash, steps
from .figure import builder, chip_of, grid, log_interp, mask, model_of, refine_root, try_value
from .labels import (
    chips_label,
    fmt_batch,
    fmt_params,
    fmt_t,
    fmt_tokens,
    fmt_usd_round,
    loglim,
    place,
    set_log,
    time_axis,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL, TIER_COLOUR

__all__ = ["prefill_time_vs_prompt", "prefill_vs_decode_per_token", "io_cost_ratio_vs_batch",
           "price_step_vs_context", "tier_drain_times", "cache_cost_vs_lifetime"]


def _prefill_time_vs_prompt_setup(p):
    time_lines_setup(p)
    p.l_kv.set_label("KV-cache writes")
    p.ax.legend(loc="upper left")
    set_log(p.ax, x=lambda v: fmt_count(v, 2), y=fmt_t)
    p.ax.set_xlabel("prompt length P (tokens per sequence)")
    p.ax.set_ylabel("prefill time, lower bound (s)")


@builder(setup=_prefill_time_vs_prompt_setup)
def prefill_time_vs_prompt(p, model, chip, batch=1, prompts=None, n_chips=1, weight_bytes=2,
                           kv_bytes=2, dtype="bf16", mark_prompt=None):
    """Prefill lower bound and its parts (compute, weight reads, KV writes) against prompt length.

    Annotates the prompt length where prefill turns compute-bound. ``prompts`` default
    1..max_context.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    top = model.max_context or 1 << 17
    P = grid(prompts, 1, top)
    s = prefill_step(model, chip, float(batch), P, n_chips=n_chips, weight_bytes=weight_bytes,
                     kv_bytes=kv_bytes, dtype=dt)
    ys = set_time_lines(p, P, s)
    ax = p.ax
    ax.set_xlim(P.min(), P.max())
    ax.set_ylim(*loglim(np.concatenate([np.ravel(y) for y in ys]), pad=1.3))
    flip = log_interp(P, s.compute_time, s.memory_time)
    if flip is not None:  # refine the drawn grid's crossing to the exact prompt length
        def gap(x):
            q = prefill_step(model, chip, float(batch), x, n_chips=n_chips,
                             weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
            return q.compute_time - q.memory_time
        flip = refine_root(gap, flip / 2, flip * 2)
        p.vline(flip, f"compute-bound from\nP = {fmt_count(flip, 3)}", y=0.6)
    with p.marking():
        if mark_prompt is not None:
            m = prefill_step(model, chip, float(batch), float(mark_prompt), n_chips=n_chips,
                             weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
            p.point(float(mark_prompt), m.time, f"P={fmt_tokens(float(mark_prompt))}: "
                                                f"{fmt_t(m.time)}")
            price, _ = chip_hour_price(chip)
            p.numbers = {"step_time": m.time, "bound": m.bound,
                         "tokens_per_second": m.tokens / m.time, "price_per_chip_hour": price,
                         "cost_per_million": cost_per_million_tokens(m, price)}
    ax.set_title(with_notes(f"Prefill: {model.name} on "
                            f"{chips_label(n_chips, chip)}, batch {float(batch):g}",
                        dnote))
    p.numbers.update(crossover_prompt=flip)
    fs = (f"it turns compute-bound at about {fmt_count(flip, 2)} tokens" if flip
          else "the bound does not change regime over this range")
    return (f"Log-log plot of the prefill time lower bound of {model.name} on "
            f"{chips_label(n_chips, chip)} for batch {float(batch):g} against prompt length "
            f"{fmt_tokens(P[0])} to {fmt_tokens(P[-1])} tokens: "
            f"short prompts are bound by weight reads, {fs}.")


def _prefill_vs_decode_per_token_setup(p):
    ax = p.ax
    p.l_pre, = ax.plot([], [], color=ROLE["prefill"], lw=2.4, label="prefill, per prompt token")
    p.l_dec1, = ax.plot([], [], color=ROLE["decode"], lw=2.0, ls="--",
                        label="decode at batch 1, per output token")
    p.l_decB, = ax.plot([], [], color=ROLE["decode"], lw=2.4,
                        label="decode at batch B, per output token")
    set_log(ax, x=lambda v: fmt_count(v, 2), y=fmt_t)
    ax.set_xlabel("prompt length P = context S (tokens)")
    ax.set_ylabel("chip time per token, lower bound")


def _mark_points(p, ax, mp, per_in, per_out, a, b, left):
    """The marked prompt length: one point on the prefill line, one on the decode line."""
    for yv, txt, col, dy in ((per_in, f"prefill: {fmt_t(per_in)}/token ({a.bound}-bound)",
                              ROLE["prefill"], -14),
                             (per_out, f"decode: {fmt_t(per_out)}/token ({b.bound}-bound)",
                              ROLE["decode"], 10)):
        p.point(mp, yv, txt, color=col, offset=(6 if left else -6, dy),
                ha="left" if left else "right")


@builder(setup=_prefill_vs_decode_per_token_setup)
def prefill_vs_decode_per_token(p, model, chip, prompts=None, decode_batch=64, n_chips=1,
                                weight_bytes=2, kv_bytes=2, dtype="bf16", mark_prompt=None):
    """Chip time per token (lower bound) for prefill and for decode against prompt length.

    Prefill: one pass over a ``P``-token prompt, time / P. Decode: one step at context ``S = P``,
    time / batch, at batch 1 and at ``decode_batch``. The gap between the prefill line and a
    decode line is the output/input cost ratio an API price sheet shows. ``prompts`` default
    16..max_context; the point at ``mark_prompt`` (default mid-range) is annotated.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    top = model.max_context or 1 << 17
    P = grid(prompts, 16, top)
    kw = dict(n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
    pre = prefill_step(model, chip, 1.0, P, **kw)
    d1 = decode_step(model, chip, 1.0, P, **kw)
    dB = decode_step(model, chip, float(decode_batch), P, **kw)
    y = {"pre": pre.time / P, "d1": d1.time, "dB": dB.time / float(decode_batch)}
    p.l_pre.set_data(*mask(P, y["pre"]))
    p.l_dec1.set_data(*mask(P, y["d1"]))
    p.l_decB.set_data(*mask(P, y["dB"]))
    p.l_decB.set_label(f"decode at batch {float(decode_batch):g}, per output token")
    ax = p.ax
    ax.legend(loc="upper right", fontsize=SMALL)
    ax.set_xlim(P.min(), P.max())
    lo_, hi_ = loglim(np.concatenate(list(y.values())), pad=1.5)
    ax.set_ylim(lo_, hi_ * 12)
    mp = float(mark_prompt) if mark_prompt is not None else float(P[len(P) // 2])
    mp = min(max(mp, float(P.min())), float(P.max()))
    a = prefill_step(model, chip, 1.0, mp, **kw)
    b = decode_step(model, chip, float(decode_batch), mp, **kw)
    per_in, per_out = a.time / mp, b.time / float(decode_batch)
    left = math.log(mp / P.min()) < 0.5 * math.log(P.max() / P.min())  # label on the roomier side
    with p.marking():
        _mark_points(p, ax, mp, per_in, per_out, a, b, left)
    ratio = per_out / per_in
    p.numbers = {"prefill_per_token": per_in, "decode_per_token": per_out, "ratio": ratio,
                    "ttft": a.time, "tpot": b.time}
    ax.set_title(with_notes(f"{model.name} on {chips_label(n_chips, chip)}: "
                            "prefill vs decode", dnote))
    return (f"Log-log plot of chip time per token against prompt length for {model.name} on "
            f"{chips_label(n_chips, chip)}: prefill costs {fmt_t(per_in)} per prompt token at "
            f"{fmt_tokens(mp)} tokens, decode at batch {float(decode_batch):g} costs "
            f"{fmt_t(per_out)} per output token, {ratio:.1f} times more; decode at batch 1 is far "
            "above both.")


def _io_cost_ratio_vs_batch_setup(p):
    ax = p.ax
    p.l, = ax.plot([], [], color=ROLE["cost"], lw=2.6, label="output / input cost (bound)")
    set_log(ax, x=fmt_batch, y=lambda v: f"{v:g}×")
    ax.set_xlabel("decode batch B (sequences)")
    ax.set_ylabel("output / input cost per token")


@builder(setup=_io_cost_ratio_vs_batch_setup)
def io_cost_ratio_vs_batch(p, model, chip, prompt=2048, context=4096, batches=None, n_chips=1,
                           weight_bytes=2, kv_bytes=2, dtype="bf16", band=(3.0, 5.0)):
    """Output/input cost ratio (decode $/token over prefill $/token, lower bounds) against decode
    batch.

    Shades ``band`` (the 3-5x of API price sheets) and marks the critical batch, where decode
    is compute-bound and the ratio approaches 1. Prefill: one ``prompt``-token sequence;
    decode at ``context``.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    B = grid(batches, 1, 4096)
    r = input_output_cost(model, chip, float(prompt), B, float(context), n_chips=n_chips,
                          weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt,
                          price_per_chip_hour=1.0)
    ratio = np.asarray(r.output_to_input)
    mb, _ = fits_at(model, chip, float(context), n_chips, weight_bytes, kv_bytes)
    p.l.set_data(*mask(B, ratio))
    ax = p.ax
    ax.set_xlim(B.min(), B.max())
    ax.set_ylim(*loglim(np.concatenate([ratio, [0.8, band[1] * 1.2]]), pad=1.3))
    lo, hi = band
    p.add(ax.axhspan(lo, hi, color=PALETTE["sky"], alpha=0.25, lw=0, zorder=0))
    p.add(ax.text(0.02, math.sqrt(lo * hi), f"API price sheets: {lo:g}–{hi:g}×",
                     transform=ax.get_yaxis_transform(), ha="left", va="center", fontsize=SMALL))
    p.hline(1.0, "1×: decode as cheap as prefill", color=ROLE["total"], x=0.02, ha="left", va="top",
               ls=":")
    if mb is not None and mb < B.max():
        p.nofit(max(mb, B.min()), B.max(), "KV does not fit")
    bstar = try_value(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt,
                      context=float(context),
                 kv_bytes=kv_bytes)
    if bstar is not None and B.min() <= bstar <= B.max():
        p.vline(bstar, f"B* = {bstar:,.0f}", y=0.97)
    inside = B[(ratio >= lo) & (ratio <= hi)]
    p.numbers = {"critical_batch": bstar, "max_batch": mb,
                    "band_batches": ((float(inside.min()), float(inside.max())) if inside.size
                                     else None),
                    "ratio_at_1": float(ratio[0])}
    ax.set_title(with_notes(f"{model.name} on {chips_label(n_chips, chip)}: prompt "
                            f"{fmt_tokens(prompt)}, context {fmt_tokens(context)}", dnote))
    span = (f"the ratio sits in the {lo:g}-{hi:g}× band "
            f"for batches of about {inside.min():,.0f} to "
            f"{inside.max():,.0f}" if inside.size else "the ratio never enters "
                                                       f"the {lo:g}-{hi:g}× band")
    fall = (f"falling toward 1× near the critical batch B* = {bstar:,.0f}" if bstar is not None else
            f"falling toward {float(ratio[-1]):.1f}× and never to 1×, since at context "
            f"{fmt_tokens(context)} KV reads keep decode memory-bound at any batch")
    return (f"Log-log plot of the lower-bound ratio of output-token cost to input-token cost for "
            f"{model.name} on {chips_label(n_chips, chip)} against decode batch: "
            f"{float(ratio[0]):,.0f}× at batch 1, {fall}; {span}.")


def _price_step_vs_context_setup(p):
    ax = p.ax
    p.l_c, = ax.plot([], [], color=ROLE["compute"], lw=2.0, ls="--",
                     label="compute per token (flat)")
    p.l_kv, = ax.plot([], [], color=ROLE["kv"], lw=2.0, ls="--", label="KV reads per token")
    p.l_t, = ax.plot([], [], color=ROLE["total"], lw=3.0, alpha=0.6,
                     label="cost: the max of the two")
    p.l_p, = ax.plot([], [], color=ROLE["cost"], lw=2.0, drawstyle="steps-post",
                        label="a price sheet (output)")
    set_log(ax, x=lambda v: fmt_count(v, 2))
    ax.set_xlabel("context S (tokens)")
    ax.set_ylabel("cost per output token\n(relative to short contexts)")


@builder(setup=_price_step_vs_context_setup)
def price_step_vs_context(p, active_params=100e9, kv_bytes_per_token=1667, ops_per_byte=600,
                          contexts=None, price_step=200_000, price_ratio=1.5):
    """The long-context price step read as a roofline crossover.

    Per sequence at a batch that amortises the weights, compute per output token is flat in
    context and KV reads per token grow as ``S b_kv / W``; cost follows their max, which leaves
    the flat floor at ``S = 2 N_act / (R b_kv)`` (``R`` = FLOP per byte). Draws both (relative to
    compute) and a price sheet stepping by ``price_ratio`` at ``price_step`` tokens.
    """
    S = grid(contexts, 1000, 2_000_000, integer=True)
    comp = np.ones_like(S, dtype=float)
    # per sequence and step, at a batch large enough to amortise the weights:
    # KV read time / compute time = S b_kv W^-1 / (2 N_act C^-1) = S b_kv R / (2 N_act)
    kv = np.asarray(kv_to_compute_ratio(S, active_params, kv_bytes_per_token, ops_per_byte))
    tot = np.maximum(comp, kv)
    price = np.where(S >= price_step, price_ratio, 1.0)
    for line, yy in ((p.l_c, comp), (p.l_kv, kv), (p.l_t, tot), (p.l_p, price)):
        line.set_data(S, yy)
    ax = p.ax
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(S.min(), S.max())
    ax.set_ylim(0.05, max(4.0, float(tot.max()) * 1.2))
    cross = float(price_step_context(active_params, kv_bytes_per_token, ops_per_byte))
    if S.min() <= cross <= S.max():
        p.vline(cross, f"KV = compute\n S = {fmt_count(cross, 2)}", color=ROLE["kv"], y=0.97)
    ax.legend(loc="lower right", fontsize=SMALL)
    p.numbers = {"crossover": cross}
    ax.set_title(rf"$N_\mathrm{{act}}$ = {fmt_params(active_params)}, $b_\mathrm{{kv}}$ = "
                 rf"{kv_bytes_per_token:,.0f} bytes, "
                 f"{ops_per_byte:,.0f} FLOP/byte")
    return ("Log-log plot of cost per output token relative to short contexts against context: "
            "compute per token is flat, KV reads per token rise linearly and overtake compute at "
            f"{fmt_count(cross, 2)} tokens for {fmt_count(active_params)} active parameters, "
            f"{kv_bytes_per_token:,.0f} bytes of KV per token and {ops_per_byte:,.0f} FLOP per "
            f"byte; a price sheet that steps up by {price_ratio:g}× at {fmt_count(price_step)} "
            "tokens is drawn for comparison.")


def _tier_drain_times_setup(p):
    pass


@builder(figsize=(6.4, 3.9), setup=_tier_drain_times_setup)
def tier_drain_times(p, tiers=None, lifetimes=(("5-min cache", 300.0), ("1-h cache", 3600.0))):
    """Drain time (capacity / bandwidth) of each memory tier, with cache lifetimes marked."""
    ts = list(tiers) if tiers is not None else memory_tiers()
    ax = p.ax
    y = np.arange(len(ts))
    d = np.array([t.drain_time for t in ts])
    cols = TIER_COLOUR * 3
    p.add(ax.barh(y, d, color=cols[:len(ts)], height=0.6))
    ax.set_yticks(y, [f"{t.name}\n({t.device.split('(')[0].strip()})" if len(t.device) < 36
                      else t.name for t in ts], fontsize=SMALL)
    ax.invert_yaxis()
    lo, hi = d.min() / 3, max(d.max(), max(v for _, v in lifetimes)) * 20
    ax.set_xlim(lo, hi)
    time_axis(ax, lo, hi, keep=("10 ms", "1 s", "1 min", "1 h", "1 day"))
    ax.set_ylim(len(ts) - 0.4, -0.6)
    # lifetimes as dashed lines, labelled above the axes: the first label ends at its line and
    # the others start at theirs, so neighbours a decade apart never print over each other
    for i, (name, v) in enumerate(sorted(lifetimes, key=lambda nv: nv[1])):
        p.add(ax.axvline(v, color=ROLE["cost"], ls="--", lw=1.5, zorder=1))
        p.add(ax.annotate(name, (v, 1.0), xycoords=ax.get_xaxis_transform(), xytext=(0, 3),
                          textcoords="offset points", ha="right" if i == 0 else "left",
                          va="bottom", fontsize=SMALL, color=ROLE["cost"]))
    for yi, di in zip(y, d, strict=False):
        def make(c, yi=yi, di=di):
            dx, ha, col, x = c
            return ax.annotate(fmt_t(di), (x or di, yi), xytext=(dx, 0), textcoords="offset points",
                               ha=ha, va="center", fontsize=SMALL, color=col)
        # past the bar's end, else inside it at its end, else inside at its start (off the
        # lifetime lines)
        p.add(place(ax, make, [(4, "left", "black", None), (-4, "right", "white", None),
                               (4, "left", "white", lo)]))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("drain time: capacity / bandwidth")
    ax.set_title("How long each tier takes to read itself once", pad=24)
    p.numbers = {t.name: t.drain_time for t in ts}
    return ("Horizontal bar chart, log scale, of drain time "
            "(capacity over bandwidth) per memory tier: "
            + ", ".join(f"{t.name} {fmt_t(t.drain_time)}" for t in ts)
            + "; dashed lines mark the cache lifetimes "
            + ", ".join(n for n, _ in lifetimes) + ".")


def _cache_cost_vs_lifetime_setup(p):
    p.ax.set_yscale("log")
    p.ax.yaxis.set_major_formatter(FuncFormatter(fmt_usd_round))
    p.ax.yaxis.set_minor_formatter(NullFormatter())
    p.ax.set_xlabel("cache lifetime t (hold, then read once)")
    p.ax.set_ylabel("USD per million cached tokens")


@builder(figsize=(6.4, 4.4), setup=_cache_cost_vs_lifetime_setup)
def cache_cost_vs_lifetime(p, kv_bytes_per_token, tiers=None, lifetimes=None,
                           remat_cost_per_million=None, marks=(("5 min", 300.0), ("1 h", 3600.0))):
    """Cost of holding a prompt cache for a lifetime and reading it back once, per memory tier.

    Each tier's curve is :func:`llmmath.memory.cache_cost` per million tokens, a roofline in the
    lifetime with its knee at the tier's drain time; the thick line is the cheapest tier.
    ``remat_cost_per_million`` draws the cost of recomputing the prompt instead (a prefill).
    """
    ts = list(tiers) if tiers is not None else memory_tiers()
    T = grid(lifetimes, 1e-3, 86400.0 * 7, n=200, integer=False)
    ax = p.ax
    cols = TIER_COLOUR * 3
    ys = []
    for t, c in zip(ts, cols, strict=False):
        yy = 1e6 * np.asarray(cache_cost(kv_bytes_per_token, T, t))
        ys.append(yy)
        p.add(ax.plot(T, yy, color=c, lw=1.8, label=t.name)[0])
    env = np.min(np.stack(ys), axis=0)
    p.add(ax.plot(T, env, color=ROLE["total"], lw=4, alpha=0.25, label="cheapest tier")[0])
    allv = np.concatenate(ys)
    if remat_cost_per_million is not None:
        allv = np.concatenate([allv, [remat_cost_per_million]])
    ax.set_xlim(T.min(), T.max())
    time_axis(ax, T.min(), T.max())
    lo = max(float(np.min(env)) / 3, 1e-9)
    ax.set_ylim(lo, float(allv.max()) * 3)
    p.add(ax.legend(loc="upper left", fontsize=SMALL, ncol=1))
    for name, v in marks:
        p.vline(v, name, color=PALETTE["grey"], y=0.97, ls="--")
    if remat_cost_per_million is not None:
        p.hline(remat_cost_per_million, f"recompute (prefill): {fmt_usd(remat_cost_per_million)}/M",
                   color=ROLE["prefill"], x=0.99, ha="right", va="bottom", ls="-.")
    ax.set_title(f"Holding a prompt cache at {kv_bytes_per_token:,.0f} bytes of KV per token")
    best = {n: ts[int(np.argmin([1e6 * float(cache_cost(kv_bytes_per_token, v, t))
                                 for t in ts]))].name
            for n, v in marks}
    p.numbers = {"cheapest": best}
    return ("Log-log plot of the cost per million cached tokens of holding a prompt cache and "
            "reading it once, against its lifetime, for the HBM, DRAM, flash and disk tiers: each "
            "curve is flat (paying for bandwidth) up to its drain time, then rises (paying for "
            "capacity); the cheapest tier "
            "is " + ", ".join(f"{b} for a {n}" for n, b in best.items())
            + ("; recomputing the prompt costs "
               f"{fmt_usd(remat_cost_per_million)} per million tokens"
               if remat_cost_per_million is not None else "") + ".")


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="prompt", sweep=[16, 64, 256, 1024, 2048, 4096, 8192])
def prefill_explorer(model="Llama-3-70B", chip="H100-SXM", prompt=2048, batch=1, n_chips=8):
    """Prefill bound vs prompt length: when it turns compute-bound; time to first token."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "n_chips": dropdown("chips", CHIP_COUNTS, n_chips),
        "batch": steps("batch", [1, 2, 4, 8, 16, 32, 64], batch),
        "prompt": steps("prompt", [16, 64, 256, 1024, 2048, 4096, 8192, 32768, 131072], prompt),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        pr = min(v["prompt"], m.max_context or v["prompt"])
        return prefill_time_vs_prompt, dict(model=m, chip=c, batch=v["batch"],
                                            n_chips=v["n_chips"], dtype=dt, mark_prompt=pr)

    return controls, figure, _prefill_readout


def _prefill_readout(n):
    return [("prefill time (lower bound)", fmt_time(n["step_time"])), ("bound", n["bound"]),
            ("time to first token", fmt_time(n["step_time"])),
            ("prompt tokens/s", fmt_count(n["tokens_per_second"])),
            (f"$/M input tokens at {fmt_usd(n['price_per_chip_hour'])}/chip-h",
             fmt_usd(n["cost_per_million"])),
            ("compute-bound from P", or_dash(n.get("crossover_prompt"), lambda x: f"{x:,.0f}"))]
