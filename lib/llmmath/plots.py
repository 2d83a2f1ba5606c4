"""Figure builders with one house style. Every chapter figure comes from here.

Each builder takes the model, chip and workload as arguments and returns a matplotlib
``Figure``, so a reader can rebuild any figure for their own hardware. The house style
(:func:`house_style`) is applied by the builders themselves: readable on a phone, a
colour-blind-safe palette (Okabe and Ito 2008), an opaque white background that stays
legible in the site's dark mode, labelled axes with units, log axes where a quantity spans
decades, and annotations on the point the text talks about (the knee, the floor, the crossover).

Every figure a builder returns carries two extra attributes:

- ``fig.alt_text``: one sentence saying what the figure shows, with its key numbers. Paste it
  into the cell's metadata or a figure directive; :mod:`llmmath.frames` uses it for ``alt``.
- ``fig.llm_update(**changes)``: redraw the same figure with some arguments changed, updating
  its artists in place (used by :mod:`llmmath.widgets` and :mod:`llmmath.frames`, so the live
  explorer, the kernel-free frames and the static figure all come from one builder).

Inside the library all quantities are SI; axes show human units through :mod:`llmmath.units`.
Where a chip lacks the requested ``dtype`` (Rubin lists only fp4) a builder falls back to the
chip's widest listed format and says so in the title; where the default context exceeds a
model's ``max_context`` it is capped and the title says so.
"""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from . import chips as _chips
from . import models as _models
from .cost import ASSUMED_PRICE_PER_CHIP_HOUR as DEFAULT_PRICE_PER_HOUR
from .cost import chip_hour_price
from .units import (
    fmt_bytes,
    fmt_count,
    fmt_si,
    fmt_time,
    fmt_usd,
)

__all__ = [
    # house style
    "PALETTE", "CYCLE", "ROLE", "STYLE", "house_style", "setup_notebook", "offscreen",
    "DEFAULT_PRICE_PER_HOUR", "label_si", "render_rgba",
    # chips and the roofline
    "chip_balance", "roofline", "matmul_on_roofline", "flops_vs_bandwidth", "capacity_vs_bandwidth",
    "matmul_throughput_vs_batch", "roofline_measured",
    # counting a transformer
    "param_parts", "param_breakdown", "kv_per_token", "attention_flops_share", "attention_crossover",
    # decode and prefill bounds
    "decode_time_vs_batch", "decode_time_vs_context", "prefill_time_vs_prompt",
    # batching and cost
    "cost_vs_batch", "latency_cost_frontier", "regime_map", "speculative_gain_vs_batch",
    # KV cache
    "kv_vs_context", "kv_balance_vs_context",
    # prefill against decode, API prices, memory tiers
    "prefill_vs_decode_per_token", "io_cost_ratio_vs_batch", "price_step_vs_context",
    "tier_drain_times", "cache_cost_vs_lifetime",
    # mixture of experts, pipelines, training
    "moe_weights_vs_batch", "memory_per_chip", "training_time_vs_chips",
]

# Okabe-Ito, colour-blind safe; black last for reference lines.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#7F7F7F",
}
CYCLE = [PALETTE[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")]
# Roles, so every figure colours the same quantity the same way.
ROLE = {
    "compute": PALETTE["blue"],
    "weights": PALETTE["orange"],
    "kv": PALETTE["green"],
    "total": PALETTE["black"],
    "cost": PALETTE["vermillion"],
    "capacity": PALETTE["purple"],
}
KIND_COLOUR = {"MHA": PALETTE["vermillion"], "GQA": PALETTE["blue"], "MQA": PALETTE["green"],
               "MLA": PALETTE["purple"]}
NOFIT = "#d9d9d9"  # grey for "does not fit in memory"

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.transparent": False,
    "font.size": 11,
    "axes.titlesize": 11.5,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 9.5,
    "legend.frameon": False,
    "lines.linewidth": 2.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.prop_cycle": mpl.cycler(color=CYCLE),
    "figure.constrained_layout.use": True,
    "svg.hashsalt": "roofline-book",  # deterministic ids if anyone saves SVG
}

#: Price used for cost figures when neither the caller nor the chip gives one (USD per chip-hour).
#: Figures that use it say "assumed" in their title.
_OFFSCREEN = contextvars.ContextVar("llmmath_plots_offscreen", default=False)


@contextmanager
def house_style():
    """Apply the book's rcParams inside a ``with`` block."""
    with mpl.rc_context(STYLE):
        yield


@contextmanager
def offscreen():
    """Inside this block builders make figures outside pyplot (not shown by the notebook's
    inline backend, never leaked): what explorers and kernel-free frames use."""
    token = _OFFSCREEN.set(True)
    try:
        yield
    finally:
        _OFFSCREEN.reset(token)


def setup_notebook():
    """Call once at the top of a chapter: sharp (2x) PNG figures with the house style.

    Inside a Jupyter kernel it also selects the inline backend, so figures show (and nbval
    sees them) even where MPLBACKEND=Agg is set in the environment.
    """
    mpl.rcParams.update(STYLE)
    try:  # only inside IPython
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            shell.run_line_magic("matplotlib", "inline")
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
    except Exception:  # pragma: no cover - outside a kernel nothing to configure
        pass


def _new_figure(figsize):
    with house_style():
        if _OFFSCREEN.get():
            fig = Figure(figsize=figsize)
            FigureCanvasAgg(fig)
        else:
            fig = plt.figure(figsize=figsize)
    return fig


def _new(figsize=None):
    fig = _new_figure(figsize or STYLE["figure.figsize"])
    with house_style():
        ax = fig.add_subplot()
    return fig, ax


# ----- small helpers ---------------------------------------------------------------------------

def label_si(value, unit: str) -> str:
    """Short SI label for annotations."""
    return fmt_si(value, unit)


def _safe(fmt, v, *args):
    try:
        return fmt(v, *args)
    except Exception:
        return ""


def _fmt_batch(v, _=None):
    return fmt_count(v, 3) if v >= 1 else _sig(v)


def _sig(v):
    return f"{v:.3g}"


def _fmt_days(v, _=None):
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def _n(v):
    """A token count for titles and alt text: 4,096 rather than 4.1k below a million."""
    v = float(v)
    return f"{v:,.0f}" if v < 1e6 else fmt_count(v, 3)


def _set_log(ax, x=None, y=None):
    if x is not None:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _safe(x, v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if y is not None:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _safe(y, v)))
        ax.yaxis.set_minor_formatter(NullFormatter())


def _t(v):
    return fmt_time(v, 2)


def _b(v):
    return fmt_bytes(v, 2)


def _usd_tick(v):
    return fmt_usd(v, 2)


def _loglim(values, pad=1.25, min_decades=1.0):
    """Log-axis limits covering the positive finite values, at least `min_decades` wide."""
    v = np.asarray([x for x in np.ravel(values) if np.isfinite(x) and x > 0], dtype=float)
    if v.size == 0:
        return 0.1, 10.0
    lo, hi = v.min() / pad, v.max() * pad
    span = math.log10(hi / lo)
    if span < min_decades:
        grow = 10 ** ((min_decades - span) / 2)
        lo, hi = lo / grow, hi * grow
    return lo, hi


def _mask(x, *ys):
    """Keep only points where x and every y are finite and positive (log axes)."""
    x = np.asarray(x, dtype=float)
    ys = [np.broadcast_to(np.asarray(y, dtype=float), x.shape) for y in ys]
    ok = np.isfinite(x) & (x > 0)
    for y in ys:
        ok &= np.isfinite(y) & (y > 0)
    return (x[ok], *[y[ok] for y in ys])


def _dtype(chip, dtype):
    return chip.resolve_dtype(dtype)


def _context(model, context):
    return model.cap_context(context)


def _price(chip, price_per_hour):
    return chip_hour_price(chip, price_per_hour)


def _try(fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    if value is None or not np.all(np.isfinite(value)):
        return None
    return value


def _grid(values, lo, hi, n=64, integer=True):
    if values is not None:
        arr = np.unique(np.asarray(values, dtype=float).ravel())
        arr = arr[np.isfinite(arr) & (arr > 0)]
        if arr.size == 0:
            raise ValueError("no positive finite values to plot")
        return arr
    arr = np.geomspace(lo, hi, n)
    return np.unique(np.round(arr)) if integer else arr


def _as_list(x, default):
    if x is None:
        return list(default)
    if isinstance(x, (_models.Model, _chips.Chip, str)):
        x = [x]
    out = []
    for item in x:
        if isinstance(item, str):
            try:
                item = _models.get(item)
            except KeyError:
                item = _chips.get(item)
        out.append(item)
    return out


def _chips_label(n_chips, chip):
    n = float(n_chips)
    return f"{n:g}x {chip.name}" if n != 1 else chip.name


def _title(main, *notes):
    notes = [n for n in notes if n]
    return main + (f"\n({'; '.join(notes)})" if notes else "")


def _log_interp(x, y1, y2):
    """x (log-interpolated) where y1 - y2 first changes sign from negative to >= 0; None if never."""
    d = np.asarray(y1, float) - np.asarray(y2, float)
    idx = np.nonzero((d[:-1] < 0) & (d[1:] >= 0))[0]
    if idx.size == 0:
        return None
    i = idx[0]
    lx0, lx1 = math.log(x[i]), math.log(x[i + 1])
    f = -d[i] / (d[i + 1] - d[i])
    return math.exp(lx0 + f * (lx1 - lx0))


_TIME_TICKS = [(1e-3, "1 ms"), (1e-2, "10 ms"), (0.1, "0.1 s"), (1.0, "1 s"), (10.0, "10 s"),
               (60.0, "1 min"), (600.0, "10 min"), (3600.0, "1 h"), (86400.0, "1 day"), (7 * 86400.0, "1 week")]


def _time_axis(ax, lo, hi, keep=("1 ms", "10 ms", "1 s", "1 min", "1 h", "1 day")):
    """Log time axis with round human ticks (ms, s, min, h, day) between lo and hi."""
    ax.set_xscale("log")
    ticks = [(v, t) for v, t in _TIME_TICKS if lo <= v <= hi and t in keep]
    ax.set_xticks([v for v, _ in ticks], [t for _, t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _usd_round(v, _=None):
    if v >= 1:
        return f"${v:,.0f}"
    return "$" + f"{v:.6f}".rstrip("0")


def _fmt_tokens_binary(v, _pos=None):
    """Tick label for a power-of-two token count: 1k = 1024 tokens, 1M = 1024^2."""
    if v >= 1024**2:
        return f"{v / 1024**2:g}M"
    if v >= 1024:
        return f"{v / 1024:g}k"
    return f"{v:g}"


# ----- label placement ------------------------------------------------------------------------
# Labels are placed before the constrained layout runs, so positions are judged in the axes'
# current pixel frame: the layout later scales the axes a little, not the labels' offsets.

def _renderer(fig):
    try:
        return fig.canvas.get_renderer()
    except Exception:  # pragma: no cover - a canvas without a renderer: keep the first choice
        return None


def _box(artist, renderer):
    bb = artist.get_window_extent(renderer)
    return (bb.x0, bb.y0, bb.x1, bb.y1)


def _overlap(a, b, pad=1.0):
    return not (a[2] < b[0] - pad or a[0] > b[2] + pad or a[3] < b[1] - pad or a[1] > b[3] + pad)


def _line_hits(box, lines, pad=1.0):
    """Whether any of `lines` (drawn segments, or markers) passes through the pixel box."""
    x0, y0, x1, y1 = box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad
    for ln in lines:
        if not ln.get_visible():
            continue
        xy = np.asarray(ln.get_xydata(), dtype=float)
        if xy.size == 0:
            continue
        with np.errstate(all="ignore"):
            p = ln.get_transform().transform(xy)
        p = p[np.all(np.isfinite(p), axis=1)]
        if p.size == 0:
            continue
        if ln.get_linestyle() in ("None", "", " ", "none") or len(p) == 1:
            r = 0.5 * ln.get_markersize() * ln.figure.dpi / 72.0
            pts = p
            if ((pts[:, 0] >= x0 - r) & (pts[:, 0] <= x1 + r) & (pts[:, 1] >= y0 - r) & (pts[:, 1] <= y1 + r)).any():
                return True
            continue
        t = np.linspace(0.0, 1.0, 25)[:, None, None]
        seg = p[:-1][None] + t * (p[1:] - p[:-1])[None]
        if ((seg[..., 0] >= x0) & (seg[..., 0] <= x1) & (seg[..., 1] >= y0) & (seg[..., 1] <= y1)).any():
            return True
    return False


def _flip_ha(ha):
    return {"left": "right", "right": "left"}.get(ha, ha)


def _point_candidates(offset, ha, va="baseline"):
    """The requested offset first, then mirrored left-right, up-down, and both."""
    dx, dy = offset
    vflip = "top" if dy > 0 else "bottom"
    dyf = -dy if dy > 0 else max(6.0, -dy - 10.0)
    return [(dx, dy, ha, va), (-dx, dy, _flip_ha(ha), va), (dx, dyf, ha, vflip), (-dx, dyf, _flip_ha(ha), vflip)]


def _place(ax, make, candidates, avoid_lines=True, exclude=()):
    """Make one label per candidate (``make(candidate) -> Text``) and keep the first that lies
    inside the axes without touching another label, the legend, or (``avoid_lines``) a line; if
    none is clean, the first that is inside and clear of labels, else the first. Returns the Text."""
    renderer = _renderer(ax.figure)
    if renderer is None:
        return make(candidates[0])
    axbox = _box(ax, renderer)
    skip = set(map(id, exclude))
    taken = [_box(t, renderer) for t in ax.texts if t.get_visible() and t.get_text() and id(t) not in skip]
    leg = ax.get_legend()
    if leg is not None and leg.get_visible():
        taken.append(_box(leg, renderer))
    lines = [ln for ln in ax.lines if id(ln) not in skip] if avoid_lines else []
    best, best_score = None, None
    for cand in candidates:
        t = make(cand)
        box = _box(t, renderer)
        inside = (box[0] >= axbox[0] - 1 and box[2] <= axbox[2] + 1 and box[1] >= axbox[1] - 1
                  and box[3] <= axbox[3] + 1)
        clash = any(_overlap(box, o) for o in taken)
        hits = _line_hits(box, lines) if (inside and not clash and lines) else True
        score = (not inside, clash, hits)
        if score == (False, False, False):
            if best is not None:
                best.remove()
            return t
        if best_score is None or score < best_score:
            if best is not None:
                best.remove()
            best, best_score = t, score
        else:
            t.remove()
    return best


# ----- the builder machinery ------------------------------------------------------------------

class _Plot:
    """One figure whose artists are made once (``setup``) and updated by ``draw``.

    Lines persist and get ``set_data``; annotations, spans and markers are recreated each draw
    (a handful of cheap artists). ``update(**changes)`` merges the changes into the stored
    arguments and redraws; it is ``fig.llm_update``.
    """

    figsize = (6.4, 4.0)
    #: Arguments besides ``mark_*`` that only move the marked artists (fast path in render_rgba).
    marked: tuple = ()

    def __init__(self, fig, ax):
        self.fig, self.ax = fig, ax
        self.params: dict = {}
        self._dyn: list = []
        self._mark_artists: list = []
        self._marking = False
        self._mark_text = None
        self._bg = None
        self._bg_key = None
        self.numbers: dict = {}
        self.setup()

    @contextmanager
    def marking(self):
        """Artists added inside this block show the marked point (``mark_*`` arguments): a
        change of only that argument redraws just them over a cached background."""
        self._marking = True
        try:
            yield
        finally:
            self._marking = False

    def static_key(self):
        """What the figure minus its marked point depends on (cache key for the background)."""
        items = []
        for k, v in sorted(self.params.items()):
            if not k.startswith("mark_") and k not in self.marked:
                items.append((k, repr(v)))
        return (tuple(items), self.fig.dpi, tuple(self.fig.get_size_inches()))

    def setup(self):  # pragma: no cover - overridden
        pass

    def add(self, artist):
        (self._mark_artists if self._marking else self._dyn).append(artist)
        return artist

    def update(self, **changes):
        unknown = set(changes) - set(self.params)
        if unknown and self.params:
            raise TypeError(f"{type(self).__name__[1:]}: unknown argument(s) {sorted(unknown)}; "
                            f"allowed: {sorted(self.params)}")
        self.params.update(changes)
        self._mark_text = None
        with house_style():
            for a in self._dyn + self._mark_artists:
                a.remove()
            self._dyn, self._mark_artists = [], []
            alt = self.draw(**self.params)
        if self._mark_text:
            alt = f"{alt} Marked: {self._mark_text.replace(chr(10), ' ')}."
        self.fig.alt_text = alt
        self.fig.llm_numbers = dict(self.numbers)
        return self.fig

    # annotation helpers (all recreated per draw)
    def vline(self, x, text, color=PALETTE["black"], y=0.97, ha="left", ls=":"):
        """A vertical reference line; its label goes on the requested side (`ha`) at height `y`
        unless it would leave the axes or cover another label or a line: then the other side."""
        ax = self.ax
        line = self.add(ax.axvline(x, color=color, ls=ls, lw=1.3, zorder=1))
        if text:
            rows = [r.strip() for r in text.split("\n")]

            def make(c):
                side, yy = c
                label = "\n".join(f" {r}" if side == "left" else f"{r} " for r in rows)
                return ax.text(x, yy, label, transform=ax.get_xaxis_transform(), ha=side, va="top",
                               fontsize=9.5, color=color,
                               bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))

            cands = [(ha, y), (_flip_ha(ha), y)]
            self.add(_place(ax, make, cands, exclude=[line]))

    def hline(self, y, text, color=PALETTE["black"], x=0.99, ha="right", va="bottom", ls="--"):
        """A horizontal reference line; its label goes where asked (`x`, `ha`, `va`) unless it would
        cover another label or a line: then the other end, then the other side of the line."""
        ax = self.ax
        line = self.add(ax.axhline(y, color=color, ls=ls, lw=1.2, zorder=1))
        if text:
            def make(c):
                xx, hh, vv = c
                return ax.text(xx, y, text, transform=ax.get_yaxis_transform(), ha=hh, va=vv,
                               fontsize=9.5, color=color,
                               bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))

            other = {"top": "bottom", "bottom": "top"}.get(va, va)
            cands = [(x, ha, va), (1.0 - x, _flip_ha(ha), va), (x, ha, other), (1.0 - x, _flip_ha(ha), other)]
            self.add(_place(ax, make, cands, exclude=[line]))

    def label(self, x, y, text, candidates, color=PALETTE["black"], fontsize=9.5, box=True, exclude=()):
        """Annotate (x, y) at the first of `candidates` ((dx, dy, ha, va) offsets in points) that
        stays inside the axes, off other labels and off the lines (see :func:`_place`)."""
        ax = self.ax
        bbox = dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85) if box else None

        def make(c):
            dx, dy, ha, va = c
            return ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                               fontsize=fontsize, color=color, zorder=6, bbox=bbox)

        return self.add(_place(ax, make, candidates, exclude=exclude))

    def point(self, x, y, text, color=PALETTE["black"], offset=(-8, 10), ha="right"):
        ax = self.ax
        dot = self.add(ax.plot([x], [y], "o", ms=7, mfc=color, mec="white", mew=1.5, zorder=5)[0])
        if self._marking:
            self._mark_text = text
        if text:
            self.label(x, y, text, _point_candidates(offset, ha), color=color, exclude=[dot])

    def note(self, text, loc=(0.02, 0.03), ha="left", va="bottom"):
        self.add(self.ax.text(*loc, text, transform=self.ax.transAxes, ha=ha, va=va, fontsize=9,
                              color=PALETTE["black"],
                              bbox=dict(boxstyle="round,pad=0.3", fc="#fff7e6", ec=PALETTE["orange"],
                                        lw=0.8)))

    def nofit(self, x0, x1, text="does not fit in HBM"):
        ax = self.ax
        self.add(ax.axvspan(x0, x1, color=NOFIT, alpha=0.6, lw=0, zorder=0))
        if text:
            self.add(ax.text(math.sqrt(x0 * x1) if x0 > 0 else x1, 0.3, text,
                             transform=ax.get_xaxis_transform(), rotation=90, ha="center",
                             va="center", fontsize=9, color="#444444",
                             bbox=dict(boxstyle="round,pad=0.15", fc=NOFIT, ec="none")))


