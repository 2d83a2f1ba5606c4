"""Figures: the lab (measure your own roofline). They draw :class:`llmmath.measure.Sweep`s; the
fits, knees and bounds come from :mod:`llmmath.measure` and :mod:`llmmath.intensity`."""

from __future__ import annotations

import numpy as np

from .. import measure as _measure
from ..intensity import attainable_flops
from ..units import fmt_si, fmt_time
from .figure import BookFigure
from .labels import fmt_batch, fmt_count_tick, loglim, place, set_log, settle_legend
from .style import PALETTE, ROLE, SMALL, house_style, new_figure

__all__ = ["lab_roofline", "lab_batch_sweep"]

#: Marker, colour and legend name of each family of operations.
_FAMILIES = {"vector": ("s", PALETTE["orange"], "vector ops (y += x, y = ax + y)"),
             "batch": ("o", PALETTE["purple"], "batch × weights (B × 4096) @ (4096 × 4096)"),
             "square": ("^", PALETTE["blue"], "square matmuls n = 256 to 2048")}
_REFERENCE = "0.45"  # grey, 4.7:1 on white


def _family(op):
    if op.op != "matmul":
        return "vector"
    return "square" if op.m == op.k == op.n else "batch"


def _who(measured):
    """The reader's run, or the reference (by default, or replayed: LLMMATH_LAB_REPLAY=1)."""
    return ("reference run" if measured is None or "replayed" in measured.conditions
            else "your run")


def _runs(measured, reference):
    """[(sweep, is_reference)] to draw: the reader's run (default: the reference run), and the
    reference beside it unless the reader's run is the reference replayed."""
    measured = _measure.reference_sweep() if measured is None else measured
    runs = [(measured, False)]
    if reference is not None and reference != measured:
        runs.append((reference, True))
    return runs


def lab_roofline(measured=None, reference=None):
    """Every timed operation at its intensity and median FLOP/s (bars: min to max over the
    repeats), under the roof fitted to them (:meth:`~llmmath.measure.Sweep.roof`), ridge marked;
    ``reference`` drawn grey beside it. ``measured`` defaults to the book's reference run."""
    runs = _runs(measured, reference)
    roofs = [s.roof() for s, _ in runs]
    xs = np.concatenate([s.intensities() for s, _ in runs])
    i = np.geomspace(xs.min() / 3, xs.max() * 3, 300)
    with house_style():
        fig = new_figure((6.4, 4.6), BookFigure)
        ax = fig.add_subplot()
        for (sweep, is_ref), roof in reversed(list(zip(runs, roofs, strict=True))):
            colour = _REFERENCE if is_ref else ROLE["total"]
            who = "reference run" if is_ref else _who(measured)
            ax.loglog(i, attainable_flops(roof.chip(), i, "fp32"), color=colour,
                      ls="--" if is_ref else "-", lw=1.6 if is_ref else 2.0, zorder=2,
                      label=f"{who}'s roof: {fmt_si(roof.flops, 'FLOP/s')}, "
                            f"{fmt_si(roof.bandwidth, 'B/s')}, ridge {roof.ridge:.2g}")
            a = sweep.achieved()
            med, lo, hi = np.median(a, axis=1), a.min(axis=1), a.max(axis=1)
            fams = [_family(o) for o in sweep.ops]
            for fam, (marker, fam_colour, name) in _FAMILIES.items():
                idx = [j for j, f in enumerate(fams) if f == fam]
                if not idx:
                    continue
                x = sweep.intensities()[idx]
                if is_ref:
                    ax.plot(x, med[idx], marker, ls="none", ms=5, mfc="white", mec=_REFERENCE,
                            zorder=3)
                    continue
                ax.errorbar(x, med[idx], yerr=[med[idx] - lo[idx], hi[idx] - med[idx]],
                            fmt=marker, ms=6, color=fam_colour, mec="white", ecolor=fam_colour,
                            elinewidth=1.2, capsize=2, zorder=4, label=name)
            ax.plot([roof.ridge], [roof.flops], "D", color=colour, ms=7, mec="white", zorder=5)
        set_log(ax, x=fmt_count_tick, y=lambda v: fmt_si(v, "FLOP/s", 2))
        ymin = min(float(np.min(s.achieved())) for s, _ in runs) / 2
        ax.set_ylim(ymin, max(r.flops for r in roofs) * 4)
        ax.set_xlim(i[0], i[-1])
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("measured FLOP/s (median, min to max)")
        ax.set_title("Measured roofline: both sides of the ridge")
        mine = roofs[0]

        def make(c):
            return ax.annotate(f"ridge {mine.ridge:.2g} FLOP/byte", (mine.ridge, mine.flops),
                               xytext=c[:2], textcoords="offset points", fontsize=SMALL,
                               ha=c[2], va="bottom")

        place(ax, make, [(-8, 8, "right"), (8, 8, "left"), (-8, 22, "right"), (8, 22, "left")])
        ax.legend(loc="lower right", fontsize=SMALL)
        settle_legend(ax)
    sweep = runs[0][0]
    left = int(np.sum(sweep.intensities() < mine.ridge))
    fig.numbers = {"flops": mine.flops, "bandwidth": mine.bandwidth, "ridge": mine.ridge,
                   "points_left_of_ridge": left,
                   "points_right_of_ridge": len(sweep.ops) - left}
    fig.alt_text = (f"Log-log roofline measured with numpy: {len(sweep.ops)} operations at their "
                    f"arithmetic intensity and median FLOP/s, {left} left of the ridge "
                    f"(vector operations and small-batch matmuls on the memory slope) and "
                    f"{len(sweep.ops) - left} right of it, under the fitted roof "
                    f"({fmt_si(mine.flops, 'FLOP/s')}, {fmt_si(mine.bandwidth, 'B/s')}, ridge "
                    f"{mine.ridge:.2g} FLOP/byte)"
                    + ("; the reference run drawn grey beside it." if len(runs) > 1 else "."))
    return fig


