"""Chapter 1: a chip's three numbers, and one matmul on its roofline."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import plots
from ..units import (
    fmt_bandwidth,
    fmt_bytes,
    fmt_flops_rate,
    fmt_time,
)
from .explorer import (
    Explorer,
    _chip_picker,
    _figure,
    _sel,
    _table,
)


def _chip_summary(chip, dtype: str) -> str:
    rows = [
        ("peak " + dtype, fmt_flops_rate(chip.peak(dtype))),
        ("HBM bandwidth", fmt_bandwidth(chip.hbm_bandwidth)),
        ("HBM capacity", fmt_bytes(chip.hbm_capacity)),
        ("FLOP per byte", f"{chip.ops_per_byte(dtype):.0f}"),
        ("HBM drain time", fmt_time(chip.drain_time)),
    ]
    return _table(rows)


def chip_explorer(chip_name: str = "H100-SXM", dtype: str = "bf16"):
    """Pick a chip; see its three numbers, its ridge point and its HBM drain time."""
    start = _chips.get(chip_name)
    picker = W.Dropdown(options=[c.name for c in _chips.all_chips() if dtype in c.flops],
                        value=start.name, description="chip")
    out = W.HTML(_chip_summary(start, dtype))

    def update(change):
        out.value = _chip_summary(_chips.get(change["new"]), dtype)

    picker.observe(update, names="value")
    return W.VBox([picker, out])


def matmul_roofline_explorer(chip="H100-SXM", batch=64, k=8192, n=8192, dtype="bf16"):
    """One (batch x k) @ (k x n) weight matmul on a chip's roofline: move the batch across the
    ridge."""
    from ..roofline import arithmetic_intensity, attainable_flops

    c0 = _chips.get(chip)
    controls = {
        "chip": _chip_picker(c0.name),
        "dtype": W.Dropdown(options=list(c0.flops), value=c0.resolve_dtype(dtype)[0],
                            description="dtype"),
        "batch": _sel("batch", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
                      batch),
    }
    state = {}

    def compute(v):
        c = _chips.get(v["chip"])
        names = list(c.flops)
        if list(controls["dtype"].options) != names:  # another chip: offer its formats
            controls["dtype"].unobserve_all("value")
            controls["dtype"].options = names
            controls["dtype"].value = c.resolve_dtype(v["dtype"])[0]
            controls["dtype"].observe(state["explorer"]._on_change, names="value")
        dt = controls["dtype"].value
        kw = dict(chip=c, batch=v["batch"], k=k, n=n, dtype=dt)
        if "fig" not in state:
            state["fig"] = _figure(plots.matmul_on_roofline, **kw)
        else:
            state["fig"].update(**kw)
        i = arithmetic_intensity(v["batch"], k, n)
        f = attainable_flops(c, i, dt)
        flops = 2.0 * v["batch"] * k * n
        rows = [("arithmetic intensity", f"{i:,.3g} FLOP/byte"),
                ("ridge point", f"{c.ops_per_byte(dt):,.0f} FLOP/byte"),
                ("attainable", fmt_flops_rate(f)), ("share of peak", f"{f / c.peak(dt):.0%}"),
                ("bound", "compute" if i >= c.ops_per_byte(dt) else "memory"),
                ("matmul time (lower bound)", fmt_time(flops / f))]
        return state["fig"], _table(rows)

    e = Explorer.__new__(Explorer)
    state["explorer"] = e
    Explorer.__init__(e, "matmul_roofline_explorer", controls, compute, main="batch")
    return e
