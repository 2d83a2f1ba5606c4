"""Chapter 10: from the bound to an estimate."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..units import (
    fmt_count,
    fmt_time,
)
from .explorer import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    PRECISIONS,
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _precision,
    _sel,
    _table,
)

EP_DEGREES = [1, 2, 4, 8, 16, 32, 64, 72]


def estimate_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096, n_chips=8,
                      expert_parallel=1, precision="bf16 weights, bf16 KV"):
    """From bound to estimate (chapter 10): one decode step's estimate against batch, term by
    term, beside the per-operation bound; the panel gives every term at the marked batch, the
    estimate over the bound and the tokens per second it implies. A checkbox replays the step as
    a CUDA graph (the cost per kernel of a graph node instead of a launch)."""
    import dataclasses

    from ..estimate import DEFAULT_OVERHEADS, GRAPH_NODE_OVERHEAD, estimate_step

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "precision": W.Dropdown(options=list(PRECISIONS), value=precision,
                                description="precision"),
        "n_chips": _sel("chips n", CHIP_COUNTS, n_chips),
        "expert_parallel": _sel("EP degree", EP_DEGREES, expert_parallel),
        "context": _sel("context", CONTEXTS, context),
        "cuda_graphs": W.Checkbox(value=False, description="CUDA graphs"),
        "batch": _sel("batch B", BATCHES, batch),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        wb, kvb, dt = _precision(c, v["precision"])
        ctx = min(float(v["context"]), float(m.max_context) - 1.0)
        o = (dataclasses.replace(DEFAULT_OVERHEADS, kernel_overhead=GRAPH_NODE_OVERHEAD)
             if v["cuda_graphs"] else DEFAULT_OVERHEADS)
        ep = v["expert_parallel"] if m.is_moe else 1
        kw = dict(context=ctx, n_chips=v["n_chips"], weight_bytes=wb, kv_bytes=kvb, dtype=dt,
                  expert_parallel=ep, overheads=o)
        e = estimate_step(m, c, v["batch"], **kw)  # raises before the figure changes
        if "fig" not in state:
            state["fig"] = _figure(plots.estimate_vs_batch, model=m, chip=c,
                                   mark_batch=v["batch"], **kw)
        else:
            state["fig"].update(model=m, chip=c, mark_batch=v["batch"], **kw)
        rows = [("per-operation bound", fmt_time(float(e.bound.time)))]
        rows += [(f"+ {name}", fmt_time(float(t))) for name, t in e.terms.items()
                 if name != "bound"]
        rows += [("estimate", fmt_time(float(e.time))),
                 ("estimate / bound", f"{float(e.time / e.bound.time):.2f}x"),
                 ("tokens/s per chip (estimate)",
                  fmt_count(v["batch"] / float(e.time) / v["n_chips"])),
                 ("expert-parallel degree", f"{ep}" + ("" if m.is_moe else " (dense model)"))]
        return state["fig"], _table(rows)

    return Explorer("estimate_explorer", controls, compute, main="batch")
