"""Chapter 9: tensor parallelism and its communication."""

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
    CONTEXTS,
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _or_dash,
    _sel,
    _table,
)


def partition_explorer(model="Llama-3-70B", chip="H100-SXM", batch=8, context=4096, n_chips=8,
                       topology="ring", hop_latency=2.4e-6, kv_shard="batch"):
    """Tensor parallelism with its communication: the decode step bound falls as 1/n while the
    all-reduces (alpha-beta model, ``hop_latency`` per step on ``topology``) do not; the panel gives
    the parts of the step, the cost per token and the fastest chip count."""
    from ..parallel import KV_SHARDINGS, best_tensor_parallel, sharded_decode

    lat_opts = [("0 (bandwidth only)", 0.0), ("1 µs", 1e-6), ("2.4 µs (NVLink ring)", 2.4e-6),
                ("3 µs (NVLink SHARP)", 3e-6), ("10 µs", 1e-5), ("77 µs (InfiniBand)", 77e-6)]
    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "batch": _sel("batch B", BATCHES, batch),
        "context": _sel("context", CONTEXTS, context),
        "topology": W.Dropdown(options=["switch", "ring", "torus"], value=topology,
                               description="topology"),
        "hop_latency": W.Dropdown(options=lat_opts, value=hop_latency, description="per step"),
        "kv_shard": W.Dropdown(options=list(KV_SHARDINGS), value=kv_shard,
                               description="KV split by"),
        "n_chips": _sel("chips n", [1, 2, 4, 8, 16, 32, 64, 128, 256], n_chips),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ctx, _ = m.cap_context(v["context"])
        kw = dict(model=m, chip=c, batch=v["batch"], context=ctx, hop_latency=v["hop_latency"],
                  topology=v["topology"], kv_shard=v["kv_shard"], mark_chips=v["n_chips"])
        if "fig" not in state:
            state["fig"] = _figure(plots.tp_step_vs_chips, **kw)
        else:
            state["fig"].update(**kw)
        dt, _ = c.resolve_dtype("bf16")
        r = sharded_decode(m, c, v["batch"], ctx, v["n_chips"], v["hop_latency"], v["topology"],
                           kv_shard=v["kv_shard"], dtype=dt)
        best, _ = best_tensor_parallel(m, c, v["batch"], ctx, hop_latency=v["hop_latency"],
                                       topology=v["topology"], kv_shard=v["kv_shard"], dtype=dt)
        rows = [("step bound (ch. 3-5)", fmt_time(r.step.time)),
                ("tensor-parallel all-reduces", fmt_time(r.tp_comm)),
                ("attention resharding", fmt_time(r.kv_comm)),
                ("step, not overlapped", fmt_time(r.time)),
                ("step, fully overlapped", fmt_time(r.time_overlapped)),
                ("KV copies read", f"{r.kv_replicas:.3g}"),
                ("HBM per chip", fmt_bytes(r.weights_per_chip + r.kv_per_chip)),
                ("fits", "yes" if r.fits else "no"),
                ("chip-seconds per token", f"{r.chip_seconds_per_token:.3g}"),
                ("fastest count in the domain", _or_dash(best, lambda x: f"{x:g}"))]
        return state["fig"], _table(rows)

    return Explorer("partition_explorer", controls, compute, main="n_chips")
