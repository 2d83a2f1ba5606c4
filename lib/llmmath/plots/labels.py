"""Tick formatters, axis helpers and the label-placement engine shared by every builder.

Formatters turn SI values into short human labels (``fmt_batch``, ``fmt_days``,
``fmt_tokens_binary`` ...). :func:`place` is the one label placer: it tries candidate positions for
a label and keeps the first that stays inside the axes without covering another label, the legend or
a line.
:func:`place_labels` labels a scatter of points with it (several points at one place share a
label).
Labels are placed before the constrained layout runs, so positions are judged in the axes'
current pixel frame: the layout later scales the axes a little, not the labels' offsets.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
from matplotlib import patheffects
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..units import fmt_bytes, fmt_count, fmt_si, fmt_time, fmt_usd
from .style import PALETTE, SMALL, is_legend_outside

__all__ = ["label_si"]


#: What the label machinery notes about an artist, an Axes or a figure (a line is a guide, a
#: band belongs in the legend, a label found a clean place, a legend was moved outside ...):
#: kept here, by the library, rather than as attributes on matplotlib's objects, and forgotten
#: with the object.
NOTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def note(obj, **values):
    """Note ``values`` about ``obj`` (see :data:`NOTES`)."""
    NOTES.setdefault(obj, {}).update(values)


def noted(obj, key, default=None):
    """What was noted about ``obj`` under ``key`` (``default`` if nothing)."""
    d = NOTES.get(obj)
    return default if d is None else d.get(key, default)


#: A white outline around label text, so a guide line it crosses breaks under it.
HALO = [patheffects.withStroke(linewidth=3, foreground="white")]


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


def fmt_params(v, digits=3):
    """A parameter count in words, never "B" (bytes and batch own that letter): ``70.6 bn``."""
    v = float(v)
    for scale, suffix in ((1e12, " tn"), (1e9, " bn"), (1e6, " M"), (1e3, " k")):
        if v >= scale:
            return f"{v / scale:.{digits}g}{suffix}"
    return f"{v:.{digits}g}"


def fmt_days(v, _=None):
    """Days: whole days from 10 on, two significant digits below, ``10k`` from 10,000."""
    return fmt_count_tick(v) if v >= 10_000 else f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def fmt_count_tick(v, _=None):
    """A count on a log axis: ``1``, ``100``, ``1k``, ``10M``, ``100T``, then ``1P`` (never
    ``1000T`` or ``10000``)."""
    v = float(v)
    if v >= 1e15:
        return f"{v / 1e15:.2g}P"
    return fmt_count(v, 2)


def fmt_sci(v, _=None):
    """A large number as a power of ten in mathtext (``10^26``), ``3 × 10^26`` off the decades;
    never ``1e26``."""
    v = float(v)
    if v <= 0 or not np.isfinite(v):
        return f"{v:g}"
    exp = int(np.floor(np.log10(v) + 1e-9))
    mant = v / 10.0**exp
    if abs(mant - round(mant)) < 1e-6 and round(mant) == 1:
        return f"$10^{{{exp}}}$"
    return f"${mant:.2g} \\times 10^{{{exp}}}$"


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


def fmt_tokens(v, digits=3, _pos=None):
    """A token count: a power of two from 1,024 up as ``4k``, ``64k``, ``1M`` (binary, as context
    windows are named), any other count with a decimal suffix (``fmt_count``)."""
    v = float(v)
    if v >= 1024 and v.is_integer() and int(v) & (int(v) - 1) == 0:
        return fmt_tokens_binary(v)
    return fmt_count(v, digits)


def with_notes(main, *notes):
    """A title with its notes (number format fallback, capped context ...) in brackets below."""
    notes = [n for n in notes if n]
    return main + (f"\n({'; '.join(notes)})" if notes else "")


def chips_label(n_chips, chip):
    """``8x H100-SXM``, or the chip's name for one chip."""
    n = float(n_chips)
    return f"{n:g}× {chip.name}" if n != 1 else chip.name


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