def render_rgba(fig) -> np.ndarray:
    """Draw `fig` into its Agg buffer and return the RGBA pixels (height x width x 4, a view).

    For a builder's figure whose only change since the last render is its marked point
    (``mark_*`` arguments), the cached background is restored and only the marker is drawn:
    a slider move then costs a few milliseconds instead of a full redraw.
    """
    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        canvas = FigureCanvasAgg(fig)
    plot = getattr(fig, "llm_plot", None)
    if plot is None:
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())
    key = plot.static_key()
    # The fast path is only valid when the builder drew its marked point inside `marking()`;
    # a builder that did not (no marked artists) gets a full redraw, never a stale frame.
    if plot._bg is not None and key == plot._bg_key and plot._mark_artists:
        canvas.restore_region(plot._bg)
    else:
        for a in plot._mark_artists:
            a.set_visible(False)
        canvas.draw()
        plot._bg, plot._bg_key = canvas.copy_from_bbox(fig.bbox), key
        for a in plot._mark_artists:
            a.set_visible(True)
    renderer = canvas.get_renderer()
    for a in plot._mark_artists:
        a.draw(renderer)
    return np.asarray(canvas.buffer_rgba())


def _build(cls, params, figsize=None):
    fig = _new_figure(figsize or cls.figsize)
    with house_style():
        ax = fig.add_subplot()
        plot = cls(fig, ax)
    plot.update(**params)
    fig.llm_update = plot.update
    fig.llm_plot = plot
    fig.llm_builder = cls.__name__.lstrip("_")
    return fig


def _params(local):
    return {k: v for k, v in local.items() if not k.startswith("_")}


# ----- chips and the roofline -----------------------------------------------------------------

def chip_balance(chip_list=None, dtype: str = "bf16"):
    """Bar chart of each chip's FLOP per byte of HBM bandwidth (the roofline's ridge point).

    Chips without `dtype` are left out. Returns the Figure (``fig.alt_text`` describes it).
    """
    chip_list = _as_list(chip_list, _chips.all_chips())
    shown = [c for c in chip_list if dtype in c.flops]
    if not shown:
        raise ValueError(f"dtype: no chip in the list has {dtype!r}")
    ratios = np.array([c.ops_per_byte(dtype) for c in shown])
    fig, ax = _new((6.4, 0.32 * len(shown) + 1.2))
    with house_style():
        y = np.arange(len(shown))
        ax.barh(y, ratios, color=ROLE["compute"])
        ax.set_yticks(y, [c.name for c in shown])
        ax.invert_yaxis()
        ax.set_xlabel(f"peak {dtype} FLOP/s per byte/s of HBM bandwidth (FLOP/byte)")
        for yi, r in zip(y, ratios, strict=False):
            ax.text(r, yi, f" {r:.0f}", va="center", fontsize=9)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, ratios.max() * 1.15)
        ax.set_title("Ridge point: FLOPs a chip can do per byte it reads")
    lo, hi = int(np.argmin(ratios)), int(np.argmax(ratios))
    fig.alt_text = (f"Bar chart of {dtype} FLOP per byte of HBM bandwidth for {len(shown)} chips, "
                    f"from {ratios[lo]:.0f} ({shown[lo].name}) to {ratios[hi]:.0f} ({shown[hi].name}).")
    return fig


class _Roofline(_Plot):
    def setup(self):
        ax = self.ax
        _set_log(ax, x=lambda v: f"{v:g}", y=lambda v: fmt_si(v, "FLOP/s", 2))
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("attainable compute (FLOP/s)")

    def draw(self, chip_list, dtype, ops):
        ax = self.ax
        default = [_chips.get(n) for n in ("A100-SXM-80GB", "H100-SXM", "B200", "MI300X", "TPU v5e")]
        shown = [c for c in _as_list(chip_list, default) if dtype in c.flops]
        if not shown:
            raise ValueError(f"chip_list: no chip has {dtype!r}")
        ridges = np.array([c.ops_per_byte(dtype) for c in shown])
        x = np.geomspace(min(0.1, ridges.min() / 100), max(1e4, ridges.max() * 30), 200)
        for i, c in enumerate(shown):
            col = CYCLE[i % len(CYCLE)]
            y = np.minimum(c.peak(dtype), x * c.hbm_bandwidth)
            self.add(ax.plot(x, y, color=col, label=c.name)[0])
            self.add(ax.plot([ridges[i]], [c.peak(dtype)], "o", color=col, ms=6, mec="white")[0])
        ax.set_xlim(x[0], x[-1])
        peaks = [c.peak(dtype) for c in shown]
        ax.set_ylim(*_loglim([x[0] * min(c.hbm_bandwidth for c in shown), max(peaks) * 3], pad=1))
        # ridge labels: above the dot, else beside it, clear of the other chips' labels
        cands = [(0, 5, "center", "bottom"), (-6, 2, "right", "bottom"), (6, -3, "left", "top"),
                 (0, -5, "center", "top")]
        for i in np.argsort(-np.array([c.peak(dtype) for c in shown]), kind="stable"):
            self.label(ridges[i], shown[i].peak(dtype), f"{ridges[i]:.0f}", cands, color=CYCLE[i % len(CYCLE)],
                       fontsize=8.5, box=False)
        first = shown[0]
        for label, intensity in ops or []:
            y = min(first.peak(dtype), intensity * first.hbm_bandwidth)
            self.point(intensity, y, f"{label} ({intensity:g})", offset=(6, -14))
        if ax.get_legend():
            ax.get_legend().remove()
        self.add(ax.legend(loc="lower right", title="ridge point (FLOP/byte) marked"))
        ax.set_title(f"Roofline ({dtype})\nmemory-bound left of the ridge, compute-bound right")
        lo, hi = int(np.argmin(ridges)), int(np.argmax(ridges))
        self.numbers = {c.name: r for c, r in zip(shown, ridges, strict=False)}
        alt = (f"Log-log roofline of attainable {dtype} FLOP/s against arithmetic intensity for "
               f"{len(shown)} chips; ridge points from {ridges[lo]:.0f} FLOP/byte ({shown[lo].name}) "
               f"to {ridges[hi]:.0f} ({shown[hi].name})")
        if ops:
            alt += "; marked: " + ", ".join(f"{lab} at {i:g} FLOP/byte" for lab, i in ops)
        return alt + "."


def roofline(chip_list=None, dtype: str = "bf16", ops=None):
    """Classic roofline: attainable FLOP/s = min(C, I x W) against arithmetic intensity I (log-log).

    ``chip_list``: chips or names (default: A100, H100, B200, MI300X, TPU v5e); ridge points
    ``C/W`` are marked. ``ops``: list of ``(label, intensity)`` placed on the first chip's roof.
    """
    return _build(_Roofline, _params(locals()))


def _group_labels(xs, ys, names, tol=0.05):
    """Merge labels of points that sit within `tol` decades of each other (same coordinates)."""
    groups = []
    for x, y, name in zip(xs, ys, names, strict=True):
        for g in groups:
            if abs(np.log10(g[0] / x)) < tol and abs(np.log10(g[1] / y)) < tol:
                g[2].append(name)
                break
        else:
            groups.append([x, y, [name]])
    return groups


def _iso_lines(ax, values, fmt, xlim, color=None):
    """Diagonal lines y = v x on log-log axes, each labelled inside the plot near its upper end."""
    color = color or PALETTE["grey"]
    xs = np.array(xlim)
    ylo, yhi = ax.get_ylim()
    for v in values:
        ax.plot(xs, v * xs, color=color, lw=1.0, ls="--", zorder=1)
        x_lo, x_hi = max(xlim[0], ylo / v), min(xlim[1], yhi / v)
        if x_hi <= x_lo:
            continue
        x_at = x_lo * (x_hi / x_lo) ** 0.93  # near the upper end of the visible stretch, in log terms
        ax.annotate(fmt(v), (x_at, v * x_at), xytext=(-3, 3), textcoords="offset points",
                    ha="right", va="bottom", fontsize=8.5, color=color)


