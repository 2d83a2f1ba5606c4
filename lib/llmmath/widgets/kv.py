"""Chapter 5: the KV cache against context."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..plots.figure import try_value
from ..units import (
    fmt_bytes,
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


def kv_explorer(model="Llama-3-70B", chip="H100-SXM", context=8192, batch=16, n_chips=8,
                kv_bytes=2):
    """KV-cache memory vs context for a model (its attention variant), batch and chip memory."""
    from ..roofline import max_batch, max_context

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "kv_bytes": W.Dropdown(options=[("bf16 (2 B)", 2), ("fp8 (1 B)", 1), ("int4 (0.5 B)", 0.5)],
                               value=kv_bytes, description="KV element"),
        "batch": _sel("batch", BATCHES, batch), "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ctx = min(v["context"], m.max_context or v["context"])
        kw = dict(model_list=[m], chip=c, batch=v["batch"], n_chips=v["n_chips"],
                  kv_bytes=v["kv_bytes"], mark_context=ctx)
        if "fig" not in state:
            state["fig"] = _figure(plots.kv_vs_context, **kw)
        else:
            state["fig"].update(**kw)
        per_tok = m.kv_bytes_per_token(v["kv_bytes"])
        total = v["batch"] * m.kv_cache_bytes(ctx, v["kv_bytes"])
        mb = try_value(max_batch, m, c, ctx, n_chips=v["n_chips"], kv_bytes=v["kv_bytes"])
        mc = try_value(max_context, m, c, v["batch"], n_chips=v["n_chips"], kv_bytes=v["kv_bytes"])
        rows = [("attention", m.attention_kind), ("KV per token", fmt_bytes(per_tok)),
                (f"KV at {ctx:,} tokens x {v['batch']:,}", fmt_bytes(total)),
                ("weights", fmt_bytes(m.total_params * 2)),
                ("HBM", fmt_bytes(v["n_chips"] * c.hbm_capacity)),
                ("max batch at this context", _or_dash(mb, lambda x: f"{x:,}")),
                ("max context at this batch", _or_dash(mc, lambda x: f"{x:,}"))]
        return state["fig"], _table(rows)

    return Explorer("kv_explorer", controls, compute, main="context")
