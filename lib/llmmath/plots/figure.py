"""`BookFigure`, the `builder` decorator that makes a figure builder from a drawing function,
and :func:`render_rgba`.

A builder is one function ``def name(p, model, chip, ..., mark_batch=None)`` decorated with
:func:`builder`: ``p`` is a :class:`Drawing` (the axes ``p.ax``, the annotation helpers, and
``p.numbers``) and the function returns the figure's alt text. The decorator gives the public
function its signature (the drawing function's, without ``p``, plus ``ax=``), makes the figure,
and returns a :class:`BookFigure` whose ``update(**changes)`` redraws it in place with some
arguments changed (used by :mod:`llmmath.widgets` and :mod:`llmmath.frames`, so the live
explorer, the kernel-free frames and the static figure all come from one builder).

Artists a ``setup`` function makes persist across updates (lines that get ``set_data``); every
artist the drawing function adds is removed and remade by an update.
"""

from __future__ import annotations

import functools
import inspect
import math
from contextlib import contextmanager

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import chips as _chips
from .. import models as _models
from .labels import flip_ha, note, noted, place, point_candidates, settle_legend
from .style import NOFIT, PALETTE, SMALL, STYLE, house_style, new_figure

__all__ = ["BookFigure", "render_rgba"]


class BookFigure(Figure):
    """A matplotlib ``Figure`` made by a builder of :mod:`llmmath.plots`.

    - ``alt_text``: one sentence saying what the figure shows, with its key numbers (frames use
      it for ``alt``; paste it into a figure directive).
    - ``numbers``: the key numbers the figure shows (critical batch, floor, marked point ...),
      computed by the same calls as the drawing, for explorers' panels and tests.
    - ``builder``: the builder's name; ``drawing``: its ``Drawing`` (the redraw state).
    - ``update(**changes)``: redraw in place with some of the builder's arguments changed;
      returns the figure. (``update(props_dict)`` is matplotlib's ``Artist.update``.)
    """

    alt_text: str = ""
    builder: str = ""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.alt_text = ""
        self.numbers: dict = {}
        self.builder = ""
        self.drawing: Drawing | None = None

    def __repr__(self):  # the notebooks' text outputs read "<Figure size ...>", as for any figure
        return super().__repr__().replace(type(self).__name__, "Figure", 1)

    def update(self, props=None, /, **changes):
        if props is not None:  # matplotlib's Artist.update(dict)
            return super().update(props)
        if self.drawing is None:
            raise TypeError("update: this figure was not made by an llmmath.plots builder")
        self.drawing.update(**changes)
        return self


