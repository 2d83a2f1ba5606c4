"""Roofline lower bounds for a decode or prefill step, and the limits they imply.

This module gathers the roofline API in one namespace (``from llmmath.roofline import
decode_step, critical_batch, max_batch``); each idea lives in its own module:

- :mod:`llmmath.step`: one step's bound (:class:`Step`, :func:`decode_step`,
  :func:`prefill_step`, :func:`min_latency`, :func:`serial_step`)
- :mod:`llmmath.balance`: where compute meets memory (:func:`critical_batch`,
  :func:`critical_context`, :func:`decode_balance`, :func:`implied_kv_bytes_per_token`)
- :mod:`llmmath.capacity`: what fits in HBM (:func:`memory_held`, :func:`fits_in_memory`,
  :func:`max_batch`, :func:`max_context`, :func:`min_chips`, :func:`drain_time`)
- :mod:`llmmath.intensity`: the classic roofline of one operation
  (:func:`arithmetic_intensity`, :func:`attainable_flops`, :func:`elementwise_intensity`,
  :func:`matmul_ridge_batch`)
- :mod:`llmmath.speculative`: speculative decoding and multi-token prediction
- :mod:`llmmath.sweep`: a decode sweep over batch with the points a figure marks

Every time here is a **lower bound**: the step cannot finish before its FLOPs are done at
peak rate, nor before the bytes it must move have crossed the HBM bus. The bound leaves out
communication between chips, kernel launch and scheduling overheads, imperfect overlap of
compute and memory traffic (unless ``overlap="per-op"``), activation traffic, and anything
that runs below peak (unless you pass ``compute_efficiency`` / ``memory_efficiency`` < 1).

The core inequality of the book, for a decode step of ``B`` sequences with ``S`` tokens of
context on ``n`` chips::

    t_step >= max( 2 B N_act / (n C),  (N_tot b_w + B S b_kv) / (n W) )

with the MoE refinement that only the experts the batch touches are read (see
:meth:`llmmath.models.Model.weight_params_read`).

All inputs and outputs are SI (seconds, bytes, FLOP, FLOP/s, bytes/s), and every numeric
argument broadcasts over numpy arrays: a sweep over a grid of batches and contexts is one call.

Three rules the bounds follow (and the book states where it uses them):

- **A lower bound charges each operation its cheapest valid algorithm**: MLA decodes in the
  absorbed form and prefills un-absorbed (:mod:`llmmath.models`); a step reads only the weights
  it touches; attention computes in its cache's format, never at a faster one.
- **A headline number counts every term that moves it by more than 10% for its model**, so
  attention's own FLOPs (and a sparse-attention indexer's reads and scoring) are counted by
  default (``attention_flops=True``); ``attention_flops=False`` is the episode's first
  approximation, which chapters teach and then show failing (MLA).
- **Two overlap models**, both lower bounds: ``overlap="step"`` (every byte hides behind every
  FLOP: ``max(compute, memory)``) and ``overlap="per-op"`` (each kernel overlaps only its own
  traffic: ``max(attention, kv) + max(matmul, weight)``). The critical context and the
  context-dependent critical batch exist only under the first; a conclusion that depends on
  which one holds is stated under both.
"""

from __future__ import annotations

from . import balance, capacity, intensity, speculative, step, sweep
from .balance import critical_batch, critical_context, decode_balance, implied_kv_bytes_per_token
from .capacity import drain_time, fits_in_memory, max_batch, max_context, memory_held, min_chips
from .intensity import (
    arithmetic_intensity,
    attainable_flops,
    elementwise_intensity,
    matmul_ridge_batch,
)
from .speculative import speculative_critical_batch, speculative_step, speculative_tokens_per_step
from .step import (
    OVERLAPS,  # noqa: F401 (reachable as roofline.OVERLAPS, as before the split)
    Step,
    decode_step,
    min_latency,
    prefill_step,
    serial_step,
)
from .sweep import BatchSweep, batch_sweep

#: The modules this namespace gathers, in the order of the book's argument.
PARTS = (step, balance, capacity, intensity, speculative, sweep)

__all__ = [  # the union of PARTS' __all__ (tests/test_api_names.py checks it)
    "Step", "decode_step", "prefill_step", "min_latency", "serial_step",
    "critical_batch", "critical_context", "decode_balance", "implied_kv_bytes_per_token",
    "memory_held", "fits_in_memory", "max_batch", "max_context", "min_chips", "drain_time",
    "arithmetic_intensity", "attainable_flops", "elementwise_intensity", "matmul_ridge_batch",
    "speculative_tokens_per_step", "speculative_step", "speculative_critical_batch",
    "BatchSweep", "batch_sweep",
]
