"""Live explorers (ipywidgets) built on :mod:`llmmath.plots`.

Each explorer is a widget: controls on top, then the figure (an ``ipywidgets.Image`` holding a
PNG, so the saved notebook state shows the figure and nbval needs no ignore tag) beside an HTML
panel with the numbers the figure plots (step time, bound, tokens/s, $/Mtok ...).

An update (one slider move) recomputes with the library and updates the figure's artists in
place (``fig.update``): one figure is kept for the life of the explorer. Moving the
explorer's main slider only moves the marked point, which is redrawn over a cached background
(:func:`llmmath.plots.render_rgba`), so it costs milliseconds; other controls redraw the figure.
``explorer.update(**values)`` sets several controls at once and returns after one redraw
(what ``make bench`` times).

In the static site saved widgets cannot recompute; chapters pair each explorer with a
kernel-free twin from :func:`llmmath.frames.slider`, built by the same plot builder.
"""

from __future__ import annotations

import html
import io
import time

import ipywidgets as W
import numpy as np
from PIL import Image

from . import chips as _chips
from . import models as _models
from . import plots
from .cost import chip_hour_price
from .plots.figure import try_value
from .units import (
    fmt_bandwidth,
    fmt_bytes,
    fmt_count,
    fmt_flops_rate,
    fmt_si,
    fmt_time,
    fmt_usd,
)

__all__ = ["Explorer", "chip_explorer", "decode_explorer", "batching_explorer", "kv_explorer",
           "prefill_explorer", "moe_explorer", "pipeline_explorer", "training_explorer",
           "matmul_roofline_explorer", "lifetime_explorer",
           "PRECISIONS", "EXPLORERS"]

LIVE_DPI = 100  # 640 x 400 px: the live figure is redrawn per slider move, so keep it light
#: Precision presets: label -> (bytes per weight, bytes per KV element, compute dtype).
PRECISIONS = {
    "bf16 weights, bf16 KV": (2, 2, "bf16"),
    "fp8 weights, fp8 KV": (1, 1, "fp8"),
    "fp8 weights, bf16 KV": (1, 2, "fp8"),
    "int4 weights, bf16 KV": (0.5, 2, "bf16"),
    "fp4 weights, fp8 KV": (0.5, 1, "fp4"),
}
CHIP_COUNTS = [1, 2, 4, 8, 16, 32, 64, 72, 128, 256]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]


# ----- numbers panel ---------------------------------------------------------------------------

def _table(rows) -> str:
    # Styled inline: JupyterLab loads no book.css, and a value split over two lines ("$/chip-"
    # then "h") reads wrong. Values never wrap; labels wrap between words.
    cells = "".join(f"<tr><td style='padding:0.1rem 0.6rem 0.1rem 0'>{k}</td>"
                    f"<td style='text-align:right;white-space:nowrap;padding:0.1rem 0'>"
                    f"<b>{v}</b></td></tr>" for k, v in rows)
    return f"<table class='llm-numbers'>{cells}</table>"


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


def _or_dash(v, fmt):
    try:
        return fmt(v) if v is not None and np.isfinite(v) else "-"
    except (TypeError, ValueError):
        return "-"


# ----- the explorer machinery -------------------------------------------------------------------

