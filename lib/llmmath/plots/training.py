"""Figures: training."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter

from ..cost import chip_hour_price, chip_hours_cost
from ..training import (
    attention_training_share,
    chip_hours,
    dp_compute_time,
    dp_critical_tokens,
    dp_gradient_sync_time,
    min_training_chips,
    training_flops,
    training_memory,
    training_time,
    zero_memory_per_chip,
)
from ..units import fmt_bytes, fmt_count, fmt_percent, fmt_si, fmt_time, fmt_usd
from .explore import chip_picker, explorer, model_picker, slider, steps
from .figure import as_list, builder, chip_of, grid, mask, model_of
from .labels import (
    fmt_b,
    fmt_count_tick,
    fmt_days,
    fmt_t,
    fmt_tokens,
    loglim,
    set_log,
    time_axis,
    with_notes,
)
from .style import CYCLE, PALETTE, ROLE, SMALL, model_colour

__all__ = ["training_time_vs_chips", "attention_share_vs_seq", "zero_memory_vs_chips",
           "dp_sync_vs_tokens"]


def _training_time_vs_chips_setup(p):
    ax = p.ax
    p.l, = ax.plot([], [], color=ROLE["compute"], lw=2.5, label="training time (ideal scaling)")
    ax.legend(loc="upper right")
    set_log(ax, x=fmt_count_tick, y=fmt_days)
    ax.set_xlabel("chips n (count)")
    ax.set_ylabel("training time (days)")


def _run_numbers(model, tokens, chip, n_chips, mfu, dtype):
    """One run on ``n_chips``: its time, chip-hours and dollars, and what the state and the
    data-parallel gradient sync need."""
    t = training_time(model, tokens, chip, n_chips, mfu, dtype=dtype)
    price, _ = chip_hour_price(chip)
    hours = chip_hours(n_chips, t)
    sync = {word: dp_critical_tokens(model, chip, n_chips, net, dtype=dtype)
            for net, word in (("scale_up", "scale-up"), ("scale_out", "scale-out"))
            if getattr(chip, f"{net}_bandwidth")}
    return {"time": t, "chip_hours": hours, "price_per_chip_hour": price,
            "cost": chip_hours_cost(hours, chip), "state": training_memory(model),
            "state_per_chip_zero3": zero_memory_per_chip(model, n_chips, 3),
            "min_training_chips": min_training_chips(model, chip), "dp_critical_tokens": sync}


@builder(setup=_training_time_vs_chips_setup)
def training_time_vs_chips(p, model, tokens, chip, chip_counts=None, mfu=0.4, dtype="bf16",
                           mark_chips=None):
    """Training time (days) against chip count (log-log): ``6 N_act D / (n C MFU)``.

    Reference lines at a week, a month and three months; greys out chip counts too few to hold
    the training state (16 B per parameter, activations excluded). ``chip_counts`` default 8..65536.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    n = grid(chip_counts, 8, 65536, n=40)
    days = np.asarray(training_time(model, tokens, chip, n, mfu, dtype=dt)) / 86400.0
    p.l.set_data(*mask(n, days))
    ax = p.ax
    ax.set_xlim(n.min(), n.max())
    ax.set_ylim(*loglim(days, pad=1.5))
    state = training_memory(model)
    need = math.ceil(state / chip.hbm_capacity)
    if need > n.min():  # one line along the bottom, placed before the reference lines' labels
        p.nofit(n.min(), min(need, n.max()), "")
        p.add(ax.text(0.02, 0.02, f"training state (16 bytes/param) needs ≥ {need:,} chips",
                      transform=ax.transAxes, fontsize=SMALL, color="#444444", va="bottom"))
    for d, lab in ((7, "1 week"), (30, "1 month"), (90, "3 months")):
        if ax.get_ylim()[0] < d < ax.get_ylim()[1]:  # labelled at its right end, off the axes
            p.add(ax.axhline(d, color=PALETTE["grey"], ls=":", lw=1.2, zorder=1))
            p.add(ax.annotate(lab, (1.0, d), xycoords=ax.get_yaxis_transform(), xytext=(4, 0),
                              textcoords="offset points", ha="left", va="center",
                              fontsize=SMALL, color=PALETTE["grey"]))
    flops = training_flops(model, tokens)
    with p.marking():
        if mark_chips is not None:
            mc = float(mark_chips)
            d = float(training_time(model, tokens, chip, mc, mfu, dtype=dt)) / 86400.0
            p.point(mc, d, f"{mc:,.0f} chips: {fmt_days(d)} days")
            p.numbers = {"days": d, **_run_numbers(model, tokens, chip, mark_chips, mfu, dt)}
    name = model.name if hasattr(model, "name") else f"{fmt_count(model)}-parameter model"
    ax.set_title(with_notes(f"{name}, {fmt_count(tokens)} tokens on "
                            f"{chip.name} at MFU {mfu:.0%}", dnote))
    p.numbers.update(flops=flops, chips_for_state=need)
    return (f"Log-log plot of training time in days against chip count for {name} on "
            f"{fmt_count(tokens)} tokens ({fmt_si(flops, 'FLOP')}) on {chip.name} at {mfu:.0%} "
            f"MFU: {fmt_days(days[0])} days on {n[0]:,.0f} chips, {fmt_days(days[-1])} days on "
            f"{n[-1]:,.0f}.")


