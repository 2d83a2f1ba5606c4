"""Figures: parallel."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter

from ..parallel import pipeline_memory_per_chip
from .figure import builder, grid, mask
from .labels import (
    fmt_b,
    fmt_batch,
    fmt_n,
    fmt_t,
    loglim,
    set_log,
    with_notes,
)
from .style import ROLE


def _moe_weights_vs_batch_setup(p):
    ax = p.ax
    p.l, = ax.plot([], [], color=ROLE["weights"], lw=2.5, label="weights read per step")
    ax.legend(loc="upper left")
    set_log(ax, x=fmt_batch, y=fmt_b)
    ax.set_xlabel("batch B (tokens per step)")
    ax.set_ylabel("weight bytes read per chip per step (bytes)")


@builder(setup=_moe_weights_vs_batch_setup)
def moe_weights_vs_batch(p, model, chip, batches=None, expert_parallel=1, weight_bytes=2,
                         mark_batch=None):
    """Weight bytes read per chip per decode step against batch for an MoE model.

    With ``B`` tokens routed ``k`` of ``E``, ``E (1 - (1 - k/E)^B)`` distinct experts are touched
    per layer, so the read grows from the shared weights plus k experts toward all weights.
    Annotates the batch at which half the experts are touched. ``expert_parallel`` divides the
    bytes over chips.
    """
    B = grid(batches, 1, 16384)
    ep = float(expert_parallel)
    y = model.weight_params_read(B) * weight_bytes / ep * np.ones_like(B)
    p.l.set_data(*mask(B, y))
    total = model.total_params * weight_bytes / ep
    ax = p.ax
    ax.set_xlim(B.min(), B.max())
    ax.set_ylim(*loglim(np.concatenate([y, [total]]), pad=1.5))
    p.hline(total, f"all weights: {fmt_b(total)}", color=ROLE["total"], x=0.99, va="bottom")
    half = None
    if model.is_moe:
        E, k = model.n_experts, model.experts_per_token
        if k < E:
            half = math.log(0.5) / math.log1p(-k / E)
            if B.min() <= half <= B.max():
                p.vline(half, f"half the experts\n touched: B = {half:,.0f}", y=0.6)
    else:
        p.note("dense model: every weight is read at every batch")
    t1 = float(model.weight_params_read(1.0)) * weight_bytes / ep / chip.hbm_bandwidth
    with p.marking():
        if mark_batch is not None:
            b = float(mark_batch)
            v = float(model.weight_params_read(b)) * weight_bytes / ep
            p.point(b, v, f"B={b:g}: {fmt_b(v)}")
            p.numbers = {"weights_read": v}
    ax.set_title(f"{model.name}: weights read per step, {ep:g}-way expert parallel on {chip.name}")
    p.numbers.update(half_experts_batch=half, all_weights=total)
    return (f"Log-log plot of the weight bytes each of {ep:g} chips reads per decode step of "
            f"{model.name} against batch: {fmt_b(y[0])} at batch {B[0]:g} (a {fmt_t(t1)} read on "
            f"{chip.name}) rising toward all {fmt_b(total)} as the batch touches every expert"
            + (f", half of them by batch {half:,.0f}." if half else "."))


def _memory_per_chip_setup(p):
    ax = p.ax
    p.l_w, = ax.plot([], [], "o-", color=ROLE["weights"], label="weights")
    p.l_kv, = ax.plot([], [], "o-", color=ROLE["kv"], label="KV cache")
    p.l_t, = ax.plot([], [], "-", color=ROLE["total"], lw=3, alpha=0.55, label="total")
    ax.legend(loc="upper right")
    set_log(ax, x=lambda v: f"{v:g}", y=fmt_b)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("pipeline stages P (count)")
    ax.set_ylabel("HBM per chip (bytes)")


@builder(setup=_memory_per_chip_setup)
def memory_per_chip(p, model, chip, expert_parallel=8, stages=None, micro_batch=64, context=4096,
                    weight_bytes=2, kv_bytes=2, mark_stages=None):
    """HBM per chip (weights, KV cache, total) against pipeline stages P for an EP degree E.

    Keeping P stages busy needs P micro-batches in flight, so per chip
    ``N_tot b_w / (E P) + b kv(S) / E``: pipelining divides the weights, not the KV cache.
    Annotates the first P where the total fits the chip. ``stages`` default 1, 2, 4 ... 64.
    """
    ctx, cnote = model.cap_context(context)
    P = grid(stages if stages is not None else 2.0 ** np.arange(0, 7), 1, 64)
    mem = pipeline_memory_per_chip(model, float(micro_batch), ctx, float(expert_parallel), P,
                                   weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    w = np.broadcast_to(mem.weights, P.shape)
    kv = np.broadcast_to(mem.kv, P.shape)
    tot = np.broadcast_to(mem.total, P.shape)
    p.l_w.set_data(*mask(P, w))
    p.l_kv.set_data(*mask(P, kv))
    p.l_t.set_data(*mask(P, tot))
    ax = p.ax
    ax.set_xlim(P.min() / 1.3, P.max() * 1.3)
    ax.set_ylim(*loglim(np.concatenate([w, kv, tot, [chip.hbm_capacity]]), pad=1.5))
    fit = P[tot <= chip.hbm_capacity]
    pfit = float(fit[0]) if fit.size else None
    if pfit is not None:
        p.vline(pfit, f"fits from P = {pfit:g}", color=ROLE["capacity"], y=0.3)
    p.hline(chip.hbm_capacity, f"{chip.name} HBM: {fmt_b(chip.hbm_capacity)}",
            color=ROLE["capacity"], x=0.01, ha="left", va="top", ls="-")
    if pfit is None and kv[0] > chip.hbm_capacity:
        p.note("KV cache alone exceeds a chip: pipelining does not shrink it")
    with p.marking():
        if mark_stages is not None:
            mp = float(mark_stages)
            mm = pipeline_memory_per_chip(model, float(micro_batch), ctx, float(expert_parallel),
                                          mp, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
            p.point(mp, mm.total, f"P={mp:g}: {fmt_b(mm.total)}")
            p.numbers = {"weights": mm.weights, "kv": mm.kv, "total": mm.total,
                            "batch_in_flight": mm.batch_in_flight}
    ax.set_title(with_notes(f"{model.name}: {float(expert_parallel):g}-way EP x P stages, "
                            f"micro-batch {float(micro_batch):g}, context {fmt_n(ctx)}", cnote))
    p.numbers.update(fits_from=pfit)
    return (f"Log-log plot of HBM per chip against pipeline stages for {model.name} with "
            f"{float(expert_parallel):g}-way expert parallelism: weights per chip fall from "
            f"{fmt_b(w[0])} as 1/P while the KV cache per chip stays at {fmt_b(kv[0])}; "
            + (f"the total fits a {chip.name} from P = {pfit:g}." if pfit else
               f"the total never fits a {chip.name} in this range."))
