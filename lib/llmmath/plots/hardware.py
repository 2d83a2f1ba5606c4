"""Figures: hardware."""

from __future__ import annotations

import math

import numpy as np

from .. import chips as _chips
from .._check import positive
from ..measure import matmul_flops
from ..roofline import arithmetic_intensity, attainable_flops, matmul_ridge_batch
from ..units import fmt_flops_rate, fmt_si, fmt_time
from .explore import chip_picker, dropdown, explorer, steps
from .figure import BookFigure, as_list, builder, chip_of
from .labels import (
    fmt_count_tick,
    iso_lines,
    loglim,
    place,
    place_labels,
    set_log,
    settle_legend,
)
from .style import (
    PALETTE,
    ROLE,
    SMALL,
    VENDOR_COLOUR,
    chip_colour,
    distinct_styles,
    house_style,
    new_figure,
)

__all__ = ["roofline", "matmul_on_roofline", "flops_vs_bandwidth", "capacity_vs_bandwidth",
           "matmul_throughput_vs_batch", "roofline_measured"]


def _roofline_setup(p):
    ax = p.ax
    set_log(ax, x=fmt_count_tick, y=lambda v: fmt_si(v, "FLOP/s", 2))
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable compute (FLOP/s)")


@builder(setup=_roofline_setup)
def roofline(p, chip_list=None, dtype: str = "bf16", ops=None):
    """Classic roofline: attainable FLOP/s = min(C, I x W) against arithmetic intensity I (log-log).

    ``chip_list``: chips or names (default: A100, H100, B200, MI300X, TPU v5e); ridge points
    ``C/W`` are marked. ``ops``: list of ``(label, intensity)`` placed on the first chip's roof.
    """
    ax = p.ax
    default = [_chips.get(n) for n in ("A100-SXM-80GB", "H100-SXM", "B200", "MI300X", "TPU v5e")]
    shown = [c for c in as_list(chip_list, default) if dtype in c.flops]
    if not shown:
        raise ValueError(f"chip_list: no chip has {dtype!r}")
    ridges = np.array([c.ops_per_byte(dtype) for c in shown])
    x = np.geomspace(min(0.1, ridges.min() / 100), max(1e4, ridges.max() * 30), 200)
    styles = distinct_styles([chip_colour(c) for c in shown])
    for i, c in enumerate(shown):
        col, ls = styles[i]
        y = np.minimum(c.peak(dtype), x * c.hbm_bandwidth)
        name = f"{c.name}: {ridges[i]:.0f}" if len(shown) > 1 else c.name
        p.add(ax.plot(x, y, color=col, ls=ls, label=name)[0])
        p.add(ax.plot([ridges[i]], [c.peak(dtype)], "o", color=col, ms=6, mec="white")[0])
    ax.set_xlim(x[0], x[-1])
    peaks = [c.peak(dtype) for c in shown]
    ax.set_ylim(*loglim([x[0] * min(c.hbm_bandwidth for c in shown), max(peaks) * 3], pad=1))
    # ridge labels: above the dot, else beside it, clear of the other chips' labels
    cands = [(0, 5, "center", "bottom"), (-6, 2, "right", "bottom"), (6, -3, "left", "top"),
             (0, -5, "center", "top")]
    for i in np.argsort(-np.array([c.peak(dtype) for c in shown]), kind="stable"):
        if len(shown) > 1:
            break  # several chips: the ridge values are in the legend, off the crowded corner
        p.label(ridges[i], shown[i].peak(dtype), f"{ridges[i]:.0f}", cands, color=styles[i][0],
                   fontsize=SMALL, box=False)
    first = shown[0]
    for label, intensity in ops or []:
        y = min(first.peak(dtype), intensity * first.hbm_bandwidth)
        # one rounding for every marked intensity (1, 64, 882), not 0.998 beside 882.2
        shown_i = f"{intensity:,.0f}" if intensity >= 0.95 else f"{intensity:.2g}"
        p.point(intensity, y, f"{label}:\n{shown_i} FLOP/byte", offset=(6, -14))
    if ax.get_legend():
        ax.get_legend().remove()
    # several chips: each entry gives its ridge point; one chip: its ridge is labelled at its dot
    p.add(ax.legend(loc="lower right",
                    title="ridge point (FLOP/byte)" if len(shown) > 1 else None))
    ax.set_title(f"Roofline ({dtype})\nmemory-bound left of the ridge, compute-bound right")
    lo, hi = int(np.argmin(ridges)), int(np.argmax(ridges))
    p.numbers = {c.name: r for c, r in zip(shown, ridges, strict=False)}
    alt = (f"Log-log roofline of attainable {dtype} FLOP/s against arithmetic intensity for "
           f"{len(shown)} chips; ridge points from {ridges[lo]:.0f} FLOP/byte ({shown[lo].name}) "
           f"to {ridges[hi]:.0f} ({shown[hi].name})")
    if ops:
        alt += "; marked: " + ", ".join(f"{lab} at {i:g} FLOP/byte" for lab, i in ops)
    return alt + "."


