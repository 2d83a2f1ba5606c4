"""Chapter 7: experts spread over a scale-up domain."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..units import (
    fmt_bytes,
    fmt_time,
)
from .explorer import (
    BATCHES,
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _sel,
    _snap,
    _table,
)

EP_DEGREES = [8, 16, 32, 64, 72, 128, 144, 256, 288]


def moe_explorer(model="DeepSeek-V3", chip="GB200", batch=128, expert_parallel=72,
                 redundant_experts=0):
    """Expert parallelism over a scale-up domain: the all-to-all of one MoE layer against the EP
    degree (it jumps where the group leaves the chip's domain), with the layout's experts and
    bytes per chip, the routing imbalance and the step bound beside it. ``batch`` is the tokens
    each chip holds per decode step."""
    from .. import moe as _moe
    from ..roofline import decode_step

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "expert_parallel": W.Dropdown(options=EP_DEGREES, value=_snap(expert_parallel, EP_DEGREES),
                                      description="EP chips"),
        "redundant_experts": W.Dropdown(options=[0, 16, 32, 64], value=redundant_experts,
                                        description="redundant"),
        "batch": _sel("tokens/chip", BATCHES, batch),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ep, b, r = v["expert_parallel"], v["batch"], v["redundant_experts"]
        kw = dict(model=m, chip_list=(c,), tokens_per_chip=b, mark_chips=ep)
        if "fig" not in state:
            state["fig"] = _figure(plots.all_to_all_vs_chips, **kw)
        else:
            state["fig"].update(**kw)
        dt, _ = c.resolve_dtype("fp8")
        s = decode_step(m, c, b * ep, 0, n_chips=ep, weight_bytes=1, dtype=dt)
        if not m.is_moe:
            rows = [("model", "dense: no experts to place"),
                    ("step bound (fp8)", fmt_time(s.time)), ("bound", s.bound)]
            return state["fig"], _table(rows)
        try:
            a = _moe.expert_all_to_all(m, b, ep, c)
            a2a = (f"{fmt_time(a.time)} ({fmt_time(a.scale_up_time)} up, "
                   f"{fmt_time(a.scale_out_time)} out)")
            per_step = fmt_time(a.time * m.n_moe_layers)
        except ValueError:
            a2a = per_step = "no network figure"
        pl = _moe.expert_placement(m, ep, redundant_experts=r, weight_bytes=1)
        imb = _moe.imbalance_factor(b, ep, m.experts_per_token)
        rows = [("experts per chip", f"{pl.experts_per_chip:g} ({pl.idle_chips:g} chips idle)"),
                ("weights per chip (fp8)", fmt_bytes(pl.weight_bytes_per_chip)),
                ("left for KV per chip",
                 fmt_bytes(max(c.hbm_capacity - pl.weight_bytes_per_chip, 0.0))),
                ("all-to-all per MoE layer", a2a),
                ("all-to-all per step", per_step),
                ("busiest chip / mean (random routing)", f"{imb:.2f}x"),
                ("step bound, no comm (fp8)", fmt_time(s.time)), ("bound", s.bound)]
        return state["fig"], _table(rows)

    return Explorer("moe_explorer", controls, compute, main="batch")