def _place_labels(ax, xs, ys, names, fontsize=8.5):
    """Label points, trying four offsets per label and keeping the first that overlaps nothing."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    taken = []
    for x, y in zip(xs, ys, strict=True):  # the markers themselves
        px, py = ax.transData.transform((x, y))
        taken.append((px - 8, py - 8, px + 8, py + 8))
    for other in ax.texts:  # labels already there (lines of constant ratio)
        bb = other.get_window_extent(renderer)
        taken.append((bb.x0, bb.y0, bb.x1, bb.y1))
    offsets = [(6, -3, "left", "top"), (6, 3, "left", "bottom"), (-6, 3, "right", "bottom"),
               (-6, -3, "right", "top"), (0, -9, "center", "top"), (0, 9, "center", "bottom")]
    axbox = ax.get_window_extent(renderer)
    for x, y, name in _group_labels(xs, ys, names):
        label = ", ".join(name)
        best = None
        for dx, dy, ha, va in offsets:
            t = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points",
                            ha=ha, va=va, fontsize=fontsize)
            bb = t.get_window_extent(renderer)
            box = (bb.x0, bb.y0, bb.x1, bb.y1)
            inside = bb.x0 >= axbox.x0 and bb.x1 <= axbox.x1 and bb.y0 >= axbox.y0 and bb.y1 <= axbox.y1
            clash = any(not (box[2] < o[0] or box[0] > o[2] or box[3] < o[1] or box[1] > o[3])
                        for o in taken)
            if inside and not clash:
                best = (t, box)
                break
            if best is None:
                best = (t, box)  # fall back to the first candidate
            else:
                t.remove()
        t, box = best
        for other in list(ax.texts):
            if other is not t and other.get_text() == label and other.xy == t.xy:
                other.remove()
        taken.append(box)


class _MatmulRoofline(_Plot):
    figsize = (6.4, 4.2)
    marked = ("batch",)

    def setup(self):
        ax = self.ax
        _set_log(ax, x=lambda v: f"{v:g}", y=lambda v: fmt_si(v, "FLOP/s", 2))
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("attainable FLOP/s")

    def draw(self, chip, batch, k, n, dtype, bytes_per_element, weight_bytes, intensity_range):
        from .roofline import arithmetic_intensity, attainable_flops

        chip = _chips.get(chip) if isinstance(chip, str) else chip
        ax = self.ax
        peak, bw = chip.peak(dtype), chip.hbm_bandwidth
        lo, hi = intensity_range
        intensity = np.geomspace(lo, hi, 400)
        ridge = chip.ops_per_byte(dtype)
        batches = np.geomspace(1, k, 200)
        trail_i = arithmetic_intensity(batches, k, n, bytes_per_element, weight_bytes)
        b_i = arithmetic_intensity(batch, k, n, bytes_per_element, weight_bytes)
        b_f = attainable_flops(chip, b_i, dtype)
        bound = "compute-bound" if b_i >= ridge else "memory-bound"
        self.add(ax.plot(trail_i, attainable_flops(chip, trail_i, dtype), color=PALETTE["grey"], lw=6,
                         alpha=0.3, solid_capstyle="round", label=f"matmul, batch 1 to {k:,.0f}")[0])
        self.add(ax.plot(intensity, attainable_flops(chip, intensity, dtype), color=ROLE["total"],
                         lw=2.2, label=f"{chip.name} roof ({dtype})")[0])
        self.vline(ridge, f"ridge {ridge:.0f} FLOP/byte", color=ROLE["compute"], y=0.5)
        share = b_f / peak
        shown_i = f"{b_i:.3g}" if b_i < 100 else f"{b_i:,.0f}"
        if ax.get_legend():
            ax.get_legend().remove()
        self.add(ax.legend(loc="upper left"))
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo * bw * 0.8, peak * 3)
        title = f"({batch:,.0f} x {k:,.0f}) @ ({k:,.0f} x {n:,.0f}) matmul on {chip.name}"
        # The title keeps its place in the layout but is drawn by a copy that belongs to the marked
        # artists, with the dot and its note: a change of `batch` alone then redraws only those.
        ax.set_title(title)
        ax.title.set_alpha(0.0)
        marker = self._marking
        self._marking = True  # like marking(), without making the note the alt text's "Marked:"
        try:
            t = ax.title
            self.add(ax.text(*t.get_position(), title, transform=t.get_transform(), ha="center", va="baseline",
                             fontproperties=t.get_fontproperties(), color=t.get_color(), in_layout=False))
            self.add(ax.plot([b_i], [b_f], "o", ms=7, mfc=ROLE["cost"], mec="white", mew=1.5, zorder=5)[0])
            # the note sits under the roof, at the bottom, where only the ridge line is ever drawn
            note = (f"batch {batch:,.0f}: {shown_i} FLOP/byte\n{fmt_si(b_f, 'FLOP/s')} = "
                    f"{100 * share:.0f}% of peak\n{bound}")
            rx = math.log(ridge / lo) / math.log(hi / lo)

            def make(c):
                return ax.text(c[0], 0.04, note, transform=ax.transAxes, ha=c[1], va="bottom", fontsize=9.5,
                               color=ROLE["cost"], zorder=6,
                               bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))

            self.add(_place(ax, make, [(0.98, "right"), (rx - 0.015, "right"), (rx + 0.015, "left")]))
        finally:
            self._marking = marker
        self.numbers = {"intensity": b_i, "attainable": b_f, "share_of_peak": share, "ridge": ridge}
        return (f"Log-log {dtype} roofline of the {chip.name} (peak {fmt_si(peak, 'FLOP/s')}, ridge "
                f"{ridge:.0f} FLOP/byte) with a {k:,.0f} x {n:,.0f} weight matmul at batch {batch:,.0f}: "
                f"{b_i:.3g} FLOP/byte, {fmt_si(b_f, 'FLOP/s')}, {100 * share:.0f}% of peak, {bound}.")


def matmul_on_roofline(chip="H100-SXM", batch=64, k=8192, n=8192, dtype="bf16", bytes_per_element=2,
                       weight_bytes=None, intensity_range=(0.1, 1e4)):
    """A chip's roofline with one (batch x k) @ (k x n) weight matmul placed on it.

    The roof is ``attainable_flops(chip, I)``; the dot sits at the matmul's arithmetic intensity
    (about ``batch`` FLOP/byte in bf16 while ``batch << k, n``) and its attainable FLOP/s, with
    the share of peak and the regime beside it. The grey band is every batch from 1 to ``k``;
    the axes are fixed so frames for different batches line up.
    """
    return _build(_MatmulRoofline, _params(locals()))


def flops_vs_bandwidth(chip_list=None, dtype="bf16", ratios=(100, 300, 1000)):
    """Each chip's peak FLOP/s against its HBM bandwidth, log-log, with lines of constant ratio.

    A chip on the "300" line does 300 FLOP per byte it reads. Moving up a line means compute
    grew faster than bandwidth. Chips without ``dtype`` are left out.
    """
    chip_list = list(chip_list) if chip_list is not None else _chips.all_chips()
    shown = [c for c in chip_list if dtype in c.flops]
    if not shown:
        raise ValueError(f"dtype: no chip in the list has {dtype!r}")
    xs = np.array([c.hbm_bandwidth for c in shown])
    ys = np.array([c.peak(dtype) for c in shown])
    with house_style():
        fig = _new_figure((6.4, 4.6))
        ax = fig.add_subplot()
        xlim = (xs.min() / 1.6, xs.max() * 1.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*xlim)
        ax.set_ylim(ys.min() / 2.5, ys.max() * 2.5)
        _iso_lines(ax, ratios, lambda v: f"{v:g} FLOP/byte", xlim)
        colors = {"NVIDIA": PALETTE["green"], "AMD": PALETTE["vermillion"], "Google": PALETTE["blue"]}
        for vendor, col in colors.items():
            sel = [i for i, c in enumerate(shown) if c.vendor == vendor]
            if sel:
                ax.plot(xs[sel], ys[sel], "o", ms=7, color=col, label=vendor, zorder=4)
        other = [i for i, c in enumerate(shown) if c.vendor not in colors]
        if other:
            ax.plot(xs[other], ys[other], "o", ms=7, color=PALETTE["purple"], label="other", zorder=4)
        ax.set_xlabel("HBM bandwidth (bytes/s)")
        ax.set_ylabel(f"peak {dtype} FLOP/s (dense)")
        ax.set_title(f"Compute against bandwidth ({dtype})")
        ax.legend(loc="upper left")
        fig.canvas.draw()  # let the constrained layout settle, then freeze it for label placement
        fig.set_layout_engine("none")
        _place_labels(ax, xs, ys, [c.name for c in shown])
    r = ys / xs
    lo, hi = int(np.argmin(r)), int(np.argmax(r))
    fig.alt_text = (f"Log-log scatter of dense {dtype} peak FLOP/s against HBM bandwidth for {len(shown)} chips, "
                    f"with dashed lines of constant FLOP per byte at {', '.join(f'{v:g}' for v in ratios)}; "
                    f"ratios from {r[lo]:.0f} ({shown[lo].name}) to {r[hi]:.0f} ({shown[hi].name}).")
    return fig


def capacity_vs_bandwidth(chip_list=None, drains=(0.01, 0.02, 0.04)):
    """Each chip's HBM capacity against its bandwidth, with lines of constant drain time M / W."""
    chip_list = list(chip_list) if chip_list is not None else _chips.all_chips()
    xs = np.array([c.hbm_bandwidth for c in chip_list])
    ys = np.array([c.hbm_capacity for c in chip_list])
    with house_style():
        fig = _new_figure((6.4, 4.6))
        ax = fig.add_subplot()
        xlim = (xs.min() / 1.6, xs.max() * 1.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*xlim)
        ax.set_ylim(ys.min() / 2.5, ys.max() * 2.5)
        _iso_lines(ax, drains, lambda v: f"drain {v * 1e3:g} ms", xlim)
        ax.plot(xs, ys, "o", ms=7, color=ROLE["capacity"], zorder=4)
        ax.set_xlabel("HBM bandwidth (bytes/s)")
        ax.set_ylabel("HBM capacity (bytes)")
        ax.set_title("Capacity against bandwidth: the HBM drain time")
        fig.canvas.draw()  # let the constrained layout settle, then freeze it for label placement
        fig.set_layout_engine("none")
        _place_labels(ax, xs, ys, [c.name for c in chip_list])
    d = ys / xs
    lo, hi = int(np.argmin(d)), int(np.argmax(d))
    fig.alt_text = (f"Log-log scatter of HBM capacity against HBM bandwidth for {len(chip_list)} chips, with "
                    f"dashed lines of constant drain time; drain times from {fmt_time(d[lo])} "
                    f"({chip_list[lo].name}) to {fmt_time(d[hi])} ({chip_list[hi].name}).")
    return fig


def matmul_throughput_vs_batch(chip, dtypes=None, k=8192, n=8192, batches=None):
    """Attainable FLOP/s of a (B x k) @ (k x n) matmul against B, one curve per dtype.

    Each dtype's operands (inputs, weights, outputs) take that dtype's bytes (fp4 0.5, fp8/int8 1,
    bf16 2), so halving the bytes doubles the intensity at every batch. The knee (marker) is
    ``matmul_ridge_batch``: where it stays put across dtypes, lower precision doubles the roof
    without asking for a larger batch.
    """
    from .roofline import arithmetic_intensity, attainable_flops, matmul_ridge_batch

    sizes = {"fp4": 0.5, "fp8": 1.0, "int8": 1.0, "bf16": 2.0}
    dtypes = list(dtypes) if dtypes is not None else [d for d in ("bf16", "fp8", "fp4") if d in chip.flops]
    batches = np.logspace(0, np.log10(k), 300) if batches is None else np.asarray(batches, float)
    colors = [ROLE["compute"], ROLE["weights"], ROLE["kv"], PALETTE["purple"]]
    with house_style():
        fig = _new_figure((6.4, 4.2))
        ax = fig.add_subplot()
        for d, col in zip(dtypes, colors, strict=False):
            b = sizes[d]
            f = attainable_flops(chip, arithmetic_intensity(batches, k, n, b), d)
            ax.loglog(batches, f, color=col, label=f"{d} ({b:g} byte per value)")
            knee = matmul_ridge_batch(chip, k, n, d, b)
            if np.isfinite(knee) and knee <= batches.max():
                ax.plot([knee], [chip.peak(d)], "o", ms=7, color=col)
                ax.annotate(f"B = {knee:.0f}", (knee, chip.peak(d)), xytext=(6, 5),
                            textcoords="offset points", fontsize=9, color=col)
        ax.set_xlabel("batch B (tokens sharing the weights)")
        ax.set_ylabel("attainable FLOP/s")
        ax.set_title(f"({k:,.0f} x {n:,.0f}) weight matmul on {chip.name}")
        ax.legend(loc="lower right")
    fig.alt_text = (f"Attainable FLOP/s of a {k:,.0f} x {n:,.0f} weight matmul on the {chip.name} against "
                    f"batch for {', '.join(dtypes)}: parallel lines that reach their roofs at batch "
                    + ", ".join(f"{matmul_ridge_batch(chip, k, n, d, sizes[d]):.0f}" for d in dtypes) + ".")
    return fig


def roofline_measured(chip, measured, dtype="bf16", intensity_range=(1, 1e4)):
    """Datasheet roofline of ``chip`` beside the roof that published measurements imply.

    ``measured`` is a dict with ``flops`` (best sustained FLOP/s, with ``flops_label``) and
    ``bandwidth`` (best sustained bytes/s, with ``bandwidth_label``). The shaded band between the
    two roofs is what the bound cannot see: the efficiency of real kernels.
    """
    from ._check import positive

    peak, bw = chip.peak(dtype), chip.hbm_bandwidth
    f_meas = positive("measured['flops']", measured["flops"])
    w_meas = positive("measured['bandwidth']", measured["bandwidth"])
    i = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    roof = np.minimum(peak, i * bw)
    real = np.minimum(f_meas, i * w_meas)
    with house_style():
        fig = _new_figure((6.4, 4.2))
        ax = fig.add_subplot()
        ax.loglog(i, roof, color=ROLE["total"], lw=2.2, label=f"datasheet: {fmt_si(peak, 'FLOP/s')}, "
                  f"{fmt_si(bw, 'B/s')}")
        ax.loglog(i, real, color=ROLE["cost"], lw=2.0, ls="--",
                  label=f"measured: {fmt_si(f_meas, 'FLOP/s')}, {fmt_si(w_meas, 'B/s')}")
        ax.fill_between(i, real, roof, color=ROLE["cost"], alpha=0.12, lw=0)
        r_ds, r_me = peak / bw, f_meas / w_meas
        ax.axvline(r_ds, color=ROLE["total"], lw=1, ls=":")
        ax.axvline(r_me, color=ROLE["cost"], lw=1, ls=":")
        ax.annotate(f"{100 * w_meas / bw:.0f}% of\nbandwidth", (intensity_range[0] * 3, 3 * w_meas * 0.8),
                    xytext=(0, -6), textcoords="offset points", fontsize=9, color=ROLE["cost"], va="top")
        ax.annotate(f"{100 * f_meas / peak:.0f}% of peak", (intensity_range[1] / 1.2, f_meas),
                    xytext=(0, -6), textcoords="offset points", fontsize=9, color=ROLE["cost"],
                    ha="right", va="top")
        ax.annotate(f"ridge {r_ds:.0f}", (r_ds, peak), xytext=(4, 6), textcoords="offset points", fontsize=9)
        ax.annotate(f"ridge {r_me:.0f}", (r_me, f_meas), xytext=(-6, -60), textcoords="offset points",
                    fontsize=9, color=ROLE["cost"], ha="right")
        ax.set_xlim(*intensity_range)
        ax.set_ylim(intensity_range[0] * bw * 0.5, peak * 2.5)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("FLOP/s")
        ax.set_title(f"{chip.name}: datasheet roof and measured roof ({dtype})")
        ax.legend(loc="upper left")
    fig.alt_text = (f"{chip.name} roofline from the datasheet ({fmt_si(peak, 'FLOP/s')}, {fmt_si(bw, 'B/s')}, "
                    f"ridge {r_ds:.0f}) and the measured roof ({fmt_si(f_meas, 'FLOP/s')}, "
                    f"{fmt_si(w_meas, 'B/s')}, ridge {r_me:.0f}): {100 * w_meas / bw:.0f}% of bandwidth and "
                    f"{100 * f_meas / peak:.0f}% of peak.")
    return fig


# ----- counting a transformer -----------------------------------------------------------------