def _matmul_on_roofline_setup(p):
    ax = p.ax
    set_log(ax, x=fmt_count_tick, y=lambda v: fmt_si(v, "FLOP/s", 2))
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable FLOP/s")


@builder(figsize=(6.4, 4.2), setup=_matmul_on_roofline_setup, marked=("batch",))
def matmul_on_roofline(p, chip="H100-SXM", batch=64, k=8192, n=8192, dtype="bf16",
                       bytes_per_element=2, weight_bytes=None, intensity_range=(0.1, 1e4)):
    """A chip's roofline with one (batch x k) @ (k x n) weight matmul placed on it.

    The roof is ``attainable_flops(chip, I)``; the dot sits at the matmul's arithmetic intensity
    (about ``batch`` FLOP/byte in bf16 while ``batch << k, n``) and its attainable FLOP/s, with
    the share of peak and the regime beside it. The grey band is every batch from 1 to ``k``;
    the axes are fixed so frames for different batches line up.
    """
    chip = _chips.get(chip) if isinstance(chip, str) else chip
    ax = p.ax
    peak, bw = chip.peak(dtype), chip.hbm_bandwidth
    lo, hi = intensity_range
    intensity = np.geomspace(lo, hi, 400)
    ridge = chip.ops_per_byte(dtype)
    batches = np.geomspace(1, k, 200)
    trail_i = arithmetic_intensity(batches, k, n, bytes_per_element, weight_bytes)
    b_i = arithmetic_intensity(batch, k, n, bytes_per_element, weight_bytes)
    b_f = attainable_flops(chip, b_i, dtype)
    bound = "compute-bound" if b_i >= ridge else "memory-bound"
    p.add(ax.plot(trail_i, attainable_flops(chip, trail_i, dtype), color=PALETTE["grey"], lw=6,
                     alpha=0.3, solid_capstyle="round", label=f"matmul, batch 1 to {k:,.0f}")[0])
    p.add(ax.plot(intensity, attainable_flops(chip, intensity, dtype), color=ROLE["total"],
                     lw=2.2, label=f"{chip.name} roof ({dtype})")[0])
    p.vline(ridge, f"ridge {ridge:.0f} FLOP/byte", color=ROLE["compute"], y=0.5)
    share = b_f / peak
    shown_i = f"{b_i:.3g}" if b_i < 100 else f"{b_i:,.0f}"
    if ax.get_legend():
        ax.get_legend().remove()
    p.add(ax.legend(loc="upper left"))
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo * bw * 0.8, peak * 3)
    title = f"({batch:,.0f} × {k:,.0f}) @ ({k:,.0f} × {n:,.0f}) matmul on {chip.name}"
    # The title keeps its place in the layout but is drawn by a copy that belongs to the marked
    # artists, with the dot and its note: a change of `batch` alone then redraws only those.
    ax.set_title(title)
    ax.title.set_alpha(0.0)
    marker = p._marking
    p._marking = True  # like marking(), without making the note the alt text's "Marked:"
    try:
        t = ax.title
        p.add(ax.text(*t.get_position(), title, transform=t.get_transform(), ha="center",
                      va="baseline", fontproperties=t.get_fontproperties(), color=t.get_color(),
                      in_layout=False))
        p.add(ax.plot([b_i], [b_f], "o", ms=7, mfc=ROLE["cost"], mec="white", mew=1.5, zorder=5)[0])
        # the note sits under the roof, at the bottom, where only the ridge line is ever drawn
        note = (f"batch {batch:,.0f}: {shown_i} FLOP/byte\n{fmt_si(b_f, 'FLOP/s')} = "
                f"{_pct(share)} of peak\n{bound}")
        rx = math.log(ridge / lo) / math.log(hi / lo)

        def make(c):
            return ax.text(c[0], 0.04, note, transform=ax.transAxes, ha=c[1], va="bottom",
                           fontsize=SMALL, color=ROLE["cost"], zorder=6,
                           bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))

        p.add(place(ax, make, [(0.98, "right"), (rx - 0.015, "right"), (rx + 0.015, "left")]))
    finally:
        p._marking = marker
    p.numbers = {"intensity": b_i, "attainable": b_f, "share_of_peak": share, "ridge": ridge,
                 "bound": "compute" if b_i >= ridge else "memory",
                 "time": matmul_flops(batch, k, n) / b_f}
    return (f"Log-log {dtype} roofline of the {chip.name} (peak {fmt_si(peak, 'FLOP/s')}, ridge "
            f"{ridge:.0f} FLOP/byte) with a {k:,.0f} × {n:,.0f} weight matmul at batch "
            f"{batch:,.0f}: {b_i:.3g} FLOP/byte, {fmt_si(b_f, 'FLOP/s')}, {100 * share:.0f}% of "
            f"peak, {bound}.")


