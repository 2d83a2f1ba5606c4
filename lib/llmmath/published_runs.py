"""Published training runs, reproduced: each run's published layout, estimated with
:mod:`llmmath.layout`, beside the utilisation its authors printed.

The runs are ``llmmath/data/training_runs.csv`` (package data; every figure's source is in the
repository's ``data/training_runs/README.md``). Nothing is tuned per run. Where a source leaves a
layout field out (chunks per chip, micro-batch, recomputation) the same rule fills it for every
run: the fastest choice that fits. What the software did (sequence parallelism, fused attention,
an overlapped gradient sync, layers on the end stages) is taken from the row where the README
sources it, else the :class:`~llmmath.layout.Layout` default. The estimate is compared with
what the source prints: MFU with MFU, HFU (recomputation counted) with HFU.

DeepSeek-V3 prints no utilisation, only a cost, "180K H800 GPU hours" per trillion tokens
(Sec. 1 [deepseek_v3]); :func:`chip_hours_mfu` turns it into one:
``MFU = (6 N_act + a(S)) D / (H x 3600 s x C_bf16)`` with ``D = 10^12`` tokens, ``H`` the GPU
hours, ``a(S)`` the attention FLOPs per token at the run's sequence length
(:func:`llmmath.training.attention_training_flops_per_token`) and ``C_bf16`` the chip's dense
bf16 peak. GPU hours count every stall and restart, so it is a goodput MFU, at most the step's.
A run whose matmuls ran in fp8 is estimated at the fp8 kernel rates and its estimate set over
the same bf16 peak.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

from . import chips as _chips
from . import models as _models
from ._check import positive
from .layout import Cluster, Layout, _candidates, memory_per_chip, plan, step_time
from .models import Model
from .pipeline import SCHEDULES
from .training import attention_training_flops_per_token, training_flops

__all__ = ["RUNS_CSV", "TOKENS_PER_GPU_HOURS_FIGURE", "rows", "chip_hours_mfu", "published_runs"]

#: The tokens a published "GPU hours per trillion tokens" figure is for (DeepSeek-V3, Sec. 1).
TOKENS_PER_GPU_HOURS_FIGURE = 1e12
_GPU_HOURS = re.compile(r"([\d.]+)K \S+ GPU hours per trillion tokens")

#: The table of published runs (one row per run; sources in data/training_runs/README.md).
RUNS_CSV = Path(__file__).resolve().parent / "data" / "training_runs.csv"
_SHAPE = re.compile(r"(\d+) layers; hidden (\d+); (\d+) heads; vocab (\d+)")
# Catalogue entries added after the CSV was written (its README lists them as missing): a run's
# empty catalogue_model or chip field takes these names.
_ADDED_MODELS = {"bloom-176b": "BLOOM-176B"}
_ADDED_CHIPS = {"deepseek-v3": "H800"}
_SOFTWARE_FLAGS = ("sequence_parallel", "fused_attention", "dp_overlap", "reshard_after_forward")
_STAGE_LAYERS = ("first_stage_layers", "last_stage_layers")


def rows() -> list[dict]:
    """The rows of :data:`RUNS_CSV`, as strings."""
    with RUNS_CSV.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _run_model(row) -> Model:
    """The run's catalogue model, or a GPT-shaped one (4D plain MLP, multi-head attention,
    tied embeddings, biases, as in Megatron-LM) built from the shape the row prints."""
    name = row["catalogue_model"] or _ADDED_MODELS.get(row["run"])
    if name:
        return _models.get(name)
    m = _SHAPE.search(row["model"])
    if not m:
        raise LookupError(f"run {row['run']!r}: no catalogue model and no shape in "
                          f"{row['model']!r}")
    L, D, H, V = (int(x) for x in m.groups())
    return Model(name=row["run"], n_layers=L, d_model=D, d_ff=4 * D, n_heads=H, vocab_size=V,
                 tied_embeddings=True, gated_mlp=False, attention_bias=True, mlp_bias=True)


def chip_hours_mfu(model, chip, chip_hours, sequence_length, tokens=TOKENS_PER_GPU_HOURS_FIGURE):
    """MFU over the bf16 peak implied by ``chip_hours`` for ``tokens`` tokens of
    ``sequence_length``: ``(6 N_act + a(S)) D / (chip_hours x 3600 x C_bf16)`` (module
    docstring)."""
    h = positive("chip_hours", chip_hours, single=True)
    d = positive("tokens", tokens, single=True)
    s = positive("sequence_length", sequence_length, integer=True, single=True)
    flops = float(training_flops(model, d)) + d * float(
        attention_training_flops_per_token(model, s))
    return flops / (h * 3600.0 * chip.peak("bf16"))


def _published_utilisation(row, chip, model=None) -> tuple[float, str]:
    """(value, kind): the MFU or HFU the source prints, else its TFLOP/s over the bf16 peak,
    an HFU where the source says it counts hardware FLOPs (BLOOM's log: "hardware FLOPs
    counting recomputation"), else set beside the MFU (OPT does not say which); else the MFU
    its GPU hours per trillion tokens imply (:func:`chip_hours_mfu`, needs ``model``)."""
    for kind in ("mfu", "hfu"):
        if row[f"published_{kind}"]:
            return float(row[f"published_{kind}"]), kind.upper()
    hours = _GPU_HOURS.search(row["published_throughput"])
    if hours and model is not None:
        return (chip_hours_mfu(model, chip, float(hours.group(1)) * 1e3,
                              int(row["sequence_length"])), "GPU hours, MFU")
    m = re.search(r"([\d.]+) (?:TFLOP/s|TFLOPs)", row["published_throughput"])
    if not m:
        raise LookupError(f"run {row['run']!r}: no MFU, HFU or TFLOP/s printed")
    kind = "HFU" if "hardware flops" in row["published_throughput"].lower() else "MFU"
    return float(m.group(1)) * 1e12 / chip.peak("bf16"), f"TFLOP/s / peak, {kind}"


def _schedule(row):
    return "1f1b" if row["schedule"] == "none" else row["schedule"]  # pp 1: any is the same


def _layouts(row, model):
    """The published layout; each unpublished field takes every value the planner tries."""
    sched = _schedule(row)
    vs = [int(row["virtual_stages"])] if row["virtual_stages"] else \
        ([1, 2, 4] if sched == "interleaved" else [1])
    mbs = [int(row["micro_batch"])] if row["micro_batch"] else [1, 2, 4]
    rcs = [row["recompute"]] if row["recompute"] else ["none", "selective", "full"]
    software = {k: row[k] == "true" for k in _SOFTWARE_FLAGS if row.get(k)}
    software.update({k: int(row[k]) for k in _STAGE_LAYERS if row.get(k)})
    out = []
    for v in vs:
        for mb in mbs:
            for rc in rcs:
                if model.n_layers < int(row["pp"]) * v:
                    continue
                out.append(Layout(dp=int(row["dp"]), tp=int(row["tp"]), pp=int(row["pp"]),
                                  ep=int(row["ep"] or 1), cp=int(row["cp"] or 1),
                                  zero_stage=int(row["zero_stage"]), micro_batch=mb,
                                  virtual_stages=v, schedule=sched, recompute=rc, **software))
    return out


def _global_batch(row) -> int:
    """Sequences per step: as printed, or for a batch printed in tokens only (OPT's "2M") the
    nearest whole number of sequences per replica."""
    if row["global_batch_sequences"]:
        return int(row["global_batch_sequences"])
    per = int(row["dp"]) * (int(row["micro_batch"]) if row["micro_batch"] else 1)
    seqs = float(row["global_batch_tokens"]) / float(row["sequence_length"])
    return max(1, round(seqs / per)) * per


def _reproduce(row) -> dict:
    """One run estimated (:func:`published_runs` says what the dict holds)."""
    name = row["chip"] or _ADDED_CHIPS.get(row["run"])
    if not name or name not in _chips.names():
        return {"run": row["run"], "skip": "chip not in the catalogue"}
    if _schedule(row) not in SCHEDULES:
        return {"run": row["run"], "skip": f"schedule {row['schedule']!r} not modelled"}
    chip = _chips.get(name)
    try:
        model = _run_model(row)
        # the run's own scale-out rate where the README derives one (PaLM's cross-pod burst)
        bw = float(row["scale_out_bandwidth"]) if row.get("scale_out_bandwidth") else None
        cluster = Cluster(chip, int(row["n_chips"]), scale_out_bandwidth=bw)
    except (LookupError, ValueError) as exc:
        return {"run": row["run"], "skip": str(exc)}
    b, s = _global_batch(row), int(row["sequence_length"])
    # the matmuls' format where the chip lists it (DeepSeek-V3's fp8), else bf16 (OPT's fp16 has
    # the A100's bf16 peak)
    dtype = row["dtype"] if row["dtype"] in chip.flops else "bf16"
    tried = []
    for lay in _layouts(row, model):
        try:
            mem = memory_per_chip(model, lay, s, b)
        except ValueError as exc:
            return {"run": row["run"], "skip": str(exc)}
        st = step_time(model, lay, cluster, b, s, dtype)
        tried.append((not mem.fits(chip), st.time, lay, mem, st))
    tried.sort(key=lambda t: (t[0], t[1]))
    _, _, lay, mem, st = tried[0]
    published, kind = _published_utilisation(row, chip, model)
    # the planner's candidates run the software the published run ran (fused attention, sequence
    # parallelism, overlapped gradient sync, resharding), so that it compares layouts, not kernels
    software = {k: row[k] == "true" for k in _SOFTWARE_FLAGS if row.get(k)}
    candidates = [dataclasses.replace(c, **software) for c in _candidates(model, cluster, b, s)]
    best = plan(model, cluster, b, s, dtype=dtype, layouts=candidates)
    over_bf16 = chip.peak(dtype) / chip.peak("bf16")  # utilisations are over the bf16 peak
    return {"run": row["run"], "chip": chip, "model": model, "layout": lay,
            "fits": mem.fits(chip), "memory": mem.total, "step": st,
            "published": published, "kind": kind,
            "estimate": (st.hfu if kind.endswith("HFU") else st.mfu) * over_bf16,
            "best": best[0] if best else None, "global_batch": b, "sequence_length": s}


def published_runs() -> list[dict]:
    """Every run of the table reproduced, in the CSV's order: a list of dicts, one per run.

    A modelled run has ``run``, ``chip``, ``model``, ``layout`` (the published degrees, the
    fastest fitting value for each unpublished field), ``fits``, ``memory``, ``step`` (its
    :class:`~llmmath.layout.StepBreakdown`), ``published`` and ``kind`` (the utilisation printed
    and whether it is an MFU or an HFU), ``estimate`` (the step's MFU or HFU to match),
    ``best`` (the planner's first :class:`~llmmath.layout.PlanEntry`, its candidates given the
    run's own software flags), ``global_batch`` and
    ``sequence_length``; a run that cannot be modelled yet has ``run`` and ``skip`` (why)."""
    return [_reproduce(r) for r in rows()]
