"""Chapter 8: pipelined serving and training."""

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


def pipeline_explorer(model="DeepSeek-V3", chip="H100-SXM", stages=4, chips_per_stage=8,
                      context=4096, micro_batch=64, micro_batches="P", hop_latency=77e-6):
    """Pipelined serving and training on one figure: HBM per chip against stages P (weights fall
    as 1/P, the KV cache of the P micro-batches in flight does not), with the decode latency,
    throughput per chip and the 1F1B training bubble for the same P and m in the panel."""
    from ..pipeline import bubble_fraction, pipeline_decode

    m_options = [("= P", "P")] + [(str(m), m) for m in (1, 2, 4, 8, 16, 32, 64, 128)]
    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "chips_per_stage": W.Dropdown(options=CHIP_COUNTS, value=chips_per_stage,
                                      description="chips/stage"),
        "micro_batch": _sel("micro-batch b", [1, 4, 16, 64, 256, 1024], micro_batch),
        "micro_batches": W.Dropdown(options=m_options, value=micro_batches,
                                    description="micro-batches m"),
        "context": _sel("context", CONTEXTS, context),
        "stages": _sel("stages P", [1, 2, 4, 8, 16, 32, 64], stages),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ctx, _ = m.cap_context(v["context"])
        mb = None if v["micro_batches"] == "P" else v["micro_batches"]
        kw = dict(model=m, chip=c, chips_per_stage=v["chips_per_stage"],
                  micro_batch=v["micro_batch"], context=ctx, micro_batches=mb,
                  mark_stages=v["stages"])
        if "fig" not in state:
            state["fig"] = _figure(plots.pipeline_memory_vs_stages, **kw)
        else:
            state["fig"].update(**kw)
        n = state["fig"].numbers
        P = v["stages"]
        m_used = P if mb is None else mb
        dt, _ = c.resolve_dtype("bf16")
        bw = c.scale_out_bandwidth or (c.scale_up_bandwidth or c.hbm_bandwidth) / 8
        d = pipeline_decode(m, c, v["micro_batch"], ctx, v["chips_per_stage"], P,
                            micro_batches=m_used, hop_latency=hop_latency, dtype=dt,
                            scale_out_bandwidth=bw)
        rows = [("weights per chip", fmt_bytes(n["weights"])), ("KV per chip", fmt_bytes(n["kv"])),
                ("total per chip", fmt_bytes(n["total"])), ("chip HBM", fmt_bytes(c.hbm_capacity)),
                ("fits", "yes" if n["total"] <= c.hbm_capacity else "no"),
                ("fits from P", _or_dash(n.get("fits_from"), lambda x: f"{x:g}")),
                ("sequences in flight", f"{n['batch_in_flight']:,.0f}"),
                ("chips in total", f"{v['chips_per_stage'] * P:,}"),
                (f"token latency ({fmt_time(hop_latency)} hops)", fmt_time(d.token_latency)),
                ("stage utilisation (decode)", f"{d.utilisation:.0%}"),
                ("tokens/s per chip", f"{d.throughput_per_chip:,.0f}"),
                ("training bubble (1F1B)", f"{bubble_fraction(P, m_used):.0%}")]
        return state["fig"], _table(rows)

    return Explorer("pipeline_explorer", controls, compute, main="stages")