_PARTS = [("embeddings + head", PALETTE["grey"]), ("attention", ROLE["kv"]),
          ("dense MLP", ROLE["compute"]), ("routed experts, active", ROLE["cost"]),
          ("routed experts, idle", "#f2b38f"), ("shared experts", PALETTE["purple"]),
          ("router + norms", PALETTE["yellow"])]


def param_parts(model) -> dict:
    """Parameters of `model` by part (the parts of :func:`param_breakdown`); they sum to ``total_params``."""
    m = model
    dense_layers = m.n_layers - m.n_moe_layers
    parts = {
        "embeddings + head": m.embedding_params + m.lm_head_params,
        "attention": m.n_layers * m.attention_params_per_layer,
        "dense MLP": dense_layers * m.dense_mlp_params,
        "routed experts, active": m.n_moe_layers * m.experts_per_token * m.expert_params,
        "routed experts, idle": m.n_moe_layers * (m.n_experts - m.experts_per_token) * m.expert_params,
        "shared experts": m.n_moe_layers * m.shared_expert_params,
        "router + norms": m.n_moe_layers * m.router_params + m.norm_params,
    }
    return {k: int(v) for k, v in parts.items()}


def param_breakdown(model_list=None):
    """Stacked horizontal bars: each model's parameters by part, as shares of its total.

    Parts: embeddings + head, attention, dense MLP, routed experts (active and idle), shared
    experts, router + norms. Shares (not absolute counts) keep 7B and 671B models readable on
    one axis; the total and active counts are printed beside each bar.
    """
    ms = _as_list(model_list, _models.all_models())
    fig, ax = _new((6.4, 0.36 * len(ms) + 1.9))
    with house_style():
        y = np.arange(len(ms))
        left = np.zeros(len(ms))
        table = [param_parts(m) for m in ms]
        for name, col in _PARTS:
            share = np.array([t[name] / m.total_params for t, m in zip(table, ms, strict=False)])
            if share.any():
                ax.barh(y, share * 100, left=left, color=col, label=name, height=0.7)
            left += share * 100
        for yi, m in zip(y, ms, strict=False):
            txt = fmt_count(m.total_params, 3)
            if m.is_moe:
                txt += f" ({fmt_count(m.active_params, 2)} active)"
            ax.text(101, yi, txt, va="center", fontsize=8.5)
        ax.set_yticks(y, [m.name for m in ms])
        ax.invert_yaxis()
        ax.set_xlim(0, 135)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel("share of parameters (%)")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.4 / max(len(ms), 1)), ncol=3, fontsize=8.5)
        ax.set_title("Where the parameters are\n(total, and active per token, at right)")
    idle = [(m, t["routed experts, idle"] / m.total_params) for m, t in zip(ms, table, strict=False) if m.is_moe]
    alt = (f"Stacked bars of the share of parameters in embeddings, attention, MLPs and experts for "
           f"{len(ms)} models, totals from {fmt_count(min(m.total_params for m in ms))} to "
           f"{fmt_count(max(m.total_params for m in ms))}")
    if idle:
        m, f = max(idle, key=lambda p: p[1])
        alt += f"; in {m.name} {f:.0%} of the parameters are experts a token does not use"
    fig.alt_text = alt + "."
    fig.llm_numbers = {m.name: t for m, t in zip(ms, table, strict=False)}
    return fig


def kv_per_token(model_list=None, kv_bytes=2):
    """Bars of KV-cache bytes per token (all layers) for each model, coloured by attention kind
    (MHA, GQA, MQA, MLA); log axis, since they span two decades."""
    ms = _as_list(model_list, _models.all_models())
    vals = np.array([m.kv_bytes_per_token(kv_bytes) for m in ms])
    fig, ax = _new((6.4, 0.32 * len(ms) + 1.4))
    with house_style():
        y = np.arange(len(ms))
        ax.barh(y, vals, color=[KIND_COLOUR[m.attention_kind] for m in ms], height=0.7)
        for yi, v in zip(y, vals, strict=False):
            ax.text(v * 1.05, yi, _b(v), va="center", fontsize=8.5)
        ax.set_yticks(y, [m.name for m in ms])
        ax.invert_yaxis()
        _set_log(ax, x=_b)
        ax.set_xlim(vals.min() / 2, vals.max() * 6)
        ax.set_xlabel(f"KV-cache bytes per token, all layers, {kv_bytes:g} B per element (B)")
        ax.grid(axis="y", visible=False)
        kinds = [k for k in KIND_COLOUR if any(m.attention_kind == k for m in ms)]
        ax.legend(handles=[Patch(color=KIND_COLOUR[k], label=k) for k in kinds], loc="lower right",
                  frameon=True, framealpha=0.9)
        ax.set_title("KV cache one token adds")
    lo, hi = int(np.argmin(vals)), int(np.argmax(vals))
    fig.alt_text = (f"Bars of KV-cache bytes per token for {len(ms)} models coloured by attention kind, from "
                    f"{_b(vals[lo])} ({ms[lo].name}, {ms[lo].attention_kind}) to {_b(vals[hi])} "
                    f"({ms[hi].name}, {ms[hi].attention_kind}).")
    fig.llm_numbers = {m.name: v for m, v in zip(ms, vals, strict=False)}
    return fig


def attention_flops_share(model_list, contexts=None, context=None):
    """Attention's share of one new token's forward FLOPs against the context it attends to.

    One line per model: ``attention / (2 N_mm + attention)`` from
    :meth:`~llmmath.models.Model.flops_per_token`, drawn up to the model's longest context.
    A dot marks where attention equals the matmul FLOPs (share 50%,
    :func:`llmmath.models.attention_crossover_context`) when the model supports that
    context; ``context`` draws a vertical line at one context and labels each share there.
    """
    from .models import attention_crossover_context
    from .units import fmt_count, fmt_percent

    model_list = list(model_list)
    if not model_list:
        raise ValueError("model_list: give at least one model")
    contexts = np.geomspace(256, 1_048_576, 200) if contexts is None else np.asarray(contexts, float)
    fig, ax = _new(figsize=(6.4, 4.2))
    with house_style():
        shares_at = []
        for i, m in enumerate(model_list):
            color = CYCLE[i % len(CYCLE)]
            s = contexts[contexts <= (m.max_context or np.inf)]
            att = m.attention_flops_per_token(s)
            share = att / (2.0 * m.matmul_params_active + att)
            ax.plot(s, 100 * share, color=color, label=m.name)
            x = attention_crossover_context(m)
            if np.isfinite(x) and x <= s.max():
                ax.plot([x], [50], "o", color=color, ms=6)
            if context is not None and context <= (m.max_context or np.inf):
                a = float(m.attention_flops_per_token(context))
                shares_at.append((m.name, a / (2.0 * m.matmul_params_active + a)))
        ax.axhline(50, color=PALETTE["grey"], lw=1, ls="--")
        ax.text(contexts[0], 51.5, "attention = matmuls", fontsize=9, color=PALETTE["grey"])
        if context is not None:
            ax.axvline(context, color=PALETTE["black"], lw=1, ls=":")
            ax.set_title(f"Attention's share of forward FLOPs; line at {_fmt_tokens_binary(context)} tokens")
        else:
            ax.set_title("Attention's share of forward FLOPs per new token")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(_fmt_tokens_binary))
        ax.set_xlabel("context attended to, S (tokens)")
        ax.set_ylabel("attention share of FLOPs (%)")
        ax.set_ylim(0, 100)
        ax.legend(loc="upper left", fontsize=9)
    crossing = "; ".join(
        f"{m.name} at {fmt_count(attention_crossover_context(m))} tokens"
        for m in model_list if np.isfinite(attention_crossover_context(m)))
    alt = (f"Attention's share of forward FLOPs per token against context for "
           f"{', '.join(m.name for m in model_list)}; it reaches half (attention equals the "
           f"matmuls) for {crossing or 'none of them'}.")
    if shares_at:
        alt += " At the marked context: " + ", ".join(f"{n} {fmt_percent(v)}" for n, v in shares_at) + "."
    fig.alt_text = alt
    return fig


def attention_crossover(model_list=None):
    """Bar chart: the context where attention FLOPs equal the matmul FLOPs, in units of D.

    A shaded band marks 6 D to 7 D, the dense MHA/GQA rule of thumb. Models whose capped
    (sparse) attention never gets there are listed as 'never'.
    """
    from .models import attention_crossover_context

    model_list = list(model_list) if model_list is not None else _models.all_models()
    vals = np.array([attention_crossover_context(m) / m.d_model for m in model_list])
    fig, ax = _new(figsize=(6.4, 0.32 * len(model_list) + 1.6))
    with house_style():
        y = np.arange(len(model_list))
        ax.axvspan(6, 7, color=PALETTE["grey"], alpha=0.2, lw=0)
        finite = np.where(np.isfinite(vals), vals, 0.0)
        colors = [ROLE["weights"] if m.is_moe else ROLE["compute"] for m in model_list]
        ax.barh(y, finite, color=colors)
        for yi, v in zip(y, vals, strict=True):
            ax.text(v if np.isfinite(v) else 0, yi, f" {v:.1f} D" if np.isfinite(v) else " never (top-k)",
                    va="center", fontsize=9)
        ax.set_yticks(y, [m.name for m in model_list])
        ax.invert_yaxis()
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, np.nanmax(np.where(np.isfinite(vals), vals, np.nan)) * 1.25)
        ax.set_xlabel("crossover context (multiples of the width D)")
        ax.set_title("Context where attention FLOPs equal matmul FLOPs")
        ax.legend(handles=[Patch(color=ROLE["compute"], label="dense"), Patch(color=ROLE["weights"], label="MoE"),
                           Patch(color=PALETTE["grey"], alpha=0.2, label="6-7 D")],
                  loc="upper center", bbox_to_anchor=(0.5, -0.09 - 0.6 / len(model_list)), ncol=3,
                  fontsize=9, frameon=False)
    fin = [(m.name, v) for m, v in zip(model_list, vals, strict=True) if np.isfinite(v)]
    lo, hi = min(fin, key=lambda t: t[1]), max(fin, key=lambda t: t[1])
    fig.alt_text = (f"Bar chart of the context, in multiples of the model width D, at which attention FLOPs "
                    f"equal the matmul FLOPs for {len(model_list)} models; dense MHA/GQA models sit at 6-7 D, "
                    f"the range runs from {lo[1]:.1f} D ({lo[0]}) to {hi[1]:.1f} D ({hi[0]}).")
    return fig


# ----- decode and prefill bounds --------------------------------------------------------------

def _decode(model, chip, batch, context, n_chips, weight_bytes, kv_bytes, dtype, overlap):
    from .roofline import decode_step

    return decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, overlap=overlap)