def time_axis(ax, lo, hi, keep=("1 ms", "10 ms", "1 s", "1 min", "1 h", "1 day"), axis="x"):
    """Log time axis (``axis`` "x" or "y") with round human ticks (ms, s, min, h, day) between
    lo and hi."""
    getattr(ax, f"set_{axis}scale")("log")
    ticks = [(v, t) for v, t in _TIME_TICKS if lo <= v <= hi and t in keep]
    getattr(ax, f"set_{axis}ticks")([v for v, _ in ticks], [t for _, t in ticks])
    getattr(ax, f"{axis}axis").set_minor_formatter(NullFormatter())


# ----- label placement -------------------------------------------------------------------------
def _renderer(fig):
    try:
        return fig.canvas.get_renderer()
    except Exception:  # pragma: no cover - a canvas without a renderer: keep the first choice
        return None


def _box(artist, renderer):
    bb = artist.get_window_extent(renderer)
    patch = getattr(artist, "get_bbox_patch", lambda: None)()
    if patch is not None and patch.get_visible():  # a label's white box hides what it covers
        artist.update_bbox_position_size(renderer)
        pb = patch.get_window_extent(renderer)
        return (min(bb.x0, pb.x0), min(bb.y0, pb.y0), max(bb.x1, pb.x1), max(bb.y1, pb.y1))
    return (bb.x0, bb.y0, bb.x1, bb.y1)


def text_corners(t, renderer):
    """The four display-pixel corners of a text's own box, turned with it: its window extent is
    the axis-aligned box around that, far too large for a label turned along a slope."""
    bb = t.get_window_extent(renderer)
    theta = math.radians(t.get_rotation())
    c, s = abs(math.cos(theta)), abs(math.sin(theta))
    if s < 1e-6:
        return np.array([[bb.x0, bb.y0], [bb.x1, bb.y0], [bb.x1, bb.y1], [bb.x0, bb.y1]])
    if abs(c * c - s * s) > 0.1:  # its own width and height, from the axis-aligned extent
        w = (bb.width * c - bb.height * s) / (c * c - s * s)
        h = (bb.height * c - bb.width * s) / (c * c - s * s)
    else:  # near 45 degrees: the height of its lines
        h = t.get_fontsize() * t.figure.dpi / 72.0 * 1.2 * (t.get_text().count("\n") + 1)
        w = (bb.width - h * s) / c
    w, h = max(w, 0.0), max(h, 0.0)
    u = np.array([math.cos(theta), math.sin(theta)])
    v = np.array([-u[1], u[0]])
    mid = np.array([(bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2])
    return np.array([mid + a * u * w / 2 + b * v * h / 2
                     for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))])


def _boxes(t, renderer):
    """Axis-aligned pixel boxes covering a text: its extent, or for a turned text a chain of
    small boxes along it (so a label along a slope does not claim the whole square around it)."""
    if abs(math.sin(math.radians(t.get_rotation()))) < 1e-6:
        return [_box(t, renderer)]
    p = text_corners(t, renderer)
    start, end = (p[0] + p[3]) / 2, (p[1] + p[2]) / 2  # mid-left, mid-right
    h = float(np.hypot(*(p[3] - p[0])))
    n = max(1, math.ceil(float(np.hypot(*(end - start))) / max(h, 1.0)))
    half = h / 2 * 0.85
    return [(c[0] - half, c[1] - half, c[0] + half, c[1] + half)
            for c in (start + (end - start) * (i + 0.5) / n for i in range(n))]


def _overlap(a, b, pad=1.0):
    return not (a[2] < b[0] - pad or a[0] > b[2] + pad or a[3] < b[1] - pad or a[1] > b[3] + pad)


def _crosses(p0, p1, box):
    """Whether the segment p0-p1 enters the box (x0, y0, x1, y1) (Liang-Barsky clipping)."""
    (x0, y0), (x1, y1) = p0, p1
    dx, dy = x1 - x0, y1 - y0
    t0, t1 = 0.0, 1.0
    for q_p, q in ((-dx, x0 - box[0]), (dx, box[2] - x0), (-dy, y0 - box[1]), (dy, box[3] - y0)):
        if q_p == 0:
            if q < 0:
                return False
            continue
        r = q / q_p
        if q_p < 0:
            t0 = max(t0, r)
        else:
            t1 = min(t1, r)
        if t0 > t1:
            return False
    return True