# ----- chapter 11: attention's share, sharded training state, data-parallel gradient sync -------


def _share_setup(p):
    ax = p.ax
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_tokens(v, 2)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set_xlabel("training sequence length S (tokens)")
    ax.set_ylabel("attention's share of training FLOPs (%)")


@builder(setup=_share_setup)
def attention_share_vs_seq(p, model_list, sequence_lengths=None, mark_sequence_length=None):
    """Attention's share of training FLOPs per token against the training sequence length.

    ``a / (6 N_act + a)`` with ``a`` from
    :func:`llmmath.training.attention_training_flops_per_token` (causal, forward and backward). Each
    line stops at its model's maximum context. ``sequence_lengths`` default 512 .. 131,072;
    ``mark_sequence_length`` marks that length on the
    first model.
    """
    ms = [model_of(m) for m in as_list(model_list, None)]
    S = (grid(sequence_lengths, 512, 131072, n=30) if sequence_lengths is not None
         else 2.0 ** np.arange(9, 18))
    ax = p.ax
    ends, names, last = [], [], {}
    for m in ms:
        s = S[S <= m.max_context]
        y = np.asarray([attention_training_share(m, v) for v in s])
        p.add(ax.plot(s, y, "o-", ms=3.5, color=model_colour(m), label=m.name)[0])
        ends.append((s[-1], y[-1], model_colour(m)))
        names.append(m.name)
        last[m.name] = (float(s[-1]), float(y[-1]))
    ax.set_xlim(S.min() / 1.2, S.max() * 1.5)
    top = max(e[1] for e in ends)
    ax.set_ylim(0, max(0.1, top * 1.15))
    # a legend in the empty upper left: a line that stops early (a short window) ends among
    # the others, where no name at its end stays off them
    p.add(ax.legend(loc="upper left"))
    with p.marking():
        if mark_sequence_length is not None and ms:
            sm = float(mark_sequence_length)
            f = float(attention_training_share(ms[0], sm))
            p.point(sm, f, f"{ms[0].name}, S = {fmt_tokens(sm, 3)}: {fmt_percent(f, 2)}")
            p.numbers = {"share": f}
    ax.set_title(r"Attention's share of training FLOPs "
                 r"($6 N_\mathrm{act} D_\mathrm{pre}$ leaves it out)")
    p.numbers.update(last=last)
    body = "; ".join(f"{n} {fmt_percent(y, 2)} at {fmt_tokens(s, 3)} tokens"
                     for n, (s, y) in last.items())
    return ("Plot of attention's share of training FLOPs per token against training sequence "
            f"length (log scale) for {', '.join(names)}: every line rises with the length; at each "
            f"line's longest length: {body}.")


_STAGE_NAMES = {0: "no sharding (DP)", 1: "ZeRO-1: optimiser", 2: "ZeRO-2: + gradients",
                3: "ZeRO-3 / FSDP: + weights"}