def lab_batch_sweep(measured=None, reference=None, mark_batch=None):
    """The decode-like sweep: time per step and time per token (the cost of a token) against the
    batch B of ``(B x k) @ (k x n)``, median with a min-max band, beside the roofline's bound
    ``max(FLOP / flops, bytes / bandwidth)`` on the roof fitted to the whole sweep.
    ``mark_batch``: the predicted knee (default: the roof's
    :meth:`~llmmath.measure.Roof.knee_batch`).
    ``measured`` defaults to the book's reference run; only its matmuls that share one weight
    shape (the batch sweep) are drawn."""
    runs = _runs(measured, reference)
    first = runs[0][0]
    w = [o for o in first.ops if _family(o) == "batch"]
    if not w:
        raise ValueError("measured: no batch sweep in it (matmuls (B x k) @ (k x n), B < k)")
    k, n = w[0].k, w[0].n
    roof = first.roof()
    knee = roof.knee_batch(k, n) if mark_batch is None else float(mark_batch)
    with house_style():
        fig = new_figure((6.4, 6.2), BookFigure)
        ax_t, ax_c = fig.subplots(2, 1)
        for sweep, is_ref in reversed(runs):
            sw = sweep.select(op="matmul", k=k, n=n)
            bs = np.array([o.m for o in sw.ops if o.m != o.k], dtype=float)
            keep = [j for j, o in enumerate(sw.ops) if o.m != o.k]
            s = sw.seconds()[keep]
            colour = _REFERENCE if is_ref else PALETTE["purple"]
            name = "reference run" if is_ref else _who(measured)
            for ax, y in ((ax_t, s), (ax_c, s / bs[:, None])):
                med = np.median(y, axis=1)
                ax.plot(bs, med, "o-" if not is_ref else "o--", color=colour, ms=4,
                        mfc=colour if not is_ref else "white", lw=1.8, zorder=3,
                        label=f"{name}, median")
                if not is_ref:
                    ax.fill_between(bs, y.min(axis=1), y.max(axis=1), color=colour, alpha=0.2,
                                    lw=0, zorder=2)
        bs = np.array(sorted({o.m for o in w if o.m != o.k}), dtype=float)
        chip = roof.chip()
        ops = [_measure.Op("matmul", int(b), k, n) for b in bs]
        bound = np.array([o.flop / attainable_flops(chip, o.intensity, "fp32") for o in ops])
        floor = _measure.matmul_flops(1, k, n) / roof.flops
        ax_t.plot(bs, bound, color=ROLE["total"], ls=":", lw=1.6, zorder=2,
                  label="roofline bound on the fitted roof")
        ax_c.plot(bs, bound / bs, color=ROLE["total"], ls=":", lw=1.6, zorder=2,
                  label="roofline bound on the fitted roof")
        for ax in (ax_t, ax_c):
            ax.set_xlim(bs[0] / 1.4, bs[-1] * 1.4)
            ax.axvline(knee, color=ROLE["cost"], lw=1.2, ls="--", zorder=1)
            set_log(ax, x=fmt_batch, y=lambda v: fmt_time(v, 2))
        all_t = np.concatenate([sw.select(op="matmul", k=k, n=n).seconds().ravel()
                                for sw, _ in runs] + [bound])
        ax_t.set_ylim(*loglim(all_t, pad=1.6))
        per_token = np.concatenate([(sw.select(op="matmul", k=k, n=n).seconds()
                                     / np.array([o.m for o in sw.select(op="matmul", k=k,
                                                                        n=n).ops])[:, None]
                                     ).ravel() for sw, _ in runs] + [bound / bs, [floor]])
        ax_c.set_ylim(*loglim(per_token, pad=1.6))
        ax_t.set_ylabel("time per step")
        ax_c.set_ylabel("time per token")
        ax_c.set_xlabel("batch B (vectors per step)")
        ax_t.set_title(f"Batch sweep: knee predicted at B = {knee:.2g} (dashed)")

        ax_t.legend(loc="upper left", fontsize=SMALL)
        settle_legend(ax_t)
        settle_legend(ax_c)
    med = np.median(first.select(op="matmul", k=k, n=n).seconds(), axis=1)
    fig.numbers = {"knee_batch": knee, "ridge": roof.ridge, "floor_per_token": floor,
                   "time_batch_1": float(med[0]),
                   "measured_knee": first.measured_knee(k, n)}
    fig.alt_text = (f"Two log-log panels against the batch B of ({fmt_batch(bs[0])} to "
                    f"{fmt_batch(bs[-1])}) × {k} vectors times a {k} × {n} fp32 weight matrix: "
                    "the time per step stays near its batch-1 value at small batch, then grows "
                    "with B; the time per token falls, then floors near "
                    f"{fmt_time(floor, 2)}; the roofline bound dotted, the predicted knee "
                    f"B = {knee:.2g} dashed.")
    return fig