class Drawing:
    """One drawing in an Axes, redrawn by :meth:`update`: the state a builder draws with.

    ``p.ax`` and ``p.fig`` are the axes and figure; ``p.params`` the builder's arguments;
    ``p.numbers`` what the drawing function reports; ``p.first`` is true on the first draw.
    """

    def __init__(self, fig, ax, draw, setup=None, marked=(), name=""):
        self.fig, self.ax = fig, ax
        self._draw, self._setup, self.marked, self.name = draw, setup, tuple(marked), name
        self.params: dict = {}
        self.numbers: dict = {}
        self.alt_text = ""
        self.first = True
        self._passes = 0
        self._legend_is_marked = False
        self._dyn: list = []
        self._kept: set = set()
        self._mark_artists: list = []
        self._marking = False
        self._mark_text = None
        self._bg = None
        self._bg_key = None
        if setup is not None:
            with house_style():
                setup(self)

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

    def add(self, artist):
        """Register an artist the drawing made (inside :meth:`marking`: a marked-point artist)."""
        if self._marking:
            self._mark_artists.append(artist)
        return artist

    def keep(self, artist):
        """Keep an artist the drawing made across updates (it updates it itself)."""
        self._kept.add(id(artist))
        return artist

    def _children(self):
        ax = self.ax
        kids = list(ax.get_children())
        return kids

    def update(self, **changes):
        """Merge ``changes`` into the arguments and redraw. TypeError for an unknown name."""
        unknown = set(changes) - set(self.params)
        if unknown and self.params:
            raise TypeError(f"{self.name}: unknown argument(s) {sorted(unknown)}; "
                            f"allowed: {sorted(self.params)}")
        self.params.update(changes)
        # a chip or model by name or object
        if isinstance(self.params.get("chip"), str):
            self.params["chip"] = _chips.get(self.params["chip"])
        if isinstance(self.params.get("model"), str):
            self.params["model"] = _models.get(self.params["model"])
        was_outside = noted(self.ax, "outside_legend") is not None
        height = self.fig.get_figheight()
        mark_only = bool(changes) and all(k.startswith("mark_") or k in self.marked
                                          for k in changes)
        alt = self._render()
        now_outside = noted(self.ax, "outside_legend") is not None
        engine = self.fig.get_layout_engine()
        if (self._passes == 1 or was_outside != now_outside) and engine is not None:
            # Labels are placed in the axes' pixel frame: settle the layout (which the legend,
            # the title and the tick labels change), then place them again in the final frame.
            engine.execute(self.fig)
            alt = self._render()
        if mark_only and self.fig.get_figheight() != height:
            # moving only the marked point keeps the figure's size (frames of one slider match)
            self.fig.set_figheight(height)
        if self._mark_text:
            alt = f"{alt} Marked: {self._mark_text.replace(chr(10), ' ')}."
        self.alt_text = alt
        if isinstance(self.fig, BookFigure) and self.fig.drawing is self:
            self.fig.alt_text = alt
            self.fig.numbers = dict(self.numbers)
        return self.fig

    def _render(self):
        """One drawing pass: remove the previous pass's artists, draw, settle the legend."""
        self._passes += 1
        self._mark_text = None
        with house_style():
            for a in self._dyn + self._mark_artists:
                try:
                    a.remove()
                except (ValueError, AttributeError, NotImplementedError):
                    pass  # a legend already replaced
            self._dyn, self._mark_artists = [], []
            if not self.first:
                self.ax.relim()
            before = {id(a) for a in self._children()}
            self._legend_is_marked = False
            try:
                alt = self._draw(self, **self.params)
            except Exception:  # leave no half-drawn artists behind for the next update
                for a in self._children():
                    if id(a) not in before and id(a) not in self._kept:
                        a.remove()
                for a in self._mark_artists:
                    try:
                        a.remove()
                    except (ValueError, AttributeError, NotImplementedError):
                        pass
                self._mark_artists = []
                raise
            marks = {id(a) for a in self._mark_artists}
            self._dyn = [a for a in self._children() if id(a) not in before
                         and id(a) not in marks and id(a) not in self._kept]
            settle_legend(self.ax)  # after: the legend it settles is its own to replace
            if self._legend_is_marked:  # it names the marked point: redrawn with it
                leg = noted(self.ax, "outside_legend") or self.ax.get_legend()
                if leg is not None:
                    self._mark_artists.append(leg)
        self.first = False
        return alt

    # annotation helpers (all remade per draw)
    def vline(self, x, text, color=PALETTE["black"], y=0.97, ha="left", ls=":"):
        """A vertical reference line; its label goes on the requested side (`ha`) at height `y`
        unless it would leave the axes or cover another label or a line: then the other side."""
        ax = self.ax
        line = self.add(ax.axvline(x, color=color, ls=ls, lw=1.3, zorder=1))
        if text:
            rows = [r.strip() for r in text.split("\n")]

            def make(c):
                side, yy = c
                return ax.annotate("\n".join(rows), (x, yy), xycoords=ax.get_xaxis_transform(),
                                   xytext=(4 if side == "left" else -4, 0),
                                   textcoords="offset points", ha=side, va="top",
                                   fontsize=SMALL, color=color)

            heights = [y] + [h for h in (0.8, 0.62, 0.45, 0.3) if abs(h - y) > 0.05]
            cands = [(side, h) for h in heights for side in (ha, flip_ha(ha))]
            self.add(place(ax, make, cands, exclude=[line]))

    def hline(self, y, text, color=PALETTE["black"], x=0.99, ha="right", va="bottom", ls="--"):
        """A horizontal reference line; its label goes where asked (`x`, `ha`, `va`) unless it
        would cover another label or a line: then the other end, then the other side."""
        ax = self.ax
        line = self.add(ax.axhline(y, color=color, ls=ls, lw=1.2, zorder=1))
        if text:
            def make(c):
                xx, hh, vv = c
                return ax.annotate(text, (xx, y), xycoords=ax.get_yaxis_transform(),
                                   xytext=(0, 3 if vv == "bottom" else -3),
                                   textcoords="offset points", ha=hh, va=vv, fontsize=SMALL,
                                   color=color)

            other = {"top": "bottom", "bottom": "top"}.get(va, va)
            cands = [(x, ha, va), (1.0 - x, flip_ha(ha), va), (x, ha, other),
                     (1.0 - x, flip_ha(ha), other)]
            for xx in (0.5, 0.7, 0.3):  # then along the line, above and below
                cands += [(xx, "center", va), (xx, "center", other)]
            self.add(place(ax, make, cands, exclude=[line]))

    def label(self, x, y, text, candidates, color=PALETTE["black"], fontsize=SMALL, box=True,
              exclude=()):
        """Annotate (x, y) at the first of `candidates` ((dx, dy, ha, va) offsets in points) that
        stays inside the axes, off other labels and off the lines (see :func:`labels.place`)."""
        ax = self.ax
        bbox = dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85) if box else None

        def make(c):
            dx, dy, ha, va = c
            return ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha,
                               va=va, fontsize=fontsize, color=color, zorder=6, bbox=bbox)

        return self.add(place(ax, make, candidates, exclude=exclude))

    def point(self, x, y, text, color=PALETTE["black"], offset=(-8, 10), ha="right"):
        """A dot at (x, y) with a label placed clear of the rest."""
        ax = self.ax
        dot = self.add(ax.plot([x], [y], "o", ms=7, color=color, mfc=color, mec="white", mew=1.5,
                               zorder=5)[0])
        if self._marking:
            self._mark_text = text
        if text:
            t = self.label(x, y, text, point_candidates(offset, ha), color=color, exclude=[dot])
            if not noted(t, "clean", True):
                # no place beside the point is clear of the curves: name it in the legend
                t.remove()
                self._mark_artists = [a for a in self._mark_artists if a is not t]
                dot.set_label(text.replace("\n", " "))
                note(dot, legend=True)
                if self._marking:
                    self._legend_is_marked = True

    def note(self, text, loc=(0.02, 0.03), ha="left", va="bottom"):
        """A boxed note in axes coordinates (a warning such as "does not fit")."""
        self.add(self.ax.text(*loc, text, transform=self.ax.transAxes, ha=ha, va=va, fontsize=SMALL,
                              color=PALETTE["black"],
                              bbox=dict(boxstyle="round,pad=0.3", fc="#fff7e6",
                                        ec=PALETTE["orange"], lw=0.8)))

    def nofit(self, x0, x1, text="does not fit in HBM"):
        """A grey band from x0 to x1: configurations that do not fit in memory."""
        ax = self.ax
        band = self.add(ax.axvspan(x0, x1, color=NOFIT, alpha=0.6, lw=0, zorder=0,
                                   label=text or "_nofit"))
        note(band, legend=bool(text))  # named in the legend (settle_legend), never on the data