def _zero_setup(p):
    ax = p.ax
    set_log(ax, x=lambda v: fmt_count(v, 2), y=fmt_b)
    ax.set_xlabel("data-parallel chips n (count)")
    ax.set_ylabel("training state per chip (bytes)")


@builder(setup=_zero_setup)
def zero_memory_vs_chips(p, model, chip, chip_counts=None, mark_chips=None):
    """Training state per chip (16 B per parameter, mixed-precision Adam) against the chips it is
    sharded over, for ZeRO stages 0-3, with the chip's HBM as a line. Activations excluded.
    ``chip_counts`` default 1 .. 16,384."""
    m, c = model_of(model), chip_of(chip)
    n = grid(chip_counts, 1, 16384, n=30) if chip_counts is not None else 2.0 ** np.arange(0, 15)
    ax = p.ax
    vals = {}
    for i, stage in enumerate((0, 1, 2, 3)):
        y = np.asarray(zero_memory_per_chip(m, n, stage)) * np.ones_like(n)
        vals[stage] = y
        p.add(ax.plot(n, y, "o-", ms=3.5, color=CYCLE[i], label=_STAGE_NAMES[stage])[0])
    ax.set_xlim(n.min() / 1.3, n.max() * 1.3)
    lo, hi = loglim(np.concatenate(list(vals.values())), pad=1.5)
    ax.set_ylim(min(lo, c.hbm_capacity / 3), hi * 8)
    p.hline(c.hbm_capacity, f"{c.name} HBM {fmt_bytes(c.hbm_capacity)}", color=ROLE["capacity"],
            x=0.01, ha="left")
    p.add(ax.legend(loc="upper right", ncol=2))
    fit3 = (float(n[np.argmax(vals[3] <= c.hbm_capacity)]) if (vals[3] <= c.hbm_capacity).any()
            else math.inf)
    with p.marking():
        if mark_chips is not None:
            mc = float(mark_chips)
            b = float(zero_memory_per_chip(m, mc, 3))
            p.point(mc, b, f"ZeRO-3 on {int(mc):,} chips: {fmt_bytes(b)}")
            p.numbers = {"zero3_bytes": b}
    ax.set_title(f"{m.name}: training state per chip on {c.name}")
    p.numbers.update(state=float(vals[0][0]), zero3_fits_from=fit3)
    return (f"Log-log plot of training state per chip against data-parallel chips for {m.name} "
            f"({fmt_bytes(vals[0][0])} at 16 B per parameter): without sharding it stays at that; "
            f"ZeRO-1 and ZeRO-2 level off at 4 and 2 bytes per parameter; ZeRO-3 falls as 1/n and "
            f"drops under the {fmt_bytes(c.hbm_capacity)} of one {c.name} from {fit3:,.0f} chips.")


def _dp_setup(p):
    ax = p.ax
    p.l, = ax.plot([], [], color=ROLE["compute"], lw=2.5,
                   label=r"compute, $6 N_\mathrm{act} T / C$")
    set_log(ax, x=lambda v: fmt_count(v, 2), y=fmt_t)
    ax.set_xlabel("tokens per chip per step T (tokens)")
    ax.set_ylabel("time per step (s)")


