"""The calibration set of :mod:`llmmath.estimate`: published measured latencies, read from
``llmmath/data/measured_latency.csv`` (package data: it ships with the library; its README is
``data/calibration/README.md`` in the repository), and the estimate and bound for each row.

Not part of the reader's API (a leading underscore): the tests and
``scripts/calibration_report.py`` use it; readers call
:func:`llmmath.estimate.calibration_rows`. A row's ``phase`` says what was measured:

- ``"decode"``: one decode step (an inter-token latency); context = input + output / 2, the
  mean over the generation;
- ``"prefill"``: one prefill step (a time to first token) of ``input_tokens`` per sequence;
- ``"generate"``: a whole static batch, prefill of ``batch x input_tokens`` then
  ``output_tokens - 1`` decode steps at contexts ``input_tokens .. input_tokens + output - 2``
  (the prefill emits the first token).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from importlib import resources

import numpy as np

from . import chips, models
from .estimate import (
    DEFAULT_OVERHEADS,
    GRAPH_NODE_OVERHEAD,
    SGLANG_STEP_OVERHEAD,
    VLLM_KERNELS_PER_LAYER,
    estimate_step,
)

#: The calibration set inside the package (``importlib.resources``: it works from a wheel too).
CSV_RESOURCE = resources.files("llmmath").joinpath("data").joinpath("measured_latency.csv")
TERMS = ("bound", "kernel efficiency", "grouped experts", "grouped-GEMM kernel",
         "expert-parallel replicated weights", "expert load imbalance",
         "tensor-parallel all-reduce", "expert-parallel all-to-all", "per-layer kernel overhead",
         "per-step overhead")
_INT = ("n_chips", "tp", "ep", "pp", "batch", "input_tokens", "output_tokens")
_FLOAT = ("weight_bytes", "kv_bytes", "measured_s")


def load(path=None) -> list[dict]:
    """The calibration rows, numbers converted (``path``: another CSV of the same columns;
    default the package's own)."""
    if path is None:
        text = CSV_RESOURCE.read_text(encoding="utf-8")
    else:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    for r in rows:
        for k in _INT:
            r[k] = int(r[k])
        for k in _FLOAT:
            r[k] = float(r[k])
    return rows


def _model(row):
    m = models.get(row["catalogue_model"])
    if row.get("max_context"):
        m = m.replace(max_context=int(row["max_context"]))
    return m


def overheads_for(row, overheads=DEFAULT_OVERHEADS):
    """The coefficients for one row: the defaults, with what its engine is known to do: SGLang's
    cited host time per step (:data:`llmmath.estimate.SGLANG_STEP_OVERHEAD`), and the cost of a
    CUDA-graph node instead of a kernel launch where the engine replays CUDA graphs
    (:data:`llmmath.estimate.GRAPH_NODE_OVERHEAD`; the row's ``engine`` says "CUDA graph"); and
    for rows served by vLLM, its kernels per dense layer counted from its model file
    (:data:`llmmath.estimate.VLLM_KERNELS_PER_LAYER`, plus 2 all-reduces when ``tp`` > 1)."""
    changes = {}
    if row["engine"].startswith("vLLM"):
        changes["kernels_per_layer"] = VLLM_KERNELS_PER_LAYER + (2 if row["tp"] > 1 else 0)
    if row["engine"].startswith("SGLang"):
        changes["step_overhead"] = SGLANG_STEP_OVERHEAD
    if "cuda graph" in row["engine"].lower():
        changes["kernel_overhead"] = GRAPH_NODE_OVERHEAD
    return dataclasses.replace(overheads, **changes) if changes else overheads


def evaluate(row, overheads=DEFAULT_OVERHEADS) -> dict:
    """Estimate and bound of one row, in seconds of what the row measured, and each term summed
    over the steps the measurement spans (a dict: term name -> seconds, plus "estimate")."""
    model, chip = _model(row), chips.get(row["chip"])
    overheads = overheads_for(row, overheads)
    kw = dict(n_chips=row["n_chips"], weight_bytes=row["weight_bytes"], kv_bytes=row["kv_bytes"],
              dtype=row["dtype"], expert_parallel=row["ep"], overheads=overheads)
    batch, n_in, n_out = row["batch"], row["input_tokens"], row["output_tokens"]
    parts = []
    if row["phase"] == "decode":
        parts.append(estimate_step(model, chip, batch, n_in + n_out / 2, phase="decode", **kw))
    elif row["phase"] == "prefill":
        parts.append(estimate_step(model, chip, batch, n_in, phase="prefill", **kw))
    else:
        parts.append(estimate_step(model, chip, batch, n_in, phase="prefill", **kw))
        if n_out > 1:
            contexts = np.arange(n_in, n_in + n_out - 1, dtype=float)
            parts.append(estimate_step(model, chip, batch, contexts, phase="decode", **kw))
    out = dict.fromkeys(TERMS, 0.0)
    out["estimate"] = 0.0
    for e in parts:
        for name, value in e.terms.items():
            # a term that does not vary over the steps (a collective's time) is a scalar
            # beside an array of steps: count it once per step
            out[name] += float(np.sum(np.broadcast_to(value, np.shape(e.time))))
        out["estimate"] += float(np.sum(e.time))
    return out