class Explorer(W.VBox):
    """Controls + figure (PNG in an ``Image`` widget) + numbers panel, kept in sync.

    ``controls`` maps names to value widgets; ``compute(values)`` returns ``(fig, html)`` after
    updating a figure in place. ``update(**values)`` sets controls and redraws once;
    ``last_update_s`` is the time the last redraw took.
    """

    def __init__(self, name: str, controls: dict, compute, main: str):
        self.name, self.controls, self._compute, self.main = name, dict(controls), compute, main
        self._holding = False
        self.last_update_s = float("nan")
        self.image = W.Image(format="png", layout=W.Layout(width="100%", max_width="640px",
                                                           height="auto", object_fit="contain"))
        # the readout keeps at least 18rem beside the figure, else it wraps below it whole
        self.numbers = W.HTML(layout=W.Layout(flex="1 1 18rem", min_width="18rem",
                                              max_width="26rem"))
        body = W.HBox([self.image, self.numbers],
                      layout=W.Layout(flex_flow="row wrap", align_items="flex-start", width="100%"))
        box = W.HBox(list(self.controls.values()),
                     layout=W.Layout(flex_flow="row wrap", width="100%"))
        super().__init__([box, body], layout=W.Layout(width="100%"))
        for w in self.controls.values():
            w.observe(self._on_change, names="value")
        self._render()

    def __repr__(self) -> str:  # short and deterministic: nbval compares text/plain
        return (f"<{self.name}: "
                f"{', '.join(f'{k}={self._show(w.value)}' for k, w in self.controls.items())}>")

    @staticmethod
    def _show(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    @property
    def values(self) -> dict:
        return {k: w.value for k, w in self.controls.items()}

    def _on_change(self, change):
        if not self._holding:
            self._render()

    def _render(self):
        t0 = time.perf_counter()
        values = self.values
        prev, self._prev = getattr(self, "_prev", None), values
        try:
            fig, html = self._compute(values)
        except (ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError) as err:
            # an impossible combination (does not fit, no such format, past the window ...):
            # say why in the readout, keep the last figure, never show a traceback
            self.error = str(err).strip("'\"")
            self.numbers.value = _impossible(self.error, values)
            self._prev = prev
            self.last_update_s = time.perf_counter() - t0
            return
        self.error = None
        # Lay the figure out again only when what its title and tick labels hold can change a
        # lot (first draw, another model, chip or view); other controls keep the layout, which
        # halves a full redraw.
        relayout = prev is None or any(prev[k] != values[k] for k in ("model", "chip", "view")
                                       if k in values)
        relayout = relayout or fig is not getattr(self, "figure", None)
        fig.set_layout_engine("constrained" if relayout else "none")
        rgba = plots.render_rgba(fig)
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(rgba[:, :, :3])).save(buf, format="PNG",
                                                                   compress_level=1)
        self.image.value = buf.getvalue()
        self.numbers.value = html
        self.figure = fig
        self.last_update_s = time.perf_counter() - t0

    def update(self, **values):
        """Set several controls at once; recompute and redraw once. Returns self."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise TypeError(f"{self.name}: unknown control(s) {sorted(unknown)}; "
                            f"have {list(self.controls)}")
        self._holding = True
        try:
            for k, v in values.items():
                self.controls[k].value = v
        finally:
            self._holding = False
        self._render()
        return self


def _impossible(message: str, values: dict) -> str:
    """The readout for a control combination the model cannot compute: what was asked, why not."""
    asked = ", ".join(f"{k} {Explorer._show(v)}" for k, v in values.items())
    return ("<div class='llm-numbers llm-impossible'><b>Not possible with these settings.</b><br>"
            f"{html.escape(message)}<br><small>({html.escape(asked)}; the figure shows the last "
            "possible setting)</small></div>")


def _figure(builder, **kwargs):
    with plots.offscreen():
        fig = builder(**kwargs)
    fig.set_dpi(LIVE_DPI)
    return fig


def _model_picker(value):
    return W.Dropdown(options=_models.names(), value=_models.get(value).name, description="model")


def _chip_picker(value):
    return W.Dropdown(options=_chips.names(), value=_chips.get(value).name, description="chip")


def _snap(value, options):
    options = list(options)
    return min(options, key=lambda o: abs(np.log(o) - np.log(value)))


def _sel(description, options, value, fmt=None):
    options = list(options)
    labels = [(fmt(o) if fmt else f"{o:,}", o) for o in options]
    return W.SelectionSlider(options=labels, value=_snap(value, options), description=description,
                             continuous_update=True, layout=W.Layout(width="22rem"))


def _precision(chip, label):
    wb, kvb, dt = PRECISIONS[label]
    dt_used, _ = chip.resolve_dtype(dt)
    return wb, kvb, dt_used


def _fit_rows(model, chip, n, wb, kvb, ctx, batch):
    from .roofline import max_batch, min_chips

    mb = try_value(max_batch, model, chip, max(ctx, 1), n_chips=n, weight_bytes=wb, kv_bytes=kvb)
    need = min_chips(model, chip, batch=batch, context=ctx, weight_bytes=wb, kv_bytes=kvb)
    fits = mb is not None and mb >= batch
    return [("max batch that fits", f"{mb:,}" if mb is not None else "weights do not fit"),
            ("fits in HBM", "yes" if fits else f"no: needs {need} chips")]


# ----- explorers --------------------------------------------------------------------------------

def decode_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096,
                    precision="bf16 weights, bf16 KV", n_chips=8):
    """Decode step bound vs batch; pick model, chip, precision, chips; move batch and context."""
    from .cost import cost_per_million_tokens
    from .roofline import decode_step

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "precision": W.Dropdown(options=list(PRECISIONS), value=precision, description="precision"),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "batch": _sel("batch", BATCHES, batch), "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        wb, kvb, dt = _precision(c, v["precision"])
        ctx, _ = m.cap_context(v["context"])
        kw = dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"], weight_bytes=wb, kv_bytes=kvb,
                  dtype=dt, mark_batch=v["batch"])
        if "fig" not in state:
            state["fig"] = _figure(plots.decode_time_vs_batch, **kw)
        else:
            state["fig"].update(**kw)
        s = decode_step(m, c, v["batch"], ctx, n_chips=v["n_chips"], weight_bytes=wb, kv_bytes=kvb,
                        dtype=dt)
        price, _ = chip_hour_price(c)
        cost = cost_per_million_tokens(s, price)
        bstar = state["fig"].numbers.get("critical_batch")
        rows = [("step time (lower bound)", fmt_time(s.time)), ("bound", s.bound),
                ("tokens/s (replica)", fmt_count(v["batch"] / s.time)),
                ("tokens/s per user", f"{1 / s.time:,.1f}"),
                (f"$/Mtok at {fmt_usd(price)}/chip-h", fmt_usd(cost)),
                ("compute / weights / KV", " / ".join(fmt_time(x) for x in (s.compute_time,
                                                                            s.weight_time,
                                                                            s.kv_time))),
                ("critical batch B*", _or_dash(bstar, lambda x: f"{x:,.0f}"))]
        rows += _fit_rows(m, c, v["n_chips"], wb, kvb, ctx, v["batch"])
        return state["fig"], _table(rows)

    return Explorer("decode_explorer", controls, compute, main="batch")


def batching_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096, n_chips=8,
                      price_per_chip_hour=None, view="cost vs batch"):
    """Cost per million tokens vs batch, or the latency-cost frontier; set the chip-hour price."""
    from .cost import cost_per_million_tokens
    from .roofline import decode_step

    c0 = _chips.get(chip)
    p0, _ = chip_hour_price(c0, price_per_chip_hour)
    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "price": W.FloatSlider(value=p0, min=0.25, max=10.0, step=0.25, description="$/chip-h",
                               continuous_update=True, readout_format=".2f"),
        "view": W.ToggleButtons(options=["cost vs batch", "latency vs cost"], value=view),
        "batch": _sel("batch", BATCHES, batch), "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ctx, _ = m.cap_context(v["context"])
        kw = dict(model=m, chip=c, context=ctx, n_chips=v["n_chips"],
                  price_per_chip_hour=v["price"], mark_batch=v["batch"])
        key = v["view"]
        builder = plots.cost_vs_batch if key == "cost vs batch" else plots.latency_cost_frontier
        if key not in state:
            state[key] = _figure(builder, **kw)
        else:
            state[key].update(**kw)
        dt, _ = c.resolve_dtype("bf16")
        s = decode_step(m, c, v["batch"], ctx, n_chips=v["n_chips"], dtype=dt)
        cost = cost_per_million_tokens(s, v["price"])
        nums = state[key].numbers
        rows = [("step time (lower bound)", fmt_time(s.time)), ("bound", s.bound),
                ("tokens/s per user", f"{1 / s.time:,.1f}"),
                ("tokens/s (replica)", fmt_count(v["batch"] / s.time)),
                ("$/Mtok (lower bound)", fmt_usd(cost))]
        if "floor" in nums:
            rows.append(("cost floor", _or_dash(nums.get("floor"), fmt_usd)))
        rows += _fit_rows(m, c, v["n_chips"], 2, 2, ctx, v["batch"])
        return state[key], _table(rows)

    return Explorer("batching_explorer", controls, compute, main="batch")


def kv_explorer(model="Llama-3-70B", chip="H100-SXM", context=8192, batch=16, n_chips=8,
                kv_bytes=2):
    """KV-cache memory vs context for a model (its attention variant), batch and chip memory."""
    from .roofline import max_batch, max_context

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "n_chips": W.Dropdown(options=CHIP_COUNTS, value=n_chips, description="chips"),
        "kv_bytes": W.Dropdown(options=[("bf16 (2 B)", 2), ("fp8 (1 B)", 1), ("int4 (0.5 B)", 0.5)],
                               value=kv_bytes, description="KV element"),
        "batch": _sel("batch", BATCHES, batch), "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        ctx = min(v["context"], m.max_context or v["context"])
        kw = dict(model_list=[m], chip=c, batch=v["batch"], n_chips=v["n_chips"],
                  kv_bytes=v["kv_bytes"], mark_context=ctx)
        if "fig" not in state:
            state["fig"] = _figure(plots.kv_vs_context, **kw)
        else:
            state["fig"].update(**kw)
        per_tok = m.kv_bytes_per_token(v["kv_bytes"])
        total = v["batch"] * m.kv_cache_bytes(ctx, v["kv_bytes"])
        mb = try_value(max_batch, m, c, ctx, n_chips=v["n_chips"], kv_bytes=v["kv_bytes"])
        mc = try_value(max_context, m, c, v["batch"], n_chips=v["n_chips"], kv_bytes=v["kv_bytes"])
        rows = [("attention", m.attention_kind), ("KV per token", fmt_bytes(per_tok)),
                (f"KV at {ctx:,} tokens x {v['batch']:,}", fmt_bytes(total)),
                ("weights", fmt_bytes(m.total_params * 2)),
                ("HBM", fmt_bytes(v["n_chips"] * c.hbm_capacity)),
                ("max batch at this context", _or_dash(mb, lambda x: f"{x:,}")),
                ("max context at this batch", _or_dash(mc, lambda x: f"{x:,}"))]
        return state["fig"], _table(rows)

    return Explorer("kv_explorer", controls, compute, main="context")


def prefill_explorer(model="Llama-3-70B", chip="H100-SXM", prompt=2048, batch=1, n_chips=8):
    """Prefill bound vs prompt length: when it turns compute-bound; time to first token."""
    from .cost import cost_per_million_tokens
    from .roofline import prefill_step

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


EP_DEGREES = [8, 16, 32, 64, 72, 128, 144, 256, 288]


def moe_explorer(model="DeepSeek-V3", chip="GB200", batch=128, expert_parallel=72,
                 redundant_experts=0):
    """Expert parallelism over a scale-up domain: the all-to-all of one MoE layer against the EP
    degree (it jumps where the group leaves the chip's domain), with the layout's experts and
    bytes per chip, the routing imbalance and the step bound beside it. ``batch`` is the tokens
    each chip holds per decode step."""
    from . import moe as _moe
    from .roofline import decode_step

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


def pipeline_explorer(model="DeepSeek-V3", chip="H100-SXM", stages=4, chips_per_stage=8,
                      context=4096, micro_batch=64, micro_batches="P", hop_latency=77e-6):
    """Pipelined serving and training on one figure: HBM per chip against stages P (weights fall
    as 1/P, the KV cache of the P micro-batches in flight does not), with the decode latency,
    throughput per chip and the 1F1B training bubble for the same P and m in the panel."""
    from .pipeline import bubble_fraction, pipeline_decode

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


def training_explorer(model="Llama-3-70B", tokens=15e12, chip="H100-SXM", n_chips=4096, mfu=0.4):
    """Training time vs chip count at a given MFU: 6 N D / (n C MFU)."""
    from .training import (
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


def matmul_roofline_explorer(chip="H100-SXM", batch=64, k=8192, n=8192, dtype="bf16"):
    """One (batch x k) @ (k x n) weight matmul on a chip's roofline: move the batch across the
    ridge."""
    from .roofline import arithmetic_intensity, attainable_flops

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


#: name -> (factory, the main control and values a benchmark or test can sweep)
EXPLORERS = {
    "decode_explorer": (decode_explorer, "batch", BATCHES),
    "batching_explorer": (batching_explorer, "batch", BATCHES),
    "kv_explorer": (kv_explorer, "context", CONTEXTS),
    "prefill_explorer": (prefill_explorer, "prompt", [16, 64, 256, 1024, 2048, 4096, 8192]),
    "moe_explorer": (moe_explorer, "batch", BATCHES),
    "pipeline_explorer": (pipeline_explorer, "stages", [1, 2, 4, 8, 16, 32, 64]),
    "training_explorer": (training_explorer, "n_chips", [64, 256, 1024, 2048, 4096, 8192, 16384]),
    "matmul_roofline_explorer": (matmul_roofline_explorer, "batch",
                                 [1, 4, 16, 64, 256, 1024, 4096]),
}


def partition_explorer(model="Llama-3-70B", chip="H100-SXM", batch=8, context=4096, n_chips=8,
                       topology="ring", hop_latency=2.4e-6, kv_shard="batch"):
    """Tensor parallelism with its communication: the decode step bound falls as 1/n while the
    all-reduces (alpha-beta model, ``hop_latency`` per step on ``topology``) do not; the panel gives
    the parts of the step, the cost per token and the fastest chip count."""
    from .parallel import KV_SHARDINGS, best_tensor_parallel, sharded_decode

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


EXPLORERS["partition_explorer"] = (partition_explorer, "n_chips", [1, 2, 4, 8, 16, 32, 64])


# ----- chapter 12: a model's lifetime compute ---------------------------------------------------

LIFETIME_EFFICIENCIES = [0.1, 0.2, 0.25, 1 / 3, 0.5, 1.0]


def lifetime_explorer(model="DeepSeek-V3", chip="H100-SXM", tokens_per_second=50e6, days=60,
                      decode_efficiency=1 / 3, rl_flops_per_param=3.0, fit="hoffmann", mfu=0.4):
    """Pre-training, RL and inference over one model's life: the serving rate and lifetime set the
    inference tokens, the equal-spend rule sets the pre-training and RL tokens; the figure puts
    the model on the fit's iso-loss curve beside the least-pre-training and least-total sizes.
    The panel prices each third on ``chip`` at training utilisation ``mfu`` (decode's FLOPs run
    at ``decode_efficiency`` times that)."""
    from .lifetime import (
        SCALING_FITS,
        equal_spend_tokens,
        lifetime_compute,
        lifetime_optimum,
        scaling_loss,
        served_tokens,
    )
    from .training import overtraining_factor
    from .units import fmt_percent

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "tokens_per_second": _sel("tokens/s", [1e6, 3e6, 10e6, 30e6, 50e6, 100e6, 200e6, 500e6],
                                  tokens_per_second, fmt=lambda r: fmt_count(r)),
        "days": _sel("days served", [7, 30, 60, 90, 180, 365, 730], days),
        "decode_efficiency": _sel("decode u", LIFETIME_EFFICIENCIES, decode_efficiency,
                                  fmt=lambda u: f"1/{1 / u:.0f}" if u < 1 else "1"),
        "rl_flops_per_param": W.FloatSlider(value=rl_flops_per_param, min=2.0, max=6.0, step=0.5,
                                            description="RL FLOP/param", readout_format=".1f"),
        "fit": W.Dropdown(options=list(SCALING_FITS), value=fit, description="loss fit"),
    }
    state = {}

    def compute(v):
        m = _models.get(v["model"])
        n = float(m.active_params)
        u, r = v["decode_efficiency"], v["rl_flops_per_param"]
        d_inf = served_tokens(v["tokens_per_second"], v["days"] * 86400.0)
        eq = equal_spend_tokens(d_inf, u, r)
        loss = scaling_loss(n, eq.pretrain_tokens, v["fit"])
        kw = dict(loss=loss, inference_tokens=d_inf, decode_efficiency=u, fit=v["fit"],
                  mark_params=n)
        if "fig" not in state:
            state["fig"] = _figure(plots.lifetime_cost_vs_params, **kw)
        else:
            state["fig"].update(**kw)
        c = lifetime_compute(m, eq.pretrain_tokens, eq.rl_tokens, d_inf, u, r)
        o = lifetime_optimum(loss, d_inf, u, v["fit"])
        ch = _chips.get(v["chip"])
        dt, _ = ch.resolve_dtype("bf16")
        price, _ = chip_hour_price(ch)
        chip_h = c.pretrain / (ch.peak(dt) * mfu) / 3600.0  # one third, at training's rate
        rows = [("inference tokens D_inf", fmt_count(d_inf)),
                ("pre-training tokens (equal spend)", fmt_count(eq.pretrain_tokens)),
                ("RL tokens (equal spend)", fmt_count(eq.rl_tokens)),
                ("past compute-optimal", f"{overtraining_factor(m, eq.pretrain_tokens):,.0f}x"),
                ("tokens per parameter", f"{eq.pretrain_tokens / n:,.0f}"),
                ("each of the three costs", fmt_si(c.pretrain, "FLOP")),
                (f"chip-hours per third ({ch.name}, MFU {mfu:.0%})", fmt_count(chip_h)),
                ("dollars per third", fmt_usd(chip_h * price)),
                ("inference $ per million tokens", fmt_usd(chip_h * price / d_inf * 1e6)),
                ("lifetime total", fmt_si(c.total, "FLOP")),
                (f"loss ({v['fit']} fit)", f"{loss:.3f}"),
                ("least-total size at that loss", f"{o.optimum_params / 1e9:,.1f} bn"),
                ("equal spend costs more by", fmt_percent(o.equal_excess))]
        return state["fig"], _table(rows)

    return Explorer("lifetime_explorer", controls, compute, main="decode_efficiency")


EXPLORERS["lifetime_explorer"] = (lifetime_explorer, "decode_efficiency", LIFETIME_EFFICIENCIES)


def tradeoff_explorer(model="Llama-3-70B", chip="H100-SXM", batch=1, context=4096, n_chips=8):
    """Store or recompute (chapter 13): a decode step that reads its KV cache beside one that
    recomputes the context, against context; the panel gives both bounds, the extra FLOPs, the
    bytes saved, the context recomputed for free and the FLOPs per rebuilt byte."""
    from .tradeoffs import recompute_crossover, recompute_intensity, store_or_recompute

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "batch": _sel("batch B", BATCHES, batch),
        "n_chips": _sel("chips n", CHIP_COUNTS, n_chips),
        "context": _sel("context", CONTEXTS, context),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        dt, _ = c.resolve_dtype("bf16")
        ctx = min(float(v["context"]), float(m.max_context) - 1.0)
        kw = dict(model=m, chip=c, batch=v["batch"], n_chips=v["n_chips"], dtype=dt,
                  mark_context=ctx)
        if "fig" not in state:
            state["fig"] = _figure(plots.store_vs_recompute, **kw)
        else:
            state["fig"].update(**kw)
        r = store_or_recompute(m, c, v["batch"], ctx, n_chips=v["n_chips"], dtype=dt)
        sx = recompute_crossover(m, c, batch=v["batch"], n_chips=v["n_chips"], dtype=dt)
        rows = [("context used", f"{ctx:,.0f} tokens"),
                ("step, reading the cache", fmt_time(r.store.time)),
                ("step, recomputing it", fmt_time(r.recompute.time)),
                ("recompute / read", f"{r.time_ratio:,.3g}x"),
                ("extra FLOPs per step", fmt_si(r.extra_flops, "FLOP")),
                ("KV bytes not read", fmt_bytes(r.saved_bytes)),
                ("free recompute up to", _or_dash(sx, lambda x: f"{x:,.0f} tokens")),
                ("FLOP per rebuilt byte", f"{recompute_intensity(m):,.0f}"),
                ("chip ridge C/W", f"{c.ops_per_byte(dt):,.0f} FLOP/byte")]
        return state["fig"], _table(rows)

    return Explorer("tradeoff_explorer", controls, compute, main="context")


EXPLORERS["tradeoff_explorer"] = (tradeoff_explorer, "context", CONTEXTS)
__all__ += ["tradeoff_explorer"]


EP_DEGREES = [1, 2, 4, 8, 16, 32, 64, 72]


def estimate_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, context=4096, n_chips=8,
                      expert_parallel=1, precision="bf16 weights, bf16 KV"):
    """From bound to estimate (chapter 10): one decode step's estimate against batch, term by
    term, beside the per-operation bound; the panel gives every term at the marked batch, the
    estimate over the bound and the tokens per second it implies. A checkbox replays the step as
    a CUDA graph (the cost per kernel of a graph node instead of a launch)."""
    import dataclasses

    from .estimate import DEFAULT_OVERHEADS, GRAPH_NODE_OVERHEAD, estimate_step

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "precision": W.Dropdown(options=list(PRECISIONS), value=precision,
                                description="precision"),
        "n_chips": _sel("chips n", CHIP_COUNTS, n_chips),
        "expert_parallel": _sel("EP degree", EP_DEGREES, expert_parallel),
        "context": _sel("context", CONTEXTS, context),
        "cuda_graphs": W.Checkbox(value=False, description="CUDA graphs"),
        "batch": _sel("batch B", BATCHES, batch),
    }
    state = {}

    def compute(v):
        m, c = _models.get(v["model"]), _chips.get(v["chip"])
        wb, kvb, dt = _precision(c, v["precision"])
        ctx = min(float(v["context"]), float(m.max_context) - 1.0)
        o = (dataclasses.replace(DEFAULT_OVERHEADS, kernel_overhead=GRAPH_NODE_OVERHEAD)
             if v["cuda_graphs"] else DEFAULT_OVERHEADS)
        ep = v["expert_parallel"] if m.is_moe else 1
        kw = dict(context=ctx, n_chips=v["n_chips"], weight_bytes=wb, kv_bytes=kvb, dtype=dt,
                  expert_parallel=ep, overheads=o)
        e = estimate_step(m, c, v["batch"], **kw)  # raises before the figure changes
        if "fig" not in state:
            state["fig"] = _figure(plots.estimate_vs_batch, model=m, chip=c,
                                   mark_batch=v["batch"], **kw)
        else:
            state["fig"].update(model=m, chip=c, mark_batch=v["batch"], **kw)
        rows = [("per-operation bound", fmt_time(float(e.bound.time)))]
        rows += [(f"+ {name}", fmt_time(float(t))) for name, t in e.terms.items()
                 if name != "bound"]
        rows += [("estimate", fmt_time(float(e.time))),
                 ("estimate / bound", f"{float(e.time / e.bound.time):.2f}x"),
                 ("tokens/s per chip (estimate)",
                  fmt_count(v["batch"] / float(e.time) / v["n_chips"])),
                 ("expert-parallel degree", f"{ep}" + ("" if m.is_moe else " (dense model)"))]
        return state["fig"], _table(rows)

    return Explorer("estimate_explorer", controls, compute, main="batch")


EXPLORERS["estimate_explorer"] = (estimate_explorer, "batch", BATCHES)
__all__ += ["estimate_explorer"]
