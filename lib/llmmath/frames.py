"""Kernel-free twins of the live explorers: pre-rendered frames behind a range slider.

In the static site a saved ipywidget cannot recompute: its sliders move but change nothing.
:func:`slider` renders a plot builder at a handful of values of one parameter (the one the
explorer is about), with **the same builder** the live widget uses, and returns a
:class:`FrameSlider` whose HTML is self-contained: the frames are embedded as data URIs, a
tiny inline script swaps them on the slider's ``input`` event, nothing is fetched from
anywhere, no require.js is needed, and a one-line note says how to get the full explorer.

All frames of a slider share one pixel size and keep their legend below the axes
(:func:`llmmath.plots.legend_outside`): a frame shorter than the tallest is padded with white
at the bottom, so nothing under the slider moves while it is dragged. The label sits on its own
line above a full-width range input at least 44 px tall (a touch target).

Frames are rendered at 200 dpi (1280 x 800 px for the house figure size: sharp on a phone's
3x screen at its 390 px width and on a 2x laptop) and stored as palette PNGs (lossless for
line art at 128 colours, about a third of a true-colour PNG); if the frames exceed the byte
budget (1.0 MB of HTML by default) the resolution steps down until they fit.

Usage in a chapter::

    from llmmath import frames, plots
    frames.slider(plots.cost_vs_batch, "mark_batch", [1, 4, 16, 64, 256], name="batch",
                  model=llama, chip=h100, n_chips=8)
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json

import numpy as np
from PIL import Image

from . import plots

__all__ = ["FrameSlider", "slider", "NOTE", "DEFAULT_MAX_BYTES", "PAGE_BUDGET_BYTES"]

#: Byte budget for one explorer's HTML (frames included).
DEFAULT_MAX_BYTES = 1_000_000
#: What the book allows one page to grow by, all explorers together.
PAGE_BUDGET_BYTES = 1_500_000
NOTE = "Static page: {n} precomputed frames. Run this notebook (make lab) for the full explorer."
_DPIS = (200, 170, 140, 120, 100)
_COLOURS = 128


def _encode(rgba: np.ndarray) -> tuple[str, bytes]:
    """Palette PNG of an RGBA buffer (alpha dropped: figures are opaque white)."""
    im = Image.fromarray(np.ascontiguousarray(rgba[:, :, :3]))
    q = im.quantize(_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    q.save(buf, format="PNG", optimize=True)
    return "png", buf.getvalue()


class FrameSlider:
    """A kernel-free explorer: N frames of one builder over one parameter, and a slider.

    Attributes: ``builder`` (name), ``param``, ``name`` (shown in the label), ``values``,
    ``labels``, ``alts`` (each frame's ``fig.alt_text``), ``images`` (encoded bytes), ``fmt``
    (``"png"``), ``size_px`` (width, height), ``dpi``, ``uid`` (deterministic id).
    ``_repr_html_`` gives the self-contained HTML; ``len(slider.html)`` is what the page grows by.
    """

    def __init__(self, builder: str, param: str, name: str, values, labels, alts, images, fmt,
                 size_px, dpi, start: int = 0):
        self.builder, self.param, self.name = builder, param, name
        self.values, self.labels, self.alts = list(values), list(labels), list(alts)
        self.images, self.fmt, self.size_px, self.dpi = list(images), fmt, size_px, dpi
        self.start = int(start)
        digest = hashlib.sha256(json.dumps([builder, param, name, self.labels, self.alts]).encode())
        self.uid = "llm-frames-" + digest.hexdigest()[:12]
        self._html = None

    def __len__(self) -> int:
        return len(self.images)

    def __repr__(self) -> str:
        return f"<FrameSlider: {len(self)} frames of {self.builder} over {self.name}>"

    def data_uri(self, i: int) -> str:
        return f"data:image/{self.fmt};base64," + base64.b64encode(self.images[i]).decode("ascii")

    @property
    def html(self) -> str:
        if self._html is None:
            self._html = self._render()
        return self._html

    @property
    def nbytes(self) -> int:
        """Bytes the HTML adds to a page (UTF-8)."""
        return len(self.html.encode("utf-8"))

    def _repr_html_(self) -> str:
        return self.html

    def _render(self) -> str:
        n, k, uid = len(self), self.start, self.uid
        w, h = self.size_px
        # 1 figure inch = 100 CSS px
        css_w, css_h = round(w * 100 / self.dpi), round(h * 100 / self.dpi)
        uris = [self.data_uri(i) for i in range(n)]
        uris[k] = None  # the visible frame is read back from the <img>
        esc = html.escape
        script = (
            "(function(){var F=%s,L=%s,A=%s,K=%d;"  # noqa: UP031 (a JS template: braces)
            "document.querySelectorAll('[data-llm-frames=\"%s\"]').forEach(function(b){"
            "if(b.getAttribute('data-bound'))return;b.setAttribute('data-bound','1');"
            "var i=b.querySelector('img'),r=b.querySelector('input[type=range]'),"
            "s=b.querySelector('.llm-frames-label'),G=F.slice();G[K]=i.getAttribute('src');"
            "function show(){var j=+r.value;i.setAttribute('src',G[j]);i.setAttribute('alt',A[j]);"
            "s.textContent=L[j];}r.addEventListener('input',show);r.addEventListener('change',show);"
            "});})();"
        ) % (_js(uris), _js(self.labels), _js(self.alts), k, uid)
        return (
            f'<div class="llm-frames mathjax_ignore" id="{uid}" data-llm-frames="{uid}">'
            f'<img src="{self.data_uri(k)}" alt="{esc(self.alts[k])}" '
            f'width="{css_w}" height="{css_h}">'
            f'<div class="llm-frames-controls">'
            f'<div class="llm-frames-label" aria-live="polite">{esc(self.labels[k])}</div>'
            f'<input type="range" min="0" max="{n - 1}" step="1" value="{k}" '
            f'aria-label="{esc(self.name)}" style="display:block;width:100%;'
            f'min-height:44px;margin:0;box-sizing:border-box"></div>'
            f'<div class="llm-frames-note">{esc(NOTE.format(n=n))}</div>'
            f"<script>{script}</script></div>"
        )


def _same_size(frames):
    """Frames padded with white (right and bottom) to the largest width and height among them."""
    h = max(f.shape[0] for f in frames)
    w = max(f.shape[1] for f in frames)
    out = []
    for f in frames:
        pad = np.full((h, w, f.shape[2]), 255, dtype=f.dtype)
        pad[: f.shape[0], : f.shape[1]] = f
        out.append(pad)
    return out


def _js(value) -> str:
    """JSON for an inline script: no '</script>' or '<!--' can close or confuse it."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _default_label(v) -> str:
    if isinstance(v, (int, np.integer)) or (isinstance(v, float) and v.is_integer()
                                            and abs(v) < 1e15):
        return f"{int(v):,}"
    if isinstance(v, float):
        return f"{v:g}"
    return str(getattr(v, "name", v))


def slider(builder, param: str, values, label=None, *, name: str | None = None, start=0,
           max_bytes: int = DEFAULT_MAX_BYTES, **builder_kwargs) -> FrameSlider:
    """Render ``builder(**builder_kwargs, param=v)`` for each ``v`` in ``values`` into a
    FrameSlider.

    - ``label``: formats a value for the label beside the slider (default: ``1,024``, ``0.4``,
      or an object's ``name``); the label reads ``"<name> = <label(v)>"``, so ``label`` gives
      the value alone (ValueError if it starts with the name again: "batch = batch 1").
    - ``name``: what the parameter is called in the label (default ``param`` without ``mark_``).
    - ``start``: index of the frame shown first.
    - ``max_bytes``: budget for the whole HTML; the resolution steps down from 200 dpi until it
      fits, ValueError if even 100 dpi does not (use fewer frames).

    The builder is one of :mod:`llmmath.plots`; its figure is built once and updated in place
    per frame (``fig.update``), so frames cost a redraw each, not a rebuild.
    """
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"values: got {len(values)}; a slider needs at least 2 frames")
    if not 0 <= start < len(values):
        raise ValueError(f"start: got {start}; allowed 0..{len(values) - 1}")
    fmt_value = label or _default_label
    shown = name or (param[5:] if param.startswith("mark_") else param)
    labels = [f"{shown} = {fmt_value(v)}" for v in values]
    for v in values:  # "batch = batch 1": the label already says what the slider moves
        if fmt_value(v).startswith(shown):
            raise ValueError(f"label: got {fmt_value(v)!r} for {v!r}; the slider prints "
                             f"'{shown} = ' before it, so give the value alone (e.g. '1,024')")
    bname = getattr(builder, "__name__", str(builder))
    with plots.offscreen(), plots.legend_outside():
        fig = builder(**{**builder_kwargs, param: values[0]})
        updatable = isinstance(fig, plots.BookFigure) and fig.drawing is not None
        for dpi in _DPIS:
            fig.set_dpi(dpi)
            frames, alts = [], []
            for v in values:
                if updatable:
                    fig.update(**{param: v})
                else:
                    fig = builder(**{**builder_kwargs, param: v})
                    fig.set_dpi(dpi)
                frames.append(plots.render_rgba(fig).copy())
                alts.append(getattr(fig, "alt_text", "") or f"{bname} at {shown} = {fmt_value(v)}")
            frames = _same_size(frames)
            size = (frames[0].shape[1], frames[0].shape[0])
            images = []
            for rgba in frames:
                fmt, data = _encode(rgba)
                images.append(data)
            fs = FrameSlider(bname, param, shown, values, labels, alts, images, fmt, size, dpi,
                             start)
            if fs.nbytes <= max_bytes:
                return fs
    raise ValueError(f"max_bytes: {len(values)} frames of {bname} need {fs.nbytes:,} bytes even at "
                     f"{_DPIS[-1]} dpi; the budget is {max_bytes:,}: use fewer frames")