def _chip_scatter_axes(xs, ys, yunit):
    """A log-log figure framing one point per chip, with room for the labels: (fig, ax, xlim).
    Ticks carry SI prefixes ("1 TB/s", "1 PFLOP/s"), like every other axis of the book."""
    fig = new_figure((6.4, 4.6), BookFigure)
    ax = fig.add_subplot()
    xlim = (xs.min() / 1.6, xs.max() * 1.8)
    set_log(ax, x=lambda v: fmt_si(v, "B/s", 2), y=lambda v: fmt_si(v, yunit, 2))
    ax.set_xlim(*xlim)
    ax.set_ylim(ys.min() / 2.5, ys.max() * 2.5)
    return fig, ax, xlim


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
        fig, ax, xlim = _chip_scatter_axes(xs, ys, "FLOP/s")
        _vendor_dots(ax, xs, ys, shown)
        ax.set_xlabel("HBM bandwidth (bytes/s)")
        ax.set_ylabel(f"peak {dtype} FLOP/s (dense)")
        ax.set_title(f"Compute against bandwidth ({dtype})")
        ax.legend(loc="upper left")
        fig.canvas.draw()  # let the constrained layout settle, then freeze it for label placement
        fig.set_layout_engine("none")
        place_labels(ax, xs, ys, [c.name for c in shown])
        # chips first, then the guides' labels around them
        iso_lines(ax, ratios, lambda v: f"{v:g} FLOP/byte", xlim)
    r = ys / xs
    lo, hi = int(np.argmin(r)), int(np.argmax(r))
    fig.alt_text = (f"Log-log scatter of dense {dtype} peak FLOP/s against HBM bandwidth for "
                    f"{len(shown)} chips, with dashed lines of constant FLOP per byte at "
                    f"{', '.join(f'{v:g}' for v in ratios)}; ratios from {r[lo]:.0f} "
                    f"({shown[lo].name}) to {r[hi]:.0f} ({shown[hi].name}).")
    settle_legend(ax)
    return fig


def _pct(share):
    """A share of peak: ``0.3%`` under 10 % (a batch-1 matvec is not "0%"), else ``74%``."""
    return f"{100 * share:.1f}%" if share < 0.1 else f"{100 * share:.0f}%"


def _vendor_dots(ax, xs, ys, chips_shown):
    """The chips of a catalogue scatter as dots coloured by vendor, one legend entry each."""
    for vendor, col in VENDOR_COLOUR.items():
        sel = [i for i, c in enumerate(chips_shown) if c.vendor == vendor]
        if sel:
            ax.plot(xs[sel], ys[sel], "o", ms=7, color=col, label=vendor, zorder=4)
    other = [i for i, c in enumerate(chips_shown) if c.vendor not in VENDOR_COLOUR]
    if other:
        ax.plot(xs[other], ys[other], "o", ms=7, color=PALETTE["purple"], label="other",
                zorder=4)


def capacity_vs_bandwidth(chip_list=None, drains=(0.01, 0.02, 0.04)):
    """Each chip's HBM capacity against its bandwidth, with lines of constant drain time M / W."""
    chip_list = list(chip_list) if chip_list is not None else _chips.all_chips()
    xs = np.array([c.hbm_bandwidth for c in chip_list])
    ys = np.array([c.hbm_capacity for c in chip_list])
    with house_style():
        fig, ax, xlim = _chip_scatter_axes(xs, ys, "B")
        _vendor_dots(ax, xs, ys, chip_list)
        ax.set_xlabel("HBM bandwidth (bytes/s)")
        ax.set_ylabel("HBM capacity (bytes)")
        ax.set_title("Capacity against bandwidth: the HBM drain time")
        ax.legend(loc="lower right")
        fig.canvas.draw()  # let the constrained layout settle, then freeze it for label placement
        fig.set_layout_engine("none")
        place_labels(ax, xs, ys, [c.name for c in chip_list])
        # chips first, then the guides' labels around them
        iso_lines(ax, drains, lambda v: f"drain {v * 1e3:g} ms", xlim)
    d = ys / xs
    lo, hi = int(np.argmin(d)), int(np.argmax(d))
    fig.alt_text = (f"Log-log scatter of HBM capacity against HBM bandwidth for {len(chip_list)} "
                    "chips, with dashed lines of constant drain time; drain times from "
                    f"{fmt_time(d[lo])} ({chip_list[lo].name}) to {fmt_time(d[hi])} "
                    f"({chip_list[hi].name}).")
    settle_legend(ax)
    return fig