def _clip_box(box, ax):
    """The part of `box` inside the axes (lines are clipped to them), or None."""
    if ax is None:
        return box
    a = ax.bbox
    out = (max(box[0], a.x0), max(box[1], a.y0), min(box[2], a.x1), min(box[3], a.y1))
    return out if out[0] < out[2] and out[1] < out[3] else None


def _line_hits(box, lines, pad=1.0, collections=()):
    """Whether any of `lines` (drawn segments, with their width, or markers) or the markers of
    `collections` (scatter plots) passes through the pixel box (grown by `pad`)."""
    for ln in lines:
        if not ln.get_visible() or noted(ln, "guide", False):
            continue
        xy = np.asarray(ln.get_xydata(), dtype=float)
        if xy.size == 0:
            continue
        area = _clip_box(box, ln.axes)
        if area is None:
            continue
        with np.errstate(all="ignore"):
            p = ln.get_transform().transform(xy)
        ok = np.all(np.isfinite(p), axis=1)
        dpi = ln.figure.dpi if ln.figure is not None else 100.0
        if ln.get_linestyle() not in ("None", "", " ", "none") and len(p) > 1:
            w = pad + 0.5 * ln.get_linewidth() * dpi / 72.0
            grown = (area[0] - w, area[1] - w, area[2] + w, area[3] + w)
            for i in range(len(p) - 1):
                if ok[i] and ok[i + 1] and _crosses(p[i], p[i + 1], grown):
                    return True
        if ln.get_marker() not in (None, "None", "", " ", "none"):
            r = pad + 0.5 * ln.get_markersize() * dpi / 72.0
            q = p[ok]
            if ((q[:, 0] >= area[0] - r) & (q[:, 0] <= area[2] + r) & (q[:, 1] >= area[1] - r)
                    & (q[:, 1] <= area[3] + r)).any():
                return True
    for c in collections:
        if not c.get_visible() or type(c).__name__ != "PathCollection" or not len(c.get_sizes()):
            continue
        off = np.asarray(c.get_offsets(), dtype=float)
        area = _clip_box(box, c.axes)
        if off.size == 0 or area is None:
            continue
        q = c.get_offset_transform().transform(off)
        r = pad + 0.5 * float(np.sqrt(np.max(c.get_sizes()))) * c.figure.dpi / 72.0
        if ((q[:, 0] >= area[0] - r) & (q[:, 0] <= area[2] + r) & (q[:, 1] >= area[1] - r)
                & (q[:, 1] <= area[3] + r)).any():
            return True
    return False


def flip_ha(ha):
    return {"left": "right", "right": "left"}.get(ha, ha)


def point_candidates(offset, ha, va="baseline"):
    """The requested offset first, then mirrored left-right, up-down, and both."""
    dx, dy = offset
    vflip = "top" if dy > 0 else "bottom"
    dyf = -dy if dy > 0 else max(6.0, -dy - 10.0)
    near = [(dx, dy, ha, va), (-dx, dy, flip_ha(ha), va), (dx, dyf, ha, vflip),
            (-dx, dyf, flip_ha(ha), vflip)]
    side = [(10, 0, "left", "center"), (-10, 0, "right", "center"), (0, 10, "center", "bottom"),
            (0, -10, "center", "top")]
    far = [(2 * a, 2 * b + (4 if b > 0 else -4), h, v) for a, b, h, v in near]
    # the four diagonal corners, the label's near corner at the point: a rising or falling line
    # through the point always leaves two of them clear (a multi-line label on a roofline)
    corner = [(6, -6, "left", "top"), (-6, 6, "right", "bottom"), (6, 6, "left", "bottom"),
              (-6, -6, "right", "top")]
    return near + side + far + corner


