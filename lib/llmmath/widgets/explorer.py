"""The explorer machinery: the live widget an explorer declaration makes (controls, a figure
kept for the explorer's life and a numbers panel, kept in sync).

Explorers are declared in the figures modules (``llmmath.plots.explore``); this module
turns a declaration's plain controls into ipywidgets and runs it. Nothing here computes: the
figure comes from the declared builder and the panel from that figure's ``numbers``.
"""

from __future__ import annotations

import html
import io
import time

import ipywidgets as W
import numpy as np
from PIL import Image

from .. import plots
from ..plots.explore import BATCHES, CHIP_COUNTS, CONTEXTS, PRECISIONS

__all__ = ["Explorer", "LIVE_DPI", "PRECISIONS", "CHIP_COUNTS", "BATCHES", "CONTEXTS"]

LIVE_DPI = 100  # 640 x 400 px: the live figure is redrawn per slider move, so keep it light


def _table(rows) -> str:
    # Styled inline: JupyterLab loads no book.css, and a value split over two lines ("$/chip-"
    # then "h") reads wrong. Values never wrap; labels wrap between words.
    cells = "".join(f"<tr><td style='padding:0.1rem 0.6rem 0.1rem 0'>{k}</td>"
                    f"<td style='text-align:right;white-space:nowrap;padding:0.1rem 0'>"
                    f"<b>{v}</b></td></tr>" for k, v in rows)
    return f"<table class='llm-numbers'>{cells}</table>"


class Explorer(W.VBox):
    """Controls + figure (PNG in an ``Image`` widget) + numbers panel, kept in sync.

    Made by an explorer declaration (``llmmath.plots.explore.explorer``): ``controls`` maps
    names to ``Control`` descriptions (made into value widgets,
    ``explorer.controls``); ``figure(values)`` gives the builder and its arguments for the control
    values; ``readout(fig.numbers)`` the panel's rows. One figure per builder is kept for the life
    of the explorer and updated in place. ``update(**values)`` sets controls and redraws once;
    ``last_update_s`` is the time the last redraw took.
    """

    def __init__(self, name: str, controls: dict, figure, readout, main: str):
        self.name, self.main = name, main
        self.specs = dict(controls)
        self.controls = {k: _widget(c) for k, c in self.specs.items()}
        self._figure_for, self._readout = figure, readout
        self._figures: dict = {}
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

    def _compute(self, values):
        """Follow dependent controls, update the builder's figure, read its numbers."""
        for k, spec in self.specs.items():
            if spec.follows is not None:
                options, value = spec.follows(values)
                w = self.controls[k]
                if list(w.options) != list(options):  # e.g. another chip: offer its formats
                    held, self._holding = self._holding, True
                    try:
                        w.options = list(options)
                        w.value = value
                    finally:
                        self._holding = held
                    values = {**values, k: w.value}
        builder, kwargs = self._figure_for(values)
        fig = self._figures.get(builder)
        if fig is None:
            fig = self._figures[builder] = _figure(builder, **kwargs)
        else:
            fig.update(**kwargs)
        return fig, _table(self._readout(fig.numbers))

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


def _widget(c):
    """The ipywidget for a control description."""
    if c.kind == "dropdown":
        return W.Dropdown(options=list(c.options), value=c.value, description=c.description)
    if c.kind == "steps":
        return W.SelectionSlider(options=list(c.options), value=c.value,
                                 description=c.description, continuous_update=True,
                                 layout=W.Layout(width="22rem"))
    if c.kind == "slider":
        return W.FloatSlider(value=c.value, min=c.min, max=c.max, step=c.step,
                             description=c.description, continuous_update=True,
                             readout_format=c.readout_format)
    if c.kind == "toggle":
        return W.ToggleButtons(options=list(c.options), value=c.value)
    if c.kind == "check":
        return W.Checkbox(value=c.value, description=c.description)
    raise ValueError(f"control kind: got {c.kind!r}")


def _figure(builder, **kwargs):
    with plots.offscreen():
        fig = builder(**kwargs)
    fig.set_dpi(LIVE_DPI)
    return fig