def matmul_throughput_vs_batch(chip, dtypes=None, k=8192, n=8192, batches=None):
    """Attainable FLOP/s of a (B x k) @ (k x n) matmul against B, one curve per dtype.

    Each dtype's operands (inputs, weights, outputs) take that dtype's bytes (fp4 0.5, fp8/int8 1,
    bf16 2), so halving the bytes doubles the intensity at every batch. The knee (marker) is
    ``matmul_ridge_batch``: where it stays put across dtypes, lower precision doubles the roof
    without asking for a larger batch.
    """
    sizes = {"fp4": 0.5, "fp8": 1.0, "int8": 1.0, "bf16": 2.0}
    dtypes = (list(dtypes) if dtypes is not None
              else [d for d in ("bf16", "fp8", "fp4") if d in chip.flops])
    batches = np.logspace(0, np.log10(k), 300) if batches is None else np.asarray(batches, float)
    colors = [ROLE["compute"], ROLE["weights"], ROLE["kv"], PALETTE["purple"]]
    with house_style():
        fig = new_figure((6.4, 4.2), BookFigure)
        ax = fig.add_subplot()
        for d, col in zip(dtypes, colors, strict=False):
            b = sizes[d]
            f = attainable_flops(chip, arithmetic_intensity(batches, k, n, b), d)
            unit = "byte" if b == 1 else "bytes"
            ax.loglog(batches, f, color=col, label=f"{d} ({b:g} {unit} per value)")
            knee = matmul_ridge_batch(chip, k, n, d, b)
            if np.isfinite(knee) and knee <= batches.max():
                ax.plot([knee], [chip.peak(d)], "o", ms=7, color=col)
                ax.annotate(f"B = {knee:.0f}", (knee, chip.peak(d)), xytext=(6, 5),
                            textcoords="offset points", fontsize=SMALL, color=col)
        set_log(ax, x=fmt_count_tick, y=lambda v: fmt_si(v, "FLOP/s", 2))  # one tick style
        ax.set_xlabel("batch B (tokens sharing the weights)")
        ax.set_ylabel("attainable FLOP/s")
        ax.set_title(f"({k:,.0f} × {n:,.0f}) weight matmul on {chip.name}")
        ax.legend(loc="lower right")
    fig.alt_text = (f"Attainable FLOP/s of a {k:,.0f} × {n:,.0f} weight matmul on the {chip.name} "
                    f"against batch for {', '.join(dtypes)}: parallel lines that reach their "
                    "roofs at batch "
                    + ", ".join(f"{matmul_ridge_batch(chip, k, n, d, sizes[d]):.0f}"
                                for d in dtypes) + ".")
    settle_legend(ax)
    return fig


