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
from .estimate import DEFAULT_OVERHEADS, Overheads, estimate_step

#: The calibration set inside the package (``importlib.resources``: it works from a wheel too).
CSV_RESOURCE = resources.files("llmmath").joinpath("data").joinpath("measured_latency.csv")
TERMS = ("bound", "kernel efficiency", "elementwise kernels", "grouped experts",
         "grouped-GEMM kernel",
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


def engine_of(row) -> str | None:
    """The engine preset a row was served by (:data:`llmmath.estimate.ENGINES`), from its
    ``engine`` column: NVIDIA NIM serves through TensorRT-LLM; ``None`` for an engine without a
    preset (the defaults)."""
    name = row["engine"].lower()
    for prefix, engine in (("vllm", "vllm"), ("sglang", "sglang"),
                           ("tensorrt-llm", "tensorrt-llm"), ("nvidia nim", "tensorrt-llm")):
        if name.startswith(prefix):
            return engine
    return None


def overheads_for(row, overheads=DEFAULT_OVERHEADS):
    """The coefficients for one row: ``overheads`` with its engine's public preset
    (:meth:`llmmath.estimate.Overheads.for_engine`), CUDA graphs where the row's ``engine``
    column says "CUDA graph" (the published conditions, not the engines' defaults)."""
    engine = engine_of(row)
    graphs = "cuda graph" in row["engine"].lower()
    if engine is None:
        return dataclasses.replace(overheads, cuda_graphs=graphs)
    return Overheads.for_engine(engine, cuda_graphs=graphs, base=overheads)


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


#: "Within" is symmetric: measured/estimate between 1/1.3 and 1.3 (an estimate 30% long counts
#: as much as one 30% short; the first version's |estimate - measured| <= 0.3 measured accepted
#: 0.77 to 1.43, lenient on the side where the estimate errs).
WITHIN_FACTOR = 1.3


@dataclasses.dataclass(frozen=True)
class Score:
    """How close one predictor comes to a group of rows.

    ``n`` rows; ``within``: how many lie within :data:`WITHIN_FACTOR` (symmetric); ``gm_error``:
    the geometric-mean error, ``exp(mean |ln(measured / predicted)|)`` (1.0 is perfect, 1.5 is
    "typically 50% off" either way); ``median_ratio``: median measured/predicted (above 1: the
    predictor is short)."""

    n: int
    within: int
    gm_error: float
    median_ratio: float

    @property
    def share(self) -> float:
        return self.within / self.n


def _score(measured, predicted) -> Score:
    r = np.asarray(measured, dtype=float) / np.asarray(predicted, dtype=float)
    inside = (r >= 1 / WITHIN_FACTOR) & (r <= WITHIN_FACTOR)
    return Score(n=len(r), within=int(inside.sum()),
                 gm_error=float(np.exp(np.abs(np.log(r)).mean())), median_ratio=float(np.median(r)))


#: Source keys whose first word differs but whose publisher is the same team.
_SAME_PUBLISHER = {"lmsys": "sglang"}


def publisher(source: str) -> str:
    """The publisher of a source key, its first word (``nvidia_trtllm_perf_v090`` and
    ``nvidia_nim_llm_benchmarks``: "nvidia"; LMSYS's blog and SGLang's release notes: "sglang"):
    sources of one publisher share tools, tables and engines, so a leave-one-out score leaves
    out the publisher, not one of its pages."""
    head = source.split("_")[0]
    return _SAME_PUBLISHER.get(head, head)


def scaled_bound(rows, bounds) -> np.ndarray:
    """The fair baseline, leave one publisher out: each row's bound times one constant per kind
    (dense, MoE), the geometric mean of measured/bound over the rows of that kind from every
    OTHER publisher (:func:`publisher`: no row's prediction has seen its own source, or another
    page of the same tables). A publisher whose kind no other has takes the constant over every
    other publisher's rows."""
    bounds = np.asarray(bounds, dtype=float)
    log_r = np.log(np.array([r["measured_s"] for r in rows]) / bounds)
    src = np.array([publisher(r["source"]) for r in rows])
    kind = np.array([r["kind"] for r in rows])
    out = np.empty(len(rows))
    for i in range(len(rows)):
        other = src != src[i]
        same = other & (kind == kind[i])
        pick = same if same.any() else other
        if not pick.any():
            raise ValueError("scaled_bound: the rows come from one publisher; leave-one-out "
                             "needs at least two")
        out[i] = bounds[i] * np.exp(log_r[pick].mean())
    return out


def score(rows=None, overheads=DEFAULT_OVERHEADS, split=None) -> dict:
    """Estimate, fair baseline and bound against the measurements, by phase and kind.

    Returns ``{(phase, kind): {"estimate": Score, "baseline": Score, "bound": Score}}`` for
    phase in the rows' phases and "all", kind in "dense", "moe", "all" (groups with no rows
    left out). ``split``: "fit" or "test" to score only those rows (the baseline's constants still
    come from every other source). The estimate fits nothing to the rows, so its score is the
    same left-one-source-out or not."""
    rows = load() if rows is None else rows
    results = [evaluate(r, overheads) for r in rows]
    m = np.array([r["measured_s"] for r in rows])
    est = np.array([x["estimate"] for x in results])
    bound = np.array([x["bound"] for x in results])
    base = scaled_bound(rows, bound)
    phases = sorted({r["phase"] for r in rows}, key=("decode", "prefill", "generate").index)
    out = {}
    for phase in (*phases, "all"):
        for kind in ("dense", "moe", "all"):
            sel = np.array([(phase in ("all", r["phase"])) and (kind in ("all", r["kind"]))
                            and (split in (None, r["split"])) for r in rows])
            if sel.any():
                out[(phase, kind)] = {"estimate": _score(m[sel], est[sel]),
                                      "baseline": _score(m[sel], base[sel]),
                                      "bound": _score(m[sel], bound[sel])}
    return out