def place(ax, make, candidates, avoid_lines=True, exclude=(), avoid=(), pad=1.0, slack=1.0):
    """Make one label per candidate (``make(candidate) -> Text``) and keep the first that lies
    inside the axes (give or take ``slack`` pixels) without touching another label, the legend,
    the pixel boxes in ``avoid`` (markers) within ``pad`` pixels, or (``avoid_lines``) a line; if
    none is clean, the first that is inside and clear of labels, else the first. Returns the
    Text; :func:`noted` ``(text, "clean")`` says whether its place is clean. The one label
    placer: :func:`place_labels` and the annotation helpers of every builder use it."""
    renderer = _renderer(ax.figure)
    if renderer is None:
        return make(candidates[0])
    axbox = _box(ax, renderer)
    skip = set(map(id, exclude))
    taken = [_box(t, renderer) for t in ax.texts
             if t.get_visible() and t.get_text() and id(t) not in skip] + list(avoid)
    leg = ax.get_legend()
    if leg is not None and leg.get_visible():
        taken.append(_box(leg, renderer))
    lines = [ln for ln in ax.lines if id(ln) not in skip] if avoid_lines else []
    colls = [c for c in ax.collections if id(c) not in skip] if avoid_lines else []
    best, best_score = None, None
    for cand in candidates:
        t = make(cand)
        box = _box(t, renderer)
        inside = (box[0] >= axbox[0] - slack and box[2] <= axbox[2] + slack
                  and box[1] >= axbox[1] - slack and box[3] <= axbox[3] + slack)
        parts = _boxes(t, renderer)
        clash = any(_overlap(b, o, pad) for b in parts for o in taken)
        hits = any(_line_hits(b, lines, collections=colls) for b in parts)
        score = (not inside, clash, hits)
        clean = score == (False, False, False)
        note(t, clean=clean)
        if clean:
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
    """Diagonal lines y = v x on log-log axes, each labelled inside the plot near its upper end
    (or further down the line), beside the line rather than on it or on another."""
    color = color or PALETTE["grey"]
    xs = np.array(xlim)
    ylo, yhi = ax.get_ylim()
    guides = []
    for v in values:
        guide = ax.plot(xs, v * xs, color=color, lw=1.0, ls="--", zorder=0.8)[0]
        # a guide, like a grid line: labels may cross it (a white halo breaks it under them)
        note(guide, guide=True)
        guides.append(guide)
    for v, guide in zip(values, guides, strict=True):
        x_lo, x_hi = max(xlim[0], ylo / v), min(xlim[1], yhi / v)
        if x_hi <= x_lo:
            continue

        (x0, y0), (x1, y1) = ax.transData.transform([(x_lo, v * x_lo), (x_hi, v * x_hi)])
        angle = math.atan2(y1 - y0, x1 - x0)
        length = math.hypot(x1 - x0, y1 - y0)

        def make(c, v=v, x_lo=x_lo, x_hi=x_hi, angle=angle, length=length):
            # along the line, turned to its slope on screen, just above (side 1) or below it,
            # ending `back` pixels before the line leaves the axes (its upper end)
            back, side = c
            x_at = x_hi * (x_lo / x_hi) ** min(back / length, 1.0)
            up = (-2 * side * math.sin(angle), 2 * side * math.cos(angle))
            return ax.annotate(fmt(v), (x_at, v * x_at), xytext=up, textcoords="offset points",
                               ha="right", va="bottom" if side > 0 else "top",
                               rotation=math.degrees(angle),
                               rotation_mode="anchor", fontsize=SMALL, color=color,
                               path_effects=HALO)

        place(ax, make, [(back, side) for back in range(12, 460, 40)
                         for side in (1, -1)], exclude=[guide], slack=2)


