"""Chapter 6: prefill against prompt length."""

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
    CHIP_COUNTS,
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _or_dash,
    _sel,
    _table,
)


def prefill_explorer(model="Llama-3-70B", chip="H100-SXM", prompt=2048, batch=1, n_chips=8):
    """Prefill bound vs prompt length: when it turns compute-bound; time to first token."""
    from ..cost import cost_per_million_tokens
    from ..roofline import prefill_step

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "batch": _sel("batch", [1, 2, 4, 8, 16, 32, 64], batch),
        "prompt": _sel("prompt", [16, 64, 256, 1024, 2048, 4096, 8192, 32768, 131072], prompt),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        p = min(v["prompt"], m.max_context or v["prompt"])
        kw = dict(model=m, chip=c, batch=v["batch"], n_chips=v["n_chips"], dtype=dt, mark_prompt=p)
        if "fig" not in state:
            state["fig"] = _figure(plots.prefill_time_vs_prompt, **kw)
        else:
            state["fig"].update(**kw)
        s = prefill_step(m, c, v["batch"], p, n_chips=v["n_chips"], dtype=dt)
        price, _ = chip_hour_price(c)
        rows = [("prefill time (lower bound)", fmt_time(s.time)), ("bound", s.bound),
                ("time to first token", fmt_time(s.time)),
                ("prompt tokens/s", fmt_count(s.tokens / s.time)),
                (f"$/M input tokens at {fmt_usd(price)}/chip-h",
                 fmt_usd(cost_per_million_tokens(s, price))),
                ("compute-bound from P", _or_dash(state["fig"].numbers.get("crossover_prompt"),
                                                  lambda x: f"{x:,.0f}"))]
        return state["fig"], _table(rows)

    return Explorer("prefill_explorer", controls, compute, main="prompt")