def builder(figsize=None, setup=None, marked=()):
    """Make a figure builder from ``draw(p, *args, **kwargs) -> alt text``.

    - ``figsize``: inches, or a function of the bound arguments (dict) for figures whose height
      grows with a list; default the house size.
    - ``setup(p)``: makes the artists that persist across updates (lines given new data).
    - ``marked``: arguments besides ``mark_*`` that only move the marked artists (the fast path
      of :func:`render_rgba`).

    The builder takes the drawing function's arguments plus ``ax=``: given an Axes it draws
    into it (in the house style) and returns the Axes; otherwise it returns a new
    :class:`BookFigure`.
    """
    def deco(draw):
        sig = inspect.signature(draw)
        params = list(sig.parameters.values())[1:]
        inner = sig.replace(parameters=params)
        name = draw.__name__

        @functools.wraps(draw)
        def build(*args, ax=None, **kwargs):
            bound = inner.bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            if ax is not None:
                with house_style():
                    p = Drawing(ax.figure, ax, draw, setup, marked, name)
                p.params = values
                p.update()
                return ax
            size = figsize(values) if callable(figsize) else figsize
            fig = new_figure(size or STYLE["figure.figsize"], BookFigure)
            with house_style():
                axes = fig.add_subplot()
                p = Drawing(fig, axes, draw, setup, marked, name)
            fig.drawing, fig.builder = p, name
            p.params = values
            p.update()
            return fig

        ax_param = inspect.Parameter("ax", inspect.Parameter.KEYWORD_ONLY, default=None)
        build.__signature__ = sig.replace(parameters=params + [ax_param])
        del build.__wrapped__  # help() and inspect show the public signature
        return build

    return deco


