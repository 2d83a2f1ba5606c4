"""A decode sweep over batch, with the points a figure or an explorer marks (``BatchSweep``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import n_chips as n_chips_check
from ._check import positive
from .balance import critical_batch
from .capacity import max_batch, min_chips
from .step import Step, decode_step
from .units import fmt_count, fmt_time

__all__ = ["BatchSweep", "batch_sweep"]

@dataclass(frozen=True)
class BatchSweep:
    """Decode step bounds over a sweep of batches at one context, with the points a figure marks.

    - ``batch`` (array), ``step`` (the :class:`Step` over ``batch``), ``context`` (tokens)
    - ``floor`` (s): the weight-read time at the smallest batch, the floor of the step time
    - ``critical_batch``: :func:`critical_batch`, None where decode stays memory-bound
    - ``max_batch``: :func:`max_batch`, None where the weights alone do not fit
    - ``min_chips``: :func:`min_chips` for the weights plus one sequence

    :meth:`describe` says what the sweep shows in one sentence, with these numbers (alt text).
    """

    model: object
    chip: object
    n_chips: float
    dtype: str
    context: float
    batch: np.ndarray
    step: Step
    floor: float
    critical_batch: float | None
    max_batch: int | None
    min_chips: int

    def describe(self) -> str:
        """One sentence saying what the sweep shows, with its numbers (a figure's alt text)."""
        n = float(self.n_chips)
        chips = f"{n:g}x {self.chip.name}" if n != 1 else self.chip.name
        ctx = float(self.context)
        ctx_s = f"{ctx:,.0f}" if ctx < 1e6 else fmt_count(ctx, 3)
        b0, b1 = self.batch[0], self.batch[-1]
        bs = (f"the critical batch B* is about {self.critical_batch:,.0f}" if self.critical_batch
              else "decode stays memory-bound at every batch")
        return (f"the decode step time lower bound of {self.model.name} on {chips} at {ctx_s} "
                "tokens "
                f"of context against batch {b0:g} to {b1:g}: compute, weight-read and KV-read "
                f"times; weight reads set a floor of {fmt_time(self.floor, 2)}, {bs}, and at batch "
                f"{b1:g} the step takes {fmt_time(float(self.step.time[-1]), 2)}")


def _or_none(fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if value is not None and np.all(np.isfinite(value)) else None


def batch_sweep(model, chip, batches, context, n_chips=1, weight_bytes=2, kv_bytes=2, dtype="bf16",
                overlap="step") -> BatchSweep:
    """:func:`decode_step` over ``batches`` at ``context`` with the floor, the critical batch, the
    largest batch that fits and the chips the weights need (see :class:`BatchSweep`)."""
    batch = np.atleast_1d(positive("batches", batches))
    context = positive("context", context, allow_zero=True, single=True)
    n_chips = n_chips_check(n_chips, single=True)
    weight_bytes = positive("weight_bytes", weight_bytes, single=True)
    kv_bytes = positive("kv_bytes", kv_bytes, single=True)
    step = decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, overlap=overlap)
    mb = _or_none(max_batch, model, chip, max(context, 1.0), n_chips=n_chips,
                  weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    need = min_chips(model, chip, batch=1, context=context, weight_bytes=weight_bytes,
                     kv_bytes=kv_bytes)
    bstar = _or_none(critical_batch, model, chip, weight_bytes=weight_bytes, dtype=dtype,
                     context=context, kv_bytes=kv_bytes)
    return BatchSweep(model, chip, n_chips, dtype, context, batch, step,
                      float(np.ravel(step.weight_time)[0]), bstar, mb, need)
