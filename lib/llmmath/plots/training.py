"""Figures: training."""

from __future__ import annotations

import math

import numpy as np

from ..training import training_flops, training_memory, training_time
from ..units import fmt_count, fmt_si
from .figure import builder, grid, mask
from .labels import (
    fmt_days,
    loglim,
    set_log,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL


def _training_time_vs_chips_setup(p):
    ax = p.ax
    p.l, = ax.plot([], [], color=ROLE["compute"], lw=2.5, label="training time (ideal scaling)")
    ax.legend(loc="upper right")
    set_log(ax, x=lambda v: fmt_count(v, 2), y=fmt_days)
    ax.set_xlabel("chips n (count)")
    ax.set_ylabel("training time (days)")


@builder(setup=_training_time_vs_chips_setup)
def training_time_vs_chips(p, model, tokens, chip, chips_range=None, mfu=0.4, dtype="bf16", mark_chips=None):
    """Training time (days) against chip count (log-log): ``6 N_act D / (n C MFU)``.

    Reference lines at a week, a month and three months; greys out chip counts too few to hold
    the training state (16 B per parameter, activations excluded). ``chips_range`` default 8..65536.
    """
    dt, dnote = chip.resolve_dtype(dtype)
    n = grid(chips_range, 8, 65536, n=40)
    days = np.asarray(training_time(model, tokens, chip, n, mfu, dtype=dt)) / 86400.0
    p.l.set_data(*mask(n, days))
    ax = p.ax
    ax.set_xlim(n.min(), n.max())
    ax.set_ylim(*loglim(days, pad=1.5))
    for d, lab in ((7, "1 week"), (30, "1 month"), (90, "3 months")):
        if ax.get_ylim()[0] < d < ax.get_ylim()[1]:
            p.hline(d, lab, color=PALETTE["grey"], x=0.01, ha="left", ls=":")
    state = training_memory(model)
    need = math.ceil(state / chip.hbm_capacity)
    if need > n.min():
        p.nofit(n.min(), min(need, n.max()), "")
        p.add(ax.text(0.02, 0.04, f"training state (16 B/param)\nneeds >= {need:,} chips",
                         transform=ax.transAxes, fontsize=SMALL, color="#444444"))
    flops = training_flops(model, tokens)
    with p.marking():
        if mark_chips is not None:
            mc = float(mark_chips)
            d = float(training_time(model, tokens, chip, mc, mfu, dtype=dt)) / 86400.0
            p.point(mc, d, f"{mc:,.0f} chips: {fmt_days(d)} days")
            p.numbers = {"days": d}
    name = model.name if hasattr(model, "name") else f"{fmt_count(model)}-parameter model"
    ax.set_title(with_notes(f"{name}, {fmt_count(tokens)} tokens on {chip.name} at MFU {mfu:.0%}", dnote))
    p.numbers.update(flops=flops, chips_for_state=need)
    return (f"Log-log plot of training time in days against chip count for {name} on "
            f"{fmt_count(tokens)} tokens ({fmt_si(flops, 'FLOP')}) on {chip.name} at {mfu:.0%} MFU: "
            f"{fmt_days(days[0])} days on {n[0]:,.0f} chips, {fmt_days(days[-1])} days on {n[-1]:,.0f}.")