def place_labels(ax, xs, ys, names, fontsize=SMALL):
    """Label points (several at one place share a label) with :func:`place`, trying offsets
    around each, then farther out with a leader line, and keeping the first that stays inside
    the axes and covers no marker, label or line."""
    markers = []
    for x, y in zip(xs, ys, strict=True):  # the markers themselves
        px, py = ax.transData.transform((x, y))
        markers.append((px - 8, py - 8, px + 8, py + 8))
    offsets = [(6, -3, "left", "top"), (6, 3, "left", "bottom"), (-6, 3, "right", "bottom"),
               (-6, -3, "right", "top"), (0, -9, "center", "top"), (0, 9, "center", "bottom"),
               (9, 0, "left", "center"), (-9, 0, "right", "center")]
    for r in (18, 30, 44):  # farther out, with a leader line, in 16 directions
        for k in range(16):
            a = 2 * math.pi * k / 16
            dx, dy = r * math.cos(a), r * math.sin(a)
            ha = "left" if dx > 3 else "right" if dx < -3 else "center"
            va = "bottom" if dy > 3 else "top" if dy < -3 else "center"
            offsets.append((round(dx, 1), round(dy, 1), ha, va))
    for x, y, name in _group_labels(xs, ys, names):
        label = ", ".join(name)

        def make(c, x=x, y=y, label=label):
            dx, dy, ha, va = c
            far = math.hypot(dx, dy) > 14
            return ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points",
                               ha=ha, va=va, fontsize=fontsize, path_effects=HALO,
                               arrowprops=dict(arrowstyle="-", lw=0.6, color="#555555",
                                               shrinkA=1, shrinkB=5) if far else None)

        place(ax, make, offsets, avoid=markers, pad=0.0, slack=0.0)


_LEGEND_LOCS = ("upper left", "upper right", "lower right", "lower left", "center left",
                "center right", "upper center", "lower center", "center")


def two_log_ticks(ax):
    """Give a log axis that spans less than two labelled decades ticks at 1, 2 and 5 (then 1-9)
    times each power of ten, so at least two ticks carry a label."""
    for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() != "log" or not axis.get_visible():
            continue
        lo, hi = sorted(lim)
        base = getattr(axis.get_transform(), "base", 10)
        if base != 10 or lo <= 0:
            continue
        for subs in (None, (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0, 7.0)):
            if subs is not None:
                axis.set_major_locator(LogLocator(base=10, subs=subs))
            ticks = [t for t in axis.get_major_locator().tick_values(lo, hi)
                     if lo * 0.999 <= t <= hi * 1.001]
            if len(ticks) >= 2:
                break


def _inside_figure(text, renderer):
    """Slide a centred title or x-label that sticks out of the figure (an axes pushed right by
    long tick labels) to end at the axes' right edge, or start at its left edge; a bar chart's
    title would otherwise be cut at the figure's edge."""
    width, bb = text.get_figure(root=True).bbox.width, text.get_window_extent(renderer)
    if bb.width > 0.98 * width or (bb.x0 >= 0 and bb.x1 <= width):
        return
    if bb.x1 > width:
        text.set_horizontalalignment("right")
        text.set_x(1.0)
    else:
        text.set_horizontalalignment("left")
        text.set_x(0.0)


def wrap_title(ax):
    """Break a title wider than the figure at the comma or colon nearest its middle; slide one
    that fits but sticks out of it (and the x-label) back inside."""
    renderer = _renderer(ax.figure)
    title = ax.title
    if renderer is None:
        return
    engine = ax.figure.get_layout_engine()
    if engine is not None:
        engine.execute(ax.figure)  # measure where the axes will be drawn
    _inside_figure(ax.xaxis.label, renderer)
    if not title.get_text():
        return
    width = ax.figure.bbox.width
    for _ in range(2):
        bb = title.get_window_extent(renderer)
        if bb.x0 >= 0 and bb.x1 <= width and bb.width <= 0.96 * width:
            return
        if bb.width <= 0.96 * width:
            _inside_figure(title, renderer)
            return
        lines = title.get_text().split("\n")
        i = max(range(len(lines)), key=lambda k: len(lines[k]))
        line = lines[i]
        cuts = [k for k in range(len(line) - 1) if line[k] in ",:;" and line[k + 1] == " "]
        if not cuts:
            return
        k = min(cuts, key=lambda c: abs(c - len(line) / 2))
        lines[i:i + 1] = [line[:k + 1], line[k + 2:]]
        title.set_text("\n".join(lines))


def _restore_height(fig):
    base = noted(fig, "base_height")
    if base is not None and fig.get_figheight() != base:
        fig.set_figheight(base)


