"""Tick formatters, axis helpers and the label-placement engine shared by every builder.

Formatters turn SI values into short human labels (``fmt_batch``, ``fmt_days``, ``fmt_tokens_binary``
...). :func:`place` is the one label placer: it tries candidate positions for a label and keeps
the first that stays inside the axes without covering another label, the legend or a line.
:func:`place_labels` labels a scatter of points (several points at one place share a label).
Labels are placed before the constrained layout runs, so positions are judged in the axes'
current pixel frame: the layout later scales the axes a little, not the labels' offsets.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from ..units import fmt_bytes, fmt_count, fmt_si, fmt_time, fmt_usd
from .style import PALETTE

__all__ = ["label_si", "fmt_batch", "fmt_days", "fmt_n", "fmt_t", "fmt_b", "fmt_usd_tick",
           "fmt_usd_round", "fmt_tokens_binary", "set_log", "time_axis", "loglim", "with_notes",
           "chips_label", "place", "point_candidates", "flip_ha", "place_labels", "iso_lines"]


# ----- tick and label formatters ---------------------------------------------------------------

def label_si(value, unit: str) -> str:
    """Short SI label for annotations."""
    return fmt_si(value, unit)


def _safe(fmt, v, *args):
    try:
        return fmt(v, *args)
    except Exception:
        return ""


def fmt_batch(v, _=None):
    """A batch: ``1``, ``64``, ``4.1k``; below 1 three significant digits."""
    return fmt_count(v, 3) if v >= 1 else f"{v:.3g}"


def fmt_days(v, _=None):
    """Days: whole days from 10 on, two significant digits below."""
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def fmt_n(v):
    """A token count for titles and alt text: 4,096 rather than 4.1k below a million."""
    v = float(v)
    return f"{v:,.0f}" if v < 1e6 else fmt_count(v, 3)


def fmt_t(v):
    """A time, two significant digits (``5.2 ms``)."""
    return fmt_time(v, 2)


def fmt_b(v):
    """Bytes, two significant digits (``141 GB``)."""
    return fmt_bytes(v, 2)


def fmt_usd_tick(v):
    """USD, two significant digits."""
    return fmt_usd(v, 2)


def fmt_usd_round(v, _=None):
    """USD for a log axis: ``$3``, ``$0.05``."""
    if v >= 1:
        return f"${v:,.0f}"
    return "$" + f"{v:.6f}".rstrip("0")


def fmt_tokens_binary(v, _pos=None):
    """Tick label for a power-of-two token count: 1k = 1024 tokens, 1M = 1024^2."""
    if v >= 1024**2:
        return f"{v / 1024**2:g}M"
    if v >= 1024:
        return f"{v / 1024:g}k"
    return f"{v:g}"


def with_notes(main, *notes):
    """A title with its notes (number format fallback, capped context ...) in brackets below."""
    notes = [n for n in notes if n]
    return main + (f"\n({'; '.join(notes)})" if notes else "")


def chips_label(n_chips, chip):
    """``8x H100-SXM``, or the chip's name for one chip."""
    n = float(n_chips)
    return f"{n:g}x {chip.name}" if n != 1 else chip.name


# ----- axes ------------------------------------------------------------------------------------

def set_log(ax, x=None, y=None):
    """Log x and/or y axis whose major ticks use the formatter given (``x``, ``y``)."""
    if x is not None:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _safe(x, v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if y is not None:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _safe(y, v)))
        ax.yaxis.set_minor_formatter(NullFormatter())


def loglim(values, pad=1.25, min_decades=1.0):
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


_TIME_TICKS = [(1e-3, "1 ms"), (1e-2, "10 ms"), (0.1, "0.1 s"), (1.0, "1 s"), (10.0, "10 s"),
               (60.0, "1 min"), (600.0, "10 min"), (3600.0, "1 h"), (86400.0, "1 day"),
               (7 * 86400.0, "1 week")]


def time_axis(ax, lo, hi, keep=("1 ms", "10 ms", "1 s", "1 min", "1 h", "1 day")):
    """Log time axis with round human ticks (ms, s, min, h, day) between lo and hi."""
    ax.set_xscale("log")
    ticks = [(v, t) for v, t in _TIME_TICKS if lo <= v <= hi and t in keep]
    ax.set_xticks([v for v, _ in ticks], [t for _, t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


# ----- label placement -------------------------------------------------------------------------
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


def flip_ha(ha):
    return {"left": "right", "right": "left"}.get(ha, ha)


def point_candidates(offset, ha, va="baseline"):
    """The requested offset first, then mirrored left-right, up-down, and both."""
    dx, dy = offset
    vflip = "top" if dy > 0 else "bottom"
    dyf = -dy if dy > 0 else max(6.0, -dy - 10.0)
    return [(dx, dy, ha, va), (-dx, dy, flip_ha(ha), va), (dx, dyf, ha, vflip), (-dx, dyf, flip_ha(ha), vflip)]


def place(ax, make, candidates, avoid_lines=True, exclude=()):
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


def iso_lines(ax, values, fmt, xlim, color=None):
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


def place_labels(ax, xs, ys, names, fontsize=8.5):
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

