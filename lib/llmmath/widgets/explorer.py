"""The explorer machinery: controls, a figure kept for the explorer's life and a numbers
panel, kept in sync; and the controls and presets the explorers share."""

from __future__ import annotations

import html
import io
import time

import ipywidgets as W
import numpy as np
from PIL import Image

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..plots.figure import try_value

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


def _table(rows) -> str:
    # Styled inline: JupyterLab loads no book.css, and a value split over two lines ("$/chip-"
    # then "h") reads wrong. Values never wrap; labels wrap between words.
    cells = "".join(f"<tr><td style='padding:0.1rem 0.6rem 0.1rem 0'>{k}</td>"
                    f"<td style='text-align:right;white-space:nowrap;padding:0.1rem 0'>"
                    f"<b>{v}</b></td></tr>" for k, v in rows)
    return f"<table class='llm-numbers'>{cells}</table>"


def _or_dash(v, fmt):
    try:
        return fmt(v) if v is not None and np.isfinite(v) else "-"
    except (TypeError, ValueError):
        return "-"


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
    from ..roofline import max_batch, min_chips

    mb = try_value(max_batch, model, chip, max(ctx, 1), n_chips=n, weight_bytes=wb, kv_bytes=kvb)
    need = min_chips(model, chip, batch=batch, context=ctx, weight_bytes=wb, kv_bytes=kvb)
    fits = mb is not None and mb >= batch
    return [("max batch that fits", f"{mb:,}" if mb is not None else "weights do not fit"),
            ("fits in HBM", "yes" if fits else f"no: needs {need} chips")]
