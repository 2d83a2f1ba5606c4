"""Figures: kv."""

from __future__ import annotations

import numpy as np

from ..roofline import critical_context, decode_balance, max_batch
from ..roofline import max_context as _maxctx
from ..units import fmt_bytes, fmt_count
from .explore import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    chip_picker,
    dropdown,
    explorer,
    model_picker,
    or_dash,
    steps,
)
from .figure import as_list, builder, chip_of, grid, mask, model_of, try_value
from .labels import (
    chips_label,
    fmt_b,
    fmt_tokens,
    loglim,
    set_log,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL, model_colour

__all__ = ["kv_vs_context", "kv_balance_vs_context"]


def _kv_vs_context_setup(p):
    ax = p.ax
    set_log(ax, x=lambda v: fmt_count(v, 2), y=fmt_b)
    ax.set_xlabel("context S (tokens per sequence)")
    ax.set_ylabel("KV-cache memory (bytes)")
    p.lines = []


@builder(setup=_kv_vs_context_setup)
def kv_vs_context(p, model_list, chip, batch=1, contexts=None, n_chips=1, kv_bytes=2,
                  weight_bytes=2, mark_context=None):
    """KV-cache bytes against context for several models (attention variants), log-log.

    Draws the HBM of ``n_chips`` chips and, per model, the capacity left after its weights
    (``n M - N_tot b_w``); for a single model, annotates the longest context that fits.
    """
    ms = as_list(model_list, [])
    if not ms:
        raise ValueError("model_list: give at least one model")
    ax = p.ax
    while len(p.lines) < len(ms):
        p.lines.append(p.keep(ax.plot([], [])[0]))
    while len(p.lines) > len(ms):
        p.lines.pop().remove()
    top = max((m.max_context or 1 << 20) for m in ms)
    S = grid(contexts, 128, top)
    ys = []
    hbm = float(n_chips) * chip.hbm_capacity
    for m, line in zip(ms, p.lines, strict=False):
        Sm = S[S <= m.max_context] if m.max_context else S
        y = float(batch) * m.kv_cache_bytes(Sm, kv_bytes) if Sm.size else np.array([])
        line.set_data(*mask(Sm, y))
        col = model_colour(m) if len(ms) > 1 else ROLE["kv"]
        line.set_color(col)
        line.set_label(f"{m.name} ({m.attention_kind})" if len(ms) > 1
                       else f"KV cache of {m.name} ({m.attention_kind})")
        ys.append(y)
        free = hbm - m.total_params * weight_bytes
        if free > 0 and 1 < len(ms) <= 4:  # one model: hline() below draws it, labelled
            p.add(ax.axhline(free, color=col if len(ms) > 1 else ROLE["capacity"], ls="--", lw=1.2))
    ax.set_xlim(S.min(), S.max())
    allv = np.concatenate([np.ravel(y) for y in ys] + [[hbm]])
    ax.set_ylim(*loglim(allv, pad=1.5))
    ax.legend(loc="lower right")  # KV grows with context: the lower right stays empty
    p.hline(hbm, f"HBM of {chips_label(n_chips, chip)}: {fmt_b(hbm)}", color=ROLE["capacity"],
               x=0.01, ha="left", ls="-")
    m0 = ms[0]
    free0 = hbm - m0.total_params * weight_bytes
    mc = try_value(_maxctx, m0, chip, float(batch), n_chips=n_chips, weight_bytes=weight_bytes,
              kv_bytes=kv_bytes)
    if len(ms) == 1:
        if free0 > 0:
            p.hline(free0, f"left for KV after weights: {fmt_b(free0)}", color=ROLE["capacity"],
                       x=0.99, ha="right", va="top")
        else:
            p.note(f"{m0.name} weights alone ({fmt_b(m0.total_params * weight_bytes)}) exceed HBM",
                      loc=(0.98, 0.03), ha="right")
        if mc is not None and S.min() <= mc <= S.max():
            p.vline(mc, f"fits up to\n S = {fmt_count(mc, 2)}", color=ROLE["capacity"], y=0.6)
    with p.marking():
        if mark_context is not None:
            sc = float(mark_context)
            if m0.max_context is None or sc <= m0.max_context:
                v = float(batch) * m0.kv_cache_bytes(sc, kv_bytes)
                p.point(sc, v, f"S={fmt_tokens(sc)}: {fmt_b(v)}")
                p.numbers = {"kv_bytes": v}
            p.numbers.update(batch=batch, context=mark_context,
                             max_batch=try_value(max_batch, m0, chip, sc, n_chips=n_chips,
                                                 weight_bytes=weight_bytes, kv_bytes=kv_bytes))
    ax.set_title(f"KV cache for batch {float(batch):g} at {kv_bytes:g} bytes per element"
                 + (f" vs {chips_label(n_chips, chip)}" if True else ""))
    p.numbers.update(max_context=mc, free=free0, attention_kind=m0.attention_kind,
                     kv_bytes_per_token=m0.kv_bytes_per_token(kv_bytes),
                     weights=m0.total_params * weight_bytes, hbm=hbm)
    per = ", ".join(f"{m.name} {fmt_b(m.kv_bytes_per_token(kv_bytes))}" for m in ms[:6])
    return (f"Log-log plot of KV-cache bytes against context for batch {float(batch):g} "
            f"({per} per token), with the HBM of {chips_label(n_chips, chip)} ({fmt_b(hbm)}) and "
            "what is left after the weights as capacity lines"
            + (f"; {m0.name} fits up to about {fmt_count(mc, 2)} tokens."
               if mc and len(ms) == 1 else "."))


def _kv_balance_vs_context_setup(p):
    ax = p.ax
    set_log(ax, x=lambda v: fmt_count(v, 2), y=lambda v: f"{v:g}")
    ax.set_xlabel("context S (tokens per sequence)")
    ax.set_ylabel("KV-read time / compute time,\nper sequence")
    p.lines = []


@builder(figsize=(6.4, 4.4), setup=_kv_balance_vs_context_setup)
def kv_balance_vs_context(p, model_list, chip, contexts=None, kv_bytes=2, dtype="bf16",
                          show_uncapped=True):
    """Per sequence: KV-read time over compute time (:func:`~llmmath.roofline.decode_balance`,
    attention's FLOPs counted) against context.

    A curve crosses 1 at the model's critical context S* (marked): beyond it decode is
    memory-bound at every batch. Sliding-window layers bend a curve down (their reads stop
    growing at the window); sparse top-k attention flattens it, and if the plateau stays below 1
    the model has no critical context. With ``show_uncapped`` a dashed line shows the same model
    with every layer global and dense (no window, no top-k). ``contexts`` default
    128..the longest ``max_context``.
    """
    ms = as_list(model_list, [])
    if not ms:
        raise ValueError("model_list: give at least one model")
    dt, dnote = chip.resolve_dtype(dtype)
    ax = p.ax
    p.lines = []
    top = max((m.max_context or 1 << 20) for m in ms)
    S = grid(contexts, 128, top, n=120)
    ys, stars, dots = [], {}, []
    uncapped = False
    for m in ms:
        col = model_colour(m)
        Sm = S[S <= m.max_context] if m.max_context else S
        read = decode_balance(m, chip, Sm, kv_bytes=kv_bytes, dtype=dt)
        star = try_value(critical_context, m, chip, kv_bytes=kv_bytes, dtype=dt)
        name = f"{m.name} ({m.attention_kind})" + (f": S* = {fmt_count(star, 2)}" if star else "")
        p.lines.append(ax.plot(*mask(Sm, read), color=col, label=name)[0])
        ys.append(read)
        if show_uncapped:
            dense = m.replace(sliding_window=None, n_sliding_layers=0, sparse_attention_topk=None,
                              index_n_heads=None, index_head_dim=None, index_key_bytes=None)
            full = decode_balance(dense, chip, Sm, kv_bytes=kv_bytes, dtype=dt)
            if not np.allclose(full, read):
                p.lines.append(ax.plot(*mask(Sm, full), color=col, ls="--", lw=1.4,
                                          label="_without window / top-k")[0])
                uncapped = True
                ys.append(full)
        star = try_value(critical_context, m, chip, kv_bytes=kv_bytes, dtype=dt)
        stars[m.name] = star
        if star is not None and Sm.min() <= star <= Sm.max():
            dots.append((star, col))
    p.add(ax.axhline(1.0, color=ROLE["total"], ls="--", lw=1.2, zorder=1,
                     label="above 1: memory-bound at any batch"))
    if uncapped:  # one legend entry for every dashed twin
        p.add(ax.plot([], [], color=PALETTE["grey"], ls="--", lw=1.4,
                      label="dashed: without window / top-k")[0])
    ax.set_xlim(S.min(), S.max())
    ax.set_ylim(*loglim(np.concatenate([np.ravel(y) for y in ys] + [[1.0]]), pad=1.6))
    ax.legend(loc="upper left", fontsize=SMALL)
    for star, col in dots:  # S* labels, placed clear of the legend, the curves and each other
        p.point(star, 1.0, "", color=col)  # S* values are in the legend, beside each model
    ax.set_title(with_notes(f"KV reads vs compute per sequence, {chip.name}",
                        f"{dt} compute, {kv_bytes:g} bytes per KV element", dnote))
    p.numbers = {"critical_context": stars}
    parts = []
    for m in ms:
        st = stars[m.name]
        parts.append(f"{m.name} crosses at {fmt_count(st, 2)} tokens" if st is not None
                     else f"{m.name} never crosses")
    return ("Log-log plot, for one sequence, of the time to read its KV cache divided by the time "
            f"to compute its token on {chip.name}, against context; a curve above 1 means decode "
            "is memory-bound at every batch: " + "; ".join(parts) + ".")


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="context", sweep=CONTEXTS)
def kv_explorer(model="Llama-3-70B", chip="H100-SXM", context=8192, batch=16, n_chips=8,
                kv_bytes=2):
    """KV-cache memory vs context for a model (its attention variant), batch and chip memory."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "n_chips": dropdown("chips", CHIP_COUNTS, n_chips),
        "kv_bytes": dropdown("KV element", [("bf16 (2 B)", 2), ("fp8 (1 B)", 1),
                                            ("int4 (0.5 B)", 0.5)], kv_bytes),
        "batch": steps("batch", BATCHES, batch), "context": steps("context", CONTEXTS, context),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        ctx = min(v["context"], m.max_context or v["context"])
        return kv_vs_context, dict(model_list=[m], chip=c, batch=v["batch"], n_chips=v["n_chips"],
                                   kv_bytes=v["kv_bytes"], mark_context=ctx)

    return controls, figure, _kv_readout


def _kv_readout(n):
    return [("attention", n["attention_kind"]),
            ("KV per token", fmt_bytes(n["kv_bytes_per_token"])),
            (f"KV at {n['context']:,} tokens × {n['batch']:,}", fmt_bytes(n["kv_bytes"])),
            ("weights", fmt_bytes(n["weights"])), ("HBM", fmt_bytes(n["hbm"])),
            ("max batch at this context", or_dash(n["max_batch"], lambda x: f"{x:,}")),
            ("max context at this batch", or_dash(n["max_context"], lambda x: f"{x:,}"))]