def settle_legend(ax):
    """Keep the Axes' legend off the data: the builder's location if it is clear of every line,
    marker and label, else the first clear one of the standard corners and sides, else outside
    the axes below the plot (a figure legend in the constrained layout's space). Also wraps a
    title wider than the figure."""
    old = noted(ax, "outside_legend")
    if old is not None:  # the last pass's legend below the axes: measure without it
        if old in ax.figure.legends:
            old.remove()
        note(ax, outside_legend=None)
        _restore_height(ax.figure)
    wrap_title(ax)
    two_log_ticks(ax)
    leg = ax.get_legend()
    if leg is not None and not noted(leg, "settled", False):
        # the builder's own legend (drawn now, or once in its setup): remember what it holds
        note(ax, base_legend=(list(leg.legend_handles), [t.get_text() for t in leg.get_texts()],
                              leg._loc, leg.get_title().get_text()))
    base = noted(ax, "base_legend")
    bands = [a for a in list(ax.patches) + list(ax.lines) if noted(a, "legend", False)]
    if base is None and not bands:
        return
    handles, labels, loc, title = base if base is not None else ([], [], "best", "")
    if (bands or leg is None or noted(leg, "settled", False)
            or noted(leg, "hidden", False)):
        # shaded bands ("does not fit") are named in the legend, not written over the curves
        handles, labels = list(handles), list(labels)
        for b in bands:
            if b.get_label() not in labels:
                handles.append(b)
                labels.append(b.get_label())
        leg = ax.legend(handles, labels, loc=loc, title=title or None, fontsize=SMALL,
                        title_fontsize=SMALL)
        note(leg, settled=True)
    if leg is None or not leg.get_visible():
        return
    renderer = _renderer(ax.figure)
    if renderer is None:
        return
    axbox = _box(ax, renderer)
    box = _box(leg, renderer)
    if box[3] <= axbox[1] + 1 or box[1] >= axbox[3] - 1 or box[0] >= axbox[2] - 1:
        return  # the builder put it outside the axes already
    texts = [_box(t, renderer) for t in ax.texts if t.get_visible() and t.get_text().strip()]
    # shaded bands ("does not fit") are data too: a legend on one hides what the band says
    texts += [_box(b, renderer) for b in bands if b.get_visible()]
    lines = [ln for ln in ax.lines if ln.get_visible()]

    def clear():
        b = _box(leg, renderer)
        inside = (b[0] >= axbox[0] - 1 and b[2] <= axbox[2] + 1 and b[1] >= axbox[1] - 1
                  and b[3] <= axbox[3] + 1)
        return inside and not any(_overlap(b, t, pad=0.0) for t in texts) and not _line_hits(
            b, lines, collections=ax.collections)

    first = leg._loc
    if not is_legend_outside():  # a slider's frames keep theirs below the axes in every frame
        if clear():
            _restore_height(ax.figure)
            return
        for loc in _LEGEND_LOCS:
            leg.set_loc(loc)
            if clear():
                _restore_height(ax.figure)
                return
    leg.set_loc(first)
    handles, labels = leg.legend_handles, [t.get_text() for t in leg.get_texts()]
    title = leg.get_title().get_text()
    if noted(leg, "settled", False):
        leg.remove()
    else:  # a legend made once by the builder's setup: keep it, hidden, for the next update
        leg.set_visible(False)
        note(leg, hidden=True)
    n = len(labels)
    ncol = min(n, 3)
    fig = ax.figure
    width = fig.bbox.width
    while True:
        out = fig.legend(handles, labels, loc="outside lower center", ncol=ncol,
                         title=title or None, fontsize=SMALL, title_fontsize=SMALL)
        if ncol == 1 or out.get_window_extent(renderer).width <= 0.98 * width:
            break
        out.remove()
        ncol -= 1
    note(ax, outside_legend=out)
    # the figure grows by the legend's height, so the plot keeps its size and its labels fit
    base = noted(fig, "base_height") or fig.get_figheight()
    note(fig, base_height=base)
    fig.set_figheight(base + out.get_window_extent(renderer).height / fig.dpi + 0.1)