def _fits(model, chip, context, n_chips, weight_bytes, kv_bytes):
    """(max_batch or None, min chips for the weights)"""
    from .roofline import max_batch, min_chips

    mb = _try(max_batch, model, chip, max(context, 1.0), n_chips=n_chips, weight_bytes=weight_bytes,
              kv_bytes=kv_bytes)
    need = min_chips(model, chip, batch=1, context=context, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    return mb, need


class _TimeLines(_Plot):
    """Compute / weight / KV / bound lines shared by the decode and prefill figures."""

    def setup(self):
        ax = self.ax
        self.l_compute, = ax.plot([], [], color=ROLE["compute"], label="compute")
        self.l_weight, = ax.plot([], [], color=ROLE["weights"], label="weight reads")
        self.l_kv, = ax.plot([], [], color=ROLE["kv"], label="KV-cache reads")
        self.l_bound, = ax.plot([], [], color=ROLE["total"], lw=3.2, alpha=0.55,
                                label="step bound", zorder=3)
        ax.legend(loc="upper left")

    def set_lines(self, x, s):
        for line, y in ((self.l_compute, s.compute_time), (self.l_weight, s.weight_time),
                        (self.l_kv, s.kv_time), (self.l_bound, s.time)):
            line.set_data(*_mask(x, y))
        return [s.compute_time, s.weight_time, s.kv_time, s.time]


class _DecodeVsBatch(_TimeLines):
    def setup(self):
        super().setup()
        _set_log(self.ax, x=_fmt_batch, y=_t)
        self.ax.set_xlabel("batch B (sequences)")
        self.ax.set_ylabel("decode step time, lower bound (s)")

    def draw(self, model, chip, batches, context, n_chips, weight_bytes, kv_bytes, dtype, overlap,
             mark_batch):
        from .roofline import critical_batch

        dt, dnote = _dtype(chip, dtype)
        ctx, cnote = _context(model, context)
        B = _grid(batches, 1, 4096)
        s = _decode(model, chip, B, ctx, n_chips, weight_bytes, kv_bytes, dt, overlap)
        ys = self.set_lines(B, s)
        ax = self.ax
        ax.set_xlim(B.min(), B.max())
        ax.set_ylim(*_loglim(np.concatenate([np.ravel(y) for y in ys]), pad=1.3))
        floor = float(s.weight_time[0])
        self.hline(floor, f"weight-read floor: {_t(floor)}", color=ROLE["weights"], x=0.01, ha="left",
                   va="top")
        mb, need = _fits(model, chip, ctx, n_chips, weight_bytes, kv_bytes)
        if mb is None or mb < 1:
            self.note(f"does not fit: weights + 1 sequence need {need} x {chip.name}", loc=(0.98, 0.03),
                      ha="right")
        elif mb < B.max():
            self.nofit(max(mb, B.min()), B.max(), f"B > {mb:,}: KV does not fit")
        bstar = _try(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt, context=ctx,
                     kv_bytes=kv_bytes)
        if bstar is not None and B.min() <= bstar <= B.max():
            self.vline(bstar, f"critical batch\n B* = {bstar:,.0f}", y=0.6)
        with self.marking():
            if mark_batch is not None:
                m = _decode(model, chip, float(mark_batch), ctx, n_chips, weight_bytes, kv_bytes, dt, overlap)
                self.point(float(mark_batch), m.time, f"B={float(mark_batch):g}: {_t(m.time)}, {m.bound}-bound")
                self.numbers = {"step_time": m.time, "bound": m.bound, "tokens_per_second": float(mark_batch) / m.time}
        ax.set_title(_title(f"{model.name} on {_chips_label(n_chips, chip)}, context {_n(ctx)}",
                            dnote, cnote))
        self.numbers.update(critical_batch=bstar, floor=floor, max_batch=mb)
        bs = f"the critical batch B* is about {bstar:,.0f}" if bstar else "decode stays memory-bound at every batch"
        return (f"Log-log plot of the decode step time lower bound of {model.name} on "
                f"{_chips_label(n_chips, chip)} at {_n(ctx)} tokens of context against batch "
                f"{B[0]:g} to {B[-1]:g}: compute, weight-read and KV-read times; weight reads set a floor "
                f"of {_t(floor)}, {bs}, and at batch {B[-1]:g} the step takes {_t(s.time[-1])}.")


def decode_time_vs_batch(model, chip, batches=None, context=4096, n_chips=1, weight_bytes=2,
                         kv_bytes=2, dtype="bf16", overlap="step", mark_batch=None):
    """Decode step lower bound and its parts (compute, weight reads, KV reads) against batch.

    Annotates the weight-read floor, the critical batch B* (the knee, where compute overtakes
    memory) and greys out batches whose KV caches do not fit in ``n_chips`` chips' HBM.
    ``mark_batch`` puts a labelled point on the bound. Log-log; ``batches`` default 1..4096.
    """
    return _build(_DecodeVsBatch, _params(locals()))


class _DecodeVsContext(_TimeLines):
    def setup(self):
        super().setup()
        _set_log(self.ax, x=lambda v: fmt_count(v, 2), y=_t)
        self.ax.set_xlabel("context S (tokens in the KV cache)")
        self.ax.set_ylabel("decode step time, lower bound (s)")

    def draw(self, model, chip, batch, contexts, n_chips, weight_bytes, kv_bytes, dtype, overlap,
             mark_context):
        from .roofline import critical_context

        dt, dnote = _dtype(chip, dtype)
        top = model.max_context or 1 << 20
        S = _grid(contexts, 128, top)
        if model.max_context:
            S = S[S <= model.max_context]
            if S.size == 0:
                raise ValueError(f"contexts: none within {model.name}'s max_context {model.max_context}")
        s = _decode(model, chip, float(batch), S, n_chips, weight_bytes, kv_bytes, dt, overlap)
        ys = self.set_lines(S, s)
        ax = self.ax
        ax.set_xlim(S.min(), S.max())
        ax.set_ylim(*_loglim(np.concatenate([np.ravel(y) for y in ys]), pad=1.3))
        from .roofline import max_context as _maxctx

        mc = _try(_maxctx, model, chip, float(batch), n_chips=n_chips, weight_bytes=weight_bytes,
                  kv_bytes=kv_bytes)
        if mc is not None and mc < S.max():
            self.nofit(max(mc, S.min()), S.max(), "KV does not fit")
        cross = _log_interp(S, s.kv_time, s.weight_time)
        if cross is not None:
            self.vline(cross, f"KV reads = weight reads\n S = {fmt_count(cross, 2)}", color=ROLE["kv"], y=0.6)
        flip = _log_interp(S, s.memory_time, s.compute_time)
        if flip is not None and (cross is None or abs(math.log(flip / cross)) > 0.3):
            self.vline(flip, f"memory-bound from\n S = {fmt_count(flip, 2)}", y=0.35)
        sstar = _try(critical_context, model, chip, kv_bytes=kv_bytes, dtype=dt)
        if sstar is not None and S.min() <= sstar <= S.max():
            self.vline(sstar, f"critical context\n S* = {fmt_count(sstar, 2)}", color=ROLE["capacity"],
                       y=0.97)
        with self.marking():
            if mark_context is not None:
                m = _decode(model, chip, float(batch), float(mark_context), n_chips, weight_bytes, kv_bytes, dt,
                            overlap)
                self.point(float(mark_context), m.time, f"S={fmt_count(float(mark_context))}: {_t(m.time)}")
                self.numbers = {"step_time": m.time, "bound": m.bound}
        ax.set_title(_title(f"{model.name} on {_chips_label(n_chips, chip)}, batch {float(batch):g}", dnote))
        self.numbers.update(crossover_context=cross, critical_context=sstar, max_context=mc)
        xs = (f"KV reads overtake weight reads at about {fmt_count(cross, 2)} tokens"
              if cross else "KV reads stay below weight reads over this range")
        return (f"Log-log plot of the decode step time lower bound of {model.name} on "
                f"{_chips_label(n_chips, chip)} at batch {float(batch):g} against context "
                f"{fmt_count(S[0])} to {fmt_count(S[-1])} tokens: {xs}; at {fmt_count(S[-1])} tokens "
                f"the step takes {_t(s.time[-1])}.")


def decode_time_vs_context(model, chip, batch=64, contexts=None, n_chips=1, weight_bytes=2, kv_bytes=2,
                           dtype="bf16", overlap="step", mark_context=None):
    """Decode step lower bound and its parts against context length at a fixed batch.

    Annotates the crossover context where KV reads overtake weight reads, the context where the
    step turns memory-bound, the critical context S* (memory-bound at any batch) and greys out
    contexts whose KV caches do not fit. ``contexts`` default 128..max_context.
    """
    return _build(_DecodeVsContext, _params(locals()))


class _PrefillVsPrompt(_TimeLines):
    def setup(self):
        super().setup()
        self.l_kv.set_label("KV-cache writes")
        self.ax.legend(loc="upper left")
        _set_log(self.ax, x=lambda v: fmt_count(v, 2), y=_t)
        self.ax.set_xlabel("prompt length P (tokens per sequence)")
        self.ax.set_ylabel("prefill time, lower bound (s)")

    def draw(self, model, chip, batch, prompts, n_chips, weight_bytes, kv_bytes, dtype, mark_prompt):
        from .roofline import prefill_step

        dt, dnote = _dtype(chip, dtype)
        top = model.max_context or 1 << 17
        P = _grid(prompts, 1, top)
        s = prefill_step(model, chip, float(batch), P, n_chips=n_chips, weight_bytes=weight_bytes,
                         kv_bytes=kv_bytes, dtype=dt)
        ys = self.set_lines(P, s)
        ax = self.ax
        ax.set_xlim(P.min(), P.max())
        ax.set_ylim(*_loglim(np.concatenate([np.ravel(y) for y in ys]), pad=1.3))
        flip = _log_interp(P, s.compute_time, s.memory_time)
        if flip is not None:
            self.vline(flip, f"compute-bound from\n P = {fmt_count(flip, 2)}", y=0.6)
        with self.marking():
            if mark_prompt is not None:
                m = prefill_step(model, chip, float(batch), float(mark_prompt), n_chips=n_chips,
                                 weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
                self.point(float(mark_prompt), m.time, f"P={fmt_count(float(mark_prompt))}: {_t(m.time)}")
                self.numbers = {"step_time": m.time, "bound": m.bound, "tokens_per_second": m.tokens / m.time}
        ax.set_title(_title(f"Prefill: {model.name} on {_chips_label(n_chips, chip)}, batch {float(batch):g}",
                            dnote))
        self.numbers.update(crossover_prompt=flip)
        fs = (f"it turns compute-bound at about {fmt_count(flip, 2)} tokens" if flip
              else "the bound does not change regime over this range")
        return (f"Log-log plot of the prefill time lower bound of {model.name} on "
                f"{_chips_label(n_chips, chip)} for batch {float(batch):g} against prompt length "
                f"{fmt_count(P[0])} to {fmt_count(P[-1])} tokens: short prompts are bound by weight reads, {fs}.")


def prefill_time_vs_prompt(model, chip, batch=1, prompts=None, n_chips=1, weight_bytes=2, kv_bytes=2,
                           dtype="bf16", mark_prompt=None):
    """Prefill lower bound and its parts (compute, weight reads, KV writes) against prompt length.

    Annotates the prompt length where prefill turns compute-bound. ``prompts`` default 1..max_context.
    """
    return _build(_PrefillVsPrompt, _params(locals()))


# ----- batching and cost ----------------------------------------------------------------------

class _CostVsBatch(_Plot):
    def setup(self):
        ax = self.ax
        self.l_w, = ax.plot([], [], color=ROLE["weights"], lw=1.5, ls="--", label="weights / B")
        self.l_c, = ax.plot([], [], color=ROLE["compute"], lw=1.5, ls="--", label="compute")
        self.l_kv, = ax.plot([], [], color=ROLE["kv"], lw=1.5, ls="--", label="KV reads")
        self.l_tot, = ax.plot([], [], color=ROLE["cost"], lw=2.8, label="cost (lower bound)", zorder=3)
        ax.legend(loc="upper right")
        _set_log(ax, x=_fmt_batch, y=_usd_tick)
        ax.set_xlabel("batch B (sequences)")
        ax.set_ylabel("cost per million output tokens (USD)")

    def draw(self, model, chip, price_per_hour, batches, context, n_chips, weight_bytes, kv_bytes, dtype,
             overlap, mark_batch):
        from .roofline import critical_batch

        dt, dnote = _dtype(chip, dtype)
        ctx, cnote = _context(model, context)
        price, pnote = _price(chip, price_per_hour)
        B = _grid(batches, 1, 4096)
        s = _decode(model, chip, B, ctx, n_chips, weight_bytes, kv_bytes, dt, overlap)
        k = 1e6 * float(n_chips) * price / 3600.0 / B
        parts = {"w": k * s.weight_time, "c": k * s.compute_time, "kv": k * s.kv_time, "t": k * s.time}
        mb, need = _fits(model, chip, ctx, n_chips, weight_bytes, kv_bytes)
        ok = B <= (mb if mb is not None else 0)
        fits = bool(ok.any())
        keep = ok if fits else np.ones_like(ok)
        for line, key in ((self.l_w, "w"), (self.l_c, "c"), (self.l_kv, "kv"), (self.l_tot, "t")):
            line.set_data(*_mask(B[keep], parts[key][keep]))
        self.l_tot.set_alpha(1.0 if fits else 0.35)
        ax = self.ax
        ax.set_xlim(B.min(), B.max())
        ax.set_ylim(*_loglim(np.concatenate([parts[q][keep] for q in parts]), pad=1.4))
        floor = float(max(parts["c"][keep][-1], parts["kv"][keep][-1]))
        self.hline(floor, f"floor {fmt_usd(floor)}/Mtok", color=ROLE["cost"], x=0.01, ha="left", va="top",
                   ls=":")
        best = None
        limit = None
        if not fits:
            self.note(f"does not fit: needs at least {need} x {chip.name}\n(curve shown faded)")
        else:
            i = int(np.nonzero(ok)[0][-1])
            best = float(parts["t"][i])
            if mb < B.max():
                self.nofit(max(mb, B.min()), B.max(), f"B > {mb:,}: HBM full")
                limit = i
        bstar = _try(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt, context=ctx,
                     kv_bytes=kv_bytes)
        if bstar is not None and B.min() <= bstar <= B.max():
            self.vline(bstar, f"B* = {bstar:,.0f}", y=0.55)
        if limit is not None:
            self.point(B[limit], best, f"memory limit B={B[limit]:,.0f}:\n{fmt_usd(best)}/Mtok",
                       color=ROLE["capacity"], offset=(-10, -30))
        mark = None
        with self.marking():
            if mark_batch is not None:
                m = _decode(model, chip, float(mark_batch), ctx, n_chips, weight_bytes, kv_bytes, dt, overlap)
                mark = 1e6 * float(n_chips) * price / 3600.0 * m.time / float(mark_batch)
                self.point(float(mark_batch), mark, f"B={float(mark_batch):g}: {fmt_usd(mark)}/Mtok",
                           offset=(8, 8), ha="left")
                self.numbers = {"step_time": m.time, "bound": m.bound, "cost_per_million": mark,
                                "tokens_per_second": float(mark_batch) / m.time}
        ax.set_title(_title(f"{model.name} on {_chips_label(n_chips, chip)} at "
                            f"{fmt_usd(price)}/chip-hour, context {_n(ctx)}", dnote, cnote, pnote))
        self.numbers.update(floor=floor, critical_batch=bstar, max_batch=mb, cost_at_max_batch=best)
        tail = (f"the cheapest batch that fits ({mb:,}) costs {fmt_usd(best)}" if best is not None
                else f"the model does not fit on {_chips_label(n_chips, chip)}")
        return (f"Log-log plot of the lower-bound cost per million output tokens of {model.name} on "
                f"{_chips_label(n_chips, chip)} against batch: the weight-read share falls as 1/B toward a "
                f"floor of {fmt_usd(floor)} set by compute and KV reads; {tail}.")


def cost_vs_batch(model, chip, price_per_hour=None, batches=None, context=4096, n_chips=1, weight_bytes=2,
                  kv_bytes=2, dtype="bf16", overlap="step", mark_batch=None):
    """USD per million output tokens against batch (log-log) and its parts.

    The weight-read share is a hyperbola ``n t_w p / B``; compute and KV reads are flat floors
    per token. Annotates the floor, the critical batch B* and the memory limit ``max_batch``,
    where the curve stops. ``price_per_hour`` defaults to the chip's rental price (or
    ``DEFAULT_PRICE_PER_HOUR``, flagged in the title).
    """
    return _build(_CostVsBatch, _params(locals()))


class _Frontier(_Plot):
    def setup(self):
        ax = self.ax
        self.l, = ax.plot([], [], "-", color=ROLE["cost"], lw=1.8, zorder=2)
        self.p_fit, = ax.plot([], [], "o", color=ROLE["cost"], ms=6, mec="white", label="fits in HBM", zorder=3)
        self.p_nofit, = ax.plot([], [], "o", mfc="white", mec=PALETTE["grey"], ms=6,
                                label="does not fit", zorder=3)
        ax.legend(loc="upper left")  # slow and dear at once never happens: that corner stays empty
        _set_log(ax, x=lambda v: f"{v:g}", y=_usd_tick)
        ax.set_xlabel("decode speed per user (tokens/s)")
        ax.set_ylabel("cost per million output tokens (USD)")

    def draw(self, model, chip, batches, context, n_chips, price_per_hour, weight_bytes, kv_bytes, dtype,
             overlap, mark_batch):
        from .cost import latency_cost_frontier as _frontier

        dt, dnote = _dtype(chip, dtype)
        ctx, cnote = _context(model, context)
        price, pnote = _price(chip, price_per_hour)
        B = _grid(batches if batches is not None else 2.0 ** np.arange(13), 1, 4096)
        f = _frontier(model, chip, B, ctx, n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
                      dtype=dt, price_per_chip_hour=price, overlap=overlap)
        x, y = f.tokens_per_second_per_user, f.cost_per_million_tokens
        self.l.set_data(*_mask(x, y))
        self.p_fit.set_data(*_mask(x[f.fits], y[f.fits]))
        self.p_nofit.set_data(*_mask(x[~f.fits], y[~f.fits]))
        ax = self.ax
        ax.set_xlim(*_loglim(x, pad=1.6))
        ax.set_ylim(*_loglim(y, pad=1.6))
        labelled = [i for i, b in enumerate(B) if math.log(b, 4) % 1 < 1e-9 or i == len(B) - 1]
        cands = [(-5, 4, "right", "bottom"), (5, 4, "left", "bottom"), (5, -4, "left", "top"),
                 (-5, -4, "right", "top")]
        for i in labelled:
            self.label(x[i], y[i], f"B={B[i]:g}", cands, color="#333333", fontsize=8.5, box=False)
        with self.marking():
            if mark_batch is not None:
                g = _frontier(model, chip, float(mark_batch), ctx, n_chips=n_chips, weight_bytes=weight_bytes,
                              kv_bytes=kv_bytes, dtype=dt, price_per_chip_hour=price, overlap=overlap)
                self.point(float(g.tokens_per_second_per_user[0]), float(g.cost_per_million_tokens[0]),
                           f"B={float(mark_batch):g}", offset=(-12, -16))
                self.numbers = {"step_time": float(g.step_time[0]), "bound": str(g.bound[0]),
                                "cost_per_million": float(g.cost_per_million_tokens[0]),
                                "tokens_per_second": float(g.tokens_per_second[0])}
        ax.set_title(_title(f"Latency vs cost: {model.name} on {_chips_label(n_chips, chip)}, "
                            f"context {_n(ctx)}", dnote, cnote, pnote))
        return (f"Log-log plot of cost per million output tokens against decode speed per user for "
                f"{model.name} on {_chips_label(n_chips, chip)}, batch {B[0]:g} to {B[-1]:g}: from "
                f"{x[0]:.0f} tokens/s at {fmt_usd(y[0])}/Mtok (batch {B[0]:g}) to {x[-1]:.3g} tokens/s at "
                f"{fmt_usd(y[-1])}/Mtok (batch {B[-1]:g}).")


def latency_cost_frontier(model, chip, batches=None, context=4096, n_chips=1, price_per_hour=None,
                          weight_bytes=2, kv_bytes=2, dtype="bf16", overlap="step", mark_batch=None):
    """Tokens/s per user (x) against $/Mtok (y) as the batch grows; points labelled with batch.

    Points whose weights and KV caches do not fit are drawn hollow. ``batches`` default 1, 2, 4 ... 4096.
    """
    return _build(_Frontier, _params(locals()))


class _RegimeMap(_Plot):
    figsize = (6.4, 4.4)

    def setup(self):
        ax = self.ax
        _set_log(ax, x=_fmt_batch, y=lambda v: fmt_count(v, 2))
        ax.set_xlabel("batch B (sequences)")
        ax.set_ylabel("context S (tokens)")
        ax.grid(False)
        self.mesh = None
        ax.legend(handles=[Patch(color="#a6d3f0", label="compute-bound"),
                           Patch(color="#f5d08a", label="memory-bound"),
                           Patch(color=NOFIT, label="does not fit in HBM")],
                  loc="upper right", framealpha=0.9, frameon=True)

    def draw(self, model, chip, n_chips, batches, contexts, weight_bytes, kv_bytes, dtype):
        from .roofline import critical_batch, critical_context

        dt, dnote = _dtype(chip, dtype)
        B = _grid(batches, 1, 16384, n=90, integer=False)
        S = _grid(contexts, 128, model.max_context or 1 << 20, n=70, integer=False)
        s = _decode(model, chip, B[None, :], S[:, None], n_chips, weight_bytes, kv_bytes, dt, "step")
        cat = np.where(np.asarray(s.compute_time) >= np.asarray(s.memory_time), 1.0, 0.0)
        held = model.total_params * weight_bytes + B[None, :] * model.kv_cache_bytes(S[:, None], kv_bytes)
        cat = np.where(held > float(n_chips) * chip.hbm_capacity, 2.0, cat)
        ax = self.ax
        cmap = mpl.colors.ListedColormap(["#f5d08a", "#a6d3f0", NOFIT])
        self.add(ax.pcolormesh(B, S, cat, cmap=cmap, vmin=-0.5, vmax=2.5, shading="nearest",
                               rasterized=True, zorder=0))
        ax.set_xlim(B.min(), B.max())
        ax.set_ylim(S.min(), S.max())
        sstar = _try(critical_context, model, chip, kv_bytes=kv_bytes, dtype=dt)
        below = S[S < sstar * 0.999] if sstar else S
        bcurve = []
        for sc in below:
            b = _try(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt, context=float(sc),
                     kv_bytes=kv_bytes)
            bcurve.append(b if b is not None else np.nan)
        bx, by = _mask(np.asarray(bcurve, float), below)
        inside = (bx >= B.min()) & (bx <= B.max())
        if inside.any():
            self.add(ax.plot(bx[inside], by[inside], color=ROLE["total"], lw=2, label="B*(S)")[0])
            j = int(np.nonzero(inside)[0][0])
            self.add(ax.annotate("critical batch B*(S)", (bx[j], by[j]), xytext=(6, 6), textcoords="offset points",
                                 fontsize=9.5))
        if sstar is not None and S.min() <= sstar <= S.max():
            self.hline(sstar, f"critical context S* = {fmt_count(sstar, 2)}", color=ROLE["capacity"], x=0.01,
                       ha="left", va="bottom")
        ax.set_title(_title(f"Decode regime: {model.name} on {_chips_label(n_chips, chip)}", dnote))
        b0 = _try(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt, context=float(S.min()),
                  kv_bytes=kv_bytes)
        self.numbers = {"critical_context": sstar, "critical_batch_short": b0}
        frac = float(np.mean(cat == 1))
        sp = (f"beyond the critical context of {fmt_count(sstar, 2)} tokens it is memory-bound at any batch"
              if sstar else "KV reads never dominate compute")
        return (f"Map of the (batch, context) plane for {model.name} on {_chips_label(n_chips, chip)}, "
                f"coloured compute-bound ({frac:.0%} of the plotted grid) or memory-bound, grey where it does "
                f"not fit in HBM: decode is compute-bound right of the critical-batch curve"
                + (f" (B* about {b0:,.0f} at short context)" if b0 else "") + f"; {sp}.")


def regime_map(model, chip, n_chips=1, batches=None, contexts=None, weight_bytes=2, kv_bytes=2, dtype="bf16"):
    """The (batch, context) plane coloured compute-bound vs memory-bound (decode, step overlap).

    Draws the critical-batch curve B*(S) and the critical context S*, and greys out configurations
    whose weights and KV caches do not fit in ``n_chips`` chips' HBM.
    """
    return _build(_RegimeMap, _params(locals()))


# What speculative decoding / multi-token prediction buys at each batch (speed per user and
# cost per token, relative to plain decoding).

def speculative_gain_vs_batch(model, chip, draft_tokens=(1, 3, 7), acceptance=0.8, batches=None,
                              context=1024, n_chips=1, weight_bytes=2, kv_bytes=2, dtype="bf16"):
    """Speed-up per user of speculative decoding over plain decoding, against batch.

    For each ``k`` in ``draft_tokens``: tokens per second per user of
    :func:`llmmath.roofline.speculative_step` (``k`` drafts, each accepted with probability
    ``acceptance``) divided by that of :func:`llmmath.roofline.decode_step` at the same batch.
    Drafting itself is free here (an upper bound on the gain). While ``B (k+1)`` is below the
    critical batch the verify step costs about one memory-bound step, so the gain is the expected
    tokens per step; once the step turns compute-bound, rejected drafts waste FLOPs and the gain
    falls below 1 (the same ratio is the cost-per-token saving, since chips and batch are fixed).
    """
    from .roofline import decode_step, speculative_step, speculative_tokens_per_step

    ks = [int(k) for k in np.atleast_1d(draft_tokens)]
    B = np.asarray(batches, float) if batches is not None else np.logspace(0, np.log10(8192), 80)
    fig, ax = _new((6.4, 4.0))
    colors = [ROLE["compute"], ROLE["weights"], ROLE["kv"], PALETTE["purple"], PALETTE["sky"]]
    base = decode_step(model, chip, B, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype)
    gains = {}
    with house_style():
        for k, col in zip(ks, colors, strict=False):
            s = speculative_step(model, chip, B, context, k, acceptance, n_chips=n_chips,
                                 weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dtype)
            g = (np.asarray(s.tokens) / np.asarray(s.time)) / (B / np.asarray(base.time))
            gains[k] = g
            ideal = float(speculative_tokens_per_step(k, acceptance))
            ax.plot(B, g, color=col, label=f"k = {k} drafts ({ideal:.2f} tokens/step)")
        ax.axhline(1.0, color=PALETTE["black"], lw=1.0, ls=":")
        ax.text(0.01, 1.0, " no gain", transform=ax.get_yaxis_transform(), ha="left", va="bottom",
                fontsize=9)
        _set_log(ax, x=_fmt_batch)
        ax.set_xlim(B.min(), B.max())
        top = max(float(np.max(g)) for g in gains.values())
        ax.set_ylim(0, top * 1.25)
        ax.set_xlabel("batch B (sequences)")
        ax.set_ylabel("speed per user vs plain decoding (x)")
        ax.set_title(_title(f"Speculative decoding: {model.name} on {_chips_label(n_chips, chip)}, "
                            f"acceptance {acceptance:g}"))
        ax.legend(loc="upper right")
    k0 = ks[-1]
    fig.alt_text = (f"Speed-up per user of speculative decoding over plain decoding for {model.name} on "
                    f"{_chips_label(n_chips, chip)} against batch {B[0]:g} to {B[-1]:g}, acceptance "
                    f"{acceptance:g}: with k = {k0} drafts the gain is {gains[k0][0]:.2f}x at batch 1 and "
                    f"{gains[k0][-1]:.2f}x at batch {B[-1]:g}; every curve falls once the verify step "
                    f"turns compute-bound.")
    return fig


# ----- KV cache -------------------------------------------------------------------------------

class _KvVsContext(_Plot):
    def setup(self):
        ax = self.ax
        _set_log(ax, x=lambda v: fmt_count(v, 2), y=_b)
        ax.set_xlabel("context S (tokens per sequence)")
        ax.set_ylabel("KV-cache memory (B)")
        self.lines = []

    def draw(self, model_list, chip, batch, contexts, n_chips, kv_bytes, weight_bytes, mark_context):
        from .roofline import max_context as _maxctx

        ms = _as_list(model_list, [])
        if not ms:
            raise ValueError("model_list: give at least one model")
        ax = self.ax
        while len(self.lines) < len(ms):
            self.lines.append(ax.plot([], [])[0])
        while len(self.lines) > len(ms):
            self.lines.pop().remove()
        top = max((m.max_context or 1 << 20) for m in ms)
        S = _grid(contexts, 128, top)
        ys = []
        hbm = float(n_chips) * chip.hbm_capacity
        for i, (m, line) in enumerate(zip(ms, self.lines, strict=False)):
            Sm = S[S <= m.max_context] if m.max_context else S
            y = float(batch) * m.kv_cache_bytes(Sm, kv_bytes) if Sm.size else np.array([])
            line.set_data(*_mask(Sm, y))
            col = CYCLE[i % len(CYCLE)] if len(ms) > 1 else ROLE["kv"]
            line.set_color(col)
            line.set_label(f"{m.name} ({m.attention_kind})")
            ys.append(y)
            free = hbm - m.total_params * weight_bytes
            if free > 0 and 1 < len(ms) <= 4:  # one model: hline() below draws it, labelled
                self.add(ax.axhline(free, color=col if len(ms) > 1 else ROLE["capacity"], ls="--", lw=1.2))
        ax.set_xlim(S.min(), S.max())
        allv = np.concatenate([np.ravel(y) for y in ys] + [[hbm]])
        ax.set_ylim(*_loglim(allv, pad=1.5))
        leg = ax.legend(loc="lower right")  # KV grows with context: the lower right stays empty
        self._dyn.append(leg)
        self.hline(hbm, f"HBM of {_chips_label(n_chips, chip)}: {_b(hbm)}", color=ROLE["capacity"],
                   x=0.01, ha="left", ls="-")
        m0 = ms[0]
        free0 = hbm - m0.total_params * weight_bytes
        mc = _try(_maxctx, m0, chip, float(batch), n_chips=n_chips, weight_bytes=weight_bytes,
                  kv_bytes=kv_bytes)
        if len(ms) == 1:
            if free0 > 0:
                self.hline(free0, f"left for KV after weights: {_b(free0)}", color=ROLE["capacity"],
                           x=0.99, ha="right", va="top")
            else:
                self.note(f"{m0.name} weights alone ({_b(m0.total_params * weight_bytes)}) exceed HBM",
                          loc=(0.98, 0.03), ha="right")
            if mc is not None and S.min() <= mc <= S.max():
                self.vline(mc, f"fits up to\n S = {fmt_count(mc, 2)}", color=ROLE["capacity"], y=0.6)
        with self.marking():
            if mark_context is not None:
                sc = float(mark_context)
                if m0.max_context is None or sc <= m0.max_context:
                    v = float(batch) * m0.kv_cache_bytes(sc, kv_bytes)
                    self.point(sc, v, f"S={fmt_count(sc)}: {_b(v)}")
                    self.numbers = {"kv_bytes": v}
        ax.set_title(f"KV cache for batch {float(batch):g} at {kv_bytes:g} B per element"
                     + (f" vs {_chips_label(n_chips, chip)}" if True else ""))
        self.numbers.update(max_context=mc, free=free0)
        per = ", ".join(f"{m.name} {_b(m.kv_bytes_per_token(kv_bytes))}" for m in ms[:6])
        return (f"Log-log plot of KV-cache bytes against context for batch {float(batch):g} "
                f"({per} per token), with the HBM of {_chips_label(n_chips, chip)} ({_b(hbm)}) and what is "
                f"left after the weights as capacity lines"
                + (f"; {m0.name} fits up to about {fmt_count(mc, 2)} tokens." if mc and len(ms) == 1 else "."))


def kv_vs_context(model_list, chip, batch=1, contexts=None, n_chips=1, kv_bytes=2, weight_bytes=2,
                  mark_context=None):
    """KV-cache bytes against context for several models (attention variants), log-log.

    Draws the HBM of ``n_chips`` chips and, per model, the capacity left after its weights
    (``n M - N_tot b_w``); for a single model, annotates the longest context that fits.
    """
    return _build(_KvVsContext, _params(locals()))


# Per sequence, KV-read time over compute time against context: the critical context S* is
# where a curve crosses 1, and models whose reads are capped (sliding windows, sparse top-k)
# show why they cross late or never.

class _KvBalance(_Plot):
    figsize = (6.4, 4.4)

    def setup(self):
        ax = self.ax
        _set_log(ax, x=lambda v: fmt_count(v, 2), y=lambda v: f"{v:g}")
        ax.set_xlabel("context S (tokens per sequence)")
        ax.set_ylabel("KV-read time / compute time,\nper sequence")
        self.lines = []

    def draw(self, model_list, chip, contexts, kv_bytes, dtype, show_uncapped):
        from .roofline import critical_context

        ms = _as_list(model_list, [])
        if not ms:
            raise ValueError("model_list: give at least one model")
        dt, dnote = _dtype(chip, dtype)
        ratio_cw = chip.peak(dt) / chip.hbm_bandwidth
        ax = self.ax
        for ln in self.lines:
            ln.remove()
        self.lines = []
        top = max((m.max_context or 1 << 20) for m in ms)
        S = _grid(contexts, 128, top, n=120)
        ys, stars, dots = [], {}, []
        for i, m in enumerate(ms):
            col = CYCLE[i % len(CYCLE)]
            Sm = S[S <= m.max_context] if m.max_context else S
            per_seq = 2.0 * m.matmul_params_active / ratio_cw  # bytes that cost one token's compute time
            read = m.kv_read_bytes(Sm, kv_bytes) / per_seq
            self.lines.append(ax.plot(*_mask(Sm, read), color=col, label=f"{m.name} ({m.attention_kind})")[0])
            ys.append(read)
            if show_uncapped:
                full = m.kv_bytes_per_token(kv_bytes) * Sm / per_seq
                if not np.allclose(full, read):
                    self.lines.append(ax.plot(*_mask(Sm, full), color=col, ls="--", lw=1.4,
                                              label=f"{m.name}, no window / top-k")[0])
                    ys.append(full)
            star = _try(critical_context, m, chip, kv_bytes=kv_bytes, dtype=dt)
            stars[m.name] = star
            if star is not None and Sm.min() <= star <= Sm.max():
                dots.append((star, col))
        self.add(ax.axhline(1.0, color=ROLE["total"], ls="--", lw=1.2, zorder=1,
                            label="above 1: memory-bound at any batch"))
        ax.set_xlim(S.min(), S.max())
        ax.set_ylim(*_loglim(np.concatenate([np.ravel(y) for y in ys] + [[1.0]]), pad=1.6))
        leg = ax.legend(loc="upper left", fontsize=8.5)
        self._dyn.append(leg)
        for star, col in dots:  # S* labels, placed clear of the legend, the curves and each other
            self.point(star, 1.0, f"{fmt_count(star, 2)}", color=col, offset=(-6, 6))
        ax.set_title(_title(f"KV reads vs compute per sequence, {chip.name}",
                            f"{dt} compute, {kv_bytes:g} B per KV element", dnote))
        self.numbers = {"critical_context": stars}
        parts = []
        for m in ms:
            st = stars[m.name]
            parts.append(f"{m.name} crosses at {fmt_count(st, 2)} tokens" if st is not None
                         else f"{m.name} never crosses (its reads are capped)")
        return (f"Log-log plot, for one sequence, of the time to read its KV cache divided by the time to "
                f"compute its token on {chip.name}, against context; a curve above 1 means decode is "
                f"memory-bound at every batch: " + "; ".join(parts) + ".")


def kv_balance_vs_context(model_list, chip, contexts=None, kv_bytes=2, dtype="bf16", show_uncapped=True):
    """Per sequence: KV-read time over compute time (``kv_read(S) C / (2 N_mm W)``) against context.

    A curve crosses 1 at the model's critical context S* (marked): beyond it decode is
    memory-bound at every batch. Sliding-window layers bend a curve down (their reads stop
    growing at the window); sparse top-k attention flattens it, and if the plateau stays below 1
    the model has no critical context. With ``show_uncapped`` a dashed line shows the same model
    with every layer global and dense (no window, no top-k). ``contexts`` default
    128..the longest ``max_context``.
    """
    return _build(_KvBalance, _params(locals()))


# ----- prefill against decode, and API prices -------------------------------------------------

class _PrefillDecodePerToken(_Plot):
    def setup(self):
        ax = self.ax
        self.l_pre, = ax.plot([], [], color=ROLE["compute"], lw=2.4, label="prefill, per prompt token")
        self.l_dec1, = ax.plot([], [], color=ROLE["kv"], lw=2.4, label="decode at batch 1, per output token")
        self.l_decB, = ax.plot([], [], color=ROLE["weights"], lw=2.4, label="decode at batch B, per output token")
        _set_log(ax, x=lambda v: fmt_count(v, 2), y=_t)
        ax.set_xlabel("prompt length P = context S (tokens)")
        ax.set_ylabel("chip time per token, lower bound")

    def draw(self, model, chip, prompts, decode_batch, n_chips, weight_bytes, kv_bytes, dtype, mark_prompt):
        from .roofline import decode_step, prefill_step

        dt, dnote = _dtype(chip, dtype)
        top = model.max_context or 1 << 17
        P = _grid(prompts, 16, top)
        kw = dict(n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
        pre = prefill_step(model, chip, 1.0, P, **kw)
        d1 = decode_step(model, chip, 1.0, P, **kw)
        dB = decode_step(model, chip, float(decode_batch), P, **kw)
        y = {"pre": pre.time / P, "d1": d1.time, "dB": dB.time / float(decode_batch)}
        self.l_pre.set_data(*_mask(P, y["pre"]))
        self.l_dec1.set_data(*_mask(P, y["d1"]))
        self.l_decB.set_data(*_mask(P, y["dB"]))
        self.l_decB.set_label(f"decode at batch {float(decode_batch):g}, per output token")
        ax = self.ax
        ax.legend(loc="upper right", fontsize=9)
        ax.set_xlim(P.min(), P.max())
        lo_, hi_ = _loglim(np.concatenate(list(y.values())), pad=1.5)
        ax.set_ylim(lo_, hi_ * 12)
        mp = float(mark_prompt) if mark_prompt is not None else float(P[len(P) // 2])
        mp = min(max(mp, float(P.min())), float(P.max()))
        a = prefill_step(model, chip, 1.0, mp, **kw)
        b = decode_step(model, chip, float(decode_batch), mp, **kw)
        per_in, per_out = a.time / mp, b.time / float(decode_batch)
        left = math.log(mp / P.min()) < 0.5 * math.log(P.max() / P.min())  # label on the roomier side
        with self.marking():
            self._mark_points(ax, mp, per_in, per_out, a, b, left)
        ratio = per_out / per_in
        self.numbers = {"prefill_per_token": per_in, "decode_per_token": per_out, "ratio": ratio,
                        "ttft": a.time, "tpot": b.time}
        ax.set_title(_title(f"{model.name} on {_chips_label(n_chips, chip)}: prefill vs decode", dnote))
        return (f"Log-log plot of chip time per token against prompt length for {model.name} on "
                f"{_chips_label(n_chips, chip)}: prefill costs {_t(per_in)} per prompt token at "
                f"{fmt_count(mp)} tokens, decode at batch {float(decode_batch):g} costs {_t(per_out)} per "
                f"output token, {ratio:.1f} times more; decode at batch 1 is far above both.")

    def _mark_points(self, ax, mp, per_in, per_out, a, b, left):
        """The marked prompt length: one point on the prefill line, one on the decode line."""
        for yv, txt, col, dy in ((per_in, f"prefill: {_t(per_in)}/token ({a.bound}-bound)", ROLE["compute"], -14),
                                 (per_out, f"decode: {_t(per_out)}/token ({b.bound}-bound)", ROLE["weights"], 10)):
            dot = self.add(ax.plot([mp], [yv], "o", ms=7, mfc=col, mec="white", mew=1.5, zorder=5)[0])
            self.label(mp, yv, txt, _point_candidates((6 if left else -6, dy), "left" if left else "right"),
                       color=col, exclude=[dot])


def prefill_vs_decode_per_token(model, chip, prompts=None, decode_batch=64, n_chips=1, weight_bytes=2,
                                kv_bytes=2, dtype="bf16", mark_prompt=None):
    """Chip time per token (lower bound) for prefill and for decode against prompt length.

    Prefill: one pass over a ``P``-token prompt, time / P. Decode: one step at context ``S = P``,
    time / batch, at batch 1 and at ``decode_batch``. The gap between the prefill line and a
    decode line is the output/input cost ratio an API price sheet shows. ``prompts`` default
    16..max_context; the point at ``mark_prompt`` (default mid-range) is annotated.
    """
    return _build(_PrefillDecodePerToken, _params(locals()))


class _IoRatioVsBatch(_Plot):
    def setup(self):
        ax = self.ax
        self.l, = ax.plot([], [], color=ROLE["cost"], lw=2.6, label="output / input cost (bound)")
        _set_log(ax, x=_fmt_batch, y=lambda v: f"{v:g}x")
        ax.set_xlabel("decode batch B (sequences)")
        ax.set_ylabel("output / input cost per token")

    def draw(self, model, chip, prompt, context, batches, n_chips, weight_bytes, kv_bytes, dtype, band):
        from .cost import input_output_cost
        from .roofline import critical_batch

        dt, dnote = _dtype(chip, dtype)
        B = _grid(batches, 1, 4096)
        r = input_output_cost(model, chip, float(prompt), B, float(context), n_chips=n_chips,
                              weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt,
                              price_per_chip_hour=1.0)
        ratio = np.asarray(r.output_to_input)
        mb, _ = _fits(model, chip, float(context), n_chips, weight_bytes, kv_bytes)
        self.l.set_data(*_mask(B, ratio))
        ax = self.ax
        ax.set_xlim(B.min(), B.max())
        ax.set_ylim(*_loglim(np.concatenate([ratio, [0.8, band[1] * 1.2]]), pad=1.3))
        lo, hi = band
        self.add(ax.axhspan(lo, hi, color=PALETTE["sky"], alpha=0.25, lw=0, zorder=0))
        self.add(ax.text(0.02, math.sqrt(lo * hi), f"API price sheets: {lo:g}-{hi:g}x",
                         transform=ax.get_yaxis_transform(), ha="left", va="center", fontsize=9.5))
        self.hline(1.0, "1x: decode as cheap as prefill", color=ROLE["total"], x=0.02, ha="left", va="top",
                   ls=":")
        if mb is not None and mb < B.max():
            self.nofit(max(mb, B.min()), B.max(), "KV does not fit")
        bstar = _try(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dt, context=float(context),
                     kv_bytes=kv_bytes)
        if bstar is not None and B.min() <= bstar <= B.max():
            self.vline(bstar, f"B* = {bstar:,.0f}", y=0.97)
        inside = B[(ratio >= lo) & (ratio <= hi)]
        self.numbers = {"critical_batch": bstar, "max_batch": mb,
                        "band_batches": (float(inside.min()), float(inside.max())) if inside.size else None,
                        "ratio_at_1": float(ratio[0])}
        ax.set_title(_title(f"{model.name} on {_chips_label(n_chips, chip)}: prompt {fmt_count(prompt)}, "
                            f"context {fmt_count(context)}", dnote))
        span = (f"the ratio sits in the {lo:g}-{hi:g}x band for batches of about {inside.min():,.0f} to "
                f"{inside.max():,.0f}" if inside.size else f"the ratio never enters the {lo:g}-{hi:g}x band")
        fall = (f"falling toward 1x near the critical batch B* = {bstar:,.0f}" if bstar is not None else
                f"falling toward {float(ratio[-1]):.1f}x and never to 1x, since at context {fmt_count(context)} "
                f"KV reads keep decode memory-bound at any batch")
        return (f"Log-log plot of the lower-bound ratio of output-token cost to input-token cost for "
                f"{model.name} on {_chips_label(n_chips, chip)} against decode batch: "
                f"{float(ratio[0]):,.0f}x at batch 1, {fall}; {span}.")


def io_cost_ratio_vs_batch(model, chip, prompt=2048, context=4096, batches=None, n_chips=1, weight_bytes=2,
                           kv_bytes=2, dtype="bf16", band=(3.0, 5.0)):
    """Output/input cost ratio (decode $/token over prefill $/token, lower bounds) against decode batch.

    Shades ``band`` (the 3-5x of API price sheets) and marks the critical batch, where decode
    is compute-bound and the ratio approaches 1. Prefill: one ``prompt``-token sequence;
    decode at ``context``.
    """
    return _build(_IoRatioVsBatch, _params(locals()))


class _PriceStep(_Plot):
    def setup(self):
        ax = self.ax
        self.l_c, = ax.plot([], [], color=ROLE["compute"], lw=2.0, ls="--", label="compute per token (flat)")
        self.l_kv, = ax.plot([], [], color=ROLE["kv"], lw=2.0, ls="--", label="KV reads per token")
        self.l_t, = ax.plot([], [], color=ROLE["total"], lw=3.0, alpha=0.6, label="cost: the max of the two")
        self.l_p, = ax.plot([], [], color=ROLE["cost"], lw=2.0, drawstyle="steps-post",
                            label="a price sheet (output)")
        _set_log(ax, x=lambda v: fmt_count(v, 2))
        ax.set_xlabel("context S (tokens)")
        ax.set_ylabel("cost per output token\n(relative to short contexts)")

    def draw(self, active_params, kv_bytes_per_token, ops_per_byte, contexts, price_step, price_ratio):
        S = _grid(contexts, 1000, 2_000_000, integer=True)
        comp = np.ones_like(S, dtype=float)
        # per sequence and step, at a batch large enough to amortise the weights:
        # KV read time / compute time = S b_kv W^-1 / (2 N_act C^-1) = S b_kv R / (2 N_act)
        kv = S * kv_bytes_per_token * ops_per_byte / (2.0 * active_params)
        tot = np.maximum(comp, kv)
        price = np.where(S >= price_step, price_ratio, 1.0)
        for line, yy in ((self.l_c, comp), (self.l_kv, kv), (self.l_t, tot), (self.l_p, price)):
            line.set_data(S, yy)
        ax = self.ax
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(S.min(), S.max())
        ax.set_ylim(0.05, max(4.0, float(tot.max()) * 1.2))
        cross = 2.0 * active_params / (kv_bytes_per_token * ops_per_byte)
        if S.min() <= cross <= S.max():
            self.vline(cross, f"KV = compute\n S = {fmt_count(cross, 2)}", color=ROLE["kv"], y=0.97)
        ax.legend(loc="lower right", fontsize=9)
        self.numbers = {"crossover": cross}
        ax.set_title(f"N_act = {fmt_count(active_params)}, b_kv = {kv_bytes_per_token:,.0f} B, "
                     f"{ops_per_byte:,.0f} FLOP/byte")
        return (f"Log-log plot of cost per output token relative to short contexts against context: compute "
                f"per token is flat, KV reads per token rise linearly and overtake compute at "
                f"{fmt_count(cross, 2)} tokens for {fmt_count(active_params)} active parameters, "
                f"{kv_bytes_per_token:,.0f} bytes of KV per token and {ops_per_byte:,.0f} FLOP per byte; "
                f"a price sheet that steps up by {price_ratio:g}x at {fmt_count(price_step)} tokens is drawn "
                f"for comparison.")


def price_step_vs_context(active_params=100e9, kv_bytes_per_token=1667, ops_per_byte=600, contexts=None,
                          price_step=200_000, price_ratio=1.5):
    """The long-context price step read as a roofline crossover.

    Per sequence at a batch that amortises the weights, compute per output token is flat in
    context and KV reads per token grow as ``S b_kv / W``; cost follows their max, which leaves
    the flat floor at ``S = 2 N_act / (R b_kv)`` (``R`` = FLOP per byte). Draws both (relative to
    compute) and a price sheet stepping by ``price_ratio`` at ``price_step`` tokens.
    """
    return _build(_PriceStep, _params(locals()))


# ----- memory tiers and prompt caching --------------------------------------------------------

class _TierDrain(_Plot):
    figsize = (6.4, 3.9)

    def setup(self):
        pass

    def draw(self, tiers, lifetimes):
        from .memory import memory_tiers

        ts = list(tiers) if tiers is not None else memory_tiers()
        ax = self.ax
        y = np.arange(len(ts))
        d = np.array([t.drain_time for t in ts])
        cols = [ROLE["compute"], ROLE["weights"], ROLE["kv"], ROLE["capacity"]] * 3
        self.add(ax.barh(y, d, color=cols[:len(ts)], height=0.6))
        ax.set_yticks(y, [f"{t.name}\n({t.device.split('(')[0].strip()})" if len(t.device) < 36 else t.name
                          for t in ts], fontsize=9)
        ax.invert_yaxis()
        lo, hi = d.min() / 3, max(d.max(), max(v for _, v in lifetimes)) * 20
        ax.set_xlim(lo, hi)
        _time_axis(ax, lo, hi, keep=("10 ms", "1 s", "1 min", "1 h", "1 day"))
        ax.set_ylim(len(ts) - 0.4, -1.1)
        for yi, di in zip(y, d, strict=False):
            self.add(ax.text(di, yi, f" {_t(di)}", va="center", fontsize=10))
        for k, (name, v) in enumerate(lifetimes):
            self.add(ax.axvline(v, color=ROLE["cost"], ls="--", lw=1.3, zorder=0.5))
            self.add(ax.text(v, -0.75 + 0.3 * k, f" {name}", ha="left", va="center", fontsize=9.5,
                             color=ROLE["cost"]))
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("drain time: capacity / bandwidth")
        ax.set_title("How long each tier takes to read itself once")
        self.numbers = {t.name: t.drain_time for t in ts}
        return ("Horizontal bar chart, log scale, of drain time (capacity over bandwidth) per memory tier: "
                + ", ".join(f"{t.name} {_t(t.drain_time)}" for t in ts)
                + "; dashed lines mark the cache lifetimes " + ", ".join(n for n, _ in lifetimes) + ".")


def tier_drain_times(tiers=None, lifetimes=(("5-min cache", 300.0), ("1-h cache", 3600.0))):
    """Drain time (capacity / bandwidth) of each memory tier, with cache lifetimes marked."""
    return _build(_TierDrain, _params(locals()))


class _CacheCost(_Plot):
    figsize = (6.4, 4.4)

    def setup(self):
        self.ax.set_yscale("log")
        self.ax.yaxis.set_major_formatter(FuncFormatter(_usd_round))
        self.ax.yaxis.set_minor_formatter(NullFormatter())
        self.ax.set_xlabel("cache lifetime t (hold, then read once)")
        self.ax.set_ylabel("USD per million cached tokens")

    def draw(self, kv_bytes_per_token, tiers, lifetimes, remat_cost_per_million, marks):
        from .memory import cache_cost, memory_tiers

        ts = list(tiers) if tiers is not None else memory_tiers()
        T = _grid(lifetimes, 1e-3, 86400.0 * 7, n=200, integer=False)
        ax = self.ax
        cols = [ROLE["compute"], ROLE["weights"], ROLE["kv"], ROLE["capacity"]] * 3
        ys = []
        for t, c in zip(ts, cols, strict=False):
            yy = 1e6 * np.asarray(cache_cost(kv_bytes_per_token, T, t))
            ys.append(yy)
            self.add(ax.plot(T, yy, color=c, lw=1.8, label=t.name)[0])
        env = np.min(np.stack(ys), axis=0)
        self.add(ax.plot(T, env, color=ROLE["total"], lw=4, alpha=0.25, label="cheapest tier")[0])
        allv = np.concatenate(ys)
        if remat_cost_per_million is not None:
            allv = np.concatenate([allv, [remat_cost_per_million]])
        ax.set_xlim(T.min(), T.max())
        _time_axis(ax, T.min(), T.max())
        lo = max(float(np.min(env)) / 3, 1e-9)
        ax.set_ylim(lo, float(allv.max()) * 3)
        self.add(ax.legend(loc="upper left", fontsize=9, ncol=1))
        for name, v in marks:
            self.vline(v, name, color=PALETTE["grey"], y=0.97, ls="--")
        if remat_cost_per_million is not None:
            self.hline(remat_cost_per_million, f"recompute (prefill): {fmt_usd(remat_cost_per_million)}/M",
                       color=ROLE["cost"], x=0.99, ha="right", va="bottom", ls="-")
        ax.set_title(f"Holding a prompt cache at {kv_bytes_per_token:,.0f} B of KV per token")
        best = {n: ts[int(np.argmin([1e6 * float(cache_cost(kv_bytes_per_token, v, t)) for t in ts]))].name
                for n, v in marks}
        self.numbers = {"cheapest": best}
        return ("Log-log plot of the cost per million cached tokens of holding a prompt cache and reading it "
                "once, against its lifetime, for the HBM, DRAM, flash and disk tiers: each curve is flat "
                "(paying for bandwidth) up to its drain time, then rises (paying for capacity); the cheapest "
                "tier is " + ", ".join(f"{b} for a {n}" for n, b in best.items())
                + (f"; recomputing the prompt costs {fmt_usd(remat_cost_per_million)} per million tokens"
                   if remat_cost_per_million is not None else "") + ".")


def cache_cost_vs_lifetime(kv_bytes_per_token, tiers=None, lifetimes=None, remat_cost_per_million=None,
                           marks=(("5 min", 300.0), ("1 h", 3600.0))):
    """Cost of holding a prompt cache for a lifetime and reading it back once, per memory tier.

    Each tier's curve is :func:`llmmath.memory.cache_cost` per million tokens, a roofline in the
    lifetime with its knee at the tier's drain time; the thick line is the cheapest tier.
    ``remat_cost_per_million`` draws the cost of recomputing the prompt instead (a prefill).
    """
    return _build(_CacheCost, _params(locals()))


# ----- mixture of experts and pipelines -------------------------------------------------------

class _MoeWeights(_Plot):
    def setup(self):
        ax = self.ax
        self.l, = ax.plot([], [], color=ROLE["weights"], lw=2.5, label="weights read per step")
        ax.legend(loc="upper left")
        _set_log(ax, x=_fmt_batch, y=_b)
        ax.set_xlabel("batch B (tokens per step)")
        ax.set_ylabel("weight bytes read per chip per step (B)")

    def draw(self, model, chip, batches, expert_parallel, weight_bytes, mark_batch):
        B = _grid(batches, 1, 16384)
        ep = float(expert_parallel)
        y = model.weight_params_read(B) * weight_bytes / ep * np.ones_like(B)
        self.l.set_data(*_mask(B, y))
        total = model.total_params * weight_bytes / ep
        ax = self.ax
        ax.set_xlim(B.min(), B.max())
        ax.set_ylim(*_loglim(np.concatenate([y, [total]]), pad=1.5))
        self.hline(total, f"all weights: {_b(total)}", color=ROLE["total"], x=0.99, va="bottom")
        half = None
        if model.is_moe:
            E, k = model.n_experts, model.experts_per_token
            if k < E:
                half = math.log(0.5) / math.log1p(-k / E)
                if B.min() <= half <= B.max():
                    self.vline(half, f"half the experts\n touched: B = {half:,.0f}", y=0.6)
        else:
            self.note("dense model: every weight is read at every batch")
        t1 = float(model.weight_params_read(1.0)) * weight_bytes / ep / chip.hbm_bandwidth
        with self.marking():
            if mark_batch is not None:
                b = float(mark_batch)
                v = float(model.weight_params_read(b)) * weight_bytes / ep
                self.point(b, v, f"B={b:g}: {_b(v)}")
                self.numbers = {"weights_read": v}
        ax.set_title(f"{model.name}: weights read per step, {ep:g}-way expert parallel on {chip.name}")
        self.numbers.update(half_experts_batch=half, all_weights=total)
        return (f"Log-log plot of the weight bytes each of {ep:g} chips reads per decode step of "
                f"{model.name} against batch: {_b(y[0])} at batch {B[0]:g} (a {_t(t1)} read on {chip.name}) "
                f"rising toward all {_b(total)} as the batch touches every expert"
                + (f", half of them by batch {half:,.0f}." if half else "."))


def moe_weights_vs_batch(model, chip, batches=None, expert_parallel=1, weight_bytes=2, mark_batch=None):
    """Weight bytes read per chip per decode step against batch for an MoE model.

    With ``B`` tokens routed ``k`` of ``E``, ``E (1 - (1 - k/E)^B)`` distinct experts are touched
    per layer, so the read grows from the shared weights plus k experts toward all weights.
    Annotates the batch at which half the experts are touched. ``expert_parallel`` divides the
    bytes over chips.
    """
    return _build(_MoeWeights, _params(locals()))


class _MemoryPerChip(_Plot):
    def setup(self):
        ax = self.ax
        self.l_w, = ax.plot([], [], "o-", color=ROLE["weights"], label="weights")
        self.l_kv, = ax.plot([], [], "o-", color=ROLE["kv"], label="KV cache")
        self.l_t, = ax.plot([], [], "-", color=ROLE["total"], lw=3, alpha=0.55, label="total")
        ax.legend(loc="upper right")
        _set_log(ax, x=lambda v: f"{v:g}", y=_b)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("pipeline stages P (count)")
        ax.set_ylabel("HBM per chip (B)")

    def draw(self, model, chip, expert_parallel, stages, micro_batch, context, weight_bytes, kv_bytes,
             mark_stages):
        from .parallel import pipeline_memory_per_chip

        ctx, cnote = _context(model, context)
        P = _grid(stages if stages is not None else 2.0 ** np.arange(0, 7), 1, 64)
        mem = pipeline_memory_per_chip(model, float(micro_batch), ctx, float(expert_parallel), P,
                                       weight_bytes=weight_bytes, kv_bytes=kv_bytes)
        w = np.broadcast_to(mem.weights, P.shape)
        kv = np.broadcast_to(mem.kv, P.shape)
        tot = np.broadcast_to(mem.total, P.shape)
        self.l_w.set_data(*_mask(P, w))
        self.l_kv.set_data(*_mask(P, kv))
        self.l_t.set_data(*_mask(P, tot))
        ax = self.ax
        ax.set_xlim(P.min() / 1.3, P.max() * 1.3)
        ax.set_ylim(*_loglim(np.concatenate([w, kv, tot, [chip.hbm_capacity]]), pad=1.5))
        self.hline(chip.hbm_capacity, f"{chip.name} HBM: {_b(chip.hbm_capacity)}", color=ROLE["capacity"],
                   x=0.01, ha="left", ls="-")
        fit = P[tot <= chip.hbm_capacity]
        pfit = float(fit[0]) if fit.size else None
        if pfit is not None:
            self.vline(pfit, f"fits from P = {pfit:g}", color=ROLE["capacity"], y=0.3)
        elif kv[0] > chip.hbm_capacity:
            self.note("KV cache alone exceeds a chip: pipelining does not shrink it")
        with self.marking():
            if mark_stages is not None:
                mp = float(mark_stages)
                mm = pipeline_memory_per_chip(model, float(micro_batch), ctx, float(expert_parallel), mp,
                                              weight_bytes=weight_bytes, kv_bytes=kv_bytes)
                self.point(mp, mm.total, f"P={mp:g}: {_b(mm.total)}")
                self.numbers = {"weights": mm.weights, "kv": mm.kv, "total": mm.total,
                                "batch_in_flight": mm.batch_in_flight}
        ax.set_title(_title(f"{model.name}: {float(expert_parallel):g}-way EP x P stages, micro-batch "
                            f"{float(micro_batch):g}, context {_n(ctx)}", cnote))
        self.numbers.update(fits_from=pfit)
        return (f"Log-log plot of HBM per chip against pipeline stages for {model.name} with "
                f"{float(expert_parallel):g}-way expert parallelism: weights per chip fall from {_b(w[0])} as 1/P "
                f"while the KV cache per chip stays at {_b(kv[0])}; "
                + (f"the total fits a {chip.name} from P = {pfit:g}." if pfit else
                   f"the total never fits a {chip.name} in this range."))


def memory_per_chip(model, chip, expert_parallel=8, stages=None, micro_batch=64, context=4096,
                    weight_bytes=2, kv_bytes=2, mark_stages=None):
    """HBM per chip (weights, KV cache, total) against pipeline stages P for an EP degree E.

    Keeping P stages busy needs P micro-batches in flight, so per chip
    ``N_tot b_w / (E P) + b kv(S) / E``: pipelining divides the weights, not the KV cache.
    Annotates the first P where the total fits the chip. ``stages`` default 1, 2, 4 ... 64.
    """
    return _build(_MemoryPerChip, _params(locals()))


# ----- training -------------------------------------------------------------------------------

class _TrainingTime(_Plot):
    def setup(self):
        ax = self.ax
        self.l, = ax.plot([], [], color=ROLE["compute"], lw=2.5, label="training time (ideal scaling)")
        ax.legend(loc="upper right")
        _set_log(ax, x=lambda v: fmt_count(v, 2), y=_fmt_days)
        ax.set_xlabel("chips n (count)")
        ax.set_ylabel("training time (days)")

    def draw(self, model, tokens, chip, chips_range, mfu, dtype, mark_chips):
        from .training import training_flops, training_memory, training_time

        dt, dnote = _dtype(chip, dtype)
        n = _grid(chips_range, 8, 65536, n=40)
        days = np.asarray(training_time(model, tokens, chip, n, mfu, dtype=dt)) / 86400.0
        self.l.set_data(*_mask(n, days))
        ax = self.ax
        ax.set_xlim(n.min(), n.max())
        ax.set_ylim(*_loglim(days, pad=1.5))
        for d, lab in ((7, "1 week"), (30, "1 month"), (90, "3 months")):
            if ax.get_ylim()[0] < d < ax.get_ylim()[1]:
                self.hline(d, lab, color=PALETTE["grey"], x=0.01, ha="left", ls=":")
        state = training_memory(model)
        need = math.ceil(state / chip.hbm_capacity)
        if need > n.min():
            self.nofit(n.min(), min(need, n.max()), "")
            self.add(ax.text(0.02, 0.04, f"training state (16 B/param)\nneeds >= {need:,} chips",
                             transform=ax.transAxes, fontsize=9, color="#444444"))
        flops = training_flops(model, tokens)
        with self.marking():
            if mark_chips is not None:
                mc = float(mark_chips)
                d = float(training_time(model, tokens, chip, mc, mfu, dtype=dt)) / 86400.0
                self.point(mc, d, f"{mc:,.0f} chips: {_fmt_days(d)} days")
                self.numbers = {"days": d}
        name = model.name if hasattr(model, "name") else f"{fmt_count(model)}-parameter model"
        ax.set_title(_title(f"{name}, {fmt_count(tokens)} tokens on {chip.name} at MFU {mfu:.0%}", dnote))
        self.numbers.update(flops=flops, chips_for_state=need)
        return (f"Log-log plot of training time in days against chip count for {name} on "
                f"{fmt_count(tokens)} tokens ({fmt_si(flops, 'FLOP')}) on {chip.name} at {mfu:.0%} MFU: "
                f"{_fmt_days(days[0])} days on {n[0]:,.0f} chips, {_fmt_days(days[-1])} days on {n[-1]:,.0f}.")


def training_time_vs_chips(model, tokens, chip, chips_range=None, mfu=0.4, dtype="bf16", mark_chips=None):
    """Training time (days) against chip count (log-log): ``6 N_act D / (n C MFU)``.

    Reference lines at a week, a month and three months; greys out chip counts too few to hold
    the training state (16 B per parameter, activations excluded). ``chips_range`` default 8..65536.
    """
    return _build(_TrainingTime, _params(locals()))