@builder(setup=_dp_setup)
def dp_sync_vs_tokens(p, model, chip, n_chips=1024, tokens=None, grad_bytes=2, mark_tokens=None):
    """Compute time per step against tokens per chip, beside the gradient all-reduce time over the
    chip's scale-up and scale-out networks (bandwidth only, bf16 gradients, peak FLOP/s): the
    crossings are the per-chip batches below which the sync cannot hide. ``tokens`` default
    64 .. 4M."""
    m, c = model_of(model), chip_of(chip)
    dt, dnote = c.resolve_dtype("bf16")
    T = grid(tokens, 64, 4 * 2**20, n=40)
    comp = np.asarray(dp_compute_time(m, c, T, dtype=dt))
    p.l.set_data(T, comp)
    ax = p.ax
    crit, sync = {}, {}
    styles = {"scale_up": (PALETTE["green"], "--"), "scale_out": (PALETTE["vermillion"], "-.")}
    for net in ("scale_up", "scale_out"):
        if not getattr(c, f"{net}_bandwidth"):
            continue
        t = float(dp_gradient_sync_time(m, c, n_chips, net, grad_bytes))
        sync[net], crit[net] = t, float(dp_critical_tokens(m, c, n_chips, net, grad_bytes,
                                                           dtype=dt))
        word = "scale-up" if net == "scale_up" else "scale-out"
        bw = getattr(c, f"{net}_bandwidth")
        hides = (f"; hides above {fmt_count(crit[net], 3)} tokens"
                 if T.min() <= crit[net] <= T.max() else "")
        p.add(ax.axhline(t, color=styles[net][0], ls=styles[net][1], lw=1.8,
                         label=f"all-reduce, {word} ({fmt_si(bw, 'B/s')}): {fmt_t(t)}{hides}"))
        if T.min() <= crit[net] <= T.max():
            p.add(ax.plot([crit[net]], [t], "o", ms=7, mfc=styles[net][0], mec="white", mew=1.5,
                          zorder=5)[0])
    ax.set_xlim(T.min(), T.max())
    ax.set_ylim(*loglim(np.concatenate([comp, list(sync.values())]), pad=2.0))
    time_axis(ax, *ax.get_ylim(), keep=("1 ms", "10 ms", "0.1 s", "1 s", "10 s", "1 min",
                                        "10 min", "1 h", "1 day"), axis="y")
    p.add(ax.legend(loc="upper left"))
    with p.marking():
        if mark_tokens is not None:
            mt = float(mark_tokens)
            tc = float(dp_compute_time(m, c, mt, dtype=dt))
            p.point(mt, tc, f"T = {fmt_count(mt, 3)}: {fmt_t(tc)}")
            p.numbers = {"compute": tc}
    ax.set_title(with_notes(f"{m.name} data-parallel over {n_chips:,} {c.name}", dnote))
    p.numbers.update(critical=crit, sync=sync)
    parts = "; ".join(f"over {k.replace('_', '-')} the all-reduce takes {fmt_time(sync[k], 2)} and "
                      f"hides above {fmt_count(crit[k], 3)} tokens per chip" for k in sync)
    return (f"Log-log plot of compute time per step against tokens per chip for {m.name} on "
            f"{c.name}, a rising line, beside flat gradient "
            f"all-reduce times over {n_chips:,} chips: {parts}.")


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="n_chips", sweep=[64, 256, 1024, 2048, 4096, 8192, 16384])
def training_explorer(model="Llama-3-70B", tokens=15e12, chip="H100-SXM", n_chips=4096, mfu=0.4):
    """Training time vs chip count at a given MFU: 6 N D / (n C MFU)."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "tokens": steps("tokens", [1e11, 3e11, 1e12, 2e12, 5e12, 15e12, 36e12], tokens,
                        fmt=lambda t: fmt_count(t)),
        "mfu": slider("MFU", mfu, 0.1, 0.7, 0.05, ".2f"),
        "n_chips": steps("chips", [64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536], n_chips),
    }

    def figure(v):
        c = chip_of(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        return training_time_vs_chips, dict(model=model_of(v["model"]), tokens=v["tokens"], chip=c,
                                            mfu=v["mfu"], dtype=dt, mark_chips=v["n_chips"])

    return controls, figure, _training_readout


def _training_readout(n):
    rows = [("training FLOPs (6ND)", fmt_si(n["flops"], "FLOP")),
            ("wall-clock time", fmt_time(n["time"])), ("chip-hours", fmt_count(n["chip_hours"])),
            (f"cost at {fmt_usd(n['price_per_chip_hour'])}/chip-h", fmt_usd(n["cost"])),
            ("training state (16 bytes/param)", fmt_bytes(n["state"])),
            ("state per chip (ZeRO-3)", fmt_bytes(n["state_per_chip_zero3"])),
            ("fewest chips for the state", f"{n['min_training_chips']:,}")]
    rows += [(f"DP sync hides above ({word})", f"{fmt_count(t)} tokens/chip")
             for word, t in n["dp_critical_tokens"].items()]
    return rows
