"""Chapter 13: store or recompute."""

from __future__ import annotations

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..units import (
    fmt_bytes,
    fmt_si,
    fmt_time,
)
from .explorer import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _or_dash,
    _sel,
    _table,
)


def tradeoff_explorer(model="Llama-3-70B", chip="H100-SXM", batch=1, context=4096, n_chips=8):
    """Store or recompute (chapter 13): a decode step that reads its KV cache beside one that
    recomputes the context, against context; the panel gives both bounds, the extra FLOPs, the
    bytes saved, the context recomputed for free and the FLOPs per rebuilt byte."""
    from ..tradeoffs import recompute_crossover, recompute_intensity, store_or_recompute

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "batch": _sel("batch B", BATCHES, batch),
        "n_chips": _sel("chips n", CHIP_COUNTS, n_chips),
        "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        ctx = min(float(v["context"]), float(m.max_context) - 1.0)
        kw = dict(model=m, chip=c, batch=v["batch"], n_chips=v["n_chips"], dtype=dt,
                  mark_context=ctx)
        if "fig" not in state:
            state["fig"] = _figure(plots.store_vs_recompute, **kw)
        else:
            state["fig"].update(**kw)
        r = store_or_recompute(m, c, v["batch"], ctx, n_chips=v["n_chips"], dtype=dt)
        sx = recompute_crossover(m, c, batch=v["batch"], n_chips=v["n_chips"], dtype=dt)
        rows = [("context used", f"{ctx:,.0f} tokens"),
                ("step, reading the cache", fmt_time(r.store.time)),
                ("step, recomputing it", fmt_time(r.recompute.time)),
                ("recompute / read", f"{r.time_ratio:,.3g}x"),
                ("extra FLOPs per step", fmt_si(r.extra_flops, "FLOP")),
                ("KV bytes not read", fmt_bytes(r.saved_bytes)),
                ("free recompute up to", _or_dash(sx, lambda x: f"{x:,.0f} tokens")),
                ("FLOP per rebuilt byte", f"{recompute_intensity(m):,.0f}"),
                ("chip ridge C/W", f"{c.ops_per_byte(dt):,.0f} FLOP/byte")]
        return state["fig"], _table(rows)

    return Explorer("tradeoff_explorer", controls, compute, main="context")
