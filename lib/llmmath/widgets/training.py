"""Chapter 11: training time against chip count."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..cost import chip_hour_price
from ..units import (
    fmt_bytes,
    fmt_count,
    fmt_si,
    fmt_time,
    fmt_usd,
)
from .explorer import (
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _sel,
    _table,
)


def training_explorer(model="Llama-3-70B", tokens=15e12, chip="H100-SXM", n_chips=4096, mfu=0.4):
    """Training time vs chip count at a given MFU: 6 N D / (n C MFU)."""
    from ..training import (
        dp_critical_tokens,
        min_training_chips,
        training_flops,
        training_memory,
        training_time,
        zero_memory_per_chip,
    )

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "tokens": _sel("tokens", [1e11, 3e11, 1e12, 2e12, 5e12, 15e12, 36e12], tokens,
                       fmt=lambda t: fmt_count(t)),
        "mfu": W.FloatSlider(value=mfu, min=0.1, max=0.7, step=0.05, description="MFU",
                             readout_format=".2f"),
        "n_chips": _sel("chips", [64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536], n_chips),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        kw = dict(model=m, tokens=v["tokens"], chip=c, mfu=v["mfu"], dtype=dt,
                  mark_chips=v["n_chips"])
        if "fig" not in state:
            state["fig"] = _figure(plots.training_time_vs_chips, **kw)
        else:
            state["fig"].update(**kw)
        t = training_time(m, v["tokens"], c, v["n_chips"], v["mfu"], dtype=dt)
        price, _ = chip_hour_price(c)
        chip_h = v["n_chips"] * t / 3600
        rows = [("training FLOPs (6ND)", fmt_si(training_flops(m, v["tokens"]), "FLOP")),
                ("wall-clock time", fmt_time(t)), ("chip-hours", fmt_count(chip_h)),
                (f"cost at {fmt_usd(price)}/chip-h", fmt_usd(chip_h * price)),
                ("training state (16 B/param)", fmt_bytes(training_memory(m))),
                ("state per chip (ZeRO-3)", fmt_bytes(zero_memory_per_chip(m, v["n_chips"], 3))),
                ("fewest chips for the state", f"{min_training_chips(m, c):,}")]
        for net, word in (("scale_up", "scale-up"), ("scale_out", "scale-out")):
            if getattr(c, f"{net}_bandwidth"):
                t_star = dp_critical_tokens(m, c, v["n_chips"], net, dtype=dt)
                rows.append((f"DP sync hides above ({word})", f"{fmt_count(t_star)} tokens/chip"))
        return state["fig"], _table(rows)

    return Explorer("training_explorer", controls, compute, main="n_chips")