def render_rgba(fig) -> np.ndarray:
    """Draw `fig` into its Agg buffer and return the RGBA pixels (height x width x 4, a view).

    For a builder's figure whose only change since the last render is its marked point
    (``mark_*`` arguments), the cached background is restored and only the marker is drawn:
    a slider move then costs a few milliseconds instead of a full redraw.
    """
    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        canvas = FigureCanvasAgg(fig)
    plot = getattr(fig, "drawing", None)
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


# ----- data helpers ----------------------------------------------------------------------------

def mask(x, *ys):
    """Keep only points where x and every y are finite and positive (log axes)."""
    x = np.asarray(x, dtype=float)
    ys = [np.broadcast_to(np.asarray(y, dtype=float), x.shape) for y in ys]
    ok = np.isfinite(x) & (x > 0)
    for y in ys:
        ok &= np.isfinite(y) & (y > 0)
    return (x[ok], *[y[ok] for y in ys])


def try_value(fn, *args, **kwargs):
    """``fn(...)``, or None where it raises ValueError (no such point) or is not finite."""
    try:
        value = fn(*args, **kwargs)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    if value is None or not np.all(np.isfinite(value)):
        return None
    return value


def grid(values, lo, hi, n=64, integer=True):
    """The caller's sweep values (sorted, positive, finite), else ``n`` log-spaced points."""
    if values is not None:
        arr = np.unique(np.asarray(values, dtype=float).ravel())
        arr = arr[np.isfinite(arr) & (arr > 0)]
        if arr.size == 0:
            raise ValueError("no positive finite values to plot")
        return arr
    arr = np.geomspace(lo, hi, n)
    return np.unique(np.round(arr)) if integer else arr


def as_list(x, default):
    """A list of models or chips from one, a list, or names (None: ``default``)."""
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


def chip_of(chip):
    """A chip from a name or a :class:`~llmmath.chips.Chip`."""
    return _chips.get(chip) if isinstance(chip, str) else chip


def model_of(model):
    """A model from a name or a :class:`~llmmath.models.Model`."""
    return _models.get(model) if isinstance(model, str) else model


def log_interp(x, y1, y2):
    """x (log-interpolated) where the drawn curves y1 - y2 first turn from negative to >= 0;
    None if never. Marks a crossing of two curves the figure draws."""
    d = np.asarray(y1, float) - np.asarray(y2, float)
    idx = np.nonzero((d[:-1] < 0) & (d[1:] >= 0))[0]
    if idx.size == 0:
        return None
    i = idx[0]
    lx0, lx1 = math.log(x[i]), math.log(x[i + 1])
    f = -d[i] / (d[i + 1] - d[i])
    return math.exp(lx0 + f * (lx1 - lx0))


def refine_root(fn, lo, hi, iters=80):
    """x in [lo, hi] (log bisection) where ``fn`` changes sign, for a crossing the text quotes
    exactly (the drawn grid only brackets it); the grid's estimate if ``fn`` does not change
    sign there."""
    flo, fhi = fn(lo), fn(hi)
    if not (np.isfinite(flo) and np.isfinite(fhi)) or flo * fhi > 0:
        return math.sqrt(lo * hi)
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        fm = fn(mid)
        if fm * flo > 0:
            lo, flo = mid, fm
        else:
            hi = mid
    return math.sqrt(lo * hi)


def new_axes(figsize=None):
    """A house-style :class:`BookFigure` with one Axes, for builders drawn once."""
    fig = new_figure(figsize or STYLE["figure.figsize"], BookFigure)
    with house_style():
        ax = fig.add_subplot()
    return fig, ax
