"""Chapter 4: cost per token against batch, and the latency-cost frontier."""

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
    Explorer,
    _chip_picker,
    _figure,
    _fit_rows,
    _model_picker,
    _or_dash,
    _sel,
    _table,
)


def batching_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096, n_chips=8,
                      price_per_chip_hour=None, view="cost vs batch"):
    """Cost per million tokens vs batch, or the latency-cost frontier; set the chip-hour price."""
    from ..cost import cost_per_million_tokens
    from ..roofline import decode_step

    c0 = _chips.get(chip)
    p0, _ = chip_hour_price(c0, price_per_chip_hour)
    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "price": W.FloatSlider(value=p0, min=0.25, max=10.0, step=0.25, description="$/chip-h",
                               continuous_update=True, readout_format=".2f"),
        "view": W.ToggleButtons(options=["cost vs batch", "latency vs cost"], value=view),
        "batch": _sel("batch", BATCHES, batch), "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ctx, _ = m.cap_context(v["context"])
        kw = dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"],
                  price_per_chip_hour=v["price"], mark_batch=v["batch"])
        key = v["view"]
        builder = plots.cost_vs_batch if key == "cost vs batch" else plots.latency_cost_frontier
        if key not in state:
            state[key] = _figure(builder, **kw)
        else:
            state[key].update(**kw)
        dt, _ = c.resolve_dtype("bf16")
        s = decode_step(m, c, v["batch"], ctx, n_chips=v["n_chips"], dtype=dt)
        cost = cost_per_million_tokens(s, v["price"])
        nums = state[key].numbers
        rows = [("step time (lower bound)", fmt_time(s.time)), ("bound", s.bound),
                ("tokens/s per user", f"{1 / s.time:,.1f}"),
                ("tokens/s (replica)", fmt_count(v["batch"] / s.time)),
                ("$/Mtok (lower bound)", fmt_usd(cost))]
        if "floor" in nums:
            rows.append(("cost floor", _or_dash(nums.get("floor"), fmt_usd)))
        rows += _fit_rows(m, c, v["n_chips"], 2, 2, ctx, v["batch"])
        return state[key], _table(rows)

    return Explorer("batching_explorer", controls, compute, main="batch")
