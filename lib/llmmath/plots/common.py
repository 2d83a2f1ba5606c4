"""Drawing helpers several figure families share (decode, cost, prefill): one decode step at a
point, what fits in memory, and the compute / weight / KV / bound lines of a step figure."""

from __future__ import annotations

from ..roofline import decode_step, max_batch, min_chips
from .figure import mask, try_value
from .style import ROLE

#: Nothing here is a figure; the names are shared within ``llmmath.plots``.
__all__: list[str] = []


def decode_at(model, chip, batch, context, n_chips, weight_bytes, kv_bytes, dtype, overlap):
    """:func:`~llmmath.roofline.decode_step` with every argument given."""
    return decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, overlap=overlap)


def max_batch_at(model, chip, context, n_chips, weight_bytes, kv_bytes):
    """:func:`~llmmath.roofline.max_batch` at ``context`` (at least 1 token), None if nothing
    fits."""
    return try_value(max_batch, model, chip, max(context, 1.0), n_chips=n_chips,
                     weight_bytes=weight_bytes, kv_bytes=kv_bytes)


def fits_at(model, chip, context, n_chips, weight_bytes, kv_bytes):
    """(max_batch or None, min chips for the weights)"""
    mb = max_batch_at(model, chip, context, n_chips, weight_bytes, kv_bytes)
    need = min_chips(model, chip, batch=1, context=context, weight_bytes=weight_bytes,
                     kv_bytes=kv_bytes)
    return mb, need


def fit_numbers(model, chip, context, n_chips, weight_bytes, kv_bytes, batch, max_batch):
    """A figure's numbers for a batch at ``context``: ``fits`` (``batch`` sequences fit beside
    the weights, given the figure's ``max_batch``) and ``chips_needed`` for them
    (:func:`~llmmath.roofline.min_chips`)."""
    need = min_chips(model, chip, batch=batch, context=context, weight_bytes=weight_bytes,
                     kv_bytes=kv_bytes)
    return {"fits": max_batch is not None and max_batch >= batch, "chips_needed": need}


def time_lines_setup(p):
    """Compute / weight / KV / bound lines shared by the decode and prefill figures."""
    ax = p.ax
    p.l_compute, = ax.plot([], [], color=ROLE["compute"], label="compute")
    p.l_weight, = ax.plot([], [], color=ROLE["weights"], label="weight reads")
    p.l_kv, = ax.plot([], [], color=ROLE["kv"], label="KV-cache reads")
    p.l_bound, = ax.plot([], [], color=ROLE["total"], lw=3.2, alpha=0.55,
                         label="step bound", zorder=3)
    ax.legend(loc="upper left")


def set_time_lines(p, x, s):
    """Give the step figure's lines the step's times against ``x``; returns the four arrays."""
    for line, y in ((p.l_compute, s.compute_time), (p.l_weight, s.weight_time),
                    (p.l_kv, s.kv_time), (p.l_bound, s.time)):
        line.set_data(*mask(x, y))
    return [s.compute_time, s.weight_time, s.kv_time, s.time]
