"""Live explorers (ipywidgets) built on :mod:`llmmath.plots`.

Each explorer returns a widget that shows the numbers it plots as text beside the figure.
In the static site saved widgets cannot recompute; chapters pair each explorer with a
kernel-free twin (pre-rendered frames) built by the same plot builder.
"""

from __future__ import annotations

import ipywidgets as W

from . import chips as _chips
from .units import fmt_bandwidth, fmt_bytes, fmt_flops_rate, fmt_time


def _chip_summary(chip, dtype: str) -> str:
    rows = [
        ("peak " + dtype, fmt_flops_rate(chip.peak(dtype))),
        ("HBM bandwidth", fmt_bandwidth(chip.hbm_bandwidth)),
        ("HBM capacity", fmt_bytes(chip.hbm_capacity)),
        ("FLOP per byte", f"{chip.ops_per_byte(dtype):.0f}"),
        ("HBM drain time", fmt_time(chip.drain_time)),
    ]
    cells = "".join(f"<tr><td>{k}</td><td style='text-align:right'><b>{v}</b></td></tr>" for k, v in rows)
    return f"<table class='llm-numbers'>{cells}</table>"


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
