"""Chapter 3: the decode step's bound against batch."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..cost import chip_hour_price
from ..units import (
    fmt_count,
    fmt_time,
    fmt_usd,
)
from .explorer import (
    BATCHES,
    CHIP_COUNTS,
    CONTEXTS,
    PRECISIONS,
    Explorer,
    _chip_picker,
    _figure,
    _fit_rows,
    _model_picker,
    _or_dash,
    _precision,
    _sel,
    _table,
)


def decode_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096,
                    precision="bf16 weights, bf16 KV", n_chips=8):
    """Decode step bound vs batch; pick model, chip, precision, chips; move batch and context."""
    from ..cost import cost_per_million_tokens
    from ..roofline import decode_step

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "precision": W.Dropdown(options=list(PRECISIONS), value=precision, description="precision"),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "batch": _sel("batch", BATCHES, batch), "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        wb, kvb, dt = _precision(c, v["precision"])
        ctx, _ = m.cap_context(v["context"])
        kw = dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"], weight_bytes=wb, kv_bytes=kvb,
                  dtype=dt, mark_batch=v["batch"])
        if "fig" not in state:
            state["fig"] = _figure(plots.decode_time_vs_batch, **kw)
        else:
            state["fig"].update(**kw)
        s = decode_step(m, c, v["batch"], ctx, n_chips=v["n_chips"], weight_bytes=wb, kv_bytes=kvb,
                        dtype=dt)
        price, _ = chip_hour_price(c)
        cost = cost_per_million_tokens(s, price)
        bstar = state["fig"].numbers.get("critical_batch")
        rows = [("step time (lower bound)", fmt_time(s.time)), ("bound", s.bound),
                ("tokens/s (replica)", fmt_count(v["batch"] / s.time)),
                ("tokens/s per user", f"{1 / s.time:,.1f}"),
                (f"$/Mtok at {fmt_usd(price)}/chip-h", fmt_usd(cost)),
                ("compute / weights / KV", " / ".join(fmt_time(x) for x in (s.compute_time,
                                                                            s.weight_time,
                                                                            s.kv_time))),
                ("critical batch B*", _or_dash(bstar, lambda x: f"{x:,.0f}"))]
        rows += _fit_rows(m, c, v["n_chips"], wb, kvb, ctx, v["batch"])
        return state["fig"], _table(rows)

    return Explorer("decode_explorer", controls, compute, main="batch")