def roofline_measured(chip, measured, dtype="bf16", intensity_range=(1, 1e4)):
    """Datasheet roofline of ``chip`` beside the roof that published measurements imply.

    ``measured`` is a dict with ``flops`` (best sustained FLOP/s, with ``flops_label``) and
    ``bandwidth`` (best sustained bytes/s, with ``bandwidth_label``). The shaded band between the
    two roofs is what the bound cannot see: the efficiency of real kernels.
    """
    peak, bw = chip.peak(dtype), chip.hbm_bandwidth
    f_meas = positive("measured['flops']", measured["flops"])
    w_meas = positive("measured['bandwidth']", measured["bandwidth"])
    i = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    roof = np.minimum(peak, i * bw)
    real = np.minimum(f_meas, i * w_meas)
    with house_style():
        fig = new_figure((6.4, 4.2), BookFigure)
        ax = fig.add_subplot()
        ax.loglog(i, roof, color=ROLE["total"], lw=2.2,
                  label=f"datasheet: {fmt_si(peak, 'FLOP/s')}, {fmt_si(bw, 'B/s')}")
        ax.loglog(i, real, color=ROLE["cost"], lw=2.0, ls="--",
                  label=f"measured: {fmt_si(f_meas, 'FLOP/s')}, {fmt_si(w_meas, 'B/s')}")
        set_log(ax, x=fmt_count_tick, y=lambda v: fmt_si(v, "FLOP/s", 2))  # one tick style
        ax.fill_between(i, real, roof, color=ROLE["cost"], alpha=0.35, lw=0,
                        label="gap the datasheet bound does not see")
        r_ds, r_me = peak / bw, f_meas / w_meas
        ax.axvline(r_ds, color=ROLE["total"], lw=1, ls=":")
        ax.axvline(r_me, color=ROLE["cost"], lw=1, ls=":")
        ax.annotate(f"{100 * w_meas / bw:.0f}% of\nbandwidth",
                    (intensity_range[0] * 3, 3 * w_meas * 0.8),
                    xytext=(0, -6), textcoords="offset points", fontsize=SMALL, color=ROLE["cost"],
                    va="top")
        ax.annotate(f"{_pct(f_meas / peak)} of peak", (intensity_range[1] / 1.2, f_meas),
                    xytext=(0, -6), textcoords="offset points", fontsize=SMALL, color=ROLE["cost"],
                    ha="right", va="top")
        ax.annotate(f"ridge {r_ds:.0f}", (r_ds, peak), xytext=(4, 6), textcoords="offset points",
                    fontsize=SMALL)
        ax.set_xlim(*intensity_range)
        ax.set_ylim(intensity_range[0] * bw * 0.5, peak * 2.5)
        fig.canvas.draw()  # settle the layout, then place the measured ridge's label off the lines

        def make(c):
            return ax.annotate(f"ridge {r_me:.0f}", (r_me, f_meas), xytext=c[:2],
                               textcoords="offset points",
                               fontsize=SMALL, color=ROLE["cost"], ha=c[2], va="top")

        place(ax, make, [(-6, -60, "right"), (6, -60, "left"), (-6, -90, "right"), (6, -90, "left"),
                         (-6, -30, "right"), (6, -30, "left")])
        ax.set_xlim(*intensity_range)
        ax.set_ylim(intensity_range[0] * bw * 0.5, peak * 2.5)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("FLOP/s")
        ax.set_title(f"{chip.name}: datasheet roof and measured roof ({dtype})")
        ax.legend(loc="upper left")
    fig.alt_text = (f"{chip.name} roofline from the datasheet ({fmt_si(peak, 'FLOP/s')}, "
                    f"{fmt_si(bw, 'B/s')}, ridge {r_ds:.0f}) and the measured roof "
                    f"({fmt_si(f_meas, 'FLOP/s')}, {fmt_si(w_meas, 'B/s')}, ridge {r_me:.0f}): "
                    f"{100 * w_meas / bw:.0f}% of bandwidth and {100 * f_meas / peak:.0f}% of "
                    "peak.")
    settle_legend(ax)
    return fig


# ----- the chapter's explorer --------------------------------------------------------------------

@explorer(main="batch", sweep=[1, 4, 16, 64, 256, 1024, 4096])
def matmul_roofline_explorer(chip="H100-SXM", batch=64, k=8192, n=8192, dtype="bf16"):
    """One (batch x k) @ (k x n) weight matmul on a chip's roofline: move the batch across the
    ridge."""
    c0 = _chips.get(chip)

    def formats(v):  # the chip's number formats; the picked one, or the nearest it has
        c = chip_of(v["chip"])
        return list(c.flops), c.resolve_dtype(v["dtype"])[0]

    controls = {
        "chip": chip_picker(c0.name),
        "dtype": dropdown("dtype", list(c0.flops), c0.resolve_dtype(dtype)[0], follows=formats),
        "batch": steps("batch", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
                       batch),
    }

    def figure(v):
        return matmul_on_roofline, dict(chip=chip_of(v["chip"]), batch=v["batch"], k=k, n=n,
                                        dtype=v["dtype"])

    return controls, figure, _matmul_readout


def _matmul_readout(n):
    return [("arithmetic intensity", f"{n['intensity']:,.3g} FLOP/byte"),
            ("ridge point", f"{n['ridge']:,.0f} FLOP/byte"),
            ("attainable", fmt_flops_rate(n["attainable"])),
            ("share of peak", _pct(n['share_of_peak'])), ("bound", n["bound"]),
            ("matmul time (lower bound)", fmt_time(n["time"]))]
